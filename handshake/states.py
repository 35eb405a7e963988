"""The handshake's states and who holds agency in each.

``StPropose``: the client must speak (propose its versions). ``StConfirm``: the server
must speak (accept, refuse or answer a query). ``StDone``: nobody. The transitions
between them are in :mod:`handshake.protocol`, next to the messages that cause them.
"""

from __future__ import annotations

import enum
from types import MappingProxyType
from typing import Mapping

__all__ = ["State", "Agency", "AGENCY"]


class State(enum.Enum):
    PROPOSE = "StPropose"
    CONFIRM = "StConfirm"
    DONE = "StDone"


class Agency(enum.Enum):
    CLIENT = "client"
    SERVER = "server"
    NOBODY = "nobody"


AGENCY: Mapping[State, Agency] = MappingProxyType({
    State.PROPOSE: Agency.CLIENT,
    State.CONFIRM: Agency.SERVER,
    State.DONE: Agency.NOBODY,
})
