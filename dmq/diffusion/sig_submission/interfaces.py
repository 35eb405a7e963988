"""How the node plugs into sig submission: a source to serve from, a sink to pull into.

The protocol layer never sees the mempool or the validation pipeline (docs/architecture.md 1):
the serving peer reads the node's mempool through :class:`SigSource`, the pulling peer
hands what it pulled to :class:`SigSink`. Messages cross this boundary as their exact
received bytes, ids as 32-byte strings, sizes as ints.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

__all__ = ["SigSource", "SigSink", "DisconnectPeer"]


class SigSource(Protocol):
    """The node's mempool as a serving peer serves it.

    Positions are mempool indices; -1 is "before the first message", so a new peer is
    offered everything the mempool holds (docs/protocol/node-to-node.md 9.3, 9.7).

    Optional: ``call_on_publish(callback)`` (answer a parked request from the publishing task)
    and ``index_of(message_id)`` (the index of a held message, so a serving peer can forget
    known-held ids it has passed: :class:`~dmq.diffusion.sig_submission.known_held.KnownHeld`).
    """

    def ids_after(self, position: int, limit: int) -> list[tuple[int, bytes, int]]:
        """``(index, id, size)`` of up to ``limit`` unexpired messages after ``position``, in mempool order."""

    async def wait_for_ids_after(self, position: int) -> None:
        """Return once an unexpired message exists after ``position``."""

    def lookup(self, message_id: bytes) -> bytes | None:
        """The raw bytes of a held, unexpired message, or None once it expired or was removed.

        A source whose messages are each known to be one CBOR item (the node's mempool:
        its codec decoded every one strictly) says so with a true ``checked_items``
        attribute, and replies splice them without walking them again.
        """


class SigSink(Protocol):
    """The node's side of a pulling peer: what to fetch, and what to do with it.

    ``wanted`` is asked once per ids reply: it returns the subset of the announced ids
    to fetch from this peer, leaving out those the node holds or is already fetching
    from another peer, and from then on the node counts the returned ids as in flight
    from this peer (see :class:`~dmq.diffusion.sig_submission.inflight.InFlightRegistry`).
    The pulling peer gives each of them back exactly once through ``release``: after
    ``accept`` has seen its message, when the peer omitted it from a reply, or when the
    protocol ends for any reason.
    """

    def wanted(self, announced: Sequence[tuple[bytes, int]]) -> Collection[bytes]:
        """Which of the announced ``(id, size)`` pairs to request; they become in flight."""

    async def accept(self, raw_messages: list[bytes]) -> None:
        """Validate and store a batch, in announcement order; raise :class:`DisconnectPeer` to end the connection."""

    def accept_now(self, raw_messages: list[bytes]) -> bool:
        """:meth:`accept` without waiting, when the node can: True once done (it raises as
        ``accept`` does), False, with nothing done, when the batch must go to ``accept``.

        The pulling peer run by the mux reader tries this first, so a batch the node takes
        at once wakes no task.
        """

    def release(self, ids: Collection[bytes]) -> None:
        """These ids are no longer in flight from this peer."""


class DisconnectPeer(Exception):
    """The node's verdict on a pulled batch: drop the connection to this peer.

    Raised by :meth:`SigSink.accept` when validation produced an error whose node-to-node
    reaction is "disconnect" (docs/protocol/validation.md 6.2); the reference throws ``SigValidationException``
    at the same point. ``reason`` is the node's own error (kept as is for tracing).
    """

    def __init__(self, reason: object) -> None:
        super().__init__(f"disconnecting the peer: {reason}")
        self.reason = reason
