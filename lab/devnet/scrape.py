"""Reading a node's Prometheus endpoint the way a Prometheus server does: HTTP GET, text format.

The live view and the link check ask each node for a few series (messages held, open
connections per link, accepted and rejected counts). The request is plain HTTP/1.1 on a
trio TCP stream with a deadline; the exposition text is parsed by ``prometheus_client``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

from dmq.metrics import read_page

__all__ = ["ScrapeError", "NodeSample", "parse_node_sample", "scrape_text", "scrape_node", "Connect"]

#: Opens the TCP stream to the endpoint; the default is ``trio.open_tcp_stream(host, port)``
#: (the netlab connects from inside a node's network namespace instead).
Connect = Callable[[], Awaitable[trio.abc.Stream]]

_MAX_REPLY = 4 * 1024 * 1024


class ScrapeError(Exception):
    """The endpoint did not answer with a metrics page in time."""


@dataclass(frozen=True, slots=True)
class NodeSample:
    """The series of one node the devnet shows, at one moment."""

    messages_held: int
    connections: dict[str, int] = field(default_factory=dict)   # link -> open connections
    accepted: dict[str, int] = field(default_factory=dict)      # origin (local / peer) -> count
    rejected: dict[str, int] = field(default_factory=dict)      # reason -> count

    @property
    def outbound_peers(self) -> int:
        return self.connections.get("n2n-out", 0)

    @property
    def inbound_peers(self) -> int:
        return self.connections.get("n2n-in", 0)


#: ``direction`` of a hot peer's ``peer_state_int`` (who opened the connection) -> the link it counts.
#: (``connectionManager_*Conns`` count as the reference does: a duplex connection both ways.)
_DIRECTIONS = {"inbound": "n2n-in", "outbound": "n2n-out"}
_ACCEPTED = {"localSubmissions_accepted_counter": "local", "submissions_accepted_counter": "peer"}


def parse_node_sample(text: str, prefix: str = "dmq_node_") -> NodeSample:
    """The devnet's series from a metrics page (text exposition format)."""
    held = 0
    connections: dict[str, int] = {"n2n-in": 0, "n2n-out": 0}
    accepted: dict[str, int] = defaultdict(int)
    rejected: dict[str, int] = defaultdict(int)
    for name, labels, number in read_page(text, prefix):
        value = int(number)
        if name == "txsInMempool_int":
            held = value
        elif name == "peer_state_int" and labels.get("state") == "hot" and labels.get("direction") in _DIRECTIONS:
            connections[_DIRECTIONS[labels["direction"]]] += value
        elif name == "localConnectionManager_inboundConns_int":
            connections["n2c"] = value
        elif name in _ACCEPTED:
            accepted[_ACCEPTED[name]] += value
        elif name == "sigValidation_rejected_counter" and value:
            rejected[labels.get("reason", "")] += value
    return NodeSample(held, connections, dict(accepted), dict(rejected))


async def _get(host: str, port: int, path: str, connect: Connect | None) -> str:
    stream = await (connect() if connect is not None else trio.open_tcp_stream(host, port))
    async with stream:
        request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
        await stream.send_all(request.encode())
        reply = bytearray()
        while chunk := await stream.receive_some(65536):
            reply += chunk
            if len(reply) > _MAX_REPLY:
                raise ScrapeError(f"{host}:{port}{path}: reply larger than {_MAX_REPLY} bytes")
    head, separator, body = bytes(reply).partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split()
    if not separator or len(status) < 2 or status[1] != b"200":
        raise ScrapeError(f"{host}:{port}{path}: not a 200 reply ({bytes(head[:60])!r})")
    return body.decode("utf-8", errors="replace")


async def scrape_text(port: int, *, host: str = "127.0.0.1", timeout: float = 2.0,
                      connect: Connect | None = None) -> str:
    """The metrics page ``http://host:port/metrics``; ScrapeError when it fails or times out."""
    try:
        with trio.fail_after(timeout):
            return await _get(host, port, "/metrics", connect)
    except trio.TooSlowError:
        raise ScrapeError(f"{host}:{port}: no metrics within {timeout} s") from None
    except OSError as exc:
        raise ScrapeError(f"{host}:{port}: {exc.strerror or exc}") from None
    except trio.BrokenResourceError as exc:
        # A reset while reading (trio's stream wraps the OSError): a busy or dying node.
        cause = exc.__cause__
        raise ScrapeError(f"{host}:{port}: {getattr(cause, 'strerror', None) or cause or exc}") from None


async def scrape_node(port: int, *, host: str = "127.0.0.1", timeout: float = 2.0,
                      prefix: str = "dmq_node_", connect: Connect | None = None) -> NodeSample:
    """One scrape of ``http://host:port/metrics``; ScrapeError when it fails or times out."""
    text = await scrape_text(port, host=host, timeout=timeout, connect=connect)
    try:
        return parse_node_sample(text, prefix)
    except ValueError as exc:
        raise ScrapeError(f"{host}:{port}: unreadable metrics page: {exc}") from None
