"""A private group on three real nodes in a line, n0 - n1 - n2: one member per node, end-to-end
encrypted operations of an add-wins set, a member offline for a while and one revoked.

The nodes run the ordinary UPSYCLE adapter and never hold a group key: at the end no file of
theirs (LMDB stores, logs) holds any plaintext of the operations, though they hold the ciphertexts.
"""

from __future__ import annotations

import pytest
import trio
from nacl.public import PrivateKey
from nacl.signing import SigningKey

from clients.topics.orset import AddWinsSet, add_op, remove_op
from clients.topics.private_client import PrivateGroupClient
from clients.topics.private_group import GroupMember, GroupOwner

from .network import TOPIC_MAGIC, fast_housekeeping, running_line  # noqa: F401

pytestmark = pytest.mark.trio

WORDS = {w: f"private-{w}-3f9a" for w in ("apple", "bread", "cherry", "date", "elder")}


class Person:
    """A member with its node, its replica of the set, and the ops it created while offline."""

    def __init__(self, index: int, node, owner: GroupOwner, clock) -> None:
        self.member = GroupMember(PrivateKey(bytes([60 + index]) * 32), owner.owner_public, owner.grp, clock.now)
        self.client = PrivateGroupClient(node.socket, TOPIC_MAGIC, SigningKey(bytes([40 + index]) * 32),
                                         self.member, clock.now)
        self.replica = AddWinsSet()
        self.outbox = []
        self.read: set[bytes] = set()

    def apply(self, deliveries) -> None:
        for delivery in deliveries:
            self.read.add(delivery.id)
            self.replica.apply(delivery.id, delivery.value)

    async def fetch(self) -> None:
        self.apply(await self.client.fetch())

    def op(self, payload: bytes):
        """Apply an operation here at once (offline-first) and keep its message to publish."""
        routed, own = self.member.publish(payload)
        self.apply(own)
        self.outbox.append(routed)
        return routed

    async def flush(self) -> None:
        while self.outbox:
            await self.client.publish(self.outbox.pop(0))

    def value(self) -> set[str]:
        return set(self.replica.value())


async def settle(people, done, what: str) -> None:
    with trio.move_on_after(20):
        while True:
            for person in people:
                await person.fetch()
            if done():
                return
            await trio.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


async def test_members_converge_offline_and_revoked_members_read_nothing_later(tmp_path, fast_housekeeping):
    async with running_line(tmp_path, "raw,upsycle", 3) as (network, nodes):
        clock = network.clock
        owner = GroupOwner(SigningKey(bytes([7]) * 32), bytes([9]) * 32, clock.now)
        alice, bob, carol = people = [Person(i, nodes[i], owner, clock) for i in range(3)]
        for person in people:
            await person.client.join()

        epoch1 = owner.set_members([p.member.public for p in people])
        alice.apply(alice.member.receive(epoch1))                 # the owner is alice, on n0
        await alice.client.publish(epoch1)
        await settle(people, lambda: all(p.member.epoch == 1 for p in people), "epoch 1 everywhere")

        alice.op(add_op(WORDS["apple"]))
        bob.op(add_op(WORDS["bread"]))
        await alice.flush()
        await bob.flush()
        both = {WORDS["apple"], WORDS["bread"]}
        await settle(people, lambda: all(p.value() == both for p in people), "apple and bread everywhere")

        # carol goes offline with her node; she keeps working on her replica
        await network.net.stop(nodes[2])
        carol.op(remove_op(carol.replica.observed(WORDS["apple"])))
        carol.op(add_op(WORDS["cherry"]))
        assert carol.value() == {WORDS["bread"], WORDS["cherry"]}
        # meanwhile: alice adds apple again (concurrent with carol's remove), bob removes bread
        alice.op(add_op(WORDS["apple"]))
        bob.op(remove_op(bob.replica.observed(WORDS["bread"])))
        await alice.flush()
        await bob.flush()
        # then bob is revoked: a new epoch whose key is sealed to alice and carol only
        epoch2 = owner.revoke(bob.member.public)
        alice.apply(alice.member.receive(epoch2))
        await alice.client.publish(epoch2)
        date = alice.op(add_op(WORDS["date"]))
        await alice.flush()
        await settle([alice, bob], lambda: bob.member.revoked and date.id in bob.member.unreadable, "epoch 2 at bob")

        nodes[2] = await network.start(2, nodes[1], port=nodes[2].port)
        carol.client.socket_path = nodes[2].socket
        await carol.flush()
        await settle([carol], lambda: carol.member.epoch == 2 and date.id in carol.read, "carol caught up")
        elder = carol.op(add_op(WORDS["elder"]))
        await carol.flush()

        final = {WORDS["apple"], WORDS["cherry"], WORDS["date"], WORDS["elder"]}
        await settle(people, lambda: alice.value() == carol.value() == final and elder.id in bob.member.unreadable,
                     "convergence")
        # bob read everything of epoch 1 (carol's offline work included) and nothing after
        assert bob.member.keys.keys() == {1} and bob.value() == {WORDS["apple"], WORDS["cherry"]}
        assert date.id not in bob.read and elder.id not in bob.read

        # the nodes' directories (LMDB stores, sockets, logs) hold the ciphertexts, never a plaintext
        stored = b"".join(p.read_bytes() for p in network.net.root.rglob("*") if p.is_file())
        assert date.body in stored and elder.body in stored
        assert all(word.encode() not in stored for word in WORDS.values())

