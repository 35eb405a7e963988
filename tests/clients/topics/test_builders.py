"""The client's builders (clients/topics: upsycle, blocklace, dmsg, selectors, items): what they
build is what the adapters' own decoders and checks accept, and reads back field for field."""

from __future__ import annotations

import os

import pytest

from clients.topics import Item, TopicOwners, describe, dmsg, parse_permissions, selector, upsycle
from clients.topics.blocklace import acknowledgement_draft, advertisement_draft, event_draft, proposal_draft
from clients.topics.selectors import FilterError
from topics import cbor
from topics.adapter import Reject
from topics.blocklace.ads import check_advertisement
from topics.blocklace.codec import AD, EPOCH, EVENT, PERM_ACK, PERM_EPOCH, PERM_EVENT, Payload, TopicParams, decode_body
from topics.blocklace.creator import draft_body, is_draft
from topics.dmsg.adapter import DmsgAdapter
from topics.dmsg.entry import parse_entry
from topics.upsycle.identity import verify
from topics.upsycle.wire import KIND_ADVERTISEMENT, KIND_ROUTED, decode_envelope

from ...topics.blocklace.world import TOPIC, pool

NOW = 1_800_000_000.0


def test_a_multicast_is_signed_by_the_group_key_and_a_unicast_by_its_source():
    group, source, destination = os.urandom(32), os.urandom(32), os.urandom(32)
    routed = upsycle.multicast(group, b"to all", NOW, ttl=60, lifetime=3600)
    envelope = decode_envelope(upsycle.routed_body(routed))
    assert envelope.kind == KIND_ROUTED and envelope.content.raw == routed.raw
    assert routed.grp == upsycle.public_key(group) and routed.body == b"to all" and routed.ttl == 60
    assert NOW + 3540 <= routed.inner_expiry <= NOW + 3600
    assert verify(routed.grp, routed.signed_bytes, routed.sig)
    one = upsycle.unicast(source, destination, b"to one", NOW)
    assert (one.src, one.dst) == (upsycle.public_key(source), destination)
    assert verify(one.src, one.signed_bytes, one.sig) and not verify(one.src, routed.signed_bytes, routed.sig)


def test_an_advertisement_is_signed_by_the_peer_key_over_the_map_without_sig():
    peer, service = os.urandom(32), os.urandom(32)
    ad = upsycle.advertisement(peer, upsycle.peer_address("[2001:db8::7]:3001"), NOW, revision=3,
                               services={1: service}, groups=[b"g" * 32])
    decoded = decode_envelope(upsycle.advertisement_body(ad))
    assert decoded.kind == KIND_ADVERTISEMENT
    assert (ad.id, ad.addr[0], ad.addr[2], ad.svcs, ad.grps, ad.rev) == (
        upsycle.public_key(peer), 2, 3001, {1: service}, (b"g" * 32,), 3)
    assert verify(ad.id, ad.preimage, ad.sig)
    assert upsycle.peer_address("203.0.113.7:1")[:2] == (1, bytes([203, 0, 113, 7]))
    for bad in ("203.0.113.7", "host.example:80", "203.0.113.7:0"):
        with pytest.raises(ValueError):
            upsycle.peer_address(bad)


def test_a_topics_advertisement_passes_the_owner_check_and_its_drafts_leave_the_creator_fields_to_the_node():
    owners = TopicOwners([os.urandom(32), os.urandom(32), os.urandom(32)], 2)
    params = TopicParams(quorum=(1, 2, 3), epoch_interval=600)
    ad = owners.advertisement(4, {pool(0).id: parse_permissions("event,epoch")}, params=params)
    check_advertisement(ad, owners.topic_id)
    assert (ad.body.version, ad.body.publishers, ad.body.params) == (4, {pool(0).id: PERM_EVENT | PERM_EPOCH}, params)
    assert len(ad.signatures) == 2
    kind, block = decode_body(advertisement_draft(ad))
    assert kind == 0 and is_draft(block) and block.topic == owners.topic_id and block.payload.type == AD
    _, event = decode_body(event_draft(TOPIC, b"data", [b"t"]))
    assert (event.payload.type, event.payload.event, event.tags) == (EVENT, b"data", (b"t",)) and is_draft(event)
    # Every draft carries an id in its seq (a fresh random one unless given): a retry of the
    # same bytes gets the block the first one became.
    _, other = decode_body(event_draft(TOPIC, b"data", [b"t"]))
    assert event.seq > 0 and other.seq > 0 and event.seq != other.seq
    assert decode_body(event_draft(TOPIC, b"data", draft_id=42))[1].seq == 42
    with pytest.raises(ValueError):
        event_draft(TOPIC, b"data", draft_id=0)
    _, proposal = decode_body(proposal_draft(TOPIC, 2, 1, 4, [b"b" * 32, b"a" * 32, b"b" * 32]))
    assert proposal.payload.type == EPOCH and proposal.payload.epoch.cut == (b"a" * 32, b"b" * 32)
    assert (proposal.payload.epoch.number, proposal.payload.epoch.attempt, proposal.payload.epoch.ad_version) == (2, 1, 4)
    _, ack = decode_body(acknowledgement_draft(TOPIC, b"p" * 32, 2, 1, 4))
    assert ack.payload.epoch.acked == b"p" * 32 and not ack.payload.epoch.is_proposal
    assert parse_permissions("all") == PERM_EVENT | PERM_ACK | PERM_EPOCH
    with pytest.raises(ValueError):
        parse_permissions("event,write")
    with pytest.raises(ValueError):
        TopicOwners([os.urandom(32)], 2)


def test_dmsg_entries_are_signed_by_the_static_key_and_carried_as_the_adapter_reads_them():
    secret, relay = os.urandom(32), os.urandom(32)
    server = dmsg.server_entry(secret, 7, "203.0.113.7:8081", 4, timestamp_ns=int(NOW) * 10**9)
    entry = parse_entry(server)
    assert (entry.static, entry.sequence, entry.address, entry.sessions) == (
        dmsg.static_key(secret), 7, "203.0.113.7:8081", 4)
    decoded = DmsgAdapter().decode(dmsg.entry_body(server))
    assert not isinstance(decoded, Reject) and decoded.raw == server
    client = parse_entry(dmsg.client_entry(secret, 8, [dmsg.static_key(relay)]))
    assert client.delegated == (dmsg.static_key(relay),)
    with pytest.raises(ValueError):
        dmsg.server_entry(secret, 9, "no port", 1)
    with pytest.raises(ValueError):
        dmsg.static_key(bytes(32))


def test_selectors_name_the_fields_and_refuse_what_the_node_would():
    assert selector("blocklace", topics=[TOPIC], tags=[b"news"], payload_types=["event", "epoch"],
                    exclude_publishers=[pool(1).id]) == {0: 2, 3: [TOPIC], 6: [b"news"], 10: [0, 2], 5: [pool(1).id]}
    assert selector("dmsg", roles=["server"], static_keys=[]) == {0: 3, 11: [2]}
    for bad in (lambda: selector("kv"), lambda: selector("upsycle", groups=[b"short"]),
                lambda: selector("blocklace", payload_types=["block"])):
        with pytest.raises(FilterError):
            bad()


def test_an_item_is_described_with_its_causal_metadata_and_payload():
    body = draft_body(TOPIC, Payload(EVENT, event="héllo".encode()), (b"t",))      # a pool's first block
    message = pool(0).sign(body)
    meta = {0: 2, 1: TOPIC, 2: message.message_id, 3: pool(0).id, 4: int(NOW)}
    record = describe(Item(cbor.encode([5, 9, [0, meta, message.raw]])))
    assert record["sub"] == 5 and record["dseq"] == 9 and record["kind"] == "message"
    assert (record["adapter"], record["topic"], record["seq"], record["pointers"], record["tags"]) == (
        "blocklace", TOPIC.hex(), 0, [], [b"t".hex()])
    assert (record["payload_type"], record["payload"], record["text"]) == ("event", "héllo".encode().hex(), "héllo")
    assert record["id"] == message.message_id.hex() and record["wrapped_by"] == pool(0).id.hex()
    final = describe(Item(cbor.encode([5, 10, [3, {0: TOPIC, 1: 1, 2: message.message_id}]])))
    assert final == {"sub": 5, "dseq": 10, "kind": "epoch_final", "topic": TOPIC.hex(), "epoch": 1,
                     "proposal": message.message_id.hex()}
    routed = upsycle.multicast(b"g" * 32, b"local news", NOW)
    local = describe(Item(cbor.encode([5, 12, [5, {0: 1, 1: routed.grp, 2: routed.id}, routed.raw]])))
    assert (local["kind"], local["type"], local["group"], local["upsycle_id"], local["text"]) == (
        "local", "multicast", routed.grp.hex(), routed.id.hex(), "local news")
    garbled = describe(Item(cbor.encode([5, 11, [0, {0: 1, 1: b"k" * 32}, pool(0).sign(b"\x00" * 100).raw]])))
    assert "undecodable" in garbled and garbled["adapter"] == "upsycle"
