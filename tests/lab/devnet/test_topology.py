"""Devnet topologies: the shapes have the links they promise, and the files load as the node loads them."""

from __future__ import annotations

import pytest

from dmq.topology import parse_topology
from lab.devnet.topology import (
    Shape,
    degrees,
    dials_of,
    is_connected,
    links_of,
    neighbours,
    topology_document,
)


def undirected(links) -> set[frozenset[int]]:
    return {frozenset(link) for link in links}


def test_line_is_a_chain():
    links = links_of("line", 5)
    assert undirected(links) == {frozenset({i, i + 1}) for i in range(4)}
    assert degrees(links, 5) == [1, 2, 2, 2, 1]


def test_ring_closes_the_chain_and_falls_back_to_a_line_below_three_nodes():
    links = links_of(Shape.RING, 5)
    assert undirected(links) == {frozenset({i, (i + 1) % 5}) for i in range(5)}
    assert degrees(links, 5) == [2] * 5
    assert undirected(links_of("ring", 2)) == {frozenset({0, 1})}


def test_star_links_every_node_to_the_first():
    links = links_of("star", 6)
    assert degrees(links, 6) == [5, 1, 1, 1, 1, 1]
    assert all(dials_of(links, i) == [0] for i in range(1, 6))
    assert dials_of(links, 0) == []


def test_full_links_every_pair_once():
    links = links_of("full", 5)
    assert len(links) == 10 == len(undirected(links))
    assert degrees(links, 5) == [4] * 5


@pytest.mark.parametrize("nodes", [2, 3, 5, 8, 20])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_random_is_connected_has_no_repeated_link_and_is_reproducible(nodes, seed):
    links = links_of("random", nodes, seed=seed)
    assert is_connected(links, nodes)
    assert len(undirected(links)) == len(links)
    assert all(a != b for a, b in links)
    assert links == links_of("random", nodes, seed=seed)
    if nodes >= 5:
        assert len(links) > nodes - 1      # more than a tree: it has cycles


def test_random_depends_on_the_seed():
    assert len({links_of("random", 8, seed=seed) for seed in range(5)}) > 1


def test_connectivity_check_sees_a_split():
    assert not is_connected([(0, 1), (2, 3)], 4)
    assert is_connected([], 1)


def test_every_link_is_dialed_by_exactly_one_side():
    links = links_of("ring", 6)
    dialed = [(node, other) for node in range(6) for other in dials_of(links, node)]
    assert sorted(dialed) == sorted(links)
    assert [len(n) for n in neighbours(links, 6)] == degrees(links, 6)


def test_unknown_shape_and_empty_network_are_refused():
    with pytest.raises(ValueError):
        links_of("mesh", 3)
    with pytest.raises(ValueError):
        links_of("line", 0)


def test_the_topology_file_loads_as_the_node_loads_it():
    topology = parse_topology(topology_document([("127.0.0.1", 4001), ("127.0.0.1", 4002)]))
    assert len(topology.local_roots) == 1
    group = topology.local_roots[0]
    assert [(ap.address, ap.port) for ap in group.access_points] == [("127.0.0.1", 4001), ("127.0.0.1", 4002)]
    assert group.hot_valency == 2 and group.warm_valency == 2
    assert group.advertise is False             # peer sharing never adds links the shape lacks
    assert topology.all_access_points == group.access_points
    assert not topology.ledger_peers_enabled_at(10**9)


def test_a_node_that_dials_nobody_gets_no_local_roots():
    assert parse_topology(topology_document([])).local_roots == ()
