"""The published tables and the cell comparison rule (no Spark)."""

from __future__ import annotations

from spark.cip import COLUMNS, PERIODS_S, PUBLISHED, Match, compare


def test_the_published_table_is_complete():
    assert set(PUBLISHED) == set(PERIODS_S) == {60, 120, 300, 600}
    for row in PUBLISHED.values():
        assert set(row) == {c.key for c in COLUMNS}
    assert sum(len(row) for row in PUBLISHED.values()) == 44


def test_compare_within_three_percent():
    assert compare(64.8, 64, 1) == (Match.WITHIN, (64.8 - 64) / 64)
    assert compare(103, 100, 1)[0] is Match.WITHIN
    assert compare(103.1, 100, 1)[0] is Match.MISMATCH


def test_compare_recognises_rounding_up_only_at_the_published_precision():
    assert compare(1.49, 2, 1)[0] is Match.ROUNDED_UP      # ceil(1.49) = 2
    assert compare(4.5, 5, 1)[0] is Match.ROUNDED_UP
    assert compare(1.0, 2, 1)[0] is Match.MISMATCH          # exactly 1: rounding up stays 1
    assert compare(2.01, 2, 1)[0] is Match.WITHIN
    assert compare(2.2, 2, 1)[0] is Match.MISMATCH          # rounding *down* is not what the CIP does
    assert compare(0.41, 0.5, 0.1)[0] is Match.ROUNDED_UP   # a percentage shown to one decimal
    assert compare(0.41, 0.5, 1)[0] is Match.MISMATCH       # to whole units, 0.41 rounds up to 1
