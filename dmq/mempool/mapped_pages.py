"""Unmapping LMDB's data file from the node's address space after each commit (Linux).

LMDB reads its pages through a shared, read-only memory map. Each commit reads the last
pages of the log's B-tree through it, and the kernel's fault-around maps the neighbouring
pages too: those are the message pages just written, so over time the whole data file
(1.5 times the wire bytes: a 2 650-byte message takes a 4 KiB page) is mapped and counts
in the node's resident set, although nothing reads it (messages are served from memory).

``madvise(MADV_DONTNEED)`` on that map only removes the node's page-table entries: the
pages stay in the page cache as for any written file, the file is untouched, and a later
read faults them back in. Durability is not affected: commits are written and synced by
LMDB before this runs. Where ``/proc/self/maps`` or ``madvise`` is missing, nothing is done.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

__all__ = ["MappedFile"]

_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


def _madvise():
    if _MADV_DONTNEED is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.madvise
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    function.restype = ctypes.c_int
    return function


_MADVISE = _madvise()


class MappedFile:
    """The address ranges where this process maps ``path``, to release them from memory."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.path.realpath(path)
        self._ranges: list[tuple[int, int]] | None = None

    def _find(self) -> list[tuple[int, int]]:
        ranges = []
        try:
            with open("/proc/self/maps") as maps:
                for line in maps:
                    fields = line.split(None, 5)
                    if len(fields) == 6 and fields[5].rstrip("\n") == self.path:
                        start, end = (int(x, 16) for x in fields[0].split("-"))
                        ranges.append((start, end - start))
        except OSError:
            pass
        return ranges

    def release(self) -> None:
        """Drop the file's pages from this process's resident set (they stay cached)."""
        if _MADVISE is None:
            return
        if not self._ranges:  # found once: LMDB maps its file once, at a fixed size
            self._ranges = self._find()
        for start, length in self._ranges:
            _MADVISE(start, length, _MADV_DONTNEED)

    @classmethod
    def for_lmdb(cls, directory: str | os.PathLike[str]) -> "MappedFile":
        return cls(Path(directory) / "data.mdb")
