"""``dmq subscribe``: print (and optionally save) the node's messages as they arrive.

Runs the Mithril aggregator's consumer: one connection, blocking requests by default,
duplicates from the node's replays dropped. ``--non-blocking`` asks without waiting and stops
once the node has nothing more; ``--count N`` stops after N messages; ``--out DIR`` saves each
message's exact bytes as ``DIR/<id>.cbor`` (what ``dmq inspect`` and ``dmq publish --signed``
read). One line per message on standard output::

    id=<hex> pool=<pool1…> kes_period=<n> expires_at=<posix> (<UTC time>) size=<bytes>
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from dmq.cli.inspect import utc_text
from dmq.cli.publish import add_connection_arguments, network_magic_of, socket_path_of
from dmq.errors import OperatorError

__all__ = ["add_parser", "run", "describe_message", "save_message"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "subscribe", help="print or save the node's messages as they arrive",
        description="Receive messages over the node's local socket with local message notification, "
                    "as a Mithril aggregator does.")
    add_connection_arguments(parser)
    parser.add_argument("--non-blocking", action="store_true",
                        help="take what the node holds now and stop, instead of waiting for messages")
    parser.add_argument("--count", metavar="N", type=int, help="stop after N messages")
    parser.add_argument("--out", metavar="DIR", help="also save each message as DIR/<id>.cbor")
    parser.add_argument("--all-copies", action="store_true",
                        help="print every copy the node sends (no de-duplication by body)")


def describe_message(message, party_id: str) -> str:
    return (f"id={message.message_id.hex()} pool={party_id} kes_period={message.kes_period} "
            f"expires_at={message.expires_at} ({utc_text(message.expires_at)}) size={message.size}")


def save_message(directory: Path, message) -> Path:
    """Write the message's received bytes to ``<id>.cbor`` atomically."""
    target = directory / f"{message.message_id.hex()}.cbor"
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(message.raw)
        os.replace(tmp, target)
    except OSError as exc:
        raise OperatorError(f"{target}: cannot save the message ({exc.strerror})") from None
    return target


async def _subscribe(args: argparse.Namespace, magic: int, out: Path | None) -> None:
    from clients.mithril import DEFAULT_DEDUP_TTL, Consumer

    printed = 0
    dedup_ttl = None if args.all_copies else DEFAULT_DEDUP_TTL
    async with Consumer(socket_path_of(args), magic, dedup_ttl=dedup_ttl) as consumer:
        while args.count is None or printed < args.count:
            if args.non_blocking:
                batch, has_more = await consumer.poll()
            else:
                batch, has_more = await consumer.consume(), True
            for item in batch:
                if args.count is not None and printed >= args.count:
                    break
                if out is not None:
                    save_message(out, item.message)
                print(describe_message(item.message, item.party_id), flush=True)
                printed += 1
            if args.non_blocking and not has_more:
                break


def run(args: argparse.Namespace) -> int:
    import trio

    from clients.mithril import DmqClientError

    if args.count is not None and args.count < 1:
        raise OperatorError(f"--count {args.count}: expected a positive number of messages")
    out = None
    if args.out is not None:
        out = Path(args.out)
        if not out.is_dir():
            raise OperatorError(f"--out {out}: no such directory")
    magic = network_magic_of(args)
    try:
        trio.run(_subscribe, args, magic, out)
    except DmqClientError as exc:
        raise OperatorError(str(exc)) from None
    return 0
