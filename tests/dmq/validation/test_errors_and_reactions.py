"""Error texts (Haskell ``show``), the reaction table and the local reject encoding (docs/protocol/validation.md 6.2, docs/protocol/local-protocols.md 7.2)."""

from __future__ import annotations

import inspect

import pytest

import dmq.validation.errors as errors_module
from dmq.validation import (
    ALL_ERROR_TYPES,
    REACTION_TABLE,
    InvalidKESSignature,
    InvalidOCertCounter,
    InvalidSigId,
    InvalidSignatureOCERT,
    KESAfterEndOCERT,
    KESBeforeStartOCERT,
    LocalRejectKind,
    NotInitialized,
    PeerReaction,
    PoolNotEligible,
    ReactionPolicy,
    SigDuplicate,
    SigExpired,
    SigExpiresAtTooFarInTheFuture,
    SigResultOther,
    SigTooFrequent,
    SigValidationError,
    TopicRejected,
    UnrecognizedPool,
    encode_local_reject_reason,
    local_reject_reason,
)
from dmq.validation.haskell_show import show_diff_time

POOL = bytes.fromhex("d9899c574fd7a710732391706b59e878bfd416214c49d2b3841c5c8b")

EXAMPLES = [
    (SigExpired(), "SigExpired"),
    (SigExpiresAtTooFarInTheFuture(), "SigExpiresAtTooFarInTheFuture"),
    (SigTooFrequent(POOL, 1.25), f'SigTooFrequent (KeyHash {{unKeyHash = "{POOL.hex()}"}}) 1.25s'),
    (InvalidSigId(), "InvalidSigId"),
    (KESAfterEndOCERT(62, 70), "KESAfterEndOCERT (KESPeriod 62) (KESPeriod 70)"),
    (KESBeforeStartOCERT(10, 9), "KESBeforeStartOCERT (KESPeriod 10) (KESPeriod 9)"),
    (UnrecognizedPool(), "UnrecognizedPool"),
    (NotInitialized(), "NotInitialized"),
    (PoolNotEligible(), "PoolNotEligible"),
    (InvalidOCertCounter(3, 2), "InvalidOCertCounter 3 2"),
    (InvalidSignatureOCERT(1, 5, "Verification failed"), 'InvalidSignatureOCERT 1 (KESPeriod 5) "Verification failed"'),
    (InvalidKESSignature(0, 5, "Reject"), 'InvalidKESSignature (KESPeriod 0) (KESPeriod 5) "Reject"'),
    (SigDuplicate(), "SigDuplicate"),
    (SigResultOther('say "hi"'), 'SigResultOther "say \\"hi\\""'),
    (TopicRejected("upsycle", "malformed", 1), "topic:upsycle:malformed"),
]


@pytest.mark.parametrize(("error", "text"), EXAMPLES, ids=lambda v: type(v).__name__ if isinstance(v, Exception) else "")
def test_show_text(error, text):
    assert str(error) == text == error.show()
    assert error.constructor == type(error).__name__


def test_examples_cover_every_error_type():
    assert [type(e) for e, _ in EXAMPLES] == list(ALL_ERROR_TYPES)


def test_errors_compare_by_rule_and_arguments():
    assert KESAfterEndOCERT(62, 70) == KESAfterEndOCERT(62, 70)
    assert KESAfterEndOCERT(62, 70) != KESAfterEndOCERT(62, 71)
    assert KESAfterEndOCERT(62, 70) != KESBeforeStartOCERT(62, 70)
    assert len({SigExpired(), SigExpired(), InvalidSigId()}) == 2
    with pytest.raises(InvalidSigId):
        raise InvalidSigId()


def test_every_error_class_is_in_the_table():
    defined = {
        obj for _, obj in inspect.getmembers(errors_module, inspect.isclass)
        if issubclass(obj, SigValidationError) and obj is not SigValidationError
    }
    assert defined == set(ALL_ERROR_TYPES) == set(REACTION_TABLE)


def test_reference_reactions():
    disconnect = {SigExpiresAtTooFarInTheFuture, SigTooFrequent, InvalidSigId, KESAfterEndOCERT,
                  KESBeforeStartOCERT, InvalidOCertCounter, InvalidSignatureOCERT, InvalidKESSignature,
                  SigResultOther}
    for error_type, reaction in REACTION_TABLE.items():
        expected = PeerReaction.DISCONNECT if error_type in disconnect else PeerReaction.TRACE
        assert reaction.peer is expected, error_type.__name__
    local = {t: r.local for t, r in REACTION_TABLE.items()}
    assert local.pop(SigDuplicate) is LocalRejectKind.ALREADY_RECEIVED
    assert local.pop(SigExpired) is LocalRejectKind.EXPIRED
    assert local.pop(SigResultOther) is LocalRejectKind.OTHER
    assert local.pop(TopicRejected) is LocalRejectKind.OTHER
    assert set(local.values()) == {LocalRejectKind.INVALID}


def test_timing_errors_can_be_made_trace_only():
    default, lenient = ReactionPolicy(), ReactionPolicy(trace_timing_errors=True)
    for error, _ in EXAMPLES:
        before, after = default.reaction(error), lenient.reaction(error)
        assert after.local is before.local
        if isinstance(error, (SigTooFrequent, SigExpiresAtTooFarInTheFuture)):
            assert (before.peer, after.peer) == (PeerReaction.DISCONNECT, PeerReaction.TRACE)
        else:
            assert after.peer is before.peer
    assert default.peer_reaction(InvalidSigId()) is PeerReaction.DISCONNECT


@pytest.mark.parametrize(
    ("error", "reason_hex"),
    [
        # docs/protocol/local-protocols.md 7.2: MsgRejectMessage = 82 02 <reason>
        (SigDuplicate(), "8101"),
        (SigExpired(), "8102"),
        (SigResultOther("custom"), "82036822637573746f6d22"),
        (InvalidSigId(), "82006c496e76616c69645369674964"),
    ],
)
def test_local_reject_reason_bytes(error, reason_hex):
    assert encode_local_reject_reason(error).hex() == reason_hex


def test_local_reject_reason_values():
    assert local_reject_reason(KESAfterEndOCERT(62, 70)) == [0, "KESAfterEndOCERT (KESPeriod 62) (KESPeriod 70)"]
    assert local_reject_reason(SigResultOther("custom")) == [3, '"custom"']
    assert local_reject_reason(SigDuplicate()) == [1]


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0.0, "0s"), (60.0, "60s"), (12.5, "12.5s"), (0.001, "0.001s"), (1e-9, "0.000000001s"),
     (59.999999999, "59.999999999s"), (1012.345678 - 1000.0, "12.345678s"), (-1.5, "-1.5s")],
)
def test_show_diff_time(seconds, shown):
    assert show_diff_time(seconds) == shown
