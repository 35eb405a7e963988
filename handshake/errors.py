"""Typed outcomes of a handshake that did not produce a usable connection.

The reference node returns these as values (``HandshakeProtocolError``, a refuse
reason, a query result); here they are exceptions so that a caller which goes on to
start the mux can only do so with a real :class:`~handshake.protocol.HandshakeResult`.
A query is deliberately not a :class:`HandshakeError`: asking which versions a node
speaks is a normal request, and its answer must not be swallowed by error handling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

# The version-data errors belong to the version-data codec, which raises them; they are
# re-exported here so that every handshake outcome can be imported from one module.
from .version_data import VersionDataError, VersionDataMismatch

if TYPE_CHECKING:
    from .messages import RefuseReason
    from .version_data import VersionData

__all__ = [
    "VersionDataError",
    "VersionDataMismatch",
    "HandshakeError",
    "HandshakeRefused",
    "HandshakeProtocolError",
    "HandshakeCodecError",
    "UnexpectedHandshakeMessage",
    "NotRecognisedVersion",
    "InvalidServerSelection",
    "HandshakeLimitExceeded",
    "HandshakeTimeLimitExceeded",
    "HandshakeSizeLimitExceeded",
    "HandshakeBearerError",
    "HandshakeQueryResult",
]


class HandshakeError(Exception):
    """The handshake ended without an agreed version."""


class HandshakeRefused(HandshakeError):
    """No version was agreed, for the reason carried (VersionMismatch, decode error, refused).

    ``by_peer`` is True when the remote side sent the refusal, False when this side
    refused (the server refusing a proposal, or a simultaneous open without agreement).
    """

    def __init__(self, reason: "RefuseReason", *, by_peer: bool) -> None:
        who = "the peer refused" if by_peer else "refused the peer's proposal"
        super().__init__(f"handshake {who}: {reason.describe()}")
        self.reason = reason
        self.by_peer = by_peer


class HandshakeProtocolError(HandshakeError):
    """The peer broke the handshake protocol; the connection must be closed."""


class HandshakeCodecError(HandshakeProtocolError):
    """Received bytes that are not a handshake message valid in the current state."""


class UnexpectedHandshakeMessage(HandshakeProtocolError):
    """A well-formed message arrived in a state where it is not allowed."""


class NotRecognisedVersion(HandshakeProtocolError):
    """The server accepted a version this client did not propose."""

    def __init__(self, version: int, proposed: tuple[int, ...]) -> None:
        super().__init__(f"server accepted version {version}, which was not proposed (proposed {list(proposed)})")
        self.version = version
        self.proposed = proposed


class InvalidServerSelection(HandshakeProtocolError):
    """The server's accepted version data does not decode, or is not acceptable to this client."""

    def __init__(self, version: int, text: str) -> None:
        super().__init__(f"server's data for version {version} rejected: {text}")
        self.version = version
        self.text = text


class HandshakeLimitExceeded(HandshakeProtocolError):
    """The peer exceeded a per-state size or time limit."""


class HandshakeTimeLimitExceeded(HandshakeLimitExceeded):
    def __init__(self, state: str, limit: float) -> None:
        super().__init__(f"no handshake message within {limit:g} s in state {state}")
        self.state = state
        self.limit = limit


class HandshakeSizeLimitExceeded(HandshakeLimitExceeded):
    def __init__(self, state: str, limit: int, size: int) -> None:
        super().__init__(f"handshake message in state {state} exceeds {limit} bytes ({size} bytes)")
        self.state = state
        self.limit = limit
        self.size = size


class HandshakeBearerError(HandshakeError):
    """The bearer failed before the handshake finished: closed, timed out, or a bad SDU.

    The mux error that caused it is kept as ``cause`` (and as ``__cause__``).
    """

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"bearer failed during the handshake: {cause}")
        self.cause = cause


class HandshakeQueryResult(Exception):
    """A query handshake finished: no connection, only the other side's version table.

    ``versions`` maps each version number to its decoded data, or to the
    :class:`VersionDataError` explaining why that entry did not decode (the reference
    keeps both, per entry).
    """

    def __init__(self, versions: Mapping[int, "VersionData | VersionDataError"]) -> None:
        listed = ", ".join(str(v) for v in versions) or "none"
        super().__init__(f"handshake query answered with versions {listed}")
        self.versions = dict(versions)
