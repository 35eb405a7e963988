"""Fixtures for the codec tests: the Mithril test credentials of vectors.json (docs/protocol/README.md 12.2)."""

from __future__ import annotations

import pytest

from dmq.codec import build_message
from dmq.kes import KesSigningKey
from dmq.message import DmqMessage, OperationalCertificate
from dmq.opcert import decode_opcert

#: The body of the derived end-to-end vector: bytes 00 01 .. 63.
E2E_BODY = bytes(range(100))
E2E_KES_PERIOD = 5
E2E_EXPIRES_AT = 1_800_000_000


@pytest.fixture(scope="session")
def mithril_opcert(vectors: dict) -> OperationalCertificate:
    return decode_opcert(bytes.fromhex(vectors["opcert"]["opcert_cbor"]))


@pytest.fixture(scope="session")
def mithril_cold_vk(vectors: dict) -> bytes:
    return bytes.fromhex(vectors["opcert"]["cold_vk"])


@pytest.fixture(scope="session")
def kes_key_00() -> KesSigningKey:
    """The hot key the Mithril opcert certifies: Sum6KES from seed 00..00, at period 0."""
    return KesSigningKey.generate(bytes(32))


@pytest.fixture(scope="session")
def e2e_message(kes_key_00, mithril_opcert, mithril_cold_vk) -> DmqMessage:
    return build_message(E2E_BODY, E2E_KES_PERIOD, E2E_EXPIRES_AT, kes_key_00, mithril_opcert, mithril_cold_vk)
