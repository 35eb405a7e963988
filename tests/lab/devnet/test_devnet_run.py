"""Short real devnets: ``dmq-node`` subprocesses, real pools, publishers and aggregators.

A run must deliver every accepted message to every aggregator exactly once, agree with what
the nodes' own metrics say they hold, leave a recording of every node, and stop every node
on SIGINT (exit status 130, reaped) whether it ends on its duration or on the operator's Ctrl-C.
"""

from __future__ import annotations

import io
import json
import os
import signal

import trio
from rich.console import Console

from dmq.recorder.schema import decode_manifest
from lab.devnet import Devnet, DevnetOptions
from lab.devnet.summary import CLEAN_EXIT_STATUSES


def quiet_console() -> Console:
    return Console(file=io.StringIO(), width=120, soft_wrap=True)


def assert_stopped_cleanly(devnet: Devnet) -> None:
    for node in devnet.nodes:
        assert node.process.ending == "signal", (node.process.name, node.process.diagnostics())
        assert node.process.returncode in CLEAN_EXIT_STATUSES
        assert not node.process.running
        stderr = node.process.files.stderr_path.read_text()
        assert "Traceback" not in stderr, stderr


async def test_every_aggregator_gets_every_message_exactly_once_and_the_nodes_stop_cleanly(tmp_path):
    options = DevnetOptions(nodes=3, pools=4, topology="line", period=1.0, duration=3.0, directory=tmp_path / "dn",
                            live=False, record_traffic=True, drain_timeout=20.0)
    console = quiet_console()
    devnet = Devnet(options, console)
    summary = await devnet.run()
    summary.render(console)

    assert summary.attempted >= 8                  # 4 pools, one message a second, 3 seconds
    assert summary.accepted == summary.attempted, (summary.rejected, summary.failed)
    assert len(summary.aggregators) == 3
    for aggregator in summary.aggregators:
        assert (aggregator.received, aggregator.missing) == (summary.accepted, 0), aggregator
        assert (aggregator.duplicates, aggregator.unexpected, aggregator.foreign) == (0, 0, 0), aggregator
        assert aggregator.latency["p50_ms"] is not None
    assert summary.complete and summary.stopped_cleanly
    assert_stopped_cleanly(devnet)
    # The nodes' own Prometheus figures: every node holds every message (none expired yet).
    assert [node.held for node in summary.nodes] == [summary.accepted] * 3
    # Publications went to every node: messages crossed each link in both directions.
    assert {p.node_index for p in devnet.tally.accepted.values()} == {0, 1, 2}
    assert [node.dials for node in summary.nodes] == [[], ["node-1"], ["node-2"]]

    written = json.loads(devnet.layout.summary.read_text())
    assert written["complete"] and written["stopped_cleanly"] and written["loss"] == 0
    manifests = [decode_manifest(path.read_text()) for path in devnet.layout.recording.glob("manifest.*.json")]
    assert len(manifests) == 3
    assert "loss: 0 of" in console.file.getvalue()


async def test_ctrl_c_stops_the_run_early_and_still_stops_every_node_cleanly(tmp_path):
    options = DevnetOptions(nodes=1, pools=2, topology="line", period=0.5, duration=120.0,
                            directory=tmp_path / "dn", live=False, record_traffic=False)
    devnet = Devnet(options, quiet_console())

    async def press_ctrl_c_once_publishing():
        while not devnet.tally.accepted:
            await trio.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(press_ctrl_c_once_publishing)
        with trio.fail_after(60):
            summary = await devnet.run()

    assert summary.interrupted == "SIGINT"
    assert not summary.complete
    assert summary.publishing_seconds < options.duration
    assert summary.accepted >= 1
    assert summary.stopped_cleanly
    assert_stopped_cleanly(devnet)
    assert json.loads(devnet.layout.summary.read_text())["interrupted"] == "SIGINT"
