"""A small adapter for the framework's tests: signed-free key/value records with dependencies.

Tag 38140 (reserved in production, registered only here). Content ``[key, seq, deps, value]``:
the latest ``seq`` per key wins (a lower or equal one is ``stale``), ``deps`` are inner ids that
must have been accepted first (``defer``), and the value ``b"bad"`` is ``bad_signature``.
Its state converges whatever the arrival order (C5): the latest record per key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from topics import cbor
from topics.adapter import (
    ITEM_MESSAGE,
    OK,
    Accepted,
    AdapterTxn,
    Defer,
    Delivery,
    Reject,
    Start,
    StoreView,
    TopicAdapter,
    ValidationContext,
    Verdict,
)
from topics.envelope import EnvelopeError, decode_envelope, encode_envelope
from topics.raw import message_meta
from topics.reasons import BAD_SIGNATURE, EXPIRY_EXCEEDS_BOUND, MALFORMED, STALE

KV_TAG = 38140
KV_NUMBER = 2          # reuses a selector number for its items
KV_LIFETIME = 600


def kv_body(key: bytes, seq: int, value: bytes = b"v", deps: Sequence[bytes] = ()) -> bytes:
    return encode_envelope(KV_TAG, 0, [key, seq, list(deps), value])


def kv_id(body: bytes) -> bytes:
    return hashlib.blake2b(decode_envelope(body).content_raw, digest_size=32).digest()


class KvAdapter(TopicAdapter):
    name = "kv"
    tag = KV_TAG
    number = KV_NUMBER
    databases = ("latest", "ids")
    pending_limit = 16
    convergent = True

    def classify(self, body: bytes) -> bytes | None:
        try:
            return decode_envelope(body).content[0]
        except (EnvelopeError, IndexError, TypeError, KeyError):
            return None

    def decode(self, body: bytes) -> Any | Reject:
        try:
            env = decode_envelope(body)
        except EnvelopeError as exc:
            return Reject(exc.reason, exc.detail)
        content = env.content
        if env.kind != 0 or not isinstance(content, list) or len(content) != 4:
            return Reject(MALFORMED, "kv content is [key, seq, deps, value]")
        key, seq, deps, value = content
        if not (isinstance(key, bytes) and 1 <= len(key) <= 32 and isinstance(seq, int) and seq >= 0
                and isinstance(deps, list) and all(isinstance(d, bytes) and len(d) == 32 for d in deps)
                and isinstance(value, bytes)):
            return Reject(MALFORMED, "kv field types")
        inner_id = hashlib.blake2b(env.content_raw, digest_size=32).digest()
        return {"key": key, "seq": seq, "deps": deps, "value": value, "id": inner_id}

    def validate(self, inner: Any, ctx: ValidationContext) -> Verdict:
        if inner["value"] == b"bad":
            return Reject(BAD_SIGNATURE)
        if ctx.facts.expires_at > ctx.now + KV_LIFETIME + 1:
            return Reject(EXPIRY_EXCEEDS_BOUND)
        held = ctx.store.get("latest", inner["key"])
        if held is not None and cbor.decode(held)[0] >= inner["seq"]:
            return Reject(STALE)
        missing = [d for d in inner["deps"] if ctx.store.get("ids", d) is None]
        if missing:
            return Defer(missing)
        return OK

    def on_accept(self, message: Accepted, txn: AdapterTxn) -> Sequence[Delivery]:
        inner = message.inner
        txn.put("latest", inner["key"], cbor.encode([inner["seq"], inner["value"], message.message.raw]))
        txn.put("ids", inner["id"], b"")
        return [self._delivery(inner["key"], inner["id"], message.message.raw, message.arrival,
                               message.facts.pool_id, message.facts.expires_at)]

    def _delivery(self, key: bytes, inner_id: bytes, raw: bytes, arrival: int, pool: bytes,
                  deadline: float) -> Delivery:
        meta = message_meta(self.number, key, arrival, inner_id=inner_id, pool=pool)
        return Delivery(self.number, [ITEM_MESSAGE, meta, raw], {3: frozenset({key.ljust(32, b"\0")}),
                                                                  4: frozenset({pool})},
                        deadline=deadline, dedup=inner_id)

    def deliver(self, filters: Sequence[Mapping[int, Any]], start: Start, view: StoreView,
                now: float) -> Iterable[Delivery]:
        if start is Start.NOW:
            return []
        out = []
        for key, value in view.scan("latest"):
            seq, _, raw = cbor.decode(value)
            out.append(Delivery(self.number, [ITEM_MESSAGE, message_meta(self.number, key, 0), raw],
                                {3: frozenset({key.ljust(32, b"\0")})}))
        return out

    def expires_at(self, inner: Any, now: float) -> int:
        return int(now) + KV_LIFETIME

    def inner_id(self, inner: Any) -> bytes | None:
        return inner["id"]
