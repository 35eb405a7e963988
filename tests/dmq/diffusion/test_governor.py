"""The governor's decisions without I/O: valency, targets, back-off, replacement, forgetting.

Time is a number passed in and jitter comes from a seeded ``random.Random``, so every case
is exact.
"""

from __future__ import annotations

import random

import pytest

from dmq.config import DiffusionMode
from dmq.diffusion import BackoffPolicy, DiffusionPolicy, Governor, PeerSource, PeerState
from dmq.topology import AccessPoint, LocalRootGroup, PublicRootGroup, Topology

NO_JITTER = BackoffPolicy(base=1.0, cap=8.0, jitter=0.0, stable_after=30.0, forget_after=3)


def a(port: int) -> tuple[str, int]:
    return ("10.0.0.1", port)


def points(*ports: int) -> tuple[AccessPoint, ...]:
    return tuple(AccessPoint("10.0.0.1", p) for p in ports)


def topology(local: list[tuple[list[int], int]] = (), public: list[int] = (), advertise: bool = False) -> Topology:
    return Topology(
        local_roots=tuple(LocalRootGroup(points(*ports), hot_valency=v, warm_valency=v, advertise=advertise)
                          for ports, v in local),
        public_roots=(PublicRootGroup(points(*public), advertise),) if public else (),
    )


def governor(topo: Topology, *, active: int = 20, known: int = 150, backoff: BackoffPolicy = NO_JITTER,
             own=()) -> Governor:
    return Governor(topo, target_active=active, target_known=known, backoff=backoff, rng=random.Random(1),
                    own_addresses=own)


def dialled(g: Governor, now: float) -> list[int]:
    return [p.address[1] for p in g.decide(now)]


def test_each_local_root_group_gets_its_valency_and_public_roots_fill_the_target():
    g = governor(topology(local=[([1, 2, 3], 2), ([4], 1)], public=[10, 11, 12, 13]), active=5)
    assert dialled(g, 0) == [1, 2, 4, 10, 11]
    assert g.active_count == 5
    assert dialled(g, 0) == []  # nothing more while those are under way
    for port in (1, 2, 4, 10, 11):
        g.connected(a(port), 0)
    assert [p.address[1] for p in g.hot()] == [1, 2, 4, 10, 11]


def test_local_roots_are_kept_even_above_the_active_target():
    g = governor(topology(local=[([1, 2, 3], 3)], public=[10]), active=1)
    assert dialled(g, 0) == [1, 2, 3]


def test_a_dead_peer_is_replaced_at_once_and_retried_after_its_backoff():
    g = governor(topology(public=[10, 11, 12]), active=2)
    assert dialled(g, 0) == [10, 11]
    g.connected(a(10), 0)
    g.connected(a(11), 0)
    verdict = g.failed(a(10), 5)
    assert (verdict.failures, verdict.delay, verdict.forgotten) == (1, 1.0, False)
    assert g.peer(a(10)).state is PeerState.BACKOFF
    assert dialled(g, 5) == [12]  # the spare replaces the dead one
    assert g.next_wakeup() == 6.0
    g.failed(a(12), 5.5)  # the spare fails too: 10's back-off ends first
    assert dialled(g, 5.9) == []
    assert dialled(g, 6.0) == [10]


def test_a_local_root_group_replaces_a_dead_member_with_a_spare_member():
    g = governor(topology(local=[([1, 2], 1)], public=[10]), active=1)
    assert dialled(g, 0) == [1]
    g.connected(a(1), 0)
    g.failed(a(1), 1)
    assert dialled(g, 1) == [2]  # not the public root: the group's own spare


def test_backoff_doubles_up_to_the_cap_and_a_stable_connection_resets_it():
    g = governor(topology(public=[10]), active=1)
    delays = []
    now = 0.0
    for _ in range(6):
        assert dialled(g, now) == [10]
        verdict = g.failed(a(10), now)
        delays.append(verdict.delay)
        now += verdict.delay
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert dialled(g, now) == [10]
    g.connected(a(10), now)
    verdict = g.failed(a(10), now + 30.0)  # up for stable_after: the count starts again
    assert (verdict.failures, verdict.delay) == (1, 1.0)
    assert g.peer(a(10)).source is PeerSource.PUBLIC_ROOT  # roots are never forgotten


def test_jitter_shortens_the_delay_by_at_most_its_share():
    policy = BackoffPolicy(base=1.0, cap=64.0, jitter=0.5)
    rng = random.Random(3)
    for failures in range(1, 8):
        ceiling = min(64.0, 2.0 ** (failures - 1))
        samples = [policy.delay(failures, rng) for _ in range(200)]
        assert all(ceiling * 0.5 <= d <= ceiling for d in samples)
        assert max(samples) - min(samples) > ceiling * 0.3  # spread, not a constant


def test_shared_peers_fill_the_known_set_and_are_forgotten_after_repeated_failures():
    g = governor(topology(public=[10]), active=3, known=3)
    assert dialled(g, 0) == [10]
    assert g.peers_wanted() == 2  # below the active target with no spare: ask peers for more
    assert g.learn([("10.0.0.1", 20), ("10.0.0.1", 10), ("10.0.0.1", 21), ("10.0.0.1", 22)]) == [a(20), a(21)]
    assert g.peers_wanted() == 0  # spares exist now
    assert dialled(g, 0) == [20, 21]
    now = 0.0
    for failures in (1, 2):
        verdict = g.failed(a(20), now)
        assert not verdict.forgotten
        now += verdict.delay
        assert dialled(g, now) == [20]
    verdict = g.failed(a(20), now)
    assert verdict.forgotten and verdict.failures == 3
    assert g.peer(a(20)) is None


def test_own_addresses_and_srv_domains_are_never_dialled():
    topo = Topology(public_roots=(PublicRootGroup((AccessPoint("10.0.0.1", 10), AccessPoint("relays.example"),
                                                   AccessPoint("10.0.0.1", 11))),))
    g = governor(topo, active=5, own={a(11)})
    assert dialled(g, 0) == [10]
    assert g.learn([a(11)]) == []


def test_shareable_peers_are_the_advertised_ones_connected_first():
    g = governor(Topology(
        local_roots=(LocalRootGroup(points(1), hot_valency=1, warm_valency=1, advertise=False),),
        public_roots=(PublicRootGroup(points(10, 11, 12), advertise=True),)), active=2)
    assert dialled(g, 0) == [1, 10]
    g.connected(a(1), 0)
    g.connected(a(10), 0)
    assert g.shareable(10) == [a(10), a(11), a(12)]
    assert g.shareable(2) == [a(10), a(11)]


def test_a_new_topology_adds_roots_and_demotes_removed_ones():
    g = governor(topology(public=[10, 11]), active=1)
    assert dialled(g, 0) == [10]
    g.connected(a(10), 0)
    g.set_topology(topology(local=[([5], 1)]))
    assert g.peer(a(10)).source is PeerSource.SHARED and g.peer(a(10)).state is PeerState.HOT
    assert dialled(g, 1) == [5]  # the new local root, although the active target is met


def test_local_roots_behind_a_firewall_are_never_dialled():
    topo = Topology(local_roots=(LocalRootGroup(points(1, 2), hot_valency=2, warm_valency=2, behind_firewall=True),
                                 LocalRootGroup(points(3), hot_valency=1, warm_valency=1)))
    assert dialled(governor(topo), 0) == [3]


def test_a_local_root_group_may_ask_to_be_dialled_initiator_only():
    topo = Topology(local_roots=(
        LocalRootGroup(points(1), hot_valency=1, warm_valency=1, diffusion_mode=DiffusionMode.INITIATOR_ONLY),
        LocalRootGroup(points(2), hot_valency=1, warm_valency=1)))
    g = governor(topo)
    assert [(p.address[1], p.initiator_only) for p in g.decide(0)] == [(1, True), (2, False)]


@pytest.mark.parametrize("bad", [dict(base=0), dict(base=2, cap=1), dict(jitter=1.0), dict(forget_after=0)])
def test_backoff_policy_rejects_nonsense(bad):
    with pytest.raises(ValueError):
        BackoffPolicy(**bad)


@pytest.mark.parametrize("versions", [frozenset(), frozenset({3}), frozenset({1, 2, 3})])
def test_diffusion_policy_offers_only_known_versions(versions):
    with pytest.raises(ValueError, match="versions"):
        DiffusionPolicy(versions=versions)
    assert DiffusionPolicy().versions == {1, 2}
