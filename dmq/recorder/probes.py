"""What the process costs right now: resident memory and CPU time.

Resident memory is read from ``/proc/self/statm`` (current pages, not the peak that
``getrusage`` reports), because the capacity model needs memory *per message held*, which is
the slope of the current value against the mempool size. Where ``/proc`` is absent the peak
is the best the platform offers, and is what gets recorded.
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


def _rss_bytes() -> int:
    try:
        with open(_STATM, "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def sample_process() -> ProcessSample:
    """Resident bytes and CPU seconds (user + system) of this process."""
    return ProcessSample(_rss_bytes(), time.process_time())


def process_label() -> str:
    """``host:pid``: the identity nodes sharing one process have in common."""
    return f"{socket.gethostname()}:{os.getpid()}"
