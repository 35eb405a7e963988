"""Causal delivery for a group's application messages (the application header of docs/topics-design.md 4.5).

UPSYCLE queues arrive in arrival order; each application message names the ids of the
messages it follows, and this buffer holds it until all of them are delivered. The buffer is
bounded in two ways, and both end the same way, so that a member never waits forever:

- a message held longer than ``max_wait`` seconds, or
- the oldest message when more than ``limit`` are held,

is *released*: delivered with the dependencies still missing listed in ``missing``. Missing
ids are not waited for any more; if one arrives later it is delivered then like any other.
Replicated types on top must therefore tolerate the rare out-of-order delivery (the add-wins
set keeps tombstones for this).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CausalBuffer", "Delivery"]


@dataclass(frozen=True, slots=True)
class Delivery:
    id: bytes
    deps: tuple[bytes, ...]
    value: Any
    missing: tuple[bytes, ...] = ()


@dataclass(slots=True)
class _Held:
    deps: tuple[bytes, ...]
    value: Any
    since: float


@dataclass
class CausalBuffer:
    limit: int = 1000
    max_wait: float = 60.0
    delivered: set[bytes] = field(default_factory=set)
    held: dict[bytes, _Held] = field(default_factory=dict)     # insertion order = arrival order
    followed: set[bytes] = field(default_factory=set)           # ids some delivered message depends on

    def offer(self, id: bytes, deps: tuple[bytes, ...], value: Any, now: float) -> list[Delivery]:
        """Accept one message; the messages this makes deliverable, in causal order."""
        if id in self.delivered or id in self.held:
            return []
        self.held[id] = _Held(tuple(deps), value, now)
        out = self._drain()
        while len(self.held) > self.limit:
            out += self._release(next(iter(self.held)))
        return out

    def expire(self, now: float) -> list[Delivery]:
        """Release every message held longer than ``max_wait``."""
        out: list[Delivery] = []
        for id in [i for i, h in self.held.items() if now - h.since >= self.max_wait]:
            if id in self.held:
                out += self._release(id)
        return out

    def heads(self) -> list[bytes]:
        """Delivered ids nothing delivered follows yet: the dependencies of the next message."""
        return sorted(self.delivered - self.followed)

    def _deliver(self, id: bytes, missing: tuple[bytes, ...] = ()) -> Delivery:
        held = self.held.pop(id)
        self.delivered.add(id)
        self.followed.update(held.deps)
        return Delivery(id, held.deps, held.value, missing)

    def _release(self, id: bytes) -> list[Delivery]:
        missing = tuple(d for d in self.held[id].deps if d not in self.delivered)
        return [self._deliver(id, missing)] + self._drain()

    def _drain(self) -> list[Delivery]:
        out: list[Delivery] = []
        progress = True
        while progress:
            progress = False
            for id, held in list(self.held.items()):
                if all(d in self.delivered for d in held.deps):
                    out.append(self._deliver(id))
                    progress = True
        return out
