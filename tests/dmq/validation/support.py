"""Real keys and real messages for the validation tests.

Cold keys come from fixed 32-byte seeds, KES keys from fixed seeds (generating a Sum6 key
costs about a millisecond, so each is built once per process), and every message is built
and signed by the project's own codec, KES and opcert modules: nothing here is a fake.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from dmq.clock import ManualClock
from dmq.codec import build_message, decode_message, encode_message
from dmq.kes import KesSigningKey
from dmq.message import DmqMessage, OperationalCertificate
from dmq.opcert import cold_verification_key, issue_opcert, pool_id_of
from dmq.stake import PoolStake, StakeView
from dmq.validation import Validator

#: A wall time comfortably inside the 32-bit expiresAt range, and a monotonic origin.
NOW = 1_800_000_000.0
MONO = 1_000.0
TTL = 600
STAKE = PoolStake(1_000_000, 2_000_000, 3_000_000)


@functools.cache
def kes_key(seed_byte: int) -> KesSigningKey:
    """The period-0 Sum6 key grown from 32 copies of ``seed_byte`` (never evolved: signing regenerates)."""
    return KesSigningKey.generate(bytes([seed_byte]) * 32)


@dataclass(frozen=True)
class Pool:
    """A stake pool's cold key and one KES key."""

    index: int
    cold_seed: bytes
    cold_vk: bytes
    kes: KesSigningKey

    @property
    def pool_id(self) -> bytes:
        return pool_id_of(self.cold_vk)

    def opcert(self, issue: int = 0, start: int = 0) -> OperationalCertificate:
        return _opcert(self.index, issue, start)

    def message(
        self,
        *,
        period: int = 5,
        expires_at: int | None = None,
        body: bytes | None = None,
        issue: int = 0,
        start: int = 0,
        opcert: OperationalCertificate | None = None,
        sign_period: int | None = None,
        nonce: int = 0,
    ) -> DmqMessage:
        """A correctly signed message (unless told to sign at another evolution)."""
        if expires_at is None:
            expires_at = int(NOW) + TTL
        if body is None:
            body = bytes([self.index]) * 90 + nonce.to_bytes(8, "big")
        return build_message(
            body,
            period,
            expires_at,
            self.kes,
            opcert if opcert is not None else self.opcert(issue, start),
            self.cold_vk,
            sign_period=sign_period,
        )


@functools.cache
def pool(index: int) -> Pool:
    """Pool number ``index`` (1..200): cold seed ``0xC0 ^ index`` repeated, KES seed ``index``."""
    cold_seed = bytes([0xC0 ^ index]) * 32
    return Pool(index, cold_seed, cold_verification_key(cold_seed), kes_key(index))


@functools.cache
def _opcert(index: int, issue: int, start: int) -> OperationalCertificate:
    p = pool(index)
    return issue_opcert(p.cold_seed, p.kes.verification_key(), issue, start)


def with_message_id(msg: DmqMessage, message_id: bytes) -> DmqMessage:
    """The same message carrying another id, re-decoded from real bytes."""
    raw = encode_message(msg.signed_bytes, msg.kes_signature, msg.opcert, msg.cold_vk, message_id=message_id)
    return decode_message(raw)


def with_parts(
    msg: DmqMessage,
    *,
    kes_signature: bytes | None = None,
    opcert: OperationalCertificate | None = None,
    cold_vk: bytes | None = None,
) -> DmqMessage:
    """The same payload and id with other signature, opcert or cold key, as real bytes."""
    raw = encode_message(
        msg.signed_bytes,
        kes_signature if kes_signature is not None else msg.kes_signature,
        opcert if opcert is not None else msg.opcert,
        cold_vk if cold_vk is not None else msg.cold_vk,
        message_id=msg.message_id,
    )
    return decode_message(raw)


def flip_bit(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


def ready_view(*pools: Pool, max_kes_evolutions: int = 62, stake: PoolStake = STAKE, clock=None) -> StakeView:
    view = StakeView(clock or ManualClock(NOW, MONO), max_kes_evolutions=max_kes_evolutions)
    view.update({p.pool_id: stake for p in pools}, 500)
    return view


def validator_for(*pools: Pool, now: float = NOW, mono: float = MONO, **kwargs) -> tuple[Validator, ManualClock]:
    clock = ManualClock(now, mono)
    max_kes = kwargs.pop("max_kes_evolutions", 62)
    return Validator(ready_view(*pools, max_kes_evolutions=max_kes, clock=clock), clock, **kwargs), clock


def never_known(_message_id: bytes) -> bool:
    return False
