"""Showing a running devnet: a live table on a terminal, a line every few seconds elsewhere.

On a terminal, ``rich`` redraws one table in place: per node, the messages it holds (from its
Prometheus endpoint), what its aggregator received, the arrival rate and latency
percentiles. Without a terminal (CI, a pipe, ``--no-live``) the same figures are printed as
one line every few seconds, so logs stay readable and short.
"""

from __future__ import annotations

from typing import Protocol

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from .status import DevnetStatus

__all__ = ["DevnetView", "LiveTableView", "LineView", "make_view", "status_table", "status_line"]


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def _headline(status: DevnetStatus) -> str:
    return (f"{status.phase} {status.elapsed:5.1f}/{status.duration:g} s | published {status.attempted}: "
            f"{status.accepted} accepted, {status.rejected} rejected, {status.failed} failed")


def status_table(status: DevnetStatus) -> Table:
    table = Table(title=_headline(status), title_justify="left")
    for header in ("node", "port", "pools", "peers", "held", "received", "dup", "msg/s", "p50", "p99"):
        table.add_column(header, justify="left" if header == "node" else "right")
    for node in status.nodes:
        peers = "?" if node.peers is None else f"{node.peers}/{node.links}"
        table.add_row(node.name, str(node.port), str(node.pools), peers, _count(node.held), _count(node.received),
                      str(node.duplicates), f"{node.rate:.1f}", _ms(node.p50), _ms(node.p99))
    return table


def status_line(status: DevnetStatus) -> str:
    nodes = "; ".join(f"{n.name} held {_count(n.held)} recv {_count(n.received)} p50 {_ms(n.p50)} p99 {_ms(n.p99)}"
                      for n in status.nodes)
    return f"[devnet] {_headline(status)} | {nodes}"


class DevnetView(Protocol):
    def __enter__(self) -> DevnetView: ...

    def __exit__(self, *exc: object) -> None: ...

    def update(self, status: DevnetStatus, now: float) -> None:
        """Show ``status``; ``now`` is a monotonic time in seconds (for pacing)."""


class LiveTableView:
    """The table, redrawn in place on a terminal."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._live = Live(Text("starting the devnet..."), console=console, refresh_per_second=4, transient=False)

    def __enter__(self) -> LiveTableView:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(None, None, None)

    def update(self, status: DevnetStatus, now: float) -> None:
        self._live.update(Group(status_table(status)))


class LineView:
    """One line every ``interval`` seconds (and for every phase change)."""

    def __init__(self, console: Console, interval: float = 5.0) -> None:
        self.console = console
        self.interval = interval
        self._last_at: float | None = None
        self._last_phase: str | None = None

    def __enter__(self) -> LineView:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, status: DevnetStatus, now: float) -> None:
        due = self._last_at is None or now - self._last_at >= self.interval
        if due or status.phase != self._last_phase:
            self.console.print(status_line(status), highlight=False, soft_wrap=True)
            self._last_at, self._last_phase = now, status.phase


def make_view(console: Console, live: bool) -> DevnetView:
    """The live table when asked for and on a terminal, lines otherwise."""
    if live and console.is_terminal:
        return LiveTableView(console)
    return LineView(console)
