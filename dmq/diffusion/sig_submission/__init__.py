"""The node's side of sig submission: the peers' logic, their windows, the shared claims.

:mod:`miniprotocols.sig_submission` defines the protocol (messages, codecs, state tables,
limits, errors, the per-version :class:`~miniprotocols.sig_submission.Dialect`); this
package decides what to do with it, as the reference node's ``TxSubmission`` inbound and
outbound do beside its ``Protocol.TxSubmission2``: which announced ids to fetch, how many
requests to pipeline, how to serve the mempool, and which peer owns an id in flight. The
node plugs in through :class:`SigSource` (serving) and :class:`SigSink` (pulling), all
pulling peers sharing one :class:`InFlightRegistry`.
"""

from .pulling import PullingPeer
from .pull_window import BodiesOutcome, BodyBatch, PullWindow
from .inflight import ClaimingSink, InFlightRegistry
from .interfaces import DisconnectPeer, SigSink, SigSource
from .known_held import KnownHeld
from .serving import ServingPeer
from .serve_window import ServeWindow
from .policy import BLOCKING_REPLY_TIMEOUT, MAX_BATCHES_IN_FLIGHT, SIZE_TOLERANCE

__all__ = [
    "MAX_BATCHES_IN_FLIGHT",
    "SIZE_TOLERANCE",
    "BLOCKING_REPLY_TIMEOUT",
    "SigSource",
    "SigSink",
    "DisconnectPeer",
    "InFlightRegistry",
    "ClaimingSink",
    "KnownHeld",
    "ServeWindow",
    "PullWindow",
    "BodyBatch",
    "BodiesOutcome",
    "ServingPeer",
    "PullingPeer",
]
