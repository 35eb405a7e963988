"""Ids being fetched right now, across every pulling peer of the node.

Several peers usually announce the same message. Fetching it from each would multiply
the traffic by the number of hot peers, so the node lets one peer at a time own an id:
the first pulling peer whose announcement is seen claims it, the others acknowledge it
without asking for the body. The claim ends when the body has been handed to the node,
when the owner omitted it from its reply, or when the owner's connection ends; a later
announcement (from any peer) can then claim it again if the node still lacks it.

Single-threaded by design: every pulling peer runs in the node's one trio thread and
claims and releases without awaiting, so no lock is needed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Hashable, Iterable, Sequence

__all__ = ["InFlightRegistry", "ClaimingSink"]


class InFlightRegistry:
    """Owner of every id in flight; peers are any hashable key (a connection id, an address)."""

    def __init__(self) -> None:
        self._owner: dict[bytes, Hashable] = {}
        self._by_peer: dict[Hashable, set[bytes]] = {}

    def claim(self, peer: Hashable, ids: Iterable[bytes]) -> list[bytes]:
        """Claim for ``peer`` the ids nobody owns; return those, in the given order.

        An id owned already (by this or another peer), or repeated in ``ids``, is not
        returned again: each id is fetched from one place at a time.
        """
        granted: list[bytes] = []
        owner = self._owner
        for message_id in ids:
            if message_id in owner:
                continue
            owner[message_id] = peer
            granted.append(message_id)
        if granted:
            self._by_peer.setdefault(peer, set()).update(granted)
        return granted

    def release(self, peer: Hashable, ids: Iterable[bytes]) -> None:
        """End ``peer``'s claims on ``ids``; ids it does not own are left alone."""
        mine = self._by_peer.get(peer)
        if not mine:
            return
        owner = self._owner
        for message_id in ids:
            if message_id in mine:
                mine.discard(message_id)
                del owner[message_id]
        if not mine:
            del self._by_peer[peer]

    def release_peer(self, peer: Hashable) -> list[bytes]:
        """End every claim of ``peer`` (its connection is gone); return the ids freed."""
        mine = self._by_peer.pop(peer, set())
        for message_id in mine:
            del self._owner[message_id]
        return sorted(mine)

    def owner(self, message_id: bytes) -> Hashable | None:
        return self._owner.get(message_id)

    def in_flight(self, message_id: bytes) -> bool:
        return message_id in self._owner

    def claimed_by(self, peer: Hashable) -> frozenset[bytes]:
        return frozenset(self._by_peer.get(peer, ()))

    def __len__(self) -> int:
        return len(self._owner)


class ClaimingSink:
    """A :class:`~dmq.diffusion.sig_submission.interfaces.SigSink` for one peer over a shared registry.

    ``holds(id)`` says whether the node already has a message (its mempool); ``accept``
    is the node's validation and storage of a batch (raising ``DisconnectPeer`` on a
    disconnect error), ``accept_now`` the same without waiting when the node can (False when
    it cannot: the batch then goes to ``accept``). The node builds one per pulling peer, all over one
    :class:`InFlightRegistry`. ``announced_by_peer``, if given, is told every id the peer
    announces, wanted or not (the ids it holds, which the serving peer of the same
    connection need not announce back: :class:`~dmq.diffusion.sig_submission.known_held.KnownHeld`).
    """

    def __init__(self, registry: InFlightRegistry, peer: Hashable, *,
                 holds: Callable[[bytes], bool],
                 accept: Callable[[list[bytes]], Awaitable[None]],
                 accept_now: Callable[[list[bytes]], bool] | None = None,
                 announced_by_peer: Callable[[Iterable[bytes]], None] | None = None) -> None:
        self.registry = registry
        self.peer = peer
        self._holds = holds
        self._accept = accept
        self._accept_now = accept_now
        self._announced_by_peer = announced_by_peer

    def wanted(self, announced: Sequence[tuple[bytes, int]]) -> list[bytes]:
        if self._announced_by_peer is not None:
            self._announced_by_peer([i for i, _ in announced])
        return self.registry.claim(self.peer, (i for i, _ in announced if not self._holds(i)))

    async def accept(self, raw_messages: list[bytes]) -> None:
        await self._accept(raw_messages)

    def accept_now(self, raw_messages: list[bytes]) -> bool:
        return self._accept_now is not None and self._accept_now(raw_messages)

    def release(self, ids: Collection[bytes]) -> None:
        self.registry.release(self.peer, ids)
