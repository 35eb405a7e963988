"""``dmq topic equivocations`` and ``dmq topic find-relay KEY``: queries of a node's topic database.

Both read the node's LMDB environment (``--database-path``, the node's ``DatabasePath``)
read-only, beside a running node: LMDB readers never block its writer. ``equivocations``
lists the Blocklace proofs held (docs/topics-design.md 5.5), each re-verified from its two messages;
``find-relay`` answers the look-up of docs/topics-design.md 6.4 from the dmsg entries held.

This module adds its commands to the ``dmq topic`` parser with :func:`register`; the
functions it binds take the parsed arguments and return the exit status.
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from dmq.errors import OperatorError

__all__ = ["register", "run_equivocations", "run_find_relay", "equivocation_rows"]

_KINDS = {0: "same_seq", 1: "double_vote", 2: "owner_equivocation", 3: "epoch_conflict"}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``equivocations`` and ``find-relay`` to the ``dmq topic`` sub-parsers."""
    eq = subparsers.add_parser("equivocations", help="Blocklace equivocation proofs held by a node",
                               description="List the equivocation proofs a node holds, verified again.")
    eq.add_argument("--database-path", default="dmq-db", metavar="DIR", help="the node's database (default dmq-db)")
    eq.add_argument("--json", action="store_true", help="one JSON object per proof")
    eq.set_defaults(func=run_equivocations)
    fr = subparsers.add_parser("find-relay", help="a dmsg relay server for a public key",
                               description="Choose a fresh dmsg server listed by KEY's fresh client entry.")
    fr.add_argument("key", metavar="KEY", help="the client's static secp256k1 key (66 hex digits)")
    fr.add_argument("--database-path", default="dmq-db", metavar="DIR", help="the node's database (default dmq-db)")
    fr.add_argument("--own-server", action="append", default=[], metavar="KEY",
                    help="a server of your own delegated list, preferred when usable (repeatable)")
    fr.add_argument("--now", type=float, default=None, help="POSIX seconds (default: the clock)")
    fr.set_defaults(func=run_find_relay)


@contextmanager
def _reading(path: str, adapter: str, names: tuple[str, ...]) -> Iterator[object]:
    import lmdb

    from dmq.cli.db import open_store_readonly
    from topics.store import LmdbView

    with open_store_readonly(Path(path)) as env:  # a registered reader: the node may be writing
        with env.begin() as txn:
            dbs = {}
            for name in names:
                try:
                    dbs[name] = env.open_db(f"{adapter}/{name}".encode(), txn=txn, create=False)
                except lmdb.NotFoundError:
                    raise OperatorError(f"{path}: the node has no {adapter} state (adapter not enabled?)") from None
            yield LmdbView(txn, dbs, adapter)


def equivocation_rows(view) -> list[dict]:
    from dmq.codec import decode_message
    from topics.blocklace.proofs import verify_proof
    from topics.blocklace.store import proofs

    rows = []
    for proof in proofs(view):
        where = list(proof.where) if isinstance(proof.where, tuple) else proof.where
        rows.append({"kind": _KINDS.get(proof.kind, str(proof.kind)), "topic": proof.topic.hex(),
                     "culprit": proof.culprit.hex(), "where": where,
                     "a": decode_message(proof.a).message_id.hex(), "b": decode_message(proof.b).message_id.hex(),
                     "verified": verify_proof(proof)})
    return rows


def run_equivocations(args: argparse.Namespace) -> int:
    with _reading(args.database_path, "blocklace", ("proof",)) as view:
        rows = equivocation_rows(view)
    for row in rows:
        if args.json:
            print(json.dumps(row, separators=(",", ":")))
        else:
            print(f"{row['kind']:<18} culprit {row['culprit']} at {row['where']} topic {row['topic'][:16]} "
                  f"blocks {row['a'][:16]} {row['b'][:16]} {'verified' if row['verified'] else 'NOT VERIFIED'}")
    if not rows and not args.json:
        print("no equivocation proofs held")
    return 0


def run_find_relay(args: argparse.Namespace) -> int:
    from topics.dmsg.adapter import DmsgAdapter

    key = args.key.lower()
    if len(key) != 66 or any(c not in "0123456789abcdef" for c in key):
        raise OperatorError(f"KEY must be a compressed secp256k1 key in 66 hex digits, got {args.key!r}")
    now = time.time() if args.now is None else args.now
    with _reading(args.database_path, "dmsg", DmsgAdapter.databases) as view:
        relay = DmsgAdapter().find_relay(view, key, now, tuple(k.lower() for k in args.own_server))
    if relay is None:
        print(f"no fresh relay for {key}: no fresh client entry, or none of its servers is fresh with free sessions")
        return 1
    print(f"{relay.static} {relay.address} sessions {relay.sessions}")
    return 0
