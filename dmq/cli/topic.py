"""``dmq topic subscribe|join|leave|publish|pull``: a topic client on the node's local socket.

Speaks the local topic subscription protocol (1000) under node-to-client version 12289
(docs/topics-design.md 3); a node without topics answers 4097 and the command says so in one line.
Keys for ``join``, ``leave``, ``pull`` and durable UPSYCLE subscriptions are Ed25519 seeds
(a file of 64 hex digits). One line per delivered item::

    sub=<id> dseq=<n> kind=<item kind> adapter=<n> key=<hex> inner=<hex> pool=<hex> size=<bytes>
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dmq.cli import hex_bytes
from dmq.cli.publish import add_connection_arguments, network_magic_of, socket_path_of
from dmq.errors import OperatorError

__all__ = ["add_parser", "run", "describe_item"]

_ADAPTERS = {"raw": 0, "upsycle": 1, "blocklace": 2, "dmsg": 3}
_STARTS = {"now": 0, "retained": 1, "state": 2}


def _signing_key(path: str | None, what: str):
    from nacl.signing import SigningKey

    if path is None:
        raise OperatorError(f"{what} needs --key FILE (an Ed25519 seed: 64 hex digits)")
    try:
        text = Path(path).read_text().strip()
    except OSError as exc:
        raise OperatorError(f"--key {path}: {exc.strerror}") from None
    return SigningKey(hex_bytes(text, f"--key {path}", 32))


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("topic", help="subscribe, publish, join, leave and pull topics",
                                   description="A topic client over the node's local socket (protocol 1000).")
    commands = parser.add_subparsers(dest="topic_command", metavar="ACTION", required=True)

    sub = commands.add_parser("subscribe", help="print items of a subscription as they arrive")
    add_connection_arguments(sub)
    sub.add_argument("--adapter", choices=sorted(_ADAPTERS), default="raw")
    sub.add_argument("--group", action="append", default=[], metavar="HEX", help="UPSYCLE group key (repeat)")
    sub.add_argument("--topic", action="append", default=[], metavar="HEX", help="Blocklace topic id (repeat)")
    sub.add_argument("--start", choices=sorted(_STARTS), default="now")
    sub.add_argument("--durable", metavar="NAME", help="a durable subscription of this name")
    sub.add_argument("--key", metavar="FILE", help="subscriber key (durable UPSYCLE subscriptions)")
    sub.add_argument("--count", metavar="N", type=int, help="stop after N items")
    sub.add_argument("--non-blocking", action="store_true", help="take what is there and stop")

    pub = commands.add_parser("publish", help="publish an adapter body, wrapped and signed by the node",
                              description="Publish a body, wrapped and signed by the node. A Blocklace block is "
                                          "a draft: the node picks its sequence number, pointers, epoch and floor "
                                          "(--event-hex / --ack with --blocklace-topic build one).")
    add_connection_arguments(pub)
    body = pub.add_mutually_exclusive_group(required=True)
    body.add_argument("--body", metavar="FILE", help="the body's bytes ('-': standard input)")
    body.add_argument("--body-hex", metavar="HEX", help="the body as hexadecimal")
    body.add_argument("--event-hex", metavar="HEX", help="a Blocklace Event carrying these bytes (with --blocklace-topic)")
    body.add_argument("--ack", action="store_true", help="a Blocklace Ack (with --blocklace-topic)")
    pub.add_argument("--blocklace-topic", metavar="HEX", help="the Blocklace topic id of --event-hex or --ack")
    pub.add_argument("--tag", action="append", default=[], metavar="HEX",
                     help="a content tag of the Blocklace block (repeat, up to 8)")

    for name, text in (("join", "join an UPSYCLE group"), ("leave", "leave an UPSYCLE group")):
        member = commands.add_parser(name, help=text)
        add_connection_arguments(member)
        member.add_argument("--group", required=True, metavar="HEX")
        member.add_argument("--key", required=True, metavar="FILE")
        if name == "join":
            member.add_argument("--local", action="store_true", help="a node-local group")

    pull = commands.add_parser("pull", help="ask for missed UPSYCLE messages")
    add_connection_arguments(pull)
    pull.add_argument("--group", required=True, metavar="HEX")
    pull.add_argument("--key", required=True, metavar="FILE")
    pull.add_argument("--id", action="append", required=True, metavar="HEX", help="message id (repeat, up to 16)")

    from dmq.cli.topic_blocklace import register
    from dmq.cli.topic_private import register as register_private

    register(commands)
    register_private(commands)


def describe_item(item: Any) -> str:
    meta = item.meta or {}
    parts = [f"sub={item.sub_id}", f"dseq={item.dseq}", f"kind={item.kind}"]
    if meta:
        parts.append(f"adapter={meta.get(0)}")
        parts.append(f"key={bytes(meta.get(1, b'')).hex()}")
        if 2 in meta:
            parts.append(f"inner={meta[2].hex()}")
        if 3 in meta:
            parts.append(f"pool={meta[3].hex()}")
    parts.append(f"size={len(item.raw)}")
    return " ".join(parts)


def _selector(args: argparse.Namespace) -> dict[int, Any]:
    selector: dict[int, Any] = {0: _ADAPTERS[args.adapter]}
    if args.group:
        selector[1] = [hex_bytes(g, "--group", 32) for g in args.group]
    if args.topic:
        selector[3] = [hex_bytes(t, "--topic", 32) for t in args.topic]
    return selector


async def _subscribe(args: argparse.Namespace, conn: Any, magic: int) -> None:
    from integrations.topics import Durable, decode_item, make_auth

    durable = None
    if args.durable is not None:
        name = args.durable.encode()
        auth = None
        if args.adapter == "upsycle":
            key = _signing_key(args.key, "a durable UPSYCLE subscription")
            name = bytes(key.verify_key)
            auth = make_auth(key, "attach", None, magic)
        durable = Durable(name, auth)
    subscribed = await conn.ask(conn.topics.subscribe([_selector(args)], _STARTS[args.start], durable))
    printed, acks = 0, []
    while args.count is None or printed < args.count:
        reply = await conn.ask(conn.topics.next(blocking=not args.non_blocking, acks=acks))
        acks = []
        for raw in reply.items:
            item = decode_item(raw)
            print(describe_item(item), flush=True)
            printed += 1
            acks = [(subscribed.sub_id, item.dseq)]
            if args.count is not None and printed >= args.count:
                break
        if args.non_blocking and not reply.has_more:
            break
    if acks:
        await conn.ask(conn.topics.next(blocking=False, acks=acks, max_items=1))


async def _run(args: argparse.Namespace, magic: int) -> None:
    from integrations.topics import make_auth, open_topic_connection

    async with open_topic_connection(socket_path_of(args), magic) as conn:
        action = args.topic_command
        if action == "subscribe":
            await _subscribe(args, conn, magic)
        elif action == "publish":
            body = _publication_body(args)
            published = await conn.ask(conn.topics.publish(body))
            inner = "" if published.inner_id is None else f" inner={published.inner_id.hex()}"
            dmq_id = "none (node-local)" if published.dmq_id is None else published.dmq_id.hex()
            print(f"published id={dmq_id}{inner}")
        elif action in ("join", "leave"):
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
        elif action == "pull":
            key = _signing_key(args.key, "pull")
            ids = [hex_bytes(i, "--id", 32) for i in args.id]
            if len(ids) > 16:
                raise OperatorError(f"--id given {len(ids)} times: a pull names at most 16 ids")
            reply = await conn.ask(conn.topics.pull(bytes(key.verify_key), hex_bytes(args.group, "--group", 32), ids))
            names = ["queued", "requested", "not_found", "expired", "not_member", "rate_limited"]
            for ident, status in reply.statuses:
                print(f"id={ident.hex()} status={names[status]}")


def _publication_body(args: argparse.Namespace) -> bytes:
    """The body ``publish`` hands the node: given as is, or a Blocklace draft built here."""
    blocklace = args.event_hex is not None or args.ack
    if (args.blocklace_topic is not None or args.tag) and not blocklace:
        raise OperatorError("--blocklace-topic and --tag go with --event-hex or --ack")
    if not blocklace:
        return hex_bytes(args.body_hex, "--body-hex") if args.body_hex is not None else _read_body(args.body)
    if args.blocklace_topic is None:
        raise OperatorError("--event-hex and --ack need --blocklace-topic HEX (the topic id, 32 bytes)")
    from integrations.topics import ack_draft, event_draft
    from topics.blocklace.reasons import BlocklaceReject

    topic = hex_bytes(args.blocklace_topic, "--blocklace-topic", 32)
    tags = [hex_bytes(t, "--tag") for t in args.tag]
    if any(not 1 <= len(t) <= 32 for t in tags) or len(tags) > 8:
        raise OperatorError("--tag: up to 8 content tags of 1 to 32 bytes each")
    try:
        if args.ack:
            return ack_draft(topic, tags)
        return event_draft(topic, hex_bytes(args.event_hex, "--event-hex"), tags)
    except BlocklaceReject as exc:
        raise OperatorError(f"--event-hex: {exc.detail}") from None


def _read_body(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise OperatorError(f"--body {path}: {exc.strerror}") from None


def run(args: argparse.Namespace) -> int:
    import trio

    if hasattr(args, "func"):
        # The commands that read the node's database (topic_blocklace) need no connection.
        return args.func(args)

    from integrations.mithril import DmqClientError

    if getattr(args, "count", None) is not None and args.count < 1:
        raise OperatorError(f"--count {args.count}: expected a positive number of items")
    magic = network_magic_of(args)
    try:
        trio.run(_run, args, magic)
    except DmqClientError as exc:
        raise OperatorError(str(exc)) from None
    return 0
