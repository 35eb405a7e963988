"""The cardano-node link against pallas-network's local-state-query server.

The fake cardano-node of ``tests/dmq/cardano_node`` answers with the project's own encoders, and
ouroboros-consensus has golden files for only some of the answers (none for the stake
snapshots, the system start or the current era). Here the answers come from a second,
independent implementation: the harness's ``cardano-node`` role (pallas-network 1.4.0's
``NodeServer``, its local-state-query server, and its ``queries_v16`` types for the system
start, era, epoch and stake snapshots; the era history is written by the harness, pallas
having no type for it). The chain is a JSON description the test writes; what the link
decodes must equal it.
"""

from __future__ import annotations

import json
import random
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import trio

from dmq.clock import ManualClock
from dmq.stake import PoolStake, StakeView
from dmq.cardano_node import Backoff, CardanoNodeLink
from miniprotocols.local_state_query import Era, decode_stake_snapshots, unwrap_if_current
from tests.dmq.cardano_node.helpers import eventually
from tests.e2e.messages import DEVNET, DMQ_DEVNET_MAGIC, generated_signer
from tests.interop.pallas_harness import HarnessProcess, run_signer

pytestmark = pytest.mark.interop

CARDANO_MAGIC = 42
GENESIS = DEVNET / "shelley-genesis.json"
#: One-day epochs of one-second slots, so the current epoch's end lies ahead of the test.
EPOCH_SLOTS = 86_400
#: The queries of the link's first round on a connection, in order (docs/protocol/cardano-node-link.md 10.2).
FIRST_ROUND = ["GetSystemStart", "GetCurrentEra", "GetEpochNo", "GetInterpreter", "GetStakeSnapshots"]


def system_start() -> datetime:
    return datetime.fromisoformat(json.loads(GENESIS.read_text())["systemStart"].replace("Z", "+00:00"))


def chain_description(pools: dict[bytes, tuple[int, int, int]]) -> dict:
    """Today's epoch of a Conway chain that started at the devnet's system start."""
    start = system_start()
    epoch = int(time.time() - start.timestamp()) // EPOCH_SLOTS
    midnight = start.replace(hour=0, minute=0, second=0, microsecond=0)
    return {
        "era": int(Era.CONWAY),
        "epoch": epoch,
        "system_start": {"year": start.year, "day_of_year": start.timetuple().tm_yday,
                         "picoseconds_of_day": int((start - midnight).total_seconds()) * 10**12},
        "pools": {pool.hex(): {"mark": mark, "set": set_, "go": go} for pool, (mark, set_, go) in pools.items()},
        "era_history": [{"start": [0, 0, 0], "end": None,
                         "params": {"epoch_size": EPOCH_SLOTS, "slot_length_ms": 1000, "safe_zone": 3000,
                                    "genesis_window": 3000}}],
    }


def pallas_cardano_node(program: Path, directory: Path, chain: dict) -> HarnessProcess:
    (directory / "chain.json").write_text(json.dumps(chain))
    stand_in = HarnessProcess(program, "1", "cardano-node", "--socket", str(directory / "cardano.socket"),
                              "--magic", str(CARDANO_MAGIC), "--chain", str(directory / "chain.json"))
    stand_in.wait_for(lambda e: e["event"] == "listening")
    return stand_in


async def test_the_link_reads_pallas_stake_snapshots_epoch_and_system_start(pallas_harness, tmp_path):
    rng = random.Random(5)
    # Widths that matter: above 2**32, above 2**63, zero in one snapshot only.
    pools = {rng.randbytes(28): (2**40 + 7, 2**33 + 1, 45_000_000_000_000),
             rng.randbytes(28): (0, 2**64 - 2**34, 1),
             rng.randbytes(28): (5, 0, 2**63 + 3)}
    chain = chain_description(pools)
    view = StakeView.from_shelley_genesis(GENESIS, ManualClock(now=time.time()), with_genesis_stake=False)
    link = CardanoNodeLink(tmp_path / "cardano.socket", CARDANO_MAGIC, view, refresh_interval=3600,
                           backoff=Backoff(initial=0.05, maximum=0.2, jitter=0))
    with pallas_cardano_node(pallas_harness, tmp_path, chain) as stand_in:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(link.run)
            await eventually(lambda: link.status.ready, "a stake view from the pallas stand-in", timeout=20)
            nursery.cancel_scope.cancel()
        answered = await trio.to_thread.run_sync(
            lambda: stand_in.wait_for(lambda e: e["event"] == "query", count=len(FIRST_ROUND)))
        await trio.to_thread.run_sync(lambda: stand_in.wait_for(lambda e: e["event"] == "release"))
    assert dict(view.pools) == {pool: PoolStake(*stake) for pool, stake in pools.items()}
    assert view.epoch == chain["epoch"] and view.eligible_count == 2
    status = link.status
    assert status.system_start == system_start() and status.era == Era.CONWAY
    # The era history the harness wrote says when the epoch ends: the start of the next one.
    assert status.next_epoch_at == system_start().timestamp() + (chain["epoch"] + 1) * EPOCH_SLOTS
    assert [event["query"] for event in answered] == FIRST_ROUND
    # The totals pallas computed into its StakeSnapshots read back as the columns' sums.
    snapshots = decode_stake_snapshots(unwrap_if_current(bytes.fromhex(answered[-1]["result"])))
    assert (snapshots.mark_total, snapshots.set_total, snapshots.go_total) == tuple(map(sum, zip(*pools.values())))
    # pallas agreed on the highest version the link offered (V23) and saw the volatile tip acquired.
    assert stand_in.of_kind("connection")[0]["version"][0] == 32791
    assert stand_in.of_kind("acquire")[0]["point"] == "None"
    assert stand_in.of_kind("error") == []


def test_a_node_process_takes_its_stake_from_the_pallas_stand_in(pallas_harness, tmp_path, start_node, signers):
    staked, unstaked = signers
    stranger = generated_signer(7)
    chain = chain_description({staked.pool_id: (3_000_000, 2_000_000, 1_000_000),
                               unstaked.pool_id: (9_000_000, 0, 9_000_000)})
    with pallas_cardano_node(pallas_harness, tmp_path, chain) as stand_in:
        node = start_node(StakeSource="cardano-node", CardanoNodeSocket=str(tmp_path / "cardano.socket"),
                          CardanoNetworkMagic=CARDANO_MAGIC)
        stand_in.wait_for(lambda e: e.get("query") == "GetStakeSnapshots", timeout=30)
        deadline = time.monotonic() + 10
        while not (updates := node.trace_events("StakeViewUpdated")) and time.monotonic() < deadline:
            node.check_running()
            time.sleep(0.05)
        assert [(u["source"], u["epoch"], u["pools"], u["eligible"]) for u in updates] == [
            ("cardano-node", chain["epoch"], 2, 1)], node.diagnostics()
        results = run_signer(pallas_harness, "1", node.socket_path, DMQ_DEVNET_MAGIC,
                             [staked.sign().raw, unstaked.sign().raw, stranger.sign().raw])
    assert [result["verdict"] for result in results] == ["accepted", "rejected", "rejected"], results
    assert [result["reason"] for result in results[1:]] == [{"kind": "invalid", "text": "PoolNotEligible"},
                                                            {"kind": "invalid", "text": "UnrecognizedPool"}]
    assert stand_in.of_kind("error") == []
