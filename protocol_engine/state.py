"""The base of every protocol's state enum.

States key the engine's tables (agency, limits, transitions), looked up several times for
every message sent or received. ``enum.Enum`` hashes a member by hashing its name in a
Python-level ``__hash__``, a function call per lookup; members compare by identity, so they
may as well hash by identity, which is the interpreter's own slot and costs no call. Nothing
orders states by their hash (no set of states is iterated), so the order of anything seen
outside does not change.
"""

from __future__ import annotations

import enum

__all__ = ["ProtocolState"]


class ProtocolState(enum.Enum):
    """A protocol state: an enum member that hashes by identity, as it compares."""

    __hash__ = object.__hash__
