"""The sans-IO protocol tracker: where one peer stands, including pipelined requests.

:class:`ProtocolMachine` applies the spec's pure transition function to what one peer
sends and receives and remembers the result. It performs no I/O, so the same rules can be
exercised directly in tests (and with hypothesis) and by any transport.

Pipelining follows the reference's typed protocols (``YieldPipelined`` / ``Collect``): a
peer with agency may send a request *pipelined*, meaning it does not wait for the reply
before going on. The tracker then assumes the reply has already happened: its state moves
on to the state the reply will lead to (:meth:`ProtocolSpec.reply_state`, which must be
fixed for the request's target state) and the target state joins a FIFO of outstanding
replies. Each later receive collects the oldest outstanding reply, decoded and checked in
the state it was requested in. A non-pipelined send, and a non-pipelined receive, are only
allowed once every outstanding reply has been collected, exactly as the reference allows
``Yield`` and ``Await`` only with zero outstanding requests.
"""

from __future__ import annotations

import enum
from collections import deque
from typing import Any

from .agency import Agency, Role
from .errors import ProtocolViolation
from .spec import ProtocolSpec

__all__ = ["ProtocolMachine"]


class ProtocolMachine:
    """One peer's view of a protocol instance."""

    __slots__ = ("spec", "role", "_state", "_outstanding", "_sends", "_receives", "receiving")

    def __init__(self, spec: ProtocolSpec, role: Role, state: enum.Enum | None = None) -> None:
        self.spec = spec
        self.role = role
        self._state = spec.initial if state is None else state
        self._outstanding: deque[enum.Enum] = deque()
        # The transitions this peer may take by sending and by receiving, per state: a move
        # found there is allowed (agency and table in one lookup); one not found is refused,
        # and the spec's own checks then say why.
        self._sends = spec.moves_of(role.agency)
        self._receives = spec.moves_of(role.peer.agency)
        #: What :meth:`receiving_state` returns, kept up to date by every send and receive (the
        #: driver reads it for every message it takes); None where that raises.
        self.receiving: enum.Enum | None = self._state if self._state in self._receives else None

    @property
    def state(self) -> enum.Enum:
        """The state the protocol is in once every outstanding reply has been collected."""
        return self._state

    @property
    def outstanding(self) -> tuple[enum.Enum, ...]:
        """States whose replies were requested pipelined and not yet collected, oldest first."""
        return tuple(self._outstanding)

    @property
    def done(self) -> bool:
        return self.spec.is_terminal(self._state) and not self._outstanding

    def has_agency(self) -> bool:
        """Whether this peer may send now (pipelined sends need no collected replies)."""
        return self.spec.agency(self._state) is self.role.agency

    # -- sending -------------------------------------------------------------------
    def check_send(self, message: Any, *, pipelined: bool = False) -> tuple[enum.Enum, enum.Enum | None]:
        """Validate sending ``message`` now without changing anything.

        Returns ``(next_state, awaited_state)`` where ``awaited_state`` is the state whose
        reply becomes outstanding (None unless pipelined).
        """
        spec = self.spec
        state = self._state
        moves = self._sends.get(state)
        known = None if moves is None else moves.get(type(message))
        if known is None:  # refused: one of these raises, with the reason
            spec.check_agency(state, self.role, message)
            spec.next_state(state, message)
        target, chosen = known
        if chosen:  # the target is a function of the message; one outside the table is the spec's to report
            choice = target(message)
            target = choice if choice in spec.states else spec.chosen_target(state, target, message)
        if not pipelined:
            if self._outstanding:
                raise ProtocolViolation(spec.name, state, message,
                                        f"{len(self._outstanding)} pipelined replies are still outstanding; "
                                        "collect them or send this pipelined")
            return target, None
        if spec.agency(target) is not self.role.peer.agency:
            raise ProtocolViolation(spec.name, state, message,
                                    f"cannot be pipelined: it leads to {target.name}, where the "
                                    f"{self.role.peer.value} has no agency")
        try:
            after_reply = spec.reply_state(target)
        except ValueError as exc:
            raise ProtocolViolation(spec.name, state, message, f"cannot be pipelined: {exc}") from None
        return after_reply, target

    def on_send(self, message: Any, *, pipelined: bool = False) -> enum.Enum:
        """Record that ``message`` was sent; return the state it was sent in."""
        return self.record_send(self.check_send(message, pipelined=pipelined))

    def record_send(self, checked: tuple[enum.Enum, enum.Enum | None]) -> enum.Enum:
        """Record a send :meth:`check_send` allowed (its answer, nothing sent or received since);
        return the state it was sent in."""
        sent_in = self._state
        next_state, awaited = checked
        outstanding = self._outstanding
        if awaited is not None:
            outstanding.append(awaited)
        self._state = next_state
        self.receiving = outstanding[0] if outstanding else next_state if next_state in self._receives else None
        return sent_in

    # -- receiving -----------------------------------------------------------------
    def receiving_state(self) -> enum.Enum:
        """The state the next message from the peer must be decoded and checked in.

        Raises ProtocolViolation when this peer expects nothing: it holds agency itself
        (with nothing outstanding) or the protocol has terminated.
        """
        state = self.receiving
        if state is not None:
            return state
        state = self._state
        agency = self.spec.agency(state)
        if agency is not self.role.peer.agency:
            holder = "nobody" if agency is Agency.NOBODY else f"the {agency.value}"
            raise ProtocolViolation(self.spec.name, state, None,
                                    f"the {self.role.value} cannot receive: {holder} has agency")
        return state

    def on_receive(self, message: Any, raw: bytes | None = None, state: enum.Enum | None = None) -> enum.Enum:
        """Record that ``message`` arrived; return the state it was received in.

        ``state``: what :meth:`receiving_state` said, if the caller asked it since the last change.
        """
        spec = self.spec
        if state is None:
            state = self.receiving_state()
        moves = self._receives.get(state)
        known = None if moves is None else moves.get(type(message))
        try:
            if known is None:  # refused: one of these raises, with the reason
                spec.check_agency(state, self.role.peer, message)
                spec.next_state(state, message)
            target, chosen = known
            if chosen:
                choice = target(message)
                target = choice if choice in spec.states else spec.chosen_target(state, target, message)
        except ProtocolViolation as exc:
            raise ProtocolViolation(spec.name, state, message, exc.reason, raw) from None
        outstanding = self._outstanding
        if outstanding:
            expected = spec.reply_state(state)
            if target != expected:
                raise ProtocolViolation(spec.name, state, message,
                                        f"a pipelined reply must lead to {expected.name}, not {target.name}", raw)
            outstanding.popleft()
        else:
            self._state = target
        now = self._state
        self.receiving = outstanding[0] if outstanding else now if now in self._receives else None
        return state
