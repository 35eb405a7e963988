"""Sum6KES against the files Haskell cardano-base generated (tests/data/kes, docs/protocol/README.md 12.1)."""

from __future__ import annotations

import pytest

from dmq.kes import KesSigningKey, kes_sign_at, kes_verify


def test_keygen_reproduces_the_haskell_keys_at_depths_0_1_6(kes_dir, kes_seed, kes_vector):
    for depth, name, vk_name in ((0, "key0.bin", "vk_sum0"), (1, "key1.bin", "vk_sum1"), (6, "key6.bin", "vk_sum6")):
        key = KesSigningKey.generate(kes_seed, depth=depth)
        assert key.to_bytes() == (kes_dir / name).read_bytes(), name
        assert key.verification_key().hex() == kes_vector[vk_name], vk_name
    assert len((kes_dir / "key6.bin").read_bytes()) == 608


def test_haskell_signatures_verify_at_their_period_only(kes_dir, kes_message, kes_vector):
    vk = bytes.fromhex(kes_vector["vk_sum6"])
    signature_0 = (kes_dir / "key6Sig.bin").read_bytes()
    signature_5 = (kes_dir / "key6Sig5.bin").read_bytes()
    assert [t for t in range(64) if kes_verify(vk, t, kes_message, signature_0)] == [0]
    assert [t for t in range(64) if kes_verify(vk, t, kes_message, signature_5)] == [5]
    assert not kes_verify(vk, 0, kes_message + b"!", signature_0)


def test_evolving_reproduces_the_haskell_updates(kes_dir, kes_seed):
    key = KesSigningKey.from_bytes((kes_dir / "key6.bin").read_bytes())
    key.evolve()
    assert key.period == 1
    assert key.to_bytes() == (kes_dir / "key6update1.bin").read_bytes()
    key.evolve_to(5)
    assert key.period == 5
    assert key.to_bytes() == (kes_dir / "key6update5.bin").read_bytes()


def test_signing_reproduces_the_haskell_signatures(kes_dir, kes_seed, kes_message):
    key = KesSigningKey.generate(kes_seed)
    assert key.sign(kes_message) == (kes_dir / "key6Sig.bin").read_bytes()
    # From the period-0 key without evolving it (as Mithril does from the key file) ...
    assert kes_sign_at(key, 5, kes_message) == (kes_dir / "key6Sig5.bin").read_bytes()
    assert key.period == 0 and key.to_bytes() == (kes_dir / "key6.bin").read_bytes()
    # ... and from the Haskell key evolved to period 5.
    evolved = KesSigningKey.from_bytes((kes_dir / "key6update5.bin").read_bytes(), period=5)
    assert evolved.sign(kes_message) == (kes_dir / "key6Sig5.bin").read_bytes()


@pytest.mark.parametrize("fill, name", [(0x00, "mithril_test_kes_vk_seed_00"), (0x01, "mithril_test_kes_vk_seed_01")])
def test_mithril_test_seeds_give_the_mithril_verification_keys(fill, name, kes_vector):
    key = KesSigningKey.generate(bytes([fill]) * 32)
    assert key.verification_key().hex() == kes_vector[name]


def test_evolving_keeps_the_verification_key(kes_dir):
    key = KesSigningKey.from_bytes((kes_dir / "key6.bin").read_bytes())
    root = key.verification_key()
    key.evolve_to(33)
    assert key.verification_key() == root
