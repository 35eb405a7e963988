"""Whole networks of real nodes on loopback: every valid message everywhere, exactly once.

Nodes start without peers; once every port is known, each gets its topology (as a reload
would give it) and dials. Every node submits messages from its own pools; each must end up
at every node, fetched exactly once per node (one ``MessageAccepted`` per message, and no
``SigDuplicate``, which would mean a second download of a body the node already had).
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
import trio

from miniprotocols.local_msg_submission import ACCEPTED
from ouroboros_mux.mux import Mode, Provenance

from dmq.config import AcceptedConnectionsLimit
from dmq.diffusion import InboundDelayed, InboundRefused, PeersShared, PeerState

from .network import FAST, NOW, Network, RunningNode, local_roots, pool, public_roots, submit, wait_until
from .rogue import Rogue


def line(n: int) -> list[tuple[int, int]]:
    return [(i, i - 1) for i in range(1, n)]


def ring(n: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % n) for i in range(n)]


def random_graph(n: int, extra: int, seed: int) -> list[tuple[int, int]]:
    """A random spanning tree plus ``extra`` random edges: connected, with cycles."""
    rng = random.Random(seed)
    order = list(range(n))
    rng.shuffle(order)
    edges = {(order[i], order[rng.randrange(i)]) for i in range(1, n)}
    while len(edges) < n - 1 + extra:
        x, y = rng.sample(range(n), 2)
        if (x, y) not in edges and (y, x) not in edges:
            edges.add((x, y))
    return sorted(edges)


async def connect(nodes: list[RunningNode], edges: list[tuple[int, int]]) -> None:
    """Give node ``a`` of each edge ``(a, b)`` a local root on node ``b``, then wait for the links."""
    dials: dict[int, list[int]] = {}
    for a, b in edges:
        dials.setdefault(a, []).append(nodes[b].port)
    for a, ports in dials.items():
        nodes[a].node.diffusion.update_topology(local_roots(*ports))

    def linked() -> bool:
        return all(len(nodes[a].node.diffusion.peers.hot(Provenance.OUTBOUND)) == len(ports)
                   for a, ports in dials.items())

    await wait_until(linked, 10, what="every topology link up")


async def spread(net: Network, nodes: list[RunningNode], per_node: int = 2) -> list:
    messages = []
    for index, node in enumerate(nodes):
        batch = [pool(index % 10).sign(index * 100 + k, int(NOW) + 900) for k in range(per_node)]
        assert await submit(node, batch) == [ACCEPTED] * per_node
        messages.extend((index, m) for m in batch)
    return messages


def everywhere(nodes: list[RunningNode], ids: set[bytes]) -> bool:
    """Every node holds every id and has traced its acceptance.

    Both, because a reader sees a message once its disk commit is done, a moment before
    the task that admitted it resumes and traces ``MessageAccepted``.
    """
    return all(ids <= node.held() and ids <= node.accepted() for node in nodes)


def assert_everywhere_exactly_once(nodes: list[RunningNode], messages) -> None:
    for index, node in enumerate(nodes):
        pulled = node.accepted_from_peers()
        for origin, message in messages:
            assert message.message_id in node.held()
            assert pulled[message.message_id] == (0 if origin == index else 1), (node.name, origin, [
                e for e in node.events if getattr(e, "message_id", None) == message.message_id])
        assert not [r for r in node.rejections() if r.reason == "SigDuplicate"], node.name
        stored = {e.message_id: e.raw for e in node.node.mempool}
        assert all(stored[m.message_id] == m.raw for _, m in messages)  # the original bytes, everywhere


SHAPES = {
    "line-5": line(5),
    "ring-5": ring(5),
    "random-7": random_graph(7, extra=3, seed=11),
}


@pytest.mark.parametrize("shape", SHAPES)
async def test_every_message_reaches_every_node_exactly_once(stake_file, nursery, shape):
    edges = SHAPES[shape]
    n = 1 + max(max(e) for e in edges)
    net = Network(nursery, stake_file)
    nodes = [await net.start(f"n{i}") for i in range(n)]
    await connect(nodes, edges)
    messages = await spread(net, nodes)
    ids = {m.message_id for _, m in messages}
    await wait_until(lambda: everywhere(nodes, ids), 15, what=f"{len(ids)} messages everywhere")
    await trio.sleep(0.3)  # late duplicates, if any, would show up now
    assert_everywhere_exactly_once(nodes, messages)
    # A second wave over the established connections (blocking requests were waiting).
    wave = [(0, pool(0).sign(9000, int(NOW) + 900)), (n - 1, pool(1).sign(9001, int(NOW) + 900))]
    for origin, message in wave:
        assert await submit(nodes[origin], [message]) == [ACCEPTED]
    ids |= {m.message_id for _, m in wave}
    await wait_until(lambda: everywhere(nodes, ids), 10, what="the second wave")
    await trio.sleep(0.3)
    assert_everywhere_exactly_once(nodes, messages + wave)


async def test_a_mixed_version_network_diffuses_across_v1_and_v2_links(stake_file, nursery):
    """A ring of five where node 2 only knows V1 (an older release): its two links agree on V1,
    the other three on V2. Flow runs the opposite way on the two versions (docs/protocol/node-to-node.md 9.1), and
    messages from every node cross both kinds of link, still once per node."""
    net = Network(nursery, stake_file)
    v1_only = replace(FAST, versions=frozenset({1}))
    nodes = [await net.start(f"n{i}", policy=v1_only if i == 2 else None) for i in range(5)]
    edges = ring(5)
    await connect(nodes, edges)
    for a, b in edges:
        expected = 1 if 2 in (a, b) else 2
        (out,) = [p for p in nodes[a].node.diffusion.peers.hot(Provenance.OUTBOUND)
                  if p.peer == f"127.0.0.1:{nodes[b].port}"]
        assert (out.version, out.duplex) == (expected, True), (a, b)
        # The accepting side agreed on the same version.
        assert [p.version for p in nodes[b].node.diffusion.peers.hot(Provenance.INBOUND)] == [expected], (a, b)
    messages = await spread(net, nodes)
    ids = {m.message_id for _, m in messages}
    await wait_until(lambda: everywhere(nodes, ids), 15, what=f"{len(ids)} messages everywhere")
    await trio.sleep(0.3)
    assert_everywhere_exactly_once(nodes, messages)


async def test_per_peer_metrics_are_exposed(stake_file, nursery):
    net = Network(nursery, stake_file)
    a = await net.start("a")
    b = await net.start("b", local_roots(a.port))
    message = pool(3).sign(1, int(NOW) + 900)
    assert await submit(a, [message]) == [ACCEPTED]
    await wait_until(lambda: message.message_id in b.accepted(), 5, what="the message at B")
    text = b.node.metrics.render().decode()
    peer = f'direction="outbound",peer="127.0.0.1:{a.port}"'
    values = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
              if line.startswith("dmq_node_peer") and peer in line}
    assert values[f"dmq_node_peer_sigsAccepted_counter{{{peer}}}"] == 1
    assert values[f"dmq_node_peer_bytesIn_counter{{{peer}}}"] > len(message.raw)
    assert values[f"dmq_node_peer_bytesOut_counter{{{peer}}}"] > 0
    assert values[f"dmq_node_peer_connections_counter{{{peer}}}"] == 1
    assert values[f'dmq_node_peer_state_int{{{peer},state="hot"}}'] == 1
    assert "dmq_node_peerSelection_ActivePeers_int 1\n" in text
    # B's one connection (to A) is duplex and used both ways: the reference's DuplexState.
    for name in ("outboundConns", "inboundConns", "duplexConns", "fullDuplexConns"):
        assert f"dmq_node_connectionManager_{name}_int 1\n" in text, name
    assert "dmq_node_connectionManager_unidirectionalConns_int 0\n" in text


async def test_a_restarted_node_catches_up_on_what_is_still_unexpired(stake_file, nursery):
    net = Network(nursery, stake_file)
    a = await net.start("a")
    b = await net.start("b", local_roots(a.port))
    c = await net.start("c", local_roots(b.port))
    before = pool(0).sign(1, int(NOW) + 900)
    assert await submit(a, [before]) == [ACCEPTED]
    await wait_until(lambda: before.message_id in c.held(), 5, what="the first message at C")
    port = c.port
    await net.stop(c)
    while_down = [pool(1).sign(2, int(NOW) + 900), pool(2).sign(3, int(NOW) + 900)]
    short_lived = pool(3).sign(4, int(NOW) + 5)
    assert await submit(a, [*while_down, short_lived]) == [ACCEPTED] * 3
    await wait_until(lambda: short_lived.message_id in b.held(), 5, what="the messages at B")
    net.clock.advance(6)  # the short-lived one expires while C is down
    c = await net.start("c", local_roots(b.port), port=port)  # same port, same database
    wanted = {before.message_id} | {m.message_id for m in while_down}
    missed = {m.message_id for m in while_down}
    await wait_until(lambda: wanted <= c.held() and missed <= c.accepted(), 10, what="C caught up")
    assert short_lived.message_id not in c.held()
    # What C kept on disk was not fetched again; only what it missed came over the network.
    assert set(c.accepted_from_peers()) == missed
    assert not c.rejections()


async def test_a_local_root_is_reconnected_after_it_comes_back(stake_file, nursery):
    net = Network(nursery, stake_file)
    a = await net.start("a")
    b = await net.start("b", local_roots(a.port))
    link = b.node.diffusion.peers.get(f"127.0.0.1:{a.port}")
    await wait_until(lambda: link.state is PeerState.HOT, 5, what="B connected")
    port = a.port
    await net.stop(a)
    await wait_until(lambda: link.state is not PeerState.HOT and link.failures >= 2, 5,
                     what="B backing off from A")
    a = await net.start("a", port=port)
    await wait_until(lambda: link.state is PeerState.HOT and link.connections == 2, 5, what="B reconnected")
    message = pool(4).sign(5, int(NOW) + 900)
    assert await submit(a, [message]) == [ACCEPTED]
    await wait_until(lambda: message.message_id in b.held(), 5, what="a message over the new connection")


async def test_the_governor_replaces_a_dead_public_root(stake_file, nursery):
    net = Network(nursery, stake_file)
    roots = [await net.start(f"r{i}") for i in range(3)]
    ports = [r.port for r in roots]
    x = await net.start("x", public_roots(*ports), TargetNumberOfActivePeers="2")

    def hot_ports() -> set[int]:
        return {int(p.peer.rsplit(":", 1)[1]) for p in x.node.diffusion.peers.hot(Provenance.OUTBOUND)}

    await wait_until(lambda: len(hot_ports()) == 2, 5, what="two active peers")
    first = hot_ports()
    victim = next(r for r in roots if r.port in first)
    await net.stop(victim)
    spare = (set(ports) - first).pop()
    await wait_until(lambda: hot_ports() == (first - {victim.port}) | {spare}, 5, what="the spare promoted")
    message = pool(5).sign(6, int(NOW) + 900)
    survivor = next(r for r in roots if r.port == spare)
    assert await submit(survivor, [message]) == [ACCEPTED]
    await wait_until(lambda: message.message_id in x.held(), 5, what="a message from the replacement")


async def test_peer_sharing_brings_peers_the_governor_lacks(stake_file, nursery):
    net = Network(nursery, stake_file)
    c = await net.start("c")
    b = await net.start("b", public_roots(c.port, advertise=True))
    x = await net.start("x", public_roots(b.port), TargetNumberOfActivePeers="2")
    await wait_until(lambda: len(x.node.diffusion.peers.hot(Provenance.OUTBOUND)) == 2, 5,
                     what="X connected to the peer B shared")
    assert {p.peer for p in x.node.diffusion.peers.hot(Provenance.OUTBOUND)} == {
        f"127.0.0.1:{b.port}", f"127.0.0.1:{c.port}"}
    shared = [e for e in x.events if isinstance(e, PeersShared)]
    assert shared and shared[0].count == 1 and shared[0].new == 1


async def test_accepted_connections_limit_delays_then_refuses(stake_file, nursery):
    net = Network(nursery, stake_file)
    x = await net.start("x", config_overrides={"accepted_connections_limit": AcceptedConnectionsLimit(2, 1, 0.2)})
    async with Rogue(x.port, 2) as first:
        started = trio.current_time()
        async with Rogue(x.port, 2) as second:
            with pytest.raises(Exception):
                async with Rogue(x.port, 2):
                    pass
            # The second accept went over the soft limit: the accept loop paused before the third.
            assert trio.current_time() - started >= 0.2
            assert not first.ended.is_set() and not second.ended.is_set()
    refused = [e for e in x.events if isinstance(e, InboundRefused)]
    delayed = [e for e in x.events if isinstance(e, InboundDelayed)]
    assert len(refused) == 1 and refused[0].hard_limit == 2
    assert delayed and delayed[0].delay == pytest.approx(0.2)


async def test_an_initiator_only_node_receives_but_never_serves_on_v2(stake_file, nursery):
    net = Network(nursery, stake_file)
    r = await net.start("r")
    i = await net.start("i", local_roots(r.port), DiffusionMode="InitiatorOnly")
    assert i.node.diffusion.port is None  # no listener
    await wait_until(lambda: len(r.node.diffusion.peers.hot(Provenance.INBOUND)) == 1, 5, what="I connected to R")
    inbound = r.node.diffusion.peers.hot(Provenance.INBOUND)[0]
    assert inbound.duplex is False and inbound.version == 2
    to_i, from_i = pool(6).sign(7, int(NOW) + 900), pool(7).sign(8, int(NOW) + 900)
    assert await submit(r, [to_i]) == [ACCEPTED]
    assert await submit(i, [from_i]) == [ACCEPTED]
    await wait_until(lambda: to_i.message_id in i.held(), 5, what="R's message at I")
    await trio.sleep(0.5)
    assert from_i.message_id not in r.held()  # V2: an InitiatorOnly node can only receive
    assert set(inbound.mux.counters()) == {(11, Mode.RESPONDER), (12, Mode.RESPONDER)}
