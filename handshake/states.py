"""The handshake's states and who holds agency in each.

``StPropose``: the client must speak (propose its versions). ``StConfirm``: the server
must speak (accept, refuse or answer a query). ``StDone``: nobody. Agency is the protocol
engine's own (:class:`protocol_engine.Agency`), as for every mini-protocol; the transitions
and the per-link limits make up the handshake's spec in :mod:`handshake.spec`.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from protocol_engine import Agency, ProtocolState

__all__ = ["State", "AGENCY"]


class State(ProtocolState):
    """A state of the handshake; ``value`` is the reference's name for it.

    A :class:`protocol_engine.ProtocolState`, hashed by identity: the local socket runs one
    handshake per message.
    """

    PROPOSE = "StPropose"
    CONFIRM = "StConfirm"
    DONE = "StDone"


AGENCY: Mapping[State, Agency] = MappingProxyType({
    State.PROPOSE: Agency.CLIENT,
    State.CONFIRM: Agency.SERVER,
    State.DONE: Agency.NOBODY,
})
