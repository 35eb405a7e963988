"""A client for the node's topics: protocol 1000 over the local socket (docs/topics-design.md 3)."""

from .blocklace import ack_draft, draft_block, event_draft
from .causal import CausalBuffer, Delivery
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
from .orset import AddWinsSet, add_op, remove_op
from .private_client import PrivateGroupClient
from .private_group import GroupMember, GroupOwner, NotAMember, routed_of_item

__all__ = ["ack_draft", "draft_block", "event_draft", "Durable", "Item", "Resume", "TopicConnection",
           "TopicRequestRefused", "TopicsUnavailable", "decode_item", "make_auth", "open_topic_connection",
           "AddWinsSet", "add_op", "remove_op", "CausalBuffer", "Delivery", "GroupMember", "GroupOwner", "NotAMember",
           "PrivateGroupClient", "routed_of_item"]
