"""The node's own numbers for running sig submission (``dmq-node: DMQ/Policy.hs``, docs/protocol/node-to-node.md 9.2).

The numbers a peer can check on the wire (the id window, the byte and time limits) are
the protocol's and live with it (:mod:`miniprotocols.sig_submission.limits`). These are
how this node schedules its own requests and judges replies; they match the reference's
so that the node behaves like it, but no peer depends on them.
"""

from __future__ import annotations

__all__ = ["MAX_BATCHES_IN_FLIGHT", "SIZE_TOLERANCE", "BLOCKING_REPLY_TIMEOUT"]

#: ``maxOutstandingTxBatchesPerPeer``: body requests pipelined at once.
MAX_BATCHES_IN_FLIGHT = 4
#: ``const_MAX_TX_SIZE_DISCREPANCY``: a received message may differ this much from its announced size.
SIZE_TOLERANCE = 32
#: How long the V2 serving peer waits for new ids before replying ``MsgReplyNoSigIds``
#: (under the 20 s limit of the blocking state, ``BLOCKING_STATE_TIME_LIMIT``).
BLOCKING_REPLY_TIMEOUT = 17.0
