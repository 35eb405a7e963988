"""What every catch-up test checks of a node's log: it caught up without punishing anyone.

A node that starts empty, restarts or comes back from a partition receives its peers' backlog
all at once. With honest traffic nothing of it may be refused in a way that disconnects the
peer, and nothing may be logged at error level (docs/protocol/validation.md 6.2).
"""

from __future__ import annotations

from tests.e2e.node_process import NodeProcess

__all__ = ["assert_caught_up_cleanly"]


def assert_caught_up_cleanly(node: NodeProcess) -> None:
    """No error-level line and no refusal that disconnects a peer in ``node``'s current log."""
    events = node.log_events()
    errors = [f"{e.ns}: {e.data}" for e in events if e.sev == "Error"]
    assert not errors, f"{node.workdir.name} logged errors for honest traffic:\n" + "\n".join(errors[:5])
    punished = [e.data for e in events if e.kind == "MessageRejected" and e.data.get("reaction") == "disconnect"]
    assert not punished, f"{node.workdir.name} disconnected a peer for honest traffic: {punished[:3]}"

