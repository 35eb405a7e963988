"""End-to-end keys of a private UPSYCLE group: signed membership epochs and sealed group keys.

Relaying nodes carry a private group's messages without any key: every body is either a
membership record (public keys and sealed boxes, signed by the owner) or ciphertext under the
epoch's group key. A member's X25519 key opens its sealed copy of each epoch's secrets; a member
left out of an epoch (revoked) holds no key for it and cannot read what is published under it.

Body of a membership message (CBOR): ``[0, record, sig]`` where ``record`` is the deterministic
encoding of ``{0: grp, 1: epoch, 2: {member X25519 key: sealed secrets}}`` and ``sig`` the
owner's Ed25519 signature over ``record``. The sealed secrets are ``[group key, grp seed]``:
the SecretBox key of the epoch and the seed of the UPSYCLE group key that signs multicasts
(docs/topics-design.md 4.5: holding the group key authorises publication).

Body of a data message: ``[1, epoch, box]`` where ``box`` is ``SecretBox(group key)`` of the
application plaintext with a fresh random nonce; the epoch is in the clear so that the receiver
picks the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nacl.exceptions import BadSignatureError, CryptoError
from nacl.public import PrivateKey, PublicKey, SealedBox
from nacl.secret import SecretBox
from nacl.signing import SigningKey, VerifyKey
from nacl.utils import random

from topics import cbor

__all__ = ["BODY_MEMBERSHIP", "BODY_DATA", "EpochSecrets", "Membership", "NotReadable", "seal_membership",
           "open_membership", "encrypt_body", "decrypt_body", "body_kind"]

BODY_MEMBERSHIP = 0
BODY_DATA = 1


class NotReadable(Exception):
    """A body this member cannot read: malformed, forged, or under a key it does not hold."""


@dataclass(frozen=True, slots=True)
class EpochSecrets:
    """What the owner seals to each member of an epoch."""

    group_key: bytes
    grp_seed: bytes

    @classmethod
    def fresh(cls, grp_seed: bytes) -> EpochSecrets:
        return cls(random(SecretBox.KEY_SIZE), grp_seed)


@dataclass(frozen=True, slots=True)
class Membership:
    """A verified membership record: the epoch's members and, if this member is one, its secrets."""

    grp: bytes
    epoch: int
    members: frozenset[bytes]
    secrets: EpochSecrets | None


def seal_membership(owner: SigningKey, grp: bytes, epoch: int, members: list[bytes], secrets: EpochSecrets) -> bytes:
    """The body announcing ``epoch``: ``secrets`` sealed to each member's X25519 key, signed by ``owner``."""
    plain = cbor.encode([secrets.group_key, secrets.grp_seed])
    sealed = {bytes(m): SealedBox(PublicKey(bytes(m))).encrypt(plain) for m in members}
    record = cbor.encode({0: grp, 1: epoch, 2: sealed})
    return cbor.encode([BODY_MEMBERSHIP, record, owner.sign(record).signature])


def body_kind(body: bytes) -> tuple[int, Any]:
    """``(kind, decoded body)``; anything else is :class:`NotReadable`."""
    try:
        value = cbor.decode(body)
    except ValueError:
        raise NotReadable("not CBOR") from None
    if not (isinstance(value, list) and len(value) == 3 and value[0] in (BODY_MEMBERSHIP, BODY_DATA)):
        raise NotReadable("not a private-group body")
    return value[0], value


def open_membership(value: list, owner: bytes, grp: bytes, me: PrivateKey) -> Membership:
    """Verify a decoded membership body against the owner's key and the group; open our copy."""
    _, record, sig = value
    try:
        VerifyKey(owner).verify(bytes(record), bytes(sig))
        fields = cbor.decode(bytes(record))
        epoch, sealed = fields[1], fields[2]
        if fields[0] != grp or not isinstance(epoch, int) or not isinstance(sealed, dict):
            raise NotReadable("membership record of another group")
    except (BadSignatureError, ValueError, TypeError, KeyError, IndexError):
        raise NotReadable("membership record not signed by the owner") from None
    mine = sealed.get(bytes(me.public_key))
    secrets = None
    if mine is not None:
        try:
            key, seed = cbor.decode(SealedBox(me).decrypt(bytes(mine)))
        except (CryptoError, ValueError, TypeError):
            raise NotReadable("sealed secrets do not open") from None
        secrets = EpochSecrets(bytes(key), bytes(seed))
    return Membership(grp, epoch, frozenset(bytes(m) for m in sealed), secrets)


def encrypt_body(epoch: int, group_key: bytes, plaintext: bytes) -> bytes:
    return cbor.encode([BODY_DATA, epoch, bytes(SecretBox(group_key).encrypt(plaintext))])


def decrypt_body(value: list, keys: dict[int, bytes]) -> tuple[int, bytes]:
    """``(epoch, plaintext)`` of a decoded data body, with the key of its epoch from ``keys``."""
    _, epoch, box = value
    key = keys.get(epoch) if isinstance(epoch, int) else None
    if key is None:
        raise NotReadable(f"no key for epoch {epoch}")
    try:
        return epoch, SecretBox(key).decrypt(bytes(box))
    except (CryptoError, TypeError, ValueError):
        raise NotReadable(f"does not decrypt under the key of epoch {epoch}") from None
