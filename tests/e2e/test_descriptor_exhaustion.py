"""Local connections cannot pile up, and running out of descriptors is never silent.

A local connection with no mini-protocol instance running is closed after ``LocalIdleTimeout``
(docs/protocol/local-protocols.md 7.4): one left open after MsgDone (Mithril's publisher), one
that completes the handshake and never speaks, one that never completes the handshake. A
notification client is never cut, however long it waits on a blocking request or between
requests. A node that runs out of descriptors anyway keeps running, says so once per episode
(``DescriptorsExhausted``, the ``server_descriptorsExhausted`` counter) and serves again once
the idle bound has released the connections that held them, without their clients doing
anything.

Every node here is a real ``dmq-node`` process; every wait is for an event (a log line, the
socket closing, a reply), with generous deadlines.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import time
import urllib.request
from pathlib import Path

import trio

from dmq.ports import free_ports
from tests.e2e.conftest import DEVNET, devnet_config
from tests.e2e.messages import DMQ_DEVNET_MAGIC as MAGIC
from tests.e2e.node_process import NodeProcess
from tests.e2e.raw_n2c import (ACCEPT, RawN2CClient, blocking_reply, non_blocking_reply,
                               publish_like_mithril_signer)

__all__ = ["DescriptorLimitedNode", "open_descriptors", "wait_for_event"]

#: Enough for the node's own files and sockets plus a few clients, far fewer than the clients below.
DESCRIPTOR_LIMIT = 48
CLIENTS = 80
#: Short, so that the tests are; long enough that a client on a busy machine speaks within it.
IDLE = 1.0
#: Deadline of any wait for the node (a busy machine is slow, never this slow).
PATIENCE = 30.0

_LIMITED = ("import os, resource, sys; hard = {1} or resource.getrlimit(resource.RLIMIT_NOFILE)[1]; "
            "resource.setrlimit(resource.RLIMIT_NOFILE, ({0}, hard)); "
            "os.execv(sys.executable, [sys.executable, '-m', 'dmq.cli.node', *sys.argv[1:]])")


class DescriptorLimitedNode(NodeProcess):
    """The node program with soft and hard ``nofile`` limits of ``limit`` (so it cannot raise
    them); with ``hard_limit`` 0, only the soft one is set and the hard one is left as it is."""

    limit: int = DESCRIPTOR_LIMIT
    hard_limit: int | None = None   # None: the same as ``limit``

    def command(self) -> list[str]:
        hard = self.limit if self.hard_limit is None else self.hard_limit
        return [sys.executable, "-c", _LIMITED.format(self.limit, hard), *super().command()[3:]]


class SoftLimitedNode(DescriptorLimitedNode):
    """Started with a soft limit below the hard one, as a shell's default (1,024) often is."""

    limit = 64
    hard_limit = 0


def open_descriptors(pid: int) -> int:
    """How many descriptors process ``pid`` holds."""
    return len(os.listdir(f"/proc/{pid}/fd"))


async def wait_for_event(node: NodeProcess, kind: str, count: int = 1, timeout: float = PATIENCE) -> list[dict]:
    """Until the node's log holds ``count`` events of ``kind``; their data."""
    deadline = trio.current_time() + timeout
    while len(events := node.trace_events(kind)) < count:
        node.check_running()
        if trio.current_time() > deadline:
            raise AssertionError(f"{len(events)} of {count} {kind} events in {timeout} s; {node.diagnostics()}")
        await trio.sleep(0.02)
    return events


def _start(tmp_path: Path, node_class: type[NodeProcess] = NodeProcess, **config) -> NodeProcess:
    workdir = tmp_path / "node"
    workdir.mkdir()
    (workdir / "shelley-genesis.json").write_bytes((DEVNET / "shelley-genesis.json").read_bytes())
    return node_class(workdir, devnet_config(**config), ("--min-sig-delay", "0")).start()


async def _closed_by_node(client: RawN2CClient) -> float:
    """Wait until the node closes ``client``'s connection; the seconds it took."""
    started = trio.current_time()
    with trio.fail_after(PATIENCE):
        await client.read_until_closed()
    return trio.current_time() - started


async def test_connections_with_nothing_running_are_released_after_the_idle_bound(tmp_path, signers):
    node = _start(tmp_path, LocalIdleTimeout=IDLE)
    try:
        await wait_for_event(node, "ConnectionClosed")  # the start-up probe's connection
        baseline = open_descriptors(node.pid)
        # Mithril's publisher: handshake, submit, MsgDone, and the socket left open.
        after_done = await RawN2CClient.connect(node.socket_path)
        await after_done.handshake(MAGIC)
        assert await after_done.submit(signers[0].sign().raw) == ACCEPT
        await after_done.submission_done()
        # A client that completes the handshake and never speaks.
        silent = await RawN2CClient.connect(node.socket_path)
        await silent.handshake(MAGIC)
        # A client that connects and never even proposes a version.
        mute = await RawN2CClient.connect(node.socket_path)
        await trio.sleep(0)
        held = []
        async with trio.open_nursery() as nursery:
            async def closed(client: RawN2CClient) -> None:
                held.append(await _closed_by_node(client))
            for client in (after_done, silent, mute):
                nursery.start_soon(closed, client)
        # Released by the node (the clients did nothing), and not before the bound.
        assert len(held) == 3 and min(held) >= IDLE * 0.8, held
        ends = [event["error"] for event in await wait_for_event(node, "ConnectionClosed", 4)][1:]
        assert ends.count(None) == 2, ends                  # the two running connections: clean, idle ends
        assert [end for end in ends if end is not None] == [f"handshake: not completed within {IDLE:g} s"]
        for client in (after_done, silent, mute):
            await client.aclose()
        # Every descriptor the three held is back (give the node a moment to close its ends).
        deadline = time.monotonic() + PATIENCE
        while open_descriptors(node.pid) > baseline and time.monotonic() < deadline:
            await trio.sleep(0.02)
        assert open_descriptors(node.pid) <= baseline
    finally:
        node.kill()


async def test_a_notification_client_waiting_longer_than_the_bound_is_never_cut(tmp_path, signers):
    node = _start(tmp_path, LocalIdleTimeout=IDLE)
    try:
        first, second = signers[0].sign(), signers[1].sign()
        assert await publish_like_mithril_signer(node.socket_path, MAGIC, first.raw) == ACCEPT
        async with await RawN2CClient.connect(node.socket_path) as blocking, \
                await RawN2CClient.connect(node.socket_path) as polling:
            for client in (blocking, polling):
                await client.handshake(MAGIC)
            assert await blocking.request(blocking=True) == blocking_reply([first.raw])
            assert await polling.request(blocking=False) == non_blocking_reply([first.raw], False)
            replies = []
            async with trio.open_nursery() as nursery:
                async def wait_blocking() -> None:
                    replies.append(await blocking.request(blocking=True))  # outstanding for 3 bounds
                nursery.start_soon(wait_blocking)
                # Three bounds with a blocking request outstanding on one connection, and
                # nothing outstanding between two requests on the other: neither is cut.
                await trio.sleep(3 * IDLE)
                assert await publish_like_mithril_signer(node.socket_path, MAGIC, second.raw) == ACCEPT
            # Both answered on the connections they opened before (a cut one raises ConnectionLost).
            assert replies == [blocking_reply([second.raw])]
            assert await polling.request(blocking=False) == non_blocking_reply([second.raw], False)
    finally:
        node.kill()


def _exhausted_counter(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        page = reply.read().decode()
    match = re.search(r'^dmq_node_server_descriptorsExhausted_counter\{link="n2c"\} (\S+)$', page, re.M)
    assert match, page
    return int(float(match.group(1)))


async def test_out_of_descriptors_the_node_says_so_once_and_serves_again_when_idle_ones_are_released(
        tmp_path, signers):
    """Clients that connect and never speak use up the node's descriptors. The node keeps running,
    traces each episode once (it retries ten times a second), counts it, and once the idle bound
    has closed those connections (their clients still holding them open) it serves a
    publisher queued behind them."""
    (port,) = free_ports(1)
    node = _start(tmp_path, DescriptorLimitedNode, LocalIdleTimeout=IDLE, PrometheusPort=port)
    idle: list[socket.socket] = []
    try:
        [limit] = await wait_for_event(node, "DescriptorLimit")
        assert (limit["soft"], limit["hard"]) == (DESCRIPTOR_LIMIT, DESCRIPTOR_LIMIT)
        assert _exhausted_counter(port) == 0
        for _ in range(CLIENTS):  # connected and silent: each one the node accepts holds a descriptor
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(str(node.socket_path))
            idle.append(client)
        [exhausted] = await wait_for_event(node, "DescriptorsExhausted")
        assert exhausted["link"] == "n2c" and exhausted["error"] == "EMFILE" and exhausted["limit"] == DESCRIPTOR_LIMIT
        late = signers[0].sign()
        with trio.fail_after(PATIENCE):
            # Queued behind the silent clients; served once the bound releases them.
            assert await publish_like_mithril_signer(node.socket_path, MAGIC, late.raw) == ACCEPT
        # Each episode is traced once when it begins and once when an accept succeeds again
        # (the late publisher was accepted after the last one began), and counted once,
        # however many retries it took: the silent clients queued behind the first ones may
        # fill the descriptors again when those are released, a second episode.
        exhausted = node.trace_events("DescriptorsExhausted")
        available = await wait_for_event(node, "DescriptorsAvailable", len(exhausted))
        kinds = [e.kind for e in node.log_events() if e.kind in ("DescriptorsExhausted", "DescriptorsAvailable")]
        assert kinds == ["DescriptorsExhausted", "DescriptorsAvailable"] * len(exhausted), kinds
        assert sum(event["retries"] for event in available) > len(exhausted)
        assert _exhausted_counter(port) == len(exhausted)
        assert {(e.ns, e.sev) for e in node.log_events("DescriptorsExhausted")} == {
            ("Net.Server.Local.AcceptError", "Warning")}
        assert node.running
        stderr = node.stderr_path.read_text()
        assert "Traceback" not in stderr, stderr
        assert node.trace_events("MessageAccepted")
    finally:
        for client in idle:
            client.close()
        node.kill()


async def test_the_node_raises_its_soft_descriptor_limit_to_the_hard_one(tmp_path):
    node = _start(tmp_path, SoftLimitedNode)
    try:
        [limit] = await wait_for_event(node, "DescriptorLimit")
        with open(f"/proc/{node.pid}/limits") as limits:
            line = next(line for line in limits if line.startswith("Max open files"))
        soft, hard = (int(value) for value in line.split()[3:5])
        assert hard > SoftLimitedNode.limit, "this machine's hard limit leaves nothing to raise"
        assert soft == hard == limit["soft"] == limit["hard"]
        assert limit["raised_from"] == SoftLimitedNode.limit
    finally:
        node.kill()
