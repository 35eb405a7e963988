"""Devnet topologies: which node dials which, and the topology file each node reads.

A topology is a set of links ``(dialer, listener)`` between node indexes. One dial per link
is enough: node-to-node connections are duplex, and messages flow both ways over them
(docs/protocol/node-to-node.md 9.1). Each node's file is in the reference format (docs/protocol/configuration.md 11.3) with its dials as
one local-root group whose hot valency is the group's size, so the node keeps every link
up, and ``advertise: false``, so peer sharing never adds links the shape does not have.

Shapes: ``line`` (a chain), ``ring`` (a chain closed into a cycle; a line below three
nodes), ``star`` (every node linked to node 0), ``full`` (every pair), and ``random`` (a
random spanning tree plus about half as many extra links, from a seed: connected, with
cycles, different for each seed).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Sequence
from typing import Any

__all__ = [
    "Shape",
    "Link",
    "links_of",
    "neighbours",
    "degrees",
    "is_connected",
    "dials_of",
    "topology_document",
]

#: ``(dialer, listener)``: the first node has the second as a local root.
Link = tuple[int, int]


class Shape(str, enum.Enum):
    LINE = "line"
    RING = "ring"
    STAR = "star"
    FULL = "full"
    RANDOM = "random"


def _random_links(nodes: int, seed: int) -> list[Link]:
    rng = random.Random(f"dmq-devnet-topology/{seed}")
    order = list(range(nodes))
    rng.shuffle(order)
    links = {(order[i], order[rng.randrange(i)]) for i in range(1, nodes)}
    possible = nodes * (nodes - 1) // 2
    wanted = min(possible, nodes - 1 + nodes // 2)
    while len(links) < wanted:
        a, b = rng.sample(range(nodes), 2)
        if (a, b) not in links and (b, a) not in links:
            links.add((a, b))
    return sorted(links)


def links_of(shape: Shape | str, nodes: int, *, seed: int = 0) -> tuple[Link, ...]:
    """The links of ``shape`` over ``nodes`` nodes (indexes 0..nodes-1)."""
    shape = Shape(shape)
    if nodes < 1:
        raise ValueError(f"a topology needs at least one node, got {nodes}")
    if shape is Shape.LINE or (shape is Shape.RING and nodes < 3):
        links = [(i, i - 1) for i in range(1, nodes)]
    elif shape is Shape.RING:
        links = [(i, i - 1) for i in range(1, nodes)] + [(0, nodes - 1)]
    elif shape is Shape.STAR:
        links = [(i, 0) for i in range(1, nodes)]
    elif shape is Shape.FULL:
        links = [(i, j) for i in range(nodes) for j in range(i)]
    else:
        links = _random_links(nodes, seed)
    return tuple(links)


def neighbours(links: Sequence[Link], nodes: int) -> list[set[int]]:
    """Each node's linked nodes, whichever side dials."""
    around: list[set[int]] = [set() for _ in range(nodes)]
    for a, b in links:
        around[a].add(b)
        around[b].add(a)
    return around


def degrees(links: Sequence[Link], nodes: int) -> list[int]:
    return [len(n) for n in neighbours(links, nodes)]


def is_connected(links: Sequence[Link], nodes: int) -> bool:
    """Whether every node can reach every other over the links."""
    if nodes <= 1:
        return True
    around = neighbours(links, nodes)
    seen, frontier = {0}, [0]
    while frontier:
        for other in around[frontier.pop()] - seen:
            seen.add(other)
            frontier.append(other)
    return len(seen) == nodes


def dials_of(links: Sequence[Link], node: int) -> list[int]:
    """The nodes ``node`` dials, in link order."""
    return [listener for dialer, listener in links if dialer == node]


def topology_document(peers: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """A topology file (reference format) whose local roots are ``peers`` (host, port)."""
    roots = []
    if peers:
        roots.append({
            "accessPoints": [{"address": host, "port": port} for host, port in peers],
            "advertise": False,
            "trustable": True,
            "valency": len(peers),
            "warmValency": len(peers),
            "behindFirewall": False,
            "diffusionMode": "InitiatorAndResponder",
            "extraFlags": {},
        })
    return {
        "localRoots": roots,
        "publicRoots": [{"accessPoints": [], "advertise": False}],
        "useLedgerAfterSlot": -1,
    }
