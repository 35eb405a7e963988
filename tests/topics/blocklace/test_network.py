"""Five topic nodes running the real pipeline (DMQ validation with KES, LMDB commit, adapter,
subscriptions): an equivocation proven everywhere, causal delivery, an epoch closed by quorum,
a revoked publisher refused, and a lost block brought back by need and carry."""

from __future__ import annotations

import pytest
import trio
from prometheus_client import CollectorRegistry

from dmq.clock import ManualClock
from topics.adapter import FLAG_ANSWER, ITEM_EPOCH_FINAL, ITEM_MESSAGE, ITEM_PROOF
from topics.blocklace.codec import KIND_CARRY, KIND_NEED, KIND_PROOF_NOTICE, decode_body
from topics.blocklace.metrics import BlocklaceMetrics
from topics.blocklace.proofs import verify_proof
from topics.blocklace.store import blocks as stored_blocks

from .cluster import Cluster, open_node, pools_for
from .world import ALL, NOW, TOPIC, Author, ad_payload, advertisement, block_of, epoch_payload, event, pool

N = 5


def _kinds(node, kind):
    out = []
    for raw in node.held():
        from dmq.codec import decode_message

        body = decode_message(raw).body
        if body[:3] == b"\xd9\x94\xfa" and decode_body(body)[0] == kind:
            out.append(raw)
    return out


def _causal(node):
    """Every delivered block comes after every delivered block it points to (B1), closed."""
    order = node.delivered_blocks()
    position = {ident: i for i, ident in enumerate(order)}
    assert len(position) == len(order), "a block was delivered twice"
    for ident in order:
        for p in node.blocklace.lace.blocks[ident].block.ptrs:
            assert p in position and position[p] < position[ident]


async def _with_cluster(tmp_path, body, **options):
    clock = ManualClock(NOW)
    pools = pools_for(8)
    nodes = [open_node(tmp_path / f"n{i}", f"n{i}", pool(i), clock, pools, seed=i) for i in range(N)]
    try:
        async with trio.open_nursery() as nursery:
            for node in nodes:
                await nursery.start(node.mempool.run)
            await body(Cluster(nodes, **options), clock)
            nursery.cancel_scope.cancel()
    finally:
        for node in nodes:
            node.mempool.close()


async def _rejected(node, raw):
    error = await node.submit_local(raw)
    return None if error is None else error.reason


async def _open_topic(cluster: Cluster):
    """Authors for pools 0..N-1 and the advertisement naming them all, held by every node."""
    authors = [Author(pool(i)) for i in range(N)]
    ad0 = authors[0].block(ad_payload(advertisement(0, {pool(i).id: ALL for i in range(N)})))
    assert await cluster.nodes[0].submit_local(ad0.raw) is None
    await cluster.settle()
    return authors, ad0


@pytest.mark.trio
async def test_equivocation_epoch_revocation_on_five_nodes(tmp_path):
    async def scenario(cluster: Cluster, clock: ManualClock):
        nodes = cluster.nodes
        authors, ad0 = await _open_topic(cluster)

        # honest events, each published at a different node, each pointing to what its author saw
        seen = [ad0.message_id]
        for i in range(1, 4):
            message = authors[i].block(event(b"e%d" % i), others=seen)
            assert await nodes[i].submit_local(message.raw) is None
            seen.append(message.message_id)
        await cluster.settle()
        clock.advance(10)

        # pool 4 equivocates: two blocks with the same seq, one at node 3, one at node 4
        first = authors[4].block(event(b"left"), others=[ad0.message_id])
        authors[4].seq, authors[4].last = 0, None
        second = authors[4].block(event(b"right"), others=[ad0.message_id])
        assert block_of(first).seq == block_of(second).seq == 0
        assert await nodes[3].submit_local(first.raw) is None
        assert await nodes[4].submit_local(second.raw) is None
        registries = [CollectorRegistry() for _ in nodes]
        for node, registry in zip(nodes, registries):
            BlocklaceMetrics(node.blocklace, registry)
        rounds = await cluster.settle()
        assert rounds <= 3                       # one flood round, then quiet: bounded
        for node, registry in zip(nodes, registries):
            proofs = node.blocklace.equivocations()
            assert [(p.kind, p.culprit) for p in proofs] == [(0, pool(4).id)]
            assert verify_proof(proofs[0])
            assert registry.get_sample_value("dmq_node_blocklace_equivocation_proofs", {"kind": "same_seq"}) == 1
            assert any(item[0] == ITEM_PROOF for item in node.items())
        # the detectors announce the proof once it is due; a notice seen cancels the others' plans
        clock.advance(6)
        await cluster.settle()
        notices = _kinds(nodes[0], 3)
        assert 1 <= len(notices) <= N and all(len(_kinds(n, KIND_PROOF_NOTICE)) == len(notices) for n in nodes)
        # the equivocator's later blocks arriving unsolicited are refused everywhere
        later = authors[4].block(event(b"later"), others=[])
        for node in nodes:
            assert await _rejected(node, later.raw) == "equivocator_excluded"

        # an epoch: pool 0 proposes, pools 1..3 acknowledge (4 of 5 electors > 2/3)
        clock.advance(10)
        cut = sorted(seen)
        proposal = authors[0].block(epoch_payload(number=1, attempt=0, ad_version=0, cut=tuple(cut)), others=seen)
        assert await nodes[0].submit_local(proposal.raw) is None
        await cluster.settle()
        for i in range(1, 4):
            vote = authors[i].block(epoch_payload(number=1, attempt=0, ad_version=0, acked=proposal.message_id),
                                    others=[proposal.message_id])
            assert await nodes[i].submit_local(vote.raw) is None
        await cluster.settle()
        for node, registry in zip(nodes, registries):
            assert node.blocklace.lace.topic(TOPIC).final == 1
            finals = [item[1] for item in node.items() if item[0] == ITEM_EPOCH_FINAL]
            assert finals == [{0: TOPIC, 1: 1, 2: proposal.message_id}]
            assert registry.get_sample_value("dmq_node_blocklace_final_epoch") == 1

        # revocation: advertisement version 1 drops pool 2; its next block is refused everywhere
        clock.advance(10)
        ad1 = authors[0].block(ad_payload(advertisement(1, {pool(i).id: ALL for i in (0, 1, 3)})),
                               others=[ad0.message_id])
        assert await nodes[0].submit_local(ad1.raw) is None
        await cluster.settle()
        revoked = authors[2].block(event(b"after revocation"), others=[ad1.message_id])
        for node in nodes:
            assert await _rejected(node, revoked.raw) == "not_publisher"

        # everyone delivered the same blocks, each in a causal order
        reference = set(nodes[0].delivered_blocks())
        assert first.message_id in reference and second.message_id in reference
        for node in nodes:
            _causal(node)
            assert set(node.delivered_blocks()) == reference
            assert revoked.message_id not in node.blocklace.lace.blocks

    await _with_cluster(tmp_path, scenario)


@pytest.mark.trio
async def test_lost_block_comes_back_by_need_and_carry(tmp_path):
    async def scenario(cluster: Cluster, clock: ManualClock):
        nodes = cluster.nodes
        authors, ad0 = await _open_topic(cluster)
        lost = authors[1].block(event(b"lost on the way to n4"), others=[ad0.message_id])
        cluster.blocked.add(("n4", lost.message_id))
        assert await nodes[1].submit_local(lost.raw) is None
        await cluster.settle()
        child = authors[2].block(event(b"points to it"), others=[lost.message_id])
        assert await nodes[2].submit_local(child.raw) is None
        await cluster.settle()
        assert child.message_id not in nodes[4].blocklace.lace.blocks     # deferred on its pointer
        assert nodes[4].ingress.pending["blocklace"].holds(child.message_id)

        clock.advance(16)                       # T passed: n4 asks
        await cluster.settle()
        assert len(_kinds(nodes[0], KIND_NEED)) == 1
        clock.advance(6)                        # answer delays passed: holders carry
        await cluster.settle()
        carries = _kinds(nodes[4], KIND_CARRY)
        assert 1 <= len(carries) <= 2           # R = 2 answers at most are accepted
        for node in nodes:
            assert {lost.message_id, child.message_id} <= set(node.delivered_blocks())
            _causal(node)
        answered = [item for item in nodes[4].items() if item[0] == ITEM_MESSAGE and item[1][2] == lost.message_id]
        assert answered[0][1][5] & FLAG_ANSWER and answered[0][2] == lost.raw
        # the carried block is stored as the original message, for retention and later answers
        with nodes[4].ingress.dbs.reading("blocklace") as view:
            assert lost.raw in [row.raw for row in stored_blocks(view)]
        # and, still within its own lifetime, back in n4's DMQ store: it diffuses from there too
        assert lost.raw in nodes[4].held()

    await _with_cluster(tmp_path, scenario)


@pytest.mark.trio
async def test_block_pointing_to_a_refused_block_is_refused_at_once(tmp_path):
    async def scenario(cluster: Cluster, clock: ManualClock):
        node = cluster.nodes[0]
        authors = [Author(pool(i)) for i in range(6)]
        ad0 = authors[0].block(ad_payload(advertisement(0, {pool(i).id: ALL for i in range(N)})))
        assert await node.submit_local(ad0.raw) is None
        outsider = authors[5].block(event(b"not a publisher"), others=[ad0.message_id])
        assert await _rejected(node, outsider.raw) == "not_publisher"
        child = authors[1].block(event(b"points to it"), others=[outsider.message_id])
        assert await _rejected(node, child.raw) == "invalid_ancestor"      # not deferred
        assert not node.ingress.pending["blocklace"].holds(child.message_id)
        grandchild = authors[2].block(event(b"and to that"), others=[child.message_id])
        assert await _rejected(node, grandchild.raw) == "invalid_ancestor"
        with node.ingress.dbs.reading("blocklace") as view:
            assert len(stored_blocks(view)) == 1                              # C4: nothing written

    await _with_cluster(tmp_path, scenario)
