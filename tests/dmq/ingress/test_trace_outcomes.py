"""The ingress's traces: built only for the sinks that want them (``Tracer.wants``)."""

from __future__ import annotations

from dmq.ingress import trace_outcomes
from dmq.trace import MessageAccepted, MessageRejected, Tracer
from dmq.validation import Outcome, ReactionPolicy, SigDuplicate

from tests.dmq.validation.support import pool


class _Only:
    """A sink that handles events of one class and ignores every other."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.events: list = []

    def handler_for(self, cls: type):
        return self.events.append if cls is self.cls else None


class _Unreadable:
    """Stands for a message no event may be built from: any field read fails the test."""

    def __getattr__(self, name: str):
        raise AssertionError(f"read {name} of a message whose trace nobody wants")


def test_no_event_is_built_for_a_class_no_sink_wants():
    message = pool(1).message(nonce=1)
    tracer = Tracer(lambda: 5.0)
    rejections = _Only(MessageRejected)
    tracer.add_sink(rejections)
    outcomes = [Outcome(_Unreadable(), None), Outcome(message, SigDuplicate())]
    trace_outcomes(tracer, ReactionPolicy(), outcomes, "peer-1", 7)
    assert [type(e) for e in rejections.events] == [MessageRejected]
    assert rejections.events[0].message_id == message.message_id and rejections.events[0].reaction == "trace"

    silent = Tracer(lambda: 5.0)
    silent.add_sink(_Only(MessageAccepted.__base__))     # a class no event of the ingress has
    trace_outcomes(silent, ReactionPolicy(), [Outcome(_Unreadable(), None), Outcome(_Unreadable(), SigDuplicate())],
                   "local", 7)


def test_the_events_wanted_carry_what_the_outcome_says():
    message = pool(1).message(nonce=1)
    tracer = Tracer(lambda: 5.0)
    accepted = _Only(MessageAccepted)
    tracer.add_sink(accepted)
    trace_outcomes(tracer, ReactionPolicy(), [Outcome(message, None), Outcome(_Unreadable(), SigDuplicate())],
                   "local", 7)
    assert accepted.events == [MessageAccepted(5.0, message.message_id, message.pool_id, len(message.raw), "local", 7)]
