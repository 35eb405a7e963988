"""Pulling and serving peers of both versions talking over in-memory channels.

The source is a list-backed mempool and the sink a recorder (the node's side); what is
under test is what crosses the channel: every message arrives exactly once and in
mempool order, the window and request limits of the reference hold on every request,
requests are pipelined, late and expired messages are handled as the reference does,
and the time limits and the V2 "no ids" reply fire when they should.
"""

from __future__ import annotations

import pytest
import trio

from miniprotocols import sig_submission_v1, sig_submission_v2
from miniprotocols.framework import Direction, Driver, ExceededTimeLimit
from miniprotocols.sig_submission import MAX_IDS_PER_REQUEST, MAX_UNACKNOWLEDGED_IDS, Side
from dmq.diffusion.sig_submission import (
    ClaimingSink,
    DisconnectPeer,
    PullingPeer,
    InFlightRegistry,
    ServingPeer,
)
from miniprotocols.sig_submission_v2 import MsgReplyNoSigIds, MsgRequestSigIds
from ouroboros_mux.channel import memory_channel_pair

from .helpers import ListSigSource, RecordingSink, make_message, message_id, mux_channel_pair, run_together


class WireLog:
    """The pulling peer's view of the conversation: every message and the pipelining depth after it."""

    def __init__(self) -> None:
        self.events = []
        self.max_depth = 0
        self.driver: Driver | None = None

    def __call__(self, event) -> None:
        self.events.append((trio.current_time(), event))
        self.max_depth = max(self.max_depth, len(self.driver.outstanding))

    def sent(self, cls=None):
        return [e.message for _, e in self.events if e.direction is Direction.SENT and (cls is None or isinstance(e.message, cls))]

    def received(self, cls=None):
        return [e.message for _, e in self.events
                if e.direction is Direction.RECEIVED and (cls is None or isinstance(e.message, cls))]


def pair(channels, dialect, source, sink, *, serving_options=None, **pulling_options):
    a, b = channels(dialect)
    log = WireLog()
    pulling_driver = Driver(a, dialect.spec, dialect.pulling_role, trace=log)
    log.driver = pulling_driver
    pulling = PullingPeer(dialect, pulling_driver, sink, **pulling_options)
    serving = ServingPeer(dialect, b, source, **(serving_options or {}))
    return pulling, serving, log


def finish(dialect, pulling: PullingPeer, serving: ServingPeer) -> None:
    """End the protocol the way the version allows: V2 pulling peer MsgDone, V1 serving peer MsgDone."""
    if dialect.done_by is Side.PULLING:
        pulling.stop()
    else:
        serving.stop()


def check_window_discipline(log: WireLog, dialect) -> None:
    """Replay the pulling peer's requests the way a reference serving peer checks them."""
    unacked = 0
    pending_replies = []
    for _, event in log.events:
        message = event.message
        if event.direction is Direction.SENT and isinstance(message, dialect.request_ids):
            assert 1 <= message.req <= MAX_IDS_PER_REQUEST
            assert message.ack <= unacked
            unacked -= message.ack
            assert unacked + message.req + sum(pending_replies) <= MAX_UNACKNOWLEDGED_IDS
            assert message.blocking == (unacked == 0 and not pending_replies)
            pending_replies.append(message.req)
        elif event.direction is Direction.RECEIVED and isinstance(message, dialect.reply_ids):
            assert len(message.ids) <= pending_replies.pop(0)
            unacked += len(message.ids)
        elif event.direction is Direction.RECEIVED and dialect.reply_no_ids and isinstance(message, dialect.reply_no_ids):
            pending_replies.pop(0)


async def run_until(dialect, pulling, serving, sink, count):
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serving.run)
        nursery.start_soon(pulling.run)
        await sink.wait_for(count)
        finish(dialect, pulling, serving)


async def test_all_messages_arrive_once_in_order_through_the_window(channels, dialect, autojump_clock):
    messages = [make_message(n) for n in range(300)]
    source, sink = ListSigSource(messages), RecordingSink()
    pulling, serving, log = pair(channels, dialect, source, sink)
    await run_until(dialect, pulling, serving, sink, len(messages))
    assert sink.accepted == messages
    assert sink.outstanding_claims == [] and sorted(sink.released) == sorted(map(message_id, messages))
    assert pulling.driver.done and serving.driver.done
    check_window_discipline(log, dialect)
    assert log.max_depth >= 2  # body and id requests were pipelined
    assert max(len(r.ids) for r in log.sent(dialect.request_bodies)) == MAX_IDS_PER_REQUEST
    # Bodies were requested in announcement order, each exactly once.
    requested = [i for r in log.sent(dialect.request_bodies) for i in r.ids]
    assert requested == [message_id(m) for m in messages]


async def test_messages_added_while_the_protocol_runs(channels, dialect, autojump_clock):
    first = [make_message(n) for n in range(5)]
    later = [make_message(n) for n in range(5, 205)]
    source, sink = ListSigSource(first), RecordingSink()
    pulling, serving, log = pair(channels, dialect, source, sink)

    async def grow():
        for start in range(0, len(later), 7):
            await trio.sleep(1.5)
            for raw in later[start:start + 7]:
                source.append(raw)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serving.run)
        nursery.start_soon(pulling.run)
        nursery.start_soon(grow)
        await sink.wait_for(len(first) + len(later))
        finish(dialect, pulling, serving)
    assert sink.accepted == first + later
    check_window_discipline(log, dialect)
    assert len(log.sent(dialect.request_ids)) > 20


async def test_expired_messages_are_never_announced_or_are_omitted(channels, dialect, autojump_clock):
    messages = [make_message(n) for n in range(60)]
    source, sink = ListSigSource(messages), RecordingSink()
    never = {message_id(messages[i]) for i in (0, 7, 59)}
    source.expire(*never)
    late = {message_id(messages[i]) for i in (3, 33, 40)}
    source.expire_when_announced.update(late)
    pulling, serving, log = pair(channels, dialect, source, sink)
    expected = [m for m in messages if message_id(m) not in never | late]
    await run_until(dialect, pulling, serving, sink, len(expected))
    assert sink.accepted == expected
    announced = {i for reply in log.received(dialect.reply_ids) for i, _ in reply.ids}
    assert announced.isdisjoint(never) and late <= announced
    assert pulling.omitted == len(late) and late <= set(sink.released)
    assert sink.outstanding_claims == []


async def test_ids_the_node_holds_are_acknowledged_without_fetching(channels, dialect, autojump_clock):
    messages = [make_message(n) for n in range(40)]
    held = {message_id(m) for m in messages[::3]}
    source, sink = ListSigSource(messages), RecordingSink(holds=held)
    pulling, serving, log = pair(channels, dialect, source, sink)
    expected = [m for m in messages if message_id(m) not in held]
    await run_until(dialect, pulling, serving, sink, len(expected))
    assert sink.accepted == expected
    requested = {i for r in log.sent(dialect.request_bodies) for i in r.ids}
    assert requested.isdisjoint(held)
    check_window_discipline(log, dialect)


async def test_sizes_are_announced_exactly(channels, dialect, autojump_clock):
    messages = [make_message(n, body_size=90 + 17 * n) for n in range(20)]
    source, sink = ListSigSource(messages), RecordingSink()
    pulling, serving, log = pair(channels, dialect, source, sink)
    await run_until(dialect, pulling, serving, sink, len(messages))
    announced = [pair for reply in log.received(dialect.reply_ids) for pair in reply.ids]
    assert announced == [(message_id(m), len(m)) for m in messages]


async def test_v2_blocking_request_gets_no_ids_after_17_seconds(channels, autojump_clock):
    v2 = sig_submission_v2.DIALECT
    source, sink = ListSigSource(), RecordingSink()
    pulling, serving, log = pair(channels, v2, source, sink)
    late = make_message(1)

    async def add_later():
        await trio.sleep(40)
        source.append(late)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serving.run)
        nursery.start_soon(pulling.run)
        nursery.start_soon(add_later)
        await sink.wait_for(1)
        pulling.stop()
    times = [t for t, e in log.events if isinstance(e.message, MsgReplyNoSigIds)]
    assert times[:2] == [17.0, 34.0]
    requests = [(t, e.message) for t, e in log.events if isinstance(e.message, MsgRequestSigIds)]
    assert requests[:3] == [(0.0, MsgRequestSigIds(True, 0, 33)), (17.0, MsgRequestSigIds(True, 0, 33)),
                            (34.0, MsgRequestSigIds(True, 0, 33))]
    assert sink.accepted == [late]


async def test_v1_blocking_request_waits_as_long_as_it_takes(channels, autojump_clock):
    v1 = sig_submission_v1.DIALECT
    source, sink = ListSigSource(), RecordingSink()
    pulling, serving, log = pair(channels, v1, source, sink)
    late = make_message(1)

    async def add_later():
        await trio.sleep(3600)
        source.append(late)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serving.run)
        nursery.start_soon(pulling.run)
        nursery.start_soon(add_later)
        await sink.wait_for(1)
        serving.stop()
    assert sink.accepted == [late]
    first_reply = next(t for t, e in log.events if isinstance(e.message, v1.reply_ids))
    assert first_reply == 3600.0
    assert isinstance(log.received()[-1], v1.done)


async def test_v2_serving_peer_too_slow_for_the_20_second_limit(channels, autojump_clock):
    v2 = sig_submission_v2.DIALECT
    source, sink = ListSigSource(), RecordingSink()
    pulling, serving, log = pair(channels, v2, source, sink, serving_options={"blocking_timeout": 25})
    with pytest.raises(ExceededTimeLimit) as info:
        await run_together(serving.run, pulling.run)
    assert info.value.limit == 20.0 and trio.current_time() == 20.0


async def test_a_disconnect_verdict_ends_the_pulling_peer_and_releases_its_claims(channels, dialect, autojump_clock):
    messages = [make_message(n) for n in range(100)]
    source = ListSigSource(messages)
    sink = RecordingSink(disconnect_on={message_id(messages[40])})
    pulling, serving, _ = pair(channels, dialect, source, sink)
    with pytest.raises(DisconnectPeer, match="InvalidSigId"):
        await run_together(serving.run, pulling.run)
    assert messages[40] in sink.accepted
    assert sink.outstanding_claims == []


async def test_a_message_fetched_from_one_peer_is_not_fetched_from_another(channels, dialect, autojump_clock):
    messages = [make_message(n) for n in range(120)]
    registry = InFlightRegistry()
    mempool: list[bytes] = []
    held: set[bytes] = set()
    done = trio.Event()

    async def accept(batch):
        await trio.sleep(0.01)
        for raw in batch:
            assert message_id(raw) not in held
            held.add(message_id(raw))
            mempool.append(raw)
        if len(mempool) == len(messages):
            done.set()

    peers = []
    for name in ("a", "b", "c"):
        sink = ClaimingSink(registry, name, holds=held.__contains__, accept=accept)
        a, b = channels(dialect)
        peers.append((PullingPeer(dialect, a, sink), ServingPeer(dialect, b, ListSigSource(messages))))
    async with trio.open_nursery() as nursery:
        for pulling, serving in peers:
            nursery.start_soon(serving.run)
            nursery.start_soon(pulling.run)
        await done.wait()
        for pulling, serving in peers:
            finish(dialect, pulling, serving)
    assert sorted(mempool) == sorted(messages)
    assert len(registry) == 0
    assert sum(pulling.accepted for pulling, _ in peers) == len(messages)


async def test_a_narrow_window_is_respected_by_both_sides(channels, dialect, autojump_clock):
    messages = [make_message(n) for n in range(200)]
    source, sink = ListSigSource(messages), RecordingSink()
    pulling, serving, log = pair(channels, dialect, source, sink, serving_options={"window": 40},
                                 window=40, max_ids_per_request=30)
    await run_until(dialect, pulling, serving, sink, len(messages))
    assert sink.accepted == messages
    requests = log.sent(dialect.request_ids)
    assert max(r.req for r in requests) == 30
    if dialect.reply_no_ids is None:
        # V1: non-blocking requests behind the bodies ask for the window's rest. In V2 the request
        # behind the last bodies is the blocking one, which acknowledges them all (30 again).
        assert any(r.req == 10 for r in requests)


@pytest.mark.parametrize("stall", ["bodies", "ids"])
async def test_replies_owed_within_10_seconds(channels, dialect, stall, autojump_clock):
    a, b = channels(dialect)
    sink = RecordingSink()
    messages = [make_message(n) for n in range(3)]
    # Room for one body at a time: more remain to fetch behind the first, so the request for ids
    # behind its body request is the non-blocking one (in V2 too), whose reply is owed in 10 s.
    pulling = PullingPeer(dialect, a, sink, max_bytes_in_flight=len(messages[0]))
    scripted = Driver(b, dialect.spec, dialect.serving_role)

    async def serving():
        if dialect.init is not None:
            await scripted.send(dialect.init())
        await scripted.recv()
        await scripted.send(dialect.reply_ids(tuple((message_id(m), len(m)) for m in messages)))
        await scripted.recv()  # bodies
        if stall == "ids":
            await scripted.send(dialect.reply_bodies(tuple(messages[:1])))
            await scripted.recv()  # the non-blocking request for ids
        await trio.sleep_forever()

    with pytest.raises(ExceededTimeLimit) as info:
        await run_together(serving, pulling.run)
    assert info.value.limit == 10.0 and trio.current_time() == 10.0
    bodies_state, ids_state = {1: ("TXS", "TX_IDS_NON_BLOCKING"), 2: ("SIGS", "SIG_IDS_NON_BLOCKING")}[dialect.version]
    expected = dialect.spec.initial.__class__[bodies_state if stall == "bodies" else ids_state]
    assert info.value.state is expected
    assert sink.outstanding_claims == []
    assert sink.accepted == (messages[:1] if stall == "ids" else [])


async def test_the_pulling_peer_asks_the_same_from_its_mux_reader_as_from_its_task(dialect, nursery, autojump_clock):
    """Byte for byte the same requests in the same order, whether the loop runs in the task (in-memory
    channels) or in the mux reader: held, expired and late ids, a narrow window, bodies pipelined."""
    messages = [make_message(n, body_size=90 + 7 * n) for n in range(150)]
    held = {message_id(m) for m in messages[::4]}
    expired = {message_id(messages[i]) for i in (1, 50, 149)}
    late = {message_id(messages[i]) for i in (2, 66)}
    runs = []
    sinks = []
    ways = ((lambda d: memory_channel_pair(11), True), (lambda d: mux_channel_pair(d, nursery), False),
            (lambda d: mux_channel_pair(d, nursery), True))
    for channels, now in ways:
        source, sink = ListSigSource(messages), RecordingSink(holds=held, now=now)
        sinks.append(sink)
        source.expire(*expired)
        source.expire_when_announced.update(late)
        pulling, serving, log = pair(channels, dialect, source, sink, serving_options={"window": 60},
                                     window=60, max_ids_per_request=20)
        expected = [m for m in messages if message_id(m) not in held | expired | late]
        async with trio.open_nursery() as peers:
            peers.start_soon(serving.run)
            peers.start_soon(pulling.run)
            await sink.wait_for(len(expected))
            await trio.sleep(5)  # until the pulling peer waits on its last blocking request (the clock jumps)
            runs.append([dialect.spec.codec.encode(m) for m in log.sent()])
            finish(dialect, pulling, serving)
        assert sink.accepted == expected and sink.outstanding_claims == []
        check_window_discipline(log, dialect)
    in_task, from_reader, accepted_in_reader = runs
    assert from_reader == in_task and accepted_in_reader == in_task and len(in_task) >= 15
    # In the task every batch is awaited (even by a sink that could take it at once); from the
    # reader a sink that takes batches at once is never awaited, and one that cannot always is.
    assert [(s.awaited > 0, s.taken_now > 0) for s in sinks] == [(True, False), (True, False), (False, True)]
    assert sinks[2].taken_now == sinks[1].awaited


async def test_a_disconnect_verdict_taken_in_the_reader_ends_the_pulling_peer(dialect, nursery, autojump_clock):
    """``accept_now`` raising DisconnectPeer in the mux reader ends the run as ``accept`` raising it in the task."""
    messages = [make_message(n) for n in range(100)]
    sink = RecordingSink(disconnect_on={message_id(messages[40])}, now=True)
    pulling, serving, _ = pair(lambda d: mux_channel_pair(d, nursery), dialect, ListSigSource(messages), sink)
    with pytest.raises(DisconnectPeer, match="InvalidSigId"):
        await run_together(serving.run, pulling.run)
    assert messages[40] in sink.accepted and sink.awaited == 0
    assert sink.outstanding_claims == []


def test_which_instance_does_which_job():
    assert sig_submission_v2.DIALECT.side_of(initiator=True) is Side.PULLING
    assert sig_submission_v2.DIALECT.side_of(initiator=False) is Side.SERVING
    assert sig_submission_v1.DIALECT.side_of(initiator=True) is Side.SERVING
    assert sig_submission_v1.DIALECT.side_of(initiator=False) is Side.PULLING


async def test_a_v1_stop_wins_over_available_ids():
    v1 = sig_submission_v1.DIALECT
    a, b = memory_channel_pair(11)
    scripted = Driver(a, v1.spec, v1.pulling_role)
    serving = ServingPeer(v1, b, ListSigSource([make_message(1)]))
    with pytest.raises(RuntimeError, match="only the pulling side"):
        ServingPeer(sig_submission_v2.DIALECT, b, ListSigSource()).stop()

    async def pulling():
        assert await scripted.recv() == v1.init()
        serving.stop()
        await scripted.send(v1.request_ids(True, 0, 5))
        assert await scripted.recv() == v1.done()

    await run_together(serving.run, pulling)
    assert serving.driver.done and scripted.done
