"""Failures of topic code end one unit of work, never the node.

Adapters parse and judge bytes from clients and peers. A defect in one of them (a hook
called with the wrong arguments, an input its checks did not foresee) raises an ordinary
exception; where that exception surfaces decides what it takes down. Connection tasks are
already bounded: :func:`dmq.connection.run_connection` ends only that connection. The topic
service's own tasks are not: they run in the node's nursery, so an exception there would end
the process. Adapter code therefore runs under one of three boundaries, each the smallest
unit that can be given up on its own:

* ``ingress``: one message (:class:`~topics.ingress.TopicIngress`): it is refused, the
  connection that brought it stays up;
* ``publication``: one entry of the publication queue (:mod:`topics.publication`): the
  client is answered with a refusal, the queue goes on;
* ``housekeeping``: one adapter's round of pruning or due publications
  (:mod:`topics.service`): the next round runs as usual.

Each boundary writes one :class:`~topics.trace.TopicFailureContained` line naming what
failed. Cancellation and other ``BaseException`` s are never caught.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from .trace import TopicFailureContained

__all__ = ["Contained", "describe_failure"]


def describe_failure(error: BaseException) -> str:
    """``Type: text`` of an exception, on one line."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class Contained:
    """``with Contained(tracer, where, subject) as guard:``: an exception of the block is traced
    and swallowed; ``guard.failure`` then holds its description (None when the block ran through)."""

    __slots__ = ("tracer", "where", "subject", "failure")

    def __init__(self, tracer: Any, where: str, subject: str) -> None:
        self.tracer = tracer
        self.where = where
        self.subject = subject
        self.failure: str | None = None

    def __enter__(self) -> Contained:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> bool:
        if error is None or not isinstance(error, Exception):
            return False
        self.failure = describe_failure(error)
        # The traceback holds the frames of the failed work (and, through them, its state).
        error.__traceback__ = None
        self.tracer.emit(TopicFailureContained(self.tracer.now(), self.where, self.subject, self.failure))
        return True
