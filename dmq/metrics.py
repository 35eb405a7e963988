"""Prometheus metrics: a trace sink, and a tiny trio HTTP endpoint that serves them.

Series are named the way trace-dispatcher names the reference node's metrics: the prefix
(``TraceOptionMetricsPrefix``, ``dmq_node_``), a dotted camel-case name with dots made
underscores, and a suffix for the kind of value: ``_int`` (a gauge), ``_counter`` (a count
since start) or ``_real`` (a gauge with a fraction). The ``nosuffix`` modifier of a
``PrometheusSimple`` backend drops the suffix, as it does for the reference. Where the
reference (dmq-node, through ouroboros-network's tracers, or cardano-node) exports the same
quantity, the series has its name, so dashboards built for it find them:

- ``submissions.{submitted,accepted,rejected}``: messages pulled from peers (sig-submission inbound);
- ``connectionManager.{fullDuplexConns,duplexConns,unidirectionalConns,inboundConns,outboundConns}``
  and ``peerSelection.*``: node-to-node connections and outbound peers
  (:mod:`dmq.diffusion.prometheus`);
- ``txsInMempool``, ``mempoolBytes``: what the mempool holds (cardano-node's names);
- ``server.descriptorsExhausted``, ``process.openDescriptors``: this node's own, for the
  ``nofile`` limit (docs/operations.md); ``process.heapTrims``: its C heap trims
  (:mod:`dmq.heap_trim`);
- ``currentKESPeriod``, ``remainingKESPeriods``, ``operationalCertificate{Start,Expiry}KESPeriod``:
  the node's own signing key (cardano-node's forging names).

The page is written as trace-dispatcher's ``PrometheusSimple`` writes the reference's
(``Cardano.Logging.Prometheus.Exposition``): a ``# TYPE … counter`` line for a ``_counter``
series and ``# TYPE … gauge`` for an ``_int`` one, whole numbers printed as integers, and no
type for a ``_real`` one (the reference keeps those as text labels). The names keep their
``_counter`` ending: the page is Prometheus's text format 0.0.4, which adds no ``_total``.
Labelled series of this node's own exist from the start with every known label at zero (a
rejection reason that never happened reads 0, not "no data"), so ``rate()`` and alerts see
the first event. Counters are plain integers updated per event and read at scrape time: the
trace stream carries several events per Mithril signer message, and a labelled
prometheus-client counter per event was a visible share of the node's CPU. The endpoint is
served by trio itself rather than prometheus-client's threaded server: one request, one
reply, no thread in the node.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import trio
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from dmq.descriptors import DescriptorsExhausted, open_descriptors
from dmq.http_get import serve_get
from dmq.trace import (
    ConnectionClosed,
    ConnectionOpened,
    MessageAccepted,
    MessageExpired,
    MessageNotified,
    MessageRejected,
    StakeViewUpdated,
    TraceEvent,
)
from dmq.validation.errors import SigValidationError, TopicRejected

__all__ = ["SeriesNames", "Family", "NodeMetrics", "REJECT_REASONS", "ORIGINS", "render_page", "read_page",
           "serve_metrics", "CONTENT_TYPE"]

_SUFFIXES = {"int": "_int", "counter": "_counter", "real": "_real"}
#: The exposition type of each kind of series, as trace-dispatcher writes it.
_TYPES = {"int": "gauge", "counter": "counter", "real": "unknown"}

#: The text format the page is written in (no ``_total`` is added to counters in it).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: Every rejection reason the node can give: the reference's ``SigValidationError``
#: constructors (a topic's own reasons, ``topic:…``, come and go with the topic adapters).
REJECT_REASONS: tuple[str, ...] = tuple(sorted(
    cls.__name__ for cls in SigValidationError.__subclasses__() if cls is not TopicRejected))
#: Where a message came from, as the ``origin`` label says it.
ORIGINS = ("local", "peer")


class SeriesNames:
    """Full series names: ``names.of("submissions.accepted", "counter")`` -> ``dmq_node_submissions_accepted_counter``."""

    def __init__(self, prefix: str = "dmq_node_", no_suffix: bool = False) -> None:
        self.prefix = prefix.replace(".", "_")
        self.no_suffix = no_suffix

    def of(self, name: str, kind: str) -> str:
        suffix = "" if self.no_suffix else _SUFFIXES[kind]
        return self.prefix + name.replace(".", "_") + suffix

    def family(self, name: str, kind: str, documentation: str, labels: list[str] | None = None) -> Family:
        """An empty family for ``name``, filled with ``add_metric(label_values, value)``."""
        return Family(self.of(name, kind), documentation, kind, labels or [])


class Family(Metric):
    """One series family under its exact name; ``kind`` (``int``, ``counter``, ``real``) decides
    its exposition type and how its values print."""

    def __init__(self, name: str, documentation: str, kind: str, labels: list[str]) -> None:
        super().__init__(name, documentation, _TYPES[kind])
        self.kind = kind
        self._labels = tuple(labels)

    def add_metric(self, label_values: list[str], value: float) -> None:
        self.add_sample(self.name, dict(zip(self._labels, label_values)), value)


def render_page(registry: CollectorRegistry) -> bytes:
    """Every family of ``registry`` in the text format, typed and valued as trace-dispatcher does."""
    lines: list[str] = []
    for family in registry.collect():
        kind = getattr(family, "kind", None)
        if family.documentation:
            lines.append(f"# HELP {family.name} {_escape_help(family.documentation)}")
        if family.type != "unknown":
            lines.append(f"# TYPE {family.name} {family.type}")
        for sample in family.samples:
            labels = ",".join(f'{key}="{_escape_label(value)}"' for key, value in sorted(sample.labels.items()))
            value = _value(sample.value, kind, family.type)
            lines.append(f"{sample.name}{{{labels}}} {value}" if labels else f"{sample.name} {value}")
    return ("\n".join(lines) + "\n").encode()


def read_page(text: str, prefix: str = "dmq_node_") -> Iterator[tuple[str, dict[str, str], float]]:
    """The samples of a metrics page written by :func:`render_page`: (name after ``prefix``, labels, value).

    prometheus-client's parser names a typed counter's samples ``…_total``; the page has no
    such name, so it is undone here and tools read the series under the names the page shows.
    """
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name
            if family.type == "counter" and name == family.name + "_total":
                name = family.name
            if name.startswith(prefix):
                yield name[len(prefix):], sample.labels, sample.value


def _value(value: float, kind: str | None, typ: str) -> str:
    """An ``_int``/``_counter`` value as a whole number, so is a whole value of another typed family
    (a prometheus-client ``Gauge``); a ``_real`` one as a float, in Prometheus's spelling."""
    if kind in ("int", "counter") or isinstance(value, int):
        return str(int(value))
    if kind is None and typ in ("gauge", "counter") and float(value).is_integer():
        return str(int(value))
    return floatToGoString(value)


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class NodeMetrics(Collector):
    """The node's series: counters from trace events, gauges read live at scrape time."""

    def __init__(self, prefix: str = "dmq_node_", no_suffix: bool = False) -> None:
        self.names = SeriesNames(prefix, no_suffix)
        self.registry = CollectorRegistry()
        # Per event; keys of the Counters are label values.
        self.peer_accepted = 0
        self.peer_rejected = 0
        self.local_accepted = 0
        self.local_rejected = 0
        #: (reason, origin) -> count, every known pair from the start.
        self.rejected_by_reason: Counter[tuple[str, str]] = Counter(
            {(reason, origin): 0 for reason in REJECT_REASONS for origin in ORIGINS})
        self.accepted_bytes = 0
        self.expired = 0
        self.notified = 0
        self.connections: Counter[str] = Counter()                        # link -> open
        self.exhausted: Counter[str] = Counter()                          # link -> accept exhaustion episodes
        self.stake: StakeViewUpdated | None = None
        self._mempool: tuple[Callable[[], float], Callable[[], float]] | None = None
        self._database: Path | None = None
        self._kes: tuple[Callable[[], int], int, int] | None = None
        self._heap_trims: Callable[[], int] | None = None
        self._updates: dict[type, Callable[[Any], None]] = {
            MessageAccepted: self._on_accepted,
            MessageRejected: self._on_rejected,
            MessageExpired: self._on_expired,
            MessageNotified: self._on_notified,
            ConnectionOpened: self._on_opened,
            ConnectionClosed: self._on_closed,
            StakeViewUpdated: self._on_stake_view,
            DescriptorsExhausted: self._on_exhausted,
        }
        self.registry.register(self)

    def bind_mempool(self, count: Callable[[], float], size: Callable[[], float]) -> None:
        self._mempool = (count, size)

    def bind_heap_trims(self, trims: Callable[[], int]) -> None:
        """Report how many times the process has trimmed its C heap (:mod:`dmq.heap_trim`)."""
        self._heap_trims = trims

    def bind_database(self, path: Path) -> None:
        """Report the size of the store at ``path`` and the free space of its file system."""
        self._database = Path(path)

    def bind_kes(self, current_period: Callable[[], int], start_period: int, max_evolutions: int) -> None:
        """Report the node's signing key: the current KES period and how many remain before the
        operational certificate (valid from ``start_period`` for ``max_evolutions``) expires."""
        self._kes = (current_period, start_period, max_evolutions)

    def __call__(self, event: TraceEvent) -> None:
        update = self._updates.get(type(event))
        if update is not None:
            update(event)

    def handler_for(self, cls: type) -> Callable[[Any], None] | None:
        """The update for events of ``cls``, None for a class no series counts (``Tracer``)."""
        return self._updates.get(cls)

    # One update per event class, looked up by type (the trace stream is per message).
    def _on_accepted(self, event: MessageAccepted) -> None:
        if event.origin == "local":
            self.local_accepted += 1
        else:
            self.peer_accepted += 1
        self.accepted_bytes += event.size

    def _on_rejected(self, event: MessageRejected) -> None:
        origin = "local" if event.origin == "local" else "peer"
        if origin == "local":
            self.local_rejected += 1
        else:
            self.peer_rejected += 1
        self.rejected_by_reason[event.reason.split(" ", 1)[0], origin] += 1

    def _on_expired(self, event: MessageExpired) -> None:
        self.expired += 1

    def _on_notified(self, event: MessageNotified) -> None:
        self.notified += event.count

    def _on_opened(self, event: ConnectionOpened) -> None:
        self.connections[event.link] += 1

    def _on_closed(self, event: ConnectionClosed) -> None:
        # A connection refused at the handshake was never counted as open.
        if not (event.error or "").startswith("handshake:"):
            self.connections[event.link] -= 1

    def _on_exhausted(self, event: DescriptorsExhausted) -> None:
        self.exhausted[event.link] += 1

    def _on_stake_view(self, event: StakeViewUpdated) -> None:
        self.stake = event

    def collect(self) -> Iterator[Metric]:
        n = self.names
        counters = (
            ("submissions.submitted", "Messages pulled from peers", self.peer_accepted + self.peer_rejected),
            ("submissions.accepted", "Messages pulled from peers and accepted", self.peer_accepted),
            ("submissions.rejected", "Messages pulled from peers and rejected", self.peer_rejected),
            ("localSubmissions.accepted", "Messages submitted by local clients and accepted", self.local_accepted),
            ("localSubmissions.rejected", "Messages submitted by local clients and rejected", self.local_rejected),
            ("mempool.acceptedBytes", "Wire bytes of accepted messages", self.accepted_bytes),
            ("mempool.expired", "Messages removed at expiry", self.expired),
            ("localNotification.delivered", "Messages delivered to local subscribers", self.notified),
        )
        for name, doc, value in counters:
            family = n.family(name, "counter", doc)
            family.add_metric([], value)
            yield family
        by_reason = n.family("sigValidation.rejected", "counter", "Rejected messages by reason and origin",
                             ["reason", "origin"])
        for (reason, origin), count in sorted(self.rejected_by_reason.items()):
            by_reason.add_metric([reason, origin], count)
        yield by_reason
        exhausted = n.family("server.descriptorsExhausted", "counter",
                             "Episodes of a listener unable to accept, out of descriptors or memory", ["link"])
        for link in ("n2c", "n2n-in"):
            exhausted.add_metric([link], self.exhausted[link])
        yield exhausted
        if self._heap_trims is not None:
            trims = n.family("process.heapTrims", "counter", "Trims of the C heap, which give free pages back")
            trims.add_metric([], self._heap_trims())
            yield trims
        held = open_descriptors()
        if held is not None:
            yield _gauge(n, "process.openDescriptors", "File descriptors the node holds", held)
        yield _gauge(n, "localConnectionManager.inboundConns", "Local clients connected", self.connections["n2c"])
        if self._mempool is not None:
            count, size = self._mempool
            yield _gauge(n, "txsInMempool", "Messages held in the mempool", count())
            yield _gauge(n, "mempoolBytes", "Wire bytes held in the mempool", size())
        if self.stake is not None:
            stake = self.stake
            yield _gauge(n, "stakeView.epoch", "Epoch of the stake snapshot, -1 when it has none",
                         -1 if stake.epoch is None else stake.epoch)
            yield _gauge(n, "stakeView.pools", "Pools in the stake snapshot", stake.pools)
            yield _gauge(n, "stakeView.eligiblePools", "Pools with non-zero stake", stake.eligible)
        if self._database is not None:
            yield from self._database_series()
        if self._kes is not None:
            yield from self._kes_series()

    def _database_series(self) -> Iterator[Metric]:
        path = self._database
        try:
            size = sum(entry.stat().st_size for entry in os.scandir(path) if entry.is_file())
            stats = os.statvfs(path)
        except OSError:
            return
        yield _gauge(self.names, "database.sizeBytes", "Bytes of the message store's files", size)
        yield _gauge(self.names, "database.freeBytes", "Bytes free on the store's file system",
                     stats.f_bavail * stats.f_frsize)

    def _kes_series(self) -> Iterator[Metric]:
        current_period, start, evolutions = self._kes
        n = self.names
        expiry = start + evolutions
        yield _gauge(n, "operationalCertificateStartKESPeriod", "First KES period of the operational certificate",
                     start)
        yield _gauge(n, "operationalCertificateExpiryKESPeriod", "KES period the operational certificate expires at",
                     expiry)
        try:
            current = current_period()
        except ValueError:  # the clock is before the network's start
            return
        yield _gauge(n, "currentKESPeriod", "The current KES period", current)
        yield _gauge(n, "remainingKESPeriods", "KES periods before the operational certificate expires",
                     max(0, expiry - current))

    def render(self) -> bytes:
        return render_page(self.registry)


def _gauge(names: SeriesNames, name: str, documentation: str, value: float) -> Metric:
    family = names.family(name, "int", documentation)
    family.add_metric([], value)
    return family


async def serve_metrics(metrics: NodeMetrics, port: int, host: str = "127.0.0.1", *,
                        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """Answer every HTTP request on ``host:port`` with the current metrics."""
    await serve_get(lambda path: (200, CONTENT_TYPE, metrics.render()), port, host, task_status=task_status)
