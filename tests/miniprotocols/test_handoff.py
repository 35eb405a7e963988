"""``protocol_engine.Handoff``: the task's sleep, its deadlines kept by the run's timer instead of a scope per wait.

Run on trio's MockClock (autojump), so the times a wait returns at are exact: a deadline that passes
wakes the task at that deadline, not earlier (a deadline moved later while the task sleeps) and not
later (a deadline moved sooner); what is handed over wakes it at once; cancellation still reaches it.
The laziness is counted: a deadline later than the one filed is only recorded, so a deadline moving
on every round files about one timer entry per time limit, not one per round.
"""

from __future__ import annotations

import math

import trio
import trio.testing

from protocol_engine import Alarm, Handoff
from protocol_engine import handoff as handoff_module


class Channel:
    """What a handoff needs of a channel: ``on_bytes``, whose consumer a test calls as the reader would."""

    def __init__(self) -> None:
        self.consume = None

    def on_bytes(self, consume) -> None:
        self.consume = consume

    def arrive(self) -> None:
        if self.consume is not None:
            self.consume()


def _handoff():
    channel = Channel()
    box = {}

    def consume():
        if box.get("pending") is not None:
            handoff.hand_over("message", box.pop("pending"))
            assert handoff.handed  # what the reader asks before it does anything more

    handoff = Handoff(channel, consume)
    return handoff, channel, box


def run(test):
    clock = trio.testing.MockClock(autojump_threshold=0)
    trio.run(test, clock=clock)


def test_a_passed_deadline_wakes_the_task_at_that_deadline():
    async def main():
        handoff, _, _ = _handoff()
        start = trio.current_time()
        handoff.wake_by(start + 10)
        assert await handoff.wait() is None
        assert trio.current_time() == start + 10

    run(main)


def test_wake_after_is_wake_by_that_many_seconds_from_now_on_trios_clock():
    async def main():
        handoff, _, _ = _handoff()
        await trio.sleep(3)
        start = trio.current_time()
        handoff.wake_after(10)
        assert handoff.deadline == start + 10
        assert await handoff.wait() is None
        assert trio.current_time() == start + 10

    run(main)


def test_what_is_handed_over_wakes_the_task_at_once_and_the_deadline_then_does_nothing():
    async def main():
        handoff, channel, box = _handoff()
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            async def deliver():
                await trio.sleep(3)
                box["pending"] = "m1"
                channel.arrive()

            nursery.start_soon(deliver)
            handoff.wake_by(start + 10)
            assert not handoff.handed
            assert await handoff.wait() == ("message", "m1")
            assert not handoff.handed  # taken by the task
            assert trio.current_time() == start + 3
        handoff.deadline = math.inf
        # The entry filed for start + 10 comes due while nobody sleeps: nothing happens.
        await trio.sleep(20)
        box["pending"] = "m2"
        assert await handoff.wait() == ("message", "m2")

    run(main)


def test_a_deadline_moved_later_while_sleeping_is_kept_and_one_moved_sooner_is_kept_too():
    async def main():
        handoff, _, _ = _handoff()
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            async def later():
                await trio.sleep(5)
                handoff.wake_by(start + 30)  # lazily: the entry at 10 comes due, finds 30, files it

            nursery.start_soon(later)
            handoff.wake_by(start + 10)
            assert await handoff.wait() is None
            assert trio.current_time() == start + 30

        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            async def sooner():
                await trio.sleep(1)
                handoff.wake_by(start + 4)

            nursery.start_soon(sooner)
            handoff.wake_by(start + 50)
            assert await handoff.wait() is None
            assert trio.current_time() == start + 4

    run(main)


def test_no_deadline_sleeps_until_handed_and_cancellation_reaches_the_sleeping_task():
    async def main():
        handoff, channel, box = _handoff()
        with trio.move_on_after(100) as scope:
            await handoff.wait()
        assert scope.cancelled_caught
        assert channel.consume is None  # the reader no longer runs the consumer
        box["pending"] = "m"
        assert await handoff.wait() == ("message", "m")

    run(main)


def test_a_deadline_moving_every_round_files_about_one_entry_per_time_limit(monkeypatch):
    filed = []
    real_file = handoff_module._Timer.file

    def counted(self, handoff, when):
        filed.append(when)
        real_file(self, handoff, when)

    monkeypatch.setattr(handoff_module._Timer, "file", counted)

    async def main():
        handoff, channel, box = _handoff()
        rounds = 0
        async with trio.open_nursery() as nursery:
            async def peer():
                nonlocal rounds
                for n in range(200):  # a round every 0.1 s for 20 s, each with a 10 s limit
                    await trio.sleep(0.1)
                    box["pending"] = n
                    channel.arrive()

            nursery.start_soon(peer)
            while rounds < 200:
                handoff.wake_by(trio.current_time() + 10)
                handed = await handoff.wait()
                assert handed == ("message", rounds)
                rounds += 1

    run(main)
    assert 1 <= len(filed) <= 4  # 200 waits


def test_a_limit_cleared_by_a_reply_and_set_again_costs_the_timer_no_wake_that_finds_nothing_due(monkeypatch):
    """An idle V2 connection: each blocking request's 20 s limit is cleared by the reply that comes at 17 s
    and set again by the next request. The entry filed for 20 s would come due 3 s later and find the
    new limit not passed; it is replaced at once instead, so the timer only wakes when a limit passes."""
    due = []
    real_due = Handoff._due

    def counted(self, timer, now):
        due.append((now, self.deadline))
        real_due(self, timer, now)

    monkeypatch.setattr(Handoff, "_due", counted)

    async def main():
        handoff, channel, box = _handoff()
        async with trio.open_nursery() as nursery:
            async def peer():
                for n in range(5):
                    await trio.sleep(17)
                    box["pending"] = n
                    channel.arrive()

            nursery.start_soon(peer)
            handoff.wake_after(20)
            for n in range(5):
                assert await handoff.wait() == ("message", n)
                handoff.deadline = math.inf  # the reply arrived in time
                handoff.wake_after(20)  # the next request's limit
            start = trio.current_time()
            assert await handoff.wait() is None  # no reply this time: woken when the limit passes
            assert trio.current_time() == start + 20

    run(main)
    assert len(due) == 1 and due[0][1] <= due[0][0]  # the one wake found its limit passed


def test_an_alarm_calls_back_at_its_last_time_set_never_once_cancelled_and_alarms_due_together_take_one_wake(
        monkeypatch):
    wakes = []
    real_first_live = handoff_module._Timer._first_live

    def counted(self):  # called once after every wake of the timer (and when an earlier entry is filed)
        wakes.append(trio.current_time())
        return real_first_live(self)

    monkeypatch.setattr(handoff_module._Timer, "_first_live", counted)

    async def main():
        calls = []
        start = trio.current_time()
        alarms = [Alarm(lambda n=n: calls.append((n, trio.current_time() - start))) for n in range(4)]
        alarms[0].set(start + 5)
        alarms[1].set(start + 5)  # due with the first
        alarms[2].set(start + 3)
        alarms[2].set(start + 7)  # set again: only the later time calls
        alarms[3].set(start + 6)
        alarms[3].cancel()  # never calls
        await trio.sleep(10)
        assert calls == [(0, 5), (1, 5), (2, 7)]
        wakes.clear()
        for alarm in alarms[:3]:
            alarm.set(start + 12)
        await trio.sleep(5)
        assert calls[3:] == [(0, 12), (1, 12), (2, 12)]
        return [w - start for w in wakes]

    clock = trio.testing.MockClock(autojump_threshold=0)
    after_second_set = trio.run(main, clock=clock)
    assert after_second_set.count(12) == 1  # three alarms due at one time: one wake of the timer
