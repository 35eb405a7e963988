"""The trace sinks on the per-message path: the JSON log's lines and the Prometheus series."""

from __future__ import annotations

import dataclasses
import json

import pytest

from dmq import trace
from dmq.metrics import NodeMetrics
from dmq.trace import (
    ConnectionClosed,
    ConnectionOpened,
    JsonLogSink,
    MessageAccepted,
    MessageExpired,
    MessageNotified,
    MessageRejected,
    NodeListening,
    NodeStopped,
    StakeViewUpdated,
)

EVENTS = [
    MessageAccepted(1_800_000_000.123456, bytes(range(32)), bytearray(b"\x02" * 28), 2650, "local", 123_456),
    MessageRejected(0.5, b"\x00", b"\xff", 1, "127.0.0.1:3001", 'Invalid "x" \u00e9\n', "disconnect"),
    MessageExpired(1e21, b"", 0),
    MessageNotified(-0.0, 3, 7950, "local#9"),
    ConnectionOpened(1.0, "local#1", "n2c", 4097),
    ConnectionClosed(2.0, "local#1", "n2c", None),
    ConnectionClosed(float("nan"), "peer", "n2n-in", "MuxError: \u2603 \\ gone"),
    StakeViewUpdated(3.0, "file", None, 2**70, -1),
    NodeListening(4.0, "run/dmq-node.socket", "n2c"),
    NodeStopped(5.0, "signal"),
]


def expected_line(event) -> str:
    """The line as the standard library writes the event's fields (bytes as hex)."""
    fields = {"at": event.at, "kind": type(event).__name__}
    for field in dataclasses.fields(event):
        if field.name != "at":
            value = getattr(event, field.name)
            fields[field.name] = value.hex() if isinstance(value, (bytes, bytearray)) else value
    return json.dumps(fields, separators=(",", ":")) + "\n"


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_a_json_line_is_the_standard_encoding_of_the_event(event):
    assert trace._json_line(event) == expected_line(event)
    assert trace._encode(event.to_json()) + "\n" == expected_line(event)


def test_every_line_is_flushed_as_it_is_written(tmp_path):
    path = tmp_path / "node.log"
    with open(path, "w") as stream:
        sink = JsonLogSink(stream)
        for count, event in enumerate(EVENTS[:3], start=1):
            sink(event)
            lines = path.read_text().splitlines()  # read while the stream is still open
            assert len(lines) == count
            assert json.loads(lines[-1])["kind"] == type(event).__name__


def test_a_kind_filter_keeps_only_its_kinds(tmp_path):
    path = tmp_path / "node.log"
    with open(path, "w") as stream:
        sink = JsonLogSink(stream, kinds={"ConnectionOpened"})
        for event in EVENTS:
            sink(event)
    assert [json.loads(line)["kind"] for line in path.read_text().splitlines()] == ["ConnectionOpened"]


def sample(metrics: NodeMetrics, name: str, labels: dict[str, str] | None = None) -> float | None:
    return metrics.registry.get_sample_value(name, labels or {})


def test_metrics_follow_the_events():
    metrics = NodeMetrics()
    for event in [
        ConnectionOpened(0.0, "local#1", "n2c", 4097),
        ConnectionOpened(0.0, "local#2", "n2c", 4097),
        ConnectionOpened(0.0, "peer", "n2n-in", 14),
        MessageAccepted(0.0, b"i", b"p", 2650, "local"),
        MessageAccepted(0.0, b"j", b"p", 1000, "local"),
        MessageAccepted(0.0, b"k", b"q", 500, "127.0.0.1:3001"),
        MessageRejected(0.0, b"i", b"p", 2650, "local", "SigDuplicate", "reject"),
        MessageRejected(0.0, b"i", b"p", 2650, "peer", "InvalidSignatureOp \"bad\"", "disconnect"),
        MessageExpired(0.0, b"i", 2650),
        MessageNotified(0.0, 4, 100, "local#3"),
        ConnectionClosed(0.0, "local#1", "n2c", None),
        ConnectionClosed(0.0, "local#9", "n2c", "handshake: refused"),  # never counted as open
        StakeViewUpdated(0.0, "file", 7, 12, 10),
    ]:
        metrics(event)
    assert sample(metrics, "dmq_node_messages_accepted_total", {"origin": "local"}) == 2
    assert sample(metrics, "dmq_node_messages_accepted_total", {"origin": "peer"}) == 1
    assert sample(metrics, "dmq_node_bytes_accepted_total") == 4150
    assert sample(metrics, "dmq_node_messages_rejected_total", {"reason": "SigDuplicate", "origin": "local"}) == 1
    assert sample(metrics, "dmq_node_messages_rejected_total", {"reason": "InvalidSignatureOp", "origin": "peer"}) == 1
    assert sample(metrics, "dmq_node_messages_expired_total") == 1
    assert sample(metrics, "dmq_node_messages_notified_total") == 4
    assert sample(metrics, "dmq_node_connections", {"link": "n2c"}) == 1
    assert sample(metrics, "dmq_node_connections", {"link": "n2n-in"}) == 1
    assert sample(metrics, "dmq_node_stake_pools_eligible") == 10


def test_a_series_appears_only_once_something_happened_to_it():
    metrics = NodeMetrics()
    assert b'origin="peer"' not in metrics.render()
    metrics(MessageAccepted(0.0, b"i", b"p", 1, "local"))
    rendered = metrics.render()
    assert b'dmq_node_messages_accepted_total{origin="local"} 1.0' in rendered
    assert b'origin="peer"' not in rendered
