"""Carried messages and equivocation proofs: both are complete DMQ messages checked offline.

A carry (5.4) brings back a block past its network lifetime, and a proof (5.5) holds two
blocks that may be long expired; neither can go through expiry, rate or current-stake
checks. What remains provable by anyone is :func:`verify_carried`: the id is the hash of the
signed bytes, the KES period lies in the certificate's window, the cold key signed the
certificate and the hot key signed the payload.
"""

from __future__ import annotations

from dmq.codec import MessageDecodeError, decode_message
from dmq.message import DmqMessage
from dmq.opcert import verify_opcert
from dmq.stake import MAINNET_MAX_KES_EVOLUTIONS
from dmq.validation.pipeline import _sum6_verify

from .codec import EPOCH, KIND_BLOCK, Block, Proof, decode_body
from .reasons import BAD_CARRIED_MESSAGE, BlocklaceReject

__all__ = ["verify_carried", "verify_proof", "carried_block"]


def verify_carried(raw: bytes, max_kes_evolutions: int = MAINNET_MAX_KES_EVOLUTIONS) -> DmqMessage:
    """Decode and check a carried DMQ message; raises ``bad_carried_message``."""
    try:
        message = decode_message(raw)
    except MessageDecodeError as exc:
        raise BlocklaceReject(BAD_CARRIED_MESSAGE, f"not a DMQ message: {exc}") from None
    if not message.has_valid_id():
        raise BlocklaceReject(BAD_CARRIED_MESSAGE, "id is not the hash of the payload")
    start = message.opcert.start_kes_period
    if not start <= message.kes_period < start + max_kes_evolutions:
        raise BlocklaceReject(BAD_CARRIED_MESSAGE, "KES period outside the certificate's window")
    if not verify_opcert(message.opcert, message.cold_vk):
        raise BlocklaceReject(BAD_CARRIED_MESSAGE, "cold key signature of the certificate does not verify")
    if not _sum6_verify(message.opcert.hot_vk, message.kes_period - start, message.signed_bytes, message.kes_signature):
        raise BlocklaceReject(BAD_CARRIED_MESSAGE, "KES signature does not verify")
    return message


def carried_block(raw: bytes, max_kes_evolutions: int = MAINNET_MAX_KES_EVOLUTIONS) -> tuple[DmqMessage, Block]:
    """A verified DMQ message that holds a Blocklace block."""
    message = verify_carried(raw, max_kes_evolutions)
    try:
        kind, block = decode_body(message.body)
    except BlocklaceReject as exc:
        raise BlocklaceReject(BAD_CARRIED_MESSAGE, f"carried body: {exc}") from None
    if kind != KIND_BLOCK:
        raise BlocklaceReject(BAD_CARRIED_MESSAGE, "the carried message is not a block")
    return message, block


def verify_proof(proof: Proof, max_kes_evolutions: int = MAINNET_MAX_KES_EVOLUTIONS) -> bool:
    """Whether ``proof`` proves what it claims, from its two messages alone."""
    try:
        (ma, a), (mb, b) = (carried_block(proof.a, max_kes_evolutions), carried_block(proof.b, max_kes_evolutions))
    except BlocklaceReject:
        return False
    if not ma.message_id < mb.message_id or a.topic != proof.topic or b.topic != proof.topic:
        return False
    if proof.kind in (0, 1) and not (ma.pool_id == mb.pool_id == proof.culprit):
        return False
    if proof.kind == 0:
        return a.seq == b.seq == proof.where
    if proof.kind == 1:
        if a.payload.type != EPOCH or b.payload.type != EPOCH:
            return False
        ea, eb = a.payload.epoch, b.payload.epoch
        named_a = ma.message_id if ea.is_proposal else ea.acked
        named_b = mb.message_id if eb.is_proposal else eb.acked
        return (ea.number, ea.attempt) == (eb.number, eb.attempt) == tuple(proof.where) and named_a != named_b
    if proof.kind == 2:
        if a.payload.type != 3 or b.payload.type != 3 or proof.culprit != proof.topic:
            return False
        ba, bb = a.payload.ad.body, b.payload.ad.body
        return ba.version == bb.version == proof.where and ba.raw != bb.raw
    if proof.kind == 3:
        if a.payload.type != EPOCH or b.payload.type != EPOCH:
            return False
        ea, eb = a.payload.epoch, b.payload.epoch
        return ea.is_proposal and eb.is_proposal and ea.number == eb.number == proof.where
    return False
