"""Local message notification as one :class:`ProtocolSpec`."""

from __future__ import annotations

from ..framework import ProtocolSpec
from .codec import LocalNotificationCodec
from .types import STATES, TRANSITIONS, LocalNotificationState

__all__ = ["LOCAL_MSG_NOTIFICATION"]

LOCAL_MSG_NOTIFICATION = ProtocolSpec(
    name="local-msg-notification",
    states=STATES,
    initial=LocalNotificationState.IDLE,
    transitions=TRANSITIONS,
    codec=LocalNotificationCodec(),
)
