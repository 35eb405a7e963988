"""The registration topic's events and the set a Blocklace certificate fixes (docs/mithril-registration.md 8).

Real registrations (BLS keys, KES signatures and certificates of ``keys``) in hand-built DAGs:
the rule reads only the certificate's cut and what it reaches, so two ledgers fed the same
blocks in different orders fix the same set and digest.
"""

from __future__ import annotations

import random

import pytest

from apps.mithril_registration import PartyIdMismatch, verify_registration
from apps.mithril_registration.agreement import RegistrationLedger
from apps.mithril_registration.build import build_registration
from apps.mithril_registration.events import (
    Closed,
    Registered,
    agreed_event,
    close_event,
    decode_event,
    registration_event,
)
from apps.mithril_registration.errors import RegistrationMalformed
from apps.mithril_registration.node_side import epoch_settings
from clients.topics.blocklace import TopicOwners
from topics.blocklace.codec import AD, EPOCH, EVENT, PERM_EPOCH, PERM_EVENT, Block, EpochMsg, Payload

from .keys import CURRENT_KES_PERIOD, EPOCH as R, bls_key, pool, stake_distribution

OWNERS = TopicOwners([bytes(range(32))], 1)
TOPIC = OWNERS.topic_id
ELECTORS = [bytes([0xE0 + i]) * 28 for i in range(3)]
#: Set snapshots by Cardano epoch, for proposals under the stake rule: elector 0 holds most in epoch 7.
STAKE_AT = {7: {ELECTORS[0]: 80, ELECTORS[1]: 10, ELECTORS[2]: 10}}


def _registration(index: int, key: int | None = None, encoding: str = "json-hex"):
    return build_registration(pool(index), bls_key(index if key is None else key), epoch=R,
                              current_kes_period=CURRENT_KES_PERIOD, encoding=encoding)


class Dag:
    """Blocks with made-up ids, each pointing at what it is told to."""

    def __init__(self) -> None:
        self.blocks: list[tuple[bytes, bytes, int, Block]] = []

    def add(self, creator: bytes, payload: Payload, ptrs=(), kes_period: int = CURRENT_KES_PERIOD) -> bytes:
        ident = bytes([len(self.blocks)]) * 32
        self.blocks.append((ident, creator, kes_period, Block(TOPIC, 0, 0, tuple(ptrs), 0, payload)))
        return ident

    def event(self, creator: bytes, data: bytes, ptrs=(), kes_period: int = CURRENT_KES_PERIOD) -> bytes:
        return self.add(creator, Payload(EVENT, event=data), ptrs, kes_period)


def _ledger() -> RegistrationLedger:
    stakes = stake_distribution(0, 1, 2, 3)

    def verify(registration, kes_period):
        return verify_registration(registration, stake_distribution=stakes, current_kes_period=kes_period)

    return RegistrationLedger(verify=verify, stake_at=lambda epoch, p: STAKE_AT.get(epoch, {}).get(p))


def _round(*, closers=2, equivocate=True, late=True, stake_epoch=None, closing=None):
    """An advertisement, registrations of pools 0, 1, 2 (2 with a second key), closes, a proposal."""
    dag = Dag()
    ad = OWNERS.advertisement(0, {e: PERM_EPOCH | PERM_EVENT for e in ELECTORS})
    head = dag.add(ELECTORS[0], Payload(AD, ad=ad))
    regs = [dag.event(ELECTORS[i % 3], registration_event(_registration(i)), [head]) for i in range(3)]
    if equivocate:
        regs.append(dag.event(ELECTORS[1], registration_event(_registration(2, key=7)), [head]))
    closes = [dag.event(ELECTORS[i], close_event(R), regs) for i in (closing or range(closers))]
    cut = tuple(closes or regs)
    proposal = dag.add(ELECTORS[2], Payload(EPOCH, epoch=EpochMsg(1, 0, 0, cut=cut, stake_epoch=stake_epoch)), closes)
    if late:
        dag.event(ELECTORS[2], registration_event(_registration(3)), [proposal])
    return dag, proposal


def _feed(dag: Dag, order) -> RegistrationLedger:
    ledger = _ledger()
    for ident, creator, kes_period, block in order:
        ledger.deliver(ident, creator, kes_period, block)
    return ledger


def test_the_certificate_fixes_one_set_whatever_the_delivery_order():
    dag, proposal = _round()
    results = []
    for seed in range(3):
        # any causal order: each block after its pointers (made-up ids keep creation order causal)
        order = list(dag.blocks)
        if seed:
            random.Random(seed).shuffle(order)
            order.sort(key=lambda b: max((dag.blocks.index(next(x for x in dag.blocks if x[0] == p))
                                          for p in b[3].ptrs), default=-1))
        ledger = _feed(dag, order)
        [fixed] = ledger.finalize(1, proposal)
        results.append(fixed)
    first = results[0]
    assert [s.pool_id for s in first.signers] == sorted([pool(0).pool_id, pool(1).pool_id])
    # pool 2 registered two keys: excluded, the two events kept as the proof
    [proof] = first.excluded
    assert proof.pool_id == pool(2).pool_id
    keys = {decode_event(proof.first[1]).registration.verification_key,
            decode_event(proof.second[1]).registration.verification_key}
    assert len(keys) == 2
    # pool 3's registration came after the cut: not in the set
    assert pool(3).pool_id not in {s.pool_id for s in first.signers}
    assert all(r.digest == first.digest and r.signers == first.signers for r in results)


def test_closes_from_a_third_of_the_stake_or_less_fix_nothing():
    dag, proposal = _round(closers=1)
    ledger = _feed(dag, dag.blocks)
    assert ledger.finalize(1, proposal) == []
    assert R not in ledger.agreed


def test_under_the_stake_rule_closes_are_weighed_in_the_proposals_snapshot():
    # elector 0 alone holds 80 % of the snapshot the proposal names: its close is enough
    dag, proposal = _round(closing=[0], stake_epoch=7)
    assert [f.epoch for f in _feed(dag, dag.blocks).finalize(1, proposal)] == [R]
    # electors 1 and 2 are two thirds by count but 20 % of that stake: not enough
    dag, proposal = _round(closing=[1, 2], stake_epoch=7)
    assert _feed(dag, dag.blocks).finalize(1, proposal) == []
    # a snapshot the node does not hold weighs nothing
    dag, proposal = _round(closing=[0, 1, 2], stake_epoch=8)
    assert _feed(dag, dag.blocks).finalize(1, proposal) == []


def test_a_set_is_fixed_once():
    dag, proposal = _round()
    ledger = _feed(dag, dag.blocks)
    [fixed] = ledger.finalize(1, proposal)
    assert ledger.finalize(2, proposal) == []
    assert ledger.agreed[R] is fixed


def test_each_registration_is_verified_at_the_kes_period_of_the_message_that_carried_it():
    dag = Dag()
    ad = OWNERS.advertisement(0, {e: PERM_EPOCH | PERM_EVENT for e in ELECTORS})
    head = dag.add(ELECTORS[0], Payload(AD, ad=ad))
    good = dag.event(ELECTORS[0], registration_event(_registration(0)), [head])
    # signed at evolution 7; a carrier stamping period 110 (evolution 10) is outside Mithril's +-1
    skewed = dag.event(ELECTORS[1], registration_event(_registration(1)), [head], kes_period=CURRENT_KES_PERIOD + 3)
    closes = [dag.event(ELECTORS[i], close_event(R), [good, skewed]) for i in range(2)]
    proposal = dag.add(ELECTORS[2], Payload(EPOCH, epoch=EpochMsg(1, 0, 0, cut=tuple(closes))), closes)
    ledger = _feed(dag, dag.blocks)
    [fixed] = ledger.finalize(1, proposal)
    assert [s.pool_id for s in fixed.signers] == [pool(0).pool_id]
    assert ledger.refused == 1


def test_epoch_settings_put_the_set_of_e_in_next_signers_and_of_e_minus_1_in_current_signers():
    dag, proposal = _round(equivocate=False)
    ledger = _feed(dag, dag.blocks)
    ledger.finalize(1, proposal)
    assert epoch_settings(R - 1, ledger.agreed) is None
    settings = epoch_settings(R, ledger.agreed)
    assert settings["epoch"] == R and settings["current_signers"] == []
    assert {p["party_id"] for p in settings["next_signers"]} == {pool(i).party_id for i in range(3)}
    later = epoch_settings(R + 1, {R + 1: ledger.agreed[R], R: ledger.agreed[R]})
    assert later["current_signers"] == settings["next_signers"]


@pytest.mark.parametrize("encoding", ["json-hex", "bytes-hex"])
def test_a_registration_event_carries_everything_mithril_checks(encoding):
    registration = _registration(0, encoding=encoding)
    event = decode_event(registration_event(registration))
    assert isinstance(event, Registered) and event.epoch == R
    carried = event.registration
    assert carried.party_id == registration.party_id and carried.kes_evolutions == registration.kes_evolutions
    verified = verify_registration(carried, stake_distribution=stake_distribution(0),
                                   current_kes_period=CURRENT_KES_PERIOD)
    assert verified.pool_id == pool(0).pool_id
    assert len(registration_event(registration)) < 900
    assert decode_event(close_event(R)) == Closed(R)


def test_a_registration_naming_another_pool_or_garbage_is_refused_before_publication():
    registration = _registration(0)
    wrong = type(registration)(**{**{f: getattr(registration, f) for f in registration.__slots__},
                                  "party_id": pool(1).party_id})
    with pytest.raises(PartyIdMismatch):
        registration_event(wrong)
    with pytest.raises(RegistrationMalformed):
        decode_event(b"\x82\x00\x01")


def test_a_pool_without_stake_is_left_out_everywhere():
    dag = Dag()
    ad = OWNERS.advertisement(0, {e: PERM_EPOCH | PERM_EVENT for e in ELECTORS})
    head = dag.add(ELECTORS[0], Payload(AD, ad=ad))
    regs = [dag.event(ELECTORS[0], registration_event(_registration(i)), [head]) for i in (0, 5)]
    closes = [dag.event(ELECTORS[i], close_event(R), regs) for i in range(2)]
    proposal = dag.add(ELECTORS[2], Payload(EPOCH, epoch=EpochMsg(1, 0, 0, cut=tuple(closes))), closes)
    ledger = _feed(dag, dag.blocks)
    [fixed] = ledger.finalize(1, proposal)
    assert [s.pool_id for s in fixed.signers] == [pool(0).pool_id] and ledger.refused == 1


def test_a_notice_naming_another_digest_is_a_disagreement():
    dag, proposal = _round()
    ledger = _feed(dag, dag.blocks)
    [fixed] = ledger.finalize(1, proposal)
    ledger.deliver(b"\xaa" * 32, ELECTORS[1], CURRENT_KES_PERIOD,
                   Block(TOPIC, 1, 1, (proposal,), 0, Payload(EVENT, event=agreed_event(R, fixed.digest, 2))))
    assert ledger.disagreements() == []
    ledger.deliver(b"\xbb" * 32, ELECTORS[2], CURRENT_KES_PERIOD,
                   Block(TOPIC, 1, 1, (proposal,), 0, Payload(EVENT, event=agreed_event(R, b"\x00" * 32, 2))))
    [(ident, pool_id, notice)] = ledger.disagreements()
    assert ident == b"\xbb" * 32 and pool_id == ELECTORS[2] and notice.digest == b"\x00" * 32


def test_stake_is_asked_when_the_set_is_fixed_for_its_epoch():
    dag, proposal = _round(equivocate=False, late=False)
    ledger = _feed(dag, dag.blocks)
    asked = []

    def registered(epoch, pool_id):
        asked.append(epoch)
        return pool_id != pool(1).pool_id

    ledger.registered = registered
    [fixed] = ledger.finalize(1, proposal)
    assert {s.pool_id for s in fixed.signers} == {pool(0).pool_id, pool(2).pool_id}
    assert set(asked) == {R}
