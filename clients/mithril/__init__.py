"""A Mithril-compatible DMQ client: publish as the signer does, consume as the aggregator does.

Everything here talks to a DMQ node over its local Unix socket with exactly the bytes of the
Pallas client Mithril is built on (docs/protocol/local-protocols.md 7, 8, docs/protocol/README.md 12.3), so it can stand in for a Mithril
signer or aggregator in tests and tools, and it works against this project's node and the
Haskell reference node alike.

* :class:`Publisher` (trio): one connection per message, returns the node's verdict;
  :class:`MessageBuilder` signs bodies with a pool's ``kes.skey`` and ``node.cert`` at a KES
  period from an explicit :mod:`~dmq.kes_period` source. Both are defined in ``dmq``
  (:mod:`dmq.signer`), since the node's own topic signer builds on them, and offered here.
* :class:`Consumer` (trio): one cached connection, blocking requests, reconnect after a delay,
  de-duplication by Blake2b-512 of the body, ``party_id`` = bech32 pool id.
* :class:`RegisterSignatureMessageDmq`: the body Mithril signers publish.
* :mod:`~clients.mithril.sync`: blocking wrappers (``trio.run``) for plain scripts.
"""

from .body import BodyDecodeError, PackedSingleSignature, RegisterSignatureMessageDmq
from .connection import LocalConnection, open_local_connection
from .consumer import DEFAULT_RECONNECT_DELAY, Consumer, ReceivedMessage
from .deduplicator import DEFAULT_DEDUP_TTL, Deduplicator
from .errors import ConnectionLost, DmqClientError, HandshakeFailed, NodeUnreachable, UnreadableMessage
from dmq.kes_period import (
    FixedKesPeriod,
    GenesisClockKesPeriod,
    KesPeriodSource,
    KesPeriodUnavailable,
    SlotKesPeriod,
)
from .network import UnknownNetwork, mithril_dmq_magic, network_name_of, resolve_dmq_magic
from .publisher import Publisher, describe_result, is_accepted
from .signed_entity import (
    CURRENT_ORDER,
    ORDER_UNTIL_2617,
    CardanoBlocksTransactions,
    CardanoDatabase,
    CardanoImmutableFilesFull,
    CardanoStakeDistribution,
    CardanoTransactions,
    MithrilStakeDistribution,
    SignedEntityType,
    SignedEntityTypeError,
)
from dmq.signer import DEFAULT_TTL, MessageBuilder, SigningCredentials, SigningError

__all__ = [
    "BodyDecodeError",
    "CURRENT_ORDER",
    "CardanoBlocksTransactions",
    "CardanoDatabase",
    "CardanoImmutableFilesFull",
    "CardanoStakeDistribution",
    "CardanoTransactions",
    "ConnectionLost",
    "Consumer",
    "DEFAULT_DEDUP_TTL",
    "DEFAULT_RECONNECT_DELAY",
    "DEFAULT_TTL",
    "Deduplicator",
    "DmqClientError",
    "FixedKesPeriod",
    "GenesisClockKesPeriod",
    "HandshakeFailed",
    "KesPeriodSource",
    "KesPeriodUnavailable",
    "LocalConnection",
    "MessageBuilder",
    "MithrilStakeDistribution",
    "NodeUnreachable",
    "ORDER_UNTIL_2617",
    "PackedSingleSignature",
    "Publisher",
    "ReceivedMessage",
    "RegisterSignatureMessageDmq",
    "SignedEntityType",
    "SignedEntityTypeError",
    "SigningCredentials",
    "SigningError",
    "SlotKesPeriod",
    "UnknownNetwork",
    "UnreadableMessage",
    "describe_result",
    "is_accepted",
    "mithril_dmq_magic",
    "network_name_of",
    "open_local_connection",
    "resolve_dmq_magic",
]
