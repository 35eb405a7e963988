"""The ordered validation checks of docs/protocol/validation.md section 6.2, in one place.

Every ingress (local submission, node-to-node sig submission, topic ingress) hands its
decoded messages to one :class:`Validator`, which answers with the first failing rule as a
typed error (or None). The order is the reference node's (``dmq-node:
DMQ/Protocol/SigSubmission/Validate.hs``): cheap clock and rate checks first, then the id,
the KES window, stake, the opcert counter, and the two signature checks last, so a flood of
stale or unknown-pool messages costs no cryptography.

A batch (one local submission, or one node-to-node reply) is processed against one reading
of the clocks, like the reference's validation context. Per-pool state changes only when a
message passes every check (:meth:`Validator._accept`, the one place that records it), and a
later message of the same batch sees the change.

Check 3 is a :class:`~dmq.validation.rate.RateRule` over the times the pool *signed*
(``expiresAt``), not the arrival times (:mod:`dmq.validation.rate`): a batch may carry a pool's
whole history, each message properly spaced in signed time, and all of it passes, while two
messages the pool signed too close together are refused in any order.

Two reference details that a straightforward port gets wrong are reproduced on purpose:

* KES periods are machine words: ``startKesPeriod + maxKESEvolutions`` wraps modulo 2^64,
  so an opcert starting near 2^64 has a tiny end period and check 5 rejects it, as in the
  reference (unbounded integers would accept it).
* A Sum6 verifier given an evolution of 64 or more takes the right branch at every level,
  which is evolution 63: with ``maxKESEvolutions`` above 64 the reference accepts period
  ``start + t`` (``t >= 64``) signed at evolution 63, and so does this validator.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, ClassVar, Iterable


from dmq.clock import Clock
from dmq.kes import SUM6_DEPTH, kes_verify
from dmq.message import DmqMessage
from dmq.opcert import verify_opcert
from dmq.stake import Eligibility, StakeView
from dmq.validation.errors import (
    ED25519_FAILURE_REASON,
    KES_HASH_FAILURE_REASON,
    InvalidKESSignature,
    InvalidOCertCounter,
    InvalidSigId,
    InvalidSignatureOCERT,
    KESAfterEndOCERT,
    KESBeforeStartOCERT,
    NotInitialized,
    PoolNotEligible,
    SigDuplicate,
    SigExpired,
    SigExpiresAtTooFarInTheFuture,
    SigValidationError,
    UnrecognizedPool,
)
from dmq.validation.opcert_cache import DEFAULT_OPCERT_CACHE_SIZE, OpcertCache, OpcertVerifier
from dmq.validation.pool_state import PoolState
from dmq.validation.rate import PoolSpacing, RateRule

__all__ = [
    "MIN_SIG_DELAY",
    "MAX_SIG_TTL",
    "Outcome",
    "KesVerifier",
    "Validator",
    "kes_failure_reason",
]

#: ``DMQ.Policy.minSigDelay``: seconds between two accepted messages of one pool (here: of signed time).
MIN_SIG_DELAY = 60.0
#: ``DMQ.Policy.maxSigExpiresAtDelay``: ``expiresAt`` must be strictly below now + this.
MAX_SIG_TTL = 1800

_WORD64 = (1 << 64) - 1
_LAST_SUM6_EVOLUTION = (1 << SUM6_DEPTH) - 1
_blake2b = hashlib.blake2b

_ELIGIBILITY_ERRORS: dict[Eligibility, type[SigValidationError]] = {
    Eligibility.UNRECOGNIZED: UnrecognizedPool,
    Eligibility.NOT_INITIALIZED: NotInitialized,
    Eligibility.NOT_ELIGIBLE: PoolNotEligible,
}


@dataclass(frozen=True, slots=True)
class Outcome:
    """The verdict on one message of a batch: accepted (``error is None``) or the error."""

    message: DmqMessage
    error: SigValidationError | None
    #: Neither accepted nor refused yet (a topic message waiting for its dependencies):
    #: not traced as either. Always False for the core's outcomes.
    deferred: ClassVar[bool] = False

    @property
    def accepted(self) -> bool:
        return self.error is None


def kes_failure_reason(hot_vk: bytes, evolution: int, signature: bytes, depth: int = SUM6_DEPTH) -> str:
    """The reference's reason text for a KES signature that did not verify.

    cardano-base's sum scheme answers ``"Reject"`` when a key pair on the path does not hash
    to the key above it, and the leaf Ed25519 verifier answers ``"Verification failed"``.
    Only called after a failure, so it walks the hashes once more instead of slowing down
    the verifier on the hot path.
    """
    expected = hot_vk
    end = len(signature)
    t = evolution
    half = 1 << depth
    for _ in range(depth):
        pair = signature[end - 64:end]
        if _blake2b(pair, digest_size=32).digest() != expected:
            return KES_HASH_FAILURE_REASON
        half >>= 1
        if t < half:
            expected = pair[:32]
        else:
            expected = pair[32:]
            t -= half
        end -= 64
    return ED25519_FAILURE_REASON


#: ``(hot_vk, evolution, signed bytes, signature) -> bool``: check 10's cryptography.
KesVerifier = Callable[[bytes, int, bytes, bytes], bool]


def _sum6_verify(hot_vk: bytes, evolution: int, message: bytes, signature: bytes,
                 verify: KesVerifier = kes_verify) -> bool:
    """Sum6KES verification with the reference's handling of evolutions past the last one."""
    if evolution > _LAST_SUM6_EVOLUTION:
        evolution = _LAST_SUM6_EVOLUTION
    return verify(hot_vk, evolution, message, signature)


class Validator:
    """The validation pipeline over a stake view, a clock and the per-pool state."""

    def __init__(
        self,
        stake_view: StakeView,
        clock: Clock,
        *,
        min_sig_delay: float = MIN_SIG_DELAY,
        max_ttl: int = MAX_SIG_TTL,
        state: PoolState | None = None,
        opcert_cache_size: int = DEFAULT_OPCERT_CACHE_SIZE,
        kes_verifier: KesVerifier = kes_verify,
        opcert_verifier: OpcertVerifier = verify_opcert,
    ) -> None:
        if min_sig_delay < 0:
            raise ValueError(f"min_sig_delay must be >= 0 seconds, got {min_sig_delay}")
        if max_ttl < 0:
            raise ValueError(f"max_ttl must be >= 0 seconds, got {max_ttl}")
        self.stake_view = stake_view
        self.clock = clock
        self.min_sig_delay = float(min_sig_delay)
        self.max_ttl = max_ttl
        self.state = state if state is not None else PoolState()
        #: Check 3 unless an ingress declares its own: the pool's spacing in signed time.
        self.spacing: RateRule = PoolSpacing(self.state.spacing, self.min_sig_delay)
        #: Check 9 behind the node's own cache: the real Ed25519 check of the cold signature; a
        #: simulated network shares one memo of its answers, as it does check 10's.
        self.opcert_cache = OpcertCache(opcert_verifier, opcert_cache_size)
        #: Check 10's verifier: the real Sum6KES one; a simulated network of thousands of nodes in
        #: one process shares one memo of its answers (docs/network-scale.md, "Simulated time").
        self.kes_verifier = kes_verifier

    # -- the checks ----------------------------------------------------------------------

    def _first_failure(self, msg: DmqMessage, now: float, rate: RateRule) -> SigValidationError | None:
        """Checks 1..10 in the reference order; the first failure wins. Changes no state.

        ``rate`` is check 3: the validator's spacing, or the rule an ingress declares (a topic
        instance's budgets). It runs after checks 1 and 2, so it never sees a message signed
        to expire before ``now`` (:mod:`dmq.validation.rate` relies on it).
        """
        expires_at = msg.expires_at
        # 1, 2: now <= expiresAt < now + maxTTL, compared exactly (int against float).
        if not now <= expires_at:
            return SigExpired()
        if not expires_at - self.max_ttl < now:
            return SigExpiresAtTooFarInTheFuture()

        # 3: rate limit on the pool's signed times.
        refused = rate.refusal(msg, now)
        if refused is not None:
            return refused
        pool_id = msg.pool_id
        state = self.state

        # 4: the carried id is the hash of the payload as received.
        if msg.legacy:
            if not msg.has_valid_id():
                return InvalidSigId()
        elif _blake2b(msg.signed_bytes, digest_size=32).digest() != msg.message_id:
            return InvalidSigId()

        # 5, 6: the KES period lies in the opcert window (word arithmetic, see module doc).
        opcert = msg.opcert
        start = opcert.start_kes_period
        period = msg.kes_period
        end = (start + self.stake_view.max_kes_evolutions) & _WORD64
        if not period < end:
            return KESAfterEndOCERT(end, period)
        if not period >= start:
            return KESBeforeStartOCERT(start, period)

        # 7: the pool has stake in the set snapshot (the common case without a method call).
        stake = self.stake_view.pools.get(pool_id)
        if stake is None or stake.set <= 0:
            return _ELIGIBILITY_ERRORS[self.stake_view.eligibility(pool_id)]()

        # 8: opcert counters never go down (equal is fine).
        issue = opcert.issue_number
        prev = state.opcert_counter(pool_id)
        if prev is not None and prev > issue:
            return InvalidOCertCounter(prev, issue)

        # 9: the cold key signed the opcert (remembered once it has).
        if not self.opcert_cache.verify(opcert, msg.cold_vk):
            return InvalidSignatureOCERT(issue, period, ED25519_FAILURE_REASON)

        # 10: the hot key signed the payload at evolution kesPeriod - startKesPeriod.
        evolution = period - start
        if not _sum6_verify(opcert.hot_vk, evolution, msg.signed_bytes, msg.kes_signature, self.kes_verifier):
            reason = kes_failure_reason(opcert.hot_vk, min(evolution, _LAST_SUM6_EVOLUTION), msg.kes_signature)
            return InvalidKESSignature(start, period, reason)
        return None

    def check(self, msg: DmqMessage, *, rate: RateRule | None = None) -> SigValidationError | None:
        """Validate one message at the clocks' current reading without changing any state.

        No duplicate check (that needs the mempool): see :meth:`process_batch`.
        """
        return self._first_failure(msg, self.clock.now(), rate or self.spacing)

    def accept(self, msg: DmqMessage, *, rate: RateRule | None = None, charged: bool = False) -> None:
        """Record that ``msg`` passed every check and is accepted (:meth:`_accept`, at the clock's reading now).

        Its signed time counts against its pool under ``rate`` (check 3's rule; not again when
        ``charged``, a topic message charged when it was parked) and its opcert counter
        becomes the pool's. Called by :meth:`process_batch`, or by an ingress's commit when a
        later stage could still refuse the message.
        """
        self._accept(msg, rate or self.spacing, self.clock.now(), charged)

    def _accept(self, msg: DmqMessage, rate: RateRule, now: float, charged: bool = False) -> None:
        """:meth:`accept` at the wall time ``now`` (a batch's one reading of the clock): the one place
        a pool's state changes."""
        if not charged:
            rate.charge(msg, now)
        self.state.record_accepted(msg.pool_id, msg.opcert.issue_number, self.clock.monotonic(), now)

    def process_batch(self, msgs: Iterable[DmqMessage], is_known: Callable[[bytes], bool], *,
                      seen: set[bytes] | None = None, rate: RateRule | None = None,
                      record: bool = True) -> list[Outcome]:
        """docs/protocol/validation.md 6.1 steps 2 and 3 for one batch; one outcome per message, in order.

        ``is_known(id)`` answers whether the mempool holds that id. A message whose id is
        known, or in ``seen`` (the ids met earlier in the batch, shared when the caller
        feeds one batch in several calls), is ``SigDuplicate`` and not validated.
        ``rate`` replaces check 3 (see :meth:`_first_failure`). With ``record`` a passing
        message is accepted at once (:meth:`accept`); without, the caller accepts it when it
        commits the message (an ingress whose later stages may still refuse it).
        The caller appends the accepted messages to the mempool (step 4).
        """
        now = self.clock.now()
        rule = rate or self.spacing
        if seen is None:
            seen = set()
        outcomes: list[Outcome] = []
        for msg in msgs:
            message_id = msg.message_id
            if message_id in seen or is_known(message_id):
                outcomes.append(Outcome(msg, SigDuplicate()))
                continue
            seen.add(message_id)
            error = self._first_failure(msg, now, rule)
            if error is None and record:
                self._accept(msg, rule, now)
            outcomes.append(Outcome(msg, error))
        return outcomes

    def process_one(self, msg: DmqMessage, is_known: Callable[[bytes], bool]) -> Outcome:
        """A batch of one: what a local submission is."""
        return self.process_batch((msg,), is_known)[0]
