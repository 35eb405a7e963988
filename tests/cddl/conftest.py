"""Real DMQ messages for the CDDL checks: the derived end-to-end vector and bodies at the limits."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dmq.codec import build_message
from tests.dmq.codec.conftest import E2E_EXPIRES_AT, E2E_KES_PERIOD, e2e_message, kes_key_00, mithril_cold_vk, mithril_opcert

__all__ = ["e2e_message", "kes_key_00", "mithril_cold_vk", "mithril_opcert", "samples"]


@pytest.fixture(scope="session")
def samples(vectors, e2e_message, kes_key_00, mithril_opcert, mithril_cold_vk) -> SimpleNamespace:
    """Messages signed with the Mithril test credentials of vectors.json, as our encoder writes them."""
    def signed(body: bytes):
        return build_message(body, E2E_KES_PERIOD, E2E_EXPIRES_AT, kes_key_00, mithril_opcert, mithril_cold_vk)

    return SimpleNamespace(
        e2e=e2e_message,  # docs/protocol/README.md 12.2: 100-byte body, 732 bytes
        mithril=signed(bytes.fromhex(vectors["mithril_body"]["body"])),  # 451-byte body
        smallest=signed(bytes(range(90))),
        largest=signed(bytes(i % 251 for i in range(2000))),
    )
