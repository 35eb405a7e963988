"""``dmq topic ...``: a topic client on the node's local socket, and the builders of topic bodies.

Speaks the local topic subscription protocol (1000) under node-to-client version 12289
(docs/topics-design.md 3); a node without topics answers 4097 and the command says so in one
line. Commands:

- ``new-key``: a secret key file (Ed25519 for UPSYCLE, Blocklace owner and subscriber keys,
  X25519 for private-group members, secp256k1 for dmsg) and its public key;
- ``subscribe``: items of a filter (adapter, groups, topics, publishers, tags, keys), each
  decoded with its payload and causal metadata, as text or ``--json``;
- ``publish``: a body given as bytes (raw, or any adapter body built elsewhere);
- ``join``, ``leave``, ``pull``: UPSYCLE membership and missed messages;
- ``upsycle``, ``blocklace``, ``dmsg``: build, sign and publish each adapter's bodies
  (:mod:`dmq.cli.topic_upsycle`, :mod:`dmq.cli.topic_blocklace`, :mod:`dmq.cli.topic_dmsg`);
- ``private``: end-to-end encrypted UPSYCLE groups (:mod:`dmq.cli.topic_private`);
- ``equivocations``, ``find-relay``: read the node's database (:mod:`dmq.cli.topic_queries`).

One line per delivered item (``--json``: one object per line, the same fields)::

    sub=<id> dseq=<n> kind=<item kind> adapter=<name> key=<hex> ... then the content's fields
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dmq.cli import hex_bytes
from dmq.cli.secret_files import read_secret, write_secret
from dmq.cli.topic_session import add_connection_arguments, connected, publish_body
from dmq.errors import OperatorError

__all__ = ["add_parser", "run", "item_line"]

_STARTS = {"now": 0, "retained": 1, "state": 2}
_KEY_KINDS = ("ed25519", "x25519", "secp256k1")


def _signing_key(path: str | None, what: str):
    from nacl.signing import SigningKey

    if path is None:
        raise OperatorError(f"{what} needs --key FILE (an Ed25519 seed: 64 hex digits)")
    return SigningKey(read_secret(path, "--key"))


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("topic", help="topic keys, subscriptions and publications (UPSYCLE, Blocklace, "
                                                 "dmsg)",
                                   description="A topic client over the node's local socket (protocol 1000).")
    commands = parser.add_subparsers(dest="topic_command", metavar="ACTION", required=True)

    new_key = commands.add_parser("new-key", help="write a new secret key file and print its public key")
    new_key.add_argument("--out", required=True, metavar="FILE", help="the key file to create (never replaced)")
    new_key.add_argument("--kind", choices=_KEY_KINDS, default="ed25519",
                         help="ed25519: UPSYCLE, Blocklace owner and subscriber keys (default); x25519: a private "
                              "group member; secp256k1: a dmsg static key")
    new_key.set_defaults(func=_run_new_key)

    sub = commands.add_parser("subscribe", help="print items of a subscription as they arrive",
                              description="Subscribe with one selector: every criterion given must match "
                                          "(values of one criterion: any of them).")
    add_connection_arguments(sub)
    # Names are checked by clients.topics.selectors when the command runs: building the
    # parser of every dmq command imports no client code.
    sub.add_argument("--adapter", default="raw", metavar="NAME", help="raw (default), upsycle, blocklace or dmsg")
    for flag, metavar, text in (
            ("--group", "HEX", "UPSYCLE group key"), ("--destination", "HEX", "UPSYCLE unicast destination"),
            ("--topic", "HEX", "Blocklace topic id"), ("--publisher", "POOL", "pool id (Blocklace creator, "
                                                                            "else the wrapping pool)"),
            ("--exclude-publisher", "POOL", "pool id to leave out"), ("--tag", "HEX", "Blocklace content tag"),
            ("--exclude-tag", "HEX", "content tag to leave out"), ("--static-key", "HEX", "dmsg static key")):
        sub.add_argument(flag, action="append", default=[], metavar=metavar, help=f"{text} (repeat)")
    sub.add_argument("--payload-type", action="append", default=[], metavar="TYPE",
                     help="Blocklace payload type: event, ack, epoch or advertisement (repeat)")
    sub.add_argument("--role", action="append", default=[], metavar="ROLE",
                     help="dmsg record: client or server (repeat)")
    sub.add_argument("--start", choices=sorted(_STARTS), default="now",
                     help="now: new items; retained: what the node holds, then new; state: the adapter's state")
    sub.add_argument("--durable", metavar="NAME", help="a durable subscription of this name")
    sub.add_argument("--key", metavar="FILE", help="subscriber key (durable UPSYCLE subscriptions)")
    sub.add_argument("--count", metavar="N", type=int, help="stop after N items")
    sub.add_argument("--non-blocking", action="store_true", help="take what is there and stop")
    sub.add_argument("--json", action="store_true", help="one JSON object per item")

    pub = commands.add_parser("publish", help="publish a body as it is, wrapped and signed by the node",
                              description="Publish a body given as bytes: raw, or an adapter body built elsewhere "
                                          "(dmq topic upsycle|blocklace|dmsg build and publish them).")
    add_connection_arguments(pub)
    body = pub.add_mutually_exclusive_group(required=True)
    body.add_argument("--body", metavar="FILE", help="the body's bytes ('-': standard input)")
    body.add_argument("--body-hex", metavar="HEX", help="the body as hexadecimal")

    for name, text in (("join", "join an UPSYCLE group"), ("leave", "leave an UPSYCLE group")):
        member = commands.add_parser(name, help=text)
        add_connection_arguments(member)
        member.add_argument("--group", required=True, metavar="HEX")
        member.add_argument("--key", required=True, metavar="FILE", help="the subscriber's key file")
        if name == "join":
            member.add_argument("--local", action="store_true", help="a node-local group")

    pull = commands.add_parser("pull", help="ask for missed UPSYCLE messages")
    add_connection_arguments(pull)
    pull.add_argument("--group", required=True, metavar="HEX")
    pull.add_argument("--key", required=True, metavar="FILE")
    pull.add_argument("--id", action="append", required=True, metavar="HEX", help="message id (repeat, up to 16)")

    from dmq.cli.topic_blocklace import register as register_blocklace
    from dmq.cli.topic_dmsg import register as register_dmsg
    from dmq.cli.topic_private import register as register_private
    from dmq.cli.topic_queries import register as register_queries
    from dmq.cli.topic_upsycle import register as register_upsycle

    for register in (register_upsycle, register_blocklace, register_dmsg, register_private, register_queries):
        register(commands)


def _run_new_key(args: argparse.Namespace) -> int:
    secret = write_secret(args.out)
    if args.kind == "ed25519":
        from nacl.signing import SigningKey

        public = bytes(SigningKey(secret).verify_key).hex()
    elif args.kind == "x25519":
        from nacl.public import PrivateKey

        public = bytes(PrivateKey(secret).public_key).hex()
    else:
        from clients.topics.dmsg import static_key

        try:
            public = static_key(secret)
        except ValueError as exc:    # one chance in 2^128: the file is removed so that it is not used
            Path(args.out).unlink()
            raise OperatorError(f"{exc}; run the command again") from None
    print(public)
    return 0


def item_line(record: dict[str, Any]) -> str:
    """``name=value`` pairs of a described item; lists joined by commas (``-`` when empty)."""
    parts = []
    for name, value in record.items():
        if name == "text":
            value = json.dumps(value)       # quoted: one token however many words
        elif isinstance(value, list):
            value = ",".join(str(v) for v in value) or "-"
        elif isinstance(value, dict):
            value = ",".join(f"{k}:{v}" for k, v in value.items()) or "-"
        parts.append(f"{name}={value}")
    return " ".join(parts)


#: Subscription flags (their argparse names), the selector criterion each fills, the size of a value.
_CRITERIA = (("group", "groups", 32), ("destination", "destinations", 32), ("topic", "topics", 32),
             ("publisher", "publishers", 28), ("exclude_publisher", "exclude_publishers", 28),
             ("tag", "tags", None), ("exclude_tag", "exclude_tags", None), ("static_key", "static_keys", 33))


def _selector(args: argparse.Namespace) -> dict[int, Any]:
    from clients.topics.selectors import FilterError, selector

    criteria: dict[str, list[Any]] = {"payload_types": args.payload_type, "roles": args.role}
    for name, criterion, size in _CRITERIA:
        criteria[criterion] = [hex_bytes(v, "--" + name.replace("_", "-"), size) for v in getattr(args, name)]
    try:
        return selector(args.adapter, **criteria)
    except FilterError as exc:
        raise OperatorError(f"the filter: {exc}") from None


async def _subscribe(args: argparse.Namespace, selector: dict[int, Any], conn: Any, magic: int) -> None:
    from clients.topics import Durable, decode_item, make_auth
    from clients.topics.items import describe

    durable = None
    if args.durable is not None:
        name = args.durable.encode()
        auth = None
        if args.adapter == "upsycle":
            key = _signing_key(args.key, "a durable UPSYCLE subscription")
            name = bytes(key.verify_key)
            auth = make_auth(key, "attach", None, magic)
        durable = Durable(name, auth)
    subscribed = await conn.ask(conn.topics.subscribe([selector], _STARTS[args.start], durable))
    printed, acks = 0, []
    while args.count is None or printed < args.count:
        reply = await conn.ask(conn.topics.next(blocking=not args.non_blocking, acks=acks))
        acks = []
        for raw in reply.items:
            item = decode_item(raw)
            record = describe(item)
            print(json.dumps(record, separators=(",", ":")) if args.json else item_line(record), flush=True)
            printed += 1
            acks = [(subscribed.sub_id, item.dseq)]
            if args.count is not None and printed >= args.count:
                break
        if args.non_blocking and not reply.has_more:
            break
    if acks:
        await conn.ask(conn.topics.next(blocking=False, acks=acks, max_items=1))


async def _membership(args: argparse.Namespace, conn: Any, magic: int) -> None:
    from clients.topics import make_auth

    action = args.topic_command
    if action == "pull":
        key = _signing_key(args.key, "pull")
        ids = [hex_bytes(i, "--id", 32) for i in args.id]
        if len(ids) > 16:
            raise OperatorError(f"--id given {len(ids)} times: a pull names at most 16 ids")
        reply = await conn.ask(conn.topics.pull(bytes(key.verify_key), hex_bytes(args.group, "--group", 32), ids))
        names = ["queued", "requested", "not_found", "expired", "not_member", "rate_limited"]
        for ident, status in reply.statuses:
            print(f"id={ident.hex()} status={names[status]}")
        return
    key = _signing_key(args.key, action)
    group = hex_bytes(args.group, "--group", 32)
    auth = make_auth(key, action, group, magic)
    if action == "join":
        ack = await conn.ask(conn.topics.join(bytes(key.verify_key), group, args.local, auth))
    else:
        ack = await conn.ask(conn.topics.leave(bytes(key.verify_key), group, auth))
    detail = "" if ack.detail is None else f" detail={ack.detail}"
    print(f"{action} group={group.hex()} result={'success' if ack.result == 0 else 'failure'}{detail}")
    if ack.result != 0:
        raise OperatorError(f"{action} refused by the node (detail {ack.detail})")


def _read_body(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise OperatorError(f"--body {path}: {exc.strerror}") from None


def run(args: argparse.Namespace) -> int:
    if hasattr(args, "func"):
        # Commands of their own modules (builders, private groups, database queries).
        return args.func(args)
    if getattr(args, "count", None) is not None and args.count < 1:
        raise OperatorError(f"--count {args.count}: expected a positive number of items")
    action = args.topic_command
    if action == "publish":
        body = hex_bytes(args.body_hex, "--body-hex") if args.body_hex is not None else _read_body(args.body)
        return publish_body(args, body)
    if action == "subscribe":
        selector = _selector(args)     # a bad filter is refused before connecting
        return connected(args, lambda conn, magic: _subscribe(args, selector, conn, magic))
    return connected(args, lambda conn, magic: _membership(args, conn, magic))
