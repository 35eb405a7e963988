"""``dmq topic upsycle ACTION``: build, sign and publish UPSYCLE bodies (docs/topics-design.md 4).

- ``multicast --group-key FILE``: a message to the group whose key the file holds (the group
  key signs multicasts: whoever holds it may publish);
- ``unicast --key FILE --to HEX``: a message from the key of FILE to a service key;
- ``advertise --key FILE --address HOST:PORT --revision N``: the advertisement of the peer whose
  ``id`` key FILE holds, with its services and relayed groups.

Keys are Ed25519 key files (``dmq topic new-key``). Each prints ``published id=<DMQ id>
inner=<UPSYCLE id>``; membership is ``dmq topic join`` and ``leave``, reading is
``dmq topic subscribe --adapter upsycle``.
"""

from __future__ import annotations

import argparse
import time

from dmq.cli import hex_bytes
from dmq.cli.secret_files import read_secret
from dmq.cli.topic_session import add_connection_arguments, add_payload_arguments, payload_of, publish_body
from dmq.errors import OperatorError

__all__ = ["register"]


def _seconds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole seconds, got {text!r}") from None
    if not 0 <= value <= 0xFFFF_FFFF:
        raise argparse.ArgumentTypeError(f"expected 0 to 4294967295 seconds, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``upsycle`` and its actions to the ``dmq topic`` sub-parsers."""
    parser = subparsers.add_parser("upsycle", help="publish UPSYCLE multicasts, unicasts and advertisements",
                                   description="Build, sign and publish UPSYCLE bodies at the node.")
    actions = parser.add_subparsers(dest="upsycle_action", metavar="ACTION", required=True)

    multicast = actions.add_parser("multicast", help="publish to a group (signed by the group key)")
    add_connection_arguments(multicast)
    multicast.add_argument("--group-key", required=True, metavar="FILE", help="the group's key file")
    add_payload_arguments(multicast)

    unicast = actions.add_parser("unicast", help="publish to one service key (signed by the source key)")
    add_connection_arguments(unicast)
    unicast.add_argument("--key", required=True, metavar="FILE", help="the source's key file")
    unicast.add_argument("--to", required=True, metavar="HEX", help="the destination service key")
    add_payload_arguments(unicast)

    for routed in (multicast, unicast):
        routed.add_argument("--ttl", type=_seconds, default=3600, metavar="SECONDS",
                            help="how long nodes queue it for offline subscribers (default 3600)")
        routed.add_argument("--lifetime", type=_seconds, default=7 * 86400, metavar="SECONDS",
                            help="seconds until it expires (default 7 days)")

    advertise = actions.add_parser("advertise", help="publish a peer advertisement (signed by the peer key)")
    add_connection_arguments(advertise)
    advertise.add_argument("--key", required=True, metavar="FILE", help="the peer's id key file")
    advertise.add_argument("--address", required=True, metavar="HOST:PORT", help="where the peer listens")
    advertise.add_argument("--revision", required=True, type=int, metavar="N",
                           help="the advertisement's revision: each new one must be higher")
    advertise.add_argument("--service", action="append", default=[], metavar="N=HEX",
                           help="a service number and its key (repeat)")
    advertise.add_argument("--group", action="append", default=[], metavar="HEX", help="a group relayed (repeat)")
    parser.set_defaults(func=run_upsycle)


def _services(values: list[str]) -> dict[int, bytes]:
    out = {}
    for value in values:
        number, sep, key = value.partition("=")
        if not sep or not number.isdigit():
            raise OperatorError(f"--service {value!r}: expected N=HEX (a service number and its 32-byte key)")
        out[int(number)] = hex_bytes(key, "--service", 32)
    return out


def run_upsycle(args: argparse.Namespace) -> int:
    from clients.topics import upsycle

    now = time.time()
    action = args.upsycle_action
    if action == "multicast":
        routed = upsycle.multicast(read_secret(args.group_key, "--group-key"), payload_of(args), now,
                                   ttl=args.ttl, lifetime=args.lifetime)
        return publish_body(args, upsycle.routed_body(routed))
    if action == "unicast":
        routed = upsycle.unicast(read_secret(args.key, "--key"), hex_bytes(args.to, "--to", 32), payload_of(args),
                                 now, ttl=args.ttl, lifetime=args.lifetime)
        return publish_body(args, upsycle.routed_body(routed))
    if args.revision < 0:
        raise OperatorError(f"--revision {args.revision}: expected a number >= 0")
    try:
        address = upsycle.peer_address(args.address)
    except ValueError as exc:
        raise OperatorError(f"--address: {exc}") from None
    ad = upsycle.advertisement(read_secret(args.key, "--key"), address, now, revision=args.revision,
                               services=_services(args.service),
                               groups=[hex_bytes(g, "--group", 32) for g in args.group])
    return publish_body(args, upsycle.advertisement_body(ad), f"peer={ad.id.hex()}")
