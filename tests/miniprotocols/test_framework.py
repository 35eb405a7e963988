"""The framework on its own: spec validation, the sans-IO machine, the driver's limits,
decoder failures, tracing and pipelining, with a small request/reply protocol."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import cbor2
import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from miniprotocols.framework import (
    Agency,
    CodecError,
    DecoderFailure,
    Direction,
    Driver,
    ExceededSizeLimit,
    ExceededTimeLimit,
    ProtocolError,
    ProtocolMachine,
    ProtocolSpec,
    ProtocolViolation,
    Role,
    StateSpec,
    as_driver,
)
from miniprotocols import sig_submission_v2
from miniprotocols.framework import cbor_write as w
from miniprotocols.sig_submission import INGRESS_LIMIT, PROTOCOL_NUM
from ouroboros_mux import Bearer, Mode, Mux, Provenance
from tests.ouroboros_mux.streams import raw_sdu
from miniprotocols.framework.envelope import open_envelope, raw_items
from ouroboros_mux.cbor import Cursor
from ouroboros_mux.channel import ChannelClosed, memory_channel_pair

from .helpers import h


# -- a small protocol: pings are pipelinable, an ask may end the protocol ----------------
class S(enum.Enum):
    IDLE = "idle"
    BUSY = "busy"
    ASKED = "asked"
    DONE = "done"


@dataclass(frozen=True)
class Ping:
    n: int


@dataclass(frozen=True)
class Pong:
    n: int


@dataclass(frozen=True)
class Ask:
    pass


@dataclass(frozen=True)
class Yes:
    pass


@dataclass(frozen=True)
class No:
    pass


@dataclass(frozen=True)
class Stop:
    pass


_TAGS = {Ping: 0, Pong: 1, Ask: 2, Yes: 3, No: 4, Stop: 5}
_BY_TAG = {v: k for k, v in _TAGS.items()}


class ToyCodec:
    def encode(self, message):
        tag = _TAGS[type(message)]
        if isinstance(message, (Ping, Pong)):
            return w.array_header(2) + w.uint(tag) + w.uint(message.n)
        return w.array_header(1) + w.uint(tag)

    def decode(self, state, raw):
        cursor, length, tag = open_envelope(raw)
        cls = _BY_TAG.get(tag)
        if cls is None:
            raise CodecError(f"unknown tag {tag}")
        message = cls(cursor.uint()) if cls in (Ping, Pong) else cls()
        cursor.expect_end()
        return message


STATES = {
    S.IDLE: StateSpec(Agency.CLIENT),
    S.BUSY: StateSpec(Agency.SERVER, byte_limit=100, time_limit=5.0),
    S.ASKED: StateSpec(Agency.SERVER, time_limit=7.0),
    S.DONE: StateSpec(Agency.NOBODY),
}
TRANSITIONS = {
    (S.IDLE, Ping): S.BUSY,
    (S.BUSY, Pong): S.IDLE,
    (S.IDLE, Ask): S.ASKED,
    (S.ASKED, Yes): S.IDLE,
    (S.ASKED, No): S.DONE,
    (S.IDLE, Stop): S.DONE,
}
TOY = ProtocolSpec("toy", STATES, S.IDLE, TRANSITIONS, ToyCodec())


def drivers(spec=TOY, trace=None):
    a, b = memory_channel_pair(99)
    return Driver(a, spec, Role.CLIENT, trace=trace), Driver(b, spec, Role.SERVER), a, b


# -- spec -----------------------------------------------------------------------------
def test_one_role_one_agency_each_role_holds_its_own():
    assert (Role.CLIENT.agency, Role.SERVER.agency) == (Agency.CLIENT, Agency.SERVER)
    assert (Role.CLIENT.peer, Role.SERVER.peer) == (Role.SERVER, Role.CLIENT)
    assert [r.value for r in Role] == ["client", "server"]
    assert Role("server") is Role.SERVER


def test_spec_refuses_inconsistent_tables():
    with pytest.raises(ValueError, match="initial state"):
        ProtocolSpec("bad", {S.IDLE: StateSpec(Agency.CLIENT)}, S.DONE, {}, ToyCodec())
    with pytest.raises(ValueError, match="terminal state"):
        ProtocolSpec("bad", STATES, S.IDLE, {**TRANSITIONS, (S.DONE, Ping): S.IDLE}, ToyCodec())
    with pytest.raises(ValueError, match="no message may leave"):
        ProtocolSpec("bad", STATES, S.IDLE, {k: v for k, v in TRANSITIONS.items() if k[0] is not S.ASKED},
                     ToyCodec())
    with pytest.raises(ValueError, match="unknown state"):
        ProtocolSpec("bad", {k: v for k, v in STATES.items() if k is not S.ASKED}, S.IDLE,
                     {(S.IDLE, Ping): S.BUSY, (S.BUSY, Pong): S.IDLE, (S.IDLE, Ask): S.ASKED,
                      (S.IDLE, Stop): S.DONE}, ToyCodec())
    with pytest.raises(ValueError, match="positive"):
        StateSpec(Agency.SERVER, byte_limit=0)
    with pytest.raises(ValueError, match="positive"):
        StateSpec(Agency.SERVER, time_limit=-1)


def test_a_target_chosen_by_the_message_is_followed_and_one_outside_the_table_is_refused():
    """A transition whose target is a function of the message: the machine follows the state it
    chooses, on both ends, and one it chooses outside the spec's states is the spec's error."""
    choose = {1: S.BUSY, 2: S.DONE, 3: "elsewhere"}
    spec = ProtocolSpec("chosen", STATES, S.IDLE, {**TRANSITIONS, (S.IDLE, Ping): lambda ping: choose[ping.n]},
                        ToyCodec())
    for n, expected in ((1, S.BUSY), (2, S.DONE)):
        client, server = ProtocolMachine(spec, Role.CLIENT), ProtocolMachine(spec, Role.SERVER)
        client.on_send(Ping(n))
        server.on_receive(Ping(n))
        assert client.state is server.state is expected
    client, server = ProtocolMachine(spec, Role.CLIENT), ProtocolMachine(spec, Role.SERVER)
    with pytest.raises(ValueError, match="chose unknown state elsewhere"):
        client.on_send(Ping(3))
    with pytest.raises(ValueError, match="chose unknown state elsewhere"):
        server.on_receive(Ping(3))
    assert client.state is server.state is S.IDLE


def test_next_state_is_pure_and_names_the_valid_messages():
    assert TOY.next_state(S.IDLE, Ping(1)) is S.BUSY
    assert TOY.next_state(S.ASKED, No()) is S.DONE
    with pytest.raises(ProtocolViolation) as info:
        TOY.next_state(S.BUSY, Ping(1))
    assert info.value.state is S.BUSY and info.value.message == Ping(1)
    assert "valid: Pong" in str(info.value) and "toy in state BUSY" in str(info.value)
    with pytest.raises(ProtocolViolation, match="terminated"):
        TOY.next_state(S.DONE, Stop())


def test_reply_state_only_for_single_fixed_targets():
    assert TOY.reply_state(S.BUSY) is S.IDLE
    with pytest.raises(ValueError):
        TOY.reply_state(S.ASKED)  # Yes -> IDLE, No -> DONE


def test_with_limits_replaces_one_state_only():
    relaxed = TOY.with_limits(S.BUSY, time_limit=None)
    assert relaxed.states[S.BUSY] == StateSpec(Agency.SERVER, 100, None)
    assert relaxed.states[S.ASKED] == TOY.states[S.ASKED]
    assert TOY.states[S.BUSY].time_limit == 5.0


# -- machine (no trio) ------------------------------------------------------------------
def test_machine_tracks_both_ends_in_lockstep():
    client, server = ProtocolMachine(TOY, Role.CLIENT), ProtocolMachine(TOY, Role.SERVER)
    for message, sender, receiver in [(Ping(1), client, server), (Pong(1), server, client),
                                      (Ask(), client, server), (No(), server, client)]:
        sender.on_send(message)
        receiver.on_receive(message)
        assert client.state is server.state
    assert client.done and server.done


def test_machine_refuses_sending_without_agency_and_receiving_with_it():
    server = ProtocolMachine(TOY, Role.SERVER)
    with pytest.raises(ProtocolViolation, match="sent by the server but the client has agency"):
        server.on_send(Pong(1))
    client = ProtocolMachine(TOY, Role.CLIENT)
    with pytest.raises(ProtocolViolation, match="client cannot receive"):
        client.receiving_state()
    client.on_send(Stop())
    with pytest.raises(ProtocolViolation, match="nobody has agency"):
        client.receiving_state()
    with pytest.raises(ProtocolViolation, match="nobody has agency"):
        client.on_send(Stop())


def test_pipelined_replies_are_collected_in_order_in_their_own_states():
    client = ProtocolMachine(TOY, Role.CLIENT)
    for n in range(3):
        client.on_send(Ping(n), pipelined=True)
    assert client.state is S.IDLE and client.outstanding == (S.BUSY, S.BUSY, S.BUSY)
    assert client.has_agency()
    with pytest.raises(ProtocolViolation, match="3 pipelined replies are still outstanding"):
        client.on_send(Stop())
    assert client.receiving_state() is S.BUSY
    with pytest.raises(ProtocolViolation):
        client.on_receive(Yes())  # not a reply to a ping
    for n in range(3):
        assert client.on_receive(Pong(n)) is S.BUSY
    assert client.outstanding == ()
    client.on_send(Stop())
    assert client.done


def test_only_requests_with_a_fixed_reply_state_can_be_pipelined():
    client = ProtocolMachine(TOY, Role.CLIENT)
    with pytest.raises(ProtocolViolation, match="cannot be pipelined"):
        client.on_send(Ask(), pipelined=True)
    with pytest.raises(ProtocolViolation, match="cannot be pipelined: it leads to DONE"):
        client.on_send(Stop(), pipelined=True)
    assert client.state is S.IDLE and client.outstanding == ()


@given(st.lists(st.sampled_from(["send", "collect"]), max_size=40))
def test_pipelining_preserves_order_for_any_interleaving(ops):
    client, server = ProtocolMachine(TOY, Role.CLIENT), ProtocolMachine(TOY, Role.SERVER)
    in_flight: list[int] = []
    sent = collected = 0
    for op in ops:
        if op == "send":
            client.on_send(Ping(sent), pipelined=True)
            server.on_receive(Ping(sent))
            server.on_send(Pong(sent))
            in_flight.append(sent)
            sent += 1
        elif in_flight:
            n = in_flight.pop(0)
            client.on_receive(Pong(n))
            assert n == collected
            collected += 1
        assert len(client.outstanding) == len(in_flight)
        assert server.state is S.IDLE


_MESSAGES = [Ping(0), Pong(0), Ask(), Yes(), No(), Stop()]


@given(st.lists(st.one_of(st.tuples(st.just("send"), st.booleans(), st.sampled_from(_MESSAGES), st.booleans()),
                          st.tuples(st.just("deliver"), st.booleans())), max_size=60))
def test_the_receiving_state_kept_by_sends_and_receives_is_the_one_worked_out_afresh(ops):
    """``ProtocolMachine.receiving`` (kept by every send and receive, read by the driver for every
    message it takes) is at every step what the state and the outstanding replies say, and
    ``receiving_state`` returns it, or raises where it is None; refused sends change nothing."""
    client, server = ProtocolMachine(TOY, Role.CLIENT), ProtocolMachine(TOY, Role.SERVER)
    queues = {client: [], server: []}  # sent to each machine and not yet received by it

    def afresh(machine):
        if machine.outstanding:
            return machine.outstanding[0]
        return machine.state if TOY.agency(machine.state) is machine.role.peer.agency else None

    for op in ops:
        if op[0] == "send":
            _, by_client, message, pipelined = op
            sender, receiver = (client, server) if by_client else (server, client)
            try:
                sender.on_send(message, pipelined=pipelined)
            except ProtocolViolation:
                pass
            else:
                queues[receiver].append(message)
        else:
            receiver = client if op[1] else server
            if queues[receiver]:
                receiver.on_receive(queues[receiver].pop(0))
        for machine in (client, server):
            assert machine.receiving is afresh(machine)
            if machine.receiving is None:
                with pytest.raises(ProtocolViolation):
                    machine.receiving_state()
            else:
                assert machine.receiving_state() is machine.receiving


# -- driver -----------------------------------------------------------------------------
async def test_driver_round_trip_and_trace():
    events = []
    client, server, _, _ = drivers(trace=events.append)
    await client.send(Ping(7))
    assert await server.recv() == Ping(7)
    await server.send(Pong(7))
    assert await client.recv() == Pong(7)
    assert [(e.direction, e.state, e.message, e.raw) for e in events] == [
        (Direction.SENT, S.IDLE, Ping(7), h("820007")),
        (Direction.RECEIVED, S.BUSY, Pong(7), h("820107")),
    ]


async def test_driver_refuses_before_writing_anything():
    client, server, a, b = drivers()
    with pytest.raises(ProtocolViolation):
        await server.send(Pong(1))
    with pytest.raises(ProtocolViolation):
        await client.recv()
    await a.aclose()
    with pytest.raises(ChannelClosed):
        await b.recv_message()  # nothing was sent by either refusal


async def test_received_message_invalid_in_state_is_a_violation_with_its_bytes():
    client, server, a, b = drivers()
    await a.send(h("820107"))  # a Pong where the server waits for the client
    with pytest.raises(ProtocolViolation) as info:
        await server.recv()
    assert info.value.raw == h("820107") and info.value.state is S.IDLE
    assert server.state is S.IDLE


@pytest.mark.parametrize("raw", ["820600", "820140", "9f0007ff", "80", "a10007", "8200"])
async def test_undecodable_bytes_are_a_decoder_failure_keeping_the_bytes(raw):
    client, server, a, b = drivers()
    await client.send(Ping(1))
    await server.recv()
    if raw == "8200":
        await b.send(h(raw) + h("f6"))  # complete item: [0, null]
        expected = h("8200f6")
    else:
        await b.send(h(raw))
        expected = h(raw)
    with pytest.raises(DecoderFailure) as info:
        await client.recv()
    assert info.value.raw == expected and info.value.state is S.BUSY
    assert isinstance(info.value, ProtocolError)


async def test_bytes_that_are_not_cbor_are_a_decoder_failure():
    client, server, a, b = drivers()
    await a.send(h("ff"))
    with pytest.raises(DecoderFailure, match="not CBOR") as info:
        await server.recv()
    assert info.value.raw is None


async def test_size_limit_of_the_state_applies(autojump_clock):
    client, server, a, b = drivers()
    await client.send(Ping(1))
    await server.recv()
    await b.send(w.array_header(2) + w.uint(1) + w.head(2, 200) + bytes(200))
    with pytest.raises(ExceededSizeLimit) as info:
        await client.recv()
    assert info.value.limit == 100 and info.value.state is S.BUSY


async def test_size_limit_trips_on_an_incomplete_message_too():
    client, server, a, b = drivers()
    await client.send(Ping(1))
    await server.recv()
    await b.send(h("8201") + w.head(2, 5000) + bytes(150))  # incomplete, already > 100 bytes
    with pytest.raises(ExceededSizeLimit):
        await client.recv()


async def test_message_exactly_at_the_limit_passes():
    client, server, a, b = drivers()
    await client.send(Ping(1))
    await server.recv()
    reply = w.array_header(2) + w.uint(1) + w.uint(1)
    await b.send(reply)
    assert await client.recv() == Pong(1)
    spec = TOY.with_limits(S.BUSY, byte_limit=3)
    client, server, a, b = drivers(spec)
    await client.send(Ping(1))
    await server.recv()
    await b.send(h("820101"))  # exactly 3 bytes
    assert await client.recv() == Pong(1)


async def test_time_limit_of_the_state_applies(autojump_clock):
    client, server, a, b = drivers()
    await client.send(Ask())
    started = trio.current_time()
    with pytest.raises(ExceededTimeLimit) as info:
        await client.recv()
    assert trio.current_time() - started == pytest.approx(7.0)
    assert info.value.limit == 7.0 and info.value.state is S.ASKED


async def test_time_limit_under_run_applies_and_is_cleared_once_the_message_is_in(autojump_clock):
    client, server, a, b = drivers()

    async def peer():
        await client.send(Ask())
        answered = trio.current_time()
        await server.recv()
        await trio.sleep(3)
        await server.send(Yes())
        assert await client.recv() == Yes()
        # No receive is waiting: the deadline of the last one does not fire later.
        await trio.sleep(60)
        assert trio.current_time() - answered == pytest.approx(63.0)
        await client.send(Ask())
        await client.recv()  # never answered

    started = trio.current_time()
    with pytest.raises(ExceededTimeLimit) as info:
        await client.run(peer)
    assert trio.current_time() - started == pytest.approx(63.0 + 7.0)
    assert info.value.limit == 7.0 and info.value.state is S.ASKED


async def test_no_time_limit_means_waiting_as_long_as_it_takes(autojump_clock):
    client, server, a, b = drivers()

    async def late_ping():
        await trio.sleep(10_000)
        await client.send(Ping(3))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(late_ping)
        assert await server.recv() == Ping(3)
    assert trio.current_time() >= 10_000


async def test_pipelined_requests_over_a_channel(autojump_clock):
    client, server, a, b = drivers()
    for n in range(5):
        await client.send(Ping(n), pipelined=True)
    assert client.outstanding == (S.BUSY,) * 5

    async def serve():
        for _ in range(5):
            ping = await server.recv()
            await trio.sleep(1)
            await server.send(Pong(ping.n))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        assert [(await client.recv()).n for _ in range(5)] == list(range(5))
    assert client.outstanding == () and client.state is S.IDLE
    await client.send(Stop())
    assert await server.recv() == Stop()
    assert client.done and server.done


async def test_each_pipelined_reply_gets_the_time_limit_of_its_state(autojump_clock):
    client, server, a, b = drivers()
    await client.send(Ping(0), pipelined=True)
    await client.send(Ping(1), pipelined=True)
    await b.send(h("820100"))  # only the first reply ever comes
    assert await client.recv() == Pong(0)
    started = trio.current_time()
    with pytest.raises(ExceededTimeLimit):
        await client.recv()
    assert trio.current_time() - started == pytest.approx(5.0)


def test_as_driver_wraps_channels_and_checks_drivers():
    a, _ = memory_channel_pair()
    driver = as_driver(a, TOY, Role.CLIENT)
    assert isinstance(driver, Driver) and driver.role is Role.CLIENT
    assert as_driver(driver, TOY, Role.CLIENT) is driver
    with pytest.raises(ValueError, match="plays the client"):
        as_driver(driver, TOY, Role.SERVER)


# -- envelope helpers ---------------------------------------------------------------------
def test_envelope_readers_are_strict_about_shape():
    with pytest.raises(ValueError, match="definite"):
        open_envelope(h("9f00ff"))
    with pytest.raises(ValueError, match="empty"):
        open_envelope(h("80"))
    assert raw_items(Cursor(h("9f0102ff"))) == (h("01"), h("02"))
    with pytest.raises(CodecError, match="indefinite"):
        raw_items(Cursor(h("820102")))
    assert raw_items(Cursor(h("820102")), allow_definite=True) == (h("01"), h("02"))


@given(st.integers(0, 2**64 - 1))
def test_written_heads_are_the_shortest_form(n):
    assert w.uint(n) == cbor2.dumps(n)


def test_check_item_refuses_partial_or_multiple_items():
    assert w.check_item(h("8201f5")) == h("8201f5")
    with pytest.raises(ValueError, match="not one CBOR item"):
        w.check_item(h("8201"))
    with pytest.raises(ValueError, match="1 bytes after"):
        w.check_item(h("0101"))


def test_items_are_checked_unless_their_maker_vouches_for_them():
    assert w.join_items([h("8201f5"), h("01")]) == h("8201f501")
    with pytest.raises(ValueError, match="not one CBOR item"):
        w.join_items((h("01"), h("8201")))
    # CheckedItems are spliced as they are: the maker (the node's mempool) has checked them.
    assert w.join_items(w.CheckedItems([h("8201")])) == h("8201")
    assert w.as_items(w.CheckedItems([h("01")])).__class__ is w.CheckedItems
    assert w.as_items([h("01")]) == (h("01"),)


def test_reply_types_keep_checked_items_and_encode_the_same_bytes():
    from miniprotocols.local_msg_notification.codec import LocalNotificationCodec
    from miniprotocols.local_msg_notification.types import MsgReplyMessagesBlocking
    from miniprotocols.sig_submission_v2.codec import SigSubmissionV2Codec
    from miniprotocols.sig_submission_v2.types import MsgReplySigs

    messages = [cbor2.dumps([b"\x01" * 32, 7]), cbor2.dumps([b"\x02" * 40, 8])]
    for make, codec in ((MsgReplySigs, SigSubmissionV2Codec()), (MsgReplyMessagesBlocking, LocalNotificationCodec())):
        checked = make(w.CheckedItems(messages))
        assert type(checked.messages) is w.CheckedItems
        assert checked == make(messages)
        assert codec.encode(checked) == codec.encode(make(tuple(messages)))


@pytest.mark.parametrize("buffered", [b"", b"\x83\x00\xf5"])  # nothing; the start of a request
def test_a_driver_receiving_without_waiting_reports_the_end_of_its_mux_channel(buffered):
    """``Driver.recv_nowait`` over a ``MuxChannel`` asks the framer directly (``take_decoded``) while
    the channel is open; once the connection has ended it reports the end as ``ChannelClosed``,
    with or without the start of a message buffered, as a receive that waits does."""
    dialect = sig_submission_v2.DIALECT

    async def run():
        peer, ours = trio.testing.memory_stream_pair()
        mux = Mux(Bearer(ours), Provenance.INBOUND)
        channel = mux.register(PROTOCOL_NUM, Mode.RESPONDER, INGRESS_LIMIT)
        driver = Driver(channel, dialect.spec, dialect.serving_role)
        channel.finish()  # the peer's close is then a clean end
        async with trio.open_nursery() as nursery:
            nursery.start_soon(mux.run)
            if buffered:
                await peer.send_all(raw_sdu(PROTOCOL_NUM, False, buffered))
                await trio.testing.wait_all_tasks_blocked()
                assert channel.queued_in == len(buffered)
            assert driver.recv_nowait() is None
            await peer.aclose()
        assert channel.closed
        for _ in range(2):
            with pytest.raises(ChannelClosed):
                driver.recv_nowait()
        with pytest.raises(ChannelClosed):
            await driver.recv()

    trio.run(run)
