"""What the process costs right now: resident memory and CPU time.

Resident memory is read from ``/proc/self/statm`` (current pages, not the peak that
``getrusage`` reports), because the capacity model needs memory *per message held*, which is
the slope of the current value against the mempool size. Where ``/proc`` is absent the peak
is the best the platform offers, and is what gets recorded.

The anonymous part (resident pages not backed by a file: the heap) is resident minus shared
pages, from the same read. A durable mempool maps its LMDB file, and the resident pages of
that map are page cache the kernel may drop; the heap is what messages held really cost.
Without ``/proc`` it is unknown (None).
"""

from __future__ import annotations

import os
import resource
import socket
import sys
import time
from dataclasses import dataclass

__all__ = ["ProcessSample", "sample_process", "process_label"]

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_STATM = "/proc/self/statm"


@dataclass(frozen=True, slots=True)
class ProcessSample:
    rss_bytes: int
    cpu_seconds: float
    anon_bytes: int | None = None


def _memory() -> tuple[int, int | None]:
    """Resident and anonymous resident bytes."""
    try:
        with open(_STATM, "rb") as statm:
            fields = statm.read().split()
        resident, shared = int(fields[1]), int(fields[2])
        return resident * _PAGE_SIZE, (resident - shared) * _PAGE_SIZE
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return (peak if sys.platform == "darwin" else peak * 1024), None


def sample_process() -> ProcessSample:
    """Resident bytes, anonymous resident bytes and CPU seconds (user + system) of this process."""
    rss, anon = _memory()
    return ProcessSample(rss, time.process_time(), anon)


def process_label() -> str:
    """``host:pid``: the identity nodes sharing one process have in common."""
    return f"{socket.gethostname()}:{os.getpid()}"
