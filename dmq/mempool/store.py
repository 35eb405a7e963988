"""LMDB persistence of the mempool: what makes an acknowledged message durable.

Layout (one environment directory, three named databases):

==============  ===========================  ===============================================
database        key                          value
==============  ===========================  ===============================================
``messages``    index, u64 big-endian        checksum + the message's raw bytes, as received
``meta``        ``format`` / ``next_index``  format tag / u64 big-endian
``poolstate``   CBOR of a pool key           CBOR of the exported per-pool state
==============  ===========================  ===============================================

A record is a Blake2b-128 checksum of the raw bytes followed by those bytes (``record``):
a torn page can change bytes the message id does not cover, and the checksum is what notices.
Stores of format ``dmq-mempool/1`` held the bare raw bytes; opening one adds the checksums
to its records and retags it, in one transaction (damage done before that is still caught
by the decoder and the id check at load, as it was before).

Big-endian index keys make LMDB's key order the mempool order, so a reopen reads the log
back with one cursor scan. The id index lives in memory only: it is rebuilt from the log on
every reopen, so keeping it on disk bought nothing, and its random 32-byte keys dirtied
B-tree pages all over the file on every commit (and kept them mapped in the node's
memory). Appends therefore touch only the log's last pages. A ``byid`` database left by
an earlier version is dropped on the first reopen. Every method here blocks (a commit waits for fsync); the durable
mempool calls the writing ones from its single writer thread. Commits use LMDB's default
``sync`` semantics: when a write method returns, the data is on disk.

py-lmdb refuses (rather than waits for) a second write transaction on one environment, so
every write here takes one lock first: a direct write from the event-loop thread then waits
for the writer thread's commit instead of failing.
"""

from __future__ import annotations

import contextlib
import io
import os
import struct
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cbor2
import lmdb

from dmq.message import DmqMessage

from .entry import StoredMessage
from .errors import CorruptRecordWarning, MempoolStoreFormatError
from .log import MessageLog
from .mapped_pages import MappedFile
from .record import seal, unseal

__all__ = ["DEFAULT_MAP_SIZE", "STORE_FORMAT", "UPGRADABLE_FORMATS", "MESSAGES_DB", "META_DB",
           "POOLSTATE_DB", "FORMAT_KEY", "MempoolStore", "CorruptRecord", "LoadReport", "LoadedMempool"]

#: Upper bound of the memory map (and of the data file); the file only grows as needed.
DEFAULT_MAP_SIZE = 4 << 30
#: Written into ``meta``; a directory carrying an unknown tag is refused, never rewritten.
STORE_FORMAT = b"dmq-mempool/2"
#: The previous format: records without a checksum. Upgraded in place when opened.
_UNCHECKED_FORMAT = b"dmq-mempool/1"
#: Formats a node opens: its own, and those it upgrades in place.
UPGRADABLE_FORMATS = (STORE_FORMAT, _UNCHECKED_FORMAT)

_U64 = struct.Struct(">Q")
#: The named databases and the ``meta`` keys (public for read-only tools such as ``dmq db``).
MESSAGES_DB = b"messages"
META_DB = b"meta"
POOLSTATE_DB = b"poolstate"
FORMAT_KEY = b"format"
_NEXT_INDEX_KEY = b"next_index"
#: The on-disk id index of earlier versions (see the module docstring).
_LEGACY_ID_INDEX = b"byid"


@dataclass(frozen=True, slots=True)
class CorruptRecord:
    """A stored record dropped at load, with the reason it could not be used."""

    key: bytes
    index: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What a reopen found: how many messages came back and what was dropped."""

    loaded: int
    expired: int
    corrupt: tuple[CorruptRecord, ...]
    next_index: int


@dataclass(frozen=True, slots=True)
class LoadedMempool:
    """The log a reopen rebuilt, and what it found on the way."""

    log: MessageLog = field(repr=False)
    report: LoadReport

    @property
    def entries(self) -> list[StoredMessage]:
        """The loaded entries in index order."""
        return list(self.log)


class _HeldIndices(Mapping[bytes, int]):
    """A log's id index seen as ``id -> index``, what :meth:`MempoolStore.examine_record` reads."""

    __slots__ = ("_log",)

    def __init__(self, log: MessageLog) -> None:
        self._log = log

    def __getitem__(self, message_id: bytes) -> int:
        entry = self._log.get(message_id)
        if entry is None:
            raise KeyError(message_id)
        return entry.index

    def __contains__(self, message_id: object) -> bool:
        return isinstance(message_id, bytes) and self._log.contains(message_id)

    def __iter__(self) -> Iterator[bytes]:
        return (entry.message_id for entry in self._log)

    def __len__(self) -> int:
        return len(self._log)


#: The mempool's four databases plus room for the topic adapters' named ones (docs/topics-design.md 2.9).
_MAX_DBS = 64

#: A function run inside an append's write transaction (topic state committed with the messages).
InTxn = Callable[[lmdb.Transaction], None]


class _CanonicalCbor:
    """``cbor2.dumps(value, canonical=True)`` with one stream and encoder kept between calls."""

    __slots__ = ("_stream", "_encoder")

    def __init__(self) -> None:
        self._stream = io.BytesIO()
        self._encoder = cbor2.CBOREncoder(self._stream, canonical=True)

    def dumps(self, value: Any) -> bytes:
        stream = self._stream
        stream.seek(0)
        stream.truncate()
        self._encoder.encode(value)
        return stream.getvalue()


class MempoolStore:
    """The LMDB environment holding the mempool log and the pool state."""

    def __init__(self, path: str | os.PathLike[str], *, map_size: int = DEFAULT_MAP_SIZE, sync: bool = True) -> None:
        """``sync=False`` leaves the fsync of each commit out: for a simulation, whose nodes never crash
        as processes (a written commit is in the page cache for the next open), with thousands of
        stores on one disk."""
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._env = lmdb.open(str(self.path), map_size=map_size, subdir=True, max_dbs=_MAX_DBS, lock=True,
                              sync=sync, metasync=sync)
        self._messages = self._env.open_db(MESSAGES_DB)
        self._meta = self._env.open_db(META_DB)
        self._poolstate = self._env.open_db(POOLSTATE_DB)
        self._write_lock = threading.Lock()
        #: Canonical CBOR of pool state, used under the write lock only (one encoder is not
        #: thread-safe): ``cbor2.dumps`` makes a stream and an encoder per call, most of the cost
        #: of a pool's entry in a group commit.
        self._pool_cbor = _CanonicalCbor()
        self._mapped = MappedFile.for_lmdb(self.path)
        #: Write transactions committed for appends / for deletions (group commit is measured by these).
        self.append_transactions = 0
        self.delete_transactions = 0
        self._check_format()

    @contextmanager
    def _write_txn(self) -> Iterator[lmdb.Transaction]:
        """A write transaction under the store's write lock (committed on success, else aborted).

        After it, the data file's pages are unmapped from the process (see ``mapped_pages``):
        the node's memory then holds its messages once, not again as mapped file pages.
        """
        with self._write_lock:
            with self._env.begin(write=True) as txn:
                yield txn
            self._mapped.release()

    @property
    def env(self) -> lmdb.Environment:
        """The environment, for the topic adapters' named databases (one per instance)."""
        return self._env

    def write_transaction(self) -> contextlib.AbstractContextManager[lmdb.Transaction]:
        """A write transaction under the store's write lock (topic pruning, start-up)."""
        return self._write_txn()

    def open_db(self, name: bytes) -> Any:
        """A named database of this environment (created if absent)."""
        with self._write_lock:
            return self._env.open_db(name)

    def _check_format(self) -> None:
        with self._write_txn() as txn:
            found = txn.get(FORMAT_KEY, db=self._meta)
            if found is None:
                if txn.stat(self._messages)["entries"] or txn.get(_NEXT_INDEX_KEY, db=self._meta) is not None:
                    raise MempoolStoreFormatError(f"{self.path} holds mempool data without a format tag; refusing to use it")
                txn.put(FORMAT_KEY, STORE_FORMAT, db=self._meta)
            elif found == _UNCHECKED_FORMAT:
                self._add_checksums(txn)
                txn.put(FORMAT_KEY, STORE_FORMAT, db=self._meta)
            elif found != STORE_FORMAT:
                raise MempoolStoreFormatError(
                    f"{self.path} holds mempool format {found!r}, this node reads {STORE_FORMAT!r}; "
                    "move the directory away or point the node at an empty one"
                )

    def _add_checksums(self, txn: lmdb.Transaction) -> None:
        """Rewrite every record of an unchecked store in the current layout (once, at open)."""
        keys = list(txn.cursor(db=self._messages).iternext(keys=True, values=False))
        for key in keys:
            txn.put(key, seal(txn.get(key, db=self._messages)), db=self._messages)

    # -- reading ----------------------------------------------------------------------------

    def read_next_index(self) -> int:
        with self._env.begin() as txn:
            return self._next_index_in(txn)

    def _next_index_in(self, txn: lmdb.Transaction) -> int:
        raw = txn.get(_NEXT_INDEX_KEY, db=self._meta)
        return 0 if raw is None else _U64.unpack(raw)[0]

    def stored_indices(self) -> list[int]:
        """Every index in ``messages``, in order (inspection and tests)."""
        with self._env.begin() as txn:
            return [_U64.unpack(key)[0] for key in txn.cursor(db=self._messages).iternext(keys=True, values=False)]

    def load(self, decode: Callable[[bytes], DmqMessage], now: float, into: MessageLog | None = None) -> LoadedMempool:
        """Read the log back, drop what expired or cannot be decoded, and delete those records.

        A record whose checksum does not match, or that fails to decode, is reported with
        :class:`CorruptRecordWarning` and deleted, never raised: one damaged record must not
        keep the node from starting. Ids
        are checked against the log itself (a repeated id is a corrupt record).

        Messages are held in ``into`` (a new, empty log; one is made if None) as they are
        read: the log's own id index is the one repeats are checked against, so a reopen
        builds no second index nor a list of every entry beside the log (memory the heap
        would keep after the load).
        """
        log = MessageLog() if into is None else into
        if len(log) or log.next_index:
            raise ValueError("a store loads into an empty log that has handed out no index yet")
        held = _HeldIndices(log)
        corrupt: list[CorruptRecord] = []
        expired_keys: list[bytes] = []
        with self._write_txn() as txn:
            next_index = self._next_index_in(txn)
            for key, record in txn.cursor(db=self._messages):
                problem = self.examine_record(key, record, decode, held)
                if isinstance(problem, CorruptRecord):
                    corrupt.append(problem)
                    if problem.index is not None:  # its index was handed out once: never again
                        next_index = max(next_index, problem.index + 1)
                    continue
                index, raw, message = problem
                next_index = max(next_index, index + 1)
                if message.expires_at <= now:
                    expired_keys.append(key)
                    continue
                log.restore(StoredMessage(index, message.message_id, message.expires_at, raw))
            for key in expired_keys:
                txn.delete(key, db=self._messages)
            for record in corrupt:
                txn.delete(record.key, db=self._messages)
            self._drop_legacy_id_index(txn)
            txn.put(_NEXT_INDEX_KEY, _U64.pack(next_index), db=self._meta)
        log.reserve_through(next_index)
        for record in corrupt:
            warnings.warn(
                CorruptRecordWarning(
                    f"mempool store {self.path}: dropped record {record.key.hex()} "
                    f"(index {record.index}): {record.reason}"
                ),
                stacklevel=2,
            )
        report = LoadReport(len(log), len(expired_keys), tuple(corrupt), next_index)
        return LoadedMempool(log, report)

    def _drop_legacy_id_index(self, txn: lmdb.Transaction) -> None:
        """Free the pages of the on-disk id index that earlier versions wrote."""
        try:
            legacy = self._env.open_db(_LEGACY_ID_INDEX, txn=txn, create=False)
        except lmdb.NotFoundError:
            return
        txn.drop(legacy, delete=True)

    @staticmethod
    def examine_record(
        key: bytes, record: bytes, decode: Callable[[bytes], DmqMessage], by_id: Mapping[bytes, int]
    ) -> CorruptRecord | tuple[int, bytes, DmqMessage]:
        """One ``messages`` record as the load judges it (``dmq db check`` asks the same)."""
        if len(key) != _U64.size:
            return CorruptRecord(key, None, f"key of {len(key)} bytes is not an 8-byte index")
        index = _U64.unpack(key)[0]
        raw = unseal(record)
        if raw is None:  # bytes changed on disk, possibly where the id does not look
            return CorruptRecord(key, index, "its bytes do not match their checksum")
        try:
            message = decode(raw)
        except Exception as exc:  # any decoder failure means the record is unusable
            return CorruptRecord(key, index, f"does not decode: {type(exc).__name__}: {exc}")
        if not message.has_valid_id():  # bytes changed on disk: never serve them
            return CorruptRecord(key, index, "its id does not match its payload")
        if message.message_id in by_id:
            return CorruptRecord(key, index, f"repeats the id of index {by_id[message.message_id]}")
        return index, raw, message

    # -- writing ----------------------------------------------------------------------------

    def write(
        self,
        entries: Sequence[StoredMessage],
        pool_state_updates: Mapping[Any, Any] | None,
        next_index: int,
        in_txn: Sequence[InTxn] = (),
    ) -> None:
        """Write messages, pool state and the index counter in ONE transaction, then fsync.

        ``in_txn`` functions run inside the same transaction: topic state lands together
        with the messages that made it, or not at all.
        """
        with self._write_txn() as txn:
            for run in in_txn:
                run(txn)
            for entry in entries:
                txn.put(_U64.pack(entry.index), seal(entry.raw), db=self._messages)
            if pool_state_updates:
                self._put_pool_state(txn, pool_state_updates)
            if next_index > self._next_index_in(txn):
                txn.put(_NEXT_INDEX_KEY, _U64.pack(next_index), db=self._meta)
        self.append_transactions += 1

    def delete(self, entries: Iterable[StoredMessage]) -> None:
        """Delete purged messages in one transaction."""
        with self._write_txn() as txn:
            for entry in entries:
                txn.delete(_U64.pack(entry.index), db=self._messages)
        self.delete_transactions += 1

    # -- pool state -------------------------------------------------------------------------

    def save_pool_state(self, items: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> None:
        """Store exported per-pool state in its own transaction (a value of None deletes the key)."""
        with self._write_txn() as txn:
            self._put_pool_state(txn, items)

    def load_pool_state(self) -> dict[Any, Any]:
        """Every stored ``key -> value`` (CBOR round trip: tuples come back as lists)."""
        with self._env.begin() as txn:
            return {cbor2.loads(key): cbor2.loads(value) for key, value in txn.cursor(db=self._poolstate)}

    def _put_pool_state(self, txn: lmdb.Transaction, items: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> None:
        """Under the write lock (every caller holds a write transaction)."""
        pairs = items.items() if isinstance(items, Mapping) else items
        dumps, db, put = self._pool_cbor.dumps, self._poolstate, txn.put
        for pool, value in pairs:
            key = dumps(pool)
            if value is None:
                txn.delete(key, db=db)
            else:
                put(key, dumps(value), db=db)

    def close(self) -> None:
        self._env.close()

