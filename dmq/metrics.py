"""Prometheus metrics: a trace sink, and a tiny trio HTTP endpoint that serves them.

Series carry the reference node's prefix (``dmq_node_``, ``TraceOptionMetricsPrefix``) so
dashboards built for it keep working. The endpoint is served by trio itself rather than
prometheus-client's threaded server: one request, one reply, no thread in the node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

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

__all__ = ["NodeMetrics", "serve_metrics"]


class NodeMetrics:
    """The node's series, updated from trace events and from live gauges."""

    def __init__(self, prefix: str = "dmq_node_") -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.accepted = Counter(f"{prefix}messages_accepted", "Messages accepted into the mempool",
                                ["origin"], registry=r)
        self.rejected = Counter(f"{prefix}messages_rejected", "Messages rejected by validation",
                                ["reason", "origin"], registry=r)
        self.expired = Counter(f"{prefix}messages_expired", "Messages removed at expiry", registry=r)
        self.notified = Counter(f"{prefix}messages_notified", "Messages delivered to local subscribers",
                                registry=r)
        self.accepted_bytes = Counter(f"{prefix}bytes_accepted", "Wire bytes of accepted messages", registry=r)
        self.connections = Gauge(f"{prefix}connections", "Open connections", ["link"], registry=r)
        self.mempool_messages = Gauge(f"{prefix}mempool_messages", "Messages held", registry=r)
        self.mempool_bytes = Gauge(f"{prefix}mempool_bytes", "Wire bytes held", registry=r)
        self.stake_pools = Gauge(f"{prefix}stake_pools_eligible", "Pools with non-zero set stake", registry=r)
        # Labelled children, created on first use as ``labels()`` would (a series appears
        # only once something happened to it).
        self._accepted_by_origin: dict[str, Counter] = {}
        self._connections_by_link: dict[str, Gauge] = {}
        self._updates: dict[type, Callable[[Any], None]] = {
            MessageAccepted: self._on_accepted,
            MessageRejected: self._on_rejected,
            MessageExpired: self._on_expired,
            MessageNotified: self._on_notified,
            ConnectionOpened: self._on_opened,
            ConnectionClosed: self._on_closed,
            StakeViewUpdated: self._on_stake_view,
        }

    def bind_mempool(self, count: Callable[[], float], size: Callable[[], float]) -> None:
        self.mempool_messages.set_function(count)
        self.mempool_bytes.set_function(size)

    def __call__(self, event: TraceEvent) -> None:
        update = self._updates.get(type(event))
        if update is not None:
            update(event)

    # One update per event class, looked up by type: the trace stream carries several
    # events per Mithril signer message, and a chain of isinstance checks plus a labels()
    # lookup per event were a visible share of the node's CPU.
    def _on_accepted(self, event: MessageAccepted) -> None:
        origin = "local" if event.origin == "local" else "peer"
        counter = self._accepted_by_origin.get(origin)
        if counter is None:
            counter = self._accepted_by_origin[origin] = self.accepted.labels(origin)
        counter.inc()
        self.accepted_bytes.inc(event.size)

    def _on_rejected(self, event: MessageRejected) -> None:
        reason = event.reason.split(" ", 1)[0]
        self.rejected.labels(reason, "local" if event.origin == "local" else "peer").inc()

    def _on_expired(self, event: MessageExpired) -> None:
        self.expired.inc()

    def _on_notified(self, event: MessageNotified) -> None:
        self.notified.inc(event.count)

    def _on_opened(self, event: ConnectionOpened) -> None:
        self._connections_of(event.link).inc()

    def _on_closed(self, event: ConnectionClosed) -> None:
        # A connection refused at the handshake was never counted as open.
        if not (event.error or "").startswith("handshake:"):
            self._connections_of(event.link).dec()

    def _on_stake_view(self, event: StakeViewUpdated) -> None:
        self.stake_pools.set(event.eligible)

    def _connections_of(self, link: str) -> Gauge:
        gauge = self._connections_by_link.get(link)
        if gauge is None:
            gauge = self._connections_by_link[link] = self.connections.labels(link)
        return gauge

    def render(self) -> bytes:
        return generate_latest(self.registry)


async def serve_metrics(metrics: NodeMetrics, port: int, host: str = "127.0.0.1", *,
                        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """Answer every HTTP request on ``host:port`` with the current metrics."""

    async def handle(stream: trio.abc.Stream) -> None:
        with trio.move_on_after(5):
            request = b""
            while b"\r\n\r\n" not in request and len(request) < 8192:
                chunk = await stream.receive_some(4096)
                if not chunk:
                    return
                request += chunk
            body = metrics.render()
            head = (f"HTTP/1.1 200 OK\r\nContent-Type: {CONTENT_TYPE_LATEST}\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
            await stream.send_all(head + body)
        await stream.aclose()

    listeners = await trio.open_tcp_listeners(port, host=host)
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(handle, listeners)
