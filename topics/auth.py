"""The auth statement of protocol 1000 (docs/topics-design.md 3.4, P).

An Ed25519 signature by the subscriber key over the deterministic encoding of
``["dmq-topic-auth", op, subscriber, group or null, ts, networkMagic]`` with ``op`` one of
``attach``, ``join``, ``leave``; valid while ``|now - ts| <= 120``. Replays inside the window are
harmless because the operations are idempotent.
"""

from __future__ import annotations

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

from . import cbor

__all__ = ["AUTH_WINDOW", "auth_statement", "sign_auth", "verify_auth"]

AUTH_WINDOW = 120
OPS = ("attach", "join", "leave")


def auth_statement(op: str, subscriber: bytes, group: bytes | None, ts: int, network_magic: int) -> bytes:
    if op not in OPS:
        raise ValueError(f"auth op is one of {OPS}, got {op!r}")
    return cbor.encode(["dmq-topic-auth", op, subscriber, group, ts, network_magic])


def sign_auth(key: SigningKey, op: str, group: bytes | None, ts: int, network_magic: int) -> bytes:
    return key.sign(auth_statement(op, bytes(key.verify_key), group, ts, network_magic)).signature


def verify_auth(op: str, subscriber: bytes, group: bytes | None, ts: int, sig: bytes, network_magic: int,
                now: float) -> bool:
    if abs(now - ts) > AUTH_WINDOW or len(subscriber) != 32 or len(sig) != 64:
        return False
    try:
        VerifyKey(subscriber).verify(auth_statement(op, subscriber, group, ts, network_magic), sig)
    except (BadSignatureError, ValueError):
        return False
    return True
