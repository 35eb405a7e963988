"""The adapters' named LMDB databases, in the environment of the instance's mempool.

docs/topics-design.md 2.9: one environment per instance, a named database per adapter store, and the
adapter's ``on_accept`` in the same write transaction as the DMQ insert. Adapters never see
an ``lmdb`` object: they get a :class:`~topics.adapter.StoreView` (reads) or an
:class:`~topics.adapter.AdapterTxn` (reads and writes) scoped to the databases they declared,
so they cannot touch the mempool's records or another adapter's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import lmdb

__all__ = ["AdapterDatabases", "LmdbView", "LmdbTxn", "for_store"]


class LmdbView:
    """A :class:`~topics.adapter.StoreView` over one LMDB transaction."""

    def __init__(self, txn: lmdb.Transaction, dbs: Mapping[str, Any], owner: str) -> None:
        self._txn = txn
        self._dbs = dbs
        self._owner = owner

    def _db(self, db: str) -> Any:
        try:
            return self._dbs[db]
        except KeyError:
            raise KeyError(f"adapter {self._owner!r} did not declare a database {db!r}") from None

    def get(self, db: str, key: bytes) -> bytes | None:
        value = self._txn.get(key, db=self._db(db))
        return None if value is None else bytes(value)

    def scan(self, db: str, prefix: bytes = b"", *, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        cursor = self._txn.cursor(db=self._db(db))
        if not reverse:
            if not cursor.set_range(prefix):
                return
            for key, value in cursor:
                if not key.startswith(prefix):
                    return
                yield bytes(key), bytes(value)
            return
        # Reverse: position after the last key with the prefix, then walk back.
        upper = _next_prefix(prefix)
        found = cursor.set_range(upper) if upper is not None else cursor.last()
        if upper is not None:
            found = cursor.prev() if found else cursor.last()
        if not found:
            return
        while True:
            key = cursor.key()
            if not key.startswith(prefix):
                if key < prefix:
                    return
            else:
                yield bytes(key), bytes(cursor.value())
            if not cursor.prev():
                return


class LmdbTxn(LmdbView):
    """An :class:`~topics.adapter.AdapterTxn` over one LMDB write transaction."""

    def put(self, db: str, key: bytes, value: bytes) -> None:
        self._txn.put(key, value, db=self._db(db))

    def delete(self, db: str, key: bytes) -> bool:
        return bool(self._txn.delete(key, db=self._db(db)))


def _next_prefix(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix`` (None: none)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes((stripped[-1] + 1,))


class AdapterDatabases:
    """Every adapter's named databases in one environment (``<adapter>/<db>``)."""

    def __init__(self, env: lmdb.Environment, open_db: Callable[[bytes], Any] | None = None,
                 write_txn: Callable[[], Any] | None = None) -> None:
        self.env = env
        self._open = open_db or (lambda name: env.open_db(name))
        self._write_txn = write_txn or (lambda: env.begin(write=True))
        self._dbs: dict[str, dict[str, Any]] = {}

    def register(self, adapter: str, names: tuple[str, ...]) -> None:
        self._dbs[adapter] = {name: self._open(f"{adapter}/{name}".encode()) for name in names}

    def view(self, txn: lmdb.Transaction, adapter: str) -> LmdbView:
        return LmdbView(txn, self._dbs.get(adapter, {}), adapter)

    def writer(self, txn: lmdb.Transaction, adapter: str) -> LmdbTxn:
        return LmdbTxn(txn, self._dbs.get(adapter, {}), adapter)

    @contextmanager
    def reading(self, adapter: str) -> Iterator[LmdbView]:
        """A read-only view of ``adapter``'s databases at the last commit."""
        with self.env.begin() as txn:
            yield self.view(txn, adapter)

    def write(self, adapter: str, fn: Callable[[LmdbTxn], Any]) -> Any:
        """Run ``fn`` in a write transaction of its own (pruning, start-up)."""
        with self._write_txn() as txn:
            return fn(self.writer(txn, adapter))

    def snapshot(self) -> dict[str, dict[str, dict[bytes, bytes]]]:
        """Every adapter database's content (tests compare states with it, C4/C5/C7)."""
        out: dict[str, dict[str, dict[bytes, bytes]]] = {}
        with self.env.begin() as txn:
            for adapter, dbs in self._dbs.items():
                out[adapter] = {name: {bytes(k): bytes(v) for k, v in txn.cursor(db=db)} for name, db in dbs.items()}
        return out


def for_store(store: Any) -> AdapterDatabases:
    """The adapter databases in a :class:`~dmq.mempool.store.MempoolStore`'s environment."""
    return AdapterDatabases(store.env, store.open_db, store.write_transaction)
