"""``dmq keys``: a pool's DMQ credentials as cardano-cli files.

* ``dmq keys generate --out-dir DIR``: cold key pair, issue counter, KES key pair and an
  operational certificate (issue 0) in DIR, named as SPO guides name them;
* ``dmq keys rotate --dir DIR --kes-period N``: a new KES key and a certificate starting at N
  with the next issue number (``--genesis FILE`` starts it at the current period instead);
* ``dmq keys pool-id FILE``: the pool id (hex and bech32) of a cold key, a certificate or an
  issue counter.
"""

from __future__ import annotations

import argparse

from dmq.errors import OperatorError

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("keys", help="generate a pool's keys, rotate its KES key, show its pool id",
                                   description="Stake pool key files for DMQ, as cardano-cli writes them.")
    actions = parser.add_subparsers(title="actions", metavar="ACTION", dest="keys_action", required=True)

    generate = actions.add_parser("generate", help="write a new pool's cold, KES and certificate files")
    generate.add_argument("--out-dir", metavar="DIR", required=True, help="where to write the files")
    generate.add_argument("--kes-period", metavar="N", type=int, default=0,
                          help="start period of the operational certificate (default: 0)")
    generate.add_argument("--force", action="store_true", help="replace existing files (a lost cold key is a lost pool)")

    rotate = actions.add_parser("rotate", help="new KES key and certificate with the next issue number")
    rotate.add_argument("--dir", metavar="DIR", required=True,
                        help="the pool directory (cold.skey, cold.counter; kes.* and node.cert are replaced)")
    start = rotate.add_mutually_exclusive_group(required=True)
    start.add_argument("--kes-period", metavar="N", type=int, help="start period of the new certificate")
    start.add_argument("--genesis", metavar="FILE",
                       help="start at the current period, from this Shelley genesis and the clock")

    pool_id = actions.add_parser("pool-id", help="print the pool id of a cold key, node.cert or cold.counter")
    pool_id.add_argument("file", metavar="FILE")


def _current_period(genesis_path: str) -> int:
    from clients.mithril import GenesisClockKesPeriod, KesPeriodUnavailable
    from dmq.stake import load_shelley_genesis

    try:
        return GenesisClockKesPeriod.from_genesis(load_shelley_genesis(genesis_path)).current_kes_period()
    except KesPeriodUnavailable as exc:
        raise OperatorError(str(exc)) from None


def _generate(args: argparse.Namespace) -> int:
    from clients.keys import generate_pool
    from dmq.opcert import pool_id_bech32

    pool = generate_pool(args.out_dir, start_kes_period=args.kes_period, overwrite=args.force)
    for path in pool.paths.all():
        print(f"wrote {path}")
    print(f"pool id: {pool.pool_id.hex()} {pool_id_bech32(pool.pool_id)}")
    return 0


def _rotate(args: argparse.Namespace) -> int:
    from clients.keys import rotate_kes_key

    start = args.kes_period if args.kes_period is not None else _current_period(args.genesis)
    rotated = rotate_kes_key(args.dir, start_kes_period=start)
    print(f"wrote {rotated.paths.kes_skey}, {rotated.paths.kes_vkey}, {rotated.paths.opcert}, "
          f"{rotated.paths.cold_counter}")
    print(f"operational certificate: issue number {rotated.opcert.issue_number}, "
          f"start KES period {rotated.opcert.start_kes_period}")
    return 0


def _pool_id(args: argparse.Namespace) -> int:
    from clients.keys import pool_identity

    identity = pool_identity(args.file)
    print(identity.hex)
    print(identity.bech32)
    return 0


_ACTIONS = {"generate": _generate, "rotate": _rotate, "pool-id": _pool_id}


def run(args: argparse.Namespace) -> int:
    from dmq.keyfiles import KeyFileError

    try:
        return _ACTIONS[args.keys_action](args)
    except KeyFileError as exc:
        raise OperatorError(str(exc)) from None
