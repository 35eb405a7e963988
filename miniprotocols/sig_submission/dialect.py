"""What differs between sig-submission V1 and V2, as data the shared peers read.

Both versions are the same protocol: a pulling peer asks for ids (blocking or not,
acknowledging what it processed) and for bodies, a serving peer answers from its
mempool. They differ only in tags, in which side speaks first and last, and in what a
blocking request may get back (docs/protocol/node-to-node.md 9.3, 9.4):

* V1 (TxSubmission2 wire format): the serving peer opens with ``MsgInit`` and is the
  protocol's client; a blocking request just blocks, and the serving peer may end the
  protocol with ``MsgDone`` in its place.
* V2 (SigSubmissionV2): the pulling peer is the client and ends with ``MsgDone``; a blocking
  request is answered with ``MsgReplyNoSigIds`` after a while if nothing arrives.

The message classes of both versions share field names (``blocking, ack, req`` on id
requests; ``ids`` on id replies and body requests; ``messages`` on body replies), so the
peers build and read them through this record and the window logic is written once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..framework import ProtocolSpec, Role

__all__ = ["Side", "Dialect"]


class Side(enum.Enum):
    """Which job a sig-submission peer does, whatever its protocol role."""

    PULLING = "pulling"  # pulls: asks for ids and bodies, hands them to the node
    SERVING = "serving"  # serves: announces ids from the mempool and sends bodies


@dataclass(frozen=True, eq=False)
class Dialect:
    """One version of the protocol, for the shared peers.

    ``initiator_side`` is the job the connection initiator's instance does (docs/protocol/node-to-node.md 9.1).
    ``reply_no_ids`` is None in V1; ``init`` is None in V2. ``done_by`` names the side
    that may send ``done``: the serving peer in V1 (instead of a blocking reply), the
    pulling peer in V2 (from idle).
    """

    version: int
    spec: ProtocolSpec
    serving_role: Role
    initiator_side: Side
    request_ids: type
    reply_ids: type
    reply_no_ids: type | None
    request_bodies: type
    reply_bodies: type
    init: type | None
    done: type
    done_by: Side

    @property
    def pulling_role(self) -> Role:
        return self.serving_role.peer

    def side_of(self, initiator: bool) -> Side:
        """The job of the local instance: ``initiator`` is True for the initiator instance."""
        if initiator:
            return self.initiator_side
        return Side.SERVING if self.initiator_side is Side.PULLING else Side.PULLING
