"""Protocol 1000 conformance vectors (docs/topics-design.md 2.11): CDDL, the codec, byte-for-byte re-encoding.

``protocol1000.json`` holds every message of docs/topics-design.md 3.5, written by the independent encoder
of ``generate.py``. Each vector must match its message rule of the CDDL of 3.5 (pycddl), be
decoded by the project's codec to the expected message, and be re-encoded to the same bytes.
Bytes that break the CDDL must be refused by the CDDL check and by the codec alike, which
also shows the CDDL check is not vacuous.
"""

from __future__ import annotations

import json

import pytest

from miniprotocols.framework import CodecError
from miniprotocols.local_topic_subscription import LocalTopicCodec, TopicState
from tests.dmq.cardano_node.cddl import CddlViolation

from .cddl import message_rule_of, message_rules
from .generate import AUTH, CASES, DMQ_ID, GROUP, ITEM_BODIES, OUT, SUBSCRIBER, build, encode

VECTORS = json.loads(OUT.read_text())["vectors"]
BY_NAME = {case.name: case for case in CASES}
codec = LocalTopicCodec()


def test_the_file_is_what_the_independent_encoder_writes():
    assert json.loads(OUT.read_text()) == build()


def test_every_message_of_the_cddl_has_a_vector():
    assert {v["rule"] for v in VECTORS} == set(message_rules())
    assert len(message_rules()) == 16


def test_every_item_kind_and_start_has_a_vector():
    kinds = {body[0] for body in ITEM_BODIES.values()}
    assert kinds == set(range(6))
    starts = {repr(case.wire[2]) for case in CASES if case.rule == "msgSubscribe"}
    assert {"0", "1", "2"} <= starts and any(s.startswith("[3,") for s in starts)


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["name"])
def test_vector_matches_its_cddl_rule(vector):
    assert message_rule_of(bytes.fromhex(vector["hex"])) == vector["rule"]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["name"])
def test_codec_decodes_and_reencodes_byte_for_byte(vector):
    raw = bytes.fromhex(vector["hex"])
    message = codec.decode(TopicState.IDLE, raw)
    assert message == BY_NAME[vector["name"]].message
    assert codec.encode(message) == raw


def test_reply_items_are_handed_over_as_their_exact_bytes():
    """The DMQ message inside an item is never re-encoded: the item spans are the wire spans."""
    vector = next(v for v in VECTORS if v["name"] == "reply-next-every-item-kind")
    raw = bytes.fromhex(vector["hex"])
    message = codec.decode(TopicState.IDLE, raw)
    assert all(item in raw for item in message.items)
    assert b"".join(message.items) in raw


OUT_OF_CDDL = {
    "subId over 32 bits": [1, 2**32, 0],
    "pubkey of 31 bytes": [4, SUBSCRIBER[:31], GROUP, True, AUTH],
    "auth ts over 32 bits": [6, SUBSCRIBER, GROUP, [2**32, AUTH[1]]],
    "signature of 63 bytes": [6, SUBSCRIBER, GROUP, [AUTH[0], AUTH[1][:63]]],
    "result 2": [5, GROUP, 2],
    "seventeen pull ids": [8, SUBSCRIBER, GROUP, [DMQ_ID] * 17],
    "no pull id": [8, SUBSCRIBER, GROUP, []],
    "pull status 6": [9, [[DMQ_ID, 6]]],
    "empty pull reply": [9, []],
    "empty body": [10, b""],
    "body of 2001 bytes": [10, bytes(2001)],
    "dmqId of 31 bytes": [11, DMQ_ID[:31]],
    "maxItems over 16 bits": [12, True, [], 0x10000],
    "ack without dseq": [12, True, [[1]], 1],
    "reason without text": [14, [13]],
    "durable name of 33 bytes": [0, [{0: 0}], 0, [bytes(33)]],
    "start 4": [0, [{0: 0}], 4],
    "unknown message 16": [16],
    "done with a field": [15, 0],
}


@pytest.mark.parametrize("wire", OUT_OF_CDDL.values(), ids=OUT_OF_CDDL.keys())
def test_bytes_outside_the_cddl_are_refused_by_both(wire):
    raw = encode(wire)
    with pytest.raises(CddlViolation):
        message_rule_of(raw)
    with pytest.raises((CodecError, ValueError)):
        codec.decode(TopicState.IDLE, raw)


@pytest.mark.parametrize("body", [[4, "17"], [2, {0: GROUP, 1: []}], [3, {0: GROUP, 1: 1}], [6, 0],
                                  [1, [4, GROUP, b"", 0, b"", b""]], [1, [0, GROUP, b"", [1], b"", b""]],
                                  [0, {0: 1, 4: 1}, b""], [5, {0: 1, 1: b"", 4: 1}, 3]],
                         ids=["dropped-text", "gap-no-ids", "epoch-no-proposal", "kind-6", "proof-kind-4",
                              "proof-where-single", "meta-no-key", "local-group-not-bytes"])
def test_items_outside_the_cddl_are_refused(body):
    """Item bodies are opaque to the codec (the node writes them); the CDDL alone checks them."""
    with pytest.raises(CddlViolation):
        message_rule_of(encode([13, [[0, 0, body]], False]))
