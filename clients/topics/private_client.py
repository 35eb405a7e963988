"""A private-group member at its node: a durable UPSYCLE subscription (docs/topics-design.md 4.5)
drained into a :class:`~clients.topics.private_group.GroupMember`.

Each call opens one protocol 1000 connection, so a member can be offline between calls: its
node keeps queueing the group's ciphertexts for the durable subscriber meanwhile, and the next
:meth:`PrivateGroupClient.fetch` reads and acknowledges them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from nacl.signing import SigningKey

from miniprotocols.local_topic_subscription import Durable
from topics.upsycle.wire import RoutedMessage

from .causal import Delivery
from .client import decode_item, make_auth, open_topic_connection
from .private_group import GroupMember, routed_of_item
from .upsycle import routed_body

__all__ = ["PrivateGroupClient", "UPSYCLE_FILTER", "publish_routed"]

UPSYCLE_FILTER = [{0: 1}]


async def publish_routed(socket_path: str | os.PathLike[str], network_magic: int, routed: RoutedMessage) -> bytes | None:
    """Publish a routed message at the node; the DMQ id that wraps it (``None`` for a node-local group)."""
    async with open_topic_connection(socket_path, network_magic) as conn:
        published = await conn.ask(conn.topics.publish(routed_body(routed)))
    return published.dmq_id


class PrivateGroupClient:
    def __init__(self, socket_path: str | os.PathLike[str], network_magic: int, service: SigningKey,
                 member: GroupMember, clock: Callable[[], float]) -> None:
        self.socket_path, self.magic, self.service, self.member, self.clock = \
            socket_path, network_magic, service, member, clock

    @property
    def subscriber(self) -> bytes:
        return bytes(self.service.verify_key)

    def _auth(self, op: str, group: bytes | None):
        return make_auth(self.service, op, group, self.magic, now=self.clock())

    async def _attach(self, conn):
        return await conn.ask(conn.topics.subscribe(UPSYCLE_FILTER, 0,
                                                    Durable(self.subscriber, self._auth("attach", None))))

    async def join(self) -> None:
        """Create the durable subscriber and join the group's UPSYCLE key at this node."""
        async with open_topic_connection(self.socket_path, self.magic) as conn:
            await self._attach(conn)
            ack = await conn.ask(conn.topics.join(self.subscriber, self.member.grp, False,
                                                  self._auth("join", self.member.grp)))
            if ack.result != 0:
                raise RuntimeError(f"join refused: result {ack.result}, detail {ack.detail}")

    async def fetch(self) -> list[Delivery]:
        """Read and acknowledge everything queued; the deliveries it makes possible, causally ordered."""
        out: list[Delivery] = []
        async with open_topic_connection(self.socket_path, self.magic) as conn:
            sub = await self._attach(conn)
            acks: list[tuple[int, int]] = []
            while True:
                reply = await conn.ask(conn.topics.next(blocking=False, acks=acks))
                items = [decode_item(raw) for raw in reply.items]
                if not items:
                    break
                for item in items:
                    routed = routed_of_item(item)
                    if routed is not None:
                        out += self.member.receive(routed)
                acks = [(sub.sub_id, items[-1].dseq)]
        return out + self.member.tick()

    async def publish(self, routed: RoutedMessage) -> bytes | None:
        """Publish a routed message of the group at this node; the DMQ id that wraps it."""
        return await publish_routed(self.socket_path, self.magic, routed)
