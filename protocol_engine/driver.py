"""The trio driver: runs one peer of a protocol over a MessageChannel.

The driver is where the spec is enforced on real bytes. Before a send it checks agency and
the transition table, then encodes; on a receive it applies the byte limit of the state
(as the channel's ``max_size``) and its time limit (a trio cancel scope), decodes with the
codec in that state and checks the transition. Every breach is a typed
:class:`~protocol_engine.errors.ProtocolError`; the end of the peer's stream is
reported as the channel's own ``ChannelClosed``, because whether it is an error depends on
the state and the protocol (an N2C client may hang up between requests).

Pipelining (see :mod:`.machine`): ``await driver.send(request, pipelined=True)`` sends
without waiting; each later ``await driver.recv()`` returns the oldest outstanding reply.
The peer answers strictly in order, so replies arrive in the order the requests were sent.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import trio

from ouroboros_mux.channel import MalformedMessage, MessageChannel, MessageTooLarge

from .agency import Role
from .errors import DecoderFailure, ExceededSizeLimit, ExceededTimeLimit
from .machine import ProtocolMachine
from .spec import ProtocolSpec

__all__ = ["Driver", "DriverEvent", "Direction", "as_driver"]

T = TypeVar("T")


class Direction(enum.Enum):
    SENT = "sent"
    RECEIVED = "received"


@dataclass(frozen=True, slots=True)
class DriverEvent:
    """One message crossing the driver, for tracing: the decoded message and its bytes."""

    protocol: str
    direction: Direction
    state: enum.Enum
    message: Any
    raw: bytes


class Driver:
    """One peer (``role``) of one protocol instance (``spec``) over ``channel``.

    ``trace``, when given, is called with a :class:`DriverEvent` for every message sent
    or received, after the message has been checked.
    """

    def __init__(self, channel: MessageChannel, spec: ProtocolSpec, role: Role, *,
                 trace: Callable[[DriverEvent], None] | None = None) -> None:
        self.channel = channel
        self.spec = spec
        self.role = role
        self.machine = ProtocolMachine(spec, role)
        self._trace = trace
        # What the channel hands over is one whole CBOR item: the codec may rely on it.
        self._decode = getattr(spec.codec, "decode_framed", spec.codec.decode)
        # A codec that can frame its usual messages itself, over a channel that offers it
        # (``MuxChannel.take_decoded``): a message taken without waiting is then read once.
        # (Looked up on the channel per receive: a channel may replace it, as a closed MuxChannel does.)
        self._decode_prefix = getattr(spec.codec, "decode_prefix", None)
        self._takes_decoded = self._decode_prefix is not None and hasattr(channel, "take_decoded")
        # The byte limit of each state, read by every receive without waiting.
        self._byte_limits = {state: limits.byte_limit for state, limits in spec.states.items()}
        #: The scope of :meth:`run` while it runs, and the state of the receive its deadline is for.
        self._scope: trio.CancelScope | None = None
        self._timed: tuple[enum.Enum, float] | None = None

    @property
    def state(self) -> enum.Enum:
        return self.machine.state

    @property
    def outstanding(self) -> tuple[enum.Enum, ...]:
        return self.machine.outstanding

    @property
    def done(self) -> bool:
        return self.machine.done

    async def send(self, message: Any, *, pipelined: bool = False) -> None:
        """Send ``message`` from the current state (ProtocolViolation if not allowed)."""
        machine = self.machine
        checked = machine.check_send(message, pipelined=pipelined)
        raw = self.spec.codec.encode(message)
        sent_in = machine.record_send(checked)
        await self.channel.send(raw)
        if self._trace is not None:
            self._trace(DriverEvent(self.spec.name, Direction.SENT, sent_in, message, raw))

    def send_nowait(self, message: Any, *, pipelined: bool = False) -> None:
        """:meth:`send` through a channel with ``send_nowait`` that has room now.

        The caller has made sure of the room (``channel.send_nowait(b"")`` is true).
        """
        machine = self.machine
        checked = machine.check_send(message, pipelined=pipelined)
        raw = self.spec.codec.encode(message)
        sent_in = machine.record_send(checked)
        if not self.channel.send_nowait(raw):
            raise RuntimeError(f"{self.spec.name}: the channel had no room for a reply sent without waiting")
        if self._trace is not None:
            self._trace(DriverEvent(self.spec.name, Direction.SENT, sent_in, message, raw))

    async def run(self, peer: Callable[[], Awaitable[T]]) -> T:
        """Run ``peer`` (the loop that sends and receives through this driver) under one deadline.

        Every receive with a time limit then moves the deadline of this one cancel scope
        (and clears it once the message is in) instead of entering a scope of its own: a
        scope per receive is a good part of what a round costs a peer at a low rate. When
        the deadline passes, the receive's :class:`ExceededTimeLimit` is raised from here,
        as :meth:`recv` raises it without :meth:`run`.
        """
        if self._scope is not None:
            raise RuntimeError(f"{self.spec.name}: the driver already runs a peer")
        with trio.CancelScope() as scope:
            self._scope = scope
            try:
                return await peer()
            finally:
                self._scope = None
        assert self._timed is not None  # only the receive deadline is ever set on the scope
        state, limit = self._timed
        raise ExceededTimeLimit(self.spec.name, state, limit)

    async def recv(self) -> Any:
        """Receive the next message the peer owes, within the state's limits."""
        spec = self.spec
        state = self.machine.receiving_state()
        limits = spec.states[state]
        try:
            if limits.time_limit is None:
                raw = await self.channel.recv_message(limits.byte_limit)
            elif self._scope is not None:
                scope = self._scope
                self._timed = (state, limits.time_limit)
                scope.deadline = trio.current_time() + limits.time_limit
                try:
                    raw = await self.channel.recv_message(limits.byte_limit)
                finally:
                    scope.deadline = math.inf
            else:
                # A bare cancel scope rather than ``fail_after``: this runs for every message
                # received, and the context-manager wrapper costs about a third of the scope.
                with trio.CancelScope(deadline=trio.current_time() + limits.time_limit) as scope:
                    raw = await self.channel.recv_message(limits.byte_limit)
                if scope.cancelled_caught:
                    raise ExceededTimeLimit(spec.name, state, limits.time_limit)
        except MessageTooLarge as exc:
            raise ExceededSizeLimit(spec.name, state, exc.limit, exc.buffered) from None
        except MalformedMessage as exc:
            raise DecoderFailure(spec.name, state, None, f"not CBOR: {exc}") from None
        return self._accept(state, raw)

    def recv_nowait(self) -> Any:
        """:meth:`recv` for a channel with ``take_message``, without waiting: None if no message is complete.

        For a peer run from the channel's reader (``MuxChannel.on_bytes``). Nothing here waits,
        so in a state with a time limit the caller keeps the limit (:meth:`time_limit`).
        """
        state = self.machine.receiving
        if state is None:
            state = self.machine.receiving_state()  # raises: this peer expects nothing now
        limit = self._byte_limits[state]
        try:
            if self._takes_decoded:
                taken = self.channel.take_decoded(self._decode_prefix, state, limit)
                if taken is None:
                    return None
                raw, message = taken
            else:
                raw = self.channel.take_message(limit)
                if raw is None:
                    return None
                message = None
        except MessageTooLarge as exc:
            raise ExceededSizeLimit(self.spec.name, state, exc.limit, exc.buffered) from None
        except MalformedMessage as exc:
            raise DecoderFailure(self.spec.name, state, None, f"not CBOR: {exc}") from None
        if message is None:
            return self._accept(state, raw)
        return self._check(state, raw, message)

    def time_limit(self) -> tuple[enum.Enum, float | None]:
        """The state the next message is received in, and the seconds it may take (None: no limit)."""
        state = self.machine.receiving
        if state is None:
            state = self.machine.receiving_state()  # raises: this peer expects nothing now
        return state, self.spec.states[state].time_limit

    def _accept(self, state: enum.Enum, raw: bytes) -> Any:
        """Decode and check ``raw``, received in ``state``."""
        try:
            message = self._decode(state, raw)
        except ValueError as exc:
            raise DecoderFailure(self.spec.name, state, raw, str(exc)) from None
        return self._check(state, raw, message)

    def _check(self, state: enum.Enum, raw: bytes, message: Any) -> Any:
        """Check ``message``, decoded from ``raw``, received in ``state``."""
        self.machine.on_receive(message, raw, state)
        if self._trace is not None:
            self._trace(DriverEvent(self.spec.name, Direction.RECEIVED, state, message, raw))
        return message


def as_driver(driver_or_channel: Driver | MessageChannel, spec: ProtocolSpec, role: Role) -> Driver:
    """Accept either a ready driver for ``spec``/``role`` or a bare channel to wrap."""
    if isinstance(driver_or_channel, Driver):
        if driver_or_channel.spec is not spec and driver_or_channel.spec.name != spec.name:
            raise ValueError(f"driver runs {driver_or_channel.spec.name}, expected {spec.name}")
        if driver_or_channel.role is not role:
            raise ValueError(f"driver plays the {driver_or_channel.role.value}, expected the {role.value}")
        return driver_or_channel
    return Driver(driver_or_channel, spec, role)
