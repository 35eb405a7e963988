"""An add-wins (observed-remove) set replicated by operations over a private group.

An add is tagged with the id of the message that carries it; a remove names the tags it
observed for the element. A concurrent add has a tag the remove did not observe, so it wins.
Removed tags are kept as tombstones: a remove released before its add (causal.py's bounded
wait) still cancels that add when it arrives, so every member converges whatever the order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from topics import cbor

__all__ = ["AddWinsSet", "OP_ADD", "OP_REMOVE", "add_op", "remove_op"]

OP_ADD = 0
OP_REMOVE = 1


def add_op(element: Any) -> bytes:
    return cbor.encode([OP_ADD, element])


def remove_op(tags: list[bytes]) -> bytes:
    return cbor.encode([OP_REMOVE, sorted(tags)])


@dataclass
class AddWinsSet:
    tags: dict[bytes, Any] = field(default_factory=dict)      # live tag -> element
    removed: set[bytes] = field(default_factory=set)

    def apply(self, tag: bytes, op: bytes) -> None:
        """Apply one delivered operation; ``tag`` is the id of the message carrying it."""
        kind, arg = cbor.decode(op)
        if kind == OP_ADD and tag not in self.removed:
            self.tags[tag] = arg
        elif kind == OP_REMOVE:
            for removed in arg:
                self.removed.add(bytes(removed))
                self.tags.pop(bytes(removed), None)

    def observed(self, element: Any) -> list[bytes]:
        """The tags of ``element`` this replica has seen: what a remove of it cancels."""
        return [t for t, e in self.tags.items() if e == element]

    def value(self) -> frozenset:
        return frozenset(self.tags.values())
