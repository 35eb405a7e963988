"""JOIN and LEAVE with their acknowledgements (docs/topics-design.md 4.5) and the subscriber ``auth`` (3.4).

Membership is a local operation: the local bearer is the trust boundary, and the subscriber
proves it holds its service key with a fresh signature. Results keep the design's codes
(0 success, 1 failure) with the detail codes of 4.5.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from topics.adapter import AdapterTxn
from topics.cbor import encode

from .identity import verify
from .params import UpsycleParams
from .queues import SubscriberQueues
from .state import SubscriberState, UpsycleState

__all__ = ["Detail", "Ack", "AUTH_WINDOW", "auth_preimage", "auth_valid", "Membership"]

#: ``|now - ts|`` allowed for an ``auth`` (docs/topics-design.md 3.4, P).
AUTH_WINDOW = 120

SUCCESS = 0
FAILURE = 1


class Detail(enum.IntEnum):
    NONE = 0
    NOT_AUTHORIZED = 1
    LIMIT_EXCEEDED = 2
    NOT_MEMBER = 3
    TOPIC_NOT_CARRIED = 4
    NOT_ALLOWED = 5


@dataclass(frozen=True, slots=True)
class Ack:
    """``MsgJoinAck`` / ``MsgLeaveAck`` content: ``[group, result, ? detail]``."""

    group: bytes
    result: int
    detail: Detail = Detail.NONE

    @property
    def ok(self) -> bool:
        return self.result == SUCCESS

    def wire(self, tag: int) -> list:
        out: list = [tag, self.group, self.result]
        if self.detail is not Detail.NONE:
            out.append(int(self.detail))
        return out


def auth_preimage(op: str, subscriber: bytes, group: bytes | None, ts: int, network_magic: int) -> bytes:
    """``["dmq-topic-auth", op, subscriber, group or null, ts, networkMagic]``, deterministic."""
    return encode(["dmq-topic-auth", op, subscriber, group, ts, network_magic])


def auth_valid(auth: object, op: str, subscriber: bytes, group: bytes | None, now: float,
               network_magic: int) -> bool:
    """Whether ``auth = [ts, sig]`` is the subscriber's fresh signature for this operation."""
    if not (isinstance(auth, (list, tuple)) and len(auth) == 2):
        return False
    ts, sig = auth
    if not isinstance(ts, int) or isinstance(ts, bool) or not 0 <= ts <= 0xFFFF_FFFF or not isinstance(sig, bytes):
        return False
    if abs(now - ts) > AUTH_WINDOW:
        return False
    return verify(subscriber, auth_preimage(op, subscriber, group, ts, network_magic), sig)


class Membership:
    """Durable subscribers and their groups, changed inside the caller's transaction."""

    def __init__(self, state: UpsycleState, queues: SubscriberQueues, params: UpsycleParams,
                 services: frozenset[bytes] | None = None) -> None:
        self.state = state
        self.queues = queues
        self.params = params
        #: The instance's service allow-list (None: any local client, docs/topics-design.md 2.7).
        self.services = services

    def permitted(self, key: bytes) -> bool:
        return self.services is None or key in self.services

    def ensure_subscriber(self, txn: AdapterTxn, key: bytes) -> Detail:
        """Create K's durable record if needed (``MsgSubscribe`` with a valid auth, or JOIN)."""
        if not self.permitted(key):
            return Detail.NOT_AUTHORIZED
        if self.state.subscriber(txn, key) is None:
            if self.state.subscriber_count(txn) >= self.params.max_subscribers:
                return Detail.LIMIT_EXCEEDED
            self.state.put_subscriber(txn, key, SubscriberState())
        return Detail.NONE

    def join(self, txn: AdapterTxn, subscriber: bytes, group: bytes, local: bool, auth: object,
             now: float, network_magic: int) -> Ack:
        if not auth_valid(auth, "join", subscriber, group, now, network_magic):
            return Ack(group, FAILURE, Detail.NOT_AUTHORIZED)
        detail = self.ensure_subscriber(txn, subscriber)
        if detail is not Detail.NONE:
            return Ack(group, FAILURE, detail)
        groups = self.state.groups_of(txn, subscriber)
        if group not in groups and len(groups) >= self.params.max_groups_per_subscriber:
            return Ack(group, FAILURE, Detail.LIMIT_EXCEEDED)
        if groups.get(group) != bool(local):
            self.state.add_membership(txn, subscriber, group, local)
        return Ack(group, SUCCESS)

    def leave(self, txn: AdapterTxn, subscriber: bytes, group: bytes, auth: object, now: float,
              network_magic: int) -> Ack:
        if not auth_valid(auth, "leave", subscriber, group, now, network_magic):
            return Ack(group, FAILURE, Detail.NOT_AUTHORIZED)
        if not self.state.is_member(txn, subscriber, group):
            return Ack(group, FAILURE, Detail.NOT_MEMBER)
        self.state.remove_membership(txn, subscriber, group)
        self.queues.purge_group(txn, subscriber, group)
        return Ack(group, SUCCESS)
