"""A pool never equivocates by misconfiguration (:mod:`topics.blocklace.signing`, docs/topics-design.md 5.8).

Nodes run the real pipeline over LMDB (:mod:`.cluster`): two nodes signing with one pool's
key, a restart, drafts sent twice, and epoch drafts whose options the node would not honour.
"""

from __future__ import annotations

import pytest
import trio
from prometheus_client import CollectorRegistry

from dmq.clock import ManualClock
from topics.adapter import AdapterRuntime
from topics.blocklace import store
from topics.blocklace.codec import EPOCH, decode_body
from topics.blocklace.creator import draft_body
from topics.blocklace.signing import RESUME_COMMAND
from topics.trace import TopicSigningStopped

from .cluster import Cluster, open_node, pools_for
from .world import ALL, NOW, TOPIC, ad_payload, advertisement, epoch_payload, event, pool

pytestmark = pytest.mark.trio


def _node(tmp_path, name: str, signer: int, clock: ManualClock):
    node = open_node(tmp_path / name, name, pool(signer), clock, pools_for(4))
    events: list = []
    node.ingress.tracer.add_sink(events.append)
    node.events = events
    node.blocklace.start(AdapterRuntime(clock, 42, {}, node.publish, True, pool(signer).id, node.ingress.tracer))
    return node


async def _running(nodes, body) -> None:
    try:
        async with trio.open_nursery() as nursery:
            for node in nodes:
                await nursery.start(node.run)
            await body()
            nursery.cancel_scope.cancel()
    finally:
        for node in nodes:
            node.close()


def _proofs(node) -> list:
    return node.blocklace.equivocations()


def _chain(node, pool_id: bytes) -> dict[int, list[bytes]]:
    out = {}
    with node.ingress.dbs.reading("blocklace") as view:
        for seq in range(20):
            ids = store.chain_ids(view, TOPIC, pool_id, seq)
            if ids:
                out[seq] = ids
    return out


async def test_a_second_node_with_the_pool_key_stops_signing_and_no_proof_is_made(tmp_path):
    clock = ManualClock(NOW)
    active, standby = _node(tmp_path, "active", 0, clock), _node(tmp_path, "standby", 0, clock)

    async def body() -> None:
        cluster = Cluster([active, standby])
        ad = advertisement(0, {pool(0).id: ALL, pool(1).id: ALL})
        assert (await active.publish(draft_body(TOPIC, ad_payload(ad)))).accepted
        assert (await active.publish(draft_body(TOPIC, event(b"from the active node")))).accepted
        await cluster.settle()
        # The standby saw blocks of its pool that it did not sign: it stops signing there.
        refused = await standby.publish(draft_body(TOPIC, event(b"from the standby")))
        assert refused.reject is not None and refused.reject.reason.name == "signing_stopped"
        assert RESUME_COMMAND in refused.reject.detail
        with standby.ingress.dbs.reading("blocklace") as view:
            standby.blocklace.due_publications(view, clock.now())        # traces go out from the event loop
        stops = [e for e in standby.events if isinstance(e, TopicSigningStopped)]
        assert [(e.topic, e.pool, e.seq) for e in stops] == [(TOPIC, pool(0).id, 0)]
        assert "another node signs with this pool's key" in stops[0].action
        registry = CollectorRegistry()
        standby.blocklace.bind_metrics(registry, "dmq_node_")
        assert registry.get_sample_value("dmq_node_blocklace_signing_stopped_topics") == 1
        assert registry.get_sample_value("dmq_node_blocklace_foreign_own_blocks") == 2
        # The active node goes on; nobody holds a proof, and each sequence number has one block.
        assert (await active.publish(draft_body(TOPIC, event(b"still the active node")))).accepted
        await cluster.settle()
        for node in (active, standby):
            assert _proofs(node) == []
            assert all(len(ids) == 1 for ids in _chain(node, pool(0).id).values())
        assert not active.blocklace.signing.halted

    await _running([active, standby], body)
    # The stop is kept across a restart, until the operator clears it.
    again = _node(tmp_path, "standby", 0, clock)

    async def after_restart() -> None:
        refused = await again.publish(draft_body(TOPIC, event(b"after a restart")))
        assert refused.reject is not None and refused.reject.reason.name == "signing_stopped"
        again.ingress.dbs.write("blocklace", lambda txn: store.drop_halt(txn, TOPIC))

    await _running([again], after_restart)
    resumed = _node(tmp_path, "standby", 0, clock)

    async def resumed_body() -> None:
        outcome = await resumed.publish(draft_body(TOPIC, event(b"the standby took over")))
        assert outcome.accepted, outcome.reject
        # It goes on after the active node's blocks (seq 0, 1, 2), not over them.
        assert sorted(_chain(resumed, pool(0).id)) == [0, 1, 2, 3]

    await _running([resumed], resumed_body)


async def test_a_database_older_than_the_pools_history_stops_signing(tmp_path):
    """A node restored from an old backup: its peer carries a block of its pool it never made."""
    clock = ManualClock(NOW)
    node, peer = _node(tmp_path, "node", 0, clock), _node(tmp_path, "peer", 1, clock)

    async def body() -> None:
        cluster = Cluster([node, peer])
        ad = advertisement(0, {pool(0).id: ALL, pool(1).id: ALL})
        assert (await node.publish(draft_body(TOPIC, ad_payload(ad)))).accepted
        await cluster.settle()
        backup = tmp_path / "backup"
        backup.mkdir()
        node.mempool.store.env.copy(str(backup))
        assert (await node.publish(draft_body(TOPIC, event(b"after the backup")))).accepted
        await cluster.settle()
        later = peer.blocklace.lace.blocks[list(_chain(peer, pool(0).id)[1])[0]].raw
        # The node comes back on the backup; the peer's copy of block 1 arrives.
        await node.stop()
        restored = _node(tmp_path, "backup", 0, clock)
        async with trio.open_nursery() as nursery:
            await nursery.start(restored.run)
            assert later not in restored.held()
            await Cluster([restored, peer]).settle()
            assert later in restored.held()
            refused = await restored.publish(draft_body(TOPIC, event(b"would be block 1 again")))
            assert refused.reject is not None and refused.reject.reason.name == "signing_stopped"
            assert _proofs(restored) == [] and _proofs(peer) == []
            await restored.stop()
            nursery.cancel_scope.cancel()

    await _running([node, peer], body)


async def test_a_draft_sent_again_gets_the_block_it_became(tmp_path):
    clock = ManualClock(NOW)
    node = _node(tmp_path, "node", 0, clock)
    ad = advertisement(0, {pool(0).id: ALL})
    first = draft_body(TOPIC, event(b"once"), (), 7)

    async def body() -> None:
        assert (await node.publish(draft_body(TOPIC, ad_payload(ad), (), 1))).accepted
        made = await node.publish(first)
        assert made.accepted
        again = await node.publish(first)
        assert again.dmq_id == made.dmq_id
        other = await node.publish(draft_body(TOPIC, event(b"another"), (), 7))
        assert other.reject is not None and other.reject.reason.name == "conflict"
        # Two drafts alike but for their ids are two blocks (two Acks are two Acks).
        acks = [await node.publish(draft_body(TOPIC, event(b"same"), (), i)) for i in (20, 21)]
        assert acks[0].dmq_id != acks[1].dmq_id

    await _running([node], body)
    restarted = _node(tmp_path, "node", 0, clock)

    async def after() -> None:
        made = [b for b in _chain(restarted, pool(0).id).get(1, [])]
        again = await restarted.publish(first)
        assert [again.dmq_id] == made
        assert sorted(_chain(restarted, pool(0).id)) == [0, 1, 2, 3]     # ad, once, same, same

    await _running([restarted], after)


async def test_epoch_options_the_node_would_not_honour_are_refused(tmp_path):
    clock = ManualClock(NOW)
    node = _node(tmp_path, "node", 0, clock)

    async def body() -> None:
        assert (await node.publish(draft_body(TOPIC, ad_payload(advertisement(0, {pool(0).id: ALL}))))).accepted
        e1 = (await node.publish(draft_body(TOPIC, event(b"one")))).dmq_id
        e2 = (await node.publish(draft_body(TOPIC, event(b"two")))).dmq_id

        async def refused(payload) -> str:
            outcome = await node.publish(draft_body(TOPIC, payload))
            assert outcome.reject is not None
            return f"{outcome.reject.reason.name}: {outcome.reject.detail}"

        assert await refused(epoch_payload(number=2, attempt=0, ad_version=0, cut=(e1,))) == \
            "malformed: the draft's epoch number is 2, the block's would be 1"
        assert await refused(epoch_payload(number=1, attempt=0, ad_version=3, cut=(e1,))) == \
            "malformed: the draft's epoch advertisement version is 3, the block's would be 0"
        assert (await refused(epoch_payload(number=1, attempt=0, ad_version=0, cut=(b"\x01" * 32,)))).startswith(
            "malformed: cut block 0101")
        # A valid cut is honoured: the proposal cuts e1, and the node's own pointer of the epoch.
        proposal = await node.publish(draft_body(TOPIC, epoch_payload(number=1, attempt=0, ad_version=0, cut=(e1,))))
        assert proposal.accepted, proposal.reject
        block = node.blocklace.lace.blocks[proposal.dmq_id].block
        assert e1 in block.payload.epoch.cut and e2 in block.payload.epoch.cut
        # An acknowledgement repeats its proposal's number, attempt and version, or is refused.
        assert await refused(epoch_payload(number=1, attempt=1, ad_version=0, acked=proposal.dmq_id)) == \
            "malformed: the draft's epoch attempt is 1, the block's would be 0"
        assert block.payload.type == EPOCH

    await _running([node], body)


async def test_a_draft_id_names_only_the_block_its_draft_became(tmp_path):
    """A draft built and then not committed leaves no record for the next block of that
    sequence number (here one the pool's key signed elsewhere and a local client submitted)."""
    from topics.blocklace.codec import Block, encode_block
    from topics.blocklace.creator import complete_block

    clock = ManualClock(NOW)
    node = _node(tmp_path, "node", 0, clock)

    async def body() -> None:
        assert (await node.publish(draft_body(TOPIC, ad_payload(advertisement(0, {pool(0).id: ALL}))))).accepted
        draft = draft_body(TOPIC, event(b"built, then lost"), (), 9)
        node.blocklace.signing.building(decode_body(draft)[1], draft, 1, b"the body that was built")
        parent = _chain(node, pool(0).id)[0][0]
        block = complete_block(node.blocklace.lace, pool(0).id, 1, parent, Block(TOPIC, 0, 0, (), 0, event(b"local"), ()))
        local = pool(0).sign(encode_block(block))
        assert await node.submit_local(local.raw) is None
        made = await node.publish(draft)
        assert made.accepted and made.dmq_id != local.message_id
        assert sorted(_chain(node, pool(0).id)) == [0, 1, 2]

    await _running([node], body)
