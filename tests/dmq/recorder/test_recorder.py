"""The recorder as a trace sink and as a sampler of real muxes on loopback TCP."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import trio

from dmq.recorder import NO_RECORDER, TrafficRecorder
from dmq.recorder.schema import CONNECTION_SAMPLES, MESSAGE_EVENTS, NODE_SAMPLES, decode_manifest
from dmq.trace import (
    ConnectionOpened,
    MessageAccepted,
    MessageExpired,
    MessageNotified,
    MessageRejected,
    TraceEvent,
    Tracer,
)
from ouroboros_mux.bearer import Bearer
from ouroboros_mux.mux import Mode, Mux, Provenance
from ouroboros_mux.sdu import SDU_HEADER_SIZE
from tests.ouroboros_mux.streams import tcp_stream_pair

MID = bytes(range(32))
POOL = bytes(range(28))


def _records(directory: Path, record_type) -> list[dict]:
    return [json.loads(line) for path in sorted((directory / record_type.name).glob("*.jsonl"))
            for line in path.read_text().splitlines()]


@dataclass(frozen=True, slots=True)
class MessageOffered(TraceEvent):
    """Shaped like the diffusion layer's announcement event: recorded by its class name."""

    message_id: bytes
    size: int
    peer: str


def test_message_events_are_recorded_with_their_fields(tmp_path):
    recorder = TrafficRecorder(tmp_path, "host:3001", now=lambda: 5.0)
    tracer = Tracer()
    tracer.add_sink(recorder)
    tracer.emit(MessageAccepted(1.0, MID, POOL, 722, "local", 61_000))
    tracer.emit(MessageRejected(2.0, MID, POOL, 722, "10.0.0.1:3001", "InvalidSigId", "disconnect"))
    tracer.emit(MessageExpired(3.0, MID, 722))
    tracer.emit(MessageNotified(4.0, 3, 2166, "local#2"))
    tracer.emit(MessageOffered(4.5, MID, 722, "10.0.0.2:3001"))
    tracer.emit(ConnectionOpened(4.6, "local#2", "n2c", 1))  # not a message event
    recorder.close()
    rows = _records(tmp_path, MESSAGE_EVENTS)
    assert [(r["t"], r["event"], r["peer"]) for r in rows] == [
        (1.0, "accepted", "local"), (2.0, "rejected", "10.0.0.1:3001"), (3.0, "expired", None),
        (4.0, "notified", "local#2"), (4.5, "offered", "10.0.0.2:3001"),
    ]
    accepted, rejected, expired, notified, offered = rows
    assert accepted["message_id"] == MID.hex() and accepted["pool_id"] == POOL.hex()
    assert accepted["verify_ns"] == 61_000 and accepted["size"] == 722 and accepted["count"] == 1
    assert (rejected["reason"], rejected["reaction"]) == ("InvalidSigId", "disconnect")
    assert expired["pool_id"] is None and expired["size"] == 722
    assert (notified["count"], notified["size"], notified["message_id"]) == (3, 2166, None)
    assert offered["size"] == 722
    assert {r["node"] for r in rows} == {"host:3001"} and len({r["session"] for r in rows}) == 1
    manifest, = tmp_path.glob("manifest.*.json")
    assert decode_manifest(manifest.read_text())["session"] == rows[0]["session"]


def test_events_after_close_are_ignored(tmp_path):
    recorder = TrafficRecorder(tmp_path, "n")
    recorder.close()
    recorder(MessageAccepted(1.0, MID, POOL, 722, "local", 1))
    assert _records(tmp_path, MESSAGE_EVENTS) == []


def test_node_samples_read_the_holdings_and_the_process(tmp_path):
    held = [0, 0]
    recorder = TrafficRecorder(tmp_path, "n", now=lambda: 10.0)
    recorder.bind_holdings(lambda: held[0], lambda: held[1])
    recorder.sample()
    held[:] = [3, 2100]
    sum(i * i for i in range(200_000))  # spend some CPU between the samples
    recorder.sample()
    recorder.close()
    first, second, last = _records(tmp_path, NODE_SAMPLES)
    assert (first["messages_held"], first["bytes_held"]) == (0, 0)
    assert (second["messages_held"], second["bytes_held"]) == (3, 2100) == (last["messages_held"], last["bytes_held"])
    assert second["cpu_seconds"] > first["cpu_seconds"]
    assert first["rss_bytes"] > 10_000_000  # a Python process with trio and libsodium loaded
    assert 0 < first["anon_bytes"] < first["rss_bytes"]  # the heap, without the mapped libraries
    assert first["process"].endswith(f":{__import__('os').getpid()}")


async def test_connection_counters_include_sdu_headers_and_end_with_a_final_sample(tmp_path):
    client_stream, server_stream = await tcp_stream_pair()
    a = Mux(Bearer(client_stream), Provenance.OUTBOUND)
    b = Mux(Bearer(server_stream), Provenance.INBOUND)
    a_out = a.register(11, Mode.INITIATOR, 1 << 20)
    b_in = b.register(11, Mode.RESPONDER, 1 << 20)
    recorder = TrafficRecorder(tmp_path, "a", sample_interval=0.05)
    payloads = [bytes([0x58, 200]) + bytes(200), bytes([0x59, 0x10, 0x00]) + bytes(4096)]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(a.run)
        nursery.start_soon(b.run)
        await nursery.start(recorder.run)
        with recorder.watching("127.0.0.1:3001", a, "n2n-out") as watch:
            for payload in payloads:
                await a_out.send(payload)
                assert await b_in.recv_message() == payload
            await trio.sleep(0.12)  # at least one periodic sample while open
            counters = a.counters()[(11, Mode.INITIATOR)]
        a.stop()
        b.stop()
        nursery.cancel_scope.cancel()
    rows = [r for r in _records(tmp_path, CONNECTION_SAMPLES) if r["conn"] == watch.conn]
    assert any(not r["final"] for r in rows)
    final = [r for r in rows if r["final"]]
    assert len(final) == 1 and final[0] == max(rows, key=lambda r: r["t"]) | {"final": True}
    final = final[0]
    assert (final["peer"], final["link"], final["protocol"], final["mode"]) == ("127.0.0.1:3001", "n2n-out", 11, "initiator")
    assert (final["bytes_out"], final["sdus_out"]) == (counters.bytes_out, counters.sdus_out)
    assert final["bytes_out"] == sum(map(len, payloads)) + SDU_HEADER_SIZE * final["sdus_out"]
    # Cumulative: never decreasing from one sample to the next.
    outs = [r["bytes_out"] for r in sorted(rows, key=lambda r: r["t"])]
    assert outs == sorted(outs)


def test_the_null_recorder_accepts_the_same_calls():
    with NO_RECORDER.watching("p", object(), "n2c") as watch:
        assert watch is None
    NO_RECORDER.unwatch(None)
    NO_RECORDER.close()
