"""B1 to B4 and B7 over random DAGs, creators, loss, duplication, reordering and crashes."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from topics.blocklace.codec import MAX_BLOCK_BODY
from topics.blocklace.node import LaceNode
from topics.blocklace.proofs import verify_proof

from .world import ALL, NOW, Author, ad_payload, advertisement, block_of, event, pool

PUBLISHERS = 4
OUTSIDER = 9            # a pool that is not in the advertisement


@st.composite
def dags(draw):
    """A signed Blocklace: an advertisement, then random blocks; some creators fork."""
    authors = {i: Author(pool(i)) for i in list(range(PUBLISHERS)) + [OUTSIDER]}
    ad = advertisement(0, {pool(i).id: ALL for i in range(PUBLISHERS)})
    messages = [authors[0].block(ad_payload(ad))]
    forkers = draw(st.sets(st.sampled_from(range(1, PUBLISHERS)), max_size=1))
    for step in range(draw(st.integers(3, 18))):
        who = draw(st.sampled_from(list(authors)))
        others = draw(st.lists(st.sampled_from(range(len(messages))), max_size=3))
        seen = {messages[0].message_id} | {messages[k].message_id for k in others}
        author = authors[who]
        if who in forkers and author.seq > 0 and draw(st.booleans()):
            # an equivocation: a second block with the seq just used, same self-parent
            twin = Author(author.pool, author.seq - 1, None)
            parent = _parent_of(messages, author)
            messages.append(twin.block(event(b"fork%d" % step), others=seen - {author.last}, parent=parent))
            continue
        messages.append(author.block(event(b"e%d" % step), others=seen))
    return messages, forkers


def _parent_of(messages, author):
    block = block_of(next(m for m in messages if m.message_id == author.last))
    return block.ptrs[0] if block.seq > 0 else None


def _deliveries(messages, order, solicited=True):
    """Arrivals as carries by default: an unsolicited block above a proven pair is refused
    (``equivocator_excluded``), which B2 exempts, so convergence is checked on carries."""
    node = LaceNode()
    for k in order:
        node.offer(messages[k], block_of(messages[k]), NOW, solicited)
    return node


def _check_causal(node: LaceNode):
    seen = set()
    for ident in node.delivered:
        for p in node.lace.blocks[ident].block.ptrs:
            assert p in seen, "a pointer was delivered after the block"
        seen.add(ident)



@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.data())
def test_b1_b2_b3_any_order_same_state(dag, data):
    messages, forkers = dag
    n = len(messages)
    first = data.draw(st.permutations(range(n)))
    second = data.draw(st.permutations(range(n)))
    duplicated = second + data.draw(st.lists(st.sampled_from(range(n)), max_size=5))
    a, b = _deliveries(messages, first), _deliveries(messages, duplicated)
    for node in (a, b):
        _check_causal(node)                                   # B1
        assert not node.pending or all(m not in node.lace.blocks for m in node.missing_ids())
    assert set(a.delivered) == set(b.delivered)               # B2
    assert set(a.lace.invalid) == set(b.lace.invalid)
    assert set(a.lace.proofs) == set(b.lace.proofs)
    for proof in a.lace.proofs.values():                      # B3
        assert proof.kind == 0 and verify_proof(proof)
        assert any(pool(f).id == proof.culprit for f in forkers)
    outsider = pool(OUTSIDER).id                              # B4
    assert all(a.lace.blocks[i].creator != outsider for i in a.delivered)
    assert all(len(m.body) <= MAX_BLOCK_BODY for m in messages)   # B7


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.data())
def test_b3_every_pair_held_gives_a_proof(dag, data):
    messages, _ = dag
    node = _deliveries(messages, data.draw(st.permutations(range(len(messages)))))
    by_slot = {}
    for ident in node.delivered:
        held = node.lace.blocks[ident]
        by_slot.setdefault((held.creator, held.block.seq), []).append(ident)
    pairs = {slot for slot, ids in by_slot.items() if len(ids) > 1}
    proven = {(p.culprit, p.where) for p in node.lace.proofs.values()}
    assert pairs == proven


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dag=dags(), data=st.data())
def test_loss_then_recovery_and_crash_restart_converge(tmp_path_factory, dag, data):
    messages, _ = dag
    n = len(messages)
    order = data.draw(st.permutations(range(n)))
    lost = data.draw(st.sets(st.sampled_from(range(n)), max_size=3))
    crash_at = data.draw(st.integers(0, n))
    reference = _deliveries(messages, range(n))
    path = tmp_path_factory.mktemp("lace")
    node = LaceNode(path)
    for step, k in enumerate(order):
        if step == crash_at:
            node.close()
            node = LaceNode(path)                  # restart from LMDB; pending blocks are gone
        if k not in lost:
            node.offer(messages[k], block_of(messages[k]), NOW, True)
    _check_causal(node)
    for k in range(n):                             # carries bring back what was lost
        node.offer(messages[k], block_of(messages[k]), NOW, True)
    _check_causal(node)
    assert set(node.delivered) == set(reference.delivered)
    assert set(node.lace.proofs) == set(reference.lace.proofs)
    node.close()
    restarted = LaceNode(path)
    assert set(restarted.delivered) == set(reference.delivered)
    assert set(restarted.lace.proofs) == set(reference.lace.proofs)
    restarted.close()
