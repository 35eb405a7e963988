"""Traffic recording for the capacity pipeline (docs/capacity/model.md section 4).

:mod:`dmq.recorder.schema` is the format, shared with ``spark/``; it imports nothing else from
the project, and importing this package imports nothing but this file, so the Spark jobs can
read the schema without loading the node. The recorder itself is loaded on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TrafficRecorder", "NullRecorder", "NO_RECORDER", "ConnectionWatch", "RecorderError", "node_label"]

_LAZY = {"TrafficRecorder", "NullRecorder", "NO_RECORDER", "ConnectionWatch", "RecorderError"}


def node_label(host: str, port: int) -> str:
    """How a node names itself in recordings: the host and its node-to-node port."""
    return f"{host}:{port}"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from dmq.recorder import recorder

        return getattr(recorder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
