"""``dmq topic private ACTION``: a member or owner of an end-to-end encrypted UPSYCLE group.

The commands drive ``clients.topics.private_group`` (docs/topics.md, "Private groups")
over the node's local socket; the node never sees a key. Keys are files of 64 hex digits:
``--member-key`` an X25519 secret, ``--key`` the Ed25519 seed of the member's durable UPSYCLE
subscriber, ``--owner-key`` the owner's Ed25519 seed, ``--group-key`` the seed of the UPSYCLE
group key (all written by ``dmq topic new-key``, ``--kind x25519`` for members). A member's
state (epoch keys, what it has delivered) lives in ``--state``.

- ``members --epoch N --member HEX ...``: the owner publishes epoch N with these members
  (revoking = the next epoch without the member).
- ``join``: the member subscribes and joins the group at its node, and starts its state.
- ``fetch``: reads the queue; one line per delivery ``id=<hex> payload=<hex>`` (``missing=``
  when released without some dependencies).
- ``publish --payload-hex HEX``: encrypts under the current epoch and publishes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dmq.cli import hex_bytes
from dmq.cli.publish import add_connection_arguments, network_magic_of, socket_path_of
from dmq.cli.secret_files import read_secret
from dmq.errors import OperatorError

__all__ = ["register", "run_private"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``private`` and its actions to the ``dmq topic`` sub-parsers."""
    parser = subparsers.add_parser("private", help="an end-to-end encrypted UPSYCLE group",
                                   description="Owner and member commands of a private UPSYCLE group.")
    actions = parser.add_subparsers(dest="private_action", metavar="ACTION", required=True)

    members = actions.add_parser("members", help="publish a membership epoch (owner)")
    add_connection_arguments(members)
    members.add_argument("--owner-key", required=True, metavar="FILE")
    members.add_argument("--group-key", required=True, metavar="FILE")
    members.add_argument("--epoch", required=True, type=int)
    members.add_argument("--member", action="append", default=[], metavar="HEX", help="X25519 public key (repeat)")

    for name, text in (("join", "join the group at the node and start the state file"),
                       ("fetch", "read, decrypt and print what the node queued"),
                       ("publish", "encrypt and publish a payload")):
        action = actions.add_parser(name, help=text)
        add_connection_arguments(action)
        action.add_argument("--member-key", required=True, metavar="FILE")
        action.add_argument("--key", required=True, metavar="FILE", help="the durable subscriber's Ed25519 seed")
        action.add_argument("--state", required=True, metavar="FILE")
        if name == "join":
            action.add_argument("--owner", required=True, metavar="HEX", help="the owner's Ed25519 public key")
            action.add_argument("--group", required=True, metavar="HEX", help="the UPSYCLE group key")
        if name == "publish":
            action.add_argument("--payload-hex", required=True, metavar="HEX")
    parser.set_defaults(func=run_private)


def run_private(args: argparse.Namespace) -> int:
    import trio

    from clients.mithril import DmqClientError

    try:
        return trio.run(_connected, args, network_magic_of(args))
    except DmqClientError as exc:
        raise OperatorError(str(exc)) from None


async def _connected(args: argparse.Namespace, magic: int) -> int:
    from nacl.public import PrivateKey
    from nacl.signing import SigningKey

    from clients.topics import GroupMember, GroupOwner, NotAMember, PrivateGroupClient
    from clients.topics.private_client import publish_routed

    socket = socket_path_of(args)
    if args.private_action == "members":
        owner = GroupOwner(SigningKey(read_secret(args.owner_key, "--owner-key")), read_secret(args.group_key, "--group-key"),
                           time.time)
        record = owner.set_members([hex_bytes(m, "--member", 32) for m in args.member], args.epoch)
        dmq_id = await publish_routed(socket, magic, record)
        print(f"epoch={args.epoch} members={len(owner.members)} id={record.id.hex()} dmq={dmq_id.hex()}")
        return 0

    key = PrivateKey(read_secret(args.member_key, "--member-key"))
    state = Path(args.state)
    if args.private_action == "join":
        member = GroupMember(key, hex_bytes(args.owner, "--owner", 32), hex_bytes(args.group, "--group", 32), time.time)
    else:
        try:
            member = GroupMember.load(key, state.read_bytes(), time.time)
        except OSError as exc:
            raise OperatorError(f"--state {args.state}: {exc.strerror} (run 'join' first)") from None
    client = PrivateGroupClient(socket, magic, SigningKey(read_secret(args.key, "--key")), member, time.time)
    if args.private_action == "join":
        await client.join()
        print(f"joined group={member.grp.hex()} member={member.public.hex()}")
    elif args.private_action == "fetch":
        for delivery in await client.fetch():
            missing = f" missing={','.join(m.hex() for m in delivery.missing)}" if delivery.missing else ""
            print(f"id={delivery.id.hex()} payload={delivery.value.hex()}{missing}")
        print(f"epoch={member.epoch} revoked={'yes' if member.revoked else 'no'} unreadable={len(member.unreadable)}")
    else:
        try:
            routed, _ = member.publish(hex_bytes(args.payload_hex, "--payload-hex"))
        except NotAMember as exc:
            raise OperatorError(f"cannot publish: {exc} (fetch the membership first)") from None
        await client.publish(routed)
        print(f"published id={routed.id.hex()} epoch={member.epoch}")
    state.write_bytes(member.save())
    return 0
