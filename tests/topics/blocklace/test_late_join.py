"""A node that joins after its peers pruned syncs from a checkpoint (docs/topics-design.md 5.8).

Three electors change epochs by themselves and prune what is behind them; a fourth node
then connects with nothing of the topic. The blocks it receives point into pruned history,
so it asks for anchors, checks the certificate the holders carry (a quorum of the
advertisement it names), takes it as its checkpoint, and delivers every block its peers kept
from that epoch on; the checkpoint survives a restart of its adapter state.
"""

from __future__ import annotations

import pytest
import trio

from dmq.clock import ManualClock
from topics.adapter import FLAG_ANSWER, ITEM_EPOCH_FINAL, ITEM_MESSAGE, Start
from topics.blocklace.codec import AD, EPOCH, KIND_NEED, Need, TopicParams, decode_body
from topics.blocklace.creator import draft_body

from .cluster import Cluster, TopicNode, open_node, pools_for
from .world import ALL, NOW, TOPIC, ad_payload, advertisement, event, pool

pytestmark = pytest.mark.trio

INTERVAL, TIMEOUT = 100, 30
NETWORK_LIFETIME = 1740


def _final(node: TopicNode) -> int:
    return node.blocklace.lace.topic(TOPIC).final


async def _event(cluster: Cluster, node: TopicNode, data: bytes) -> bytes:
    outcome = await node.publish(draft_body(TOPIC, event(data)))
    assert outcome.accepted, outcome.reject
    await cluster.settle()
    return outcome.dmq_id


async def _advertise(cluster: Cluster, node: TopicNode) -> None:
    """The topic's advertisement, pools 0 to 2 its publishers with every permission."""
    ad = advertisement(0, {pool(i).id: ALL for i in range(3)},
                       TopicParams(epoch_interval=INTERVAL, attempt_timeout=TIMEOUT))
    assert (await node.publish(draft_body(TOPIC, ad_payload(ad)))).accepted
    await cluster.settle()


def _needs(node: TopicNode) -> list:
    from dmq.codec import decode_message

    out = []
    for raw in node.held():
        body = decode_message(raw).body
        if body[:3] == b"\xd9\x94\xfa":
            kind, content = decode_body(body)
            if kind == KIND_NEED:
                out.append(content)
    return out


async def test_a_late_joiner_syncs_from_the_certificate_its_peers_kept(tmp_path):
    clock = ManualClock(NOW)
    nodes = [open_node(tmp_path / f"n{i}", f"n{i}", pool(i), clock, pools_for(8), seed=i) for i in range(4)]
    holders, joiner = nodes[:3], nodes[3]
    try:
        async with trio.open_nursery() as nursery:
            for node in nodes:
                await nursery.start(node.mempool.run)
            cluster = Cluster(holders)
            await _advertise(cluster, holders[0])
            early = [await _event(cluster, holders[1], b"epoch 0")]
            clock.advance(INTERVAL)
            await cluster.settle()
            early.append(await _event(cluster, holders[2], b"epoch 1"))
            clock.advance(INTERVAL)
            await cluster.settle()
            assert [_final(n) for n in holders] == [2, 2, 2]

            # everything so far leaves the network; the holders prune what is below F
            clock.advance(NETWORK_LIFETIME)
            for node in holders:
                await node.ingress.prune()
                assert all(e in node.blocklace.lace.tombs for e in early)
            kept = [await _event(cluster, holders[1], b"epoch 2, after pruning")]
            assert [_final(n) for n in holders] == [3, 3, 3]        # the interval had passed long ago
            kept.append(await _event(cluster, holders[2], b"epoch 3"))

            # the fourth node connects: what it receives points into pruned history
            cluster.nodes = nodes
            await cluster.settle()
            assert joiner.delivered_blocks() == [] and _final(joiner) == 0
            clock.advance(2)                                          # JOIN_WAIT: it asks for anchors
            await cluster.settle()
            assert [n.anchors for n in _needs(holders[0])] == [True]
            clock.advance(5)                                          # the holders' answer delays
            await cluster.settle()

            lace = joiner.blocklace.lace
            checkpoint = lace.checkpoints[TOPIC]
            assert checkpoint.epoch == _final(joiner) == 3
            assert checkpoint.proposal == holders[0].blocklace.lace.topic(TOPIC).certificates[3]
            delivered = joiner.delivered_blocks()
            held_by_peer = holders[0].blocklace.lace.blocks.values()
            # every block a holder kept from the checkpoint's epoch on, and the anchors
            assert {h.id for h in held_by_peer if h.block.epoch >= 3} <= set(delivered)
            assert kept[1] in delivered and kept[0] not in delivered and not set(early) & set(delivered)
            anchors = [lace.blocks[i].block.payload.type for i in delivered if lace.blocks[i].block.epoch < 3]
            assert sorted(anchors) == [EPOCH, EPOCH, EPOCH, AD]          # the proposal, two acks, the ad
            items = joiner.items()
            assert [item[1] for item in items if item[0] == ITEM_EPOCH_FINAL] == [
                {0: TOPIC, 1: 3, 2: checkpoint.proposal}]
            answered = {item[1][2] for item in items if item[0] == ITEM_MESSAGE and item[1].get(5, 0) & FLAG_ANSWER}
            assert checkpoint.proposal in answered

            # from there it follows the topic live
            clock.advance(INTERVAL)
            await cluster.settle()
            assert [_final(n) for n in nodes] == [4, 4, 4, 4]
            assert {h.id for h in holders[0].blocklace.lace.blocks.values() if h.block.epoch >= 3} <= set(
                joiner.delivered_blocks())

            # the checkpoint is part of the committed state: rebuilt from the databases
            before = set(lace.blocks)
            joiner.blocklace.discard_caches()
            with joiner.ingress.dbs.reading("blocklace") as view:
                retained = joiner.blocklace.deliver([], Start.RETAINED, view, clock.now())
            assert joiner.blocklace.lace.checkpoints[TOPIC] == checkpoint
            assert set(joiner.blocklace.lace.blocks) == before
            assert {d.dedup for d in retained if d.dedup is not None} == before
            nursery.cancel_scope.cancel()
    finally:
        for node in nodes:
            node.mempool.close()


async def test_a_node_back_from_a_partition_asks_for_anchors_after_t(tmp_path):
    """A node that saw epoch 1 and was cut off while its peers went on and pruned: the blocks
    it receives on its return point below what they kept. It waits T (its missing blocks
    might be on their way) before asking for anchors, then starts from their certificate."""
    clock = ManualClock(NOW)
    nodes = [open_node(tmp_path / f"n{i}", f"n{i}", pool(i), clock, pools_for(8), seed=i) for i in range(4)]
    holders, away = nodes[:3], nodes[3]
    try:
        async with trio.open_nursery() as nursery:
            for node in nodes:
                await nursery.start(node.mempool.run)
            cluster = Cluster(nodes)
            await _advertise(cluster, holders[0])
            await _event(cluster, holders[1], b"epoch 0")
            clock.advance(INTERVAL)
            await cluster.settle()
            assert [_final(n) for n in nodes] == [1, 1, 1, 1]

            cluster.nodes = holders                                   # the fourth node is cut off
            missed = await _event(cluster, holders[2], b"epoch 1, missed")
            clock.advance(NETWORK_LIFETIME)
            await cluster.settle()
            assert [_final(n) for n in holders] == [2, 2, 2]
            clock.advance(1)                                          # epoch 2 final for a second
            for node in holders:
                await node.ingress.prune()
                assert missed in node.blocklace.lace.tombs
            await _event(cluster, holders[1], b"epoch 2")

            cluster.nodes = nodes                                     # it is back
            await cluster.settle()
            assert _final(away) == 1 and away.blocklace.lace.checkpoints == {}
            clock.advance(2)
            await cluster.settle()
            assert not [n for n in _needs(holders[0]) if n.anchors]   # not a late joiner: it waits T
            clock.advance(13)
            await cluster.settle()
            assert [n.anchors for n in _needs(holders[0])] == [True]
            clock.advance(5)
            await cluster.settle()
            final = _final(holders[0])
            assert away.blocklace.lace.checkpoints[TOPIC].epoch == _final(away) == final >= 2
            kept = {h.id for h in holders[0].blocklace.lace.blocks.values() if h.block.epoch >= final}
            assert kept and kept <= set(away.delivered_blocks())
            assert missed not in away.delivered_blocks()
            nursery.cancel_scope.cancel()
    finally:
        for node in nodes:
            node.mempool.close()


async def test_holders_answer_an_anchors_need_with_nothing_below_their_final_epoch(tmp_path):
    """An asker takes the first certificate it can assemble from the answers to its anchors
    need as its checkpoint. If the holders also carried the blocks it asked for below their F
    (a certificate of an older epoch, still alive), that older certificate could be complete
    first; the blocks of its epoch that point into history the holders pruned would then wait
    at the asker for ever, and with them every block above. So a holder carries the anchors
    and, of the asked-for blocks, only those of epoch >= F."""
    clock = ManualClock(NOW)
    holders = [open_node(tmp_path / f"n{i}", f"n{i}", pool(i), clock, pools_for(8), seed=i) for i in range(3)]
    try:
        async with trio.open_nursery() as nursery:
            for node in holders:
                await nursery.start(node.mempool.run)
            cluster = Cluster(holders)
            await _advertise(cluster, holders[0])
            await _event(cluster, holders[1], b"epoch 0")
            clock.advance(INTERVAL)
            await cluster.settle()
            below = await _event(cluster, holders[2], b"epoch 1")
            clock.advance(INTERVAL)
            await cluster.settle()
            assert [_final(n) for n in holders] == [2, 2, 2]

            lace = holders[0].blocklace.lace
            older = [h.id for h in lace.blocks.values() if h.block.epoch == 0 and h.block.payload.type == EPOCH]
            assert older                       # the certificate of epoch 1, still held
            recovery = holders[0].blocklace.recovery
            recovery.requested(b"\x01" * 32, Need(TOPIC, (*older, below), anchors=True), False, False, clock.now())
            carried = {answer.item for answer in recovery._answers}
            assert carried == lace.anchors(TOPIC)      # the certificate of F and the advertisement
            assert not (set(older) | {below}) & carried

            # a need without anchors still gets every asked-for block the holder has
            recovery._answers.clear()
            recovery.requested(b"\x02" * 32, Need(TOPIC, tuple(older)), False, False, clock.now())
            assert {answer.item for answer in recovery._answers} == set(older)
            nursery.cancel_scope.cancel()
    finally:
        for node in holders:
            node.mempool.close()
