"""TopicAdvertisement checks: owner threshold signatures and the topic id (docs/topics-design.md 5.2, 5.6)."""

from __future__ import annotations

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

from topics import cbor

from .codec import AdBody, Owner, TopicAd
from .reasons import BAD_OWNER_SIGNATURE, BlocklaceReject

__all__ = ["check_advertisement", "sign_ad_body"]


def check_advertisement(ad: TopicAd, topic: bytes) -> None:
    """Raise ``bad_owner_signature`` unless the topic id and the owner threshold hold."""
    owner = ad.body.owner
    if owner.topic_id != topic:
        raise BlocklaceReject(BAD_OWNER_SIGNATURE, "topic id is not Blake2b-256 of the owner")
    good = set()
    for index, signature in ad.signatures:
        if index >= len(owner.keys) or index in good:
            raise BlocklaceReject(BAD_OWNER_SIGNATURE, f"owner key index {index} unknown or repeated")
        try:
            VerifyKey(owner.keys[index]).verify(ad.body.raw, signature)
        except BadSignatureError:
            raise BlocklaceReject(BAD_OWNER_SIGNATURE, f"signature of owner key {index} does not verify") from None
        good.add(index)
    if len(good) < owner.threshold:
        raise BlocklaceReject(BAD_OWNER_SIGNATURE, f"{len(good)} owner signatures, threshold {owner.threshold}")


def sign_ad_body(body_raw: bytes, owner_seeds: list[bytes], indexes: list[int]) -> TopicAd:
    """An advertisement over ``body_raw`` signed by the owner keys at ``indexes``."""
    from .codec import decode_ad_body

    body: AdBody = decode_ad_body(cbor.decode(body_raw), body_raw)
    sigs = tuple((i, SigningKey(owner_seeds[i]).sign(body_raw).signature) for i in indexes)
    return TopicAd(body, sigs)


def owner_of(seeds: list[bytes], threshold: int) -> Owner:
    return Owner(threshold, tuple(bytes(SigningKey(s).verify_key) for s in seeds))
