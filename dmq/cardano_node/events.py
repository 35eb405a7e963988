"""Trace events of the cardano-node link (beside the node's own ``StakeViewUpdated``,
``ConnectionOpened`` and ``ConnectionClosed``, which the link emits with link
``"cardano-node"``). Each is one line in the JSON log."""

from __future__ import annotations

from dataclasses import dataclass

from dmq.trace import TraceEvent

__all__ = ["CARDANO_LINK", "CardanoLinkRetry", "CardanoNodeAwaited", "CardanoEpochChanged", "CardanoLinkWarning"]

#: The ``link`` of the connection events of this link.
CARDANO_LINK = "cardano-node"


@dataclass(frozen=True, slots=True)
class CardanoLinkRetry(TraceEvent):
    """A warning: the link is down (or never came up) and will try again in ``retry_in`` s."""

    socket: str
    reason: str
    retry_in: float


@dataclass(frozen=True, slots=True)
class CardanoNodeAwaited(TraceEvent):
    """No stake snapshot yet and cardano-node's socket file does not exist (yet): the link waits
    for it, trying again when the file appears or after ``retry_in`` s. Meanwhile every message
    is refused as NotInitialized, as by the reference before its first snapshot."""

    socket: str
    retry_in: float


@dataclass(frozen=True, slots=True)
class CardanoEpochChanged(TraceEvent):
    """cardano-node's ledger entered another epoch (``previous`` None on the first query)."""

    previous: int | None
    epoch: int
    era: str


@dataclass(frozen=True, slots=True)
class CardanoLinkWarning(TraceEvent):
    """Something about cardano-node disagrees with the node's own files (genesis, magic)."""

    socket: str
    message: str
