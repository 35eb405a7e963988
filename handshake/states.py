"""The handshake's states and who holds agency in each.

``StPropose``: the client must speak (propose its versions). ``StConfirm``: the server
must speak (accept, refuse or answer a query). ``StDone``: nobody. Agency is the protocol
engine's own (:class:`protocol_engine.Agency`), as for every mini-protocol; the transitions
and the per-link limits make up the handshake's spec in :mod:`handshake.spec`.
"""

from __future__ import annotations

import enum
from types import MappingProxyType
from typing import Mapping

from protocol_engine import Agency

__all__ = ["State", "AGENCY"]


class State(enum.Enum):
    """A state of the handshake; ``value`` is the reference's name for it.

    States key the engine's tables, looked up several times on every move; hashing by
    identity (as members compare) spares Enum's hash of the name, a Python call each time,
    on the local socket's one handshake per message.
    """

    __hash__ = object.__hash__

    PROPOSE = "StPropose"
    CONFIRM = "StConfirm"
    DONE = "StDone"


AGENCY: Mapping[State, Agency] = MappingProxyType({
    State.PROPOSE: Agency.CLIENT,
    State.CONFIRM: Agency.SERVER,
    State.DONE: Agency.NOBODY,
})
