"""The ``dmq-node`` program, as a separate process in real time, takes up the next epoch's
stake within seconds of the ledger reaching it: the fake cardano-node's epoch ends a few
seconds after the test starts and its ledger gets there half a second later. (Should the
node take longer than that to start, its first round already sees the epoch's end in the
past and it asks every second: the switch still shows within seconds.)"""

from __future__ import annotations

import time

import trio

from tests.e2e.node_process import NodeProcess

from .fake_node import DEVNET_GENESIS, DEVNET_MAGIC, FakeCardanoNode, FakeChain

DMQ_DEVNET_MAGIC = 2147483690
LEDGER_LAG = 0.5
#: The round after the ledger's switch comes within a second; the rest is slack for a busy machine.
SWITCH_WITHIN = 3.0


def _updates(node: NodeProcess) -> list[tuple[float, int]]:
    return [(event.timestamp, event.data["epoch"]) for event in node.log_events("StakeViewUpdated")]


async def _until_updates(node: NodeProcess, count: int, timeout: float) -> None:
    with trio.move_on_after(timeout):
        while len(_updates(node)) < count:
            node.check_running()
            await trio.sleep(0.05)


async def test_the_node_process_switches_epochs_at_the_boundary(tmp_path):
    boundary = time.time() + 5.0
    chain = FakeChain.devnet(epoch=40, epoch_ends_at=boundary, epoch_slots=100)
    fake = FakeCardanoNode(tmp_path / "cardano.socket", chain)
    node = NodeProcess(tmp_path / "node", {
        "NetworkMagic": DMQ_DEVNET_MAGIC,
        "LocalAddress": "dmq.socket",
        "DatabasePath": "db",
        "StakeSource": "cardano-node",
        "CardanoNodeSocket": str(fake.socket_path),
        "CardanoNetworkMagic": DEVNET_MAGIC,
        "ShelleyGenesisFile": str(DEVNET_GENESIS),
    })
    retired = min(chain.pools)
    async with trio.open_nursery() as nursery:
        await fake.start(nursery)
        try:
            await trio.to_thread.run_sync(node.start)
            await _until_updates(node, 1, timeout=10)
            await trio.sleep(max(0.0, boundary + LEDGER_LAG - time.time()))
            assert [epoch for _, epoch in _updates(node)] == [40], node.diagnostics()
            chain.epoch = 41
            chain.epoch_ends_at = boundary + 100
            del chain.pools[retired]
            ledger_switched_at = time.time()
            await _until_updates(node, 2, timeout=SWITCH_WITHIN + 2)
            node.check_running()
        finally:
            node.kill()
        nursery.cancel_scope.cancel()
    updates = _updates(node)
    assert [epoch for _, epoch in updates] == [40, 41], node.diagnostics()
    switched_at = updates[1][0]
    assert ledger_switched_at < switched_at < ledger_switched_at + SWITCH_WITHIN
    changed = node.trace_events("CardanoEpochChanged")
    assert [(e["previous"], e["epoch"]) for e in changed] == [(None, 40), (40, 41)]
    assert fake.violations == []
