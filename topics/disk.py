"""How much of its filesystem the instance's database may take (``TopicSubscriptionLimits.DiskShare``).

Local clients make the node hold bytes: durable subscriptions and their queues. The node
refuses new durable subscriptions and stops queueing new items for them (they are counted as
dropped and reported by ``[4, n]`` items) while the database uses more than its share of
the filesystem it lives on; what is queued already stays, so nothing acknowledged to the
network is lost, and acknowledgements free room again.

The database's size is the pages its databases use (LMDB's own accounting, summed over the
main database and every named one), not the file's length: LMDB never shrinks its file, and
reuses freed pages before growing it, so the file's length is a high-water mark that would
refuse for ever once reached. The filesystem's size comes from ``os.statvfs``.

Measuring opens named databases, which LMDB serialises with writers (the store's write lock):
it happens only in the event loop (:meth:`DiskGuard.measure_if_due`, at most once per
``interval`` seconds, by the topic service's timer and before a durable subscription is
made), never inside a commit, which holds that lock. :meth:`DiskGuard.room`, which a commit
asks, reads the last measurement plus the bytes queued since, so a burst between two
measurements cannot run past the bound unseen.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["DiskGuard", "database_bytes"]


def database_bytes(env: Any, open_db: Callable[[bytes], Any], handles: dict[bytes, Any] | None = None) -> int:
    """Bytes of the pages the environment's databases use (main and every named database).

    Named databases are opened through ``open_db`` (the store's, which serialises it with
    writers, as LMDB requires) once each, and remembered in ``handles``."""
    handles = {} if handles is None else handles
    with env.begin() as txn:
        names = [bytes(key) for key, _ in txn.cursor()]
    for name in names:
        if name not in handles:
            handles[name] = open_db(name)
    with env.begin() as txn:
        pages = _pages(env.stat()) + sum(_pages(txn.stat(db)) for db in handles.values())
    return pages * env.stat()["psize"]


def _pages(stat: dict[str, int]) -> int:
    return stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]


class DiskGuard:
    """Whether the database may grow: its size against ``share`` of its filesystem."""

    def __init__(self, env: Any, open_db: Callable[[bytes], Any], path: Path | str, share: float, *,
                 interval: float = 1.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"a disk share is in (0, 1], got {share}")
        self.env = env
        self.path = Path(path)
        self.share = share
        self.interval = interval
        self._monotonic = monotonic
        handles: dict[bytes, Any] = {}
        self._measure = lambda: database_bytes(env, open_db, handles)
        self._measured_at = 0.0
        self._used = 0
        self._since = 0
        self.limit = 0
        self.measure()

    def measure(self) -> None:
        """Measure the database and the filesystem (event loop only, see the module docstring)."""
        st = os.statvfs(self.path)
        self.limit = int(st.f_blocks * st.f_frsize * self.share)
        self._used, self._since, self._measured_at = self._measure(), 0, self._monotonic()

    def measure_if_due(self) -> None:
        if self._monotonic() - self._measured_at >= self.interval:
            self.measure()

    def used(self) -> int:
        """The database's size at the last measurement plus the bytes queued since."""
        return self._used + self._since

    def room(self, extra: int = 0) -> bool:
        """Whether ``extra`` more bytes keep the database within its share (no measurement:
        safe inside a commit)."""
        return self.used() + extra <= self.limit

    def added(self, nbytes: int) -> None:
        """``nbytes`` were written since the last measurement (counted until the next one)."""
        self._since += nbytes
