"""Every abuse case of docs/topics-design.md 5.10 refused with its code, epochs and quorums (B5), and a
block with a real devnet KES signature."""

from __future__ import annotations

import pytest

from dmq.keyfiles import read_bulk_credentials
from dmq.clock import ManualClock
from dmq.codec import build_message
from dmq.stake import PoolStake, StakeView
from topics.blocklace.codec import (
    PERM_ACK, PERM_EVENT, Block, Carry, Need, TopicParams, decode_body, encode_block, encode_carry, encode_need,
)
from topics.blocklace.lace import Checkpoint
from topics.blocklace.node import LaceNode
from topics.blocklace.proofs import verify_carried, verify_proof
from topics.blocklace.reasons import BlocklaceReject
from tests.conftest import CONFORMANCE

from .world import (
    ALL, NOW, TOPIC, Author, ack, ad_payload, advertisement, block_of, epoch_payload, event, pool,
)


def _offer(node, message, solicited=False):
    return node.offer(message, block_of(message), NOW, solicited)


def _code(node, message, solicited=False):
    result = _offer(node, message, solicited)
    return None if result.rejected is None else result.rejected.reason.code


@pytest.fixture
def topic():
    """A node holding version 0 of an advertisement naming pools 0..3 with every permission."""
    node = LaceNode()
    authors = [Author(pool(i)) for i in range(6)]
    ad = advertisement(0, {pool(i).id: ALL for i in range(4)} | {pool(4).id: PERM_ACK})
    first = authors[0].block(ad_payload(ad))
    assert _offer(node, first).accepted
    return node, authors, first.message_id


def test_not_publisher_and_permission_denied(topic):
    node, authors, ad_id = topic
    assert _code(node, authors[5].block(event(), others=[ad_id])) == 32
    assert _code(node, authors[4].block(event(), others=[ad_id])) == 33
    assert _code(node, Author(pool(4)).block(ack(), others=[ad_id])) is None


def test_no_advertisement(topic):
    node, authors, _ = topic
    assert _code(node, Author(pool(1)).block(event())) == 34


def test_bad_owner_signature_and_ad_version(topic):
    node, authors, ad_id = topic
    one_signature = advertisement(1, {pool(0).id: ALL}, signers=(0,))
    assert _code(node, authors[0].block(ad_payload(one_signature), others=[ad_id])) == 36
    skipped = advertisement(2, {pool(0).id: ALL})
    assert _code(node, Author(pool(0), 1, ad_id).block(ad_payload(skipped))) == 37


def test_stale_advertisement_after_revocation():
    """A revocation applies from the first epoch whose certificate names it (B4)."""
    node = LaceNode()
    a = [Author(pool(i)) for i in range(4)]
    everyone = {pool(i).id: ALL for i in range(4)}
    v0 = a[0].block(ad_payload(advertisement(0, everyone)))
    _offer(node, v0)
    revoked = dict(everyone)
    del revoked[pool(3).id]
    v1 = a[0].block(ad_payload(advertisement(1, revoked)))
    assert _offer(node, v1).accepted
    proposal = a[1].block(epoch_payload(number=1, attempt=0, ad_version=1, cut=(v1.message_id,)), others=[v1.message_id])
    assert _offer(node, proposal).accepted
    acks = [a[i].block(epoch_payload(number=1, attempt=0, ad_version=1, acked=proposal.message_id),
                       others=[proposal.message_id]) for i in (0, 2)]
    results = [_offer(node, m) for m in acks]
    assert results[-1].finals == [(TOPIC, 1, proposal.message_id)]
    # in epoch 0, under version 0 in its causal past, pool 3 may still publish
    assert _code(node, a[3].block(event(), others=[v0.message_id])) is None
    # in epoch 1 its blocks see the certificate, hence version 1: refused
    certificate = [m.message_id for m in acks]
    in_epoch_1 = Author(pool(3)).block(event(), others=certificate, epoch=1, epochs={i: 0 for i in certificate})
    assert _code(node, in_epoch_1) == 32
    honest = Author(pool(2), 1, acks[1].message_id).block(event(), others=certificate, epoch=1,
                                                          epochs={i: 0 for i in certificate})
    assert _code(node, honest) is None


def test_self_parent_pointers_floor_and_epochs(topic):
    node, authors, ad_id = topic
    b0 = authors[1].block(event(), others=[ad_id])
    _offer(node, b0)
    wrong_parent = Author(pool(1), 1, ad_id).block(event())          # self-parent of another creator
    assert _code(node, wrong_parent) == 38
    params = advertisement(1, {pool(i).id: ALL for i in range(4)}, TopicParams(max_pointers=1))
    v1 = authors[0].block(ad_payload(params))
    assert _offer(node, v1).accepted
    crowded = authors[2].block(event(), others=[v1.message_id, b0.message_id])
    assert _code(node, crowded) == 39
    floor = Block(TOPIC, 0, 0, (ad_id,), 1, event(), ())
    assert _code(node, pool(3).sign(encode_block(floor))) == 40
    unjustified = authors[3].block(event(), others=[ad_id], epoch=1, epochs={ad_id: 0})
    assert _code(node, unjustified) == 41


def test_invalid_ancestor_and_epoch_closed(topic):
    node, authors, ad_id = topic
    bad = authors[5].block(event(), others=[ad_id])
    assert _code(node, bad) == 32
    assert _code(node, authors[1].block(event(), others=[ad_id, bad.message_id])) == 46
    # below a late joiner's checkpoint: history this node does not have (5.8)
    node.lace.checkpoints[TOPIC] = Checkpoint(3, b"\x01" * 32, ad_id)
    assert _code(node, Author(pool(2)).block(event(), others=[ad_id], epoch=1)) == 42


def test_a_block_of_an_epoch_closed_here_is_taken_when_its_past_is_held(topic):
    """Its creator was away while the others closed epochs without it (5.3): late, not invalid."""
    node, authors, ad_id = topic
    node.lace.topic(TOPIC).final = 3
    late = authors[2].block(event(), others=[ad_id])
    assert _offer(node, late).accepted
    assert _offer(node, authors[2].block(event())).accepted


def test_equivocation_proof_and_exclusion(topic):
    node, authors, ad_id = topic
    first = Author(pool(2)).block(event(b"a"), others=[ad_id])
    twin = Author(pool(2)).block(event(b"b"), others=[ad_id])
    _offer(node, first)
    result = _offer(node, twin)
    assert result.accepted and len(result.proofs) == 1 and result.proofs[0].kind == 0
    assert verify_proof(result.proofs[0])
    later = Author(pool(2), 1, first.message_id).block(event(b"c"))
    assert _code(node, later) == 43
    assert _code(node, later, solicited=True) is None     # carried blocks still resolve


def test_topic_conflicted_and_owner_equivocation(topic):
    node, authors, ad_id = topic
    x = authors[0].block(ad_payload(advertisement(1, {pool(0).id: ALL})))
    y = Author(pool(1)).block(ad_payload(advertisement(1, {pool(1).id: ALL})), others=[ad_id])
    assert _offer(node, x).accepted
    result = _offer(node, y)
    assert [p.kind for p in result.proofs] == [2] and verify_proof(result.proofs[0])
    both = authors[2].block(event(), others=[x.message_id, y.message_id])
    assert _code(node, both) == 44


def test_double_vote_counts_once_and_quorum_boundaries():
    """Count rule 2/3 of four electors: three acknowledgers finalize, two never do (B5)."""
    node = LaceNode()
    a = [Author(pool(i)) for i in range(4)]
    v0 = a[0].block(ad_payload(advertisement(0, {pool(i).id: ALL for i in range(4)})))
    _offer(node, v0)
    p1 = a[1].block(epoch_payload(number=1, attempt=0, ad_version=0, cut=(v0.message_id,)), others=[v0.message_id])
    # the DMQ id covers the body only, not the pool: two proposals must differ in their bodies
    p2 = a[2].block(epoch_payload(number=1, attempt=0, ad_version=0, cut=(v0.message_id,)), others=[v0.message_id],
                    tags=(b"second",))
    _offer(node, p1), _offer(node, p2)
    double = a[1].block(epoch_payload(number=1, attempt=0, ad_version=0, acked=p2.message_id), others=[p2.message_id])
    result = _offer(node, double)
    assert [p.kind for p in result.proofs] == [1] and verify_proof(result.proofs[0])
    assert node.lace.topic(TOPIC).final == 0          # p2 holds pool 2 only: the double vote did not count
    r = _offer(node, a[3].block(epoch_payload(number=1, attempt=0, ad_version=0, acked=p2.message_id),
                                others=[p2.message_id]))
    assert r.finals == []                            # 2 of 4: 2 x 3 > 2 x 4 is false
    r = _offer(node, a[0].block(epoch_payload(number=1, attempt=0, ad_version=0, acked=p2.message_id),
                                others=[p2.message_id, v0.message_id]))
    assert r.finals == [(TOPIC, 1, p2.message_id)]


def _stake_view(*snapshots: tuple[int, dict[bytes, int]]) -> StakeView:
    """The node's own stake view, fed snapshot by snapshot as the cardano-node link feeds it."""
    view = StakeView(ManualClock(now=NOW))
    for epoch, stakes in snapshots:
        view.update({p: PoolStake(s, s, s) for p, s in stakes.items()}, epoch)
    return view


def test_stake_rule_and_stale_snapshot():
    # The lace weighs a proposal in the snapshot it names, through the node's real StakeView:
    # epoch 7 is still held after epoch 8 arrived, with its own stakes.
    view = _stake_view((7, {pool(0).id: 10, pool(1).id: 60, pool(2).id: 30}),
                       (8, {pool(0).id: 0, pool(1).id: 100, pool(2).id: 0}))
    node = LaceNode(stake_of=view.set_stake_at)
    a = [Author(pool(i)) for i in range(3)]
    ad = advertisement(0, {pool(i).id: ALL for i in range(3)}, TopicParams(quorum=(1, 2, 3)))
    v0 = a[0].block(ad_payload(ad))
    _offer(node, v0)
    unheld = a[1].block(epoch_payload(number=1, attempt=0, ad_version=0, cut=(v0.message_id,), stake_epoch=9),
                        others=[v0.message_id])
    assert _code(node, unheld) == 47
    a[1] = Author(pool(1))
    proposal = a[1].block(epoch_payload(number=1, attempt=0, ad_version=0, cut=(v0.message_id,), stake_epoch=7),
                          others=[v0.message_id])
    assert _offer(node, proposal).finals == []       # 60 of 100: 60 x 3 > 2 x 100 is false
    r = _offer(node, a[0].block(epoch_payload(number=1, attempt=0, ad_version=0, acked=proposal.message_id),
                                others=[proposal.message_id]))
    assert r.finals == [(TOPIC, 1, proposal.message_id)]   # 70 of 100


def test_stake_view_keeps_the_last_three_snapshots():
    view = _stake_view((7, {pool(0).id: 10}), (8, {pool(0).id: 20}), (9, {pool(1).id: 5}))
    assert view.snapshot_epochs == (7, 8, 9)
    assert [view.set_stake_at(e, pool(0).id) for e in (6, 7, 8, 9)] == [None, 10, 20, 0]
    view.update({pool(0).id: PoolStake(1, 40, 1)}, 10)
    assert view.snapshot_epochs == (8, 9, 10)
    assert view.set_stake_at(7, pool(0).id) is None and view.set_stake_at(10, pool(0).id) == 40
    view.update({}, None)                            # a snapshot without an epoch is the current one only
    assert view.snapshot_epochs == (8, 9, 10) and view.stake_of(pool(0).id) is None


def test_carry_round_trip_and_bad_carried_message(topic):
    node, authors, ad_id = topic
    block = authors[1].block(event(b"carried"), others=[ad_id])
    need = encode_need(Need(TOPIC, (block.message_id,)))
    carry = encode_carry(Carry(b"\1" * 32, block.raw))
    kind, decoded = decode_body(carry)
    assert kind == 2 and decoded.message == block.raw              # B7: byte-identical original
    assert verify_carried(decoded.message).message_id == block.message_id
    assert decode_body(need)[1].ids == (block.message_id,)
    tampered = bytearray(block.raw)
    tampered[-40] ^= 1
    with pytest.raises(BlocklaceReject) as err:
        verify_carried(bytes(tampered))
    assert err.value.reason.code == 45


def test_pending_buffer_is_bounded(topic):
    node = LaceNode(pending_per_creator=3)
    author = Author(pool(1))
    orphans = [author.block(event(b"%d" % i), others=[b"\7" * 32]) for i in range(6)]
    evicted = [i for m in orphans for i in _offer(node, m).evicted]
    assert len(node.pending) == 3 and len(evicted) == 3


def test_block_with_devnet_kes_signature():
    """A block signed by a devnet pool's real Sum6KES key verifies as a carried message."""
    cred = read_bulk_credentials(CONFORMANCE / "cardano-devnet" / "bulk-creds-k2.json")[0]
    ad = advertisement(0, {__import__("dmq.message", fromlist=["pool_id_of"]).pool_id_of(cred.cold_vk): ALL})
    body = encode_block(Block(TOPIC, 0, 0, (), 0, ad_payload(ad), (b"vector",)))
    message = build_message(body, 0, NOW + 600, cred.kes_key, cred.opcert, cred.cold_vk)
    assert verify_carried(message.raw).raw == message.raw
    node = LaceNode()
    assert node.offer(message, block_of(message), NOW).accepted == [message.message_id]


@pytest.mark.trio
async def test_pending_buffer_is_capped_per_creator(tmp_path):
    """A creator whose blocks point at ids that never arrive evicts its own oldest blocks from
    the adapter's pending buffer (the real ingress), never another creator's (5.10)."""
    from topics.blocklace.adapter import BlocklaceAdapter
    from topics.blocklace.node import PENDING_PER_CREATOR
    from topics.trace import TopicPendingDropped

    from ..harness import EXP_OFFSET, NOW as HARNESS_NOW, instance, sign

    def waiting_block(n: int) -> bytes:
        return encode_block(Block(TOPIC, 0, 0, (n.to_bytes(32, "big"),), 0, event(b"%d" % n), ()))

    async with instance(tmp_path / "db", adapter=BlocklaceAdapter(), carried=("raw", "blocklace")) as inst:
        expires_at = int(HARNESS_NOW) + EXP_OFFSET
        patient = sign(waiting_block(10_000), expires_at, cred_index=1)
        assert await inst.ingress.submit_local(patient.raw) is None          # deferred, held
        flood = [sign(waiting_block(n), expires_at - n, cred_index=0) for n in range(PENDING_PER_CREATOR + 6)]
        for message in flood:
            assert await inst.ingress.submit_local(message.raw) is None
        buffer = inst.ingress.pending["blocklace"]
        assert buffer.held_for(flood[0].pool_id) == PENDING_PER_CREATOR
        assert buffer.holds(patient.message_id) and buffer.held_for(patient.pool_id) == 1
        dropped = [e for e in inst.events if isinstance(e, TopicPendingDropped)]
        assert [(e.message_id, e.reason) for e in dropped] == [(m.message_id, "buffer_overflow") for m in flood[:6]]
        assert not any(buffer.holds(m.message_id) for m in flood[:6])
