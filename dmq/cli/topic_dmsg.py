"""``dmq topic dmsg publish``: sign a dmsg discovery entry and publish it (docs/topics-design.md 6).

``--server HOST:PORT --sessions N`` publishes the server record of the key (where it listens,
how many sessions it has free); ``--via KEY`` (repeat) the client record (the servers it is
reachable through). The key is a secp256k1 key file (``dmq topic new-key --kind secp256k1``);
``--sequence`` orders the key's entries (default: the clock in seconds, which only grows).
A node accepts an entry for 300 s after its timestamp: a key publishes again within that
window to stay findable. ``dmq topic find-relay`` reads what a node holds.
"""

from __future__ import annotations

import argparse
import time

from dmq.cli.secret_files import read_secret
from dmq.cli.topic_session import add_connection_arguments, publish_body
from dmq.errors import OperatorError

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``dmsg`` and its action to the ``dmq topic`` sub-parsers."""
    parser = subparsers.add_parser("dmsg", help="sign and publish dmsg discovery entries",
                                   description="dmsg discovery entries, signed here and published by the node.")
    actions = parser.add_subparsers(dest="dmsg_action", metavar="ACTION", required=True)
    publish = actions.add_parser("publish", help="sign and publish a client or server entry")
    add_connection_arguments(publish)
    publish.add_argument("--key", required=True, metavar="FILE", help="the static key's file (secp256k1)")
    role = publish.add_mutually_exclusive_group(required=True)
    role.add_argument("--server", metavar="HOST:PORT", help="a server record: where this server listens")
    role.add_argument("--via", action="append", metavar="KEY",
                      help="a client record: a server it is reachable through (66 hex digits; repeat, up to 8)")
    publish.add_argument("--sessions", type=int, default=None, metavar="N",
                         help="sessions the server has free (with --server)")
    publish.add_argument("--sequence", type=int, default=None, metavar="N",
                         help="the entry's sequence number, above the key's last (default: the clock in seconds)")
    parser.set_defaults(func=run_dmsg)


def run_dmsg(args: argparse.Namespace) -> int:
    from clients.topics import dmsg

    secret = read_secret(args.key, "--key")
    sequence = int(time.time()) if args.sequence is None else args.sequence
    if sequence < 0:
        raise OperatorError(f"--sequence {sequence}: expected a number >= 0")
    try:
        if args.server is not None:
            if args.sessions is None or args.sessions < 0:
                raise OperatorError("--server needs --sessions N (the sessions free, >= 0)")
            entry = dmsg.server_entry(secret, sequence, args.server, args.sessions)
        else:
            if args.sessions is not None:
                raise OperatorError("--sessions goes with --server")
            entry = dmsg.client_entry(secret, sequence, args.via)
    except ValueError as exc:      # the entry's own checks (a bad address or key): one line
        raise OperatorError(str(exc)) from None
    return publish_body(args, dmsg.entry_body(entry), f"static={dmsg.static_key(secret)} sequence={sequence}")
