"""A third of the registration nodes cut off by a network partition during the round, then healed.

Three ``dmq-node`` processes, each in a network namespace of its own joined to the others by one
bridge (``lab.netlab.namespaces``), sign as the electors of a registration topic under the
**stake** quorum rule, with stakes 3 : 3 : 2. Node 2's bridge port is taken down while the
round is open: the link is gone, not the process, so node 2 goes on alone with its own
clock-driven work (it closes the round when its chain enters the epoch and proposes Blocklace
epochs that nobody acknowledges). Nodes 0 and 1 hold 6/8 of the electors' stake, more than the
two thirds a certificate needs, so they fix the set during the partition: liveness with a third
of the nodes cut off. Node 2 cannot fix anything alone (2/8). When the link comes back, node 2
takes the certificates it missed and derives the same set and digest: safety.

What each side holds when the cut is fixed (docs/mithril-registration.md 8.2, 8.4):

- three signers and an equivocating pool register before the partition, through all three
  nodes (node 2 among them), and reach every node: they are in the cut's past, so the three are
  in the set and the pool is excluded, with both its keys as the proof, at every node;
- a fourth signer registers through node 2 while it is cut off, before the round's epoch
  begins. No block of nodes 0 and 1 can point to it, so it is not in the past of the cut they
  fix, and the set is fixed without it, at every node, node 2 included: node 2 fixes the set by
  the same certificate, whose past does not hold it (8.4, "Inclusion": it missed the round, as a
  registration that reaches Mithril's leader after its round moved on does). After the heal it
  reaches nodes 0 and 1 and changes nothing.

Node 2 made its blocks of the partition in a Blocklace epoch the others closed without it; they
take them as late blocks (docs/topics-design.md 5.3), so node 2 is heard again: every node's
``agreed`` notice reaches every node.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import trio

from apps.mithril_registration import parse_register_signer
from apps.mithril_registration.build import BlsKey, Pool, build_registration
from apps.mithril_registration.encoding import decode_verification_key
from apps.mithril_registration.events import decode_event
from lab.devnet.node_process import node_command
from lab.devnet.topology import dials_of, links_of, topology_document
from lab.netlab.addresses import node_address
from lab.netlab.namespaces import Lab, NamespacesUnavailable, check_available, remove_leftovers
from lab.netlab.plan import NODE_PORT
from tests.e2e.node_process import NodeProcess, start_in_threads
from tests.e2e.topic_node import OPEN_BUDGETS, TOPIC_MAGIC, topic_node
from tests.interop.conftest import missing_tool
from tests.topics.blocklace.world import ALL, TOPIC, pool

from .nodes import (EPOCH_LENGTH, TOPIC_PARAMS, Chain, accepted, advertise, agreed, closed, generate_signers, get_json, http_port,
                    publish, topic_view, until)

pytestmark = [pytest.mark.interop, pytest.mark.trio]

ELECTORS = (0, 1, 2)
#: The electors' stake: nodes 0 and 1 together hold 6/8 (> 2/3), node 2 alone 2/8.
ELECTOR_STAKE = {0: 3_000_000, 1: 3_000_000, 2: 2_000_000}
CUT_OFF = 2
SIGNERS = 4                 # three before the partition, one through node 2 during it
STAKE_RULE = (1, 2, 3)      # acknowledged stake x 3 > 2 x the electors' stake


@dataclass
class NamespacedNode(NodeProcess):
    """A node run inside a network namespace (``prefix``), listening on ``address``:``NODE_PORT``.

    Its local socket is a file, which any namespace reaches: the test talks to it from here.
    """

    prefix: tuple[str, ...] = ()
    address: str = "127.0.0.1"

    def command(self) -> list[str]:
        return [*self.prefix, *node_command("--host-addr", self.address, "--port", str(NODE_PORT))]


@pytest.fixture
def lab() -> Iterator[Lab]:
    """Three namespaces on one bridge; every one removed at the end, whatever happened."""
    try:
        check_available()
        unavailable = None
    except NamespacesUnavailable as exc:
        unavailable = str(exc)
    if unavailable is not None:
        missing_tool(unavailable)       # outside the except: one line, no chained exception
    remove_leftovers()
    made = Lab(len(ELECTORS))
    try:
        made.build()
        yield made
    finally:
        assert made.teardown() == []


def _nodes(lab: Lab, tmp_path, chain: Chain, stakes: dict[bytes, int]) -> list[NamespacedNode]:
    links = links_of("full", len(ELECTORS))
    nodes = []
    for i in ELECTORS:
        directory = tmp_path / f"n{i}"
        plain = topic_node(directory, carried=["raw", "blocklace"], signer=i, pools=3,
                           MithrilRegistration={"Topic": TOPIC.hex(), "HttpPort": 0}, **OPEN_BUDGETS)
        chain.write(directory, stakes)
        peers = [(node_address(j), NODE_PORT) for j in dials_of(links, i)]
        (directory / "dmq.topology.json").write_text(json.dumps(topology_document(peers)))
        nodes.append(NamespacedNode(plain.workdir, plain.config, start_timeout=plain.start_timeout,
                                    prefix=tuple(lab.exec_prefix(i)), address=node_address(i)))
    return nodes


async def test_a_partitioned_third_rejoins_with_the_set_the_connected_electors_fixed(harness, lab, tmp_path):
    chain = Chain.begun_long_ago()
    signers = generate_signers(harness, tmp_path / "signers", 0, SIGNERS)
    twice = Pool.create(b"\x27" * 32, b"\x28" * 32, start_kes_period=0)
    stakes = {bytes.fromhex(s["pool_id_hex"]): s["stake"] for s in signers}
    stakes |= {pool(i).id: ELECTOR_STAKE[i] for i in ELECTORS} | {twice.pool_id: 500_000}
    nodes = _nodes(lab, tmp_path, chain, stakes)
    alone, connected = nodes[CUT_OFF], [n for i, n in enumerate(nodes) if i != CUT_OFF]
    try:
        await start_in_threads([node.start for node in nodes])
        await advertise(nodes[0], {pool(i).id: ALL for i in ELECTORS}, TOPIC_MAGIC, quorum=STAKE_RULE)
        round_epoch = await chain.next_round(nodes)
        signers = generate_signers(harness, tmp_path / "signers", round_epoch, SIGNERS)
        registrations = [parse_register_signer(s["registration"]) for s in signers]
        equivocations = [build_registration(twice, BlsKey.generate(secret), epoch=round_epoch, current_kes_period=0)
                         for secret in (11, 12)]

        # before the partition: a signer through each node, the equivocating pool through 0 and 2
        sends = list(zip(nodes, registrations[:3])) + list(zip((nodes[0], nodes[2]), equivocations))
        ids: list[bytes] = []

        async def send(node: NodeProcess, registration) -> None:
            ids.append(await publish(node, registration, TOPIC_MAGIC))
        async with trio.open_nursery() as nursery:
            for node, registration in sends:
                nursery.start_soon(send, node, registration)
        await until(lambda: all(accepted(n, i) for n in nodes for i in ids), 30,
                    "every registration reached every node", nodes)
        before = (await topic_view(alone, TOPIC_MAGIC)).proposals(pool(CUT_OFF).id)

        lab.set_connected(CUT_OFF, False)
        late = await publish(alone, registrations[3], TOPIC_MAGIC)
        await until(lambda: accepted(alone, late), 10, "node 2 took the registration", nodes)
        assert chain.epoch_now() < round_epoch, "the round closed before the partition: machine too slow"
        # the connected two fix the set by themselves; node 2 closes the round by itself
        await until(lambda: all(agreed(n, round_epoch) for n in connected) and closed(alone, round_epoch),
                    chain.seconds_left() + 2 * EPOCH_LENGTH, "nodes 0 and 1 fixed the set while node 2 closed alone",
                    nodes)
        assert agreed(alone, round_epoch) is None
        assert not any(accepted(n, late) for n in connected)
        # it goes on proposing the one epoch after its last final one, which nobody acknowledges:
        # an epoch the other two made final without it
        made_alone: list[int] = []

        async def proposed_alone() -> bool:
            proposals = (await topic_view(alone, TOPIC_MAGIC)).proposals(pool(CUT_OFF).id)
            made_alone[:] = [number for i, number in proposals.items()
                             if i not in before and not any(accepted(n, i) for n in connected)]
            return bool(made_alone)
        await until(proposed_alone, 3 * TOPIC_PARAMS["attempt_timeout"] + 10, "node 2 proposed alone", nodes)
        assert len(set(made_alone)) == 1, made_alone
        assert made_alone[0] <= min(agreed(n, round_epoch)["blocklace_epoch"] for n in connected)
        lab.set_connected(CUT_OFF, True)

        await until(lambda: agreed(alone, round_epoch) is not None, 90, "node 2 fixed the set after the heal", nodes)
        fixed = [agreed(n, round_epoch) for n in nodes]
        assert len({(a["digest"], a["blocklace_epoch"]) for a in fixed}) == 1, fixed
        assert all(a["signers"] == 3 and a["excluded"] == 1 for a in fixed), fixed

        # the registration only node 2 held at the cut reaches the others now, after the set was fixed
        await until(lambda: all(accepted(n, late) for n in connected), 60, "node 2's late registration spread", nodes)
        described = [await get_json(port, f"/registrations/{round_epoch}",
                                    lambda i=i, port=port: lab.open_tcp_stream(i, port))
                     for i, port in enumerate(map(http_port, nodes))]
        assert all(status == 200 for status, _ in described), described
        assert len({json.dumps(d, sort_keys=True) for _, d in described}) == 1
        document = described[0][1]
        assert sorted(document["signers"]) == sorted(s["registration"]["party_id"] for s in signers[:3])
        assert signers[3]["registration"]["party_id"] not in document["signers"]
        [proof] = document["excluded"]
        assert proof["pool_id"] == twice.pool_id.hex()
        keys = {decode_event(bytes.fromhex(proof[k])).registration.verification_key
                for k in ("first_event", "second_event")}
        assert keys == {decode_verification_key(r.verification_key).hex() for r in equivocations}

        # every node's notice reaches every node, all with that digest, and nobody disagrees:
        # node 2 is heard again, though it made its blocks of the partition in a Blocklace epoch
        # the others closed without it
        async def notices_held() -> list[dict[bytes, str]]:
            return [{p: a.digest.hex() for p, a in (await topic_view(n, TOPIC_MAGIC)).notices(round_epoch).items()}
                    for n in nodes]

        async def notices_arrived() -> bool:
            return all(set(held) == {pool(i).id for i in ELECTORS} for held in await notices_held())
        await until(notices_arrived, 60, "every notice reached every node", nodes)
        assert {d for held in await notices_held() for d in held.values()} == {fixed[0]["digest"]}
        assert not any(n.trace_events("MithrilRegistrationDisagreement") for n in nodes)
    finally:
        for node in nodes:
            node.kill()
