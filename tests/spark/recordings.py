"""Small recordings written directly in the recorder's formats, for tests that need no node run.

A version-1 recording comes from a frozen copy of the version-1 writer; a current one from
the node's own :class:`~dmq.recorder.TrafficRecorder`.
"""

from __future__ import annotations

import json
from pathlib import Path

from dmq.recorder import TrafficRecorder
from dmq.trace import MessageAccepted

#: The version-1 format as it was released: field names in file order, frozen here on purpose
#: (deriving them from the current schema would let a change to version 1 go unnoticed).
V1_FIELDS = {
    "message_events": ("t", "node", "session", "event", "message_id", "pool_id", "size", "count", "peer",
                       "reason", "reaction", "verify_ns"),
    "connection_samples": ("t", "node", "session", "conn", "peer", "link", "protocol", "mode", "bytes_in",
                           "bytes_out", "sdus_in", "sdus_out", "final"),
    "node_samples": ("t", "node", "session", "process", "messages_held", "bytes_held", "rss_bytes", "cpu_seconds"),
}
NODE, SESSION, PROCESS = "old-relay:3001", "20250101T000000-0ld0ld", "old-host:42"
START = 1_750_000_000.0
SIZE = 1_100
RSS_BASE, RSS_PER_MESSAGE = 180_000_000, 1_500


def write_v1_recording(directory: Path, seconds: int = 60) -> None:
    """What a version-1 node wrote: a manifest, and JSON lines of the version-1 fields only.

    One message accepted per second, none expiring, RSS growing by exactly
    ``RSS_PER_MESSAGE`` per message held.
    """
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"manifest.old-relay_3001.{SESSION}.json").write_text(json.dumps({
        "schema_version": 1, "node": NODE, "session": SESSION, "process": PROCESS,
        "started_at": START, "sample_interval": 1.0}, indent=2, sort_keys=True) + "\n")
    rows: dict[str, list[tuple]] = {name: [] for name in V1_FIELDS}
    for s in range(seconds):
        t = START + s
        rows["message_events"].append((t + 0.5, NODE, SESSION, "accepted", f"{s:064x}", "ab" * 28, SIZE, 1,
                                       "10.0.0.9:3001", None, None, 60_000))
        rows["node_samples"].append((t, NODE, SESSION, PROCESS, s, s * SIZE, RSS_BASE + s * RSS_PER_MESSAGE,
                                     2.0 + s / 1000))
        rows["connection_samples"].append((t, NODE, SESSION, 1, "10.0.0.9:3001", "n2n-in", 11, "responder",
                                           s * (SIZE + 8), 40 * s, s, s, s == seconds - 1))
    for name, records in rows.items():
        folder = directory / name
        folder.mkdir(exist_ok=True)
        with open(folder / f"old-relay_3001.{SESSION}.000000.jsonl", "x") as out:
            for values in records:
                out.write(json.dumps(dict(zip(V1_FIELDS[name], values)), separators=(",", ":")) + "\n")


def write_current_recording(directory: Path) -> None:
    recorder = TrafficRecorder(directory, "new-relay:3001", now=lambda: START + 100)
    for k in range(3):
        recorder(MessageAccepted(START + 100 + k, bytes([k]) * 32, bytes(28), 900, "local", 50_000))
        recorder.sample()
    recorder.close()
