"""What every ``dmq topic`` command that talks to the node shares: one protocol 1000 connection
per command, the payload flags, and the one line a publication prints.

A refusal by the node (``MsgReject``), a node without topics or a lost connection is one line
on standard error and exit status 1 (:class:`~dmq.errors.OperatorError`), as every command of
``dmq`` reports an operator's mistake.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

from dmq.cli import hex_bytes
from dmq.cli.publish import add_connection_arguments, network_magic_of, socket_path_of
from dmq.errors import OperatorError

__all__ = ["add_connection_arguments", "add_payload_arguments", "payload_of", "connected", "publish_body",
           "published_line"]


def add_payload_arguments(parser: argparse.ArgumentParser, what: str = "payload") -> None:
    """``--payload-hex HEX`` or ``--text TEXT`` (UTF-8), one of them required."""
    payload = parser.add_mutually_exclusive_group(required=True)
    payload.add_argument("--payload-hex", metavar="HEX", help=f"the {what} as hexadecimal")
    payload.add_argument("--text", metavar="TEXT", help=f"the {what} as UTF-8 text")


def payload_of(args: argparse.Namespace) -> bytes:
    return args.text.encode() if args.text is not None else hex_bytes(args.payload_hex, "--payload-hex")


def connected(args: argparse.Namespace, action: Callable[[Any, int], Awaitable[int | None]]) -> int:
    """Run ``action(connection, magic)`` on one topic connection to the node of ``args``."""
    import trio

    from clients.mithril import DmqClientError
    from clients.topics import open_topic_connection

    magic = network_magic_of(args)

    async def main() -> int | None:
        async with open_topic_connection(socket_path_of(args), magic) as conn:
            return await action(conn, magic)

    try:
        status = trio.run(main)
    except DmqClientError as exc:
        raise OperatorError(str(exc)) from None
    return 0 if status is None else status


def published_line(published: Any) -> str:
    """``published id=<DMQ id> inner=<adapter's id>`` (the DMQ id ``none (node-local)`` for a
    multicast queued for node-local members only)."""
    inner = "" if published.inner_id is None else f" inner={published.inner_id.hex()}"
    dmq_id = "none (node-local)" if published.dmq_id is None else published.dmq_id.hex()
    return f"published id={dmq_id}{inner}"


def publish_body(args: argparse.Namespace, body: bytes, *extra: str) -> int:
    """Hand ``body`` to the node (``MsgPublish``) and print the published line, then ``extra``
    words on it."""
    async def action(conn: Any, magic: int) -> None:
        published = await conn.ask(conn.topics.publish(body))
        print(" ".join([published_line(published), *extra]), flush=True)

    return connected(args, action)
