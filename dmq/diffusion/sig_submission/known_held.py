"""Ids one peer is known to hold, as both sig-submission peers of a duplex connection share them.

On a duplex node-to-node connection the node pulls from the peer and serves it over the same
connection. Every id the peer announced to us there (in any ids reply, wanted by the node or
not) is one it holds: announcing it back would only cost the peer a round to acknowledge it.
The pulling peer records what it is offered; the serving peer on the same connection leaves
those ids out of what it announces (docs/protocol/node-to-node.md 9.8).

Only recent ids are kept, in a FIFO of ``DEFAULT_CAPACITY``. What matters is the short time
between the peer's announcement and the serving peer's position passing the same message in
our mempool (milliseconds while both are in step; longer only while the peer's requests lag
behind our mempool). 4,096 ids are 160 s of mainnet's 25 messages a second, so none that can
still matter is forgotten in steady state; at most about 0.4 MB per connection (a 32-byte id
and its set and deque slots). An id forgotten early is announced as it would be without this,
which costs the peer one acknowledgement and nothing else.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

__all__ = ["KnownHeld", "DEFAULT_CAPACITY"]

#: Ids remembered per connection (see the module docstring for why this many).
DEFAULT_CAPACITY = 4096


class KnownHeld:
    """The most recent ``capacity`` ids one peer announced to us: ids it holds."""

    __slots__ = ("capacity", "_order", "_ids")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"the known-held set needs room for at least one id, got {capacity}")
        self.capacity = capacity
        self._order: deque[bytes] = deque()
        self._ids: set[bytes] = set()

    def add(self, ids: Iterable[bytes]) -> None:
        """The peer announced ``ids``: remember them, forgetting the oldest beyond ``capacity``."""
        known = self._ids
        order = self._order
        for message_id in ids:
            if message_id in known:
                continue
            known.add(message_id)
            order.append(message_id)
        excess = len(order) - self.capacity
        for _ in range(excess if excess > 0 else 0):
            known.discard(order.popleft())

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)
