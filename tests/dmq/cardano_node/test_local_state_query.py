"""Local state query (7): the bytes of local-state-query.cddl, the state table enforced by
the driver, and the client against the server over an in-memory channel."""

from __future__ import annotations

import cbor2
import pytest
import trio
from hypothesis import given

from miniprotocols.framework import DecoderFailure, Driver, ProtocolViolation, Role
from miniprotocols.local_state_query import (
    IMMUTABLE_TIP,
    INGRESS_LIMIT,
    LOCAL_STATE_QUERY,
    ORIGIN,
    PROTOCOL_NUM,
    VOLATILE_TIP,
    AcquireFailed,
    AcquireFailure,
    LocalStateQueryClient,
    LocalStateQueryState,
    MsgAcquire,
    MsgAcquired,
    MsgDone,
    MsgFailure,
    MsgQuery,
    MsgReAcquire,
    MsgRelease,
    MsgResult,
    SpecificPoint,
    block_point,
    serve,
)
from ouroboros_mux.channel import memory_channel_pair
from tests.miniprotocols.helpers import raw_messages

from .cddl import protocol_rules

codec = LOCAL_STATE_QUERY.codec
S = LocalStateQueryState
HASH = bytes(range(32))
POINT = block_point(123, HASH)

# (message, the state it is decoded in, its bytes): every message of the CDDL.
CASES = [
    (MsgAcquire(SpecificPoint(POINT)), S.IDLE, "8200" + "82187b5820" + HASH.hex()),
    (MsgAcquire(SpecificPoint(ORIGIN)), S.IDLE, "820080"),
    (MsgAcquire(VOLATILE_TIP), S.IDLE, "8108"),
    (MsgAcquire(IMMUTABLE_TIP), S.IDLE, "810a"),
    (MsgAcquired(), S.ACQUIRING, "8101"),
    (MsgFailure(AcquireFailure.POINT_TOO_OLD), S.ACQUIRING, "820200"),
    (MsgFailure(AcquireFailure.POINT_NOT_ON_CHAIN), S.ACQUIRING, "820201"),
    (MsgQuery(bytes.fromhex("8101")), S.ACQUIRED, "82038101"),
    (MsgResult(bytes.fromhex("06")), S.QUERYING, "820406"),
    (MsgRelease(), S.ACQUIRED, "8105"),
    (MsgReAcquire(SpecificPoint(POINT)), S.ACQUIRED, "8206" + "82187b5820" + HASH.hex()),
    (MsgReAcquire(VOLATILE_TIP), S.ACQUIRED, "8109"),
    (MsgReAcquire(IMMUTABLE_TIP), S.ACQUIRED, "810b"),
    (MsgDone(), S.IDLE, "8107"),
]


def test_protocol_constants_and_no_limits():
    assert PROTOCOL_NUM == 7 and INGRESS_LIMIT == 0xFFFFFFFF
    for state in LOCAL_STATE_QUERY.states.values():
        assert state.byte_limit is None and state.time_limit is None


@pytest.mark.parametrize("message, state, hex_bytes", CASES)
def test_bytes_round_trip_and_match_the_cddl(message, state, hex_bytes):
    raw = codec.encode(message)
    assert raw.hex() == hex_bytes
    assert codec.decode(state, raw) == message
    rules, alternatives = protocol_rules("local-state-query")
    rules.check(raw, *alternatives)


@pytest.mark.parametrize("hex_bytes, reason, outside_cddl", [
    # CDDL arrays admit either length encoding; the reference decoder wants definite ones.
    ("9f08ff", "indefinite outer array", False),
    ("8208", "volatile acquire with an argument is no message", True),
    ("820203", "acquire failure 3 does not exist", True),
    ("8103", "a query without its query", True),
    ("83030101", "three items", True),
    ("810c", "tag 12 is unknown", True),
    # pycddl validates the first item only; framing never hands a codec two items.
    ("810801", "trailing bytes", False),
])
def test_malformed_messages_are_codec_errors(hex_bytes, reason, outside_cddl):
    raw = bytes.fromhex(hex_bytes)
    with pytest.raises(ValueError):
        codec.decode(S.IDLE, raw)
    rules, alternatives = protocol_rules("local-state-query")
    assert any(rules.accepts(rule, raw) for rule in alternatives) is not outside_cddl, reason


@given(raw_messages)
def test_queries_and_results_travel_as_the_exact_bytes(raw):
    for message, state in ((MsgQuery(raw), S.ACQUIRED), (MsgResult(raw), S.QUERYING)):
        encoded = codec.encode(message)
        assert encoded.endswith(raw)
        assert codec.decode(state, encoded) == message


def test_non_canonical_result_bytes_are_kept():
    # 1 written in 9 bytes: a re-encoding would shrink it to "01".
    raw = bytes.fromhex("1b0000000000000001")
    assert codec.decode(S.QUERYING, bytes.fromhex("8204") + raw).result == raw


def test_block_point_needs_a_32_byte_hash():
    assert cbor2.loads(POINT) == [123, HASH]
    with pytest.raises(ValueError):
        block_point(1, b"\x00" * 28)


class _Ledger:
    """Answers every query with its own bytes, wrapped: enough to see the plumbing."""

    def __init__(self, failures: list[AcquireFailure | None]) -> None:
        self.failures = failures
        self.acquired: list = []

    async def acquire(self, target):
        failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            return failure
        self.acquired.append(target)
        return len(self.acquired)

    async def answer(self, state, query):
        return cbor2.dumps([state, cbor2.loads(query)])


async def _pair(ledger):
    client_channel, server_channel = memory_channel_pair(PROTOCOL_NUM)
    return LocalStateQueryClient(client_channel), server_channel


async def test_client_and_server_acquire_query_release_done():
    ledger = _Ledger([None, AcquireFailure.POINT_NOT_ON_CHAIN])
    client, server_channel = await _pair(ledger)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, server_channel, ledger)
        async with client.acquired() as acquired:
            assert cbor2.loads(await acquired.query(cbor2.dumps("a"))) == [1, "a"]
            assert cbor2.loads(await acquired.query(cbor2.dumps("b"))) == [1, "b"]
        assert client.driver.state is S.IDLE
        # A refused acquire is not a protocol error: the protocol is idle again.
        with pytest.raises(AcquireFailed, match="AcquireFailurePointNotOnChain") as failed:
            await client.acquire(SpecificPoint(POINT))
        assert failed.value.failure is AcquireFailure.POINT_NOT_ON_CHAIN
        assert client.driver.state is S.IDLE
        await client.acquire(IMMUTABLE_TIP)
        await client.reacquire(VOLATILE_TIP)
        assert cbor2.loads(await client.query(cbor2.dumps(7))) == [3, 7]
        await client.release()
        await client.done()
    assert ledger.acquired == [VOLATILE_TIP, IMMUTABLE_TIP, VOLATILE_TIP]


async def test_the_driver_refuses_out_of_turn_messages():
    client_channel, server_channel = memory_channel_pair(PROTOCOL_NUM)
    client = LocalStateQueryClient(client_channel)
    with pytest.raises(ProtocolViolation, match="not valid in this state"):
        await client.query(b"\x01")  # nothing acquired
    # A server that answers a query nobody asked: the client's driver rejects it.
    server = Driver(server_channel, LOCAL_STATE_QUERY, Role.SERVER)
    await client.driver.send(MsgAcquire())
    assert isinstance(await server.recv(), MsgAcquire)
    await server_channel.send(codec.encode(MsgResult(b"\x00")))
    with pytest.raises(ProtocolViolation):
        await client.driver.recv()


async def test_undecodable_reply_is_a_decoder_failure():
    client_channel, server_channel = memory_channel_pair(PROTOCOL_NUM)
    client = LocalStateQueryClient(client_channel)
    await client.driver.send(MsgAcquire())
    await server_channel.send(bytes.fromhex("820205"))
    with pytest.raises(DecoderFailure, match="ACQUIRING.*acquire failure 5"):
        await client.driver.recv()
