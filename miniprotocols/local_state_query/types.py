"""Local state query (mini-protocol 7): states, messages and the state table.

The DMQ node runs only the client side, against cardano-node's node-to-client socket: it
acquires a ledger state (the volatile tip), asks queries about it and releases it. Queries
and results are CBOR items whose meaning belongs to the ledger (the hard-fork combinator
envelope, the era, the Shelley query tag); the protocol carries them as exact raw bytes
and :mod:`.queries` / :mod:`.results` give them types. No byte or time limits, as on every
node-to-client link of the reference.
(``ouroboros-network: Ouroboros/Network/Protocol/LocalStateQuery/{Type,Codec}.hs``;
``docs/protocol/cddl/local-state-query.cddl``; docs/protocol/cardano-node-link.md 10.1.)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..framework import Agency, ProtocolState, StateSpec
from ..framework import cbor_write as w

__all__ = [
    "PROTOCOL_NUM",
    "INGRESS_LIMIT",
    "LocalStateQueryState",
    "AcquireFailure",
    "SpecificPoint",
    "VolatileTip",
    "ImmutableTip",
    "AcquireTarget",
    "VOLATILE_TIP",
    "IMMUTABLE_TIP",
    "ORIGIN",
    "block_point",
    "MsgAcquire",
    "MsgAcquired",
    "MsgFailure",
    "MsgQuery",
    "MsgResult",
    "MsgRelease",
    "MsgReAcquire",
    "MsgDone",
    "LocalStateQueryMessage",
    "STATES",
    "TRANSITIONS",
]

PROTOCOL_NUM = 7
#: Ingress limit of protocol 7 on the cardano-node link (``maxBound :: Word32``, docs/protocol/mux.md 2.4):
#: a stake snapshot of every mainnet pool is far larger than any node-to-node limit.
INGRESS_LIMIT = 0xFFFFFFFF


class LocalStateQueryState(ProtocolState):
    IDLE = "StIdle"
    ACQUIRING = "StAcquiring"
    ACQUIRED = "StAcquired"
    QUERYING = "StQuerying"
    DONE = "StDone"


class AcquireFailure(enum.IntEnum):
    """Why the server could not acquire the requested point (``[2, failure]``)."""

    POINT_TOO_OLD = 0
    POINT_NOT_ON_CHAIN = 1

    @property
    def reference_name(self) -> str:
        """The constructor name the reference prints (``AcquireFailurePointTooOld``)."""
        return "AcquireFailurePointTooOld" if self is AcquireFailure.POINT_TOO_OLD else "AcquireFailurePointNotOnChain"


# -- what to acquire ------------------------------------------------------------------------

#: The point of the chain's origin, ``[]``.
ORIGIN = b"\x80"


def block_point(slot: int, header_hash: bytes) -> bytes:
    """The point ``[slot, headerHash]`` as the reference encodes it."""
    if len(header_hash) != 32:
        raise ValueError(f"a Cardano header hash is 32 bytes, got {len(header_hash)}")
    return w.array_header(2) + w.uint(slot) + w.head(2, len(header_hash)) + header_hash


@dataclass(frozen=True, slots=True)
class SpecificPoint:
    """A point on the chain, kept as its raw CBOR (``[]`` or ``[slot, hash]``)."""

    point: bytes

    def __post_init__(self) -> None:
        w.check_item(self.point, "point")


@dataclass(frozen=True, slots=True)
class VolatileTip:
    """The tip of the node's current chain (may still roll back)."""


@dataclass(frozen=True, slots=True)
class ImmutableTip:
    """The tip of the immutable part of the chain (k blocks back)."""


AcquireTarget = SpecificPoint | VolatileTip | ImmutableTip
VOLATILE_TIP = VolatileTip()
IMMUTABLE_TIP = ImmutableTip()


# -- messages -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MsgAcquire:
    """``[0, point]`` / ``[8]`` / ``[10]``: acquire a ledger state."""

    target: AcquireTarget = VOLATILE_TIP


@dataclass(frozen=True, slots=True)
class MsgAcquired:
    """``[1]``: the state is acquired; queries may follow."""


@dataclass(frozen=True, slots=True)
class MsgFailure:
    """``[2, failure]``: the point could not be acquired; back to idle."""

    failure: AcquireFailure


@dataclass(frozen=True, slots=True)
class MsgQuery:
    """``[3, query]``: one query, as raw CBOR."""

    query: bytes

    def __post_init__(self) -> None:
        w.check_item(self.query, "query")


@dataclass(frozen=True, slots=True)
class MsgResult:
    """``[4, result]``: the answer to the last query, as raw CBOR."""

    result: bytes

    def __post_init__(self) -> None:
        w.check_item(self.result, "result")


@dataclass(frozen=True, slots=True)
class MsgRelease:
    """``[5]``: release the acquired state; back to idle."""


@dataclass(frozen=True, slots=True)
class MsgReAcquire:
    """``[6, point]`` / ``[9]`` / ``[11]``: swap the acquired state for another one."""

    target: AcquireTarget = VOLATILE_TIP


@dataclass(frozen=True, slots=True)
class MsgDone:
    """``[7]``: the client ends the protocol."""


LocalStateQueryMessage = (
    MsgAcquire | MsgAcquired | MsgFailure | MsgQuery | MsgResult | MsgRelease | MsgReAcquire | MsgDone
)

S = LocalStateQueryState

STATES = {
    S.IDLE: StateSpec(Agency.CLIENT),
    S.ACQUIRING: StateSpec(Agency.SERVER),
    S.ACQUIRED: StateSpec(Agency.CLIENT),
    S.QUERYING: StateSpec(Agency.SERVER),
    S.DONE: StateSpec(Agency.NOBODY),
}

TRANSITIONS = {
    (S.IDLE, MsgAcquire): S.ACQUIRING,
    (S.IDLE, MsgDone): S.DONE,
    (S.ACQUIRING, MsgAcquired): S.ACQUIRED,
    (S.ACQUIRING, MsgFailure): S.IDLE,
    (S.ACQUIRED, MsgQuery): S.QUERYING,
    (S.ACQUIRED, MsgReAcquire): S.ACQUIRING,
    (S.ACQUIRED, MsgRelease): S.IDLE,
    (S.QUERYING, MsgResult): S.ACQUIRED,
}
