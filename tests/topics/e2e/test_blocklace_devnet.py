"""Blocklace on five real nodes in a line, n0 - n1 - n2 - n3 - n4 (issue 8, "what it must show").

Pools submit their own blocks (complete DMQ messages, protocol 14's path) at the node of their
choice; every node has a protocol 1000 client reading the topic from its Unix socket, and the
node's Prometheus registry is read for the Blocklace series.
"""

from __future__ import annotations

import json

import pytest
import trio

from dmq.cli import tool
from clients.topics import decode_item, open_topic_connection
from topics.adapter import ITEM_EPOCH_FINAL, ITEM_MESSAGE, ITEM_PROOF
from topics.blocklace.proofs import verify_proof
from topics.trace import TopicDeferred

from ..blocklace.world import ALL, TOPIC, Author, ad_payload, advertisement, block_of, epoch_payload, event
from .network import TOPIC_MAGIC, fast_housekeeping, running_line, wait_until  # noqa: F401

pytestmark = pytest.mark.trio

N = 5
#: The bound on an equivocation's proof reaching every node of this devnet (seconds).
PROOF_BOUND = 10.0


class Reader:
    """A local client subscribed to every Blocklace item, acknowledging as it reads."""

    def __init__(self, node) -> None:
        self.node = node
        self.items: list = []

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with open_topic_connection(self.node.socket, TOPIC_MAGIC) as conn:
            sub = await conn.ask(conn.topics.subscribe([{0: 2}]))
            task_status.started()
            acks: list = []
            while True:
                reply = await conn.topics.next(blocking=True, acks=acks)
                items = [decode_item(raw) for raw in reply.items]
                self.items.extend(items)
                acks = [(sub.sub_id, items[-1].dseq)] if items else []

    def delivered(self) -> list[bytes]:
        return [item.meta[2] for item in self.items if item.kind == ITEM_MESSAGE]

    def of_kind(self, kind: int) -> list:
        return [item.payload for item in self.items if item.kind == kind]


def adapter(node):
    return node.node.topics.ingress.adapters["blocklace"]


def metric(node, name: str, labels: dict | None = None):
    return node.node.metrics.registry.get_sample_value(f"dmq_node_blocklace_{name}", labels or {})


async def submit(node, message) -> str | None:
    """Submit a pool's own block at ``node``; the topic reason when refused."""
    error = await node.node.ingress.submit_local(message.raw)
    return None if error is None else error.reason


def holds_everywhere(nodes, *messages) -> bool:
    return all(all(m.message_id in adapter(n).lace.blocks for m in messages) for n in nodes)


def assert_causal(reader: Reader, blocks) -> None:
    """Each block delivered once, after every block it points to (B1)."""
    order = reader.delivered()
    position = {ident: i for i, ident in enumerate(order)}
    assert len(position) == len(order), "a block was delivered twice"
    for ident in order:
        for pointer in blocks[ident].block.ptrs:
            assert pointer in position and position[pointer] < position[ident]


async def test_equivocation_causal_delivery_epoch_and_revocation(tmp_path, fast_housekeeping, capsys):
    async with running_line(tmp_path, "raw,blocklace", N) as (network, nodes):
        clock = network.clock
        readers = [Reader(node) for node in nodes]
        for reader in readers:
            await network.nursery.start(reader.run)
        authors = [Author(p) for p in network.pools]

        ad0 = authors[0].block(ad_payload(advertisement(0, {p.id: ALL for p in network.pools})))
        assert await submit(nodes[0], ad0) is None
        await wait_until(lambda: holds_everywhere(nodes, ad0), 10, what="the advertisement everywhere")

        # honest events published at once at different nodes, each pointing to what its
        # author saw: most nodes receive some before their pointers and must buffer them
        seen = [ad0.message_id]
        honest = []
        for i in (1, 4, 2, 3):
            message = authors[i].block(event(b"e%d" % i), others=seen)
            assert await submit(nodes[i], message) is None
            seen.append(message.message_id)
            honest.append(message)
        await wait_until(lambda: holds_everywhere(nodes, *honest), 10, what="the honest events everywhere")
        assert any(isinstance(e, TopicDeferred) for n in nodes for e in n.events), "no block was buffered"

        # pool 4 equivocates: one block at n0, another with the same seq at n4
        clock.advance(10)
        first = authors[4].block(event(b"left"))
        authors[4].seq, authors[4].last = 1, honest[1].message_id
        second = authors[4].block(event(b"right"))
        assert block_of(first).seq == block_of(second).seq == 1
        assert await submit(nodes[0], first) is None and await submit(nodes[4], second) is None
        started = trio.current_time()
        await wait_until(lambda: all(adapter(n).equivocations() for n in nodes), PROOF_BOUND,
                         what="the proof at every node")
        assert trio.current_time() - started < PROOF_BOUND
        for node, reader in zip(nodes, readers):
            proofs = adapter(node).equivocations()
            assert [(p.kind, p.culprit) for p in proofs] == [(0, network.pools[4].id)] and verify_proof(proofs[0])
            assert metric(node, "equivocation_proofs", {"kind": "same_seq"}) == 1
        await wait_until(lambda: all(r.of_kind(ITEM_PROOF) for r in readers), 10, what="the proof delivered")
        # the operator's view of the same proof, read from a running node's database
        status = await trio.to_thread.run_sync(tool.run, ["topic", "equivocations", "--json", "--database-path",
                                                          str(nodes[2].node.config.database_path)])
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert status == 0 and [(r["kind"], r["culprit"], r["verified"]) for r in rows] == [
            ("same_seq", network.pools[4].id.hex(), True)]
        later = authors[4].block(event(b"later"))
        for node in nodes:
            assert await submit(node, later) == "equivocator_excluded"

        # an epoch: pool 0 proposes at n0, pools 1..3 acknowledge at their nodes (4 of 5 electors)
        clock.advance(10)
        proposal = authors[0].block(epoch_payload(number=1, attempt=0, ad_version=0, cut=tuple(sorted(seen))),
                                    others=seen)
        assert await submit(nodes[0], proposal) is None
        await wait_until(lambda: holds_everywhere(nodes, proposal), 10, what="the proposal everywhere")
        assert all(adapter(n).lace.topic(TOPIC).final == 0 for n in nodes)
        for i in (1, 2, 3):
            vote = authors[i].block(epoch_payload(number=1, attempt=0, ad_version=0, acked=proposal.message_id),
                                    others=[proposal.message_id])
            assert await submit(nodes[i], vote) is None
        await wait_until(lambda: all(adapter(n).lace.topic(TOPIC).final == 1 for n in nodes), 10,
                         what="epoch 1 final everywhere")
        for node in nodes:
            assert metric(node, "final_epoch") == 1
        await wait_until(lambda: all(r.of_kind(ITEM_EPOCH_FINAL) for r in readers), 10, what="the final delivered")
        for reader in readers:
            assert reader.of_kind(ITEM_EPOCH_FINAL) == [{0: TOPIC, 1: 1, 2: proposal.message_id}]

        # revocation: advertisement version 1 drops pool 2; its next block is refused everywhere
        clock.advance(10)
        ad1 = authors[0].block(ad_payload(advertisement(1, {network.pools[i].id: ALL for i in (0, 1, 3)})),
                               others=[proposal.message_id])
        assert await submit(nodes[0], ad1) is None
        await wait_until(lambda: holds_everywhere(nodes, ad1), 10, what="the new advertisement everywhere")
        revoked = authors[2].block(event(b"after revocation"), others=[ad1.message_id])
        for node in nodes:
            assert await submit(node, revoked) == "not_publisher"

        # every node delivered the same blocks, each in a causal order
        everything = {m.message_id for m in (ad0, *honest, first, second, proposal, ad1)}
        # The nodes' own blocks (a gatherer's Ack once the new advertisement waits for epoch 1,
        # docs/topics-design.md 5.7) reach every node too: wait until they have.
        await wait_until(lambda: all(everything <= set(r.delivered()) == set(readers[0].delivered())
                                     for r in readers), 10, what="every block delivered at every node")
        reference = set(readers[0].delivered())
        for node, reader in zip(nodes, readers):
            assert set(reader.delivered()) == reference
            assert_causal(reader, adapter(node).lace.blocks)
