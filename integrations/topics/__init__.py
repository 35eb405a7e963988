"""A client for the node's topics: protocol 1000 over the local socket (docs/topics-design.md 3)."""

from .blocklace import ack_draft, draft_block, event_draft
from .client import (
    Durable,
    Item,
    Resume,
    TopicConnection,
    TopicRequestRefused,
    TopicsUnavailable,
    decode_item,
    make_auth,
    open_topic_connection,
)

__all__ = ["ack_draft", "draft_block", "event_draft", "Durable", "Item", "Resume", "TopicConnection", "TopicRequestRefused", "TopicsUnavailable",
           "decode_item", "make_auth", "open_topic_connection"]
