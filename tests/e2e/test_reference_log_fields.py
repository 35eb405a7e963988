"""The log lines of running nodes carry the reference's fields, as docs/operations.md's table says.

The table ("The reference's fields") is read from the document: for each namespace, the
reference's field names, dotted for nested objects, each with a JSON kind or the constant the
reference writes. Two devnet nodes run as processes (a sidecar A, and B dialling A and a port
where nothing listens); A takes local submissions, a duplicate, a notification request and a
``dmq status`` version query; B knows the stake of only one of the two pools, so it rejects
the other pool's message when A relays it. Every line of either log whose namespace is in the
table must carry its fields. The namespaces this run does not reach (a refused handshake, the
accept limits, peer sharing, cardano-node's epochs) are checked on the lines the node's log
writer makes of such events; the run must reach at least the core ones.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cbor2
import trio

from dmq.diffusion.events import InboundDelayed, InboundRefused, MessageSent, PeerForgotten, PeersShared
from dmq.ports import free_ports
from dmq.trace import (HANDSHAKE_QUERY, MACHINE, ConnectionClosed, LogSink, StartupConfiguration, StartupTopology,
                       read_log_line, route_of)
from dmq.trace_reference import REFERENCE_FIELDS
from dmq.cardano_node.events import CardanoEpochChanged
from lab.devnet.topology import topology_document
from tests.e2e.messages import DMQ_DEVNET_MAGIC as MAGIC
from tests.e2e.raw_n2c import ACCEPT, RawN2CClient, publish_like_mithril_signer

from .topic_node import n2n_port

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "docs" / "operations.md"
HEADER = "the reference's fields in `data`"
FIELD = re.compile(r'`([\w.]+)`: ("[^"]*"|string or object|string|integer|number|boolean|array|object)')

#: Namespaces the two-node run must reach.
REACHED = {
    "Net.Local.SigSubmission.Server.TraceSubmitAccept",
    "Net.Local.SigSubmission.Server.TraceSubmitFailure",
    "Net.Sig.Validation.SigValidation",
    "Net.SigSubmission.Inbound.AddedToMempool",
    "Net.Local.MsgNotification.Server.TraceMsgNotificationServerReply",
    "Net.ConnectionManager.Remote.ConnectionHandler.HandshakeSuccess",
    "Net.ConnectionManager.Local.ConnectionHandler.HandshakeSuccess",
    "Net.ConnectionManager.Local.ConnectionHandler.HandshakeQuery",
    "Net.ConnectionManager.Remote.ConnectError",
    "Net.Server.Remote.Started",
    "Net.Server.Local.Started",
}

#: Events of the namespaces a two-node devnet run does not reach.
SAMPLES = [
    ConnectionClosed(1.0, "127.0.0.1:50000", "n2n-in", "handshake: Refused 1 \"magic\""),
    ConnectionClosed(1.0, "local#2", "n2c", "handshake: Refused 32784 \"magic\""),
    ConnectionClosed(1.0, "127.0.0.1:50000", "n2n-in", HANDSHAKE_QUERY),
    ConnectionClosed(1.0, "127.0.0.1:3001", "n2n-out", "MuxError: gone"),
    ConnectionClosed(1.0, "local#2", "n2c", "MuxError: gone"),
    ConnectionClosed(1.0, "127.0.0.1:3001", "n2n-out", None),
    ConnectionClosed(1.0, "local#2", "n2c", None),
    MessageSent(1.0, bytes(32), 1000, "127.0.0.1:3001"),
    InboundRefused(1.0, "127.0.0.1:50000", 40, 40),
    InboundDelayed(1.0, 30, 0.5),
    PeersShared(1.0, "127.0.0.1:3001", 3, 1),
    PeerForgotten(1.0, "127.0.0.1:3001", 5),
    CardanoEpochChanged(1.0, 4, 5, "Conway"),
    StartupConfiguration(1.0, {"NetworkMagic": 3141592}),
    StartupTopology(1.0, {"localRoots": [], "publicRoots": []}),
]


def reference_table() -> dict[str, dict[str, str]]:
    """Namespace -> {field path: kind or quoted constant}, from docs/operations.md."""
    lines = OPERATIONS.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|") and HEADER in line)
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        namespace = cells[0].strip("`")
        fields = dict(FIELD.findall(cells[3]))
        assert fields, line
        table[namespace] = fields
    return table


def missing_fields(data: dict[str, Any], fields: dict[str, str]) -> list[str]:
    """What of ``fields`` the line's ``data`` lacks or has in another kind."""
    wrong = []
    for path, kind in fields.items():
        value: Any = data
        for key in path.split("."):
            value = value.get(key, KeyError) if isinstance(value, dict) else KeyError
        if not _is(value, kind):
            wrong.append(f"{path}: {kind}, got {value!r}")
    return wrong


def _is(value: Any, kind: str) -> bool:
    if kind.startswith('"'):
        return value == kind.strip('"')
    checks = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    return any(checks[one](value) for one in kind.split(" or "))


def handshake_errors(node) -> list:
    return [line for line in node.log_events() if line.ns.endswith("HandshakeServerError")]


def test_the_table_lists_every_namespace_that_carries_the_reference_fields():
    table = reference_table()
    assert set(table) == set(REFERENCE_FIELDS)
    for namespace, fields in table.items():
        written = {path.split(".")[0] for path in fields}
        assert written <= set(REFERENCE_FIELDS[namespace].keys), namespace


def test_the_events_a_devnet_run_does_not_reach_carry_the_reference_fields_too():
    table = reference_table()
    out = io.StringIO()
    sink = LogSink(out, severities={"": "Debug"}, backend=MACHINE, host="h")
    for event in SAMPLES:
        sink(event)
    lines = [read_log_line(line) for line in out.getvalue().splitlines()]
    assert [line.ns for line in lines] == [route_of(event)[0] for event in SAMPLES]
    for line in lines:
        assert line.ns in table, line.ns
        assert missing_fields(line.data, table[line.ns]) == [], line.ns
    assert set(table) <= REACHED | {line.ns for line in lines}   # every row is checked somewhere


async def test_the_lines_of_running_nodes_carry_the_reference_fields(start_node, signers, tmp_path):
    table = reference_table()
    metrics_port, dead_port = free_ports(2)
    known, unknown = signers[0], signers[1]
    a = start_node("a", PrometheusPort=metrics_port, MinSigDelay=0)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "stake.json").write_text(json.dumps({"epoch": 1, "pools": {known.pool_id.hex(): 1_000_000}}))
    (tmp_path / "b" / "dmq.topology.json").write_text(
        json.dumps(topology_document([("127.0.0.1", n2n_port(a)), ("127.0.0.1", dead_port)])))
    b = start_node("b", StakeSource="stake.json", MinSigDelay=0)

    first = known.sign()
    assert await publish_like_mithril_signer(a.socket_path, MAGIC, first.raw) == ACCEPT
    assert await publish_like_mithril_signer(a.socket_path, MAGIC, unknown.sign().raw) == ACCEPT
    assert await publish_like_mithril_signer(a.socket_path, MAGIC, first.raw) != ACCEPT   # a duplicate
    with trio.fail_after(30):
        async with await RawN2CClient.connect(a.socket_path) as client:
            await client.handshake(MAGIC)
            _, batch, _ = cbor2.loads(await client.request(False))
            assert batch
    # (The start-up probe that found A's socket open connected and left: one handshake error before this.)
    errors_before = handshake_errors(a)
    status = subprocess.run([sys.executable, "-m", "dmq.cli.tool", "status", "--metrics", f"127.0.0.1:{metrics_port}",
                             "--socket", str(a.socket_path), "--magic", str(MAGIC), "--json", "--interval", "0.1"],
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr

    deadline = time.monotonic() + 30
    while True:
        lines = a.log_events() + b.log_events()
        seen = {line.ns for line in lines}
        if REACHED <= seen:
            break
        assert time.monotonic() < deadline, f"never logged: {sorted(REACHED - seen)}"
        time.sleep(0.1)
    checked = 0
    for line in lines:
        if line.ns in table:
            assert missing_fields(line.data, table[line.ns]) == [], (line.ns, line.data)
            checked += 1
    assert checked >= len(REACHED)
    # The version query is what it is, below Info; nothing calls it a handshake error.
    queries = [line for line in a.log_events() if line.ns.endswith("ConnectionHandler.HandshakeQuery")]
    assert queries and {line.sev for line in queries} == {"Debug"}
    assert handshake_errors(a) == errors_before
    # The reference's rejection object: the pool B does not know.
    (rejection, *_) = [line.data for line in b.log_events() if line.ns == "Net.Sig.Validation.SigValidation"]
    assert rejection["reason"] == {"type": "invalid", "reason": "UnrecognizedPool"}
    assert rejection["error"] == "UnrecognizedPool" and rejection["event"] == "MessageRejected"
