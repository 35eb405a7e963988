"""Progress of long jobs: one status line per stage while it runs, one line when it ends."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from rich.console import Console

__all__ = ["Progress"]


class Progress:
    """``with progress.stage("ingest run-1"): ...`` shows a spinner, then ``✓ ingest run-1 (2.1 s)``."""

    def __init__(self, console: Console | None = None, *, enabled: bool = True) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        #: (stage, seconds) of every finished stage, in order.
        self.finished: list[tuple[str, float]] = []

    @contextlib.contextmanager
    def stage(self, title: str) -> Iterator[None]:
        started = time.perf_counter()
        status = self.console.status(f"[bold]{title}[/bold] ...") if self.enabled else contextlib.nullcontext()
        with status:
            yield
        seconds = time.perf_counter() - started
        self.finished.append((title, seconds))
        if self.enabled:
            self.console.print(f"[green]✓[/green] {title} [dim]({seconds:.1f} s)[/dim]", highlight=False)

    def note(self, text: str) -> None:
        if self.enabled:
            self.console.print(text, highlight=False)
