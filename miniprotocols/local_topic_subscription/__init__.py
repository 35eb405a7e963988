"""Local topic subscription, mini-protocol 1000 (docs/topics-design.md 3), under node-to-client version 12289."""

from .client import LocalTopicClient
from .codec import LocalTopicCodec
from .server import TopicHandler, TopicProtocolError, serve
from .spec import LOCAL_TOPIC_SUBSCRIPTION
from .types import *  # noqa: F401,F403
from .types import __all__ as _types_all

__all__ = ["LocalTopicClient", "LocalTopicCodec", "TopicHandler", "TopicProtocolError", "serve",
           "LOCAL_TOPIC_SUBSCRIPTION", *_types_all]
