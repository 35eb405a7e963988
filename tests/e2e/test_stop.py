"""Stopping ``dmq-node`` the way service managers do: SIGTERM is a clean stop, not a crash."""

from __future__ import annotations

import signal

from tests.e2e.messages import DMQ_DEVNET_MAGIC as MAGIC
from tests.e2e.raw_n2c import ACCEPT, REJECT_ALREADY_RECEIVED, publish_like_mithril_signer


async def test_sigterm_stops_cleanly_and_keeps_what_was_acknowledged(start_node, signers):
    node = start_node()
    message = signers[0].sign()
    assert await publish_like_mithril_signer(node.socket_path, MAGIC, message.raw) == ACCEPT

    node.kill(signal.SIGTERM)
    assert node.process.returncode == 0, node.diagnostics()
    assert [event["reason"] for event in node.trace_events("NodeStopped")] == ["stopped"]
    assert "Traceback" not in node.stderr_path.read_text()

    node.start()
    assert await publish_like_mithril_signer(node.socket_path, MAGIC, message.raw) == REJECT_ALREADY_RECEIVED
