"""Hostile bytes: any input ends one connection with a value or a typed error, never more."""

from __future__ import annotations

import trio
from hypothesis import event, given, settings, strategies as st

from ouroboros_mux.bearer import Bearer, connect_tcp
from ouroboros_mux.channel import ChannelClosed, MalformedMessage, MessageTooLarge
from ouroboros_mux.errors import BearerClosed, MuxError
from ouroboros_mux.mux import Mode, Mux, Provenance

from .cbor_messages import messages
from .streams import drain_until_closed, raw_sdu

#: What the protocol layer may raise on bad bytes (it then ends the connection by raising).
PROTOCOL_ERRORS = (MalformedMessage, MessageTooLarge)
SERVER_CHANNELS = [(11, Mode.RESPONDER, 101_640), (11, Mode.INITIATOR, 101_640), (12, Mode.RESPONDER, 1_408)]


async def _echo(channel) -> None:
    """A stand-in mini-protocol: returns every message to the sender."""
    try:
        while True:
            await channel.send(await channel.recv_message(max_size=channel.ingress_limit))
    except ChannelClosed:
        return


async def _serve_connection(stream: trio.SocketStream, outcomes: list) -> None:
    """One connection's nursery: its mux and its protocols; errors stay inside it."""
    mux = Mux(Bearer(stream), Provenance.INBOUND)
    channels = [mux.register(*spec) for spec in SERVER_CHANNELS]
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(mux.run)
            for channel in channels:
                nursery.start_soon(_echo, channel)
    except* (MuxError, *PROTOCOL_ERRORS) as group:
        outcomes.append(group.exceptions[0])
    else:
        outcomes.append(None)
    assert mux.bearer.closed and all(channel.closed for channel in channels)


def _valid_wire(msgs: list[bytes]) -> bytes:
    blob = b"".join(msgs)
    return b"".join(raw_sdu(11, False, blob[i:i + 5000]) for i in range(0, len(blob), 5000))


hostile_wire = st.one_of(
    st.binary(min_size=1, max_size=3000),
    # A valid stream cut anywhere, possibly inside a header.
    st.tuples(st.lists(messages, min_size=1, max_size=3).map(_valid_wire), st.floats(0, 1)).map(
        lambda t: t[0][: max(1, int(len(t[0]) * t[1]))]),
    # Well-formed headers with any protocol number, direction and length, and random payloads.
    st.lists(st.tuples(st.integers(0, 0x7FFF), st.booleans(), st.binary(min_size=1, max_size=300)),
             min_size=1, max_size=5).map(lambda sdus: b"".join(raw_sdu(*s) for s in sdus)),
    # Valid headers around bytes that are not CBOR.
    st.binary(min_size=1, max_size=300).map(lambda b: raw_sdu(12, False, b"\xff" + b)),
)


@settings(max_examples=40, deadline=None)
@given(wire=hostile_wire)
async def test_hostile_bytes_end_only_their_own_connection(wire):
    outcomes: list = []
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as server:
        server.start_soon(trio.serve_listeners, lambda s: _serve_connection(s, outcomes), listeners)

        # A well-behaved client connects first and stays open through the attack.
        good = Mux(await connect_tcp("127.0.0.1", port), Provenance.OUTBOUND)
        good_channel = good.register(11, Mode.INITIATOR, 101_640)
        async with trio.open_nursery() as client:
            client.start_soon(good.run)
            await good_channel.send(b"\x82\x00\x01")
            assert await good_channel.recv_message() == b"\x82\x00\x01"

            bad = await trio.open_tcp_stream("127.0.0.1", port)
            await bad.send_all(wire)
            await bad.send_eof()
            with trio.fail_after(5):
                await drain_until_closed(bad)  # the server closes the hostile connection
            await bad.aclose()
            with trio.fail_after(5):
                while not outcomes:
                    await trio.sleep(0.001)

            # The good connection is unaffected: another round trip, with a message spanning SDUs.
            big = b"\x5a" + (40_000).to_bytes(4, "big") + bytes(40_000)
            await good_channel.send(big)
            assert await good_channel.recv_message() == big
            assert good.running
            good_channel.finish()
            good.stop()
        with trio.fail_after(5):
            while len(outcomes) < 2:
                await trio.sleep(0.001)
        server.cancel_scope.cancel()
    assert good.error is None
    [outcome, *rest] = outcomes
    event(f"hostile connection ended by {type(outcome).__name__}")
    assert outcome is None or isinstance(outcome, (MuxError, *PROTOCOL_ERRORS))
    # The server saw the good client leave while its protocols still ran: an ordinary peer close.
    assert [type(e) for e in rest] == [BearerClosed]
