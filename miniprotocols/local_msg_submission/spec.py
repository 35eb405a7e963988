"""Local message submission as one :class:`ProtocolSpec`."""

from __future__ import annotations

from ..framework import ProtocolSpec
from .codec import LocalSubmissionCodec
from .types import STATES, TRANSITIONS, LocalSubmissionState

__all__ = ["LOCAL_MSG_SUBMISSION"]

LOCAL_MSG_SUBMISSION = ProtocolSpec(
    name="local-msg-submission",
    states=STATES,
    initial=LocalSubmissionState.IDLE,
    transitions=TRANSITIONS,
    codec=LocalSubmissionCodec(),
)
