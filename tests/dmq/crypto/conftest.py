"""Fixtures for the KES, opcert and key-file tests: the Haskell-generated KES data."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def kes_dir(conformance_dir: Path) -> Path:
    return conformance_dir / "kes"


@pytest.fixture(scope="session")
def kes_vector(vectors: dict) -> dict:
    return vectors["kes_sum6"]


@pytest.fixture(scope="session")
def kes_seed(kes_vector: dict) -> bytes:
    return kes_vector["seed_ascii"].encode("ascii")


@pytest.fixture(scope="session")
def kes_message(kes_vector: dict) -> bytes:
    return kes_vector["message_ascii"].encode("ascii")
