"""Properties: tampering is always rejected, honest messages inside the opcert window never are."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dmq.codec import MessageDecodeError, decode_message, encode_message
from dmq.message import OperationalCertificate

from .support import NOW, flip_bit, pool, validator_for

P = pool(21)
HONEST = P.message(issue=3, start=40, period=47)
VALIDATOR, _CLOCK = validator_for(P)
assert VALIDATOR.check(HONEST) is None


def _tampered_is_rejected(raw: bytes) -> bool:
    try:
        msg = decode_message(raw)
    except MessageDecodeError:
        return True  # the node refuses it before validation (a protocol error)
    return VALIDATOR.check(msg) is not None


@given(st.integers(min_value=0, max_value=len(HONEST.raw) * 8 - 1))
def test_any_single_bit_flip_anywhere_in_the_message_is_rejected(bit):
    assert _tampered_is_rejected(flip_bit(HONEST.raw, bit))


def _span(raw: bytes, part: bytes) -> range:
    start = raw.index(part)
    return range(start * 8, (start + len(part)) * 8)


SIGNED_FIELDS_AND_KEYS = st.sampled_from([
    _span(HONEST.raw, HONEST.message_id),
    _span(HONEST.raw, HONEST.signed_bytes),
    _span(HONEST.raw, HONEST.kes_signature),
    _span(HONEST.raw, HONEST.opcert.hot_vk),
    _span(HONEST.raw, HONEST.opcert.cold_signature),
    _span(HONEST.raw, HONEST.cold_vk),
])


@given(SIGNED_FIELDS_AND_KEYS.flatmap(st.sampled_from))
def test_bit_flips_in_signed_fields_id_opcert_and_cold_key_are_rejected(bit):
    assert _tampered_is_rejected(flip_bit(HONEST.raw, bit))


@given(st.integers(min_value=0, max_value=2**64 - 1), st.integers(min_value=0, max_value=2**64 - 1))
def test_any_changed_opcert_counter_or_start_is_rejected(issue, start):
    opcert = HONEST.opcert
    if (issue, start) == (opcert.issue_number, opcert.start_kes_period):
        return
    changed = OperationalCertificate(opcert.hot_vk, issue, start, opcert.cold_signature)
    raw = encode_message(HONEST.signed_bytes, HONEST.kes_signature, changed, HONEST.cold_vk)
    assert _tampered_is_rejected(raw)


@settings(max_examples=40, deadline=None)
@given(
    start=st.integers(min_value=0, max_value=10_000),
    max_kes_evolutions=st.integers(min_value=1, max_value=64),
    position=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    issue=st.integers(min_value=0, max_value=2**64 - 1),
    lifetime=st.integers(min_value=0, max_value=1799),
)
def test_honest_messages_inside_the_opcert_window_are_accepted(start, max_kes_evolutions, position, issue, lifetime):
    evolution = int(position * max_kes_evolutions)          # any t in [0, maxKESEvolutions)
    validator, _ = validator_for(P, max_kes_evolutions=max_kes_evolutions)
    msg = P.message(issue=issue, start=start, period=start + evolution, expires_at=int(NOW) + lifetime)
    assert validator.check(msg) is None
    outcome = validator.process_one(decode_message(msg.raw), lambda _id: False)
    assert outcome.accepted
    assert validator.state.opcert_counter(P.pool_id) == issue
