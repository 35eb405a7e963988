"""The pulling peer's hold after an answer of known ids (docs/protocol/node-to-node.md 9.9).

A real pulling peer, run in its task (in-memory channels) and from its mux reader (two real
muxes), against a scripted serving side that answers each request as the test says and notes
when every request arrived, on trio's virtual clock. After a blocking request's answer that
announced only ids the node holds, the next blocking request comes ``hold_after_known`` seconds
later (in the mux reader, at the next point of a 10 ms grid at or after that: here, exactly then);
after an answer that brought something to fetch, the requests follow at once; with no
hold, at once in both cases (the reference's behaviour). Answers of known ids in a row double
the hold each time, up to ``hold_after_known_max``; one with something to fetch starts it again.
A hold that ends as its connection's cancellation begins sends nothing.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from dmq.diffusion.sig_submission import PullingPeer
from dmq.diffusion.sig_submission.pulling import HOLD_GRID
from dmq.timer_grid import on_grid
from miniprotocols.framework import Alarm, Driver

from tests.miniprotocols.sig_submission.conftest import channels  # noqa: F401  (a fixture)
from tests.miniprotocols.sig_submission.helpers import RecordingSink, make_message, message_id, mux_channel_pair

HOLD = 0.04


class ScriptedServer:
    """The serving side, request by request: each request's arrival time is noted."""

    def __init__(self, dialect, channel) -> None:
        self.dialect = dialect
        self.driver = Driver(channel, dialect.spec, dialect.serving_role)
        self.arrivals: list[tuple[float, object]] = []

    async def start(self) -> None:
        if self.dialect.init is not None:
            await self.driver.send(self.dialect.init())

    async def request(self):
        request = await self.driver.recv()
        self.arrivals.append((trio.current_time(), request))
        return request

    async def announce(self, *messages: bytes) -> float:
        await self.driver.send(self.dialect.reply_ids(tuple((message_id(m), len(m)) for m in messages)))
        return trio.current_time()


@pytest.mark.parametrize("hold", [HOLD, 0.0], ids=["hold", "no-hold"])
async def test_the_next_request_waits_only_after_an_answer_of_known_ids(channels, dialect, nursery, hold,
                                                                       autojump_clock):
    held, fresh, later = make_message(1), make_message(2), make_message(3)
    sink = RecordingSink(holds={message_id(held)})
    pulling_channel, serving_channel = channels(dialect)
    pulling = PullingPeer(dialect, pulling_channel, sink, hold_after_known=hold)
    server = ScriptedServer(dialect, serving_channel)
    nursery.start_soon(pulling.run)
    await server.start()

    first = await server.request()
    assert first.blocking
    await trio.sleep(1)
    answered = await server.announce(held)  # only an id the node holds
    second = await server.request()
    assert second.blocking and second.ack == 1
    assert server.arrivals[-1][0] == pytest.approx(answered + hold)

    await trio.sleep(1)
    answered = await server.announce(fresh)  # something to fetch: bodies asked for at once
    bodies = await server.request()
    assert isinstance(bodies, dialect.request_bodies) and server.arrivals[-1][0] == pytest.approx(answered)
    await trio.sleep(1)
    await server.driver.send(dialect.reply_bodies((fresh,)))
    more = await server.request()  # pipelined behind the bodies' request
    if dialect.reply_no_ids is None:  # V1: a non-blocking request, then at once the blocking one
        assert isinstance(more, dialect.request_ids) and not more.blocking
        await server.driver.send(dialect.reply_ids(()))
        sent = trio.current_time()
        third = await server.request()
        assert third.blocking and server.arrivals[-1][0] == pytest.approx(sent)  # no hold after a useful round
    else:  # V2: the blocking request itself, sent with the body request, acknowledging the fetched id
        assert isinstance(more, dialect.request_ids) and more.blocking and more.ack == 1
    await sink.wait_for(1)
    assert sink.accepted == [fresh]

    await trio.sleep(1)
    answered = await server.announce(later)  # the hold is per answer: a useful one is fetched at once
    assert isinstance(await server.request(), dialect.request_bodies)
    assert server.arrivals[-1][0] == pytest.approx(answered)
    nursery.cancel_scope.cancel()


async def test_a_hold_ends_with_a_stop_in_the_version_where_the_pulling_side_ends(channels, dialect, nursery,
                                                                                autojump_clock):
    held = make_message(1)
    sink = RecordingSink(holds={message_id(held)})
    pulling_channel, serving_channel = channels(dialect)
    pulling = PullingPeer(dialect, pulling_channel, sink, hold_after_known=HOLD)
    server = ScriptedServer(dialect, serving_channel)
    finished = trio.Event()

    async def pull() -> None:
        await pulling.run()
        finished.set()

    nursery.start_soon(pull)
    await server.start()
    await server.request()
    answered = await server.announce(held)
    await trio.testing.wait_all_tasks_blocked()  # the answer is in: the hold began
    pulling.stop()
    if dialect.reply_no_ids is None:  # V1: the pulling side has no message to end with; it returns
        with trio.fail_after(HOLD * 2):
            await finished.wait()
    else:
        done = await server.request()
        assert isinstance(done, dialect.done) and server.arrivals[-1][0] == pytest.approx(answered + HOLD)
        await finished.wait()
    assert sink.outstanding_claims == []


@pytest.mark.parametrize(("longest", "holds"), [(3 * HOLD, [1, 2, 3, 3]), (HOLD / 2, [1, 1, 1, 1])],
                         ids=["growing", "longest-below-first"])
async def test_the_hold_doubles_while_the_peer_stays_behind_and_starts_again_once_it_brings_something(
        channels, dialect, nursery, autojump_clock, longest, holds):
    held = [make_message(n) for n in range(1, 6)]
    fresh, later = make_message(10), make_message(11)
    sink = RecordingSink(holds={message_id(m) for m in held + [later]})
    pulling_channel, serving_channel = channels(dialect)
    pulling = PullingPeer(dialect, pulling_channel, sink, hold_after_known=HOLD, hold_after_known_max=longest)
    server = ScriptedServer(dialect, serving_channel)
    nursery.start_soon(pulling.run)
    await server.start()

    assert (await server.request()).blocking
    waits = []
    for message in held[:4]:  # four answers of known ids in a row
        await trio.sleep(1)
        answered = await server.announce(message)
        assert (await server.request()).blocking
        waits.append(server.arrivals[-1][0] - answered)
    # doubled each time, never past the longest hold, and never below the first
    assert waits == pytest.approx([n * HOLD for n in holds])

    await trio.sleep(1)
    answered = await server.announce(fresh)  # the peer brings something: fetched at once
    assert isinstance(await server.request(), dialect.request_bodies)
    assert server.arrivals[-1][0] == pytest.approx(answered)
    await server.driver.send(dialect.reply_bodies((fresh,)))
    more = await server.request()
    if dialect.reply_no_ids is None:  # V1: a non-blocking request first, then the blocking one at once
        assert not more.blocking
        await server.driver.send(dialect.reply_ids(()))
        assert (await server.request()).blocking
    else:
        assert more.blocking
    await sink.wait_for(1)

    await trio.sleep(1)
    answered = await server.announce(later)  # known again: the hold starts from the first one
    assert (await server.request()).blocking
    assert server.arrivals[-1][0] - answered == pytest.approx(HOLD)
    nursery.cancel_scope.cancel()


async def test_a_hold_that_ends_as_its_connections_cancellation_begins_sends_nothing(dialect, nursery,
                                                                                   autojump_clock):
    """From the mux reader the hold ends in the shared timer's task, which no connection's cancellation
    reaches. Here the cancellation of the pulling peer's task begins in that task, at the hold's end and
    just before the hold's alarm (filed first at the same time): the peer's next request must not go
    out, although its task has not yet run to unwind."""
    held = make_message(1)
    sink = RecordingSink(holds={message_id(held)})
    pulling_channel, serving_channel = mux_channel_pair(dialect, nursery)
    pulling = PullingPeer(dialect, pulling_channel, sink, hold_after_known=HOLD)
    server = ScriptedServer(dialect, serving_channel)
    connection = trio.CancelScope()

    async def pull() -> None:
        with connection:
            await pulling.run()

    nursery.start_soon(pull)
    await server.start()
    assert (await server.request()).blocking
    await trio.sleep(1)
    ending = Alarm(connection.cancel)  # held here: the timer holds its alarms weakly
    ending.set(on_grid(trio.current_time() + HOLD, HOLD_GRID, 0.0))
    await server.announce(held)  # only an id the node holds: the hold begins
    with trio.move_on_after(10 * HOLD):
        await server.request()
    assert connection.cancelled_caught
    assert len(server.arrivals) == 1  # nothing after the first request
    nursery.cancel_scope.cancel()


async def test_a_backlog_of_known_ids_is_walked_without_a_hold(channels, dialect, nursery, autojump_clock):
    # A peer that answers a blocking request with as many ids as it allowed has more ready: after
    # a restart the node holds most of its peer's mempool, and a hold after each such answer walked
    # that backlog for minutes while newer messages waited behind it (docs/reliability.md 6).
    sink = RecordingSink(holds={message_id(make_message(n)) for n in range(1, 200)})
    pulling_channel, serving_channel = channels(dialect)
    pulling = PullingPeer(dialect, pulling_channel, sink, hold_after_known=HOLD, hold_after_known_max=4 * HOLD)
    server = ScriptedServer(dialect, serving_channel)
    nursery.start_soon(pulling.run)
    await server.start()

    request = await server.request()
    assert request.blocking and request.req > 1
    sent = 1
    for _ in range(3):  # full answers of known ids: the next request at once
        answered = await server.announce(*(make_message(n) for n in range(sent, sent + request.req)))
        sent += request.req
        request = await server.request()
        assert request.blocking and server.arrivals[-1][0] == pytest.approx(answered)
    answered = await server.announce(make_message(sent))  # a short one: the peer is up to date, the hold again
    assert (await server.request()).blocking and server.arrivals[-1][0] == pytest.approx(answered + HOLD)
    nursery.cancel_scope.cancel()
