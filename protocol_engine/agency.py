"""Who may speak in a protocol state.

Every Ouroboros mini-protocol is a two-party state machine in which exactly one party has
agency (the right to send) in each non-terminal state. Agency names the party that holds
that right in a state; Role names which party a local peer plays. Keeping them apart lets
the same state table serve both ends of a protocol.
"""

from __future__ import annotations

import enum

__all__ = ["Agency", "Role"]


class Agency(enum.Enum):
    """The party allowed to send in a state; NOBODY marks a terminal state."""

    CLIENT = "client"
    SERVER = "server"
    NOBODY = "nobody"


class Role(enum.Enum):
    """The party a local peer plays in a protocol instance.

    The client is the party that has agency in the initial state of every protocol here
    (the handshake, keep-alive, local submission, local notification, sig submission); on a
    mux it is usually, but not always, the one that opened the connection (see sig submission
    V2 in docs/protocol/node-to-node.md 9.1), and in the handshake's simultaneous open both
    sides are clients.

    ``agency`` (the agency this role holds) and ``peer`` (the role of the other party) are
    plain attributes, fixed when the members are made: the machine reads them on every
    message of every protocol.
    """

    CLIENT = "client"
    SERVER = "server"

    agency: Agency
    peer: Role

    def __init__(self, value: str) -> None:
        self.agency = Agency(value)


Role.CLIENT.peer = Role.SERVER
Role.SERVER.peer = Role.CLIENT
