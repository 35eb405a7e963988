"""What each validation error means to the two kinds of sender (docs/protocol/validation.md 6.2, docs/protocol/local-protocols.md 7.2).

A local client always gets a reject reason and keeps its connection; the reason's tag
depends on the error. A node-to-node peer either has its message dropped with a trace, or is
disconnected, because the reference node throws for any error it considers a protocol
violation. Both answers are a lookup in one table, so local submission, node-to-node ingress
and topic ingress cannot drift apart.

The reference disconnects a peer for ``SigTooFrequent`` and ``SigExpiresAtTooFarInTheFuture``,
two errors an honest relay can trigger through clock skew or jitter (docs/protocol/validation.md section 6.11).
:class:`ReactionPolicy` can make those two trace-only: still rejected, so nothing a reference
peer would refuse is ever relayed, but the connection stays up.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import cbor2

from dmq.validation.errors import (
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
    SigTooFrequent,
    SigValidationError,
    TopicRejected,
    UnrecognizedPool,
)
from handshake.term_text import haskell_string

__all__ = [
    "LocalRejectKind",
    "PeerReaction",
    "Reaction",
    "REACTION_TABLE",
    "TIMING_ERRORS",
    "ReactionPolicy",
    "local_reject_reason",
    "encode_local_reject_reason",
]


class LocalRejectKind(enum.IntEnum):
    """The tag of a local-submission reject reason: ``[0, text] / [1] / [2] / [3, text]``."""

    INVALID = 0
    ALREADY_RECEIVED = 1
    EXPIRED = 2
    OTHER = 3


class PeerReaction(enum.Enum):
    """What happens to a node-to-node peer that sent a rejected message."""

    TRACE = "trace"            # drop the message, trace it, keep the connection
    DISCONNECT = "disconnect"  # drop the message and close the connection


@dataclass(frozen=True, slots=True)
class Reaction:
    local: LocalRejectKind
    peer: PeerReaction


_INVALID_DISCONNECT = Reaction(LocalRejectKind.INVALID, PeerReaction.DISCONNECT)
_INVALID_TRACE = Reaction(LocalRejectKind.INVALID, PeerReaction.TRACE)

#: The reference reactions (``dmq-node: app/Main.hs`` mempool writers, ``LocalMsgSubmission/Codec.hs``).
REACTION_TABLE: Mapping[type[SigValidationError], Reaction] = MappingProxyType({
    SigExpired: Reaction(LocalRejectKind.EXPIRED, PeerReaction.TRACE),
    SigExpiresAtTooFarInTheFuture: _INVALID_DISCONNECT,
    SigTooFrequent: _INVALID_DISCONNECT,
    InvalidSigId: _INVALID_DISCONNECT,
    KESAfterEndOCERT: _INVALID_DISCONNECT,
    KESBeforeStartOCERT: _INVALID_DISCONNECT,
    UnrecognizedPool: _INVALID_TRACE,
    NotInitialized: _INVALID_TRACE,
    PoolNotEligible: _INVALID_TRACE,
    InvalidOCertCounter: _INVALID_DISCONNECT,
    InvalidSignatureOCERT: _INVALID_DISCONNECT,
    InvalidKESSignature: _INVALID_DISCONNECT,
    SigDuplicate: Reaction(LocalRejectKind.ALREADY_RECEIVED, PeerReaction.TRACE),
    SigResultOther: Reaction(LocalRejectKind.OTHER, PeerReaction.DISCONNECT),
    TopicRejected: Reaction(LocalRejectKind.OTHER, PeerReaction.TRACE),
})

#: The two errors that clock skew and network jitter can cause between honest nodes.
TIMING_ERRORS: frozenset[type[SigValidationError]] = frozenset({SigTooFrequent, SigExpiresAtTooFarInTheFuture})


@dataclass(frozen=True, slots=True)
class ReactionPolicy:
    """The reaction table with its one configurable knob.

    ``trace_timing_errors``: when true, ``SigTooFrequent`` and
    ``SigExpiresAtTooFarInTheFuture`` from a node-to-node peer are traced instead of
    disconnecting it. Default false: exactly the reference.
    """

    trace_timing_errors: bool = False

    def reaction(self, error: SigValidationError) -> Reaction:
        error_type = type(error)
        try:
            reaction = REACTION_TABLE[error_type]
        except KeyError:
            raise TypeError(f"no reaction is defined for {error_type.__name__}") from None
        if self.trace_timing_errors and error_type in TIMING_ERRORS:
            return Reaction(reaction.local, PeerReaction.TRACE)
        return reaction

    def peer_reaction(self, error: SigValidationError) -> PeerReaction:
        return self.reaction(error).peer


def local_reject_reason(error: SigValidationError) -> list[int | str]:
    """The reject reason value of ``MsgRejectMessage`` (docs/protocol/local-protocols.md section 7.2).

    ``[0, show err]`` for validation errors, ``[1]`` duplicate, ``[2]`` expired, and
    ``[3, show text]`` for ``SigResultOther`` (the show of the *inner* text, quotes included).
    """
    kind = REACTION_TABLE[type(error)].local
    if kind is LocalRejectKind.INVALID:
        return [int(kind), error.show()]
    if isinstance(error, TopicRejected):
        return [int(kind), error.text]
    if kind is LocalRejectKind.OTHER:
        assert isinstance(error, SigResultOther)
        return [int(kind), haskell_string(error.text)]
    return [int(kind)]


def encode_local_reject_reason(error: SigValidationError) -> bytes:
    """The reason as CBOR: a definite array, a definite text string (what Pallas decodes)."""
    return cbor2.dumps(local_reject_reason(error))
