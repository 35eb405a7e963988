"""Every fatal condition of docs/protocol/mux.md 2.6 that lives in the mux ends the connection, typed."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from ouroboros_mux.bearer import Bearer
from ouroboros_mux.channel import ChannelClosed
from ouroboros_mux.errors import (
    BearerClosed,
    IngressQueueOverRun,
    SDUDecodeError,
    SDUReadTimeout,
    UnknownMiniProtocol,
    WrongDirection,
)
from ouroboros_mux.mux import Mode, Mux, Provenance

from .streams import drain_until_closed, raw_sdu, tcp_stream_pair


async def run_capturing(mux: Mux, outcome: dict) -> None:
    """Run the mux and record how it ended instead of failing the enclosing nursery."""
    try:
        await mux.run()
    except Exception as exc:  # noqa: BLE001 - the outcome is what the test inspects
        outcome["error"] = exc
    else:
        outcome["error"] = None


async def _run_against_raw_peer(mux: Mux, peer: trio.SocketStream, wire: bytes, close_after: bool = True):
    """Run ``mux``, feed it ``wire`` from a raw peer; return (error or None, bytes the mux wrote)."""
    outcome = {}
    with trio.fail_after(10):  # a mux that misses the condition would keep the connection open
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_capturing, mux, outcome)
            await peer.send_all(wire)
            if close_after:
                await peer.send_eof()
            written = await drain_until_closed(peer)
    await peer.aclose()
    return outcome["error"], written


async def _tcp_mux(provenance: Provenance = Provenance.INBOUND) -> tuple[Mux, trio.SocketStream]:
    peer, ours = await tcp_stream_pair()
    return Mux(Bearer(ours), provenance), peer


async def test_unknown_protocol_ends_the_connection_and_wakes_channels():
    mux, peer = await _tcp_mux()
    channel = mux.register(12, Mode.RESPONDER, 1408)
    woken = {}

    async def waiting_protocol():
        with pytest.raises(ChannelClosed, match="connection ended: SDU for mini-protocol 13") as info:
            await channel.recv_message()
        woken["cause"] = info.value.__cause__

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiting_protocol)
        error, written = await _run_against_raw_peer(mux, peer, raw_sdu(13, False, b"\x80"), close_after=False)
    assert isinstance(error, UnknownMiniProtocol)
    assert (error.protocol_num, error.from_responder) == (13, False)
    assert woken["cause"] is error is mux.error
    assert written == b""
    assert mux.bearer.closed and channel.closed
    with pytest.raises(ChannelClosed):
        await channel.send(b"\x80")


@pytest.mark.parametrize(
    ("registered", "sdu_from_responder"),
    [
        (Mode.RESPONDER, True),   # responder-only side gets the peer responder's data (ResponderOnly)
        (Mode.INITIATOR, False),  # initiator-only side gets the peer initiator's data (InitiatorOnly)
    ],
)
async def test_wrong_direction(registered, sdu_from_responder):
    mux, peer = await _tcp_mux()
    mux.register(11, registered, 101640)
    error, _ = await _run_against_raw_peer(mux, peer, raw_sdu(11, sdu_from_responder, b"\x80"), close_after=False)
    assert isinstance(error, WrongDirection)
    assert error.protocol_num == 11 and error.from_responder is sdu_from_responder
    assert "runs no" in str(error)


async def test_zero_length_sdu():
    mux, peer = await _tcp_mux()
    channel = mux.register(11, Mode.RESPONDER, 101640)
    wire = raw_sdu(11, False, b"\x80") + bytes.fromhex("00000000000b0000")
    error, _ = await _run_against_raw_peer(mux, peer, wire, close_after=False)
    assert isinstance(error, SDUDecodeError) and "short SDU" in str(error)
    assert channel.queued_in == 1  # the SDU before the bad one was delivered


async def test_truncated_header_then_end_of_stream():
    mux, peer = await _tcp_mux()
    mux.register(11, Mode.RESPONDER, 101640)
    error, _ = await _run_against_raw_peer(mux, peer, bytes.fromhex("00000000000b00"))
    assert isinstance(error, SDUDecodeError) and "7 of 8" in str(error)


@pytest.mark.parametrize("limit", [1, 1408, 101640])
async def test_ingress_queue_limit_is_exact(limit):
    # Bytes of a message that never completes stay queued: a 0x5a (2-byte length) byte-string head.
    head = b"\x5a\xff\xff\xff\xff"[: min(5, limit)]
    stream = head + bytes(limit - len(head))
    wire = b"".join(raw_sdu(12, False, stream[i:i + 1000]) for i in range(0, limit, 1000))

    mux, peer = await _tcp_mux()
    channel = mux.register(12, Mode.RESPONDER, limit)
    outcome = {}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_capturing, mux, outcome)
        await peer.send_all(wire)
        with trio.fail_after(10):
            while channel.queued_in < limit:
                await trio.sleep(0.001)
        assert mux.running  # exactly at the limit passes
        await peer.send_all(raw_sdu(12, False, b"\x00"))
        with pytest.raises(ChannelClosed) as info, trio.fail_after(10):
            await channel.recv_message()
    error = info.value.__cause__
    assert error is outcome["error"]
    assert isinstance(error, IngressQueueOverRun)
    assert (error.limit, error.queued, error.incoming) == (limit, limit, 1)
    assert f"{limit}-byte limit" in str(error)
    await peer.aclose()


async def test_consumed_messages_free_ingress_room():
    mux, peer = await _tcp_mux()
    channel = mux.register(12, Mode.RESPONDER, 10)
    message = bytes.fromhex("8300191234f5")  # 6 bytes: [0, 4660, true]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        for _ in range(5):
            await peer.send_all(raw_sdu(12, False, message))
            assert await channel.recv_message() == message
        assert mux.running and channel.queued_in == 0
        mux.stop()
    await peer.aclose()


async def test_sdu_read_timeout_is_30_seconds_once_the_mux_runs(autojump_clock):
    peer, ours = trio.testing.memory_stream_pair()
    bearer = Bearer(ours)
    assert bearer.sdu_timeout == 10.0
    mux = Mux(bearer, Provenance.OUTBOUND)
    mux.register(12, Mode.INITIATOR, 1408)
    await peer.send_all(raw_sdu(12, True, b"\x82\x01\x02")[:9])
    start = trio.current_time()
    with pytest.raises(SDUReadTimeout, match="within 30 s: 9 bytes of 11"):
        await mux.run()
    assert bearer.sdu_timeout == 30.0
    assert trio.current_time() - start == pytest.approx(30.0)


async def test_idle_connection_does_not_time_out(autojump_clock):
    peer, ours = trio.testing.memory_stream_pair()
    mux = Mux(Bearer(ours), Provenance.OUTBOUND)
    channel = mux.register(12, Mode.INITIATOR, 1408)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        await trio.sleep(3600)
        await peer.send_all(raw_sdu(12, True, b"\x82\x01\x02"))
        assert await channel.recv_message() == b"\x82\x01\x02"
        channel.finish()
        await peer.aclose()
    assert mux.error is None


async def test_peer_close_while_a_protocol_runs_is_bearer_closed():
    mux, peer = await _tcp_mux()
    finished = mux.register(11, Mode.RESPONDER, 101640)
    mux.register(12, Mode.RESPONDER, 1408)
    finished.finish()
    await peer.aclose()
    with pytest.raises(BearerClosed, match=r"mini-protocols 12 \(responder\) were still running"):
        await mux.run()
    assert mux.bearer.closed


async def test_peer_close_after_every_protocol_finished_is_clean():
    mux, peer = await _tcp_mux(Provenance.OUTBOUND)
    channel = mux.register(12, Mode.INITIATOR, 1408)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        await peer.send_all(raw_sdu(12, True, b"\x81\x02"))
        assert await channel.recv_message() == b"\x81\x02"
        channel.finish()
        await peer.aclose()
    assert mux.error is None and mux.bearer.closed
    with pytest.raises(ChannelClosed, match="connection closed"):
        await channel.recv_message()


async def test_stop_flushes_what_was_sent_then_closes():
    mux, peer = await _tcp_mux()
    channel = mux.register(14, Mode.RESPONDER, 0xFFFFFFFF)
    payload = bytes(range(256)) * 200  # 51200 bytes: five SDUs
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        await channel.send(payload)
        mux.stop()
        written = await drain_until_closed(peer)
    assert mux.error is None
    sdus = []
    while written:
        assert written[4:6] == b"\x80\x0e"
        length = int.from_bytes(written[6:8], "big")
        sdus.append(written[8:8 + length])
        written = written[8 + length:]
    assert [len(s) for s in sdus] == [12288, 12288, 12288, 12288, 2048]
    assert b"".join(sdus) == payload
    await peer.aclose()


async def test_cancelling_the_owner_closes_bearer_and_channels():
    mux, peer = await _tcp_mux()
    channel = mux.register(12, Mode.RESPONDER, 1408)
    with trio.move_on_after(0.05):
        await mux.run()
    assert mux.bearer.closed and channel.closed and mux.error is None
    assert await drain_until_closed(peer) == b""
    await peer.aclose()


def test_register_rules():
    peer, ours = trio.testing.memory_stream_pair()
    mux = Mux(Bearer(ours), "inbound")
    mux.register(11, Mode.INITIATOR, 101640)
    mux.register(11, "responder", 101640)  # duplex: both instances of one number
    with pytest.raises(ValueError, match="already registered as initiator"):
        mux.register(11, Mode.INITIATOR, 5)
    with pytest.raises(ValueError, match="outside 0..32767"):
        mux.register(0x8000, Mode.INITIATOR, 5)
    with pytest.raises(ValueError, match="must be positive"):
        mux.register(12, Mode.INITIATOR, 0)
    assert sorted((c.protocol_num, c.mode.value) for c in mux.channels) == [(11, "initiator"), (11, "responder")]
