"""``dmq inspect``: decode one DMQ message and, if asked, validate it as a node would.

Input: a message file (binary CBOR as ``dmq subscribe --out`` saves it, or hex text), ``-``
for standard input, or ``--hex``. The report shows the id (and whether it matches the
payload), the pool, the KES period against the certificate, the expiry and the body; a body
that parses as a Mithril ``RegisterSignatureMessageDmq`` is described too.

With ``--genesis`` (the pools of a Shelley genesis, as a devnet node uses them) or
``--stake-file``, the message goes through the node's own validation checks at ``--now``
(default: the clock) and the verdict is the reference's error text. Exit status: 0 when the
message decodes (and validates, if asked), 1 otherwise. There is no mempool, so duplicates
and the per-pool rate limit are not judged.
"""

from __future__ import annotations

import argparse
import math
from datetime import datetime, timezone

from dmq.cli import hex_bytes
from dmq.cli.publish import read_message_file
from dmq.errors import OperatorError

__all__ = ["add_parser", "run", "parse_time", "utc_text"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect", help="decode a message and optionally validate it",
        description="Decode one DMQ message and show what it carries; with --genesis or --stake-file, "
                    "validate it as a node would at --now.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("file", nargs="?", metavar="FILE",
                        help="the message (binary CBOR or hex text; '-' reads standard input)")
    source.add_argument("--hex", metavar="HEX", help="the message as hex")
    stake = parser.add_mutually_exclusive_group()
    stake.add_argument("--genesis", metavar="FILE", help="validate against the pools of this Shelley genesis")
    stake.add_argument("--stake-file", metavar="FILE", help="validate against this stake file")
    parser.add_argument("--now", metavar="TIME",
                        help="validate at this time: POSIX seconds or ISO 8601 (default: now)")


def parse_time(text: str) -> float:
    """POSIX seconds (``1800000000.5``) or an ISO 8601 time (UTC unless it says otherwise)."""
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(value):
            raise OperatorError(f"--now {text!r}: not a finite time")
        return value
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise OperatorError(f"--now {text!r}: expected POSIX seconds or an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def utc_text(seconds: float) -> str:
    """POSIX seconds as ``2026-01-01T00:00:00Z`` (``out of range`` when no date has them)."""
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return "out of range"


def _mithril_line(body: bytes) -> str:
    from clients.mithril import BodyDecodeError, RegisterSignatureMessageDmq

    try:
        parsed = RegisterSignatureMessageDmq.from_bytes(body)
    except BodyDecodeError as exc:
        return f"not a Mithril signature message ({exc})"
    return (f"Mithril signature for {parsed.signed_entity_type}, "
            f"{len(parsed.signature)}-byte {parsed.signature_format} single signature")


def _validate(args: argparse.Namespace, message) -> str | None:
    """The verdict text (None when no stake source was given)."""
    if args.genesis is None and args.stake_file is None:
        if args.now is not None:
            raise OperatorError("--now needs --genesis or --stake-file: there is nothing to validate against")
        return None
    from dmq.clock import ManualClock, SystemClock
    from dmq.stake import StakeView
    from dmq.validation import Validator

    clock = SystemClock() if args.now is None else ManualClock(now=parse_time(args.now))
    if args.genesis is not None:
        view = StakeView.from_shelley_genesis(args.genesis, clock)
    else:
        view = StakeView.from_json(args.stake_file, clock)
    error = Validator(view, clock).check(message)
    return "valid" if error is None else f"invalid: {error}"


def run(args: argparse.Namespace) -> int:
    from dmq.codec import MessageDecodeError, decode_message
    from dmq.opcert import pool_id_bech32

    raw = hex_bytes(args.hex, "--hex") if args.hex is not None else read_message_file(args.file)
    try:
        message = decode_message(raw)
    except MessageDecodeError as exc:
        raise OperatorError(f"not a DMQ message: {exc}") from None
    verdict = _validate(args, message)
    opcert = message.opcert
    id_note = "matches the payload" if message.has_valid_id() else \
        f"DOES NOT match the payload (expected {message.expected_message_id().hex()})"
    evolution = message.kes_period - opcert.start_kes_period
    lines = [
        f"id:          {message.message_id.hex()} ({id_note})",
        f"pool id:     {message.pool_id.hex()}",
        f"pool:        {pool_id_bech32(message.pool_id)}",
        f"kes period:  {message.kes_period} (evolution {evolution} of the certificate starting at "
        f"{opcert.start_kes_period}, issue number {opcert.issue_number})",
        f"expires at:  {message.expires_at} ({utc_text(message.expires_at)})",
        f"body:        {len(message.body)} bytes, {_mithril_line(message.body)}",
        f"size:        {message.size} bytes",
    ]
    if verdict is not None:
        lines.append(f"verdict:     {verdict}")
    print("\n".join(lines), flush=True)
    return 0 if verdict in (None, "valid") else 1
