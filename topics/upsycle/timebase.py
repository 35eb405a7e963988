"""UPSYCLE time: minutes since 2020-01-01 and the lifetimes derived from them (docs/topics-design.md 4.4).

The design counts expiry in minutes since 2020-01-01T00:00Z in a 32-bit field; the node works
in POSIX seconds. The conversion is plain unsigned arithmetic without leap seconds, and the
three lifetimes of a message (network, queue, validation bound) are computed here only, so
that wrapping and validation can never disagree.
"""

from __future__ import annotations

from .params import UpsycleParams

__all__ = [
    "UPSYCLE_EPOCH",
    "UINT32_MAX",
    "minutes_to_posix",
    "posix_to_minutes",
    "wrap_expires_at",
    "queue_deadline",
]

#: 2020-01-01T00:00:00Z in POSIX seconds.
UPSYCLE_EPOCH = 1_577_836_800
UINT32_MAX = 0xFFFF_FFFF


def minutes_to_posix(exp: int) -> int:
    """E = 1 577 836 800 + 60 x ``exp``; ``exp`` = 2^32 - 1 is a valid far-future value."""
    if not 0 <= exp <= UINT32_MAX:
        raise ValueError(f"exp must be a 32-bit unsigned value, got {exp}")
    return UPSYCLE_EPOCH + 60 * exp


def posix_to_minutes(t: int) -> int:
    """The largest ``exp`` whose POSIX time is not after ``t`` (for building messages)."""
    if t < UPSYCLE_EPOCH:
        raise ValueError("times before 2020-01-01 have no UPSYCLE expiry")
    return min(UINT32_MAX, (int(t) - UPSYCLE_EPOCH) // 60)


def wrap_expires_at(inner_expiry: int, ttl: int, now: int, params: UpsycleParams) -> int:
    """``expiresAt = min(E, t + max(ttl, F), t + M)`` for a message the node wraps at ``now``."""
    return min(inner_expiry, now + max(ttl, params.lifetime_floor), now + params.max_network_lifetime)


def queue_deadline(inner_expiry: int, ttl: int, arrival: int, params: UpsycleParams) -> int:
    """``min(E, a + ttl, a + Q)``: the design's store-and-forward lifetime, fixed at arrival."""
    return min(inner_expiry, arrival + ttl, arrival + params.queue_lifetime)
