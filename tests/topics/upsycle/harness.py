"""Driving the UPSYCLE adapter in tests: a real LMDB store and the steps 5 to 7 of docs/topics-design.md 2.5.

The store is the framework's (``topics.store``) over a real LMDB environment; the driver decodes, validates and commits
exactly as the ingress pipeline orders it, with DMQ messages built and KES-signed by real
test pools, so every hook runs on the bytes a node would hand it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lmdb

from dmq.clock import ManualClock
from dmq.codec import build_message
from tests.dmq.diffusion.network import pool as test_pool
from topics.adapter import Accepted, Defer, DmqFacts, Origin, Reject, ValidationContext
from topics.store import AdapterDatabases, LmdbTxn, LmdbView
from topics.upsycle import UpsycleAdapter
from topics.upsycle.identity import keypair_from_seed, sign
from topics.upsycle.membership import auth_preimage
from topics.upsycle.timebase import posix_to_minutes
from topics.upsycle.wire import (
    KIND_ADVERTISEMENT,
    KIND_PULL,
    KIND_REISSUE,
    KIND_ROUTED,
    RoutedMessage,
    encode_envelope,
    encode_multicast,
    encode_pull_request,
    encode_reissue,
    encode_unicast,
)

NOW = 1_800_000_000
MAGIC = 424242


class LmdbAdapterStore:
    """An LMDB environment holding the adapter's databases through the framework's store."""

    def __init__(self, path: str | os.PathLike[str], databases: tuple[str, ...]) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)
        self.env = lmdb.open(str(path), map_size=1 << 30, max_dbs=len(databases) + 1)
        self.databases = AdapterDatabases(self.env)
        self.databases.register("upsycle", databases)

    @contextmanager
    def write(self) -> Iterator[LmdbTxn]:
        with self.env.begin(write=True) as txn:
            yield self.databases.writer(txn, "upsycle")

    @contextmanager
    def read(self) -> Iterator[LmdbView]:
        with self.databases.reading("upsycle") as view:
            yield view

    def snapshot(self) -> dict[str, dict[bytes, bytes]]:
        return self.databases.snapshot()["upsycle"]

    def close(self) -> None:
        self.env.close()


# -- keys and messages --------------------------------------------------------------------------

@dataclass(frozen=True)
class Key:
    seed: bytes

    @property
    def public(self) -> bytes:
        return keypair_from_seed(self.seed)[0]

    def sign(self, message: bytes) -> bytes:
        return sign(self.seed, message)

    def auth(self, op: str, group: bytes | None, ts: int, magic: int = MAGIC) -> list:
        return [ts, self.sign(auth_preimage(op, self.public, group, ts, magic))]


def key(n: int) -> Key:
    return Key(bytes([n % 256]) * 31 + bytes([n // 256]))


def exp_minutes(t: int) -> int:
    """An ``exp`` whose POSIX time is at or after ``t`` (rounded up to the minute)."""
    return posix_to_minutes(t + 59)


def multicast(group: Key, body: bytes = b"payload", *, ttl: int = 3600, exp: int | None = None,
              seen: tuple[bytes, ...] = ()) -> RoutedMessage:
    return encode_multicast(group.sign, group.public, ttl, exp_minutes(NOW + 86400) if exp is None else exp,
                            body, seen)


def unicast(src: Key, dst: bytes, body: bytes = b"payload", *, ttl: int = 3600, exp: int | None = None) -> RoutedMessage:
    return encode_unicast(src.sign, src.public, dst, ttl, exp_minutes(NOW + 86400) if exp is None else exp, body)


def routed_body(routed: RoutedMessage) -> bytes:
    return encode_envelope(KIND_ROUTED, routed.raw)


def pull_body(group: bytes, ids: list[bytes]) -> bytes:
    return encode_envelope(KIND_PULL, encode_pull_request(group, ids))


def reissue_body(request_dmq_id: bytes, routed: RoutedMessage) -> bytes:
    return encode_envelope(KIND_REISSUE, encode_reissue(request_dmq_id, routed.raw))


def advert_body(raw: bytes) -> bytes:
    return encode_envelope(KIND_ADVERTISEMENT, raw)


# -- the driver ---------------------------------------------------------------------------------

@dataclass
class Offer:
    """What one offered body came to."""

    verdict: Any
    dmq_id: bytes
    deliveries: list = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return not isinstance(self.verdict, (Reject, Defer))

    @property
    def reason(self) -> str | None:
        return self.verdict.reason.name if isinstance(self.verdict, Reject) else None


class Driver:
    """One node's UPSYCLE adapter with its store, fed DMQ messages from real pools."""

    def __init__(self, path: Path, clock: ManualClock | None = None, **adapter_args: Any) -> None:
        self.path = path
        self.clock = clock or ManualClock(now=NOW)
        self.adapter_args = {"network_magic": MAGIC, **adapter_args}
        self.adapter = UpsycleAdapter(**self.adapter_args)
        self.store = LmdbAdapterStore(path, self.adapter.databases)

    def restart(self) -> None:
        """A new process: new adapter object, the same LMDB directory."""
        self.store.close()
        self.adapter = UpsycleAdapter(**self.adapter_args)
        self.store = LmdbAdapterStore(self.path, self.adapter.databases)

    @property
    def now(self) -> int:
        return int(self.clock.now())

    def offer(self, body: bytes, *, pool: int = 1, origin: Origin = Origin.PEER, expires_at: int | None = None) -> Offer:
        inner = self.adapter.decode(body)
        if isinstance(inner, Reject):
            return Offer(inner, b"")
        now = self.now
        if expires_at is None:
            expires_at = self.adapter.expires_at(inner, now)
        signer = test_pool(pool)
        dmq = build_message(body, 0, expires_at, signer.kes, signer.opcert, signer.cold_vk)
        facts = DmqFacts(dmq.message_id, dmq.pool_id, 0, expires_at, origin)
        with self.store.write() as txn:
            verdict = self.adapter.validate(inner, ValidationContext(self.clock, facts, None, txn, {}, MAGIC))
            if isinstance(verdict, (Reject, Defer)):
                return Offer(verdict, dmq.message_id)
            deliveries = list(self.adapter.on_accept(Accepted(dmq, facts, inner, now), txn))
        return Offer(verdict, dmq.message_id, deliveries)

    def join(self, member: Key, group: Key, local: bool = False) -> Any:
        with self.store.write() as txn:
            return self.adapter.join(txn, member.public, group.public, local,
                                     member.auth("join", group.public, self.now), self.now)

    def leave(self, member: Key, group: Key) -> Any:
        with self.store.write() as txn:
            return self.adapter.leave(txn, member.public, group.public,
                                      member.auth("leave", group.public, self.now), self.now)

    def subscribe(self, member: Key) -> None:
        with self.store.write() as txn:
            self.adapter.membership.ensure_subscriber(txn, member.public)

    def read(self, member: Key, cursor: int | None = None, max_items: int = 1000) -> list:
        with self.store.write() as txn:
            return self.adapter.next_items(txn, member.public, cursor, max_items, self.now)

    def ack(self, member: Key, dseq: int) -> int:
        with self.store.write() as txn:
            return self.adapter.ack(txn, member.public, dseq)

    def prune(self) -> list:
        with self.store.write() as txn:
            return self.adapter.prune_and_notify(self.now, txn)

    def pull(self, member: Key, group: Key, ids: list[bytes]) -> list:
        with self.store.write() as txn:
            return self.adapter.pull(txn, member.public, group.public, ids, self.now)

    def due(self) -> list[bytes]:
        with self.store.read() as view:
            return self.adapter.due_publications(view, self.now)

    def close(self) -> None:
        self.store.close()


def inner_ids(items: list) -> list[bytes]:
    """The inner ids of the message items handed out (kind 0 and 5 items)."""
    return [item.body[1][2] for item in items if item.body[0] == 0 and 2 in item.body[1]]
