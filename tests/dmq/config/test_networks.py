"""Named networks against docs/protocol/handshake.md 4.6 and the handshake bytes of 4.8."""

from __future__ import annotations

import pytest

from dmq.networks import (
    DEVNET,
    MAINNET,
    NETWORK_MAGICS,
    PREPROD,
    PREVIEW,
    dmq_magic_of_cardano_magic,
    network_by_cardano_magic,
    network_by_dmq_magic,
    network_magics,
)


def test_the_table_of_wire_4_6() -> None:
    assert {name: (n.dmq, n.cardano) for name, n in NETWORK_MAGICS.items()} == {
        "mainnet": (2912307721, 764824073),
        "preprod": (2147483649, 1),
        "preview": (2147483650, 2),
        "devnet": (2147483690, 42),
    }


@pytest.mark.parametrize(
    ("network", "magic_in_handshake"),
    # the uint32 after "821a" in the N2C proposals of docs/protocol/handshake.md 4.8
    [(MAINNET, "ad964a09"), (PREPROD, "80000001"), (PREVIEW, "80000002"), (DEVNET, "8000002a")],
)
def test_dmq_magics_are_the_ones_proposed_in_handshakes(network: object, magic_in_handshake: str) -> None:
    assert network.dmq == int(magic_in_handshake, 16)  # type: ignore[attr-defined]


def test_every_named_network_follows_mithrils_derivation_rule() -> None:
    for network in NETWORK_MAGICS.values():
        assert dmq_magic_of_cardano_magic(network.cardano) == network.dmq
    with pytest.raises(ValueError):
        dmq_magic_of_cardano_magic(2**31)


def test_lookups() -> None:
    assert network_by_dmq_magic(2147483690) is DEVNET
    assert network_by_cardano_magic(1) is PREPROD
    assert network_by_dmq_magic(3141592) is None  # the stale README default is a private network
    assert network_magics("preview") is PREVIEW
    with pytest.raises(KeyError, match="mainnet, preprod, preview, devnet"):
        network_magics("sanchonet")
