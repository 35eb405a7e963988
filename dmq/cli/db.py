"""``dmq db``: look after the node's message store, also while the node runs.

* ``dmq db info``: format, messages, size on disk, oldest and newest expiry;
* ``dmq db backup DIR``: a consistent, compacted copy (LMDB's own copy, taken inside one read
  transaction: it holds every message acknowledged before it started, and nothing half-written);
* ``dmq db check``: the integrity walk the node makes at start-up (every page of every
  database, in a forked child so that a damaged page cannot crash this process) and the
  checks the node makes of every record when it loads them (checksum, decoding, id).

The store is an LMDB environment, which several processes may read while one writes, as long
as each reader registers in the lock file: every command here opens the environment
read-only WITH the lock, so the node never reuses a page that a reader is still looking at.
That needs write access to ``lock.mdb``: run the commands as the node's user.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from dmq.cli import report
from dmq.cli.inspect import utc_text
from dmq.errors import OperatorError

__all__ = ["add_parser", "run", "StoreReport", "open_store_readonly", "read_store", "backup_store"]

#: The data file of an LMDB environment directory.
DATA_FILE = "data.mdb"
#: Named databases a reader may open: the mempool's and the topic adapters' (docs/topics-design.md 2.9).
_MAX_DBS = 64


@dataclass
class StoreReport:
    """What one read transaction found in the store."""

    format: bytes | None
    messages: int = 0
    message_bytes: int = 0
    #: Messages past their expiry that the node has not deleted yet (it runs, or it is stopped).
    expired: int = 0
    pool_states: int = 0
    oldest_expiry: int | None = None
    newest_expiry: int | None = None
    #: ``(key hex, index or None, reason)`` of every record the node would drop at load.
    damaged: list[tuple[str, int | None, str]] = field(default_factory=list)


def _require_store(path: Path) -> None:
    """Refuse, in one line, a directory without a store or one this user cannot read as a reader."""
    if not (path / DATA_FILE).is_file():
        raise OperatorError(f"database {path}: no message store here (no {DATA_FILE})")
    lock = path / "lock.mdb"
    if not os.access(lock if lock.exists() else path, os.R_OK | os.W_OK):
        raise OperatorError(f"database {path}: {lock} is not writable by this user, so it cannot read "
                            "alongside the node; run this as the user the node runs as")


@contextmanager
def open_store_readonly(path: Path) -> Iterator["lmdb.Environment"]:  # noqa: F821 - lmdb is imported late
    """The store's environment, read-only and registered as a reader (see the module docstring)."""
    import lmdb

    _require_store(path)
    try:
        env = lmdb.open(str(path), readonly=True, lock=True, subdir=True, max_dbs=_MAX_DBS)
    except lmdb.Error as exc:
        raise OperatorError(f"database {path}: cannot open it read-only ({exc}); "
                            "run this as the user the node runs as") from None
    try:
        yield env
    finally:
        env.close()


def read_store(env, now: float | None = None) -> StoreReport:
    """Walk the ``messages`` database in one read transaction, judging each record as the load does."""
    import time

    import lmdb

    from dmq.mempool.entry import default_decoder
    from dmq.mempool.store import FORMAT_KEY, MESSAGES_DB, META_DB, POOLSTATE_DB, CorruptRecord, MempoolStore

    decode = default_decoder()
    now = time.time() if now is None else now
    with env.begin() as txn:
        try:
            meta = env.open_db(META_DB, txn=txn, create=False)
        except lmdb.NotFoundError:
            return StoreReport(format=None)
        found = StoreReport(format=txn.get(FORMAT_KEY, db=meta))
        try:
            messages = env.open_db(MESSAGES_DB, txn=txn, create=False)
            found.pool_states = txn.stat(env.open_db(POOLSTATE_DB, txn=txn, create=False))["entries"]
        except lmdb.NotFoundError:
            return found
        by_id: dict[bytes, int] = {}
        for key, record in txn.cursor(db=messages):
            judged = MempoolStore.examine_record(key, record, decode, by_id)
            if isinstance(judged, CorruptRecord):
                found.damaged.append((judged.key.hex(), judged.index, judged.reason))
                continue
            index, raw, message = judged
            by_id[message.message_id] = index
            found.messages += 1
            found.message_bytes += len(raw)
            expiry = message.expires_at
            found.expired += expiry <= now
            found.oldest_expiry = expiry if found.oldest_expiry is None else min(found.oldest_expiry, expiry)
            found.newest_expiry = expiry if found.newest_expiry is None else max(found.newest_expiry, expiry)
    return found


def backup_store(env, target: Path) -> None:
    """A compacted copy of ``env`` into ``target`` (created; it must not hold a store already)."""
    import lmdb

    if (target / DATA_FILE).exists():
        raise OperatorError(f"backup {target}: it already holds a store ({DATA_FILE}); choose an empty directory")
    try:
        target.mkdir(parents=True, exist_ok=True)
        env.copy(str(target), compact=True)
    except OSError as exc:
        raise OperatorError(f"backup {target}: {exc.strerror or exc}") from None
    except lmdb.Error as exc:
        raise OperatorError(f"backup {target}: the copy failed ({exc})") from None


def _database_path(args: argparse.Namespace) -> Path:
    """``--database-path``, else ``DatabasePath`` of the configuration file (the node's own loader)."""
    from dmq.config import read_config

    config = read_config({"ConfigFile": args.configuration_file, "DatabasePath": args.database_path})
    return Path(config.database_path)


def _format_text(tag: bytes | None) -> str:
    return "none (not a message store)" if tag is None else tag.decode(errors="replace")


def _expiry_text(seconds: int | None) -> str:
    return "-" if seconds is None else f"{seconds} ({utc_text(seconds)})"


def _info(path: Path) -> int:
    with open_store_readonly(path) as env:
        found = read_store(env)
        used = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
    file_size = (path / DATA_FILE).stat().st_size
    print("\n".join([
        f"database:       {path}",
        f"format:         {_format_text(found.format)}",
        f"messages:       {found.messages} ({found.message_bytes} bytes), {found.expired} of them expired",
        f"pool states:    {found.pool_states}",
        f"size:           {file_size} bytes on disk, {used} bytes in use",
        f"oldest expiry:  {_expiry_text(found.oldest_expiry)}",
        f"newest expiry:  {_expiry_text(found.newest_expiry)}",
    ]), flush=True)
    return 0


def _backup(path: Path, target: Path) -> int:
    with open_store_readonly(path) as env:
        backup_store(env, target)
    with open_store_readonly(target) as copy:
        found = read_store(copy)
    size = (target / DATA_FILE).stat().st_size
    print(f"backup: {target}: {found.messages} messages, {size} bytes, format {_format_text(found.format)}",
          flush=True)
    return 0


def _check(path: Path, program: str) -> int:
    from dmq.mempool.integrity import DamagedDatabase, check_readable
    from dmq.mempool.store import UPGRADABLE_FORMATS

    problems: list[str] = []
    _require_store(path)
    try:  # first, in a child: a damaged page must not crash this process during the record walk
        check_readable(path, lock=True)
    except DamagedDatabase as exc:
        report(program, f"database {path} is damaged, {exc}")
        return 1
    with open_store_readonly(path) as env:
        found = read_store(env)
    if found.format not in UPGRADABLE_FORMATS:
        problems.append(f"database {path}: format {_format_text(found.format)}, "
                        f"this node reads {_format_text(UPGRADABLE_FORMATS[0])}")
    for key, index, reason in found.damaged:
        problems.append(f"database {path}: record {key} (index {index}) {reason}")
    for problem in problems:
        report(program, problem)
    total = found.messages + len(found.damaged)
    verdict = "intact" if not problems else f"{len(problems)} problem(s)"
    print(f"checked {total} records of {path}: {verdict}", flush=True)
    return 1 if problems else 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "db", help="inspect, back up or check the node's message store (safe while the node runs)",
        description="Look after the node's LMDB message store; every action reads it as a registered "
                    "reader, so the node may keep running.")
    actions = parser.add_subparsers(title="actions", metavar="ACTION", dest="db_action", required=True)
    for name, text in (("info", "format, messages, size and expiry range"),
                       ("backup", "a consistent compacted copy into DIR"),
                       ("check", "the integrity walk and every record's checksum and id")):
        action = actions.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        action.add_argument("--database-path", metavar="DIR",
                            help="the store (default: DatabasePath of the configuration file)")
        action.add_argument("-c", "--configuration-file", metavar="FILENAME",
                            help="read DatabasePath from this configuration file (default: dmq.config.json)")
        if name == "backup":
            action.add_argument("target", type=Path, metavar="DIR", help="where the copy goes (empty or new)")


def run(args: argparse.Namespace) -> int:
    path = _database_path(args)
    if args.db_action == "info":
        return _info(path)
    if args.db_action == "backup":
        return _backup(path, args.target)
    return _check(path, "dmq db check")
