"""The tests' scripted peer: :class:`lab.netlab.peer.ScriptedPeer` on the test network's
loopback address and magic, speaking exactly the one node-to-node version under test."""

from __future__ import annotations

from lab.netlab.peer import ScriptedPeer, open_side

from .network import HOST, MAGIC

__all__ = ["Rogue", "open_side"]


class Rogue(ScriptedPeer):
    """One hand-driven connection to ``port`` on the test host speaking node-to-node ``version``."""

    def __init__(self, port: int, version: int, *, peer_sharing: bool = False, initiator_only: bool = False,
                 magic: int = MAGIC) -> None:
        super().__init__(HOST, port, version, magic=magic, peer_sharing=peer_sharing, initiator_only=initiator_only)
