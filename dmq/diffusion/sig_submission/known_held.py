"""Ids one peer is known to hold, as both sig-submission peers of a duplex connection share them.

On a duplex node-to-node connection the node pulls from the peer and serves it over the same
connection. Every id the peer announced to us there (in any ids reply, wanted by the node or
not) is one it holds: announcing it back would only cost the peer a round to acknowledge it.
The pulling peer records what it is offered; the serving peer on the same connection leaves
those ids out of what it announces (docs/protocol/node-to-node.md 9.8).

An id matters only until the serving peer's position in our mempool passes it: from then on
this connection never looks at it again. So the set keeps only those: the serving peer drops
an id as it passes it, and an id it passed already (the two announcements crossed) is not
added (``unpassed``, asked once per announcement for all its ids); ids passed while others
were kept are swept out whenever the set has doubled since the last sweep. What is left is the
ids in flight between the peer's announcement and our accepting the message, a handful at
mainnet's rate. Ids that never reach
our mempool (refused, expired) would stay, so the set is also bounded: past
``DEFAULT_CAPACITY`` the older half is forgotten (at most about 100 kB per connection). A forgotten id is announced as it would be
without this set, which costs the peer one acknowledgement and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["KnownHeld", "DEFAULT_CAPACITY"]

#: Ids remembered per connection at most (see the module docstring).
DEFAULT_CAPACITY = 1024
#: The size below which the set is never swept.
_SWEEP_MIN = 64


class KnownHeld:
    """Ids the peer announced to us that the serving peer has not passed yet: ids it holds."""

    __slots__ = ("capacity", "unpassed", "ids", "_sweep_at")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 2:
            raise ValueError(f"the known-held set needs room for at least two ids, got {capacity}")
        self.capacity = capacity
        #: Of some ids, in order, those the serving peer's position has not passed yet (set by the
        #: serving peer): one call per announcement, not one per id.
        self.unpassed: Callable[[Iterable[bytes]], list[bytes]] | None = None
        #: The ids, a dict as an ordered set (insertion order says which are oldest): read-only
        #: outside this class, and replaced by a sweep, so read it afresh (the serving peer reads
        #: it for every request it answers, without a method call).
        self.ids: dict[bytes, None] = {}
        self._sweep_at = _SWEEP_MIN

    def add(self, ids: Iterable[bytes]) -> None:
        """The peer announced ``ids``: remember those the serving peer has still to pass."""
        known = self.ids
        unpassed = self.unpassed
        for message_id in ids if unpassed is None else unpassed(ids):
            known[message_id] = None
        held = len(known)
        if held > self._sweep_at or held > self.capacity:
            if unpassed is not None:
                known = self.ids = dict.fromkeys(unpassed(known))
            if len(known) > self.capacity:
                known = self.ids = dict.fromkeys(list(known)[-(self.capacity // 2):])
            self._sweep_at = max(_SWEEP_MIN, 2 * len(known))

    def discard(self, message_id: bytes) -> None:
        """The serving peer passed ``message_id``: this connection will not look at it again."""
        self.ids.pop(message_id, None)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self.ids

    def __len__(self) -> int:
        return len(self.ids)
