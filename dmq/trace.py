"""One stream of typed trace events, consumed by several sinks.

The node emits facts (a message was accepted, a peer was disconnected, the stake view became
ready) as small frozen dataclasses. Sinks decide what to do with them: the log writes one
line per event in the reference node's trace-dispatcher shape (namespace, severity, JSON or
human text, filtered by ``TraceOptions``), the metrics sink updates Prometheus series, the traffic
recorder appends records. Emitting code never knows which sinks exist, so adding a sink never
touches the protocol or validation code.
"""

from __future__ import annotations

import dataclasses
import json
import math
import socket
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, TextIO

from dmq.trace_reference import reference_fields_for

__all__ = [
    "TraceEvent",
    "Tracer",
    "LogSink",
    "LogEvent",
    "read_log_line",
    "read_log",
    "route_of",
    "ROUTES",
    "SEVERITIES",
    "MessageAccepted",
    "MessageRejected",
    "MessageExpired",
    "MessageNotified",
    "ConnectionOpened",
    "HANDSHAKE_QUERY",
    "ConnectionClosed",
    "StakeViewUpdated",
    "NodeListening",
    "NodeStopped",
    "StartupConfiguration",
    "StartupTopology",
    "ServerSocketUp",
    "LocalSocketUp",
    "PrometheusSimpleStart",
]


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """Base of every event: when it happened (wall clock, POSIX seconds)."""

    at: float

    @property
    def kind(self) -> str:
        return type(self).__name__

    def to_json(self) -> dict[str, Any]:
        """The event's fields as the log's ``data`` object writes them (``kind`` first, bytes as hex)."""
        out: dict[str, Any] = {"kind": type(self).__name__}
        for name in _field_names(type(self)):
            value = getattr(self, name)
            if isinstance(value, tuple):
                value = [v.hex() if isinstance(v, (bytes, bytearray)) else v for v in value]
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
    message_ids: tuple[bytes, ...] = ()   # written as the reference's ``msgids`` only
    has_more: bool = False                # written as the reference's ``hasMore`` only


@dataclass(frozen=True, slots=True)
class ConnectionOpened(TraceEvent):
    peer: str
    link: str              # "n2n-in", "n2n-out", "n2c"
    version: int


@dataclass(frozen=True, slots=True)
class ConnectionClosed(TraceEvent):
    peer: str
    link: str
    error: str | None      # None for a clean close; HANDSHAKE_QUERY after a version query


#: ``ConnectionClosed.error`` of a connection that only asked for the version table (``dmq status``,
#: ``cardano-cli ping -q``): a normal exchange, logged as the reference's ``HandshakeQuery``.
HANDSHAKE_QUERY = "handshake: query answered"


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


# Start-up: what the node runs with, once each, as the reference's ``Startup.*`` lines, so that
# the journal alone answers "which configuration, which peers, where does it listen".


@dataclass(frozen=True, slots=True, eq=False)
class StartupConfiguration(TraceEvent):
    """The effective configuration (file, flags and defaults merged), as a configuration file states it."""
    config: dict[str, Any]


@dataclass(frozen=True, slots=True, eq=False)
class StartupTopology(TraceEvent):
    """The topology as read, in the topology file's shape."""
    topology: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ServerSocketUp(TraceEvent):
    """A node-to-node listening socket is up (``host:port``)."""
    socket: str


@dataclass(frozen=True, slots=True)
class LocalSocketUp(TraceEvent):
    """The node-to-client socket is up."""
    path: str


@dataclass(frozen=True, slots=True)
class PrometheusSimpleStart(TraceEvent):
    """The metrics endpoint is up."""
    host: str
    port: int


Sink = Callable[[TraceEvent], None]


def _handler(sink: Sink, cls: type) -> Sink | None:
    """What ``sink`` does with events of class ``cls``: its ``handler_for(cls)`` if it has one
    (None: it ignores them), else the sink itself, called with every event."""
    handler_for = getattr(sink, "handler_for", None)
    return sink if handler_for is None else handler_for(cls)


class Tracer:
    """Fan events out to the registered sinks. A failing sink never breaks the node.

    A sink is any callable taking an event. A sink that has ``handler_for(cls)`` is asked once
    per event class what it does with events of that class: its handler (a callable taking the
    event) or None, when it ignores them. The tracer keeps each class's handlers, so an event
    goes straight to the handlers that want it, and :meth:`wants` says whether any does: code
    that would build an event per message asks it first, so that no object is built that no
    sink reads.
    """

    def __init__(self, clock_now: Callable[[], float] = time.time) -> None:
        self._sinks: list[Sink] = []
        #: Event class -> the handlers of the sinks that want its events (built on first use).
        self._handlers: dict[type, tuple[Sink, ...]] = {}
        self.now = clock_now

    def add_sink(self, sink: Sink) -> None:
        self._sinks.append(sink)
        self._handlers.clear()

    def handlers(self, cls: type) -> tuple[Sink, ...]:
        """The handlers events of class ``cls`` go to (empty: no sink wants them)."""
        found = self._handlers.get(cls)
        if found is None:
            found = self._handlers[cls] = tuple(
                handler for handler in (_handler(sink, cls) for sink in self._sinks) if handler is not None)
        return found

    def wants(self, cls: type) -> bool:
        """Whether any sink wants events of class ``cls``."""
        found = self._handlers.get(cls)
        return bool(found if found is not None else self.handlers(cls))

    def emit(self, event: TraceEvent) -> None:
        handlers = self._handlers.get(type(event))
        if handlers is None:
            handlers = self.handlers(type(event))
        for handler in handlers:
            try:
                handler(event)
            except Exception as exc:  # a broken sink must not take a connection down
                print(f"dmq-node: trace sink {handler!r} failed: {exc}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# The log: trace-dispatcher's line shape, namespaces and severities


#: trace-dispatcher's severities, least severe first; ``Silence`` (in ``TraceOptions`` only)
#: lets nothing through.
SEVERITIES = ("Debug", "Info", "Notice", "Warning", "Error", "Critical", "Alert", "Emergency")
SILENCE = "Silence"
_RANK = {name: rank for rank, name in enumerate((*SEVERITIES, SILENCE))}

#: What ``Stdout`` backends of ``TraceOptions`` ask for; ``None`` (no such backend): human
#: lines on a terminal, JSON otherwise.
MACHINE, HUMAN, HUMAN_COLOURED = "Stdout MachineFormat", "Stdout HumanFormatUncoloured", "Stdout HumanFormatColoured"
STDOUT_BACKENDS = (MACHINE, HUMAN, HUMAN_COLOURED)

Target = tuple[str, str]  # (namespace, severity)


def _link_targets(cardano: str, suffix: str, severity: str) -> tuple[Target, Target, Target]:
    """One connection fact's targets for node-to-node, local and cardano-node links, built once."""
    return tuple((prefix + suffix, severity)
                 for prefix in ("Net.ConnectionManager.Remote", "Net.ConnectionManager.Local", cardano))


def _link_kind(link: str) -> int:
    """Which of :func:`_link_targets`' targets a link takes."""
    if link.startswith("n2n"):
        return 0
    return 1 if link == "n2c" else 2


_OPENED = _link_targets("Net.Local.Cardano.Handshake", ".ConnectionHandler.HandshakeSuccess", "Info")
_TERMINATED = _link_targets("Net.Local.Cardano.Mux", ".TerminatedConnection", "Debug")
_HANDSHAKE_FAILED = _link_targets("Net.Local.Cardano.Mux", ".ConnectionHandler.HandshakeServerError", "Info")
# The reference traces a query at Info; here it is Debug, so that a status probe every few seconds
# does not fill the log (TraceOptions "Net.ConnectionManager": "Debug" shows it).
_HANDSHAKE_QUERY = _link_targets("Net.Local.Cardano.Mux", ".ConnectionHandler.HandshakeQuery", "Debug")
_FAILED = _link_targets("Net.Local.Cardano.Mux", ".ConnectionHandler.Error", "Info")


def _opened(event: Any) -> Target:
    return _OPENED[_link_kind(event.link)]


def _closed(event: Any) -> Target:
    error = event.error
    if error is None:
        return _TERMINATED[_link_kind(event.link)]
    if error == HANDSHAKE_QUERY:
        return _HANDSHAKE_QUERY[_link_kind(event.link)]
    return (_HANDSHAKE_FAILED if error.startswith("handshake:") else _FAILED)[_link_kind(event.link)]


def _listening(event: Any) -> Target:
    return ("Net.Server.Local.Started" if event.link == "n2c" else "Net.Server.Remote.Started"), "Notice"


#: Refusals that honest traffic produces: a message two peers offered at once, or one this node
#: published that a peer delivered first; one that expired on its way.
_HONEST_REFUSALS = {"SigDuplicate": "Debug", "SigExpired": "Info"}


def _rejected_severity(event: Any) -> str:
    """A peer's (or this node's own) refused message: an Error when it costs the peer its
    connection (a protocol violation), less when honest traffic produces it. The reference logs
    every refusal at Error, so that a node catching up, offered a message by two peers at once,
    would log errors for honest traffic."""
    if event.reaction == "disconnect":
        return "Error"
    return _HONEST_REFUSALS.get(event.reason, "Warning")


#: Where each event class is logged. The reference node's namespace and severity where it
#: traces the same fact (its ``mkDMQTracers`` prefixes plus the inner names of the
#: ouroboros-network and dmq-node ``MetaTrace`` instances); this node's own facts are named in
#: the same style. A value is one target, or a function of the event for classes whose
#: namespace depends on a field (local or peer origin, link); such a function must return one
#: of a few targets, each of which gets its own precompiled writer.
ROUTES: dict[str, Target | Callable[[Any], Target]] = {
    "MessageAccepted": lambda e: (("Net.Local.SigSubmission.Server.TraceSubmitAccept", "Info") if e.origin == "local"
                                  else ("Net.SigSubmission.Inbound.AddedToMempool", "Debug")),
    "MessageRejected": lambda e: (("Net.Local.SigSubmission.Server.TraceSubmitFailure", "Warning")
                                  if e.origin == "local" else ("Net.Sig.Validation.SigValidation", _rejected_severity(e))),
    "MessageExpired": ("Mempool.Expired", "Info"),
    "MessageNotified": ("Net.Local.MsgNotification.Server.TraceMsgNotificationServerReply", "Debug"),
    "ConnectionOpened": _opened,
    "ConnectionClosed": _closed,
    "StakeViewUpdated": ("StakeView.Updated", "Info"),
    "NodeListening": _listening,
    "NodeStopped": ("Shutdown.Stopped", "Notice"),
    "StartupConfiguration": ("Startup.Configuration", "Info"),
    "StartupTopology": ("Startup.Topology", "Info"),
    "ServerSocketUp": ("Startup.DiffusionInit.ServerSocketUp", "Info"),
    "LocalSocketUp": ("Startup.DiffusionInit.LocalSocketUp", "Info"),
    "PrometheusSimpleStart": ("Startup.Prometheus", "Info"),
    # dmq.diffusion.events
    "PeerDialFailed": ("Net.ConnectionManager.Remote.ConnectError", "Info"),
    "PeerBackoff": ("Net.PeerSelection.Actions.Backoff", "Info"),
    "InboundRefused": ("Net.Server.Remote.AcceptPolicy.ConnectionHardLimit", "Warning"),
    "InboundDelayed": ("Net.Server.Remote.AcceptPolicy.ConnectionRateLimiting", "Info"),
    "PeersShared": ("Net.PeerShare.Protocol.PeerShareResult", "Debug"),
    "PeerForgotten": ("Net.PeerSelection.Selection.ForgetColdPeers", "Info"),
    "MessageOffered": ("Net.SigSubmission.V2.Outbound.TraceSigSubmissionOutboundRecvMsgRequestSigIds", "Debug"),
    "MessageSent": ("Net.SigSubmission.V2.Outbound.TraceSigSubmissionOutboundSendMsgReplySigs", "Debug"),
    # dmq.cardano_node.events
    "CardanoLinkRetry": ("Net.Local.Cardano.Link.Retry", "Warning"),
    "CardanoNodeAwaited": ("Net.Local.Cardano.Link.Waiting", "Notice"),
    "CardanoLinkWarning": ("Net.Local.Cardano.Link.Warning", "Warning"),
    "CardanoEpochChanged": ("Net.Local.LocalStateQuery.NextEpoch", "Info"),
    # dmq.descriptors
    "DescriptorLimit": ("Startup.DescriptorLimit", "Notice"),
    "DescriptorsExhausted": lambda e: (("Net.Server.Local.AcceptError" if e.link == "n2c"
                                        else "Net.Server.Remote.AcceptError"), "Warning"),
    "DescriptorsAvailable": lambda e: (("Net.Server.Local.AcceptResumed" if e.link == "n2c"
                                        else "Net.Server.Remote.AcceptResumed"), "Notice"),
    # topics.trace
    "TopicDeferred": ("Topics.Ingress.Deferred", "Debug"),
    "TopicPendingDropped": ("Topics.Ingress.PendingDropped", "Warning"),
    "TopicAcceptedLate": ("Topics.Ingress.AcceptedLate", "Info"),
    "TopicPublicationRefused": ("Topics.Publication.Refused", "Warning"),
    "TopicSubscriptionRefused": ("Topics.Subscriptions.Refused", "Warning"),
    "TopicSigningStopped": ("Topics.Publication.SigningStopped", "Error"),
    # apps.mithril_registration.trace
    "MithrilRegistrationListening": ("Apps.MithrilRegistration.Listening", "Notice"),
    "MithrilRegistrationClosed": ("Apps.MithrilRegistration.Closed", "Info"),
    "MithrilRegistrationAgreed": ("Apps.MithrilRegistration.Agreed", "Notice"),
    "MithrilRegistrationDisagreement": ("Apps.MithrilRegistration.Disagreement", "Error"),
    "MithrilRegistrationProblem": ("Apps.MithrilRegistration.Problem", "Warning"),
}


def route_of(event: TraceEvent) -> Target:
    """The namespace and severity ``event`` is logged under (``Node.<Class>`` at Info if unlisted)."""
    route = ROUTES.get(type(event).__name__)
    if route is None:
        return "Node." + type(event).__name__, "Info"
    return route(event) if callable(route) else route


def severity_threshold(namespace: str, severities: Mapping[str, str]) -> str:
    """The least severity logged for ``namespace``: its most specific ``TraceOptions`` entry.

    ``Net.Local.SigSubmission`` decides for ``Net.Local.SigSubmission.Server.TraceSubmitAccept``
    unless that name or ``Net.Local.SigSubmission.Server`` has an entry; ``""`` is the root,
    Info when absent (the reference's default).
    """
    name = namespace
    while True:
        if name in severities:
            return severities[name]
        if not name:
            return "Info"
        name = name.rpartition(".")[0]


class LogSink:
    """The node's log: one line per event that passes the severity filter, flushed at once.

    Machine lines are trace-dispatcher's (``{"at","ns","data","sev","thread","host"}``; ``data``
    holds the reference's fields for the namespace, if it has any (:mod:`dmq.trace_reference`),
    then ``event``, the class name, and the event's own fields); human lines are its
    ``[time][host:namespace](severity,thread) text``. Which one: the ``Stdout`` backend of
    ``TraceOptions`` if given, else human on a terminal and JSON otherwise.

    The node writes three lines per Mithril signer message, so the cost per line is kept
    small: everything that depends only on the event class and its target (namespace,
    severity, filter verdict, keys) is compiled once into a writer; a line then costs the
    field values, the time stamp (its date and time part is kept for the current second) and
    one write.
    """

    def __init__(self, stream: TextIO = sys.stdout, *, severities: Mapping[str, str] | None = None,
                 backend: str | None = None, host: str | None = None) -> None:
        self._stream = stream
        self._severities = dict(severities or {})
        if backend is None:
            isatty = getattr(stream, "isatty", None)
            backend = HUMAN_COLOURED if isatty is not None and isatty() else MACHINE
        if backend not in STDOUT_BACKENDS:
            raise ValueError(f"unknown log backend {backend!r}")
        self.backend = backend
        self._host = host if host is not None else socket.gethostname()
        self._writers: dict[Any, Callable[[TraceEvent], str] | None] = {}
        self._second = -1
        self._stamp = ""

    def passes(self, namespace: str, severity: str) -> bool:
        return _RANK[severity] >= _RANK[severity_threshold(namespace, self._severities)]

    def __call__(self, event: TraceEvent) -> None:
        line = self.format(event)
        if line is not None:
            self._stream.write(line)
            self._stream.flush()

    def handler_for(self, cls: type) -> Callable[[TraceEvent], None] | None:
        """What the log does with events of ``cls`` (:class:`Tracer`): nothing when the class has
        one target and the severity filter drops it; that target's writer when it passes; when
        the target depends on the event, the event's target's writer (each compiled once), what
        :meth:`__call__` does without the look-ups by class name."""
        route = ROUTES.get(cls.__name__)
        if callable(route):
            return self._routed_handler(cls, route)
        writer = self._writers.get(cls, _MISSING)
        if writer is _MISSING:
            writer = self._writers[cls] = self._compile(cls, route or ("Node." + cls.__name__, "Info"))
        if writer is None:
            return None
        stream = self._stream

        def write(event: TraceEvent) -> None:
            stream.write(writer(event))
            stream.flush()

        return write

    def _routed_handler(self, cls: type, route: Callable[[Any], Target]) -> Callable[[TraceEvent], None]:
        """The handler of a class whose target depends on the event: one writer per target."""
        writers, stream, compile_ = self._writers, self._stream, self._compile

        def write(event: TraceEvent) -> None:
            target = route(event)
            writer = writers.get((cls, target), _MISSING)
            if writer is _MISSING:
                writer = writers[cls, target] = compile_(cls, target)
            if writer is not None:
                stream.write(writer(event))
                stream.flush()

        return write

    def format(self, event: TraceEvent) -> str | None:
        """The line ``event`` is logged as, or ``None`` when the severity filter drops it."""
        cls = type(event)
        route = ROUTES.get(cls.__name__)
        key = (cls, route(event)) if callable(route) else cls
        writer = self._writers.get(key, _MISSING)
        if writer is _MISSING:
            writer = self._writers[key] = self._compile(cls, route_of(event))
        return None if writer is None else writer(event)

    def _compile(self, cls: type, target: Target) -> Callable[[TraceEvent], str] | None:
        namespace, severity = target
        if not self.passes(namespace, severity):
            return None
        if self.backend == MACHINE:
            return _machine_writer(cls, namespace, severity, self._host, self._time)
        return _human_writer(cls, namespace, severity, self._host, self._time, self.backend == HUMAN_COLOURED)

    def _time(self, at: float) -> tuple[str, int]:
        """``at`` as ``YYYY-MM-DDTHH:MM:SS`` (UTC) and microseconds; the first part is cached per second."""
        try:
            second = math.floor(at)
            micro = round((at - second) * 1_000_000)
            if micro == 1_000_000:
                second, micro = second + 1, 0
            if second != self._second:
                self._stamp = datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
                self._second = second
        except (ValueError, OverflowError, OSError):  # not a time the calendar can show
            return repr(at), -1
        return self._stamp, micro


_MISSING = object()


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.name != "at")
    return names


def _machine_writer(cls: type, namespace: str, severity: str, host: str,
                    clock: Callable[[float], tuple[str, int]]) -> Callable[[TraceEvent], str]:
    """A function writing one event of ``cls`` as trace-dispatcher's JSON line.

    ``data`` holds, in order: the reference's fields where ``namespace`` is also the
    reference's (:mod:`dmq.trace_reference`), ``kind`` (the event class) unless the reference
    took that name, ``event`` (the event class, always), then this node's fields.
    """
    reference = reference_fields_for(namespace)
    ref_keys: tuple[str, ...] = reference.keys if reference is not None else ()
    renames = reference.renames if reference is not None else {}
    own = []
    for name in _field_names(cls):
        key = renames.get(name, name)
        if key is None:           # carried by a reference field already
            continue
        if key in ref_keys or key in ("kind", "event"):
            raise ValueError(f"{cls.__name__}.{name} would overwrite the reference's {key!r} in {namespace}")
        own.append(("," + _encode(key) + ":", name))
    fields = tuple(own)
    kind = _encode(cls.__name__)
    ref_prefixes = tuple(("," if i else "") + _encode(key) + ":" for i, key in enumerate(ref_keys))
    ref_values = reference.values if reference is not None else None
    if "kind" in ref_keys:
        own_head = ',"event":' + kind
    else:
        own_head = ("," if ref_keys else "") + '"kind":' + kind + ',"event":' + kind
    head = '","ns":' + _encode(namespace) + ',"data":{'
    tail = '},"sev":"' + severity + '","thread":"'
    end = '","host":' + _encode(host) + "}\n"
    get_thread = threading.get_native_id

    def line(event: TraceEvent) -> str:
        stamp, micro = clock(event.at)
        parts = ['{"at":"', stamp, ".%06dZ" % micro if micro >= 0 else "", head]
        if ref_values is not None:
            for prefix, value in zip(ref_prefixes, ref_values(event)):
                parts.append(prefix)
                parts.append(_json_value(value))
        parts.append(own_head)
        for key, name in fields:
            parts.append(key)
            parts.append(_json_value(getattr(event, name)))
        parts.append(tail)
        parts.append(str(get_thread()))
        parts.append(end)
        return "".join(parts)

    return line


_COLOURS = {"Emergency": "31", "Alert": "31", "Critical": "31", "Error": "31", "Warning": "33", "Notice": "35",
            "Info": "34"}


def _human_writer(cls: type, namespace: str, severity: str, host: str,
                  clock: Callable[[float], tuple[str, int]], coloured: bool) -> Callable[[TraceEvent], str]:
    """A function writing one event of ``cls`` as trace-dispatcher's human line, ``key=value`` text."""
    names = _field_names(cls)
    keys = tuple((" " + name + "=", name) for name in names)
    where = "][" + host + ":" + namespace + "](" + severity + ","
    colour = _COLOURS.get(severity) if coloured else None
    start, stop = ("\x1b[" + colour + "m", "\x1b[0m") if colour else ("", "")
    kind = cls.__name__
    get_thread = threading.get_native_id

    def line(event: TraceEvent) -> str:
        stamp, micro = clock(event.at)
        parts = [start, "[", stamp.replace("T", " "), ".%04dZ" % (micro // 100) if micro >= 0 else "",
                 where, str(get_thread()), ")", stop, " ", kind]
        for key, name in keys:
            parts.append(key)
            parts.append(_human_value(getattr(event, name)))
        parts.append("\n")
        return "".join(parts)

    return line


def _human_value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, tuple):
        return ",".join(map(_human_value, value)) or "-"
    text = str(value)
    return text if text and " " not in text and "\n" not in text else _encode_text(text)


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


# ---------------------------------------------------------------------------------------------
# Reading the log back


@dataclass(frozen=True, slots=True)
class LogEvent:
    """One machine-readable log line, read back: what tools and tests look at."""

    at: str                 # ISO-8601 UTC, as written
    ns: str
    sev: str
    data: dict[str, Any]    # the reference's fields, then ``event`` (the class name) and the event's own

    @property
    def kind(self) -> str | None:
        """The event class: ``event`` (``kind`` in lines written before ``event`` existed)."""
        return self.data.get("event", self.data.get("kind"))

    @property
    def timestamp(self) -> float:
        """``at`` as POSIX seconds."""
        return datetime.fromisoformat(self.at).timestamp()


def read_log_line(line: str) -> LogEvent | None:
    """The event of one log line, or ``None`` for anything else (a human line, a partial line)."""
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict) or "ns" not in obj:
        return None
    return LogEvent(str(obj.get("at")), obj["ns"], str(obj.get("sev")), obj["data"])


def read_log(text: str, kind: str | None = None) -> list[LogEvent]:
    """Every event of a log's text (optionally of one event class), in order."""
    events = (read_log_line(line) for line in text.splitlines())
    return [e for e in events if e is not None and (kind is None or e.kind == kind)]
