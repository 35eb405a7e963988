"""Mithril's de-duplication: Blake2b-512 of the body, remembered for 1800 whole seconds."""

from __future__ import annotations

import hashlib

from dmq.clock import ManualClock
from clients.mithril import Deduplicator
from clients.mithril.deduplicator import body_key


def test_bodies_are_delivered_once_until_the_ttl_has_passed():
    clock = ManualClock(now=1_000.9)
    dedup = Deduplicator(clock)
    assert dedup.fresh([b"a", b"b", b"a"], bytes) == [b"a", b"b"]
    clock.advance(1_000)
    assert dedup.fresh([b"a", b"c"], bytes) == [b"c"]
    # "a" and "b" were seen at second 1000; at second 2800 they are exactly 1800 s old: kept.
    clock.set_wall(2_800.99)
    assert dedup.fresh([b"a"], bytes) == []
    # One second later they are older than the TTL and forgotten; "c" (second 2000) is not.
    clock.set_wall(2_801.0)
    assert dedup.fresh([b"a", b"b", b"c"], bytes) == [b"a", b"b"]
    assert len(dedup) == 3


def test_the_key_is_blake2b_512_of_the_body():
    assert body_key(b"body") == hashlib.blake2b(b"body", digest_size=64).digest()
