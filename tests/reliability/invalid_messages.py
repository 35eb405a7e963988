"""One message per invalid class of docs/protocol/validation.md section 6, and what the node must answer to it.

Each class fails exactly one rule. ``local`` is the exact reply on the local socket (a
reject reason, or ``CLOSED``: the connection ends without a reply because the bytes do not
decode, docs/protocol/local-protocols.md 7); ``peer`` is the exact reaction to a node-to-node peer serving it:
``trace`` (dropped, connection kept), ``disconnect`` with the error named, or
``not-fetched`` (an id X already holds is acknowledged without asking for its body).

Messages are built against the world's clock when the case runs; the states some classes
need (a pool's counter seen at 2, a pool that just published) are prepared by
:func:`prepare_world` and the case's ``before``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import cbor2

from dmq.codec import build_legacy_message, encode_message
from dmq.message import OperationalCertificate
from miniprotocols.local_msg_submission import RejectAlreadyReceived, RejectExpired, RejectInvalid

from tests.dmq.diffusion.network import pool

from .world import UNKNOWN, UNSTAKED, World

__all__ = ["CLOSED", "InvalidClass", "INVALID_CLASSES", "prepare_world", "reply_matches"]

#: The local reply to bytes that are not a message: none, the connection closes.
CLOSED = "closed"
#: Pools with roles: 2 has published under opcert issue 2; 3 publishes just before its case.
COUNTER_POOL, FREQUENT_POOL = 2, 3

_tags = itertools.count(10_000)


def _tag() -> int:
    return next(_tags)


def _expires(world: World) -> int:
    return world.now() + 900


@dataclass(frozen=True)
class InvalidClass:
    name: str
    build: Callable[[World], bytes]
    #: A reject reason, a regular expression over ``RejectInvalid.text`` (a ``re.Pattern``), or CLOSED.
    local: object
    peer: str
    #: What the peer's connection-closed trace must name, for ``disconnect``.
    peer_error: str | None = None
    #: Runs before the message is built (an honest submission the class depends on).
    before: Callable[[World, Callable[[bytes], Awaitable[object]]], Awaitable[None]] | None = None


async def prepare_world(world: World, submit_honest: Callable[[bytes], Awaitable[object]]) -> None:
    """Pool 2 publishes under opcert issue 2; then a minute passes, so only the counter rule
    can refuse its older certificate (the rate limit, rule 3, comes first)."""
    await submit_honest(pool(COUNTER_POOL).with_opcert(2).sign(_tag(), _expires(world)).raw)
    world.clock.advance(61)


async def _frequent_pool_publishes(world: World, submit_honest) -> None:
    await submit_honest(pool(FREQUENT_POOL).sign(_tag(), _expires(world)).raw)


def _tampered_id(world: World) -> bytes:
    raw = pool(1).sign(_tag(), _expires(world)).raw
    return raw[:3] + hashlib.blake2b(b"another payload", digest_size=32).digest() + raw[35:]


def _bad_cold_signature(world: World) -> bytes:
    p = pool(1)
    forged = OperationalCertificate(p.opcert.hot_vk, p.opcert.issue_number, p.opcert.start_kes_period,
                                    p.opcert.cold_signature[:-1] + bytes([p.opcert.cold_signature[-1] ^ 1]))
    return type(p)(p.cold_sk, p.cold_vk, p.kes, forged).sign(_tag(), _expires(world)).raw


def _with_payload(world: World, body: bytes) -> bytes:
    """A message around a payload with a body outside 90..2000 bytes (its id matches)."""
    m = pool(1).sign(_tag(), _expires(world))
    return encode_message(cbor2.dumps([body, 0, _expires(world)]), m.kes_signature, m.opcert, m.cold_vk)


def _short_kes_signature(world: World) -> bytes:
    m = pool(1).sign(_tag(), _expires(world))
    return encode_message(m.signed_bytes, m.kes_signature[:-1], m.opcert, m.cold_vk)


def _short_cold_key(world: World) -> bytes:
    m = pool(1).sign(_tag(), _expires(world))
    return encode_message(m.signed_bytes, m.kes_signature, m.opcert, m.cold_vk[:-1])


def _legacy(world: World) -> bytes:
    p = pool(1)
    return build_legacy_message(_tag().to_bytes(4, "big") * 30, 0, _expires(world), p.kes, p.opcert, p.cold_vk).raw


def _invalid(text: str) -> RejectInvalid:
    return RejectInvalid(text)


INVALID_CLASSES = [
    InvalidClass("SigExpired", lambda w: pool(1).sign(_tag(), w.now() - 1).raw, RejectExpired(), "trace"),
    InvalidClass("SigExpiresAtTooFarInTheFuture", lambda w: pool(1).sign(_tag(), w.now() + 1800).raw,
                 _invalid("SigExpiresAtTooFarInTheFuture"), "disconnect", "SigExpiresAtTooFarInTheFuture"),
    InvalidClass("SigTooFrequent", lambda w: pool(FREQUENT_POOL).sign(_tag(), _expires(w)).raw,
                 re.compile(r'SigTooFrequent \(KeyHash \{unKeyHash = "%s"\}\) 0s'
                            % pool(FREQUENT_POOL).pool_id.hex()),
                 "disconnect", "SigTooFrequent", before=_frequent_pool_publishes),
    InvalidClass("InvalidSigId", _tampered_id, _invalid("InvalidSigId"), "disconnect", "InvalidSigId"),
    InvalidClass("KESAfterEndOCERT", lambda w: pool(1).sign(_tag(), _expires(w), kes_period=62).raw,
                 _invalid("KESAfterEndOCERT (KESPeriod 62) (KESPeriod 62)"), "disconnect", "KESAfterEndOCERT"),
    InvalidClass("KESBeforeStartOCERT",
                 lambda w: pool(1).with_opcert(0, 5).sign(_tag(), _expires(w), kes_period=2, sign_period=0).raw,
                 _invalid("KESBeforeStartOCERT (KESPeriod 5) (KESPeriod 2)"), "disconnect", "KESBeforeStartOCERT"),
    InvalidClass("UnrecognizedPool", lambda w: pool(UNKNOWN).sign(_tag(), _expires(w)).raw,
                 _invalid("UnrecognizedPool"), "trace"),
    InvalidClass("PoolNotEligible", lambda w: pool(UNSTAKED).sign(_tag(), _expires(w)).raw,
                 _invalid("PoolNotEligible"), "trace"),
    InvalidClass("InvalidOCertCounter", lambda w: pool(COUNTER_POOL).with_opcert(1).sign(_tag(), _expires(w)).raw,
                 _invalid("InvalidOCertCounter 2 1"), "disconnect", "InvalidOCertCounter"),
    InvalidClass("InvalidSignatureOCERT", _bad_cold_signature,
                 _invalid('InvalidSignatureOCERT 0 (KESPeriod 0) "Verification failed"'), "disconnect",
                 "InvalidSignatureOCERT"),
    InvalidClass("InvalidKESSignature", lambda w: pool(1).sign(_tag(), _expires(w), sign_period=1).raw,
                 _invalid('InvalidKESSignature (KESPeriod 0) (KESPeriod 0) "Verification failed"'), "disconnect",
                 "InvalidKESSignature"),
    InvalidClass("body of 89 bytes", lambda w: _with_payload(w, bytes(89)), CLOSED, "disconnect",
                 "MessageDecodeError"),
    InvalidClass("body of 2001 bytes", lambda w: _with_payload(w, bytes(2001)), CLOSED, "disconnect",
                 "MessageDecodeError"),
    InvalidClass("KES signature of 447 bytes", _short_kes_signature, CLOSED, "disconnect", "MessageDecodeError"),
    InvalidClass("cold key of 31 bytes", _short_cold_key, CLOSED, "disconnect", "MessageDecodeError"),
    InvalidClass("legacy format (disabled)", _legacy, CLOSED, "disconnect", "a message is an array of 5 items, got 4"),
    InvalidClass("SigDuplicate", lambda w: w.honest[0], RejectAlreadyReceived(), "not-fetched"),
]


def reply_matches(expected: object, reply: object) -> bool:
    if isinstance(expected, re.Pattern):
        return isinstance(reply, RejectInvalid) and expected.fullmatch(reply.text) is not None
    return reply == expected
