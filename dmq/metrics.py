"""Prometheus metrics: a trace sink, and a tiny trio HTTP endpoint that serves them.

Series carry the reference node's prefix (``dmq_node_``, ``TraceOptionMetricsPrefix``) so
dashboards built for it keep working. The endpoint is served by trio itself rather than
prometheus-client's threaded server: one request, one reply, no thread in the node.
"""

from __future__ import annotations

from collections.abc import Callable

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

    def bind_mempool(self, count: Callable[[], float], size: Callable[[], float]) -> None:
        self.mempool_messages.set_function(count)
        self.mempool_bytes.set_function(size)

    def __call__(self, event: TraceEvent) -> None:
        if isinstance(event, MessageAccepted):
            self.accepted.labels("local" if event.origin == "local" else "peer").inc()
            self.accepted_bytes.inc(event.size)
        elif isinstance(event, MessageRejected):
            reason = event.reason.split(" ", 1)[0]
            self.rejected.labels(reason, "local" if event.origin == "local" else "peer").inc()
        elif isinstance(event, MessageExpired):
            self.expired.inc()
        elif isinstance(event, MessageNotified):
            self.notified.inc(event.count)
        elif isinstance(event, ConnectionOpened):
            self.connections.labels(event.link).inc()
        elif isinstance(event, ConnectionClosed):
            # A connection refused at the handshake was never counted as open.
            if not (event.error or "").startswith("handshake:"):
                self.connections.labels(event.link).dec()
        elif isinstance(event, StakeViewUpdated):
            self.stake_pools.set(event.eligible)

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
