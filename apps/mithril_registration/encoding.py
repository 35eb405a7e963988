"""The keys of a Mithril ``RegisterSignerMessage`` as Mithril encodes them (docs/mithril-registration.md 2).

Mithril sends each key as a hex string (mithril-common/src/crypto_helper/types/protocol_key.rs,
``ProtocolKeyCodec``): by default the hex of the key's serde **JSON** ("JSON-hex", what
mithril-signer writes), and when that does not decode, the hex of the key's **bytes**
("bytes-hex"). Both are read here, in that order:

=========================  =================================================  ==========================
field                      JSON-hex (hex of this JSON)                        bytes-hex
=========================  =================================================  ==========================
``verification_key``       ``{"vk": [96 ints], "pop": [96 ints]}``            192 canonical bytes
``verification_key_        nested ``{"sigma": …, "lhs_pk": [32 ints],          448 bytes: Ed25519 signature,
signature``                "rhs_pk": [32 ints]}`` six deep, ``[64 ints]``      then the key pair of every
                           innermost                                          level, innermost first
``operational_             ``[[[32 ints], issue, start, [64 ints]],            CBOR ``[[bstr32, uint, uint,
certificate``              [32 ints]]`` (last: the cold key)                  bstr64], bstr32]``
=========================  =================================================  ==========================

Each decoder returns the key's canonical bytes, which are what the KES signature covers (the
verification key's 192 bytes, not its hex). Decoding is strict where Mithril's serde is lax in
ways no Mithril writer uses (unknown JSON members, trailing bytes after a key): those are
refused, so every accepted key has one encoding per form.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from dmq.message import COLD_VK_SIZE, KES_SIGNATURE_SIZE, OperationalCertificate
from dmq.opcert import read_opcert
from ouroboros_mux.cbor import CborError, Cursor

from .errors import RegistrationMalformed
from .pop import POP_SIZE, VERIFICATION_KEY_SIZE, VK_SIZE

__all__ = ["decode_verification_key", "decode_kes_signature", "decode_opcert", "strict_json", "KES_DEPTH"]

KES_DEPTH = 6
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")
_T = TypeVar("_T")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate member in a JSON object: {sorted(k for k in set(keys) if keys.count(k) > 1)}")
    return dict(pairs)


def strict_json(raw: bytes | str) -> Any:
    """JSON as serde_json reads it into Mithril's types: UTF-8 only, no duplicate members.

    Python's parser alone would take UTF-16 text and let a repeated member win, both of which
    Mithril refuses; accepting them would put in a set what a Mithril follower rejects.
    """
    text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
    return json.loads(text, object_pairs_hook=_no_duplicates)


def _hex_bytes(field: str, text: Any) -> bytes:
    if not isinstance(text, str):
        raise RegistrationMalformed(f"{field}: expected a hex string, got {type(text).__name__}")
    # No trimming: Mithril trims (Rust's whitespace) before JSON-hex only, and Python's strip()
    # knows more whitespace than Rust's; refusing all of it never accepts what Mithril refuses.
    if not _HEX.fullmatch(text):
        raise RegistrationMalformed(f"{field}: not an even-length hex string")
    return bytes.fromhex(text)


def _byte_list(value: Any, size: int, what: str) -> bytes:
    if not isinstance(value, list) or len(value) != size:
        raise ValueError(f"{what}: expected {size} bytes as a JSON array")
    if not all(type(b) is int and 0 <= b <= 255 for b in value):
        raise ValueError(f"{what}: array items must be integers 0..255")
    return bytes(value)


def _decode(field: str, text: Any, from_json: Callable[[Any], _T], from_bytes: Callable[[bytes], _T]) -> _T:
    """JSON-hex first, then bytes-hex (Mithril's default codec); one error naming both attempts."""
    raw = _hex_bytes(field, text)
    try:
        document = strict_json(raw)
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        json_problem = f"not JSON: {exc}"
    else:
        try:
            return from_json(document)
        except ValueError as exc:
            json_problem = str(exc)
    try:
        return from_bytes(raw)
    except ValueError as exc:
        raise RegistrationMalformed(f"{field}: neither JSON-hex ({json_problem}) nor bytes-hex ({exc})") from None


# -- verification key: vk || pop ----------------------------------------------------------

def _vk_from_json(document: Any) -> bytes:
    if not isinstance(document, dict) or set(document) != {"vk", "pop"}:
        raise ValueError('expected an object with members "vk" and "pop"')
    return _byte_list(document["vk"], VK_SIZE, "vk") + _byte_list(document["pop"], POP_SIZE, "pop")


def _vk_from_bytes(raw: bytes) -> bytes:
    if len(raw) != VERIFICATION_KEY_SIZE:
        raise ValueError(f"expected {VERIFICATION_KEY_SIZE} bytes, got {len(raw)}")
    return raw


def decode_verification_key(text: Any) -> bytes:
    """The 192 canonical bytes (vk, k1, k2) of a ``verification_key`` field."""
    return _decode("verification_key", text, _vk_from_json, _vk_from_bytes)


# -- Sum6 KES signature ---------------------------------------------------------------------

def _kes_from_json(document: Any, depth: int = KES_DEPTH) -> bytes:
    if depth == 0:
        return _byte_list(document, 64, "Ed25519 signature")
    if not isinstance(document, dict) or set(document) != {"sigma", "lhs_pk", "rhs_pk"}:
        raise ValueError('expected an object with members "sigma", "lhs_pk", "rhs_pk"')
    return (_kes_from_json(document["sigma"], depth - 1)
            + _byte_list(document["lhs_pk"], 32, "lhs_pk") + _byte_list(document["rhs_pk"], 32, "rhs_pk"))


def _kes_from_bytes(raw: bytes) -> bytes:
    if len(raw) != KES_SIGNATURE_SIZE:
        raise ValueError(f"expected {KES_SIGNATURE_SIZE} bytes, got {len(raw)}")
    return raw


def decode_kes_signature(text: Any) -> bytes:
    """The 448-byte Sum6 KES signature of a ``verification_key_signature`` field (the layout dmq.kes verifies)."""
    return _decode("verification_key_signature", text, _kes_from_json, _kes_from_bytes)


# -- operational certificate with its cold key -------------------------------------------------

def _opcert_from_json(document: Any) -> tuple[OperationalCertificate, bytes]:
    if not isinstance(document, list) or len(document) != 2:
        raise ValueError("expected [certificate, cold key]")
    body, cold = document
    if not isinstance(body, list) or len(body) != 4:
        raise ValueError("expected the certificate as [kes vk, issue number, start KES period, signature]")
    hot_vk, issue, start, signature = body
    for name, value in (("issue number", issue), ("start KES period", start)):
        if type(value) is not int or not 0 <= value <= 0xFFFFFFFFFFFFFFFF:
            raise ValueError(f"{name} must be an unsigned 64-bit integer")
    opcert = OperationalCertificate(_byte_list(hot_vk, 32, "kes vk"), issue, start, _byte_list(signature, 64, "cold signature"))
    return opcert, _byte_list(cold, COLD_VK_SIZE, "cold key")


def _opcert_from_bytes(raw: bytes) -> tuple[OperationalCertificate, bytes]:
    cursor = Cursor(raw)
    try:
        cursor.definite_array(2)
        opcert = read_opcert(cursor)
        cold = cursor.bytes(size=COLD_VK_SIZE)
        cursor.expect_end()
    except CborError as exc:
        raise ValueError(f"CBOR [[kes vk, issue, start, signature], cold key]: {exc}") from None
    return opcert, cold


def decode_opcert(text: Any) -> tuple[OperationalCertificate, bytes]:
    """The certificate and the 32-byte cold verification key of an ``operational_certificate`` field."""
    return _decode("operational_certificate", text, _opcert_from_json, _opcert_from_bytes)
