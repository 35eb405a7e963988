"""The link follows epoch boundaries as the reference does (docs/protocol/cardano-node-link.md 10.2 step 8): it sleeps
until the end of the ledger's epoch, then asks every second until the ledger shows the new
epoch, so the new epoch's snapshot is in use within seconds of the boundary.

Simulated time (trio's ``MockClock``) drives both the link's waits and its wall clock; the
fake cardano-node is real, on a Unix socket. The clock jumps only after the run loop has
been idle for a moment of real time, so every query round completes before time moves on.
"""

from __future__ import annotations

import trio

from dmq.stake import Eligibility
from dmq.trace import StakeViewUpdated
from dmq.cardano_node import DEFAULT_REFRESH_INTERVAL, EPOCH_WAIT_MAX
from miniprotocols.local_state_query import GET_STAKE_SNAPSHOTS, PoolSnapshot, QueryIfCurrent

from .fake_node import FakeChain
from .helpers import TrioClock
from .test_link import NOW, Harness

#: Real seconds the run loop must idle before the mock clock jumps to the next deadline.
IDLE_BEFORE_JUMP = 0.2
EPOCH_SECONDS = 100.0
#: The ledger enters the new epoch with the first block after the boundary, a little later.
LEDGER_LAG = 2.5


async def sleep_until_wall(clock: TrioClock, wall: float) -> None:
    await trio.sleep_until(wall - clock.wall_at_zero)


class Updates:
    """The wall time of each stake-view update, with its epoch."""

    def __init__(self, harness: Harness) -> None:
        self.seen: list[tuple[float, int]] = []
        clock = harness.clock
        harness.recorder.tracer.add_sink(
            lambda event: self.seen.append((clock.now(), event.epoch)) if isinstance(event, StakeViewUpdated) else None)


async def test_the_new_snapshot_is_in_use_within_seconds_of_the_boundary(tmp_path, mock_clock):
    mock_clock.autojump_threshold = IDLE_BEFORE_JUMP
    clock = TrioClock(NOW - trio.current_time())
    boundary = NOW + 30
    chain = FakeChain.devnet(epoch=7, epoch_ends_at=boundary, epoch_slots=int(EPOCH_SECONDS))
    h = Harness(tmp_path, chain, clock=clock)
    updates = Updates(h)
    status = h.link.status
    leaving, staying = sorted(chain.pools)
    joining = b"\x0c" * 28
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)

        await sleep_until_wall(clock, boundary - 0.5)
        # One round at start-up, then nothing until the epoch ends.
        assert status.rounds == 1 and status.next_epoch_at == boundary
        assert updates.seen == [(NOW, 7)]

        await sleep_until_wall(clock, boundary + LEDGER_LAG)
        # Rounds at the boundary and one and two seconds later still saw epoch 7.
        assert status.rounds == 4 and h.view.epoch == 7
        h.chain.epoch = 8
        h.chain.epoch_ends_at = boundary + EPOCH_SECONDS
        del h.chain.pools[leaving]
        h.chain.pools[joining] = PoolSnapshot(1, 2, 3)

        await sleep_until_wall(clock, boundary + 20)
        nursery.cancel_scope.cancel()
    assert h.fake.violations == []
    [(_, first), (switched_at, second)] = updates.seen
    assert (first, second) == (7, 8)
    # The round after the ledger reached epoch 8 installed its snapshot: at most a second late.
    assert boundary + LEDGER_LAG < switched_at <= boundary + LEDGER_LAG + 1.0
    assert h.view.eligibility(leaving) is Eligibility.UNRECOGNIZED
    assert h.view.eligibility(joining) is Eligibility.ELIGIBLE
    assert h.view.eligibility(staying) is Eligibility.ELIGIBLE
    # Then it sleeps until epoch 8 ends: no round in the 16 s after the switch.
    assert status.rounds == 5 and status.next_epoch_at == boundary + EPOCH_SECONDS
    assert status.to_json()["nextEpochAt"] == boundary + EPOCH_SECONDS
    assert h.fake.count(QueryIfCurrent, GET_STAKE_SNAPSHOTS) == 2


async def test_a_boundary_more_than_a_day_away_is_checked_after_a_day(tmp_path, mock_clock):
    mock_clock.autojump_threshold = IDLE_BEFORE_JUMP
    clock = TrioClock(NOW - trio.current_time())
    chain = FakeChain.devnet(epoch=3, epoch_ends_at=NOW + 3 * EPOCH_WAIT_MAX)
    h = Harness(tmp_path, chain, clock=clock)
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await sleep_until_wall(clock, NOW + 2 * DEFAULT_REFRESH_INTERVAL)
        assert h.link.status.rounds == 1
        await sleep_until_wall(clock, NOW + EPOCH_WAIT_MAX - 1)
        assert h.link.status.rounds == 1
        await sleep_until_wall(clock, NOW + EPOCH_WAIT_MAX + 1)
        assert h.link.status.rounds == 2
        nursery.cancel_scope.cancel()


async def test_an_epoch_end_past_the_horizon_falls_back_to_the_refresh_interval(tmp_path, mock_clock):
    mock_clock.autojump_threshold = IDLE_BEFORE_JUMP
    clock = TrioClock(NOW - trio.current_time())
    h = Harness(tmp_path, FakeChain.devnet(epoch=3), clock=clock)    # no epoch end known
    h.link.refresh_interval = DEFAULT_REFRESH_INTERVAL
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await sleep_until_wall(clock, NOW + DEFAULT_REFRESH_INTERVAL - 1)
        assert h.link.status.rounds == 1 and h.link.status.next_epoch_at is None
        await sleep_until_wall(clock, NOW + DEFAULT_REFRESH_INTERVAL + 1)
        assert h.link.status.rounds == 2
        nursery.cancel_scope.cancel()
