"""A node started by the lab's harness stops on its SIGINT, whatever the harness inherited.

A harness run as a background job of a shell (``cmd &``, nohup) has SIGINT ignored, and a child
inherits that: the real ``dmq-node`` program started from here while this process ignores SIGINT
must still end on :meth:`NodeProcess.stop`'s SIGINT (``ending == "signal"``), not be killed after
its grace.
"""

from __future__ import annotations

import shutil
import signal

import trio

from dmq.ports import free_ports
from lab.devnet.node_process import NodeFiles, NodeProcess

from tests.e2e.conftest import devnet_config
from tests.e2e.messages import DEVNET


async def test_a_node_started_with_sigint_ignored_stops_on_sigint(tmp_path):
    directory = tmp_path / "node"
    directory.mkdir()
    shutil.copyfile(DEVNET / "shelley-genesis.json", directory / "shelley-genesis.json")
    node = NodeProcess(NodeFiles("node", directory, devnet_config(
        LocalAddress="dmq.socket", IPv4="127.0.0.1", PortNumber=free_ports(1)[0]), {"localRoots": [], "publicRoots": []}))
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        await node.start()
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        await node.wait_listening(timeout=60)
    finally:
        await node.stop(grace=60)
    assert node.ending == "signal", node.diagnostics()
