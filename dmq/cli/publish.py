"""``dmq publish``: submit one message to the local node, as a Mithril signer does.

Either sign a body with the pool's ``kes.skey`` and ``node.cert`` (or an entry of a bulk
credentials file) at an explicit KES period, or submit an already signed message file.
Prints the node's verdict, ``accepted`` or ``rejected: <reason>``, and exits 0 or 1.

The connection options (``--socket``, ``--network`` / ``--magic``) and the message-file reader
are shared with ``dmq subscribe`` and ``dmq inspect``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from dmq.cli import hex_bytes
from dmq.errors import OperatorError

__all__ = [
    "add_parser",
    "run",
    "add_connection_arguments",
    "network_magic_of",
    "socket_path_of",
    "read_message_file",
    "DEFAULT_SOCKET",
    "SOCKET_ENVIRONMENT_VARIABLE",
]

#: The node's default ``LocalAddress``; Mithril reads the path from this variable.
DEFAULT_SOCKET = "dmq-node.socket"
SOCKET_ENVIRONMENT_VARIABLE = "DMQ_NODE_SOCKET_PATH"
_DEFAULT_NETWORK = "mainnet"


# -- shared with subscribe and inspect ---------------------------------------------------

def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--socket", metavar="PATH",
                        help=f"the node's local socket (default: ${SOCKET_ENVIRONMENT_VARIABLE}, "
                             f"else {DEFAULT_SOCKET})")
    network = parser.add_mutually_exclusive_group()
    network.add_argument("--network", metavar="NAME",
                         help=f"mainnet, preprod, preview or devnet (default: {_DEFAULT_NETWORK})")
    network.add_argument("--magic", metavar="N", help="the DMQ network magic of a private network")


def socket_path_of(args: argparse.Namespace) -> str:
    return args.socket or os.environ.get(SOCKET_ENVIRONMENT_VARIABLE) or DEFAULT_SOCKET


def network_magic_of(args: argparse.Namespace) -> int:
    from clients.mithril import UnknownNetwork, resolve_dmq_magic

    choice = args.magic if args.magic is not None else (args.network or _DEFAULT_NETWORK)
    if args.magic is not None and not args.magic.strip().isdigit():
        raise OperatorError(f"--magic {args.magic!r}: expected a decimal network magic")
    try:
        return resolve_dmq_magic(choice)
    except UnknownNetwork as exc:
        raise OperatorError(str(exc)) from None


def _read_bytes(path: str, what: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise OperatorError(f"{path}: no such {what} file") from None
    except IsADirectoryError:
        raise OperatorError(f"{path}: is a directory, not a {what} file") from None
    except OSError as exc:
        raise OperatorError(f"{path}: cannot read the {what} file ({exc.strerror})") from None


def read_message_file(path: str) -> bytes:
    """A message file as ``dmq subscribe --out`` writes it (binary CBOR) or as hex text.

    A DMQ message starts with the CBOR head of an array (0x80..0x9f), which is never a hex
    digit, so the two forms cannot be confused.
    """
    data = _read_bytes(path, "message")
    if not data:
        raise OperatorError(f"{path}: the message file is empty")
    if 0x80 <= data[0] <= 0x9F:
        return data
    try:
        return bytes.fromhex("".join(data.decode("ascii").split()))
    except (UnicodeDecodeError, ValueError):
        raise OperatorError(f"{path}: neither a binary CBOR message nor hex text") from None


# -- publish ----------------------------------------------------------------------------

def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "publish", help="sign and submit a message to the local node (or submit a signed one)",
        description="Submit one message over the node's local socket, one connection per message, "
                    "as a Mithril signer does. Prints 'accepted' or the reject reason.")
    add_connection_arguments(parser)
    what = parser.add_argument_group("the message (one of)")
    source = what.add_mutually_exclusive_group(required=True)
    source.add_argument("--body", metavar="FILE", help="sign the bytes of FILE ('-' reads standard input)")
    source.add_argument("--body-hex", metavar="HEX", help="sign these bytes")
    source.add_argument("--signed", metavar="FILE", help="submit an already signed message (binary CBOR or hex)")
    keys = parser.add_argument_group("signing credentials")
    keys.add_argument("--kes-key", metavar="FILE", help="the pool's KES signing key (kes.skey)")
    keys.add_argument("--opcert", metavar="FILE", help="its operational certificate (node.cert)")
    keys.add_argument("--bulk-credentials", metavar="FILE",
                      help="instead: a cardano-node bulk credentials file (devnets)")
    keys.add_argument("--credential", metavar="N", type=int, default=0,
                      help="which entry of the bulk credentials file (default: 0)")
    period = parser.add_argument_group("KES period (one of, when signing)")
    periods = period.add_mutually_exclusive_group()
    periods.add_argument("--kes-period", metavar="N", type=int, help="the current absolute KES period")
    periods.add_argument("--slot", metavar="SLOT", type=int,
                         help="the current slot (period = SLOT div --slots-per-kes-period)")
    periods.add_argument("--genesis", metavar="FILE",
                         help="compute the period from this Shelley genesis and the clock "
                              "(chains without a Byron era only)")
    parser.add_argument("--slots-per-kes-period", metavar="N", type=int, default=129_600,
                        help="for --slot (default: 129600, every public network)")
    parser.add_argument("--ttl", metavar="SECONDS", type=int, default=None,
                        help="expiresAt = now + TTL (default: 1800, Mithril's and the node's maximum)")


def _credentials(args: argparse.Namespace):
    from clients.mithril import SigningCredentials, SigningError
    from dmq.keyfiles import KeyFileError

    try:
        if args.bulk_credentials is not None:
            if args.kes_key or args.opcert:
                raise OperatorError("give either --bulk-credentials or --kes-key and --opcert, not both")
            return SigningCredentials.from_bulk_credentials(args.bulk_credentials, args.credential)
        if not (args.kes_key and args.opcert):
            raise OperatorError("signing needs --kes-key and --opcert (or --bulk-credentials)")
        return SigningCredentials.from_files(args.kes_key, args.opcert)
    except (KeyFileError, SigningError) as exc:
        raise OperatorError(str(exc)) from None


def _kes_periods(args: argparse.Namespace):
    from clients.mithril import FixedKesPeriod, GenesisClockKesPeriod, KesPeriodUnavailable, SlotKesPeriod
    from dmq.stake import load_shelley_genesis

    try:
        if args.kes_period is not None:
            return FixedKesPeriod(args.kes_period)
        if args.slot is not None:
            return SlotKesPeriod(args.slot, args.slots_per_kes_period)
        if args.genesis is not None:
            return GenesisClockKesPeriod.from_genesis(load_shelley_genesis(args.genesis))
    except KesPeriodUnavailable as exc:
        raise OperatorError(str(exc)) from None
    raise OperatorError("signing needs the KES period: give --kes-period, --slot or --genesis")


def _message_to_submit(args: argparse.Namespace) -> bytes:
    from clients.mithril import DEFAULT_TTL, MessageBuilder, SigningError
    from dmq.codec import MessageDecodeError, decode_message

    if args.signed is not None:
        for flag, value in (("--kes-key", args.kes_key), ("--opcert", args.opcert),
                            ("--bulk-credentials", args.bulk_credentials), ("--kes-period", args.kes_period),
                            ("--slot", args.slot), ("--genesis", args.genesis), ("--ttl", args.ttl)):
            if value is not None:
                raise OperatorError(f"{flag} has no effect with --signed: the message is already signed")
        raw = read_message_file(args.signed)
        try:
            decode_message(raw)
        except MessageDecodeError as exc:
            raise OperatorError(f"{args.signed}: not a DMQ message a node would decode ({exc})") from None
        return raw
    body = _read_bytes(args.body, "body") if args.body is not None else hex_bytes(args.body_hex, "--body-hex")
    kes_periods = _kes_periods(args)
    credentials = _credentials(args)
    try:
        builder = MessageBuilder(credentials, kes_periods, ttl=DEFAULT_TTL if args.ttl is None else args.ttl)
        return builder.build(body).raw
    except SigningError as exc:
        raise OperatorError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    import trio

    from clients.mithril import DmqClientError, Publisher, describe_result, is_accepted

    magic = network_magic_of(args)
    raw = _message_to_submit(args)
    try:
        result = trio.run(Publisher(socket_path_of(args), magic).submit, raw)
    except DmqClientError as exc:
        raise OperatorError(str(exc)) from None
    print(describe_result(result), flush=True)
    return 0 if is_accepted(result) else 1
