"""One query round (docs/protocol/cardano-node-link.md 10.2) against the fake node's ledger, over an in-memory
channel: the exact bytes the link sends, and the typed errors of the round."""

from __future__ import annotations

import pytest
import trio

from dmq.cardano_node import MalformedResult, UnsupportedEra, query_stake_round
from miniprotocols.framework import Direction, Driver, Role
from miniprotocols.local_state_query import (
    LOCAL_STATE_QUERY,
    PROTOCOL_NUM,
    AcquireFailed,
    AcquireFailure,
    Era,
    EraMismatch,
    LocalStateQueryClient,
    PoolSnapshot,
    serve,
)
from ouroboros_mux.channel import memory_channel_pair

from .cddl import CddlViolation
from .fake_node import FakeCardanoNode, FakeChain, FakeLedger, genesis_pools, genesis_system_start


async def run_round(tmp_path, chain: FakeChain, ledger_type=FakeLedger, **kwargs):
    """One round; returns (result or raised error, the raw messages the client sent, the fake)."""
    fake = FakeCardanoNode(tmp_path / "never-bound.socket", chain)
    client_channel, server_channel = memory_channel_pair(PROTOCOL_NUM)
    sent: list[bytes] = []
    client = LocalStateQueryClient(Driver(
        client_channel, LOCAL_STATE_QUERY, Role.CLIENT,
        trace=lambda event: sent.append(event.raw) if event.direction is Direction.SENT else None))
    server = Driver(server_channel, LOCAL_STATE_QUERY, Role.SERVER, trace=fake.check_lsq)
    outcome: object

    async def serve_checked() -> None:
        try:
            await serve(server, ledger_type(fake))
        except CddlViolation:
            pass  # recorded in fake.violations

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_checked)
        try:
            outcome = await query_stake_round(client, **kwargs)
        except Exception as exc:  # the round's typed errors are the subject of these tests
            outcome = exc
        nursery.cancel_scope.cancel()
    return outcome, [raw.hex() for raw in sent], fake


async def test_first_round_sends_the_reference_bytes(tmp_path):
    start = genesis_system_start().to_datetime().timestamp()
    chain = FakeChain.devnet(epoch=7, epoch_ends_at=start + 8 * 432_000)
    result, sent, fake = await run_round(tmp_path, chain, with_system_start=True, snapshot_wanted=lambda epoch: True)
    # docs/protocol/cardano-node-link.md 10.2 steps 1 to 6 and 8: acquire, system start, era, epoch, interpreter, snapshots, release.
    assert sent == ["8108", "82038101", "8203820082028101", "82038200820082068101", "8203820082028100",
                    "8203820082008206821480", "8105"]
    assert fake.violations == []
    assert (result.era, result.epoch) == (Era.CONWAY, 7)
    # Epoch 7 of 432 000 one-second slots ends 8 * 432 000 s after the system start.
    assert result.epoch_end_ps == 8 * 432_000 * 10**12
    assert result.system_start == genesis_system_start()
    pools = genesis_pools()
    assert result.snapshots.pools == {pool: PoolSnapshot(s, s, s) for pool, s in pools.items()}
    assert result.snapshots.set_total == sum(pools.values())


async def test_later_rounds_skip_system_start_and_unwanted_snapshots(tmp_path):
    asked: list[int] = []

    def wanted(epoch: int) -> bool:
        asked.append(epoch)
        return False

    result, sent, fake = await run_round(tmp_path, FakeChain.devnet(epoch=3, era=Era.BABBAGE),
                                      with_system_start=False, snapshot_wanted=wanted)
    # Babbage: the era index 5 from GetCurrentEra goes into QueryIfCurrent.
    assert sent == ["8108", "8203820082028101", "82038200820082058101", "8203820082028100", "8105"]
    assert asked == [3]
    assert result.snapshots is None and result.system_start is None and result.epoch == 3
    assert result.epoch_end_ps is None      # the fake's history stops short of the epoch's end
    assert fake.violations == []


async def test_byron_is_unsupported(tmp_path):
    error, sent, fake = await run_round(tmp_path, FakeChain.devnet(era=Era.BYRON),
                                     with_system_start=False, snapshot_wanted=lambda epoch: True)
    assert isinstance(error, UnsupportedEra) and error.era == 0
    assert "Byron (0)" in str(error)
    assert sent == ["8108", "8203820082028101"]   # nothing asked of a Byron ledger
    assert fake.violations == []


async def test_era_mismatch_names_both_eras(tmp_path):
    # GetCurrentEra answers Babbage while the ledger is in Conway: the epoch query mismatches.
    chain = FakeChain.devnet(era=Era.CONWAY, era_answer=Era.BABBAGE)
    error, sent, fake = await run_round(tmp_path, chain, with_system_start=False, snapshot_wanted=lambda epoch: True)
    assert isinstance(error, EraMismatch)
    assert (error.query_era_name, error.ledger_era_name) == ("Babbage", "Conway")
    assert "Babbage (5)" in str(error) and "Conway (6)" in str(error)
    assert sent[-1] == "82038200820082058101"
    assert fake.violations == []   # a mismatch is a well-formed answer


async def test_acquire_failure_is_typed(tmp_path):
    chain = FakeChain.devnet(acquire_failure=AcquireFailure.POINT_TOO_OLD)
    error, sent, fake = await run_round(tmp_path, chain, with_system_start=True, snapshot_wanted=lambda epoch: True)
    assert isinstance(error, AcquireFailed) and error.failure is AcquireFailure.POINT_TOO_OLD
    assert "volatile tip" in str(error) and "AcquireFailurePointTooOld" in str(error)
    assert sent == ["8108"]
    assert fake.violations == []


class _GarbledEpochLedger(FakeLedger):
    """Answers GetEpochNo with a text string inside the QueryIfCurrent wrapper."""

    async def answer(self, state, raw):
        if raw.hex() == "8200820082068101":
            return bytes.fromhex("8161") + b"x"
        return await super().answer(state, raw)


async def test_malformed_result_is_typed(tmp_path):
    error, _, fake = await run_round(tmp_path, FakeChain.devnet(), ledger_type=_GarbledEpochLedger,
                                     with_system_start=False, snapshot_wanted=lambda epoch: True)
    assert isinstance(error, MalformedResult) and error.query == "GetEpochNo"
    assert error.raw == b"\x61x"   # the value inside [value]: the text "x"
    # The test peer's CDDL check saw it too.
    assert len(fake.violations) == 1 and "epochNoResult" in fake.violations[0]
