"""A damaged database must stop the node with one line, not with a segmentation fault.

LMDB trusts its pages: a torn or overwritten B-tree page (a disk fault, a bad copy, a
crash of the storage below the file system) makes the C library follow garbage pointers,
and the process dies with SIGSEGV, taking no trace with it. The node therefore reads every
database of the environment once, in a forked child, before it opens the store itself. If
the child dies or LMDB reports corruption, start-up stops with :class:`DamagedDatabase`,
naming the directory and the remedy; the node's own process never touches the bad pages.

Nothing else is lost by moving the directory aside: messages live at most 30 minutes and
peers offer every unexpired one again.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import lmdb

__all__ = ["DamagedDatabase", "check_readable"]

#: Enough for the mempool's databases and every topic adapter's.
_MAX_DBS = 256


class DamagedDatabase(Exception):
    """The environment cannot be read back safely."""


def _walk(path: Path, lock: bool) -> int:
    """Read every record of every named database; the number of records read."""
    env = lmdb.open(str(path), readonly=True, lock=lock, subdir=True, max_dbs=_MAX_DBS)
    try:
        records = 0
        with env.begin() as txn:
            names = [key for key, _ in txn.cursor()]
            for name in names:
                try:
                    db = env.open_db(name, txn=txn, create=False)
                except lmdb.IncompatibleError:
                    continue  # a plain key of the main database, not a named database
                for key, value in txn.cursor(db=db):
                    records += len(key) >= 0 and len(value) >= 0
        return records
    finally:
        env.close()


def check_readable(path: str | os.PathLike[str], *, lock: bool = False) -> None:
    """Raise :class:`DamagedDatabase` if reading the environment at ``path`` fails or crashes.

    An absent or empty directory is fine (a first start). ``lock=True`` registers the walk as
    an LMDB reader, as it must be while a running node writes (``dmq db check``): an
    unregistered reader may find its pages reused under it and report damage that is not there.
    """
    path = Path(path)
    if not (path / "data.mdb").exists():
        return
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: walk, report, and leave without running any clean-up of the parent's
        os.close(read_end)
        code, text = 0, b""
        try:
            _walk(path, lock)
        except BaseException as exc:  # noqa: BLE001 - everything is reported to the parent
            code, text = 1, f"{type(exc).__name__}: {exc}".encode(errors="replace")
        os.write(write_end, text[:500])
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        reported = reader.read().decode(errors="replace").strip()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise DamagedDatabase(f"reading it crashed LMDB ({name}): a page is damaged")
    if os.WEXITSTATUS(status) != 0:
        raise DamagedDatabase(f"reading it failed: {reported.splitlines()[-1] if reported else 'no detail'}")
