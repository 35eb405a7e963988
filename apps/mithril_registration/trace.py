"""Trace events of the registration application's node-side part (the node's stream and sinks)."""

from __future__ import annotations

from dataclasses import dataclass

from dmq.trace import TraceEvent

__all__ = ["MithrilRegistrationListening", "MithrilRegistrationAgreed", "MithrilRegistrationClosed",
           "MithrilRegistrationDisagreement", "MithrilRegistrationProblem"]


@dataclass(frozen=True, slots=True)
class MithrilRegistrationListening(TraceEvent):
    """``/epoch-settings`` is served on ``endpoint``."""

    endpoint: str


@dataclass(frozen=True, slots=True)
class MithrilRegistrationClosed(TraceEvent):
    """The node published ``close epoch``: its chain holds the registration round of ``epoch`` over."""

    epoch: int


@dataclass(frozen=True, slots=True)
class MithrilRegistrationAgreed(TraceEvent):
    """The set of registration epoch ``epoch`` is fixed by Blocklace epoch ``blocklace_epoch``."""

    epoch: int
    blocklace_epoch: int
    digest: bytes
    signers: int
    excluded: int


@dataclass(frozen=True, slots=True)
class MithrilRegistrationDisagreement(TraceEvent):
    """Another node announced another digest for a set fixed here: the agreement's assumptions
    failed (docs/mithril-registration.md 8.5)."""

    epoch: int
    pool_id: bytes          # the announcing node's pool
    theirs: bytes
    ours: bytes


@dataclass(frozen=True, slots=True)
class MithrilRegistrationProblem(TraceEvent):
    """Something the application could not do now (the node's socket, a publication); it retries."""

    detail: str
