"""Handing the C heap's free pages back to the kernel once a minute (glibc).

A message's bytes (1-3 kB) are above the interpreter's small-object limit, so each is its own
``malloc`` block. The window of held messages turns over all the time: new messages are
allocated where the allocator finds room while older ones, scattered between them, expire.
glibc returns memory to the kernel only from the top of each heap, and only past a threshold,
so the pages between live blocks that become entirely free stay in the process: a node's
resident set crept by 12-40 MiB over each quarter of an hour in the hour's soak
(docs/reliability.md 6), with no Python object leaking. ``malloc_trim(0)`` walks every arena
and releases every whole free page inside them as well (``MADV_DONTNEED``); the addresses stay
reserved, so nothing moves and a later allocation there costs one page fault.

The node trims once a minute, whatever freed the memory: expired messages, and the
connections of a Mithril signer, which opens one per message. A trim walks the heaps (1 to 6 ms
for a heap of 130 MiB, measured), so a minute apart it costs under a ten-thousandth of a core,
idle or busy. Under a steady load the expiry of a minute's messages is what it releases.
Where the C library has no ``malloc_trim`` (musl, macOS) nothing is done.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from dmq.timer_grid import Ticker

__all__ = ["HeapTrimmer", "TRIM_INTERVAL", "release_free_heap"]

#: Seconds between two trims.
TRIM_INTERVAL = 60.0


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        function = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    return function


_MALLOC_TRIM = _malloc_trim()


def release_free_heap() -> bool:
    """Release the C heap's whole free pages; True when glibc released something."""
    return _MALLOC_TRIM is not None and _MALLOC_TRIM(0) == 1


class HeapTrimmer:
    """The node's once-a-minute trim, with a count of trims for its metrics."""

    def __init__(self, interval: float = TRIM_INTERVAL) -> None:
        self.interval = interval
        self.trims = 0

    def trim(self) -> None:
        release_free_heap()
        self.trims += 1

    async def run(self) -> None:
        """Trim every ``interval`` seconds (on the node's timer grid, ``dmq.timer_grid``), until cancelled."""
        ticker = Ticker(self.interval)
        while True:
            await ticker.wait()
            self.trim()
