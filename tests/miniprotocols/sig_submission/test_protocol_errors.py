"""Every ``ProtocolError…`` of both versions, raised by the real peers, as the reference raises it.

Serving errors: a scripted pulling peer (a bare driver) sends the offending request to the
real :class:`ServingPeer`. Pulling errors: a scripted serving peer sends the offending
reply to the real :class:`PullingPeer`. Each case checks the error class, the reference
constructor name of the negotiated version, and that the pulling peer gave back every claim.
"""

from __future__ import annotations

import collections

import cbor2
import pytest
import trio

from miniprotocols.framework import DecoderFailure, Driver
from miniprotocols.sig_submission import (
    AckedTooManyIds,
    BodyNotRequested,
    IdsNotRequested,
    RequestBlocking,
    RequestedNothing,
    RequestedTooManyIds,
    RequestedUnavailable,
    RequestNonBlocking,
    INGRESS_LIMIT,
    PROTOCOL_NUM,
    Side,
    SizeError,
)
from dmq.diffusion.sig_submission import PullingPeer, ServingPeer
from ouroboros_mux import Bearer, Mode, Mux
from ouroboros_mux import Provenance
from tests.ouroboros_mux.streams import tcp_stream_pair
from ouroboros_mux.channel import memory_channel_pair

from .helpers import ListSigSource, RecordingSink, make_message, message_id, mux_channel_pair, run_together

MESSAGES = [make_message(n) for n in range(40)]
IDS = [message_id(m) for m in MESSAGES]


# -- serving: the pulling peer asks for what it may not -------------------------------------

async def ids(driver, dialect, blocking, ack, req):
    await driver.send(dialect.request_ids(blocking, ack, req))
    return (await driver.recv()).ids


async def ack_too_many(d, drv):
    await drv.send(d.request_ids(True, 1, 5))


async def ack_too_many_later(d, drv):
    await ids(drv, d, True, 0, 3)
    await drv.send(d.request_ids(False, 4, 1))


async def too_many_at_once(d, drv):
    await drv.send(d.request_ids(True, 0, 133))


async def too_many_outstanding(d, drv):
    await ids(drv, d, True, 0, 33)
    await drv.send(d.request_ids(False, 0, 100))


async def blocking_nothing(d, drv):
    await drv.send(d.request_ids(True, 0, 0))


async def non_blocking_nothing(d, drv):
    await ids(drv, d, True, 0, 3)
    await drv.send(d.request_ids(False, 0, 0))


async def blocking_with_unacked(d, drv):
    await ids(drv, d, True, 0, 3)
    await drv.send(d.request_ids(True, 1, 5))


async def non_blocking_at_start(d, drv):
    await drv.send(d.request_ids(False, 0, 5))


async def non_blocking_after_acking_all(d, drv):
    await ids(drv, d, True, 0, 3)
    await drv.send(d.request_ids(False, 3, 5))


async def unknown_body(d, drv):
    await drv.send(d.request_bodies((bytes(32),)))


async def acknowledged_body(d, drv):
    await ids(drv, d, True, 0, 3)
    await ids(drv, d, False, 1, 1)
    await drv.send(d.request_bodies((IDS[1], IDS[0])))


SERVING_CASES = [
    (ack_too_many, AckedTooManyIds, {1: "ProtocolErrorAckedTooManyTxids", 2: "ProtocolErrorAckedTooManySigIds"}),
    (ack_too_many_later, AckedTooManyIds, {1: "ProtocolErrorAckedTooManyTxids", 2: "ProtocolErrorAckedTooManySigIds"}),
    (too_many_at_once, RequestedTooManyIds,
     {1: "ProtocolErrorRequestedTooManyTxids", 2: "ProtocolErrorRequestedTooManySigIds"}),
    (too_many_outstanding, RequestedTooManyIds,
     {1: "ProtocolErrorRequestedTooManyTxids", 2: "ProtocolErrorRequestedTooManySigIds"}),
    (blocking_nothing, RequestedNothing, {1: "ProtocolErrorRequestedNothing", 2: "ProtocolErrorRequestedNothing"}),
    (non_blocking_nothing, RequestedNothing, {1: "ProtocolErrorRequestedNothing", 2: "ProtocolErrorRequestedNothing"}),
    (blocking_with_unacked, RequestBlocking, {1: "ProtocolErrorRequestBlocking", 2: "ProtocolErrorRequestBlocking"}),
    (non_blocking_at_start, RequestNonBlocking,
     {1: "ProtocolErrorRequestNonBlocking", 2: "ProtocolErrorRequestNonBlocking"}),
    (non_blocking_after_acking_all, RequestNonBlocking,
     {1: "ProtocolErrorRequestNonBlocking", 2: "ProtocolErrorRequestNonBlocking"}),
    (unknown_body, RequestedUnavailable,
     {1: "ProtocolErrorRequestedUnavailableTx", 2: "ProtocolErrorRequestedUnavailableSig"}),
    (acknowledged_body, RequestedUnavailable,
     {1: "ProtocolErrorRequestedUnavailableTx", 2: "ProtocolErrorRequestedUnavailableSig"}),
]


@pytest.mark.parametrize("script, error, names", SERVING_CASES, ids=[c[0].__name__ for c in SERVING_CASES])
async def test_serving_refuses(dialect, script, error, names):
    a, b = memory_channel_pair(11)
    scripted = Driver(a, dialect.spec, dialect.pulling_role)
    serving = ServingPeer(dialect, b, ListSigSource(MESSAGES))

    async def pulling():
        if dialect.init is not None:
            await scripted.recv()
        await script(dialect, scripted)

    with pytest.raises(error) as info:
        await run_together(serving.run, pulling)
    assert type(info.value) is error
    assert info.value.version == dialect.version
    assert info.value.reference_name == names[dialect.version]
    assert info.value.protocol == dialect.spec.name
    assert names[dialect.version] in str(info.value)


async def test_the_details_of_the_window_errors(dialect):
    a, b = memory_channel_pair(11)
    scripted = Driver(a, dialect.spec, dialect.pulling_role)
    serving = ServingPeer(dialect, b, ListSigSource(MESSAGES))

    async def pulling():
        if dialect.init is not None:
            await scripted.recv()
        await too_many_outstanding(dialect, scripted)

    with pytest.raises(RequestedTooManyIds) as info:
        await run_together(serving.run, pulling)
    assert (info.value.req, info.value.unacknowledged, info.value.ack, info.value.window) == (100, 33, 0, 132)


async def test_a_request_at_the_window_edge_is_served(dialect):
    a, b = memory_channel_pair(11)
    scripted = Driver(a, dialect.spec, dialect.pulling_role)
    serving = ServingPeer(dialect, b, ListSigSource([make_message(n) for n in range(200)]))
    got = []

    async def pulling():
        if dialect.init is not None:
            await scripted.recv()
        got.extend(await ids(scripted, dialect, True, 0, 33))
        got.extend(await ids(scripted, dialect, False, 0, 99))  # 33 + 99 = 132: allowed
        got.extend(await ids(scripted, dialect, False, 10, 10))  # 132 - 10 + 10 = 132: allowed
        await scripted.send(dialect.request_bodies((got[-1][0], got[10][0])))
        reply = await scripted.recv()
        assert [message_id(m) for m in reply.messages] == [got[-1][0], got[10][0]]
        serving_task.cancel()

    async with trio.open_nursery() as nursery:
        serving_task = nursery.cancel_scope
        nursery.start_soon(serving.run)
        nursery.start_soon(pulling)
    assert len(got) == 142 and len({i for i, _ in got}) == 142


# -- pulling: the serving peer answers what was not asked ---------------------------------

async def start(d, drv):
    if d.init is not None:
        await drv.send(d.init())
    return await drv.recv()


async def too_many_ids(d, drv):
    request = await start(d, drv)
    await drv.send(d.reply_ids(tuple((i, len(m)) for i, m in zip(IDS, MESSAGES))[: request.req + 1]))


async def unannounced_body(d, drv):
    await start(d, drv)
    await drv.send(d.reply_ids(((IDS[0], len(MESSAGES[0])), (IDS[1], len(MESSAGES[1])))))
    await drv.recv()  # the body request
    await drv.send(d.reply_bodies((MESSAGES[0], MESSAGES[5])))


async def unwanted_body(d, drv):
    # IDS[2] is held by the node: announced, not requested, then sent anyway.
    await start(d, drv)
    await drv.send(d.reply_ids(tuple((IDS[i], len(MESSAGES[i])) for i in range(4))))
    request = await drv.recv()
    assert IDS[2] not in request.ids
    await drv.send(d.reply_bodies((MESSAGES[2],)))


def oversized(offset):
    async def script(d, drv):
        await start(d, drv)
        await drv.send(d.reply_ids(((IDS[0], len(MESSAGES[0]) + offset),)))
        await drv.recv()
        await drv.send(d.reply_bodies((MESSAGES[0],)))
    script.__name__ = f"size_off_by_{offset}"
    return script


PULLING_CASES = [
    (too_many_ids, IdsNotRequested, {1: "ProtocolErrorTxIdsNotRequested", 2: "ProtocolErrorSigIdsNotRequested"}),
    (unannounced_body, BodyNotRequested, {1: "ProtocolErrorTxNotRequested", 2: "ProtocolErrorSigNotRequested"}),
    (unwanted_body, BodyNotRequested, {1: "ProtocolErrorTxNotRequested", 2: "ProtocolErrorSigNotRequested"}),
    (oversized(33), SizeError, {1: "ProtocolErrorTxSizeError", 2: "ProtocolErrorTxSizeError"}),
    (oversized(-33), SizeError, {1: "ProtocolErrorTxSizeError", 2: "ProtocolErrorTxSizeError"}),
]


def pulling_pair(dialect, sink):
    a, b = memory_channel_pair(11)
    return PullingPeer(dialect, a, sink), Driver(b, dialect.spec, dialect.serving_role)


@pytest.mark.parametrize("script, error, names", PULLING_CASES, ids=[c[0].__name__ for c in PULLING_CASES])
async def test_pulling_refuses(dialect, script, error, names):
    sink = RecordingSink(holds={IDS[2]})
    pulling, scripted = pulling_pair(dialect, sink)
    with pytest.raises(error) as info:
        await run_together(pulling.run, lambda: script(dialect, scripted))
    assert type(info.value) is error
    assert info.value.version == dialect.version
    assert info.value.reference_name == names[dialect.version]
    assert sink.accepted == [] and sink.outstanding_claims == []


async def test_the_size_error_names_the_message(dialect):
    sink = RecordingSink()
    pulling, scripted = pulling_pair(dialect, sink)
    with pytest.raises(SizeError) as info:
        await run_together(pulling.run, lambda: oversized(-40)(dialect, scripted))
    assert info.value.mismatches == ((IDS[0], len(MESSAGES[0]), len(MESSAGES[0]) - 40),)


@pytest.mark.parametrize("offset", [32, -32, 0])
async def test_sizes_within_32_bytes_are_accepted(dialect, offset, autojump_clock):
    sink = RecordingSink()
    pulling, scripted = pulling_pair(dialect, sink)

    async def serving():
        await oversized(offset)(dialect, scripted)
        await sink.wait_for(1)
        pulling.stop()
        while True:
            request = await scripted.recv()
            if isinstance(request, dialect.done):
                return
            if request.blocking:  # only V2 comes back to a blocking request; it gets "no ids"
                await scripted.send(dialect.reply_no_ids())
            else:
                await scripted.send(dialect.reply_ids(()))

    async def pull():
        await pulling.run()
        if dialect.done_by is not Side.PULLING:  # V1: the pulling peer just stops asking
            nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pull)
        nursery.start_soon(serving)
    assert sink.accepted == [MESSAGES[0]]
    assert sink.outstanding_claims == []


async def test_an_empty_blocking_reply_is_a_decoder_failure(dialect):
    sink = RecordingSink()
    pulling, scripted = pulling_pair(dialect, sink)

    async def serving():
        await start(dialect, scripted)
        await scripted.channel.send(bytes([0x82, dialect.spec.codec.encode(dialect.reply_ids(()))[1], 0x9F, 0xFF]))

    with pytest.raises(DecoderFailure, match="empty list not permitted"):
        await run_together(pulling.run, serving)


async def test_a_reply_holding_something_else_than_a_message_is_a_decoder_failure(dialect, autojump_clock):
    sink = RecordingSink()
    pulling, scripted = pulling_pair(dialect, sink)

    async def serving():
        await start(dialect, scripted)
        await scripted.send(dialect.reply_ids(((IDS[0], len(MESSAGES[0])),)))
        await scripted.recv()
        tag = dialect.spec.codec.encode(dialect.reply_bodies(()))[1]
        not_a_message = cbor2.dumps([bytes(31), [b"body", 1, 2], bytes(448), [], bytes(32)])
        await scripted.channel.send(bytes([0x82, tag, 0x9F]) + not_a_message + b"\xff")

    with pytest.raises(DecoderFailure, match="expected 32 bytes"):
        await run_together(pulling.run, serving)
    assert sink.outstanding_claims == []


# -- serving over a real mux: requests answered in the connection's reader ------------------

async def _over_mux(dialect, serving_of, pulling_script) -> None:
    """Run a serving peer on one mux and a scripted pulling peer on the other, over loopback TCP.

    The serving peer's channel is a real ``MuxChannel``, so it answers from the mux reader.
    """
    connecting, accepted = await tcp_stream_pair()
    pulling_mux, serving_mux = Mux(Bearer(connecting), Provenance.OUTBOUND), Mux(Bearer(accepted), Provenance.INBOUND)
    pulling_initiates = dialect.initiator_side is Side.PULLING
    pulling_channel = pulling_mux.register(PROTOCOL_NUM, Mode.INITIATOR if pulling_initiates else Mode.RESPONDER,
                                           INGRESS_LIMIT)
    serving_channel = serving_mux.register(PROTOCOL_NUM, Mode.RESPONDER if pulling_initiates else Mode.INITIATOR,
                                           INGRESS_LIMIT)
    serving = serving_of(serving_channel)
    scripted = Driver(pulling_channel, dialect.spec, dialect.pulling_role)

    async def pulling():
        if dialect.init is not None:
            await scripted.recv()
        await pulling_script(scripted)

    failure = None
    async with trio.open_nursery() as muxes:
        muxes.start_soon(pulling_mux.run)
        muxes.start_soon(serving_mux.run)
        try:
            with trio.fail_after(30):
                await run_together(serving.run, pulling)
        except Exception as exc:  # raised below, outside the muxes' nursery
            failure = exc
        muxes.cancel_scope.cancel()
    if failure is not None:
        raise failure


@pytest.mark.parametrize("script, error, names", SERVING_CASES, ids=[c[0].__name__ for c in SERVING_CASES])
async def test_serving_refuses_over_a_mux(dialect, script, error, names):
    with pytest.raises(error) as info:
        await _over_mux(dialect, lambda channel: ServingPeer(dialect, channel, ListSigSource(MESSAGES)),
                        lambda scripted: script(dialect, scripted))
    assert type(info.value) is error
    assert info.value.reference_name == names[dialect.version]


class _TaskSteps(trio.abc.Instrument):
    """How many times each task (by name) was scheduled."""

    def __init__(self) -> None:
        self.steps: collections.Counter[str] = collections.Counter()

    def before_task_step(self, task) -> None:
        self.steps[task.name] += 1


async def test_over_a_mux_the_serving_task_sleeps_through_rounds_it_can_answer_at_once(dialect):
    """Ids and bodies the mempool holds are answered by the reader: the serving task runs a few steps, not one per round."""
    source = ListSigSource(MESSAGES)
    rounds = 30
    steps = _TaskSteps()
    answered = []

    async def pull(scripted):
        answered.extend(i for i, _ in await ids(scripted, dialect, True, 0, 1))
        for _ in range(rounds):
            got = [i for i, _ in await ids(scripted, dialect, True, 1, 1)]
            await scripted.send(dialect.request_bodies(got))
            assert isinstance(await scripted.recv(), dialect.reply_bodies)
            answered.extend(got)
        if dialect.done_by is Side.PULLING:
            await scripted.send(dialect.done())
        else:
            serving.stop()
            await scripted.send(dialect.request_ids(True, 1, 1))
            assert isinstance(await scripted.recv(), dialect.done)

    def serving_of(channel):
        nonlocal serving
        serving = ServingPeer(dialect, channel, source)
        return serving

    serving = None
    trio.lowlevel.add_instrument(steps)
    try:
        await _over_mux(dialect, serving_of, pull)
    finally:
        trio.lowlevel.remove_instrument(steps)
    assert answered == IDS[:rounds + 1]
    assert serving.driver.done
    serving_steps = [n for name, n in steps.steps.items() if name.endswith("ServingPeer.run")]
    assert serving_steps and serving_steps[0] < 10, steps.steps


async def test_over_a_mux_a_blocking_request_is_answered_by_the_mempool_or_times_out(dialect):
    """A blocking request with nothing new waits in the mempool: the next append answers it (no task
    woken), and in V2 nothing appended within the timeout gets MsgReplyNoSigIds."""
    source = ListSigSource(MESSAGES[:2])
    steps = _TaskSteps()
    serving = None

    async def pull(scripted):
        assert [i for i, _ in await ids(scripted, dialect, True, 0, 2)] == IDS[:2]
        for n in range(2, 12):
            await scripted.send(dialect.request_ids(True, 2 if n == 2 else 1, 1))
            await trio.sleep(0.01)
            source.append(MESSAGES[n])
            assert [i for i, _ in (await scripted.recv()).ids] == [IDS[n]]
        await scripted.send(dialect.request_ids(True, 1, 1))
        if dialect.reply_no_ids is not None:
            start = trio.current_time()
            assert isinstance(await scripted.recv(), dialect.reply_no_ids)
            assert trio.current_time() - start >= 0.2
            await scripted.send(dialect.done())
        else:
            serving.stop()
            assert isinstance(await scripted.recv(), dialect.done)

    def serving_of(channel):
        nonlocal serving
        options = {} if dialect.reply_no_ids is None else {"blocking_timeout": 0.2}
        serving = ServingPeer(dialect, channel, source, **options)
        return serving

    trio.lowlevel.add_instrument(steps)
    try:
        await _over_mux(dialect, serving_of, pull)
    finally:
        trio.lowlevel.remove_instrument(steps)
    assert serving.driver.done
    serving_steps = [n for name, n in steps.steps.items() if name.endswith("ServingPeer.run")]
    assert serving_steps and serving_steps[0] < 10, steps.steps


# -- pulling over a real mux: replies taken in the connection's reader -------------------------

@pytest.mark.parametrize("script, error, names", PULLING_CASES, ids=[c[0].__name__ for c in PULLING_CASES])
async def test_pulling_refuses_over_a_mux(dialect, script, error, names, nursery):
    """A broken rule found in the reader is raised from the pulling peer's task, its claims given back."""
    sink = RecordingSink(holds={IDS[2]})
    pulling_channel, serving_channel = mux_channel_pair(dialect, nursery)
    pulling = PullingPeer(dialect, pulling_channel, sink)
    scripted = Driver(serving_channel, dialect.spec, dialect.serving_role)
    with pytest.raises(error) as info:
        with trio.fail_after(30):
            await run_together(pulling.run, lambda: script(dialect, scripted))
    assert type(info.value) is error
    assert info.value.reference_name == names[dialect.version]
    assert sink.accepted == [] and sink.outstanding_claims == []


async def test_over_a_mux_the_pulling_task_sleeps_through_id_rounds(dialect, nursery):
    """Id replies are taken in by the reader, which sends the next request: the pulling task runs a few
    steps, not one per reply; it wakes for the batches it hands to the node."""
    sink = RecordingSink(holds=set(IDS[:30]))  # announced, acknowledged, never fetched
    pulling_channel, serving_channel = mux_channel_pair(dialect, nursery)
    pulling = PullingPeer(dialect, pulling_channel, sink)
    scripted = Driver(serving_channel, dialect.spec, dialect.serving_role)
    steps = _TaskSteps()

    async def serving():
        request = await start(dialect, scripted)
        for n in range(30):
            assert request.blocking and request.ack == (0 if n == 0 else 1)
            await scripted.send(dialect.reply_ids(((IDS[n], len(MESSAGES[n])),)))
            request = await scripted.recv()
        await scripted.send(dialect.reply_ids(((IDS[30], len(MESSAGES[30])),)))
        assert await scripted.recv() == dialect.request_bodies((IDS[30],))
        await scripted.send(dialect.reply_bodies((MESSAGES[30],)))
        if dialect.done_by is Side.PULLING:  # V2: the blocking request went right behind the bodies
            assert await scripted.recv() == dialect.request_ids(True, 1, 33)
        else:  # V1: a non-blocking request behind the bodies, the blocking one after its reply
            assert await scripted.recv() == dialect.request_ids(False, 0, 33)
            await scripted.send(dialect.reply_ids(()))
            assert await scripted.recv() == dialect.request_ids(True, 1, 33)
        if dialect.done_by is Side.PULLING:
            pulling.stop()  # the blocking request is answered first, then MsgDone
            await scripted.send(dialect.reply_no_ids())
            assert await scripted.recv() == dialect.done()
        else:
            await scripted.send(dialect.done())

    trio.lowlevel.add_instrument(steps)
    try:
        with trio.fail_after(30):
            await run_together(pulling.run, serving)
    finally:
        trio.lowlevel.remove_instrument(steps)
    assert sink.accepted == [MESSAGES[30]] and sink.outstanding_claims == []
    pulling_steps = [n for name, n in steps.steps.items() if name.endswith("PullingPeer.run")]
    assert pulling_steps and pulling_steps[0] < 10, steps.steps
