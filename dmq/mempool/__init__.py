"""The mempool: the node's single source of truth of accepted messages.

An ordered log of validated messages with an id index (the duplicate set) and an expiry
index. Local notification clients and outbound peers read it through cursors; the
validation pipeline appends to it. :class:`DurableMempool` keeps it in LMDB so that a
message acknowledged to a client survives a crash (docs/protocol/validation.md 6.1, 6.10, docs/protocol/local-protocols.md 8.2, docs/protocol/node-to-node.md 9.3, 9.7).
"""

from .cursor import MempoolCursor
from .durable import DEFAULT_COMMIT_WINDOW, DurableMempool, open_durable_mempool
from .entry import StoredMessage
from .errors import (
    CorruptRecordWarning,
    DuplicateMessageError,
    MempoolError,
    MempoolNotRunningError,
    MempoolStoreFormatError,
    MempoolWriteError,
)
from .log import MessageLog
from .memory import DEFAULT_EXPIRY_INTERVAL, Mempool
from .store import DEFAULT_MAP_SIZE, CorruptRecord, LoadReport, MempoolStore

__all__ = [
    "Mempool",
    "DurableMempool",
    "open_durable_mempool",
    "MempoolCursor",
    "MessageLog",
    "MempoolStore",
    "StoredMessage",
    "LoadReport",
    "CorruptRecord",
    "MempoolError",
    "DuplicateMessageError",
    "MempoolWriteError",
    "MempoolNotRunningError",
    "MempoolStoreFormatError",
    "CorruptRecordWarning",
    "DEFAULT_MAP_SIZE",
    "DEFAULT_COMMIT_WINDOW",
    "DEFAULT_EXPIRY_INTERVAL",
]
