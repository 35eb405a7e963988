"""The capacity model and the message size, without Spark: scaling laws and exact values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmq.codec import build_message
from dmq.keyfiles import read_bulk_credentials
from spark.cip import Bound, cip_scenario
from spark.message_size import CIP_MESSAGE_BYTES_HIGH, CIP_MESSAGE_BYTES_LOW, cbor_head_size, message_size
from spark.model import CELL_NAMES, MONTH_SECONDS, Scenario, cells_of
from tests.conftest import CONFORMANCE

positive = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def scenarios(draw):
    return Scenario(label="s", pools=draw(st.integers(1, 100_000)), signer_share=draw(st.floats(0.01, 1)),
                    period_s=draw(st.integers(1, 3600)), ttl_s=draw(st.integers(1, 7200)),
                    message_bytes=draw(positive), memory_per_message=draw(positive),
                    cpu_per_message_s=draw(st.floats(1e-7, 1e-1)), redundancy=draw(st.floats(0.5, 50)),
                    price_per_gb=draw(st.floats(0.001, 1)))


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9)


@given(scenarios())
def test_doubling_the_pools_doubles_every_cell(s):
    base, double = cells_of(s), cells_of(s.with_(pools=2 * s.pools))
    for name in CELL_NAMES:
        assert _close(getattr(double, name), 2 * getattr(base, name)), name


@given(scenarios())
def test_halving_the_period_doubles_every_cell(s):
    base, half = cells_of(s), cells_of(s.with_(period_s=s.period_s / 2))
    for name in CELL_NAMES:
        assert _close(getattr(half, name), 2 * getattr(base, name)), name


@given(scenarios(), st.floats(0.1, 10))
def test_each_cost_moves_only_its_cells(s, k):
    base = cells_of(s)
    bigger_messages = cells_of(s.with_(message_bytes=k * s.message_bytes))
    assert _close(bigger_messages.throughput_kbps, k * base.throughput_kbps)
    assert _close(bigger_messages.cost_usd, k * base.cost_usd)
    assert bigger_messages.memory_mb == base.memory_mb and bigger_messages.cpu_percent == base.cpu_percent
    more_memory = cells_of(s.with_(memory_per_message=k * s.memory_per_message))
    assert _close(more_memory.memory_mb, k * base.memory_mb) and more_memory.volume_gb == base.volume_gb
    slower = cells_of(s.with_(cpu_per_message_s=k * s.cpu_per_message_s))
    assert _close(slower.cpu_percent, k * base.cpu_percent) and slower.messages_held == base.messages_held
    longer_ttl = cells_of(s.with_(ttl_s=k * s.ttl_s))
    assert _close(longer_ttl.messages_held, k * base.messages_held)
    assert longer_ttl.messages_per_month_m == base.messages_per_month_m


@given(scenarios())
def test_cells_are_consistent_with_each_other(s):
    c = cells_of(s)
    assert _close(c.volume_gb, c.throughput_kbps * 1e3 * s.month_s / 1e9)
    assert _close(c.cost_usd, c.volume_gb * s.price_per_gb)
    assert _close(c.messages_held, c.messages_per_month_m * 1e6 * s.ttl_s / s.month_s)
    assert _close(c.cpu_percent, c.messages_per_month_m * 1e6 / s.month_s * s.cpu_per_message_s * 100)


def test_the_one_minute_row_of_capacity_md():
    low, high = cells_of(cip_scenario(60, Bound.LOW)), cells_of(cip_scenario(60, Bound.HIGH))
    assert low.messages_held == pytest.approx(45_000)
    assert (low.memory_mb, high.memory_mb) == pytest.approx((51.66, 125.46))
    assert low.messages_per_month_m == pytest.approx(64.8)
    assert low.cpu_percent == pytest.approx(5.0)
    assert (low.throughput_kbps, high.throughput_kbps) == pytest.approx((57.4, 139.4))
    assert (low.volume_gb, high.volume_gb) == pytest.approx((148.78, 361.32), abs=0.01)
    assert (low.cost_usd, high.cost_usd) == pytest.approx((14.88, 36.13), abs=0.01)
    assert MONTH_SECONDS == 2_592_000
    assert (CIP_MESSAGE_BYTES_LOW, CIP_MESSAGE_BYTES_HIGH) == (1148, 2788)


def test_cbor_heads():
    assert [cbor_head_size(n) for n in (0, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32)] == [1, 1, 2, 2, 3, 3, 5, 5, 9]


def test_message_size_matches_wire_md_and_the_real_codec():
    # docs/protocol/message.md 5.4: 722 bytes for a 90-byte body, 2 633 for 2 000 (small KES periods, 4-byte expiry).
    assert message_size(90, kes_period=0, start_kes_period=0) == 722
    assert message_size(2000, kes_period=0, start_kes_period=0) == 2633
    cred = read_bulk_credentials(CONFORMANCE / "cardano-devnet" / "bulk-creds-k2.json")[0]
    for body in (90, 255, 256, 451, 2000):
        for kes_period in (0, 1, 30):
            raw = build_message(bytes(body), kes_period, 1_800_000_000, cred.kes_key, cred.opcert, cred.cold_vk).raw
            expected = message_size(body, kes_period=kes_period, expires_at=1_800_000_000,
                                    issue_number=cred.opcert.issue_number,
                                    start_kes_period=cred.opcert.start_kes_period)
            assert len(raw) == expected, (body, kes_period)
