"""A terminated mini-protocol stays terminated as far as the mux alone is concerned (docs/protocol/mux.md 2.3).

The mux starts a protocol on demand only when the layer above asks it to (``on_data``), once
per request. After ``finish()`` the peer's further bytes for that protocol wake nothing: they
stay queued and count against the ingress limit, and the connection lives on. Starting a new
instance is the decision of the layer above (the node's inbound-governor role), which asks
again; then the queued bytes start it at once.
"""

from __future__ import annotations

import pytest
import trio

from ouroboros_mux.bearer import Bearer
from ouroboros_mux.errors import IngressQueueOverRun
from ouroboros_mux.mux import Mode, Mux, Provenance

from .streams import raw_sdu, tcp_stream_pair

PROTOCOL, LIMIT = 12, 64


async def _wait_for(predicate) -> None:
    with trio.fail_after(5):
        while not predicate():
            await trio.sleep(0.01)


async def test_a_finished_protocol_is_not_started_again_by_the_mux():
    peer, ours = await tcp_stream_pair()
    mux = Mux(Bearer(ours), Provenance.INBOUND)
    channel = mux.register(PROTOCOL, Mode.RESPONDER, LIMIT)
    other = mux.register(PROTOCOL + 1, Mode.RESPONDER, LIMIT)
    starts: list[int] = []
    channel.on_data(lambda: starts.append(channel.queued_in))
    errors: list[BaseException] = []

    async def run_mux() -> None:
        try:
            await mux.run()
        except Exception as exc:  # noqa: BLE001 - the test inspects how the connection ended
            errors.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_mux)
        await peer.send_all(raw_sdu(PROTOCOL, False, b"\x81\x00"))
        await _wait_for(lambda: starts)
        assert starts == [2]  # started once, with the first bytes already queued
        assert await channel.recv_message() == b"\x81\x00"
        channel.finish()

        # The peer speaks the protocol again: the mux queues the bytes and starts nothing.
        await peer.send_all(raw_sdu(PROTOCOL, False, b"\x81\x01"))
        await _wait_for(lambda: channel.queued_in == 2)
        await trio.sleep(0.05)
        assert starts == [2] and channel.finished and mux.running
        # The connection lives on for the others.
        await peer.send_all(raw_sdu(PROTOCOL + 1, False, b"\x81\x02"))
        assert await other.recv_message() == b"\x81\x02"

        # Only when asked again is a new instance started: at once, the bytes being here.
        channel.on_data(lambda: starts.append(channel.queued_in))
        assert starts == [2, 2] and not channel.finished
        assert await channel.recv_message() == b"\x81\x01"
        nursery.cancel_scope.cancel()
    assert errors == []


async def test_bytes_for_a_finished_protocol_still_count_against_its_ingress_limit():
    peer, ours = await tcp_stream_pair()
    mux = Mux(Bearer(ours), Provenance.INBOUND)
    channel = mux.register(PROTOCOL, Mode.RESPONDER, LIMIT)
    channel.finish()
    await peer.send_all(raw_sdu(PROTOCOL, False, bytes(LIMIT)) + raw_sdu(PROTOCOL, False, b"\x00"))
    with trio.fail_after(5), pytest.raises(IngressQueueOverRun):
        await mux.run()


async def test_a_closed_channel_is_never_started():
    peer, ours = await tcp_stream_pair()
    mux = Mux(Bearer(ours), Provenance.INBOUND)
    channel = mux.register(PROTOCOL, Mode.RESPONDER, LIMIT)
    channel.finish()
    await peer.aclose()
    with trio.fail_after(5):
        await mux.run()  # every channel finished: the peer's close is clean
    assert channel.closed
    started: list[bool] = []
    channel.on_data(lambda: started.append(True))
    assert started == []
