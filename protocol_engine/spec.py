"""A mini-protocol as data: states, agency, limits, transitions and the codec.

The reference node declares each protocol once (a type of states, messages indexed by the
states they leave and enter, size and time limits per state, a codec) and lets the typed
driver reject anything else. Python has no such types, so the same facts live here as
plain data, checked when the spec is built, and :meth:`ProtocolSpec.next_state` is the one
pure function that says whether a message may leave a state and where it leads. Peers
never re-check the rules themselves.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, Union

from .agency import Agency, Role
from .errors import ProtocolViolation

__all__ = ["StateSpec", "Codec", "NextState", "ProtocolSpec", "SMALL_BYTE_LIMIT"]

#: The reference's ``smallByteLimit``: the per-state byte limit of most N2N states.
SMALL_BYTE_LIMIT = 0xFFFF


@dataclass(frozen=True, slots=True)
class StateSpec:
    """What holds in one state: who may send, and how much and how long the other waits.

    ``byte_limit`` bounds the bytes of one message received in this state and
    ``time_limit`` (seconds) bounds the wait for it; None means unlimited, as on N2C.
    """

    agency: Agency
    byte_limit: int | None = None
    time_limit: float | None = None

    def __post_init__(self) -> None:
        if self.byte_limit is not None and self.byte_limit <= 0:
            raise ValueError(f"byte limit must be positive, got {self.byte_limit}")
        if self.time_limit is not None and self.time_limit <= 0:
            raise ValueError(f"time limit must be positive, got {self.time_limit}")


class Codec(Protocol):
    """Messages to bytes and back.

    Decoding takes the state because the same bytes may mean different messages in
    different states or versions (``8106`` is V1 MsgInit but V2 MsgDone). A codec raises
    ValueError (CodecError or CborError) for bytes that are not a message; it may decode a
    message that is well formed but not allowed in the state and leave the verdict to the
    driver, which then reports a ProtocolViolation rather than a decoder failure.

    A codec may also offer ``decode_framed(state, raw)``, which the driver then uses: the
    same result as ``decode``, for ``raw`` already known to be exactly one well-formed CBOR
    item (the channel's framing walked it to find its end). A message whose last field is
    a raw span can then take the rest of the envelope as that span instead of walking its
    bytes a second time.

    And ``decode_prefix(state, buf)``, for the messages it can frame itself: ``(message,
    end)`` when ``buf`` starts with a message that ``decode`` would give for ``buf[:end]``,
    every byte up to ``end`` read and checked (so that span is exactly one well-formed CBOR
    item), None for anything else, never an error. A driver taking messages without waiting
    from a channel that offers it (``MuxChannel.take_decoded``) then has the channel frame
    such a message by that end: the message is read once, not walked by the framing first.
    """

    def encode(self, message: Any) -> bytes: ...

    def decode(self, state: enum.Enum, raw: bytes) -> Any: ...


#: A transition target: a state, or a pure function of the message choosing the state
#: (for example a blocking request leading to the blocking busy state).
NextState = Union[enum.Enum, Callable[[Any], enum.Enum]]


@dataclass(frozen=True, eq=False)
class ProtocolSpec:
    """One mini-protocol: every fact the driver needs, and nothing about I/O.

    Specs compare and hash by identity: each protocol (and version) has one.
    """

    name: str
    states: Mapping[enum.Enum, StateSpec]
    initial: enum.Enum
    transitions: Mapping[tuple[enum.Enum, type], NextState]
    codec: Codec

    def __post_init__(self) -> None:
        object.__setattr__(self, "states", MappingProxyType(dict(self.states)))
        object.__setattr__(self, "transitions", MappingProxyType(dict(self.transitions)))
        self._validate()
        # The tables never change: each pipelining answer is worked out once, on first use
        # (a pipelined send and each of its replies ask).
        object.__setattr__(self, "_reply_states", {})
        # The driver asks these for every message: plain dicts, each answer one lookup. A
        # transition's target is kept with whether it is a function of the message, per state
        # and message class; and per agency, the states that party may send from.
        object.__setattr__(self, "_agency", {state: spec.agency for state, spec in self.states.items()})
        targets: dict[enum.Enum, dict[type, tuple[NextState, bool]]] = {state: {} for state in self.states}
        for (state, message_type), target in self.transitions.items():
            targets[state][message_type] = (target, callable(target) and not isinstance(target, enum.Enum))
        object.__setattr__(self, "_targets", targets)
        object.__setattr__(self, "_moves", {agency: {state: targets[state] for state, spec in self.states.items()
                                                     if spec.agency is agency}
                                            for agency in (Agency.CLIENT, Agency.SERVER)})

    def _validate(self) -> None:
        if self.initial not in self.states:
            raise ValueError(f"{self.name}: initial state {self.initial} is not a state of the protocol")
        for (state, message_type), target in self.transitions.items():
            if state not in self.states:
                raise ValueError(f"{self.name}: transition from unknown state {state}")
            if not isinstance(message_type, type):
                raise ValueError(f"{self.name}: transition key {message_type!r} is not a message class")
            if self.states[state].agency is Agency.NOBODY:
                raise ValueError(f"{self.name}: terminal state {state} has an outgoing transition")
            if not callable(target) and target not in self.states:
                raise ValueError(f"{self.name}: transition {state.name} --{message_type.__name__}--> "
                                 f"unknown state {target}")
        sources = {state for state, _ in self.transitions}
        for state, spec in self.states.items():
            if spec.agency is not Agency.NOBODY and state not in sources:
                raise ValueError(f"{self.name}: state {state} has agency but no message may leave it")

    # -- queries -----------------------------------------------------------------
    def agency(self, state: enum.Enum) -> Agency:
        return self._agency[state]  # type: ignore[attr-defined]

    def is_terminal(self, state: enum.Enum) -> bool:
        return self._agency[state] is Agency.NOBODY  # type: ignore[attr-defined]

    def messages_from(self, state: enum.Enum) -> frozenset[type]:
        """The message classes that may leave ``state``."""
        return frozenset(t for s, t in self.transitions if s == state)

    def next_state(self, state: enum.Enum, message: Any) -> enum.Enum:
        """Where ``message`` leads from ``state``; ProtocolViolation if it may not leave it.

        Pure: no agency check (see :func:`check_agency`) and no side effect.
        """
        known = self._targets[state].get(type(message))  # type: ignore[attr-defined]
        if known is None:
            if self.is_terminal(state):
                reason = "the protocol has terminated"
            else:
                allowed = ", ".join(sorted(t.__name__ for t in self.messages_from(state)))
                reason = f"not valid in this state (valid: {allowed})"
            raise ProtocolViolation(self.name, state, message, reason)
        target, chosen = known
        return self.chosen_target(state, target, message) if chosen else target

    def chosen_target(self, state: enum.Enum, choose: Callable[[Any], enum.Enum], message: Any) -> enum.Enum:
        """The state a transition from ``state`` whose target is a function of the message leads ``message`` to."""
        target = choose(message)
        if target not in self.states:
            raise ValueError(f"{self.name}: transition function from {state} chose unknown state {target}")
        return target

    def moves_of(self, agency: Agency) -> Mapping[enum.Enum, Mapping[type, tuple[NextState, bool]]]:
        """Per state where ``agency`` may send, its transitions by message class, as ``(target, chosen)``
        (``chosen``: the target is a function of the message, see :meth:`chosen_target`): all a
        machine needs to check a send or a receive in one lookup."""
        return self._moves[agency]  # type: ignore[attr-defined]

    def check_agency(self, state: enum.Enum, sender: Role, message: Any) -> None:
        """Raise ProtocolViolation unless ``sender`` holds agency in ``state``."""
        agency = self._agency[state]  # type: ignore[attr-defined]
        if agency is not sender.agency:
            holder = "nobody" if agency is Agency.NOBODY else f"the {agency.value}"
            raise ProtocolViolation(self.name, state, message,
                                    f"sent by the {sender.value} but {holder} has agency")

    def reply_state(self, state: enum.Enum) -> enum.Enum:
        """The one state every reply from ``state`` leads to, for pipelining.

        A request may be pipelined only if the sender knows, before the reply arrives,
        the state the reply will return the protocol to: every message leaving ``state``
        must have the same fixed target. Raises ValueError otherwise.
        """
        known = self._reply_states.get(state)  # type: ignore[attr-defined]
        if known is not None:
            return known
        targets = {target for (s, _), target in self.transitions.items() if s == state}
        if len(targets) != 1:
            raise ValueError(f"{self.name}: replies from {state} lead to {len(targets)} targets")
        (target,) = targets
        if callable(target) and not isinstance(target, enum.Enum):
            raise ValueError(f"{self.name}: replies from {state} lead to a message-dependent state")
        self._reply_states[state] = target  # type: ignore[attr-defined]
        return target

    # -- variants ----------------------------------------------------------------
    def with_limits(self, state: enum.Enum, *, byte_limit: int | None | object = ...,
                    time_limit: float | None | object = ...) -> ProtocolSpec:
        """A copy with one state's limits replaced (``...`` keeps a limit unchanged).

        Used where a deployment or a test needs other timeouts than the reference's.
        """
        old = self.states[state]
        new = StateSpec(
            old.agency,
            old.byte_limit if byte_limit is ... else byte_limit,  # type: ignore[arg-type]
            old.time_limit if time_limit is ... else time_limit,  # type: ignore[arg-type]
        )
        states = dict(self.states)
        states[state] = new
        return dataclasses.replace(self, states=states)
