"""A node whose stake comes from cardano-node, end to end: real Unix sockets on both
sides, the fake cardano-node answering from the Haskell-generated devnet, messages signed
with the devnet's bulk credentials submitted exactly as Pallas submits them."""

from __future__ import annotations

import pytest
import trio

from dmq.cli.wiring import assemble_node
from dmq.clock import ManualClock
from dmq.codec import build_message
from dmq.config import StakeSourceKind, read_config
from dmq.keyfiles import read_bulk_credentials
from dmq.message import pool_id_of
from handshake.driver import connect_and_handshake
from handshake.links import DMQ_NODE_TO_CLIENT, dmq_node_to_client_versions
from dmq.cardano_node import Backoff, CardanoNodeLink
from miniprotocols.local_msg_submission import ACCEPTED, LocalMsgSubmissionClient, RejectInvalid
from ouroboros_mux.mux import Mode, Mux, Provenance
from tests.conftest import CONFORMANCE

from .fake_node import DEVNET_GENESIS, DEVNET_MAGIC, FakeCardanoNode, FakeChain
from .helpers import eventually

DMQ_DEVNET_MAGIC = 2147483690
NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def creds():
    return read_bulk_credentials(CONFORMANCE / "cardano-devnet" / "bulk-creds-k2.json")


def _config(tmp_path):
    return read_config({
        "ConfigFile": str(tmp_path / "absent.json"),
        "NetworkMagic": str(DMQ_DEVNET_MAGIC),
        "LocalAddress": str(tmp_path / "dmq.socket"),
        "StakeSource": "cardano-node",
        "CardanoNodeSocket": str(tmp_path / "node.socket"),
        "CardanoNetworkMagic": str(DEVNET_MAGIC),
        "ShelleyGenesisFile": str(DEVNET_GENESIS),
        "DatabasePath": str(tmp_path / "db"),
    })


async def _submit(path, raw: bytes):
    """One Mithril-signer-style connection: handshake 4097, one submission."""
    bearer, _ = await connect_and_handshake(path, dmq_node_to_client_versions(DMQ_DEVNET_MAGIC), DMQ_NODE_TO_CLIENT)
    mux = Mux(bearer, Provenance.OUTBOUND)
    client = LocalMsgSubmissionClient(mux.register(14, Mode.INITIATOR, 0xFFFFFFFF))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mux.run)
        verdict = await client.submit(raw)
        await client.done()
        mux.stop()
    return verdict


def _message(cred, body_byte: int, expires_at: int = int(NOW) + 1700):
    return build_message(bytes([body_byte]) * 120, 0, expires_at, cred.kes_key, cred.opcert, cred.cold_vk)


def test_only_a_cardano_node_stake_source_starts_the_link(tmp_path):
    node = assemble_node(_config(tmp_path), None, clock=ManualClock(now=NOW))
    node.mempool.close()  # built, never run
    assert node.config.stake_source.kind is StakeSourceKind.CARDANO_NODE
    assert isinstance(node.stake_link, CardanoNodeLink) and node.services == [node.stake_link.run]
    assert node.stake_link_status is node.stake_link.status
    assert node.stake_link.socket_path == tmp_path / "node.socket" and node.stake_link.network_magic == 42
    # The genesis gave the KES limits, not the stake: NotInitialized until cardano-node answers.
    assert not node.stake_view.ready and node.stake_view.max_kes_evolutions == 60

    genesis = read_config({"ConfigFile": str(tmp_path / "absent.json"), "StakeSource": "genesis",
                           "ShelleyGenesisFile": str(DEVNET_GENESIS), "DatabasePath": str(tmp_path / "plain-db")})
    plain = assemble_node(genesis, None, clock=ManualClock(now=NOW))
    plain.mempool.close()
    assert plain.stake_link is None and plain.stake_link_status is None and plain.services == []


async def test_stake_from_cardano_node_gates_validation(tmp_path, creds):
    chain = FakeChain.devnet(epoch=30)
    fake = FakeCardanoNode(tmp_path / "node.socket", chain)
    node = assemble_node(_config(tmp_path), None, clock=ManualClock(now=NOW))
    node.stake_link.backoff = Backoff(initial=0.02, maximum=0.1, jitter=0)
    node.stake_link.refresh_interval = 3600
    status = node.stake_link_status
    local = tmp_path / "dmq.socket"
    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        # cardano-node is not up yet: no stake, every pool NotInitialized.
        verdict = await _submit(local, _message(creds[0], 1).raw)
        assert isinstance(verdict, RejectInvalid) and verdict.text.startswith("NotInitialized")

        await fake.start(nursery)
        await eventually(lambda: status.ready, "the stake view ready")
        assert status.epoch == 30 and status.connected and status.since == NOW
        assert await _submit(local, _message(creds[0], 2).raw) is ACCEPTED

        # Next epoch: the second pool retired. The link replaces the view while the node runs.
        retired = pool_id_of(creds[1].cold_vk)
        del chain.pools[retired]
        chain.epoch = 31
        node.stake_link.refresh_now()
        await eventually(lambda: status.epoch == 31, "epoch 31")
        verdict = await _submit(local, _message(creds[1], 3).raw)
        assert isinstance(verdict, RejectInvalid) and verdict.text.startswith("UnrecognizedPool")

        metrics = node.metrics.render().decode()
        assert "dmq_node_stake_view_ready 1\n" in metrics and "dmq_node_stake_view_epoch 31\n" in metrics
        assert "dmq_node_cardano_node_connected 1\n" in metrics
        assert "dmq_node_stakeView_eligiblePools_int 1\n" in metrics
        assert len(node.mempool) == 1
        nursery.cancel_scope.cancel()
    assert fake.violations == []
