"""``dmq mithril register``: a Mithril signer's registration, published through its node
(docs/mithril-registration.md 8).

The registration is Mithril's ``RegisterSignerMessage`` JSON (a file, or ``-`` for standard
input), as a mithril-signer sends it to an aggregator. The node's pool signs the block that
carries it in the registration topic (``--topic``), and every node of the topic verifies it and
counts it in the set of its epoch.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dmq.cli import hex_bytes
from dmq.cli.topic_session import add_connection_arguments, connected, published_line
from dmq.errors import OperatorError

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("mithril", help="Mithril signer registration over DMQ",
                                   description="Mithril signer registrations agreed by the nodes of a registration "
                                               "topic (docs/mithril-registration.md).")
    actions = parser.add_subparsers(dest="mithril_action", metavar="ACTION", required=True)
    register = actions.add_parser("register", help="publish a signer's registration through the local node")
    add_connection_arguments(register)
    register.add_argument("--topic", required=True, metavar="HEX", help="the registration topic's id")
    register.add_argument("--registration", required=True, metavar="FILE",
                          help="the RegisterSignerMessage JSON, or - for standard input")


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise OperatorError(f"--registration {path}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    from apps.mithril_registration import RegistrationRefused, parse_register_signer
    from apps.mithril_registration.client import publish_registration
    from apps.mithril_registration.events import registration_event

    topic = hex_bytes(args.topic, "--topic", size=32)
    try:
        registration = parse_register_signer(_read(args.registration))
        registration_event(registration)        # refused here, before the node is asked
    except RegistrationRefused as exc:
        raise OperatorError(f"--registration {args.registration}: {exc}") from None

    async def action(conn: Any, magic: int) -> None:
        published = await publish_registration(conn, topic, registration)
        print(f"{published_line(published)} epoch={registration.epoch}", flush=True)

    return connected(args, action)
