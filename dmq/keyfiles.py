"""cardano-cli key files (text envelopes) for the keys a DMQ signer and a devnet need.

A text envelope is ``{"type": …, "description": …, "cborHex": …}``; the type says what the
CBOR holds. Operators already have these files from running a stake pool, so the node and the
signer tooling read them as they are:

=========================================  ====================================================
type                                       cborHex
=========================================  ====================================================
``KesSigningKey_ed25519_kes_2^6``          ``590260`` ‖ 608-byte Sum6KES key (as created, period 0)
``KesVerificationKey_ed25519_kes_2^6``     ``5820`` ‖ 32-byte KES verification key
``NodeOperationalCertificate``             ``[[hotKesVk, issueNumber, startKesPeriod, sig], coldVk]``
``NodeOperationalCertificateIssueCounter`` ``[nextIssueNumber, coldVk]``
``StakePoolSigningKey_ed25519``            ``5820`` ‖ 32-byte Ed25519 seed (pycardano)
``StakePoolVerificationKey_ed25519``       ``5820`` ‖ 32-byte Ed25519 key (pycardano)
``VrfSigningKey_PraosVRF``                 ``5840`` ‖ 64 bytes (kept opaque: DMQ does not use VRF)
=========================================  ====================================================

plus the bulk credentials file of cardano-node (``--bulk-credentials-file``): a JSON list of
``[opcert envelope, VRF key envelope, KES key envelope]`` triples, one per pool.

Every problem is a ``KeyFileError`` whose message names the file and what is wrong with it in
one line, since these are operator mistakes, not bugs.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pycardano import StakePoolSigningKey, StakePoolVerificationKey
from pycardano.exception import PyCardanoException

from ouroboros_mux.cbor import MAJOR_BYTES, CborError, Cursor, write_head

from .kes import SUM6_DEPTH, KesError, KesSigningKey, kes_signing_key_size
from .message import COLD_VK_SIZE, KES_VK_SIZE, OperationalCertificate, pool_id_of
from .opcert import encode_opcert, encode_uint, read_opcert
from .operator_json import OperatorJsonError, parse_operator_json

__all__ = [
    "KeyFileError",
    "TextEnvelope",
    "IssueCounter",
    "BulkCredential",
    "KES_SIGNING_KEY_TYPE",
    "KES_VERIFICATION_KEY_TYPE",
    "OPCERT_TYPE",
    "ISSUE_COUNTER_TYPE",
    "COLD_SIGNING_KEY_TYPE",
    "COLD_VERIFICATION_KEY_TYPE",
    "VRF_SIGNING_KEY_TYPE",
    "read_text_envelope",
    "write_text_envelope",
    "read_kes_signing_key",
    "write_kes_signing_key",
    "read_kes_verification_key",
    "write_kes_verification_key",
    "read_operational_certificate",
    "write_operational_certificate",
    "read_cold_signing_key",
    "write_cold_signing_key",
    "read_cold_verification_key",
    "write_cold_verification_key",
    "read_issue_counter",
    "write_issue_counter",
    "read_bulk_credentials",
    "write_bulk_credentials",
]

KES_SIGNING_KEY_TYPE = "KesSigningKey_ed25519_kes_2^6"
KES_VERIFICATION_KEY_TYPE = "KesVerificationKey_ed25519_kes_2^6"
OPCERT_TYPE = "NodeOperationalCertificate"
ISSUE_COUNTER_TYPE = "NodeOperationalCertificateIssueCounter"
COLD_SIGNING_KEY_TYPE = StakePoolSigningKey.KEY_TYPE
COLD_VERIFICATION_KEY_TYPE = StakePoolVerificationKey.KEY_TYPE
VRF_SIGNING_KEY_TYPE = "VrfSigningKey_PraosVRF"

_VRF_SIGNING_KEY_SIZE = 64
_SUM6_KEY_SIZE = kes_signing_key_size(SUM6_DEPTH)


class KeyFileError(ValueError):
    """A key file that cannot be used; the message names the file and the problem."""


# --------------------------------------------------------------------------------------
# The envelope

@dataclass(frozen=True, slots=True)
class TextEnvelope:
    """One cardano-cli text envelope with its CBOR already decoded from hex."""

    type: str
    description: str
    cbor: bytes

    def to_json_object(self) -> dict:
        return {"type": self.type, "description": self.description, "cborHex": self.cbor.hex()}

    def to_json(self) -> str:
        """The file text as cardano-cli writes it: 4-space indentation, one final newline."""
        return json.dumps(self.to_json_object(), indent=4) + "\n"

    @classmethod
    def from_json_object(cls, obj, source: str) -> TextEnvelope:
        if not isinstance(obj, dict):
            raise KeyFileError(f"{source}: expected a text envelope object, got {type(obj).__name__}")
        kind = obj.get("type")
        cbor_hex = obj.get("cborHex")
        description = obj.get("description", "")
        if not isinstance(kind, str):
            raise KeyFileError(f"{source}: text envelope has no \"type\" string")
        if not isinstance(cbor_hex, str):
            raise KeyFileError(f"{source}: text envelope of type {kind} has no \"cborHex\" string")
        if not isinstance(description, str):
            raise KeyFileError(f"{source}: text envelope \"description\" is not a string")
        try:
            cbor = bytes.fromhex(cbor_hex)
        except ValueError:
            raise KeyFileError(f"{source}: \"cborHex\" of the {kind} envelope is not hexadecimal") from None
        return cls(kind, description, cbor)

    @classmethod
    def from_json(cls, text: str, source: str) -> TextEnvelope:
        return cls.from_json_object(_parse_json(text, source), source)


def _parse_json(text: str, source: str):
    try:
        return parse_operator_json(text, source, "key", expect_object=False)
    except OperatorJsonError as exc:
        raise KeyFileError(str(exc)) from None


def _read_text(path: str | os.PathLike) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KeyFileError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise KeyFileError(f"{path}: not a text file") from None
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot be read ({exc.strerror})") from None


def _write_text(path: str | os.PathLike, text: str, *, secret: bool) -> None:
    """Write atomically (temporary file then rename); secrets are readable by the owner only."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot be written ({exc.strerror})") from None
    try:
        os.fchmod(fd, 0o600 if secret else 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise KeyFileError(f"{path}: cannot be written ({exc.strerror})") from None


def read_text_envelope(path: str | os.PathLike, expected_type: str | None = None) -> TextEnvelope:
    """Read one envelope; with ``expected_type`` a file of another type is refused."""
    envelope = TextEnvelope.from_json(_read_text(path), str(path))
    if expected_type is not None:
        _expect_type(envelope, expected_type, str(path))
    return envelope


def write_text_envelope(path: str | os.PathLike, envelope: TextEnvelope, *, secret: bool = False) -> None:
    _write_text(path, envelope.to_json(), secret=secret)


def _expect_type(envelope: TextEnvelope, expected: str, source: str) -> None:
    if envelope.type != expected:
        raise KeyFileError(f"{source}: expected a {expected} file, found type {envelope.type!r}")


def _cbor_field(source: str, kind: str, read):
    """Run a strict CBOR reader over an envelope's bytes, turning errors into one line."""
    try:
        return read()
    except CborError as exc:
        raise KeyFileError(f"{source}: cborHex of the {kind} envelope is malformed: {exc}") from None


def _single_bstr(envelope: TextEnvelope, source: str, size: int) -> bytes:
    def read() -> bytes:
        cursor = Cursor(envelope.cbor)
        value = cursor.bytes(size=size)
        cursor.expect_end()
        return value

    return _cbor_field(source, envelope.type, read)


def _bstr_cbor(value: bytes) -> bytes:
    return write_head(MAJOR_BYTES, len(value)) + value


# --------------------------------------------------------------------------------------
# KES keys

def _kes_signing_key_from(envelope: TextEnvelope, source: str, period: int) -> KesSigningKey:
    _expect_type(envelope, KES_SIGNING_KEY_TYPE, source)
    raw = _single_bstr(envelope, source, _SUM6_KEY_SIZE)
    try:
        return KesSigningKey.from_bytes(raw, period=period, depth=SUM6_DEPTH)
    except KesError as exc:
        raise KeyFileError(f"{source}: {exc}") from None


def _kes_signing_key_envelope(key: KesSigningKey) -> TextEnvelope:
    if key.depth != SUM6_DEPTH:
        raise KeyFileError(f"only Sum6KES keys have a cardano-cli file type, this key has depth {key.depth}")
    return TextEnvelope(KES_SIGNING_KEY_TYPE, "KES Signing Key", _bstr_cbor(key.to_bytes()))


def read_kes_signing_key(path: str | os.PathLike, *, period: int = 0) -> KesSigningKey:
    """A Sum6KES signing key file; files hold the key as created, hence ``period=0``."""
    return _kes_signing_key_from(read_text_envelope(path), str(path), period)


def write_kes_signing_key(path: str | os.PathLike, key: KesSigningKey) -> None:
    """Write the key's current bytes (readable by the owner only).

    The file does not record the period: an evolved key must be read back with
    ``period=key.period``. cardano-cli only ever writes keys at period 0.
    """
    write_text_envelope(path, _kes_signing_key_envelope(key), secret=True)


def read_kes_verification_key(path: str | os.PathLike) -> bytes:
    envelope = read_text_envelope(path, KES_VERIFICATION_KEY_TYPE)
    return _single_bstr(envelope, str(path), KES_VK_SIZE)


def write_kes_verification_key(path: str | os.PathLike, vk: bytes) -> None:
    if len(vk) != KES_VK_SIZE:
        raise KeyFileError(f"{path}: a KES verification key is {KES_VK_SIZE} bytes, got {len(vk)}")
    write_text_envelope(path, TextEnvelope(KES_VERIFICATION_KEY_TYPE, "KES Verification Key", _bstr_cbor(vk)))


# --------------------------------------------------------------------------------------
# Operational certificates and issue counters

def _opcert_from(envelope: TextEnvelope, source: str) -> tuple[OperationalCertificate, bytes]:
    _expect_type(envelope, OPCERT_TYPE, source)

    def read() -> tuple[OperationalCertificate, bytes]:
        cursor = Cursor(envelope.cbor)
        cursor.definite_array(2)
        opcert = read_opcert(cursor)
        cold_vk = cursor.bytes(size=COLD_VK_SIZE)
        cursor.expect_end()
        return opcert, cold_vk

    return _cbor_field(source, envelope.type, read)


def _opcert_envelope(opcert: OperationalCertificate, cold_vk: bytes) -> TextEnvelope:
    if len(cold_vk) != COLD_VK_SIZE:
        raise KeyFileError(f"a cold verification key is {COLD_VK_SIZE} bytes, got {len(cold_vk)}")
    return TextEnvelope(OPCERT_TYPE, "", b"\x82" + encode_opcert(opcert) + _bstr_cbor(cold_vk))


def read_operational_certificate(path: str | os.PathLike) -> tuple[OperationalCertificate, bytes]:
    """An opcert file: the certificate and the cold verification key stored beside it."""
    return _opcert_from(read_text_envelope(path), str(path))


def write_operational_certificate(path: str | os.PathLike, opcert: OperationalCertificate, cold_vk: bytes) -> None:
    write_text_envelope(path, _opcert_envelope(opcert, cold_vk))


@dataclass(frozen=True, slots=True)
class IssueCounter:
    """The issue number the next certificate of a cold key will carry."""

    next_issue_number: int
    cold_vk: bytes


def read_issue_counter(path: str | os.PathLike) -> IssueCounter:
    envelope = read_text_envelope(path, ISSUE_COUNTER_TYPE)

    def read() -> IssueCounter:
        cursor = Cursor(envelope.cbor)
        cursor.definite_array(2)
        counter = cursor.uint()
        cold_vk = cursor.bytes(size=COLD_VK_SIZE)
        cursor.expect_end()
        return IssueCounter(counter, cold_vk)

    return _cbor_field(str(path), envelope.type, read)


def write_issue_counter(path: str | os.PathLike, counter: IssueCounter) -> None:
    if len(counter.cold_vk) != COLD_VK_SIZE:
        raise KeyFileError(f"{path}: a cold verification key is {COLD_VK_SIZE} bytes, got {len(counter.cold_vk)}")
    try:
        cbor = b"\x82" + encode_uint(counter.next_issue_number) + _bstr_cbor(counter.cold_vk)
    except ValueError as exc:
        raise KeyFileError(f"{path}: {exc}") from None
    description = f"Next certificate issue number: {counter.next_issue_number}"
    write_text_envelope(path, TextEnvelope(ISSUE_COUNTER_TYPE, description, cbor))


# --------------------------------------------------------------------------------------
# Cold (stake pool) keys, through pycardano

def _pycardano_key(path: str | os.PathLike, cls):
    text = _read_text(path)
    envelope = TextEnvelope.from_json(text, str(path))
    _expect_type(envelope, cls.KEY_TYPE, str(path))
    try:
        key = cls.from_json(text, validate_type=True)
    except (PyCardanoException, ValueError, TypeError, AssertionError) as exc:
        raise KeyFileError(f"{path}: not a readable {cls.KEY_TYPE} ({exc})") from None
    if len(key.payload) != 32:
        raise KeyFileError(f"{path}: a {cls.KEY_TYPE} holds 32 bytes, this one {len(key.payload)}")
    return key


def read_cold_signing_key(path: str | os.PathLike) -> bytes:
    """The 32-byte Ed25519 seed of a stake pool cold signing key file."""
    return bytes(_pycardano_key(path, StakePoolSigningKey).payload)


def write_cold_signing_key(path: str | os.PathLike, seed: bytes) -> None:
    if len(seed) != 32:
        raise KeyFileError(f"{path}: a cold signing key is a 32-byte Ed25519 seed, got {len(seed)} bytes")
    key = StakePoolSigningKey(bytes(seed))
    envelope = TextEnvelope(key.key_type, key.description, key.to_cbor())
    write_text_envelope(path, envelope, secret=True)


def read_cold_verification_key(path: str | os.PathLike) -> bytes:
    return bytes(_pycardano_key(path, StakePoolVerificationKey).payload)


def write_cold_verification_key(path: str | os.PathLike, vk: bytes) -> None:
    if len(vk) != COLD_VK_SIZE:
        raise KeyFileError(f"{path}: a cold verification key is {COLD_VK_SIZE} bytes, got {len(vk)}")
    key = StakePoolVerificationKey(bytes(vk))
    write_text_envelope(path, TextEnvelope(key.key_type, key.description, key.to_cbor()))


# --------------------------------------------------------------------------------------
# Bulk credentials (cardano-node --bulk-credentials-file)

@dataclass(frozen=True)
class BulkCredential:
    """One pool's forging credentials: what a DMQ signer needs plus the VRF key it ignores."""

    opcert: OperationalCertificate
    cold_vk: bytes
    vrf_signing_key: bytes
    kes_key: KesSigningKey

    @property
    def pool_id(self) -> bytes:
        return pool_id_of(self.cold_vk)


def read_bulk_credentials(path: str | os.PathLike) -> list[BulkCredential]:
    """Every ``[opcert, VRF key, KES key]`` triple of a bulk credentials file, in order."""
    source = str(path)
    document = _parse_json(_read_text(path), source)
    if not isinstance(document, list):
        raise KeyFileError(f"{source}: expected a JSON list of [opcert, VRF key, KES key] triples")
    credentials = []
    for index, triple in enumerate(document):
        where = f"{source} (credential {index})"
        if not isinstance(triple, list) or len(triple) != 3:
            raise KeyFileError(f"{where}: expected a list of 3 envelopes [opcert, VRF key, KES key]")
        opcert_env, vrf_env, kes_env = (
            TextEnvelope.from_json_object(item, where) for item in triple
        )
        opcert, cold_vk = _opcert_from(opcert_env, where)
        _expect_type(vrf_env, VRF_SIGNING_KEY_TYPE, where)
        vrf_key = _single_bstr(vrf_env, where, _VRF_SIGNING_KEY_SIZE)
        kes_key = _kes_signing_key_from(kes_env, where, 0)
        credentials.append(BulkCredential(opcert, cold_vk, vrf_key, kes_key))
    return credentials


def write_bulk_credentials(path: str | os.PathLike, credentials: list[BulkCredential]) -> None:
    document = []
    for credential in credentials:
        if len(credential.vrf_signing_key) != _VRF_SIGNING_KEY_SIZE:
            raise KeyFileError(
                f"{path}: a VRF signing key is {_VRF_SIGNING_KEY_SIZE} bytes, got {len(credential.vrf_signing_key)}"
            )
        vrf = TextEnvelope(VRF_SIGNING_KEY_TYPE, "VRF Signing Key", _bstr_cbor(credential.vrf_signing_key))
        document.append([
            _opcert_envelope(credential.opcert, credential.cold_vk).to_json_object(),
            vrf.to_json_object(),
            _kes_signing_key_envelope(credential.kes_key).to_json_object(),
        ])
    _write_text(path, json.dumps(document, indent=4) + "\n", secret=True)
