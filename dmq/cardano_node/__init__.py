"""The link to cardano-node: stake snapshots over local state query (docs/protocol/cardano-node-link.md 10).

:class:`CardanoNodeLink` is what a node with ``StakeSource: cardano-node`` runs; its
:attr:`~CardanoNodeLink.status` says whether the stake view is ready, since when, for
which epoch, and whether cardano-node is reachable.
"""

from .backoff import Backoff
from .errors import CardanoLinkError, CardanoNodeUnreachable, MalformedResult, UnsupportedEra
from .events import CARDANO_LINK, CardanoEpochChanged, CardanoLinkRetry, CardanoLinkWarning, CardanoNodeAwaited
from .link import (
    DEFAULT_REFRESH_INTERVAL,
    EPOCH_WAIT_MAX,
    EPOCH_WAIT_MIN,
    STAKE_SOURCE,
    CardanoNodeLink,
    genesis_magic_mismatch,
    pool_stakes,
)
from .stake_round import RoundResult, query_stake_round
from .status import StakeLinkStatus, register_gauges

__all__ = [
    "CardanoNodeLink",
    "DEFAULT_REFRESH_INTERVAL",
    "EPOCH_WAIT_MIN",
    "EPOCH_WAIT_MAX",
    "STAKE_SOURCE",
    "CARDANO_LINK",
    "Backoff",
    "StakeLinkStatus",
    "register_gauges",
    "RoundResult",
    "query_stake_round",
    "pool_stakes",
    "genesis_magic_mismatch",
    "CardanoLinkError",
    "CardanoNodeUnreachable",
    "UnsupportedEra",
    "MalformedResult",
    "CardanoLinkRetry",
    "CardanoNodeAwaited",
    "CardanoEpochChanged",
    "CardanoLinkWarning",
]
