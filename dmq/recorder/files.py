"""Append-only, rotated data files of one record type.

A file is created exclusively (``x`` mode: an existing file is never reopened, truncated or
rewritten) and written through a large buffer, so appending a record is a memory copy and
the disk sees a few big writes. The recorder flushes once per sample interval, which bounds
what a crash can lose. When a file reaches its size or age limit it is closed and the next
sequence number opened; a restarted node starts a new session, hence new files.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from dmq.recorder.schema import data_file_name, parse_data_file_name, safe_name

__all__ = ["RotatingLineWriter", "DEFAULT_ROTATE_BYTES", "DEFAULT_ROTATE_SECONDS"]

DEFAULT_ROTATE_BYTES = 64 * 1024 * 1024
DEFAULT_ROTATE_SECONDS = 3600.0
_BUFFER_BYTES = 1024 * 1024


class RotatingLineWriter:
    """Lines of one record type, of one node session, into ``directory``."""

    def __init__(
        self,
        directory: Path,
        node: str,
        session: str,
        *,
        rotate_bytes: int = DEFAULT_ROTATE_BYTES,
        rotate_seconds: float = DEFAULT_ROTATE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if rotate_bytes <= 0 or rotate_seconds <= 0:
            raise ValueError("rotation limits must be positive")
        self.directory = directory
        self.node = node
        self.session = session
        self.rotate_bytes = rotate_bytes
        self.rotate_seconds = rotate_seconds
        self._monotonic = monotonic
        self._file: TextIO | None = None
        self._written = 0
        self._opened_at = 0.0
        self._seq = self._first_free_seq()
        #: Paths of every file this writer created, in order.
        self.paths: list[Path] = []

    def _first_free_seq(self) -> int:
        """After the files a previous writer of the same session left (never over them)."""
        last = -1
        if self.directory.is_dir():
            for path in self.directory.iterdir():
                parsed = parse_data_file_name(path.name)
                if parsed and parsed[:2] == (safe_name(self.node), safe_name(self.session)):
                    last = max(last, parsed[2])
        return last + 1

    def _open(self) -> TextIO:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / data_file_name(self.node, self.session, self._seq)
        self._seq += 1
        self._file = open(path, "x", encoding="utf-8", buffering=_BUFFER_BYTES)
        self._written = 0
        self._opened_at = self._monotonic()
        self.paths.append(path)
        return self._file

    def write(self, line: str) -> None:
        """Append one line (which ends with a newline); rotate first if a limit is reached."""
        file = self._file
        if file is None:
            file = self._open()
        elif self._written >= self.rotate_bytes:
            self._rotate()
            file = self._open()
        file.write(line)
        self._written += len(line)  # characters: the lines are ASCII JSON

    def maybe_rotate(self) -> None:
        """Close a file that has been open longer than the age limit (called by the sampler)."""
        if self._file is not None and self._monotonic() - self._opened_at >= self.rotate_seconds:
            self._rotate()

    def _rotate(self) -> None:
        assert self._file is not None
        self._file.close()
        self._file = None

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._rotate()
