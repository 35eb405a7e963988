"""Private UPSYCLE groups: end-to-end encrypted, rekeyed on revocation, delivered in causal order.

A client-side library over the ordinary UPSYCLE multicast (docs/topics-design.md 4): the
nodes relay and queue the group's routed messages as they do any other, and never hold a key.
``group_keys`` says what the bodies are, ``causal`` how delivery waits for dependencies.

- :class:`GroupOwner` signs each membership epoch and seals its fresh group key to the
  epoch's members; revoking a member starts a new epoch without it.
- :class:`GroupMember` turns received routed messages into causal :class:`Delivery` values and
  its own payloads into routed messages to publish. The plaintext of a data body is
  ``[deps, payload]``: the application header naming the ids (UPSYCLE ids, 4.3) of the
  messages the payload follows, taken from what this member has delivered.

The UPSYCLE group key (``grp``, which signs multicasts) travels inside the sealed secrets; it
is the same in every epoch, so a revoked member can still publish ciphertext under an epoch it
held, which others read as a message of that old epoch. It can read nothing of a later epoch.

A member remembers the ids it has seen and delivered for as long as it lives (duplicates and
dependencies are recognised by them); a long-lived member would prune them by epoch.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from nacl.public import PrivateKey
from nacl.signing import SigningKey

from dmq.codec import decode_message
from topics import cbor
from topics.adapter import ITEM_LOCAL, ITEM_MESSAGE
from topics.upsycle.wire import KIND_REISSUE, RoutedMessage, decode_envelope, decode_routed

from .causal import CausalBuffer, Delivery
from .client import Item
from .upsycle import multicast, public_key
from .group_keys import (
    BODY_MEMBERSHIP,
    EpochSecrets,
    Membership,
    NotReadable,
    body_kind,
    decrypt_body,
    encrypt_body,
    open_membership,
    seal_membership,
)

__all__ = ["GroupOwner", "GroupMember", "NotAMember", "routed_of_item", "MAX_DEPS"]

#: Dependencies named per message; more heads than this are left to the next message.
MAX_DEPS = 16


class NotAMember(Exception):
    """This member holds no key for the group's current epoch: it may not publish."""


def routed_of_item(item: Item) -> RoutedMessage | None:
    """The routed message of a delivered protocol 1000 item (a DMQ message, a reissue answer, or a
    node-local publication); ``None`` for items that carry none (gaps, drops)."""
    if item.kind == ITEM_LOCAL:
        return decode_routed(bytes(item.payload))
    if item.kind != ITEM_MESSAGE:
        return None
    envelope = decode_envelope(decode_message(bytes(item.payload)).body)
    content = envelope.content
    if envelope.kind == KIND_REISSUE:
        return content.message
    return content if isinstance(content, RoutedMessage) else None


class GroupOwner:
    """The holder of the group's owner key (Ed25519) and UPSYCLE group key seed."""

    def __init__(self, owner: SigningKey, grp_seed: bytes, clock: Callable[[], float]) -> None:
        self.owner, self.grp_seed, self.clock = owner, grp_seed, clock
        self.grp = public_key(grp_seed)
        self.epoch = 0
        self.members: list[bytes] = []

    @property
    def owner_public(self) -> bytes:
        return bytes(self.owner.verify_key)

    def set_members(self, members: list[bytes], epoch: int | None = None) -> RoutedMessage:
        """Start the next epoch (or ``epoch``, for an owner that keeps no state) with ``members``
        (X25519 public keys) and a fresh group key."""
        self.epoch = self.epoch + 1 if epoch is None else epoch
        self.members = sorted(set(bytes(m) for m in members))
        body = seal_membership(self.owner, self.grp, self.epoch, self.members, EpochSecrets.fresh(self.grp_seed))
        return multicast(self.grp_seed, body, self.clock())

    def admit(self, member: bytes) -> RoutedMessage:
        return self.set_members(self.members + [member])

    def revoke(self, member: bytes) -> RoutedMessage:
        """A new epoch without ``member``: nothing published under it is readable by ``member``."""
        return self.set_members([m for m in self.members if m != bytes(member)])


class GroupMember:
    """One member's view of a private group: keys per epoch, causal buffer, unread bodies."""

    def __init__(self, key: PrivateKey, owner: bytes, grp: bytes, clock: Callable[[], float], *,
                 buffer: CausalBuffer | None = None, max_waiting: int = 256) -> None:
        self.key, self.owner, self.grp, self.clock = key, bytes(owner), bytes(grp), clock
        self.buffer = buffer if buffer is not None else CausalBuffer()
        self.keys: dict[int, bytes] = {}
        self.grp_seed: bytes | None = None
        self.membership: Membership | None = None
        self.seen: set[bytes] = set()
        #: data bodies of an epoch not announced yet (its record may come later), oldest first
        self.waiting: OrderedDict[bytes, list] = OrderedDict()
        self.max_waiting = max_waiting
        #: ids of bodies this member cannot read: no key for their epoch, forged, or malformed
        self.unreadable: list[bytes] = []

    @property
    def public(self) -> bytes:
        return bytes(self.key.public_key)

    @property
    def epoch(self) -> int:
        return 0 if self.membership is None else self.membership.epoch

    @property
    def revoked(self) -> bool:
        """The latest epoch this member knows of leaves it out."""
        return self.membership is not None and self.public not in self.membership.members

    def receive(self, routed: RoutedMessage) -> list[Delivery]:
        """Process one routed message of the group; what it makes deliverable, in causal order."""
        if routed.topic_key != self.grp or routed.id in self.seen:
            return []
        self.seen.add(routed.id)
        try:
            kind, value = body_kind(routed.body)
            if kind == BODY_MEMBERSHIP:
                return self._membership(open_membership(value, self.owner, self.grp, self.key))
            return self._data(routed.id, value)
        except NotReadable:
            self.unreadable.append(routed.id)
            return []

    def publish(self, payload: bytes) -> tuple[RoutedMessage, list[Delivery]]:
        """Encrypt ``payload`` under the current epoch, following what this member has delivered.
        Returns the routed message to publish and its own delivery here."""
        if self.grp_seed is None or self.epoch not in self.keys:
            raise NotAMember(f"no key for the current epoch {self.epoch}")
        deps = self.buffer.heads()[:MAX_DEPS]
        body = encrypt_body(self.epoch, self.keys[self.epoch], cbor.encode([deps, payload]))
        routed = multicast(self.grp_seed, body, self.clock())
        self.seen.add(routed.id)
        return routed, self.buffer.offer(routed.id, tuple(deps), payload, self.clock())

    def tick(self) -> list[Delivery]:
        """Release messages whose dependencies have been waited for long enough (causal.py)."""
        return self.buffer.expire(self.clock())

    def save(self) -> bytes:
        """Everything but the X25519 key, as CBOR: what a member that runs now and then keeps."""
        buffer = self.buffer
        membership = None if self.membership is None else [self.membership.epoch, sorted(self.membership.members)]
        return cbor.encode({0: self.owner, 1: self.grp, 2: self.keys, 3: self.grp_seed, 4: membership,
                            5: sorted(self.seen), 6: [[i, v] for i, v in self.waiting.items()], 7: self.unreadable,
                            8: sorted(buffer.delivered), 9: sorted(buffer.followed),
                            10: [[i, list(h.deps), h.value, h.since] for i, h in buffer.held.items()]})

    @classmethod
    def load(cls, key: PrivateKey, raw: bytes, clock: Callable[[], float]) -> GroupMember:
        """The member :meth:`save` wrote, with its key."""
        state = cbor.decode(raw)
        member = cls(key, state[0], state[1], clock)
        member.keys = {int(e): bytes(k) for e, k in state[2].items()}
        member.grp_seed = state[3]
        if state[4] is not None:
            epoch, members = state[4]
            key_of_epoch = member.keys.get(epoch)
            secrets = None if key_of_epoch is None else EpochSecrets(key_of_epoch, member.grp_seed)
            member.membership = Membership(member.grp, epoch, frozenset(members), secrets)
        member.seen = set(state[5])
        member.waiting = OrderedDict((bytes(i), v) for i, v in state[6])
        member.unreadable = list(state[7])
        member.buffer.delivered, member.buffer.followed = set(state[8]), set(state[9])
        for id, deps, value, since in state[10]:
            member.buffer.offer(bytes(id), tuple(deps), value, since)
        return member

    def _membership(self, membership: Membership) -> list[Delivery]:
        if membership.secrets is not None:
            self.keys[membership.epoch] = membership.secrets.group_key
            self.grp_seed = membership.secrets.grp_seed
        if membership.epoch > self.epoch:
            self.membership = membership
        out: list[Delivery] = []
        for id, value in list(self.waiting.items()):
            if value[1] <= self.epoch:
                del self.waiting[id]
                try:
                    out += self._data(id, value)
                except NotReadable:
                    self.unreadable.append(id)
        return out

    def _data(self, id: bytes, value: list) -> list[Delivery]:
        epoch = value[1]
        if isinstance(epoch, int) and epoch > self.epoch and epoch not in self.keys:
            self.waiting[id] = value              # its membership record has not arrived yet
            while len(self.waiting) > self.max_waiting:
                self.unreadable.append(self.waiting.popitem(last=False)[0])
            return []
        _, plaintext = decrypt_body(value, self.keys)
        try:
            deps, payload = cbor.decode(plaintext)
            deps = tuple(bytes(d) for d in deps)
        except (ValueError, TypeError):
            raise NotReadable("plaintext is not [deps, payload]") from None
        return self.buffer.offer(id, deps, bytes(payload), self.clock())
