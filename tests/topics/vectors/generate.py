"""Conformance vectors for every protocol 1000 message (docs/topics-design.md 2.11, 3.5).

Each vector is written from the CDDL of 3.5 by hand - plain lists, maps and byte strings in
the order the CDDL gives them - and encoded with cbor2's canonical encoder, never with the
project's codec. ``CASES`` also names the message rule of ``localTopicMessage`` the bytes
must match and the value the project's codec must decode them to.

Run ``python -m tests.topics.vectors.generate`` after a deliberate change of docs/topics-design.md 3.5;
``test_protocol1000.py`` recomputes every vector and fails when the file is out of date.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cbor2

from miniprotocols.local_topic_subscription import (
    Auth,
    Durable,
    MsgDone,
    MsgJoin,
    MsgJoinAck,
    MsgLeave,
    MsgLeaveAck,
    MsgPublish,
    MsgPublished,
    MsgPull,
    MsgPullReply,
    MsgReject,
    MsgReplyNext,
    MsgRequestNext,
    MsgSubscribe,
    MsgSubscribed,
    MsgUnsubscribe,
    MsgUnsubscribed,
    Resume,
)

__all__ = ["Case", "CASES", "OUT", "encode", "build"]

OUT = Path(__file__).with_name("protocol1000.json")

UPSYCLE_VECTORS = json.loads((Path(__file__).parent.parent / "upsycle" / "vectors.json").read_text())
_ROUTED = {v["name"]: v for v in UPSYCLE_VECTORS["routed"]}
MULTICAST = _ROUTED["multicast-empty"]
UNICAST = _ROUTED["unicast"]

SUBSCRIBER = bytes.fromhex(UNICAST["header"]["dst"])          # an Ed25519 service key
GROUP = bytes.fromhex(MULTICAST["header"]["grp"])             # an Ed25519 group key
SECP = b"\x02" + bytes(range(32))                             # compressed secp256k1 shape
POOL = bytes(range(100, 128))
OTHER_POOL = bytes(range(200, 228))
TOPIC = bytes([0x7E]) * 32
DMQ_ID = bytes(range(32))
OTHER_DMQ_ID = bytes(range(32, 64))
AUTH = [1_800_000_000, bytes([0xA1]) * 64]
ARRIVAL = 1_800_000_123


def encode(value: Any) -> bytes:
    return cbor2.dumps(value, canonical=True)


def _dmq_message(body: bytes) -> bytes:
    """A DMQ-message-shaped item payload (docs/protocol/message.md 5.1): carried verbatim, never decoded here."""
    payload = [body, 412, ARRIVAL + 1740]
    return encode([DMQ_ID, payload, bytes([0x5A]) * 448, [bytes(32), 3, 412, bytes(64)], bytes([0xC0]) * 32])


UPSYCLE_BODY = bytes.fromhex(MULTICAST["envelope"])
UPSYCLE_INNER = bytes.fromhex(MULTICAST["id"])
ROUTED = bytes.fromhex(MULTICAST["encoded"])
DMQ_MESSAGE = _dmq_message(UPSYCLE_BODY)

EVERY_SELECTOR_FIELD = {0: 2, 1: [GROUP], 2: [SUBSCRIBER], 3: [TOPIC], 4: [POOL], 5: [OTHER_POOL],
                        6: [b"t"], 7: [bytes(32)], 8: [SECP], 9: [0, 3], 10: [0, 1, 2, 3], 11: [1, 2]}

ITEM_BODIES = {
    "message": [0, {0: 1, 1: GROUP, 2: UPSYCLE_INNER, 3: POOL, 4: ARRIVAL, 5: 1}, DMQ_MESSAGE],
    "message-minimal-meta": [0, {0: 0, 1: b"", 4: ARRIVAL}, DMQ_MESSAGE],
    "proof-seq": [1, [0, TOPIC, POOL, 7, DMQ_MESSAGE, DMQ_MESSAGE + b"\x00"]],
    "proof-epoch-vote": [1, [1, TOPIC, POOL, [4, 2], DMQ_MESSAGE, DMQ_MESSAGE + b"\x00"]],
    "gap": [2, {0: GROUP, 1: [UPSYCLE_INNER, DMQ_ID]}],
    "epoch-final": [3, {0: TOPIC, 1: 12, 2: DMQ_ID}],
    "dropped": [4, 17],
    "local-group": [5, {0: 1, 1: GROUP, 2: UPSYCLE_INNER, 4: ARRIVAL, 5: 4}, ROUTED],
}


@dataclass(frozen=True)
class Case:
    """One vector: the CBOR value as the CDDL writes it, its message rule, the decoded message."""

    name: str
    rule: str
    wire: Any
    message: Any


def _auth() -> Auth:
    return Auth(AUTH[0], AUTH[1])


def _items(*names: str, sub_id: int = 5) -> tuple[list[Any], tuple[bytes, ...]]:
    items = [[sub_id, dseq, ITEM_BODIES[name]] for dseq, name in enumerate(names)]
    return items, tuple(encode(item) for item in items)


_REPLY_ITEMS, _REPLY_RAW = _items(*ITEM_BODIES)
_ONE_ITEM, _ONE_RAW = _items("dropped", sub_id=0xFFFFFFFF)

CASES = [
    Case("subscribe-now", "msgSubscribe", [0, [{0: 1, 1: [GROUP]}], 0],
         MsgSubscribe([{0: 1, 1: [GROUP]}], 0)),
    Case("subscribe-retained-every-field", "msgSubscribe", [0, [EVERY_SELECTOR_FIELD, {0: 0}], 1],
         MsgSubscribe([EVERY_SELECTOR_FIELD, {0: 0}], 1)),
    Case("subscribe-state", "msgSubscribe", [0, [{0: 1, 9: [3]}], 2], MsgSubscribe([{0: 1, 9: [3]}], 2)),
    Case("subscribe-durable", "msgSubscribe", [0, [{0: 0}], 0, [b"orders"]],
         MsgSubscribe([{0: 0}], 0, Durable(b"orders"))),
    Case("subscribe-durable-resume-auth", "msgSubscribe", [0, [{0: 1}], [3, 2**64 - 1], [SUBSCRIBER, AUTH]],
         MsgSubscribe([{0: 1}], Resume(2**64 - 1), Durable(SUBSCRIBER, _auth()))),
    Case("subscribed", "msgSubscribed", [1, 0xFFFFFFFF, 10_000], MsgSubscribed(0xFFFFFFFF, 10_000)),
    Case("unsubscribe-forget", "msgUnsubscribe", [2, 3, True], MsgUnsubscribe(3, True)),
    Case("unsubscribe-detach", "msgUnsubscribe", [2, 3, False], MsgUnsubscribe(3, False)),
    Case("unsubscribed", "msgUnsubscribed", [3, 3], MsgUnsubscribed(3)),
    Case("join-local", "msgJoin", [4, SUBSCRIBER, GROUP, True, AUTH], MsgJoin(SUBSCRIBER, GROUP, True, _auth())),
    Case("join-ack", "msgJoinAck", [5, GROUP, 0], MsgJoinAck(GROUP, 0)),
    Case("join-ack-limit-exceeded", "msgJoinAck", [5, GROUP, 1, 2], MsgJoinAck(GROUP, 1, 2)),
    Case("leave", "msgLeave", [6, SUBSCRIBER, GROUP, AUTH], MsgLeave(SUBSCRIBER, GROUP, _auth())),
    Case("leave-ack", "msgLeaveAck", [7, GROUP, 0], MsgLeaveAck(GROUP, 0)),
    Case("leave-ack-not-member", "msgLeaveAck", [7, GROUP, 1, 3], MsgLeaveAck(GROUP, 1, 3)),
    Case("pull", "msgPull", [8, SUBSCRIBER, GROUP, [UPSYCLE_INNER, DMQ_ID]],
         MsgPull(SUBSCRIBER, GROUP, (UPSYCLE_INNER, DMQ_ID))),
    Case("pull-sixteen", "msgPull", [8, SUBSCRIBER, GROUP, [bytes([i]) * 32 for i in range(16)]],
         MsgPull(SUBSCRIBER, GROUP, tuple(bytes([i]) * 32 for i in range(16)))),
    Case("pull-reply", "msgPullReply", [9, [[bytes([s]) * 32, s] for s in range(6)]],
         MsgPullReply(tuple((bytes([s]) * 32, s) for s in range(6)))),
    Case("publish-upsycle", "msgPublish", [10, UPSYCLE_BODY], MsgPublish(UPSYCLE_BODY)),
    Case("publish-largest", "msgPublish", [10, bytes(i % 251 for i in range(2000))],
         MsgPublish(bytes(i % 251 for i in range(2000)))),
    Case("published", "msgPublished", [11, DMQ_ID], MsgPublished(DMQ_ID)),
    Case("published-inner", "msgPublished", [11, DMQ_ID, UPSYCLE_INNER], MsgPublished(DMQ_ID, UPSYCLE_INNER)),
    Case("published-local-group", "msgPublished", [11, None, UPSYCLE_INNER], MsgPublished(None, UPSYCLE_INNER)),
    Case("request-next-blocking", "msgRequestNext", [12, True, [[5, 7], [0xFFFFFFFF, 2**64 - 1]], 1000],
         MsgRequestNext(True, ((5, 7), (0xFFFFFFFF, 2**64 - 1)), 1000)),
    Case("request-next-non-blocking", "msgRequestNext", [12, False, [], 0xFFFF],
         MsgRequestNext(False, (), 0xFFFF)),
    Case("reply-next-every-item-kind", "msgReplyNext", [13, _REPLY_ITEMS, True], MsgReplyNext(_REPLY_RAW, True)),
    Case("reply-next-dropped", "msgReplyNext", [13, _ONE_ITEM, False], MsgReplyNext(_ONE_RAW, False)),
    Case("reply-next-empty", "msgReplyNext", [13, [], False], MsgReplyNext((), False)),
    Case("reject", "msgReject", [14, [14, "not_authorized"]], MsgReject(14, "not_authorized")),
    Case("reject-retry-after", "msgReject", [14, [13, "rate_limited", 30]], MsgReject(13, "rate_limited", 30)),
    Case("reject-adapter-reason", "msgReject", [14, [48, "bad_address"]],
         MsgReject(48, "bad_address")),
    Case("done", "msgDone", [15], MsgDone()),
]


def _diagnostic(value: Any) -> Any:
    """A JSON rendering of a CBOR value for readers: byte strings as ``h'..'``, map keys as text."""
    if isinstance(value, bytes):
        return f"h'{value.hex()}'" if len(value) <= 40 else f"h'{value[:16].hex()}..' ({len(value)} bytes)"
    if isinstance(value, list):
        return [_diagnostic(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _diagnostic(v) for k, v in value.items()}
    return value


def build() -> dict[str, Any]:
    return {
        "about": "Every protocol 1000 message (docs/topics-design.md 3.5), written from the CDDL with cbor2's canonical "
                 "encoder. 'rule' is the alternative of localTopicMessage the bytes match.",
        "vectors": [{"name": c.name, "rule": c.rule, "hex": encode(c.wire).hex(), "value": _diagnostic(c.wire)}
                    for c in CASES],
    }


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), indent=1) + "\n")
    print(f"wrote {OUT}")
