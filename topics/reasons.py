"""The numbered reject reasons of docs/topics-design.md 2.10.

A reason is a number and a name: protocol 1000 sends ``[code, name, ? retryAfter]``, and
protocol 14 answers ``"topic:<adapter>:<name>"``. Codes 1 to 22 belong to the framework;
adapters define their own with :func:`adapter_reason` in the range the specification gives
them (Blocklace 32..47, dmsg 48..63), so two adapters can never reuse a number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "RejectReason",
    "adapter_reason",
    "reason_by_code",
    "CORE_REASONS",
    "ADAPTER_RANGES",
    "MALFORMED",
    "NON_CANONICAL",
    "TOO_LARGE",
    "UNKNOWN_TOPIC",
    "TOPIC_NOT_CARRIED",
    "BAD_SIGNATURE",
    "INNER_EXPIRED",
    "EXPIRY_EXCEEDS_INNER",
    "EXPIRY_EXCEEDS_BOUND",
    "DUPLICATE_INNER",
    "UNSOLICITED",
    "ANSWER_QUOTA",
    "RATE_LIMITED",
    "NOT_AUTHORIZED",
    "NO_SIGNER",
    "STALE",
    "CONFLICT",
    "NOT_FRESH",
    "BUSY",
    "BUFFER_OVERFLOW",
    "LIMIT_REACHED",
    "SIGNING_STOPPED",
]


@dataclass(frozen=True, slots=True)
class RejectReason:
    """One numbered reason; ``name`` is the text sent on the wire."""

    code: int
    name: str

    def wire(self, retry_after: int | None = None) -> list[Any]:
        """``reason = [code, text, ? retryAfter]`` (docs/topics-design.md 3.5)."""
        return [self.code, self.name] if retry_after is None else [self.code, self.name, int(retry_after)]

    def submission_text(self, adapter: str) -> str:
        """The protocol 14 reject text: ``topic:<adapter>:<reason>`` (docs/topics-design.md 2.5)."""
        return f"topic:{adapter}:{self.name}"

    def __str__(self) -> str:
        return self.name


MALFORMED = RejectReason(1, "malformed")
NON_CANONICAL = RejectReason(2, "non_canonical")
TOO_LARGE = RejectReason(3, "too_large")
UNKNOWN_TOPIC = RejectReason(4, "unknown_topic")
TOPIC_NOT_CARRIED = RejectReason(5, "topic_not_carried")
BAD_SIGNATURE = RejectReason(6, "bad_signature")
INNER_EXPIRED = RejectReason(7, "inner_expired")
EXPIRY_EXCEEDS_INNER = RejectReason(8, "expiry_exceeds_inner")
EXPIRY_EXCEEDS_BOUND = RejectReason(9, "expiry_exceeds_bound")
DUPLICATE_INNER = RejectReason(10, "duplicate_inner")
UNSOLICITED = RejectReason(11, "unsolicited")
ANSWER_QUOTA = RejectReason(12, "answer_quota")
RATE_LIMITED = RejectReason(13, "rate_limited")
NOT_AUTHORIZED = RejectReason(14, "not_authorized")
NO_SIGNER = RejectReason(15, "no_signer")
STALE = RejectReason(16, "stale")
CONFLICT = RejectReason(17, "conflict")
NOT_FRESH = RejectReason(18, "not_fresh")
BUSY = RejectReason(19, "busy")
BUFFER_OVERFLOW = RejectReason(20, "buffer_overflow")
#: A cap on what local clients make the node hold (subscriptions, queued bytes, disk share);
#: protocol 1000 sends the name followed by the cap, e.g. ``limit_reached: durable
#: subscriptions in total (1024)``.
LIMIT_REACHED = RejectReason(21, "limit_reached")
#: The node stopped signing for its pool where it saw a block of the pool it did not sign
#: (another node with the same key, or a database older than the pool's history).
SIGNING_STOPPED = RejectReason(22, "signing_stopped")

CORE_REASONS: tuple[RejectReason, ...] = (
    MALFORMED, NON_CANONICAL, TOO_LARGE, UNKNOWN_TOPIC, TOPIC_NOT_CARRIED, BAD_SIGNATURE,
    INNER_EXPIRED, EXPIRY_EXCEEDS_INNER, EXPIRY_EXCEEDS_BOUND, DUPLICATE_INNER, UNSOLICITED,
    ANSWER_QUOTA, RATE_LIMITED, NOT_AUTHORIZED, NO_SIGNER, STALE, CONFLICT, NOT_FRESH, BUSY,
    BUFFER_OVERFLOW, LIMIT_REACHED, SIGNING_STOPPED,
)

#: The code ranges adapters own (inclusive); the framework's own codes are 1..22.
ADAPTER_RANGES: dict[str, range] = {
    "blocklace": range(32, 48),
    "dmsg": range(48, 64),
}

_BY_CODE: dict[int, RejectReason] = {r.code: r for r in CORE_REASONS}


def adapter_reason(adapter: str, code: int, name: str) -> RejectReason:
    """Declare an adapter's own reason, checking it lies in the adapter's range.

    Declaring the same (code, name) twice returns the same reason; a clash raises, because
    a client reading the code must be able to trust the name.
    """
    allowed = ADAPTER_RANGES.get(adapter)
    if allowed is None or code not in allowed:
        raise ValueError(f"reason code {code} is outside the range of adapter {adapter!r}")
    existing = _BY_CODE.get(code)
    if existing is not None:
        if existing.name != name:
            raise ValueError(f"reason code {code} is already {existing.name!r}")
        return existing
    reason = RejectReason(code, name)
    _BY_CODE[code] = reason
    return reason


def reason_by_code(code: int) -> RejectReason | None:
    """The reason with ``code``, core or declared by a loaded adapter."""
    return _BY_CODE.get(code)
