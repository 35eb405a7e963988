"""Building signed messages as the Mithril signer does, and where the KES period comes from."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

import pytest

from dmq.clock import ManualClock
from dmq.codec import decode_message
from dmq.kes import KesSigningKey, kes_verify
from dmq.opcert import decode_opcert
from dmq.stake import load_shelley_genesis
from clients.mithril import (
    FixedKesPeriod,
    GenesisClockKesPeriod,
    KesPeriodUnavailable,
    MessageBuilder,
    SigningCredentials,
    SigningError,
    SlotKesPeriod,
)

from .support import DEVNET_GENESIS, DEVNET_POOL_IDS, devnet_credentials, write_credential_files


@pytest.fixture(scope="module")
def mithril_vector_credentials(vectors) -> SigningCredentials:
    """KES seed 32 x 00 with the Mithril test opcert (docs/protocol/README.md 12.2 inputs)."""
    opcert = decode_opcert(bytes.fromhex(vectors["opcert"]["opcert_cbor"]))
    return SigningCredentials(KesSigningKey.generate(bytes(32)), opcert, bytes.fromhex(vectors["opcert"]["cold_vk"]))


def test_builder_reproduces_the_derived_end_to_end_vector(mithril_vector_credentials):
    # expiresAt = floor(now) + 1800 = 1800000000, kesPeriod 5, body 00..63.
    builder = MessageBuilder(mithril_vector_credentials, FixedKesPeriod(5), ManualClock(now=1_799_998_200.9))
    message = builder.build(bytes(range(100)))
    assert message.expires_at == 1_800_000_000 and message.kes_period == 5
    assert message.signed_bytes == bytes.fromhex("835864") + bytes(range(100)) + bytes.fromhex("051a6b49d200")
    assert message.message_id.hex() == "f7ebbbce75193f05786580f431652571a56b42b07e8f55af2dd56361d92718a0"
    assert message.kes_signature.hex().startswith("dbcefb58f15cc96bf95763e0008383df")
    assert len(message.raw) == 732
    assert hashlib.sha256(message.raw).hexdigest() == "3507af221b442ed2d4564e5c61caf8f8f6ba6dfc997a2f065d6753d10ee9a7f7"
    assert decode_message(message.raw) == message


def test_ttl_and_clock(mithril_vector_credentials):
    builder = MessageBuilder(mithril_vector_credentials, FixedKesPeriod(0), ManualClock(now=1_700_000_000.999), ttl=100)
    assert builder.build(bytes(90)).expires_at == 1_700_000_100


def test_devnet_files_sign_at_the_evolution_of_the_period(tmp_path):
    kes_path, opcert_path = write_credential_files(tmp_path, 1)
    credentials = SigningCredentials.from_files(kes_path, opcert_path)
    assert credentials.pool_id.hex() == DEVNET_POOL_IDS[1]
    assert credentials.party_id.startswith("pool1")
    message = MessageBuilder(credentials, FixedKesPeriod(7), ManualClock()).build(bytes(range(120)))
    hot_vk = credentials.opcert.hot_vk
    assert kes_verify(hot_vk, 7, message.signed_bytes, message.kes_signature)
    assert not kes_verify(hot_vk, 6, message.signed_bytes, message.kes_signature)
    bulk = SigningCredentials.from_bulk_credentials(DEVNET_GENESIS.parent / "bulk-creds-k2.json", 1)
    assert bulk.cold_vk == credentials.cold_vk


def test_refusals():
    first, second = devnet_credentials()
    with pytest.raises(SigningError, match="does not belong to the operational certificate"):
        SigningCredentials(first.kes_key, second.opcert, second.cold_vk)
    with pytest.raises(SigningError, match="cold signature does not verify"):
        SigningCredentials(first.kes_key, first.opcert, second.cold_vk)
    credentials = SigningCredentials(first.kes_key, first.opcert, first.cold_vk)
    builder = MessageBuilder(credentials, FixedKesPeriod(64), ManualClock())
    with pytest.raises(SigningError, match="rotate the KES key"):
        builder.build(bytes(100))
    with pytest.raises(SigningError, match="90..2000"):
        MessageBuilder(credentials, FixedKesPeriod(0), ManualClock()).build(bytes(89))


def test_period_before_the_certificate_start_is_refused(tmp_path):
    from clients.keys import generate_pool

    pool = generate_pool(tmp_path / "pool", start_kes_period=10)
    credentials = SigningCredentials.from_files(pool.paths.kes_skey, pool.paths.opcert)
    with pytest.raises(SigningError, match="KES period 9 is before .* start period 10"):
        MessageBuilder(credentials, FixedKesPeriod(9), ManualClock()).build(bytes(100))
    message = MessageBuilder(credentials, FixedKesPeriod(12), ManualClock()).build(bytes(100))
    assert kes_verify(credentials.opcert.hot_vk, 2, message.signed_bytes, message.kes_signature)


def test_kes_period_sources():
    assert SlotKesPeriod(129_599, 129_600).current_kes_period() == 0
    assert SlotKesPeriod(129_600 * 41 + 5, 129_600).current_kes_period() == 41
    genesis = load_shelley_genesis(DEVNET_GENESIS)
    start = datetime(2022, 6, 16, 8, 4, 19, tzinfo=timezone.utc).timestamp()
    clock = ManualClock(now=start + 129_600 * 3 + 0.5)
    source = GenesisClockKesPeriod.from_genesis(genesis, clock)
    assert source.current_slot() == 129_600 * 3 and source.current_kes_period() == 3
    clock.set_wall(start + 129_600 * 3 - 0.5)
    assert source.current_kes_period() == 2
    clock.set_wall(start - 1)
    with pytest.raises(KesPeriodUnavailable, match="not started"):
        source.current_kes_period()
    with pytest.raises(KesPeriodUnavailable):
        FixedKesPeriod(-1)


def test_genesis_periods_are_refused_on_chains_with_a_byron_era(tmp_path):
    text = DEVNET_GENESIS.read_text().replace('"networkMagic": 42', '"networkMagic": 764824073')
    (tmp_path / "mainnet.json").write_text(text)
    with pytest.raises(KesPeriodUnavailable, match="Byron"):
        GenesisClockKesPeriod.from_genesis(load_shelley_genesis(tmp_path / "mainnet.json"))
