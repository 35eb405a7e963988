"""Epochs change by themselves (docs/topics-design.md 5.7): every node whose pool holds the Epoch
permission proposes or acknowledges when the topic's interval has passed, the next attempt
follows the attempt timeout, and the epoch is final on the count or the stake quorum.

Nodes run the real pipeline (:mod:`.cluster`) on a manual clock; nothing here builds an Epoch
block by hand: the nodes' drivers plan them and the nodes sign them as their pools' blocks.
"""

from __future__ import annotations

import pytest
import trio
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from dmq.clock import ManualClock
from topics.adapter import ITEM_EPOCH_FINAL
from topics.blocklace.codec import ACK, EPOCH, TopicParams
from topics.blocklace.creator import draft_body

from .cluster import Cluster, TopicNode, open_node, pools_for
from .world import ALL, NOW, TOPIC, ad_payload, advertisement, event, pool


INTERVAL, TIMEOUT = 100, 30


async def _cluster(tmp_path, count: int, body, stakes: dict[bytes, int] | None = None) -> None:
    clock = ManualClock(NOW)
    nodes = [open_node(tmp_path / f"n{i}", f"n{i}", pool(i), clock, pools_for(max(8, count)), seed=i, stakes=stakes)
             for i in range(count)]
    try:
        async with trio.open_nursery() as nursery:
            for node in nodes:
                await nursery.start(node.mempool.run)
            await body(nodes, clock)
            nursery.cancel_scope.cancel()
    finally:
        for node in nodes:
            node.mempool.close()


async def _open_topic(cluster: Cluster, electors: int, params: TopicParams) -> None:
    """Node 0 publishes the advertisement naming pools 0..electors-1 (every permission)."""
    ad = advertisement(0, {pool(i).id: ALL for i in range(electors)}, params)
    assert (await cluster.nodes[0].publish(draft_body(TOPIC, ad_payload(ad)))).accepted
    await cluster.settle()


async def _event(cluster: Cluster, node: TopicNode, data: bytes) -> bytes:
    outcome = await node.publish(draft_body(TOPIC, event(data)))
    assert outcome.accepted, outcome.reject
    await cluster.settle()
    return outcome.dmq_id


def _epoch_blocks(node: TopicNode) -> list:
    """``(creator, epoch message)`` of every Epoch block the node holds, in acceptance order."""
    out = []
    for held in node.blocklace.lace.blocks.values():
        if held.block.payload.type == EPOCH:
            out.append((held.creator, held.block.payload.epoch))
    return out


def _finals(node: TopicNode) -> list[tuple[int, bytes]]:
    return [(item[1][1], item[1][2]) for item in node.items() if item[0] == ITEM_EPOCH_FINAL]


def _final(node: TopicNode) -> int:
    return node.blocklace.lace.topic(TOPIC).final


@pytest.mark.trio
async def test_an_epoch_closes_when_the_interval_has_passed_and_the_proposer_rotates(tmp_path):
    async def scenario(nodes, clock):
        cluster = Cluster(nodes)
        await _open_topic(cluster, 4, TopicParams(epoch_interval=INTERVAL, attempt_timeout=TIMEOUT))
        electors = sorted(pool(i).id for i in range(4))
        for number in (1, 2, 3):
            await _event(cluster, nodes[number % 4], b"event %d" % number)
            clock.advance(INTERVAL - 1)
            await cluster.settle()
            assert [_final(n) for n in nodes] == [number - 1] * 4
            assert not [e for _, e in _epoch_blocks(nodes[0]) if e.number == number], "an Epoch block too early"
            clock.advance(1)
            await cluster.settle()
            assert [_final(n) for n in nodes] == [number] * 4
            votes = [(c, e) for c, e in _epoch_blocks(nodes[0]) if e.number == number]
            proposals = [(c, e) for c, e in votes if e.is_proposal]
            # one proposal, by the elector whose turn (number + attempt) it is, acknowledged by all
            assert [(c, e.attempt) for c, e in proposals] == [(electors[number % 4], 0)]
            assert sorted(c for c, _ in votes) == electors
            proposal_id = nodes[0].blocklace.lace.topic(TOPIC).certificates[number]
            for node in nodes:
                assert _finals(node)[-1] == (number, proposal_id)
        # what each proposal cut is the epoch it closed; every node keeps one chain per pool
        for node in nodes:
            assert node.blocklace.equivocations() == []

    await _cluster(tmp_path, 4, scenario)


@pytest.mark.trio
async def test_a_silent_proposer_is_replaced_after_the_attempt_timeout(tmp_path):
    async def scenario(nodes, clock):
        electors = sorted(pool(i).id for i in range(4))
        silent = next(i for i in range(4) if pool(i).id == electors[1])     # proposer of epoch 1, attempt 0
        up = [n for i, n in enumerate(nodes) if i != silent]
        cluster = Cluster(up)
        await _open_topic(cluster, 4, TopicParams(epoch_interval=INTERVAL, attempt_timeout=TIMEOUT))
        await _event(cluster, up[0], b"before the first epoch")
        clock.advance(INTERVAL)
        await cluster.settle()
        assert _epoch_blocks(up[0]) == []                   # attempt 0's proposer is down
        clock.advance(TIMEOUT - 1)
        await cluster.settle()
        assert _epoch_blocks(up[0]) == [] and _final(up[0]) == 0
        clock.advance(1)                                    # attempt 1 opens: its proposer steps in
        await cluster.settle()
        # 3 of 4 electors are more than 2/3 of them: final without the silent one
        assert [_final(n) for n in up] == [1, 1, 1]
        votes = _epoch_blocks(up[0])
        assert {(c, e.attempt, e.is_proposal) for c, e in votes if e.is_proposal} == {(electors[2], 1, True)}
        assert len(votes) == 3 and {e.attempt for _, e in votes} == {1}

    await _cluster(tmp_path, 4, scenario)


@pytest.mark.trio
async def test_attempts_without_a_quorum_are_retried_until_enough_electors_are_back(tmp_path):
    """Two of four electors cannot close an epoch: they go through the attempts, one vote each
    per attempt (never two: a double vote would be proven), a new proposal whenever the
    attempt's proposer is one of them; with the two others back the epoch is final."""
    async def scenario(nodes, clock):
        electors = sorted(pool(i).id for i in range(4))
        by_pool = {n.signer.id: n for n in nodes}
        cluster = Cluster(nodes)
        await _open_topic(cluster, 4, TopicParams(epoch_interval=INTERVAL, attempt_timeout=TIMEOUT))
        await _event(cluster, nodes[0], b"before the first epoch")
        live = [by_pool[electors[1]], by_pool[electors[2]]]      # the proposers of attempts 0 and 1
        cluster.nodes = live
        clock.advance(INTERVAL)
        for _ in range(3):                                        # attempts 0, 1 and 2
            await cluster.settle()
            clock.advance(TIMEOUT)
        assert [_final(n) for n in live] == [0, 0]
        votes = _epoch_blocks(live[0])
        proposals = {e.attempt: c for c, e in votes if e.is_proposal}
        assert proposals == {0: electors[1], 1: electors[2]}     # attempt 2's proposer is down
        assert sorted((c, e.attempt) for c, e in votes) == sorted(
            (c, a) for c in (electors[1], electors[2]) for a in (0, 1))
        cluster.nodes = nodes                                     # the others are back
        await cluster.settle()
        assert [_final(n) for n in nodes] == [1] * 4
        for node in nodes:
            assert node.blocklace.equivocations() == []

    await _cluster(tmp_path, 4, scenario)


@pytest.mark.trio
async def test_the_stake_rule_weighs_acknowledgements_in_the_snapshot(tmp_path):
    """Pools 0 and 1 hold 98 % of the stake: with pools 2 and 3 down, their two votes are a
    stake quorum though two of four electors are no count quorum."""
    stakes = {pool(0).id: 49, pool(1).id: 49, pool(2).id: 1, pool(3).id: 1}

    async def scenario(nodes, clock):
        cluster = Cluster(nodes[:2])
        await _open_topic(cluster, 4, TopicParams(quorum=(1, 2, 3), epoch_interval=INTERVAL, attempt_timeout=TIMEOUT))
        await _event(cluster, nodes[1], b"before the first epoch")
        clock.advance(INTERVAL)
        for _ in range(4):                                   # proposers 2 and 3 are down: attempts go by
            await cluster.settle()
            if _final(nodes[0]) == 1:
                break
            clock.advance(TIMEOUT)
        assert [_final(n) for n in nodes[:2]] == [1, 1]
        proposal = nodes[0].blocklace.lace.blocks[nodes[0].blocklace.lace.topic(TOPIC).certificates[1]]
        assert proposal.block.payload.epoch.stake_epoch == 500          # the snapshot the stake view holds
        assert len([e for _, e in _epoch_blocks(nodes[0])]) == 2

    await _cluster(tmp_path, 4, scenario, stakes)


@pytest.mark.trio
async def test_without_the_stake_majority_no_epoch_is_final(tmp_path):
    """Pool 3 holds 97 % of the stake and is down: three of four electors vote in every
    attempt (a count quorum) and the epoch is never final under the stake rule."""
    stakes = {pool(0).id: 1, pool(1).id: 1, pool(2).id: 1, pool(3).id: 97}

    async def scenario(nodes, clock):
        cluster = Cluster(nodes[:3])
        await _open_topic(cluster, 4, TopicParams(quorum=(1, 2, 3), epoch_interval=INTERVAL, attempt_timeout=TIMEOUT))
        await _event(cluster, nodes[1], b"before the first epoch")
        clock.advance(INTERVAL)
        for _ in range(6):
            await cluster.settle()
            clock.advance(TIMEOUT)
        await cluster.settle()
        assert [_final(n) for n in nodes[:3]] == [0, 0, 0]
        attempts = {e.attempt for _, e in _epoch_blocks(nodes[0])}
        assert len(attempts) >= 4                             # proposals were retried
        # every attempt with a proposal got the three live votes: a count quorum, not a stake one
        by_attempt: dict[int, set[bytes]] = {}
        for creator, e in _epoch_blocks(nodes[0]):
            by_attempt.setdefault(e.attempt, set()).add(creator)
        assert all(len(voters) == 3 for voters in by_attempt.values())
        for node in nodes[:3]:
            assert node.blocklace.equivocations() == []

    await _cluster(tmp_path, 4, scenario, stakes)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])      # shrinking whole clusters takes minutes
@given(steps=st.lists(st.tuples(st.sets(st.integers(0, 3), min_size=1), st.integers(1, 2 * INTERVAL)),
                      min_size=1, max_size=5))
def test_partitions_and_delays_never_split_an_epoch(tmp_path_factory, steps):
    """B5 with the nodes' own drivers: whatever subsets of the electors talk, and for however
    long, no pool votes twice in an attempt, every node that finalized an epoch holds the same
    certificate for it, and once all talk again the topic goes on changing epochs."""
    tmp_path = tmp_path_factory.mktemp("partitions")

    async def scenario(nodes, clock):
        cluster = Cluster(nodes)
        await _open_topic(cluster, 4, TopicParams(epoch_interval=INTERVAL, attempt_timeout=TIMEOUT))
        for number, (talking, seconds) in enumerate(steps):
            cluster.nodes = [nodes[i] for i in sorted(talking)]
            await _event(cluster, cluster.nodes[0], b"step %d" % number)
            clock.advance(seconds)
            await cluster.settle()
        cluster.nodes = nodes
        await cluster.settle()
        reached = max(_final(n) for n in nodes)
        await _event(cluster, nodes[0], b"all together")
        for _ in range(6):                                   # an interval, then attempts, at most
            clock.advance(INTERVAL)
            await cluster.settle()
            if min(_final(n) for n in nodes) > reached:
                break
        assert min(_final(n) for n in nodes) > reached
        reference = nodes[0].blocklace.lace.topic(TOPIC).certificates
        for node in nodes:
            assert node.blocklace.equivocations() == []
            certificates = node.blocklace.lace.topic(TOPIC).certificates
            assert set(certificates) == set(range(1, _final(node) + 1))
            assert all(certificates[k] == reference[k] for k in set(certificates) & set(reference))

    trio.run(_cluster, tmp_path, 4, scenario)


@pytest.mark.trio
async def test_the_stake_rule_moves_on_with_blocks_a_client_builds(tmp_path):
    """Pool 4 signs its own events, built by the library's PoolCreator over what node 0
    delivers. The creator cannot weigh a stake quorum; it takes the final epochs node 0
    reports, so its events are in the epoch the electors cut next, and epochs go on."""
    from types import SimpleNamespace

    from clients.topics.blocklace import PoolCreator
    from topics.blocklace.codec import PERM_EVENT, Payload, EVENT

    async def scenario(nodes, clock):
        cluster = Cluster(nodes[:4])
        electors = {pool(i).id: ALL for i in range(4)}
        ad = advertisement(0, electors | {pool(4).id: PERM_EVENT},
                           TopicParams(quorum=(1, 2, 3), epoch_interval=INTERVAL, attempt_timeout=TIMEOUT))
        assert (await nodes[0].publish(draft_body(TOPIC, ad_payload(ad)))).accepted
        await cluster.settle()
        creator = PoolCreator(pool(4).id, TOPIC)
        followed = 0
        for n in range(8):
            for body in nodes[0].items()[followed:]:
                creator.follow(SimpleNamespace(kind=body[0], payload=body[2] if body[0] == 0 else body[1]))
            followed = len(nodes[0].items())
            message = pool(4).sign(creator.next_block(Payload(EVENT, event=b"event %d" % n)))
            assert (await nodes[0].submit_local(message.raw)) is None
            creator.published(message.message_id)
            await cluster.settle()
            clock.advance(INTERVAL)
            await cluster.settle()
            if _final(nodes[0]) >= 4:
                break
        assert [_final(node) for node in nodes[:4]] == [_final(nodes[0])] * 4 and _final(nodes[0]) >= 4
        assert nodes[0].blocklace.lace.blocks[creator.last].block.epoch >= 3

    await _cluster(tmp_path, 5, scenario)


@pytest.mark.trio
async def test_an_elector_cut_off_for_epochs_is_heard_again_after_the_heal(tmp_path):
    """Three of four electors go on closing epochs while the fourth, cut off, goes on alone
    (an event, its own proposals). Once all talk again, a block it makes is delivered at
    every node, like any honest creator's."""
    async def scenario(nodes, clock):
        await _open_topic(Cluster(nodes), 4, TopicParams(epoch_interval=INTERVAL, attempt_timeout=TIMEOUT))
        majority, alone = Cluster(nodes[:3]), Cluster(nodes[3:])
        await _event(alone, nodes[3], b"made alone")
        for number in (1, 2, 3):
            await _event(majority, nodes[number % 3], b"event %d" % number)
            for _ in range(4):                               # an interval, then attempts whose proposer is away
                clock.advance(INTERVAL if _final(nodes[0]) < number else 0)
                await majority.settle()
                await alone.settle()
                if _final(nodes[0]) == number:
                    break
                clock.advance(TIMEOUT)
        assert [_final(n) for n in nodes] == [3, 3, 3, 0]
        healed = Cluster(nodes)
        await healed.settle()
        assert _final(nodes[3]) == 3
        after = await _event(healed, nodes[3], b"after the heal")
        assert all(after in node.delivered_blocks() for node in nodes)

    await _cluster(tmp_path, 4, scenario)


@pytest.mark.trio
@pytest.mark.parametrize("electors", [30])
async def test_a_quiet_topic_with_many_electors_keeps_changing_epochs(tmp_path, electors):
    """With 30 electors and 8 pointers a block made after epoch F became final reaches 7
    acknowledgements, not the 21 of a quorum, so it is not in epoch F and no proposal of F + 1
    can cut one (docs/topics-design.md 5.7). The gatherer of F (its proposer) builds the
    coverage with a few Ack blocks, and every epoch after an event becomes final; when it is
    down, the next one in the rotation does after one attempt timeout."""
    async def scenario(nodes, clock):
        cluster = Cluster(nodes)
        await _open_topic(cluster, electors, TopicParams(epoch_interval=INTERVAL, attempt_timeout=TIMEOUT,
                                                         max_pointers=8))
        gathered: set[bytes] = set()
        for number in (1, 2):
            made = await _event(cluster, nodes[number], b"event %d" % number)     # one event, then quiet
            clock.advance(INTERVAL)
            await cluster.settle()
            assert [_final(n) for n in nodes] == [number] * electors
            # the certificate of the new epoch cuts the event: it is in the proposal's past
            lace = nodes[0].blocklace.lace
            proposal = lace.blocks[lace.topic(TOPIC).certificates[number]]
            assert lace.in_past(made, proposal.vc)
            # the coverage of epoch number - 1 was built by its proposer alone, in at most
            # ceil(20 / 7) blocks (a quorum is 21 votes, its own proposal is one), the last one
            # in that epoch; the first event came before any epoch was final: nothing to gather
            acks = [h for h in lace.blocks.values() if h.block.payload.type == ACK and h.id not in gathered]
            gathered |= {h.id for h in acks}
            if number == 1:
                assert acks == []
            else:
                proposer = lace.blocks[lace.topic(TOPIC).certificates[number - 1]].creator
                assert {h.creator for h in acks} == {proposer} and 1 <= len(acks) <= 3
                assert acks[-1].block.epoch == number - 1 and all(h.block.epoch == number - 2 for h in acks[:-1])
        # nothing waits: a quiet topic costs nothing, and its epoch stays
        held = len(nodes[0].blocklace.lace.blocks)
        clock.advance(2 * INTERVAL)
        await cluster.settle()
        assert len(nodes[0].blocklace.lace.blocks) == held and [_final(n) for n in nodes] == [2] * electors
        # the gatherer of epoch 2 is down: the next publisher in the rotation steps in after
        # one attempt timeout, and the 29 others close epoch 3
        lace = nodes[0].blocklace.lace
        proposal = lace.blocks[lace.topic(TOPIC).certificates[2]]
        gatherers = sorted(pool(i).id for i in range(electors))
        down = gatherers.index(proposal.creator)
        assert down == (2 + proposal.block.payload.epoch.attempt) % electors
        cluster.nodes = [n for n in nodes if n.signer.id != proposal.creator]
        lace = cluster.nodes[0].blocklace.lace
        await _event(cluster, cluster.nodes[0], b"while the gatherer is down")
        assert not [h for h in lace.blocks.values() if h.block.payload.type == ACK and h.id not in gathered]
        clock.advance(TIMEOUT)
        await cluster.settle()
        acks = [h for h in lace.blocks.values() if h.block.payload.type == ACK and h.id not in gathered]
        assert acks and {h.creator for h in acks} == {gatherers[(down + 1) % electors]}
        clock.advance(INTERVAL - TIMEOUT)
        await cluster.settle()
        assert [_final(n) for n in cluster.nodes] == [3] * (electors - 1)
        for node in nodes:
            assert node.blocklace.equivocations() == []

    await _cluster(tmp_path, electors, scenario)
