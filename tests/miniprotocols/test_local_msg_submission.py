"""Local message submission (14): the bytes of docs/protocol/local-protocols.md 7, Pallas's strict reason shapes,
Haskell ``show``, and the server and client peers."""

from __future__ import annotations

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from miniprotocols.framework import DecoderFailure, Driver, ProtocolViolation, Role
from miniprotocols.framework import cbor_write as w
from miniprotocols.local_msg_submission import (
    ACCEPTED,
    LOCAL_MSG_SUBMISSION,
    PROTOCOL_NUM,
    InvalidMessageBytes,
    LocalMsgSubmissionClient,
    LocalSubmissionState,
    MsgAcceptMessage,
    MsgDone,
    MsgRejectMessage,
    MsgSubmitMessage,
    RejectAlreadyReceived,
    RejectExpired,
    RejectInvalid,
    RejectOther,
    RejectText,
    serve,
)
from handshake.term_text import haskell_string
from ouroboros_mux.channel import ChannelClosed, memory_channel_pair

from .helpers import h, raw_messages

codec = LOCAL_MSG_SUBMISSION.codec
IDLE, BUSY = LocalSubmissionState.IDLE, LocalSubmissionState.BUSY

reasons = st.one_of(
    st.text().map(RejectInvalid), st.just(RejectAlreadyReceived()), st.just(RejectExpired()), st.text().map(RejectOther)
)


@pytest.fixture
def pallas_message(vectors) -> bytes:
    """A DMQ message exactly as Pallas encodes it (614 bytes, new format)."""
    return h(vectors["pallas_real_bytes_negative"]["new_format"])


def test_no_limits_on_node_to_client():
    assert PROTOCOL_NUM == 14
    for state in LOCAL_MSG_SUBMISSION.states.values():
        assert state.byte_limit is None and state.time_limit is None


def test_wire_small_vectors(vectors):
    small = vectors["wire_small"]
    cases = [
        ("local_submission_accept", BUSY, MsgAcceptMessage()),
        ("local_submission_done", IDLE, MsgDone()),
        ("reject_invalid_InvalidSigId", BUSY, MsgRejectMessage(RejectInvalid("InvalidSigId"))),
        ("reject_already_received", BUSY, MsgRejectMessage(RejectAlreadyReceived())),
        ("reject_expired", BUSY, MsgRejectMessage(RejectExpired())),
        # The vector carries the text exactly as given, without Haskell quotes.
        ("reject_other_custom_error", BUSY, MsgRejectMessage(RejectOther("custom error"))),
    ]
    for key, state, message in cases:
        assert codec.encode(message) == h(small[key]), key
        assert codec.decode(state, h(small[key])) == message, key


def test_wire_examples_of_the_spec():
    assert codec.encode(MsgAcceptMessage()) == h("8101")
    assert codec.encode(MsgDone()) == h("8103")
    assert codec.encode(MsgRejectMessage(RejectAlreadyReceived())) == h("82028101")
    assert codec.encode(MsgRejectMessage(RejectExpired())) == h("82028102")
    # The node's SigResultOther "custom" goes out as Haskell show: with the quotes.
    assert codec.encode(MsgRejectMessage(RejectOther(haskell_string("custom")))) == h("820282036822637573746f6d22")
    assert codec.encode(MsgRejectMessage(RejectInvalid("InvalidSigId"))) == h("820282006c496e76616c69645369674964")


def test_submit_splices_the_message_bytes_unchanged(pallas_message):
    wire = codec.encode(MsgSubmitMessage(pallas_message))
    assert wire == h("8200") + pallas_message
    decoded = codec.decode(IDLE, wire)
    assert decoded.message == pallas_message


def test_non_canonical_message_bytes_survive_decode_and_encode():
    odd = h("83 1800 1a00000001 5f4101ff")  # [0 in 2 bytes, 1 in 5 bytes, indefinite bytes]
    wire = h("8200") + odd
    decoded = codec.decode(IDLE, wire)
    assert decoded.message == odd
    assert codec.encode(decoded) == wire


def test_submit_refuses_bytes_that_are_not_one_item():
    for bad in (h("8201"), h("0101"), b""):
        with pytest.raises(ValueError):
            codec.encode(MsgSubmitMessage(bad))


@pytest.mark.parametrize("reason", [
    "8201" + "60",  # [1, ""]: gouroboros's shape, which Pallas cannot decode
    "9f01ff",  # indefinite
    "8100",  # invalid without text
    "8203" + "4401020304",  # other with bytes instead of text
    "8200" + "7f6161ff",  # indefinite text
    "8104",  # unknown tag
    "80",  # empty
    "820261",  # expired with a second (truncated) item
    "6474657874",  # bare text (Pallas 0.34 shape)
])
def test_reject_reasons_outside_the_strict_shapes_do_not_decode(reason):
    with pytest.raises(ValueError):
        codec.decode(BUSY, h("8202") + h(reason))


def test_a_text_reason_is_written_as_a_bare_text_string():
    """The shape pallas 0.34 decodes, for legacy clients only (the decoder keeps refusing it, above)."""
    assert codec.encode(MsgRejectMessage(RejectText("SigDuplicate"))) == h("8202") + h("6c") + b"SigDuplicate"


@given(st.one_of(
    raw_messages.map(MsgSubmitMessage),
    st.just(MsgAcceptMessage()),
    reasons.map(MsgRejectMessage),
    st.just(MsgDone()),
))
def test_round_trip(message):
    state = IDLE if isinstance(message, (MsgSubmitMessage, MsgDone)) else BUSY
    wire = codec.encode(message)
    assert codec.decode(state, wire) == message
    assert codec.decode_framed(state, wire) == message  # the driver's path


@pytest.mark.parametrize("wire", ["8300f6f6", "8100", "820100", "8203", "8103" + "00", "9f03ff", "820341"])
def test_malformed_envelopes_do_not_decode(wire):
    with pytest.raises(ValueError):
        codec.decode(IDLE, h(wire))


# -- Haskell show ---------------------------------------------------------------------------
# -- the peers ---------------------------------------------------------------------------
class RecordingNode:
    """The node side of ``submit``: records what it was handed, answers from a script."""

    def __init__(self, *verdicts):
        self.verdicts = list(verdicts)
        self.submitted: list[bytes] = []

    async def submit(self, raw: bytes):
        self.submitted.append(raw)
        verdict = self.verdicts.pop(0)
        if isinstance(verdict, Exception):
            raise verdict
        return verdict


async def test_server_fed_pallas_bytes_replies_exact_bytes(pallas_message):
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    node = RecordingNode(ACCEPTED, RejectAlreadyReceived(), RejectOther(haskell_string("custom")))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, server_end, node.submit)
        await client_end.send(h("8200") + pallas_message)
        assert await client_end.recv_message() == h("8101")
        await client_end.send(h("8200") + pallas_message)
        assert await client_end.recv_message() == h("82028101")
        await client_end.send(h("8200") + pallas_message)
        assert await client_end.recv_message() == h("820282036822637573746f6d22")
        await client_end.send(h("8103"))
    assert node.submitted == [pallas_message] * 3


async def test_undecodable_message_closes_without_a_reply(pallas_message):
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    node = RecordingNode(InvalidMessageBytes("legacy format"))
    await client_end.send(h("8200") + pallas_message)
    with pytest.raises(DecoderFailure, match="legacy format") as info:
        await serve(server_end, node.submit)
    assert info.value.raw == pallas_message
    assert isinstance(info.value.__cause__, InvalidMessageBytes)
    await server_end.aclose()
    with pytest.raises(ChannelClosed):
        await client_end.recv_message()  # nothing was written before the close


async def test_malformed_envelope_is_a_decoder_failure():
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    node = RecordingNode()
    await client_end.send(h("8300f6f6"))
    with pytest.raises(DecoderFailure):
        await serve(server_end, node.submit)
    assert node.submitted == []


async def test_client_speaking_out_of_turn_is_a_violation():
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    await client_end.send(h("8101"))
    with pytest.raises(ProtocolViolation):
        await serve(server_end, RecordingNode().submit)


@pytest.mark.parametrize("say_done", [True, False])
async def test_end_of_stream_is_a_normal_end(pallas_message, say_done):
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    node = RecordingNode(ACCEPTED)
    await client_end.send(h("8200") + pallas_message + (h("8103") if say_done else b""))
    await client_end.aclose()
    await serve(server_end, node.submit)  # returns without error
    assert node.submitted == [pallas_message]


async def test_client_and_server_over_memory_channels(pallas_message):
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    node = RecordingNode(ACCEPTED, RejectExpired(), RejectInvalid("InvalidKESSignature"))
    client = LocalMsgSubmissionClient(client_end)
    big = w.head(2, 300_000) + bytes(300_000)  # no byte limit on N2C
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, Driver(server_end, LOCAL_MSG_SUBMISSION, Role.SERVER), node.submit)
        assert await client.submit(pallas_message) is ACCEPTED
        assert await client.submit(pallas_message) == RejectExpired()
        assert await client.submit(big) == RejectInvalid("InvalidKESSignature")
        await client.done()
    assert node.submitted == [pallas_message, pallas_message, big]
    assert client.driver.done


async def test_client_rejects_undecodable_verdicts():
    client_end, server_end = memory_channel_pair(PROTOCOL_NUM)
    client = LocalMsgSubmissionClient(client_end)

    async def bad_node():
        await server_end.recv_message()
        await server_end.send(h("8202820160"))  # [2, [1, ""]]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(bad_node)
        with pytest.raises(DecoderFailure):
            await client.submit(h("f6"))


# -- framed decoding (what the driver uses: the channel has already found the item's end) ----
@pytest.mark.parametrize("wire", ["8200" + "0101", "8200" + "8201", "8200" + "5f41", "8200"])
def test_a_submission_that_is_not_one_item_does_not_decode(wire):
    # The framed shortcut takes the rest of the envelope as the message: only sound for
    # bytes the channel framed, so plain ``decode`` still checks the whole item.
    with pytest.raises(ValueError):
        codec.decode(IDLE, h(wire))
