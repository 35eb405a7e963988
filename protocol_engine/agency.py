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
    (keep-alive, local submission, local notification, sig submission); on a mux it is
    usually, but not always, the initiator (see sig submission V2 in docs/protocol/node-to-node.md 9.1).
    """

    CLIENT = "client"
    SERVER = "server"

    @property
    def agency(self) -> Agency:
        """The agency this role holds."""
        return Agency.CLIENT if self is Role.CLIENT else Agency.SERVER

    @property
    def peer(self) -> Role:
        """The role of the other party."""
        return Role.SERVER if self is Role.CLIENT else Role.CLIENT
