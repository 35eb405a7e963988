"""Wakes per second of real node processes, by cause (``bench/diffusion_cost.py --count-wakes``).

On a small VM a wake of the event loop costs a few hundred microseconds of CPU by itself, so
an idle node's cost is its count of wakes. :func:`enable` makes the nodes started from now on
load ``bench/wake_probe`` (a trio instrument, see its docstring) and write their wakes into a
directory; :func:`summarize` counts those in a window, by the first task each wake ran.
"""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path

__all__ = ["enable", "summarize"]

PROBE = Path(__file__).resolve().parent / "wake_probe"


def enable(directory: Path) -> None:
    """Nodes started after this record their wakes in ``directory`` (their environment is this one's)."""
    directory.mkdir(parents=True, exist_ok=True)
    os.environ["DMQ_WAKE_PROBE_DIR"] = str(directory)
    path = os.environ.get("PYTHONPATH")
    if str(PROBE) not in (path or "").split(os.pathsep):
        os.environ["PYTHONPATH"] = str(PROBE) if not path else f"{PROBE}{os.pathsep}{path}"


def summarize(directory: Path, start: float, end: float) -> dict:
    """Per node, the wakes per second between ``start`` and ``end`` (``time.monotonic``): in
    all, by the first task each ran (most frequent first), and each node's own (``by_node``, in
    the order of their process ids: the order a bench started them in)."""
    by_cause: collections.Counter[str] = collections.Counter()
    by_node: list[int] = []
    for file in sorted(directory.glob("*.json"), key=lambda f: int(f.stem)):
        wakes = [name for at, name in json.loads(file.read_text()) if start <= at < end]
        by_cause.update(wakes)
        by_node.append(len(wakes))
    nodes = len(by_node)
    seconds = (end - start) * max(1, nodes)
    return {"nodes": nodes, "per_second": sum(by_cause.values()) / seconds,
            "by_cause": [(name, n / seconds) for name, n in by_cause.most_common()],
            "by_node": [n / (end - start) for n in by_node]}
