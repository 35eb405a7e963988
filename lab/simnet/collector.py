"""How much of a simulation's CPU the cyclic garbage collector takes, by generation.

A simulation holds hundreds of nodes' objects in one heap (gigabytes at a thousand nodes), so a
collection of the older generations walks far more than in one node's process; this counts the
collections and their CPU seconds (``gc.callbacks``: two calls per collection, nothing per
allocation), for the report's ``cost``.
"""

from __future__ import annotations

import gc
import time
from typing import Any

__all__ = ["CollectorTime"]


class CollectorTime:
    """Collections and their CPU seconds by generation, while installed (a context manager)."""

    def __init__(self) -> None:
        self.collections = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self.collected = [0, 0, 0]
        self._began = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.process_time()
            return
        generation = info["generation"]
        self.collections[generation] += 1
        self.seconds[generation] += time.process_time() - self._began
        self.collected[generation] += info["collected"]

    def __enter__(self) -> CollectorTime:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._callback)

    def snapshot(self) -> dict[str, Any]:
        return {"collections": list(self.collections), "cpu_seconds": [round(s, 2) for s in self.seconds],
                "collected": list(self.collected)}
