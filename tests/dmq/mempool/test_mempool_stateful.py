"""Model-based test: append, expire, restart and cursors against a plain dictionary model."""

from __future__ import annotations

import shutil
import tempfile

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, precondition, rule

from dmq.clock import ManualClock
from dmq.mempool import DuplicateMessageError, DurableMempool

from .messages import make_message

NOW = 1_800_000_000


class MempoolMachine(RuleBasedStateMachine):
    """The model: ``held`` maps index -> message for everything appended and not yet purged."""

    cursors = Bundle("cursors")

    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="mempool-model-")
        self.clock = ManualClock(now=NOW)
        self.mempool = DurableMempool(self.directory, self.clock)
        self.held: dict[int, object] = {}
        self.next_index = 0
        self.next_seed = 0
        self.generation = 0  # cursors belong to one process lifetime: a restart ends them

    def teardown(self) -> None:
        self.mempool.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def unexpired_after(self, position: int) -> list[int]:
        now = self.clock.now()
        return sorted(i for i, m in self.held.items() if i > position and m.expires_at > now)

    @rule(lifetimes=st.lists(st.integers(min_value=-2, max_value=40), min_size=1, max_size=4))
    def append(self, lifetimes):
        messages = []
        for lifetime in lifetimes:
            messages.append(make_message(self.next_seed, int(self.clock.now()) + lifetime))
            self.next_seed += 1
        indices = self.mempool.append(messages)
        assert indices == list(range(self.next_index, self.next_index + len(messages)))
        self.held.update(zip(indices, messages))
        self.next_index += len(messages)

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def append_duplicate(self, data):
        index = data.draw(st.sampled_from(sorted(self.held)))
        fresh = make_message(self.next_seed, int(self.clock.now()) + 30)
        self.next_seed += 1
        try:
            self.mempool.append([fresh, self.held[index]])
        except DuplicateMessageError as exc:
            assert exc.message_id == self.held[index].message_id
        else:
            raise AssertionError("a held id was appended twice")

    @rule(seconds=st.integers(min_value=0, max_value=15))
    def advance(self, seconds):
        self.clock.advance(seconds)

    @rule()
    def expire(self):
        now = self.clock.now()
        due = sorted((m.expires_at, i) for i, m in self.held.items() if m.expires_at <= now)
        removed = self.mempool.expire()
        assert [(e.expires_at, e.index) for e in removed] == due
        for _, index in due:
            del self.held[index]

    @rule()
    def restart(self):
        self.mempool.close()
        self.mempool = DurableMempool(self.directory, self.clock)
        self.generation += 1
        now = self.clock.now()
        expired = [i for i, m in self.held.items() if m.expires_at <= now]
        assert self.mempool.load_report.expired == len(expired)
        for index in expired:
            del self.held[index]

    @rule(target=cursors, start=st.sampled_from(["beginning", "end"]))
    def new_cursor(self, start):
        cursor = self.mempool.cursor(start)
        assert cursor.position == (-1 if start == "beginning" else self.next_index - 1)
        return self.generation, cursor

    @rule(owned=cursors, limit=st.integers(min_value=1, max_value=5))
    def take(self, owned, limit):
        generation, cursor = owned
        if generation != self.generation:
            return
        expected = self.unexpired_after(cursor.position)
        batch, has_more = cursor.take(limit)
        assert [e.index for e in batch] == expected[:limit]
        assert [e.raw for e in batch] == [self.held[i].raw for i in expected[:limit]]
        assert has_more == (len(expected) > limit)
        if batch:
            assert cursor.position == batch[-1].index

    @rule(owned=consumes(cursors))
    def drop_cursor(self, owned):
        pass

    @invariant()
    def matches_the_model(self):
        assert len(self.mempool) == len(self.held)
        assert self.mempool.bytes_held == sum(m.size for m in self.held.values())
        assert [e.index for e in self.mempool] == sorted(self.held)
        for message in self.held.values():
            assert self.mempool.contains(message.message_id)
        for position in range(-1, self.next_index + 1):  # from every position, the horizon's and past it
            unexpired = self.unexpired_after(position)
            assert [i for i, _, _ in self.mempool.ids_after(position, 10_000)] == unexpired
            for limit in (0, 1, 3):
                assert [i for i, _, _ in self.mempool.ids_after(position, limit)] == unexpired[:limit]
        for message in self.held.values():
            assert self.mempool.get(message.message_id).raw == message.raw
        assert self.mempool.next_index == self.next_index


MempoolMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMempoolModel = MempoolMachine.TestCase


@pytest.mark.slow
class TestMempoolModelLong(MempoolMachine.TestCase):
    settings = settings(max_examples=600, stateful_step_count=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
