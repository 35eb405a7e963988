"""The peer sharing server: answer each request from the node's list of shareable peers.

``peers_for(amount)`` is the node's choice of addresses (the reference picks among its
known peers that allow sharing); the server caps the answer at the request's amount and
at :data:`MAX_PEERS_PER_REPLY`, and refuses to put anything but IP addresses on the wire.
The end of the client's stream while the protocol runs is left to the connection, as in
keep-alive.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable

from ouroboros_mux.channel import MessageChannel

from ..framework import Driver, Role, as_driver
from .spec import PEER_SHARING
from .types import MAX_PEERS_PER_REPLY, MsgDone, MsgSharePeers, MsgShareRequest, PeerAddress

__all__ = ["serve", "PeersFor"]

PeersFor = Callable[[int], Iterable[tuple[str, int]] | Awaitable[Iterable[tuple[str, int]]]]


async def serve(driver_or_channel: Driver | MessageChannel, peers_for: PeersFor, *,
                limit: int = MAX_PEERS_PER_REPLY) -> None:
    """Answer requests until MsgDone."""
    if not 0 <= limit <= 0xFF:
        raise ValueError(f"reply limit must be within 0..255, got {limit}")
    driver = as_driver(driver_or_channel, PEER_SHARING, Role.SERVER)
    while True:
        request = await driver.recv()
        if isinstance(request, MsgDone):
            return
        assert isinstance(request, MsgShareRequest)
        cap = min(request.amount, limit)
        chosen = peers_for(cap)
        if inspect.isawaitable(chosen):
            chosen = await chosen
        peers = []
        for host, port in chosen:
            if len(peers) == cap:
                break
            peers.append(PeerAddress.of(host, port))
        await driver.send(MsgSharePeers(tuple(peers)))
