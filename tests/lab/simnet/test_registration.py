"""The Mithril registration application on a simulated network: every node fixes one set per epoch.

A small version of the run of docs/mithril-registration.md 10 (``dmq simnet
--mithril-registration``): whole nodes on the virtual clock, each running the application on
one registration topic, signers registering through the electors' local sockets every Cardano
epoch, one of them with two keys.
"""

from __future__ import annotations

from dataclasses import replace as changed

import pytest

from apps.mithril_registration import KesSignatureInvalid, verify_registration
from apps.mithril_registration.build import BlsKey, Pool, build_registration
from apps.mithril_registration.events import MAX_POINTERS
from clients.topics import TopicOwners, draft_block
from dmq.cli.wiring import assemble_node
from lab.devnet.pools import derive_seed
from lab.simnet import SimnetOptions
from lab.simnet.checks import SharedRegistrationVerdicts
from lab.simnet.registration import (ALL_PERMISSIONS, QUORUM_RULES, RegistrationPlan, electors_that_fit,
                                     run_registration_simnet)
from lab.simnet.workload import make_pools
from topics.blocklace.codec import AD, Payload, TopicParams
from topics.blocklace.reasons import BlocklaceReject

NODES, SIGNERS, EPOCHS = 7, 40, 2


def test_every_node_fixes_the_same_set_each_epoch_without_the_equivocator():
    # 4 of the 7 nodes are electors: the other 3 only follow the topic, fix the sets and serve them.
    options = SimnetOptions(nodes=NODES, pools=SIGNERS, active_peers=4, warmup=20.0, drain=60.0, seed=3)
    plan = RegistrationPlan(epochs=EPOCHS, epoch_length=40, interval=4, attempt_timeout=8, spread=0.5, electors=4,
                            equivocators=1)
    snapshots = []
    report = run_registration_simnet(options, plan, assemble_node, progress=snapshots.append)

    assert report.finished and report.agreed, report.lines()
    # every registration was published (the equivocator's two keys through two nodes)
    assert report.sent == {"attempted": EPOCHS * (SIGNERS + 1), "published": EPOCHS * (SIGNERS + 1)}, report.sent
    assert report.disagreements == 0 and report.problems == {}
    registration_rounds = [r for r in report.rounds if r["expected_signers"]]
    assert [r["epoch"] for r in registration_rounds] == [2, 3]
    for entry in registration_rounds:
        # every node, one digest, every honest signer, the equivocator left out
        assert entry["nodes_agreed"] == NODES and len(entry["digests"]) == 1, entry
        assert entry["signers"] == {SIGNERS - 1: NODES} and entry["excluded"] == {1: NODES}, entry
        latency = entry["agreement_after_close"]
        assert latency["count"] == NODES and 0 < latency["p50_ms"] <= latency["max_ms"] < 60_000, latency
    # the two epochs' sets differ (fresh keys every epoch)
    assert registration_rounds[0]["digests"].keys() != registration_rounds[1]["digests"].keys()
    # every node checked every registration it received; the verdict was computed once each
    checks = report.registration_checks
    assert checks["verified"] == EPOCHS * (SIGNERS + 1)
    assert checks["verified"] + checks["remembered"] == NODES * checks["verified"], checks
    # every node sent bytes in every epoch: the registrations reached all of them
    assert [t["cardano_epoch"] for t in report.traffic] == [1, 2]
    assert all(t["bytes_sent_per_node"]["min"] > 0 for t in report.traffic)
    # a report of the rounds so far was handed over after each epoch's sending
    assert [s.finished for s in snapshots] == [False] * EPOCHS
    assert len(snapshots[-1].rounds) == len(report.rounds) - 1


def test_a_shared_verdict_is_computed_once_per_registration_and_kes_period_and_a_refusal_is_raised_again():
    pool = Pool.create(b"\x01" * 32, b"\x02" * 32, start_kes_period=0)
    good = build_registration(pool, BlsKey.generate(7), epoch=3, current_kes_period=0, encoding="bytes-hex")
    other = build_registration(pool, BlsKey.generate(8), epoch=3, current_kes_period=0, encoding="bytes-hex")
    bad = changed(good, verification_key_signature=other.verification_key_signature)
    stake = {pool.pool_id: 1}
    shared = SharedRegistrationVerdicts()
    first = shared(good, stake_distribution=stake, current_kes_period=0)
    assert shared(good, stake_distribution=stake, current_kes_period=0) is first
    assert first == verify_registration(good, stake_distribution=stake, current_kes_period=0)
    for _ in range(2):
        with pytest.raises(KesSignatureInvalid):
            shared(bad, stake_distribution=stake, current_kes_period=0)
    # another KES period is another input: at period 5 the signature of evolution 0 is outside the window
    with pytest.raises(KesSignatureInvalid):
        shared(good, stake_distribution=stake, current_kes_period=5)
    assert shared.stats() == {"verified": 3, "remembered": 2}


def test_electors_that_fit_counts_the_tag_of_the_publishing_pools_first_block():
    """The run's advertisement is its publishing pool's first block in the topic, which the node
    tags with the pool id (docs/topics-design.md 5.8): 34 electors fit with the run's parameters,
    and a 35th makes that block too large (docs/mithril-registration.md 10.2)."""
    owners = TopicOwners([derive_seed(0, 0, "registration-topic-owner")], 1)
    params = TopicParams(quorum=QUORUM_RULES["stake"], epoch_interval=5, attempt_timeout=10, max_pointers=MAX_POINTERS)
    pools = [pool.pool_id for pool in make_pools(40, 0)]
    fit = electors_that_fit(owners, pools, params)
    assert fit == 34

    def first_block(count):
        ad = owners.advertisement(0, {pool: ALL_PERMISSIONS for pool in pools[:count]}, params=params)
        return draft_block(ad.body.owner.topic_id, Payload(AD, ad=ad), (pools[0],), draft_id=1)

    first_block(fit)
    with pytest.raises(BlocklaceReject):
        first_block(fit + 1)
