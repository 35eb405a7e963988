"""Protocol 1000: codec round trips, the state table, and protocol errors (docs/topics-design.md 3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniprotocols.framework import CodecError, ProtocolMachine, ProtocolViolation, Role
from miniprotocols.local_topic_subscription import (
    LOCAL_TOPIC_SUBSCRIPTION,
    Auth,
    Durable,
    LocalTopicCodec,
    MsgDone,
    MsgJoin,
    MsgJoinAck,
    MsgLeave,
    MsgLeaveAck,
    MsgPublish,
    MsgPublished,
    MsgPull,
    MsgPullReply,
    MsgReject,
    MsgReplyNext,
    MsgRequestNext,
    MsgSubscribe,
    MsgSubscribed,
    MsgUnsubscribe,
    MsgUnsubscribed,
    Resume,
    TopicState,
)

codec = LocalTopicCodec()
K = b"\x11" * 32
AUTH = Auth(1_800_000_000, b"\x22" * 64)
EXAMPLES = [
    (MsgSubscribe([{0: 1, 1: [K]}], 0), "83 00 81 a2 00 01 01 81 5820" + "11" * 32 + " 00"),
    (MsgSubscribe([{0: 0}], Resume(7), Durable(b"n", AUTH)), None),
    (MsgSubscribed(3, 0), "83 01 03 00"),
    (MsgUnsubscribe(3, True), "83 02 03 f5"),
    (MsgUnsubscribed(3), "82 03 03"),
    (MsgJoin(K, K, False, AUTH), None),
    (MsgJoinAck(K, 0), None),
    (MsgJoinAck(K, 1, 14), None),
    (MsgLeave(K, K, AUTH), None),
    (MsgLeaveAck(K, 0), None),
    (MsgPull(K, K, (K,)), None),
    (MsgPullReply(((K, 2),)), None),
    (MsgPublish(b"\xd9\x94\xf9"), "82 0a 43 d994f9"),
    (MsgPublished(K, b"\x01"), None),
    (MsgPublished(None), "82 0b f6"),
    (MsgRequestNext(True, ((3, 9),), 10), "84 0c f5 81 82 03 09 0a"),
    (MsgReplyNext((bytes.fromhex("830000820401"),), False), "83 0d 81 830000820401 f4"),
    (MsgReject(13, "rate_limited", 30), None),
    (MsgDone(), "81 0f"),
]


@pytest.mark.parametrize(("message", "hex_bytes"), EXAMPLES, ids=lambda v: type(v).__name__)
def test_round_trip(message, hex_bytes):
    raw = codec.encode(message)
    if hex_bytes is not None:
        assert raw.hex() == hex_bytes.replace(" ", "")
    assert codec.decode(TopicState.IDLE, raw) == message


@pytest.mark.parametrize("hex_bytes", [
    "840cf58000",            # maxItems = 0
    "840cf5801a00010000",    # maxItems over 16 bits
    "82 0a 40",              # empty body
    "83 00 80 00",           # empty filter
    "83 00 81 a1 00 01 05",  # start 5
    "8302 1a00000001 f4".replace(" ", "") + "00",  # trailing item
    "82 08 00",              # MsgPull without fields
    "81 10",                 # unknown tag
])
def test_undecodable_messages_are_decoder_failures(hex_bytes):
    with pytest.raises((CodecError, ValueError)):
        codec.decode(TopicState.IDLE, bytes.fromhex(hex_bytes.replace(" ", "")))


REQUESTS = {
    MsgSubscribe: (TopicState.SUBSCRIBING, [MsgSubscribed, MsgReject]),
    MsgUnsubscribe: (TopicState.UNSUBSCRIBING, [MsgUnsubscribed, MsgReject]),
    MsgJoin: (TopicState.JOINING, [MsgJoinAck]),
    MsgLeave: (TopicState.LEAVING, [MsgLeaveAck]),
    MsgPull: (TopicState.PULLING, [MsgPullReply, MsgReject]),
    MsgPublish: (TopicState.PUBLISHING, [MsgPublished, MsgReject]),
}
ALL = [type(m) for m, _ in EXAMPLES]


def test_state_table_is_the_specification():
    spec = LOCAL_TOPIC_SUBSCRIPTION
    for request, (state, replies) in REQUESTS.items():
        assert spec.transitions[(TopicState.IDLE, request)] is state
        assert spec.messages_from(state) == frozenset(replies)
    assert spec.next_state(TopicState.IDLE, MsgRequestNext(True, (), 1)) is TopicState.NEXT_BLOCKING
    assert spec.next_state(TopicState.IDLE, MsgRequestNext(False, (), 1)) is TopicState.NEXT_NON_BLOCKING
    assert spec.messages_from(TopicState.NEXT_BLOCKING) == {MsgReplyNext}
    assert spec.is_terminal(TopicState.DONE)
    assert spec.states[TopicState.IDLE].byte_limit == 256 * 1024


@given(st.lists(st.sampled_from([m for m, _ in EXAMPLES]), max_size=12))
def test_only_table_moves_are_allowed(messages):
    """A random sequence: each message is accepted exactly when the table allows it."""
    client = ProtocolMachine(LOCAL_TOPIC_SUBSCRIPTION, Role.CLIENT)
    spec = LOCAL_TOPIC_SUBSCRIPTION
    for message in messages:
        state = client.state
        allowed = (state, type(message)) in spec.transitions
        sender = Role.CLIENT if spec.agency(state).value == "client" else Role.SERVER
        if not allowed:
            with pytest.raises(ProtocolViolation):
                spec.next_state(state, message)
            continue
        if sender is Role.CLIENT:
            client.check_send(message, pipelined=False)
            client.on_send(message, pipelined=False)
        else:
            client.on_receive(message, codec.encode(message))
        if client.done:
            break
