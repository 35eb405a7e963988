"""One stream of typed trace events, consumed by several sinks.

The node emits facts (a message was accepted, a peer was disconnected, the stake view became
ready) as small frozen dataclasses. Sinks decide what to do with them: the JSON log writes
one machine-readable line per event, the metrics sink updates Prometheus series, the traffic
recorder appends records. Emitting code never knows which sinks exist, so adding a sink never
touches the protocol or validation code.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, TextIO

__all__ = [
    "TraceEvent",
    "Tracer",
    "JsonLogSink",
    "MessageAccepted",
    "MessageRejected",
    "MessageExpired",
    "MessageNotified",
    "ConnectionOpened",
    "ConnectionClosed",
    "StakeViewUpdated",
    "NodeListening",
    "NodeStopped",
]


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """Base of every event: when it happened (wall clock, POSIX seconds)."""

    at: float

    @property
    def kind(self) -> str:
        return type(self).__name__

    def to_json(self) -> dict[str, Any]:
        cls = type(self)
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.name != "at")
        out: dict[str, Any] = {"at": self.at, "kind": cls.__name__}
        for name in names:
            value = getattr(self, name)
            out[name] = value.hex() if isinstance(value, (bytes, bytearray)) else value
        return out


#: Each event class's field names after ``at``, looked up once (the log writes several events per message).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


@dataclass(frozen=True, slots=True)
class MessageAccepted(TraceEvent):
    message_id: bytes
    pool_id: bytes
    size: int
    origin: str            # "local" or the peer's address
    verify_ns: int = 0     # time spent validating this message


@dataclass(frozen=True, slots=True)
class MessageRejected(TraceEvent):
    message_id: bytes
    pool_id: bytes
    size: int
    origin: str
    reason: str            # the error's reference text, e.g. "InvalidSigId"
    reaction: str          # "reject", "trace" or "disconnect"


@dataclass(frozen=True, slots=True)
class MessageExpired(TraceEvent):
    message_id: bytes
    size: int


@dataclass(frozen=True, slots=True)
class MessageNotified(TraceEvent):
    count: int
    size: int
    client: str


@dataclass(frozen=True, slots=True)
class ConnectionOpened(TraceEvent):
    peer: str
    link: str              # "n2n-in", "n2n-out", "n2c"
    version: int


@dataclass(frozen=True, slots=True)
class ConnectionClosed(TraceEvent):
    peer: str
    link: str
    error: str | None      # None for a clean close


@dataclass(frozen=True, slots=True)
class StakeViewUpdated(TraceEvent):
    source: str
    epoch: int | None
    pools: int
    eligible: int


@dataclass(frozen=True, slots=True)
class NodeListening(TraceEvent):
    endpoint: str
    link: str


@dataclass(frozen=True, slots=True)
class NodeStopped(TraceEvent):
    reason: str


Sink = Callable[[TraceEvent], None]


class Tracer:
    """Fan events out to the registered sinks. A failing sink never breaks the node."""

    def __init__(self, clock_now: Callable[[], float] = time.time) -> None:
        self._sinks: list[Sink] = []
        self.now = clock_now

    def add_sink(self, sink: Sink) -> None:
        self._sinks.append(sink)

    def emit(self, event: TraceEvent) -> None:
        for sink in self._sinks:
            try:
                sink(event)
            except Exception as exc:  # a broken sink must not take a connection down
                print(f"dmq-node: trace sink {sink!r} failed: {exc}", file=sys.stderr)


class JsonLogSink:
    """One JSON object per line, for operators' log pipelines.

    Each line is flushed as it is written: operators and tests follow the log live. A
    line is built by a writer compiled once per event class (see :func:`_json_line`): the
    node writes three lines per Mithril signer message, so a dict and a generic JSON
    encoder per line were a visible share of its CPU.
    """

    def __init__(self, stream: TextIO = sys.stderr, kinds: set[str] | None = None) -> None:
        self._stream = stream
        self._kinds = kinds

    def __call__(self, event: TraceEvent) -> None:
        if self._kinds is not None and event.kind not in self._kinds:
            return
        self._stream.write(_json_line(event))
        self._stream.flush()


_encode = json.JSONEncoder(separators=(",", ":")).encode
_encode_text = json.encoder.encode_basestring_ascii  # what ``_encode`` does to a str


def _json_value(value: Any) -> str:
    """``value`` as ``_encode`` writes it in :meth:`TraceEvent.to_json`, the common types directly."""
    kind = type(value)
    if kind is str:
        return _encode_text(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    if value is None:
        return "null"
    if kind is bytes or kind is bytearray:
        return '"' + value.hex() + '"'
    return _encode(value.hex() if isinstance(value, (bytes, bytearray)) else value)


def _line_writer(cls: type) -> Callable[[TraceEvent], str]:
    """A function writing one event of ``cls`` as the line ``_encode(event.to_json())``."""
    names = tuple(f.name for f in dataclasses.fields(cls) if f.name != "at")
    keys = tuple("," + _encode(name) + ":" for name in names)
    head = ',"kind":' + _encode(cls.__name__)
    fields = tuple(zip(keys, names))

    def line(event: TraceEvent) -> str:
        parts = ['{"at":', _json_value(event.at), head]
        for key, name in fields:
            parts.append(key)
            parts.append(_json_value(getattr(event, name)))
        parts.append("}\n")
        return "".join(parts)

    return line


_LINE_WRITERS: dict[type, Callable[[TraceEvent], str]] = {}


def _json_line(event: TraceEvent) -> str:
    """The event's JSON object and a newline, exactly ``_encode(event.to_json()) + "\\n"``."""
    cls = type(event)
    writer = _LINE_WRITERS.get(cls)
    if writer is None:
        writer = _LINE_WRITERS[cls] = _line_writer(cls)
    return writer(event)
