"""Keep-alive (mini-protocol 12): states, messages, limits and the state table.

The client proves every few seconds that the connection is alive and measures the round
trip; the server echoes the cookie. The reference declares the server's wait for the next
keep-alive (97 s) longer than the client's interval (10 s) plus its wait for a response
(60 s), so a live client never trips the server's limit.
(``ouroboros-network: Ouroboros/Network/Protocol/KeepAlive/{Type,Codec}.hs``, docs/protocol/node-to-node.md 9.5.)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..framework import SMALL_BYTE_LIMIT, Agency, ProtocolError, ProtocolState, StateSpec

__all__ = [
    "PROTOCOL_NUM",
    "INGRESS_LIMIT",
    "KEEP_ALIVE_INTERVAL",
    "KeepAliveState",
    "MsgKeepAlive",
    "MsgKeepAliveResponse",
    "MsgDone",
    "KeepAliveMessage",
    "STATES",
    "TRANSITIONS",
    "KeepAliveCookieMismatch",
]

PROTOCOL_NUM = 12
#: Mux ingress limit for this protocol on N2N connections: 1280 + 10 % (docs/protocol/mux.md 2.4).
INGRESS_LIMIT = 1408
#: The reference client's pause between a response and the next keep-alive.
KEEP_ALIVE_INTERVAL = 10.0
_MAX_COOKIE = 0xFFFF


class KeepAliveState(ProtocolState):
    CLIENT = "StClient"
    SERVER = "StServer"
    DONE = "StDone"


def _check_cookie(cookie: int) -> None:
    if not isinstance(cookie, int) or not 0 <= cookie <= _MAX_COOKIE:
        raise ValueError(f"keep-alive cookie must be a word16, got {cookie!r}")


@dataclass(frozen=True, slots=True)
class MsgKeepAlive:
    """``[0, cookie]``: client to server."""

    cookie: int

    def __post_init__(self) -> None:
        _check_cookie(self.cookie)


@dataclass(frozen=True, slots=True)
class MsgKeepAliveResponse:
    """``[1, cookie]``: server to client, echoing the cookie."""

    cookie: int

    def __post_init__(self) -> None:
        _check_cookie(self.cookie)


@dataclass(frozen=True, slots=True)
class MsgDone:
    """``[2]``: the client ends the protocol."""


KeepAliveMessage = MsgKeepAlive | MsgKeepAliveResponse | MsgDone

STATES = {
    # The server waits here for the next keep-alive: 97 s.
    KeepAliveState.CLIENT: StateSpec(Agency.CLIENT, SMALL_BYTE_LIMIT, 97.0),
    # The client waits here for the response: 60 s.
    KeepAliveState.SERVER: StateSpec(Agency.SERVER, SMALL_BYTE_LIMIT, 60.0),
    KeepAliveState.DONE: StateSpec(Agency.NOBODY),
}

TRANSITIONS = {
    (KeepAliveState.CLIENT, MsgKeepAlive): KeepAliveState.SERVER,
    (KeepAliveState.CLIENT, MsgDone): KeepAliveState.DONE,
    (KeepAliveState.SERVER, MsgKeepAliveResponse): KeepAliveState.CLIENT,
}


class KeepAliveCookieMismatch(ProtocolError):
    """The server echoed another cookie than the one sent (fatal in the reference)."""

    def __init__(self, sent: int, received: int) -> None:
        super().__init__("keep-alive", KeepAliveState.SERVER,
                         f"cookie mismatch: sent {sent}, response carried {received}")
        self.sent = sent
        self.received = received
