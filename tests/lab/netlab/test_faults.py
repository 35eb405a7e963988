"""Recovery after a fault is judged by what every aggregator holds: the wait ends when the last
aggregator gets the last message, and not before."""

from __future__ import annotations

import trio
import trio.testing

from dmq.clock import ManualClock
from lab.devnet.aggregator import Aggregator
from lab.netlab.faults import await_delivered


def _aggregators(count: int) -> list[Aggregator]:
    return [Aggregator(i, f"/nonexistent/node-{i}.socket", 42, ManualClock(0.0)) for i in range(count)]


def test_delivery_wait_ends_when_the_last_aggregator_holds_the_last_message():
    aggregators = _aggregators(3)
    wanted = [bytes([k]) * 32 for k in range(50)]
    for aggregator in aggregators:
        aggregator.arrivals.update({message_id: 0.0 for message_id in wanted[:40]})
    done_at: list[float] = []

    async def main() -> None:
        async def wait() -> None:
            await await_delivered(aggregators, wanted)
            done_at.append(trio.current_time())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            # The rest arrives aggregator by aggregator, one message to the second held back until 5 s.
            for second, aggregator in enumerate(aggregators, start=1):
                await trio.sleep_until(second)
                aggregator.arrivals.update({message_id: float(second) for message_id in wanted[40:]
                                            if (aggregator, message_id) != (aggregators[1], wanted[45])})
            await trio.sleep_until(5.0)
            assert not done_at  # one message is still missing at one aggregator
            aggregators[1].arrivals[wanted[45]] = 5.0

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert len(done_at) == 1 and 5.0 <= done_at[0] <= 5.2


def test_delivery_wait_returns_at_once_when_nothing_is_missing():
    aggregators = _aggregators(2)

    async def main() -> float:
        await await_delivered(aggregators, [])
        return trio.current_time()

    assert trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0)) == 0.0
