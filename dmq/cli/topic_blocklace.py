"""``dmq topic blocklace ACTION``: a Blocklace topic's owners and publishers at the node
(docs/topics-design.md 5; the node is its pool's honest creator, 5.8).

- ``topic-id``: the topic id of owner keys and threshold: the Blake2b-256 of them (5.1);
- ``create`` / ``advertise``: the topic's advertisement, version 0 or a later one, signed by
  a threshold of the owner keys: its publishers (pool ids with the permissions ``event``,
  ``ack``, ``epoch``) and parameters; ``create`` also prints the topic id;
- ``event``, ``ack``: blocks carrying application bytes, or acknowledging what the pool has seen;
- ``propose-epoch``, ``ack-epoch``: the epoch protocol (5.7): a proposal names the blocks it
  closes the epoch after (its cut), an acknowledgement the proposal.

Every block is a draft (:mod:`clients.topics.blocklace`): the node fills in the
sequence number, pointers, epoch and floor from its pool's chain, signs it, and prints
``published id=<DMQ id of the block>``. ``--draft-id N`` names the draft: the same command run
again with it (after a lost answer, or a crash of the node) prints the block the first made.
Owner keys are Ed25519 key files (``dmq topic new-key``).

- ``resume-signing``: clears the node's stop of signing in a topic (docs/topics.md, "A pool
  never equivocates"), in the database of a stopped node.
"""

from __future__ import annotations

import argparse

from dmq.cli import hex_bytes
from dmq.cli.secret_files import read_secret
from dmq.cli.topic_session import add_connection_arguments, add_payload_arguments, payload_of, publish_body
from dmq.errors import OperatorError

__all__ = ["register"]

_QUORUM_RULES = {"count": 0, "stake": 1}


def _topic_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", required=True, metavar="HEX", help="the topic id")
    parser.add_argument("--tag", action="append", default=[], metavar="HEX",
                        help="a content tag, 1 to 32 bytes (repeat, up to 8)")
    _draft_argument(parser)


def _draft_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--draft-id", type=int, metavar="N",
                        help="the draft's id, 1 to 2**63 - 1 (default: a new random one); run again with the same "
                             "id, the command gets the block the first run made instead of a second one")


def _draft_id(args: argparse.Namespace) -> int | None:
    from clients.topics.blocklace import MAX_DRAFT_ID

    if args.draft_id is not None and not 1 <= args.draft_id <= MAX_DRAFT_ID:
        raise OperatorError(f"--draft-id {args.draft_id}: expected 1 to {MAX_DRAFT_ID}")
    return args.draft_id


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``blocklace`` and its actions to the ``dmq topic`` sub-parsers."""
    parser = subparsers.add_parser("blocklace", help="create and advertise Blocklace topics, publish blocks, run "
                                                     "epochs",
                                   description="Blocklace drafts published through the node, which builds and "
                                               "signs its pool's blocks.")
    actions = parser.add_subparsers(dest="blocklace_action", metavar="ACTION", required=True)

    topic_id = actions.add_parser("topic-id", help="print the id of the topic of these owner keys")
    topic_id.add_argument("--owner-key", action="append", required=True, metavar="FILE",
                          help="an owner key file, in the topic's order (repeat)")
    topic_id.add_argument("--threshold", type=int, default=1, metavar="K", help="as given to create (default 1)")

    resume = actions.add_parser("resume-signing", help="let the node sign again in a topic where it stopped",
                                description="Clear the stop a node recorded when it saw a block of its pool that it "
                                            "did not sign. Do it once the other node using the pool's key is "
                                            "stopped (or the newest database restored), with this node stopped: "
                                            "it signs again in the topic when it starts.")
    resume.add_argument("--database-path", default="dmq-db", metavar="DIR",
                        help="the node's database (default dmq-db)")
    resume.add_argument("--topic", required=True, metavar="HEX", help="the topic id")

    for name, text in (("create", "publish a new topic's first advertisement and print the topic id"),
                       ("advertise", "publish a later version of a topic's advertisement")):
        ad = actions.add_parser(name, help=text)
        add_connection_arguments(ad)
        ad.add_argument("--owner-key", action="append", required=True, metavar="FILE",
                        help="an owner key file, in the topic's order (repeat)")
        _draft_argument(ad)
        ad.add_argument("--threshold", type=int, default=1, metavar="K",
                        help="owner signatures an advertisement needs (default 1); the first K keys sign")
        ad.add_argument("--publisher", action="append", required=True, metavar="POOL[:PERMS]",
                        help="a publishing pool id and its permissions, comma-separated event, ack, epoch "
                             "(default all) (repeat)")
        if name == "advertise":
            ad.add_argument("--version", required=True, type=int, metavar="N",
                            help="the advertisement version: one more than the one in force")
        ad.add_argument("--quorum", choices=sorted(_QUORUM_RULES), default="count",
                        help="epochs are final with more than 2/3 of the epoch publishers (count, default) or of "
                             "their stake")
        ad.add_argument("--epoch-interval", type=int, default=3600, metavar="SECONDS",
                        help="seconds between epochs (default 3600)")
        ad.add_argument("--attempt-timeout", type=int, default=600, metavar="SECONDS",
                        help="seconds before an epoch attempt is given up (default 600)")
        ad.add_argument("--max-pointers", type=int, default=16, metavar="N", help="pointers per block (default 16)")

    event = actions.add_parser("event", help="publish an Event block")
    add_connection_arguments(event)
    _topic_arguments(event)
    add_payload_arguments(event, "event's bytes")

    ack = actions.add_parser("ack", help="publish an Ack block (it points at what the pool has seen)")
    add_connection_arguments(ack)
    _topic_arguments(ack)

    for name, text in (("propose-epoch", "propose closing the current epoch"),
                       ("ack-epoch", "acknowledge an epoch proposal")):
        epoch = actions.add_parser(name, help=text)
        add_connection_arguments(epoch)
        _topic_arguments(epoch)
        epoch.add_argument("--number", required=True, type=int, metavar="N", help="the epoch it opens")
        epoch.add_argument("--attempt", type=int, default=0, metavar="N", help="the attempt (default 0)")
        epoch.add_argument("--ad-version", type=int, default=0, metavar="N",
                           help="the advertisement version in force (default 0)")
        if name == "propose-epoch":
            epoch.add_argument("--cut", action="append", required=True, metavar="ID",
                               help="a block of the current epoch the epoch closes after (repeat, up to 16)")
            epoch.add_argument("--stake-epoch", type=int, metavar="N",
                               help="the Cardano epoch of the stake snapshot (topics under the stake quorum)")
        else:
            epoch.add_argument("--proposal", required=True, metavar="ID", help="the proposal's block id")
    parser.set_defaults(func=run_blocklace)


def _tags(args: argparse.Namespace) -> list[bytes]:
    tags = [hex_bytes(t, "--tag") for t in args.tag]
    if len(tags) > 8 or any(not 1 <= len(t) <= 32 for t in tags):
        raise OperatorError("--tag: up to 8 content tags of 1 to 32 bytes each")
    return tags


def _publishers(values: list[str]) -> dict[bytes, int]:
    from clients.topics.blocklace import parse_permissions

    out = {}
    for value in values:
        pool, _, perms = value.partition(":")
        try:
            out[hex_bytes(pool, "--publisher", 28)] = parse_permissions(perms or "all")
        except ValueError as exc:
            raise OperatorError(f"--publisher {value!r}: {exc}") from None
    return out


def _owners(args: argparse.Namespace):
    from clients.topics.blocklace import TopicOwners

    try:
        return TopicOwners([read_secret(path, "--owner-key") for path in args.owner_key], args.threshold)
    except ValueError as exc:
        raise OperatorError(f"--threshold: {exc}") from None


def _advertisement(args: argparse.Namespace) -> tuple[bytes, bytes]:
    from clients.topics.blocklace import TopicParams, advertisement_draft

    version = getattr(args, "version", 0)
    if version < 0:
        raise OperatorError(f"--version {version}: expected a number >= 0")
    owners = _owners(args)
    if not 1 <= args.max_pointers <= 16 or args.epoch_interval < 1 or args.attempt_timeout < 1:
        raise OperatorError("--max-pointers is 1 to 16; --epoch-interval and --attempt-timeout are positive")
    params = TopicParams(quorum=(_QUORUM_RULES[args.quorum], 2, 3), epoch_interval=args.epoch_interval,
                         attempt_timeout=args.attempt_timeout, max_pointers=args.max_pointers)
    ad = owners.advertisement(version, _publishers(args.publisher), params=params)
    return owners.topic_id, advertisement_draft(ad, draft_id=_draft_id(args))


def run_blocklace(args: argparse.Namespace) -> int:
    from clients.topics import blocklace
    from topics.blocklace.reasons import BlocklaceReject

    action = args.blocklace_action
    if action == "topic-id":
        print(_owners(args).topic_id.hex())
        return 0
    if action == "resume-signing":
        return _resume_signing(args.database_path, hex_bytes(args.topic, "--topic", 32))
    try:
        if action in ("create", "advertise"):
            topic, body = _advertisement(args)
            return publish_body(args, body, f"topic={topic.hex()}")
        topic = hex_bytes(args.topic, "--topic", 32)
        tags = _tags(args)
        draft_id = _draft_id(args)
        if action == "event":
            body = blocklace.event_draft(topic, payload_of(args), tags, draft_id=draft_id)
        elif action == "ack":
            body = blocklace.ack_draft(topic, tags, draft_id=draft_id)
        elif action == "propose-epoch":
            cut = [hex_bytes(c, "--cut", 32) for c in args.cut]
            if len(set(cut)) > 16:
                raise OperatorError(f"--cut given {len(set(cut))} blocks: a proposal names at most 16")
            body = blocklace.proposal_draft(topic, args.number, args.attempt, args.ad_version, cut,
                                            stake_epoch=args.stake_epoch, tags=tags, draft_id=draft_id)
        else:
            body = blocklace.acknowledgement_draft(topic, hex_bytes(args.proposal, "--proposal", 32), args.number,
                                                   args.attempt, args.ad_version, tags=tags, draft_id=draft_id)
    except BlocklaceReject as exc:       # too large for a block
        raise OperatorError(f"{exc.reason.name}: {exc.detail}") from None
    return publish_body(args, body)


def _resume_signing(path: str, topic: bytes) -> int:
    """Delete the stop of ``topic`` from the node's database (``topics.blocklace.signing``)."""
    from pathlib import Path

    import lmdb

    from dmq.mempool.store import _MAX_DBS
    from topics.blocklace import store
    from topics.store import LmdbTxn

    if not (Path(path) / "data.mdb").exists():
        raise OperatorError(f"{path}: no node database here (--database-path)")
    env = lmdb.open(path, subdir=True, lock=True, max_dbs=_MAX_DBS)
    try:
        with env.begin(write=True) as txn:
            try:
                meta = env.open_db(b"blocklace/meta", txn=txn, create=False)
            except lmdb.NotFoundError:
                raise OperatorError(f"{path}: the node has no blocklace state (adapter not enabled?)") from None
            cleared = store.drop_halt(LmdbTxn(txn, {"meta": meta}, "blocklace"), topic)
    finally:
        env.close()
    if not cleared:
        print(f"no stop of signing recorded for topic {topic.hex()}")
        return 1
    print(f"signing in topic {topic.hex()} resumes when the node starts")
    return 0
