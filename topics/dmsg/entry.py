"""dmsg discovery entries carried verbatim, and the latest-state rules (docs/topics-design.md 6.1 to 6.3).

The entry travels as the exact JSON the dmsg implementation signed, so its secp256k1
signature stays valid and entries bridge to a dmsg discovery service unchanged. A received
entry is accepted only if re-serializing it in the pinned field order reproduces it byte
for byte (``non_canonical`` otherwise): that makes the signed preimage unambiguous.
Signature: SHA-256 over the entry without ``signature``, 65-byte recoverable secp256k1
(r, s, recovery id) by ``static``; the recovered key must equal ``static``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from dataclasses import dataclass

from ecdsa import SECP256k1, BadSignatureError, MalformedPointError, SigningKey, VerifyingKey
from ecdsa.numbertheory import SquareRootError
from ecdsa.util import sigdecode_string, sigencode_string_canonize

from topics.reasons import BAD_SIGNATURE, CONFLICT, MALFORMED, NON_CANONICAL, NOT_FRESH, STALE, adapter_reason

__all__ = ["Entry", "DmsgReject", "parse_entry", "serialize", "sign_entry", "check_fresh", "check_iteration",
           "expires_at", "BAD_ADDRESS", "NO_ROLE", "STALE_TIMESTAMP", "FROM_FUTURE", "WINDOW", "SKEW",
           "MAX_LIFETIME"]

BAD_ADDRESS = adapter_reason("dmsg", 48, "bad_address")
NO_ROLE = adapter_reason("dmsg", 49, "no_role")
STALE_TIMESTAMP = adapter_reason("dmsg", 50, "stale_timestamp")
FROM_FUTURE = adapter_reason("dmsg", 51, "from_future")

WINDOW = 300          # W (P)
SKEW = 30             # S (P)
MAX_LIFETIME = 1740   # M (P)
MAX_DELEGATED = 8     # (P)
_FORBIDDEN = set('"\\<>&')


class DmsgReject(ValueError):
    def __init__(self, reason, detail: str = "") -> None:
        super().__init__(f"{reason.name}: {detail}")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Entry:
    version: str
    sequence: int
    timestamp: int                       # nanoseconds
    static: str                          # 33-byte compressed key, hex
    delegated: tuple[str, ...] | None    # client record (None: absent)
    client_type: str | None
    address: str | None                  # server record (None: absent)
    sessions: int | None
    server_type: str | None
    signature: str | None
    raw: bytes = b""

    @property
    def seconds(self) -> int:
        return self.timestamp // 10**9

    def unsigned(self) -> dict:
        out: dict = {"version": self.version, "sequence": self.sequence, "timestamp": self.timestamp,
                     "static": self.static}
        if self.delegated is not None:
            out["client"] = {"delegated_servers": list(self.delegated)}
        if self.client_type:
            out["client_type"] = self.client_type
        if self.address is not None:
            server = {"address": self.address, "availableSessions": self.sessions}
            if self.server_type:
                server["serverType"] = self.server_type
            out["server"] = server
        return out


def _dump(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True).encode()


def serialize(entry: Entry, with_signature: bool = True) -> bytes:
    """The pinned compact form: reference field order, empty optional members omitted."""
    value = entry.unsigned()
    if with_signature and entry.signature:
        value["signature"] = entry.signature
    return _dump(value)


def _text(value, what: str) -> str:
    if not isinstance(value, str) or any(c in _FORBIDDEN or not 32 <= ord(c) < 127 for c in value):
        raise DmsgReject(MALFORMED, f"{what} is not printable ASCII without quotes, backslash, <, >, &")
    return value


def _int(value, what: str) -> int:
    if type(value) is not int:
        raise DmsgReject(MALFORMED, f"{what} is not an integer")
    return value


def parse_entry(raw: bytes, allow_local_addresses: bool = False) -> Entry:
    """Parse, check structure and canonical form, and verify the signature."""
    try:
        value = json.loads(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:   # "[[[[..." deeper than the stack
        raise DmsgReject(MALFORMED, f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise DmsgReject(MALFORMED, "entry is not an object")
    client, server = value.get("client"), value.get("server")
    if client is None and server is None:
        raise DmsgReject(NO_ROLE, "neither a client nor a server record")
    delegated = None
    if client is not None:
        servers = client.get("delegated_servers") if isinstance(client, dict) else None
        if not isinstance(servers, list) or len(servers) > MAX_DELEGATED:
            raise DmsgReject(MALFORMED, f"delegated servers missing or over {MAX_DELEGATED}")
        delegated = tuple(_text(s, "delegated server") for s in servers)
    address = sessions = server_type = None
    if server is not None:
        if not isinstance(server, dict):
            raise DmsgReject(MALFORMED, "server record is not an object")
        address = _text(server.get("address", ""), "address")
        sessions = _int(server.get("availableSessions"), "availableSessions")
        if sessions < 0:
            raise DmsgReject(MALFORMED, "negative available sessions")
        server_type = server.get("serverType")
        _check_address(address, allow_local_addresses)
    entry = Entry(_text(value.get("version"), "version"), _int(value.get("sequence"), "sequence"),
                  _int(value.get("timestamp"), "timestamp"), _text(value.get("static"), "static"),
                  delegated, value.get("client_type"), address, sessions, server_type,
                  _text(value.get("signature", ""), "signature") or None, raw)
    if entry.sequence < 0 or not entry.signature or not entry.static:
        raise DmsgReject(MALFORMED, "negative sequence, or no signature or static key")
    for key in (entry.static, entry.signature, *(entry.delegated or ())):
        if key != key.lower():
            raise DmsgReject(NON_CANONICAL, "keys and signatures are lowercase hex")
    if serialize(entry) != raw:
        raise DmsgReject(NON_CANONICAL, "entry is not in the pinned compact form")
    _verify(entry)
    return entry


def _check_address(address: str, allow_local: bool) -> None:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DmsgReject(BAD_ADDRESS, f"{address!r} is not host:port")
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return                                          # a host name
    if not allow_local and (ip.is_loopback or ip.is_unspecified or ip.is_link_local):
        raise DmsgReject(BAD_ADDRESS, f"{host} is loopback, unspecified or link-local")


def _verify(entry: Entry) -> None:
    try:
        static = VerifyingKey.from_string(bytes.fromhex(entry.static), curve=SECP256k1)
        sig = bytes.fromhex(entry.signature)
    except (ValueError, MalformedPointError, SquareRootError):
        raise DmsgReject(MALFORMED, "static key or signature is not valid hex of a secp256k1 key") from None
    if len(sig) != 65 or sig[64] > 1:
        raise DmsgReject(BAD_SIGNATURE, "signature is not 65 bytes with recovery id 0 or 1")
    digest = hashlib.sha256(serialize(entry, with_signature=False)).digest()
    try:
        candidates = VerifyingKey.from_public_key_recovery_with_digest(sig[:64], digest, SECP256k1,
                                                                         sigdecode=sigdecode_string)
    except (BadSignatureError, ValueError, AssertionError, MalformedPointError, SquareRootError):
        raise DmsgReject(BAD_SIGNATURE, "no key recovers from the signature") from None
    if sig[64] >= len(candidates) or candidates[sig[64]].to_string() != static.to_string():
        raise DmsgReject(BAD_SIGNATURE, "the recovered key is not the static key")


def sign_entry(entry: Entry, secret: bytes) -> bytes:
    """The signed entry JSON (for clients and tests)."""
    key = SigningKey.from_string(secret, curve=SECP256k1)
    digest = hashlib.sha256(serialize(entry, with_signature=False)).digest()
    rs = key.sign_digest_deterministic(digest, sigencode=sigencode_string_canonize)
    candidates = VerifyingKey.from_public_key_recovery_with_digest(rs, digest, SECP256k1, sigdecode=sigdecode_string)
    recid = next(i for i, c in enumerate(candidates) if c.to_string() == key.get_verifying_key().to_string())
    signed = Entry(**{**{f: getattr(entry, f) for f in Entry.__slots__ if f != "raw"},
                      "signature": (rs + bytes([recid])).hex()})
    return serialize(signed)


def check_fresh(entry: Entry, now: float, window: int = WINDOW) -> None:
    if entry.seconds > now + SKEW:
        raise DmsgReject(FROM_FUTURE, f"timestamp {entry.seconds} after now + {SKEW}")
    if entry.seconds < now - window:
        raise DmsgReject(NOT_FRESH, f"timestamp {entry.seconds} older than now - {window}")


def check_iteration(entry: Entry, held: Entry | None, highest_seq: int | None) -> None:
    """Sequence greater than held (equal with other bytes: conflict), timestamp greater."""
    seq = highest_seq if held is None else max(held.sequence, highest_seq or 0)
    if seq is None:
        return
    if entry.sequence == seq and held is not None and held.sequence == seq and held.raw != entry.raw:
        raise DmsgReject(CONFLICT, f"sequence {seq} held with other bytes")
    if entry.sequence <= seq:
        raise DmsgReject(STALE, f"sequence {entry.sequence} not above {seq}")
    if held is not None and entry.timestamp <= held.timestamp:
        raise DmsgReject(STALE_TIMESTAMP, "timestamp not above the held one")


def expires_at(entry: Entry, now: float, window: int = WINDOW) -> int:
    """``min(T + W, t + M)`` (docs/topics-design.md 6.2)."""
    return min(entry.seconds + window, int(now) + MAX_LIFETIME)
