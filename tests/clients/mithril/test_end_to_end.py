"""The client library against the real node, each client in a separate process: two signers
publish Mithril bodies for the two devnet pools while an aggregator waits on a blocking
subscription; the node validates with the devnet genesis and the system clock."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio

from dmq.codec import decode_message
from dmq.opcert import pool_id_bech32
from clients.mithril import (
    CardanoDatabase,
    CardanoStakeDistribution,
    NodeUnreachable,
    RegisterSignatureMessageDmq,
)
from clients.mithril.sync import consume

from .support import DEVNET_BULK_CREDENTIALS, DEVNET_POOL_IDS, running_node

CLIENT = Path(__file__).with_name("client_process.py")


async def _client(*arguments: str) -> str:
    done = await trio.run_process([sys.executable, str(CLIENT), *arguments], capture_stdout=True,
                                  capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


async def test_signers_and_an_aggregator_in_their_own_processes(tmp_path, vectors):
    golden = RegisterSignatureMessageDmq.from_bytes(bytes.fromhex(vectors["mithril_body"]["body"]))
    bodies = [golden.to_bytes(),
              RegisterSignatureMessageDmq(CardanoStakeDistribution(11), golden.signature).to_bytes()]
    async with running_node(tmp_path) as node:
        socket = str(tmp_path / "dmq.socket")
        consumed: list[str] = []
        async with trio.open_nursery() as nursery:
            async def aggregator():
                consumed.append(await _client("consume", socket, "2", "30"))

            nursery.start_soon(aggregator)
            # Publish only once the aggregator is connected and waiting (a blocking request).
            with trio.fail_after(30):
                while node.local_service.connections == 0:
                    await trio.sleep(0.01)
                await trio.sleep(0.1)
            assert len(node.mempool) == 0
            verdicts = [await _client("publish", socket, str(DEVNET_BULK_CREDENTIALS), str(index), "0", body.hex())
                        for index, body in enumerate(bodies)]
        assert verdicts == ["accepted\n", "accepted\n"]
        received = [json.loads(line) for line in consumed[0].splitlines()]
        assert [item["party_id"] for item in received] == [pool_id_bech32(bytes.fromhex(p)) for p in DEVNET_POOL_IDS]
        assert [item["entity"] for item in received] == [repr(CardanoDatabase(10, 1728)),
                                                         repr(CardanoStakeDistribution(11))]
        for item, body in zip(received, bodies):
            message = decode_message(bytes.fromhex(item["raw"]))
            assert message.body == body and message.has_valid_id() and message.kes_period == 0
            assert node.mempool.contains(message.message_id)
        assert len(node.mempool) == 2


def test_the_wrappers_report_a_missing_node(tmp_path):
    with pytest.raises(NodeUnreachable, match="none.socket"):
        consume(tmp_path / "none.socket", network="devnet", count=1, timeout=5)
