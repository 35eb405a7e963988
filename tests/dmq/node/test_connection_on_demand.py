"""Protocols started on demand (``ProtocolTask.on_demand``), over a real Unix socket."""

from __future__ import annotations

import gc

import trio

from dmq.connection import ProtocolTask, run_connection
from ouroboros_mux.bearer import Bearer
from ouroboros_mux.mux import Mode, Mux, Role
from tests.ouroboros_mux.streams import raw_sdu, unix_stream_pair

ECHO, IDLE = 14, 15


async def serve_into(ends: list, mux: Mux, tasks: list[ProtocolTask]) -> None:
    """Run the connection of a local client; record how it ended."""
    ends.append(await run_connection(mux, tasks, peer_close_is_clean=True))


async def test_a_protocol_starts_when_its_first_bytes_arrive_and_an_unused_one_never(tmp_path):
    client, server = await unix_stream_pair(tmp_path / "s")
    started: list[int] = []
    mux = Mux(Bearer(server), Role.RESPONDER)
    echo = mux.register(ECHO, Mode.RESPONDER, 1 << 16)
    idle = mux.register(IDLE, Mode.RESPONDER, 1 << 16)

    def speaker(num, channel):
        async def run():
            started.append(num)
            await channel.send(await channel.recv_message())  # one echo, then done
        return run

    tasks = [ProtocolTask(echo, speaker(ECHO, echo), "echo", on_demand=True),
             ProtocolTask(idle, speaker(IDLE, idle), "idle", on_demand=True)]
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            ends = []
            nursery.start_soon(serve_into, ends, mux, tasks)
            await trio.sleep(0.05)
            assert started == []                       # nothing spoken yet: no task at all
            await client.send_all(raw_sdu(ECHO, False, b"\x82\x00\x01"))
            reply = await client.receive_some(100)
            assert reply[4:] == bytes([0x80, ECHO, 0, 3]) + b"\x82\x00\x01"
            await client.aclose()                      # a clean end: the idle one was never needed
    assert started == [ECHO]
    assert ends[-1].clean


async def test_a_protocol_starts_again_after_a_clean_finish_and_leaves_no_cyclic_garbage(tmp_path):
    """A restarted instance answers again, and an ended connection is freed by reference
    counting alone: with a connection per Mithril message, garbage left to the cyclic
    collector costs the node a visible share of its CPU."""
    client, server = await unix_stream_pair(tmp_path / "s")
    mux = Mux(Bearer(server), Role.RESPONDER)
    echo = mux.register(ECHO, Mode.RESPONDER, 1 << 16)
    runs: list[int] = []

    async def echo_once():
        runs.append(len(runs))
        await echo.send(await echo.recv_message())  # one echo, then a clean finish

    tasks = [ProtocolTask(echo, echo_once, "echo", on_demand=True)]
    gc.collect()
    gc.disable()
    try:
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                ends = []
                nursery.start_soon(serve_into, ends, mux, tasks)
                for n in range(3):
                    await client.send_all(raw_sdu(ECHO, False, bytes([0x82, 0x00, n])))
                    reply = await client.receive_some(100)
                    assert reply[8:] == bytes([0x82, 0x00, n])
                await client.aclose()
        assert runs == [0, 1, 2] and ends[-1].clean
        del ends, nursery, tasks, mux, echo, echo_once
        assert gc.collect() == 0
    finally:
        gc.enable()
