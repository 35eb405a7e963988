"""Local topic subscription as one :class:`ProtocolSpec`."""

from __future__ import annotations

from ..framework import ProtocolSpec
from .codec import LocalTopicCodec
from .types import STATES, TRANSITIONS, TopicState

__all__ = ["LOCAL_TOPIC_SUBSCRIPTION"]

LOCAL_TOPIC_SUBSCRIPTION = ProtocolSpec(
    name="local-topic-subscription",
    states=STATES,
    initial=TopicState.IDLE,
    transitions=TRANSITIONS,
    codec=LocalTopicCodec(),
)
