"""Message validation: the ordered checks, their typed errors and the reactions to them.

* :mod:`~dmq.validation.errors`: one error class per rule, shown as the reference shows it.
* :mod:`~dmq.validation.reactions`: the table from error to local reject reason and to
  node-to-node reaction (trace or disconnect).
* :mod:`~dmq.validation.pipeline`: :class:`Validator`, the checks in order, batches.
* :mod:`~dmq.validation.rate`: check 3, token buckets over the times pools signed.
* :mod:`~dmq.validation.pool_state`: per-pool signed times, opcert counter, last acceptance.
* :mod:`~dmq.validation.opcert_cache`: verified opcerts, so a pool pays one Ed25519 check.
"""

from dmq.validation.errors import (
    ALL_ERROR_TYPES,
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
    SigResultOther,
    TopicRejected,
    SigTooFrequent,
    SigValidationError,
    UnrecognizedPool,
)
from dmq.validation.opcert_cache import DEFAULT_OPCERT_CACHE_SIZE, OpcertCache
from dmq.validation.pipeline import MAX_SIG_TTL, MIN_SIG_DELAY, Outcome, Validator, kes_failure_reason
from dmq.validation.pool_state import PoolState
from dmq.validation.rate import BucketPolicy, PoolSpacing, RateRule, Schedule, SignedBudgets
from dmq.validation.reactions import (
    REACTION_TABLE,
    TIMING_ERRORS,
    LocalRejectKind,
    PeerReaction,
    Reaction,
    ReactionPolicy,
    encode_local_reject_reason,
    local_reject_reason,
)

__all__ = [
    "ALL_ERROR_TYPES",
    "DEFAULT_OPCERT_CACHE_SIZE",
    "InvalidKESSignature",
    "InvalidOCertCounter",
    "InvalidSigId",
    "InvalidSignatureOCERT",
    "KESAfterEndOCERT",
    "KESBeforeStartOCERT",
    "LocalRejectKind",
    "MAX_SIG_TTL",
    "MIN_SIG_DELAY",
    "NotInitialized",
    "OpcertCache",
    "Outcome",
    "RateRule",
    "PoolSpacing",
    "BucketPolicy",
    "Schedule",
    "SignedBudgets",
    "PeerReaction",
    "PoolNotEligible",
    "PoolState",
    "REACTION_TABLE",
    "Reaction",
    "ReactionPolicy",
    "SigDuplicate",
    "SigExpired",
    "SigExpiresAtTooFarInTheFuture",
    "SigResultOther",
    "TopicRejected",
    "SigTooFrequent",
    "SigValidationError",
    "TIMING_ERRORS",
    "UnrecognizedPool",
    "Validator",
    "encode_local_reject_reason",
    "kes_failure_reason",
    "local_reject_reason",
]
