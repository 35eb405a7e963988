"""One typed error per validation rule, named and shown as the reference node shows it.

The class names are the reference constructors of ``SigValidationError``
(``IntersectMBO/dmq-node: DMQ/Protocol/SigSubmission/Type.hs``), and ``str(err)`` is the
Haskell ``show`` of the value, e.g. ``KESAfterEndOCERT (KESPeriod 62) (KESPeriod 70)``. That
text is what a local client receives inside ``[0, text]`` and what the trace records, so
logs of this node and of the reference read the same.

Errors are exceptions so a caller may raise one (node-to-node ingress turns a disconnecting
error into a connection failure), but the validator *returns* them: a rejected message is an
expected outcome, not a failure of the validator. Two errors compare equal when they are the
same rule with the same arguments.
"""

from __future__ import annotations

from dmq.validation.haskell_show import show_diff_time, show_key_hash_arg, show_kes_period_arg
from handshake.term_text import haskell_string

__all__ = [
    "SigValidationError",
    "SigExpired",
    "SigExpiresAtTooFarInTheFuture",
    "SigTooFrequent",
    "InvalidSigId",
    "KESAfterEndOCERT",
    "KESBeforeStartOCERT",
    "UnrecognizedPool",
    "NotInitialized",
    "PoolNotEligible",
    "InvalidOCertCounter",
    "InvalidSignatureOCERT",
    "InvalidKESSignature",
    "SigDuplicate",
    "SigResultOther",
    "TopicRejected",
    "ALL_ERROR_TYPES",
    "ED25519_FAILURE_REASON",
    "KES_HASH_FAILURE_REASON",
]

#: The reason text of a failed Ed25519 verification in cardano-crypto-class.
ED25519_FAILURE_REASON = "Verification failed"
#: The reason text of a Sum-KES signature whose key pair does not hash to the expected key.
KES_HASH_FAILURE_REASON = "Reject"


class SigValidationError(Exception):
    """A message failed a validation rule. ``str()`` is the reference ``show`` text."""

    def show(self) -> str:
        return type(self).__name__

    @property
    def constructor(self) -> str:
        """The reference constructor name, e.g. ``InvalidSigId``."""
        return type(self).__name__

    def __str__(self) -> str:
        return self.show()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(a) for a in self.args)})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.args == other.args  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.args))


class SigExpired(SigValidationError):
    """Check 1: ``now > expiresAt``."""


class SigExpiresAtTooFarInTheFuture(SigValidationError):
    """Check 2: ``expiresAt >= now + 1800``."""


class SigTooFrequent(SigValidationError):
    """Check 3: the pool had a message accepted less than ``minSigDelay`` ago."""

    def __init__(self, pool_id: bytes, since_last: float) -> None:
        super().__init__(pool_id, since_last)
        self.pool_id = pool_id
        self.since_last = since_last

    def show(self) -> str:
        return f"SigTooFrequent {show_key_hash_arg(self.pool_id)} {show_diff_time(self.since_last)}"


class InvalidSigId(SigValidationError):
    """Check 4: the carried id is not Blake2b-256 of the signed bytes."""


class KESAfterEndOCERT(SigValidationError):
    """Check 5: ``kesPeriod >= startKesPeriod + maxKESEvolutions`` (``end`` is that sum)."""

    def __init__(self, end: int, period: int) -> None:
        super().__init__(end, period)
        self.end = end
        self.period = period

    def show(self) -> str:
        return f"KESAfterEndOCERT {show_kes_period_arg(self.end)} {show_kes_period_arg(self.period)}"


class KESBeforeStartOCERT(SigValidationError):
    """Check 6: ``kesPeriod < startKesPeriod``."""

    def __init__(self, start: int, period: int) -> None:
        super().__init__(start, period)
        self.start = start
        self.period = period

    def show(self) -> str:
        return f"KESBeforeStartOCERT {show_kes_period_arg(self.start)} {show_kes_period_arg(self.period)}"


class UnrecognizedPool(SigValidationError):
    """Check 7: a stake snapshot is installed and the pool is not in it."""


class NotInitialized(SigValidationError):
    """Check 7: no stake snapshot has been installed yet."""


class PoolNotEligible(SigValidationError):
    """Check 7: the pool is in the snapshot with zero *set* stake."""


class InvalidOCertCounter(SigValidationError):
    """Check 8: the opcert issue number went down (``prev > new``)."""

    def __init__(self, prev: int, new: int) -> None:
        super().__init__(prev, new)
        self.prev = prev
        self.new = new

    def show(self) -> str:
        return f"InvalidOCertCounter {self.prev} {self.new}"


class InvalidSignatureOCERT(SigValidationError):
    """Check 9: the cold key's signature over the opcert does not verify.

    The reference passes the opcert counter and the *message's* KES period (not the
    opcert's start period) to this constructor; so does this one.
    """

    def __init__(self, issue: int, period: int, reason: str = ED25519_FAILURE_REASON) -> None:
        super().__init__(issue, period, reason)
        self.issue = issue
        self.period = period
        self.reason = reason

    def show(self) -> str:
        return f"InvalidSignatureOCERT {self.issue} {show_kes_period_arg(self.period)} {haskell_string(self.reason)}"


class InvalidKESSignature(SigValidationError):
    """Check 10: the Sum6KES signature over the signed bytes does not verify."""

    def __init__(self, start: int, period: int, reason: str) -> None:
        super().__init__(start, period, reason)
        self.start = start
        self.period = period
        self.reason = reason

    def show(self) -> str:
        return (
            f"InvalidKESSignature {show_kes_period_arg(self.start)} "
            f"{show_kes_period_arg(self.period)} {haskell_string(self.reason)}"
        )


class SigDuplicate(SigValidationError):
    """The id is already in the mempool, or earlier in the same batch (not validated)."""


class SigResultOther(SigValidationError):
    """Never produced by validation; exists so every reference reject can be represented."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def show(self) -> str:
        return f"SigResultOther {haskell_string(self.text)}"


class TopicRejected(SigValidationError):
    """A topic rule refused a message that passed DMQ validation (docs/topics-design.md 2.5, 2.10).

    Never a disconnect (reference nodes cannot check adapters); a local client reads
    ``[3, "topic:<adapter>:<reason>"]``.
    """

    def __init__(self, adapter: str, reason: str, code: int = 0, detail: str = "") -> None:
        super().__init__(adapter, reason, code, detail)
        self.adapter = adapter
        self.reason = reason
        self.code = code
        self.detail = detail

    @property
    def text(self) -> str:
        return f"topic:{self.adapter}:{self.reason}"

    def show(self) -> str:
        return self.text


#: Every concrete error type, in the order of docs/protocol/validation.md section 6.2.
ALL_ERROR_TYPES: tuple[type[SigValidationError], ...] = (
    SigExpired,
    SigExpiresAtTooFarInTheFuture,
    SigTooFrequent,
    InvalidSigId,
    KESAfterEndOCERT,
    KESBeforeStartOCERT,
    UnrecognizedPool,
    NotInitialized,
    PoolNotEligible,
    InvalidOCertCounter,
    InvalidSignatureOCERT,
    InvalidKESSignature,
    SigDuplicate,
    SigResultOther,
    TopicRejected,
)
