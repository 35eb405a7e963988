"""A client for the node's topics: protocol 1000 over the local socket (docs/topics-design.md 3),
and the builders of what a client publishes (one module per adapter: ``upsycle``, ``blocklace``,
``dmsg``), what it subscribes with (``selectors``) and how it reads what it gets (``items``)."""

from .blocklace import (
    PoolCreator,
    TopicOwners,
    ack_draft,
    acknowledgement_draft,
    advertisement_draft,
    draft_block,
    event_draft,
    parse_permissions,
    proposal_draft,
)
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
from .items import describe
from .orset import AddWinsSet, add_op, remove_op
from .private_client import PrivateGroupClient
from .private_group import GroupMember, GroupOwner, NotAMember, routed_of_item
from .selectors import selector

__all__ = ["PoolCreator", "TopicOwners", "ack_draft", "acknowledgement_draft", "advertisement_draft", "draft_block", "event_draft",
           "parse_permissions", "proposal_draft", "Durable", "Item", "Resume", "TopicConnection",
           "TopicRequestRefused", "TopicsUnavailable", "decode_item", "make_auth", "open_topic_connection",
           "describe", "selector", "AddWinsSet", "add_op", "remove_op", "CausalBuffer", "Delivery", "GroupMember",
           "GroupOwner", "NotAMember", "PrivateGroupClient", "routed_of_item"]
