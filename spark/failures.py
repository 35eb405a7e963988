"""Spark's failures as one line: the root cause of a Java exception, not its Py4J traceback.

A failed job reaches Python as a ``Py4JJavaError`` (or one of pyspark's captured exceptions)
whose text is pages of JVM stack; what the operator needs is the innermost cause, e.g.
``java.io.FileNotFoundException: File file:/data/x.parquet does not exist``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["JobFailed", "root_cause", "spark_failures"]


class JobFailed(RuntimeError):
    """A Spark job (or the JVM behind it) failed; the message is its root cause."""


def _java_root(throwable) -> str | None:
    seen = 0
    while throwable.getCause() is not None and seen < 64:
        throwable, seen = throwable.getCause(), seen + 1
    return str(throwable.toString())


def _first_line(text: str) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


def root_cause(exc: BaseException) -> str:
    """The innermost cause of ``exc``, on one line ("Class: message")."""
    text = None
    try:
        java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
        if java is not None:
            text = _java_root(java)
    except Exception:  # the JVM is gone: fall back to the Python side's text
        text = None
    if not text:
        cause = exc
        while getattr(cause, "_cause", None) is not None:  # pyspark's CapturedException chain
            cause = cause._cause
        text = str(getattr(cause, "_desc", None) or cause) or type(cause).__name__
    line = _first_line(text)
    # Spark prefixes some messages with an error class in brackets; keep it, it is searchable.
    return line or type(exc).__name__


def _from_spark(exc: BaseException) -> bool:
    """Whether ``exc`` came out of the JVM (a job, the gateway) rather than from Python code."""
    try:
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException
    except ImportError:
        return False
    return isinstance(exc, (Py4JError, PySparkException))


@contextlib.contextmanager
def spark_failures() -> Iterator[None]:
    """Turn a failure from Spark inside the block into :class:`JobFailed` with its root cause."""
    try:
        yield
    except Exception as exc:
        if _from_spark(exc):
            raise JobFailed(root_cause(exc)) from None
        raise
