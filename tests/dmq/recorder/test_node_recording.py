"""A node started with ``RecordTraffic`` records what its metrics count; without it, nothing."""

from __future__ import annotations

import json

import pytest
import trio

from dmq.cli.wiring import assemble_node
from dmq.node import NodeStartError
from dmq.recorder import NO_RECORDER
from dmq.recorder.schema import decode_manifest
from tests.dmq.recorder.devnet import devnet_config, record_devnet_run


def _rows(recording, name):
    return [json.loads(line) for p in sorted((recording / name).glob("*.jsonl")) for line in p.read_text().splitlines()]


async def test_the_recording_agrees_with_the_node_and_its_clients(tmp_path):
    run = await record_devnet_run(tmp_path, rounds=4)
    manifest, = run.recording.glob("manifest.*.json")
    node_name = decode_manifest(manifest.read_text())["node"]
    assert node_name.endswith(":3141")
    events = _rows(run.recording, "message_events")
    accepted = [e for e in events if e["event"] == "accepted"]
    assert len(accepted) == run.metrics["accepted"] == 8
    assert sum(e["size"] for e in accepted) == run.metrics["accepted_bytes"]
    assert all(e["peer"] == "local" and 0 < e["verify_ns"] < 1_000_000_000 for e in accepted)  # measured, not a timing target
    rejected = sorted(e["reason"].split(" ")[0] for e in events if e["event"] == "rejected")
    assert rejected == ["SigDuplicate", "SigExpired", "SigTooFrequent"]
    assert sum(e["count"] for e in events if e["event"] == "notified") == run.metrics["notified"] == len(run.notified)
    assert sum(e["count"] for e in events if e["event"] == "expired") == run.metrics["expired"] > 0

    samples = _rows(run.recording, "connection_samples")
    finals = [s for s in samples if s["final"]]
    assert {s["link"] for s in samples} == {"n2c"} and {s["protocol"] for s in finals} == {14, 15}
    assert len({s["conn"] for s in finals}) == run.connections
    assert sum(s["bytes_in"] for s in finals) == run.client_bytes_out
    assert sum(s["bytes_out"] for s in finals) == run.client_bytes_in

    node_samples = _rows(run.recording, "node_samples")
    last = max(node_samples, key=lambda s: s["t"])
    assert (last["messages_held"], last["bytes_held"]) == (run.mempool_len, run.mempool_bytes)
    assert run.mempool_len == run.metrics["mempool_messages"] and run.mempool_bytes == run.metrics["mempool_bytes"]


async def test_no_recording_unless_asked(tmp_path):
    node = assemble_node(devnet_config(tmp_path, None), None)
    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        assert node.recorder is NO_RECORDER
        nursery.cancel_scope.cancel()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db"]


async def test_an_unwritable_recording_directory_stops_the_start(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(NodeStartError, match=f"cannot record traffic into {blocker / 'rec'}: Not a directory"):
        assemble_node(devnet_config(tmp_path, blocker / "rec"), None)  # fails before serving anyone
