"""Fuzzing every codec: each input ends in a value or a typed error, never in a crash.

The default run draws a few hundred inputs per decoder (random bytes, message-shaped CBOR,
mutated valid messages, deep nesting); ``bench/reliability_fuzz.py`` draws at least
100 000 per decoder with the same strategies and prints the counts.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from .fuzz_targets import fuzz_input, run_target, seed_corpus, targets

TARGETS = {t.name: t for t in targets()}


def test_every_codec_is_a_target():
    expected = {"mux-sdu-header", "mux-cbor-framer", "handshake-dmq-n2n", "handshake-dmq-n2c",
                "handshake-cardano-n2c", "keep-alive", "local-msg-submission", "local-msg-notification",
                "local-state-query", "peer-sharing", "sig-submission-v1", "sig-submission-v2", "dmq-message"}
    assert expected <= TARGETS.keys()


@pytest.mark.parametrize("name", TARGETS)
def test_valid_seeds_decode_somewhere(name):
    """The seed corpus is real protocol bytes: every target accepts at least one seed, so
    mutations start from inputs that reach deep into each decoder."""
    target = TARGETS[name]
    assert any(run_target(target, seed) for seed in seed_corpus())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=fuzz_input)
def test_any_input_ends_in_a_value_or_a_typed_error(raw):
    """Each drawn input goes to every decoder: 400 inputs per codec."""
    for target in TARGETS.values():
        run_target(target, raw)
