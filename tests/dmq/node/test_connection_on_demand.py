"""Protocols started on demand (``ProtocolTask.on_demand``), over a real Unix socket."""

from __future__ import annotations

import gc

import pytest
import trio

from dmq.connection import IdleReaper, ProtocolTask, run_connection
from ouroboros_mux.bearer import Bearer
from ouroboros_mux.mux import Mode, Mux, Provenance
from tests.ouroboros_mux.streams import raw_sdu, unix_stream_pair

ECHO, IDLE = 14, 15


async def serve_into(ends: list, mux: Mux, tasks: list[ProtocolTask]) -> None:
    """Run the connection of a local client; record how it ended."""
    ends.append(await run_connection(mux, tasks, peer_close_is_clean=True))


async def test_a_protocol_starts_when_its_first_bytes_arrive_and_an_unused_one_never(tmp_path):
    client, server = await unix_stream_pair(tmp_path / "s")
    started: list[int] = []
    mux = Mux(Bearer(server), Provenance.INBOUND)
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
    mux = Mux(Bearer(server), Provenance.INBOUND)
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


def _echo_connection(server) -> tuple[Mux, list[ProtocolTask]]:
    mux = Mux(Bearer(server), Provenance.INBOUND)
    echo = mux.register(ECHO, Mode.RESPONDER, 1 << 16)

    async def echo_once():
        await echo.send(await echo.recv_message())

    return mux, [ProtocolTask(echo, echo_once, "echo", on_demand=True)]


async def _ended_within(client, seconds: float) -> bool:
    """Whether the server closed the connection within ``seconds`` (the client saw EOF)."""
    with trio.move_on_after(seconds):
        while await client.receive_some(100):
            pass
        return True
    return False


def _idle_bound(how: str, seconds: float, nursery: trio.Nursery) -> dict:
    """``run_connection``'s arguments for an idle bound of ``seconds``: a timer of the
    connection's own, or a shared :class:`IdleReaper` (its task run in ``nursery``)."""
    if how == "timer":
        return {"idle_timeout": seconds}
    reaper = IdleReaper(seconds)
    nursery.start_soon(reaper.run)
    return {"reaper": reaper}


@pytest.mark.parametrize("how", ["timer", "reaper"])
async def test_with_idle_from_start_a_peer_that_never_speaks_is_released(tmp_path, how):
    client, server = await unix_stream_pair(tmp_path / "s")
    mux, tasks = _echo_connection(server)
    ends: list = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            bound = _idle_bound(how, 0.2, nursery)

            served = trio.Event()

            async def serve() -> None:
                ends.append(await run_connection(mux, tasks, peer_close_is_clean=True, idle_from_start=True, **bound))
                served.set()
            nursery.start_soon(serve)
            started = trio.current_time()
            assert await _ended_within(client, 5)   # nothing spoken: closed by the server
            assert trio.current_time() - started >= 0.15
            await served.wait()
            nursery.cancel_scope.cancel()           # the reaper's task
    assert ends[-1].clean
    if how == "reaper":
        assert len(bound["reaper"]) == 0          # nothing left watched once the connection ended
    await client.aclose()


@pytest.mark.parametrize("how", ["timer", "reaper"])
async def test_with_idle_from_start_the_bound_runs_only_while_nothing_runs(tmp_path, how):
    """Speaking within the bound calls it off; after the instance finishes it runs again."""
    client, server = await unix_stream_pair(tmp_path / "s")
    mux, tasks = _echo_connection(server)
    ends: list = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            bound = _idle_bound(how, 1.0, nursery)

            served = trio.Event()

            async def serve() -> None:
                ends.append(await run_connection(mux, tasks, peer_close_is_clean=True, idle_from_start=True, **bound))
                served.set()
            nursery.start_soon(serve)
            for n in range(4):   # four echoes 0.3 s apart: each well within the bound of the one before
                await trio.sleep(0.3)
                await client.send_all(raw_sdu(ECHO, False, bytes([0x82, 0x00, n])))
                assert (await client.receive_some(100))[8:] == bytes([0x82, 0x00, n])
            assert not ends
            assert await _ended_within(client, 5)   # then silent: released
            await served.wait()
            nursery.cancel_scope.cancel()           # the reaper's task
    assert ends[-1].clean
    await client.aclose()


async def test_without_idle_from_start_a_silent_peer_is_kept_until_it_speaks(tmp_path):
    """Node-to-node links keep the earlier rule: the bound starts once an instance has finished."""
    client, server = await unix_stream_pair(tmp_path / "s")
    mux, tasks = _echo_connection(server)
    ends: list = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            async def serve() -> None:
                ends.append(await run_connection(mux, tasks, peer_close_is_clean=True, idle_timeout=0.1))
            nursery.start_soon(serve)
            assert not await _ended_within(client, 0.5)  # five bounds of silence: still open
            await client.send_all(raw_sdu(ECHO, False, b"\x82\x00\x01"))
            assert (await client.receive_some(100))[8:] == b"\x82\x00\x01"
            assert await _ended_within(client, 5)        # finished, then idle: released
    assert ends[-1].clean
    await client.aclose()
