"""A topic node's housekeeping wakes only for work: due publications (topics/service.py
``_publish_due_forever``) asked on the ticks of the timer grid while an adapter has something scheduled, not
at all while none has; an adapter's prune (topics/ingress.py) skipped until it says one is due.

On trio's autojump clock, so an hour of waiting takes no real time; the adapter is the
framework's test adapter with a schedule of its own, the rest is the real instance (LMDB,
validator, publication queue, subscription hub).
"""

from __future__ import annotations

import pytest
import trio

from dmq.timer_grid import on_grid

from .harness import EXP_OFFSET, NOW, instance, sign
from .kv_adapter import KvAdapter, kv_body
from .service_harness import served


def on_the_grid(t: float) -> bool:
    """Whether trio time ``t`` is a point of the node's timer grid (dmq/timer_grid.py)."""
    return on_grid(t) == pytest.approx(t)


class ScheduledKv(KvAdapter):
    """Schedules one publication of its own for every record accepted with the value ``b"ask"``."""

    def __init__(self) -> None:
        super().__init__()
        self.scheduled: list[bytes] = []
        self.asked: list[float] = []
        self.handed: list[bytes] = []

    def on_accept(self, message, txn):
        if message.inner["value"] == b"ask":
            self.scheduled.append(kv_body(b"answer-" + message.inner["key"], 1, b"answer"))
        return super().on_accept(message, txn)

    def due_publications(self, view, now):
        self.asked.append(trio.current_time())
        out, self.scheduled = self.scheduled, []
        self.handed.extend(out)
        return out

    def publications_scheduled(self) -> bool:
        return bool(self.scheduled)

    def next_prune(self, view):
        return None  # nothing that expires: no prune, no thread hop, nothing for autojump to race


class PolledKv(ScheduledKv):
    """The same without saying what it has scheduled: asked every tick."""

    publications_scheduled = None  # type: ignore[assignment]


async def test_with_nothing_scheduled_the_adapters_are_not_asked(tmp_path, autojump_clock):
    adapter = ScheduledKv()
    async with served(tmp_path, adapter=adapter) as inst:
        await trio.sleep(3600)
        assert adapter.asked == []
        assert inst.service.due_waits == 1


async def test_a_commit_that_schedules_a_publication_has_it_published_at_the_next_tick(
        tmp_path, autojump_clock):
    adapter = ScheduledKv()
    async with served(tmp_path, adapter=adapter) as inst:
        await trio.sleep(100.25)
        assert await inst.ingress.submit_local(sign(kv_body(b"q", 1, b"ask"), int(NOW) + EXP_OFFSET).raw) is None
        # The node's own answer, published. (No deadline on the autojump clock: it jumps while
        # the commits run in their threads.)
        for _ in range(100_000):
            if len(inst.mempool) >= 2:
                break
            await trio.sleep(0.01)
        assert adapter.handed == [kv_body(b"answer-q", 1, b"answer")]
        assert on_the_grid(adapter.asked[0])
        # Nothing scheduled any more: an hour with at most the pass after the answer's own commit.
        asked = len(adapter.asked)
        await trio.sleep(3600)
        assert len(adapter.asked) <= asked + 1


async def test_an_adapter_that_does_not_say_is_asked_every_tick(tmp_path, autojump_clock):
    adapter = PolledKv()
    async with served(tmp_path, adapter=adapter) as inst:
        await trio.sleep(20.5)
        first = adapter.asked[0]
        assert on_the_grid(first) and len(adapter.asked) >= 15
        assert adapter.asked == pytest.approx([first + i for i in range(len(adapter.asked))])  # each second
        assert inst.service.due_waits == 0


class PruneCountingKv(KvAdapter):
    """Says when it next has something to prune; counts its prunes."""

    def __init__(self) -> None:
        super().__init__()
        self.prune_at: float | None = None
        self.prunes = 0

    def next_prune(self, view):
        return self.prune_at

    def prune(self, now, txn):
        self.prunes += 1


async def test_a_prune_is_skipped_until_the_adapter_says_it_is_due(tmp_path):
    adapter = PruneCountingKv()
    async with instance(tmp_path / "db", adapter=adapter) as inst:
        start = adapter.prunes  # whatever opening the instance did
        changed = inst.hub.next_change()
        await inst.ingress.prune()
        assert adapter.prunes == start and not changed.is_set()  # nothing held: no transaction, no wake
        adapter.prune_at = inst.clock.now() + 10
        await inst.ingress.prune()
        assert adapter.prunes == start
        inst.clock.advance(10)
        await inst.ingress.prune()
        assert adapter.prunes == start + 1 and changed.is_set()
