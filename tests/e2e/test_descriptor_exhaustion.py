"""A node out of file descriptors keeps running and serves again once clients leave.

Mithril signers of a round connect within moments of each other; a node whose descriptor
limit is reached must not die or spin: its accept loop waits and retries (``EMFILE``), the
connections already open finish, and every queued client is served afterwards.
"""

from __future__ import annotations

import socket
import sys

import trio

from tests.e2e.conftest import DEVNET, devnet_config
from tests.e2e.messages import DMQ_DEVNET_MAGIC as MAGIC
from tests.e2e.node_process import NodeProcess
from tests.e2e.raw_n2c import ACCEPT, publish_like_mithril_signer

#: Enough for the node's own files and sockets plus a few clients, far fewer than the clients below.
DESCRIPTOR_LIMIT = 48
CLIENTS = 80

_LIMITED = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, ({0}, {0})); "
            "os.execv(sys.executable, [sys.executable, '-m', 'dmq.cli.node', *sys.argv[1:]])")


class DescriptorLimitedNode(NodeProcess):
    """The node program with a hard limit on its open files."""

    def command(self) -> list[str]:
        return [sys.executable, "-c", _LIMITED.format(DESCRIPTOR_LIMIT), *super().command()[3:]]


async def test_a_node_out_of_descriptors_serves_every_client_once_others_leave(tmp_path, signers):
    workdir = tmp_path / "node"
    workdir.mkdir()
    (workdir / "shelley-genesis.json").write_bytes((DEVNET / "shelley-genesis.json").read_bytes())
    node = DescriptorLimitedNode(workdir, devnet_config(), ("--min-sig-delay", "0")).start()
    idle: list[socket.socket] = []
    try:
        for _ in range(CLIENTS):  # connected and silent: each one the node accepts holds a descriptor
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(str(node.socket_path))
            idle.append(client)
        await trio.sleep(1.0)  # the node has run out of descriptors and is waiting to retry
        assert node.process.poll() is None, f"the node died out of descriptors: {_output(node)}"

        late = signers[0].sign()
        async with trio.open_nursery() as nursery:
            replies = []

            async def publish() -> None:
                replies.append(await publish_like_mithril_signer(node.socket_path, MAGIC, late.raw))

            nursery.start_soon(publish)  # queued behind the idle clients
            await trio.sleep(0.5)
            assert not replies, "served although the node had no descriptor left"
            for client in idle:
                client.close()
        assert replies == [ACCEPT], _output(node)
        assert node.process.poll() is None, _output(node)
        stderr = node.stderr_path.read_text()
        assert "Traceback" not in stderr, stderr
        assert node.trace_events("MessageAccepted")
    finally:
        for client in idle:
            client.close()
        node.kill()


def _output(node: NodeProcess) -> str:
    """The node's standard error and last log lines, for a failure report."""
    log = node.log_path.read_text(errors="replace").splitlines()[-5:]
    return f"stderr: {node.stderr_path.read_text(errors='replace')[-2000:]!r}; last log lines: {log}"
