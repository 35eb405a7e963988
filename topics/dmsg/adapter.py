"""The dmsg discovery adapter: the hooks of docs/topics-design.md 2.4 for signed dmsg entries (section 6).

State lives in two named databases, written in the commit transaction of the message:

* ``entry``: static key (33 bytes) -> ``[entryJson, sequence, timestamp ns, pool, arrival, dmq message]``,
  the latest valid entry, dropped at ``T + W``;
* ``seq``: static key -> ``[highest sequence, forget at]``, kept ``W + 1 hour`` so that a
  replayed older entry is still ``stale`` after its entry is gone.

``validate`` applies the rules of :mod:`topics.dmsg.entry` to the held state, the expiry
bound ``expiresAt <= T + W + S``, and the publication limit for local entries (one refresh
per key per 60 s). :class:`HeldEntries` gives :func:`~topics.dmsg.state.find_relay` the
stored state, so the relay look-up of 6.4 answers from what the node holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topics import cbor
from topics.adapter import (
    FLAG_LATE,
    FLAG_LOCAL,
    ITEM_MESSAGE,
    OK,
    Accepted,
    AdapterTxn,
    Delivery,
    Origin,
    Priority,
    Reject,
    Start,
    StoreView,
    TopicAdapter,
    ValidationContext,
    Verdict,
)
from topics.classify import TAG_DMSG, tag_of
from topics.envelope import EnvelopeError, decode_envelope
from topics.filters import matches
from topics.raw import message_meta
from topics.reasons import EXPIRY_EXCEEDS_BOUND, MALFORMED, RATE_LIMITED, UNKNOWN_TOPIC

from .entry import SKEW, WINDOW, DmsgReject, Entry, check_fresh, check_iteration, expires_at, parse_entry
from .state import SEQ_MEMORY, find_relay

__all__ = ["DmsgAdapter", "HeldEntries", "ADAPTER_NUMBER", "REFRESH_INTERVAL", "ROLE_CLIENT", "ROLE_SERVER"]

ADAPTER_NUMBER = 3
REFRESH_INTERVAL = 60            # (P) one local refresh per key per 60 s
ROLE_CLIENT, ROLE_SERVER = 1, 2
MAX_ENTRY = 1800


@dataclass(frozen=True, slots=True)
class HeldRow:
    entry: Entry
    pool: bytes
    arrival: int
    message: bytes


def _row(view: StoreView, key: bytes) -> HeldRow | None:
    raw = view.get("entry", key)
    if raw is None:
        return None
    entry_json, _, _, pool, arrival, message = cbor.decode(raw)
    return HeldRow(parse_entry(entry_json, allow_local_addresses=True), pool, arrival, message)


def _highest(view: StoreView, key: bytes) -> int | None:
    raw = view.get("seq", key)
    return None if raw is None else cbor.decode(raw)[0]


class HeldEntries:
    """The stored state seen as :class:`~topics.dmsg.state.DmsgState` by ``find_relay``."""

    def __init__(self, view: StoreView, window: int = WINDOW) -> None:
        self.view = view
        self.window = window

    def fresh(self, key: str, now: float) -> Entry | None:
        row = _row(self.view, bytes.fromhex(key))
        if row is None or now > row.entry.seconds + self.window:
            return None
        return row.entry


class DmsgAdapter(TopicAdapter):
    name = "dmsg"
    tag = TAG_DMSG
    number = ADAPTER_NUMBER
    databases = ("entry", "seq")
    convergent = True

    def __init__(self, *, window: int = WINDOW, allow_local_addresses: bool = False,
                 allowed_keys: Iterable[bytes] | None = None) -> None:
        self.window = window
        self.allow_local_addresses = allow_local_addresses
        self.allowed_keys = None if allowed_keys is None else frozenset(allowed_keys)

    def classify(self, body: bytes) -> bytes | None:
        if tag_of(body) != TAG_DMSG:
            return None
        entry = self.decode(body)
        return None if isinstance(entry, Reject) else bytes.fromhex(entry.static)

    def decode(self, body: bytes) -> Entry | Reject:
        try:
            envelope = decode_envelope(body)
        except EnvelopeError as exc:
            return Reject(exc.reason, exc.detail)
        if envelope.kind != 0:
            return Reject(UNKNOWN_TOPIC, f"dmsg kind {envelope.kind}")
        content = envelope.content
        if not isinstance(content, bytes) or not 1 <= len(content) <= MAX_ENTRY:
            return Reject(MALFORMED, f"entryJson is a byte string of 1..{MAX_ENTRY} bytes")
        try:
            return parse_entry(content, self.allow_local_addresses)
        except DmsgReject as exc:
            return Reject(exc.reason, str(exc))

    def inner_id(self, inner: Entry) -> bytes | None:
        import hashlib

        return hashlib.blake2b(inner.raw, digest_size=32).digest()

    def provides(self, inner: Entry) -> Iterable[bytes]:
        return ()

    def validate(self, inner: Entry, ctx: ValidationContext) -> Verdict:
        now, key = ctx.now, bytes.fromhex(inner.static)
        try:
            check_fresh(inner, now, self.window)
            held = _row(ctx.store, key)
            highest = _highest(ctx.store, key)
            check_iteration(inner, held.entry if held is not None else None, highest)
        except DmsgReject as exc:
            return Reject(exc.reason, str(exc))
        if ctx.facts.expires_at > inner.seconds + self.window + SKEW:
            return Reject(EXPIRY_EXCEEDS_BOUND, "expiresAt after T + W + S")
        if ctx.facts.origin is not Origin.PEER:
            if self.allowed_keys is not None and key not in self.allowed_keys:
                from topics.reasons import NOT_AUTHORIZED
                return Reject(NOT_AUTHORIZED, "static key not allowed to publish here")
            if held is not None and now < held.arrival + REFRESH_INTERVAL:
                retry = int(held.arrival + REFRESH_INTERVAL - now) + 1
                return Reject(RATE_LIMITED, f"one refresh per {REFRESH_INTERVAL} s", retry)
        return OK

    def publication_key(self, inner: Entry) -> bytes | None:
        """The entry's static key (2.7)."""
        return bytes.fromhex(inner.static)

    def publication_priority(self, inner: Entry) -> Priority | None:
        """Entries are periodic refreshes (2.7)."""
        return Priority.REFRESH

    def expires_at(self, inner: Entry, now: float) -> int:
        return expires_at(inner, now, self.window)

    def on_accept(self, message: Accepted, txn: AdapterTxn) -> Sequence[Delivery]:
        entry: Entry = message.inner
        key = bytes.fromhex(entry.static)
        facts = message.facts
        txn.put("entry", key, cbor.encode([entry.raw, entry.sequence, entry.timestamp, facts.pool_id,
                                           message.arrival, message.message.raw]))
        txn.put("seq", key, cbor.encode([entry.sequence, entry.seconds + SEQ_MEMORY]))
        flags = (FLAG_LATE if message.late else 0) | (0 if facts.origin is Origin.PEER else FLAG_LOCAL)
        return [self._item(entry, facts.pool_id, message.arrival, message.message.raw, flags)]

    def _item(self, entry: Entry, pool: bytes, arrival: int, raw: bytes, flags: int) -> Delivery:
        key = bytes.fromhex(entry.static)
        roles = frozenset(r for r, present in ((ROLE_CLIENT, entry.delegated is not None),
                                               (ROLE_SERVER, entry.address is not None)) if present)
        meta = message_meta(ADAPTER_NUMBER, key, arrival, inner_id=self.inner_id(entry), pool=pool, flags=flags)
        return Delivery(ADAPTER_NUMBER, [ITEM_MESSAGE, meta, raw],
                        facets={8: frozenset({key}), 4: frozenset({pool}), 9: frozenset({0}), 11: roles},
                        deadline=float(entry.seconds + self.window), dedup=self.inner_id(entry))

    def deliver(self, filters: Sequence[Mapping[int, Any]], start: Start, view: StoreView,
                now: float) -> Iterable[Delivery]:
        """``state`` and ``retained``: the latest fresh entry per key, oldest arrival first."""
        if start is Start.NOW:
            return []
        rows = [r for r in (_row(view, k) for k, _ in view.scan("entry"))
                if r is not None and now <= r.entry.seconds + self.window]
        rows.sort(key=lambda r: (r.arrival, r.entry.static))
        items = [self._item(r.entry, r.pool, r.arrival, r.message, 0) for r in rows]
        return [d for d in items if not filters or matches(filters, d)]

    def prune(self, now: float, txn: AdapterTxn) -> None:
        for key, raw in list(txn.scan("entry")):
            _, _, timestamp, _, _, _ = cbor.decode(raw)
            if now > timestamp // 10**9 + self.window:
                txn.delete("entry", key)
        for key, raw in list(txn.scan("seq")):
            if now > cbor.decode(raw)[1]:
                txn.delete("seq", key)

    def find_relay(self, view: StoreView, target: str, now: float, own_servers: tuple[str, ...] = ()) -> Entry | None:
        """docs/topics-design.md 6.4 over the held state."""
        return find_relay(HeldEntries(view, self.window), target, now, own_servers)  # type: ignore[arg-type]
