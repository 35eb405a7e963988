"""Shared test fixtures: where the conformance data lives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Upstream golden vectors, KES files, devnet credentials and CDDL, kept beside the checkout.
CONFORMANCE = (ROOT.parent / "shared" / "conformance").resolve()


def _require_conformance() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.fail(f"conformance data not found at {CONFORMANCE} (it must sit beside the checkout in ../shared)")
    return CONFORMANCE


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    return _require_conformance()


@pytest.fixture(scope="session")
def vectors() -> dict:
    return json.loads((_require_conformance() / "vectors.json").read_text())
