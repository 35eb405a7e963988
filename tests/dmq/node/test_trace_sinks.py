"""The trace sinks on the per-message path: the log's lines and the Prometheus series."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from datetime import datetime, timezone

import pytest
from prometheus_client.parser import text_string_to_metric_families

from dmq.metrics import NodeMetrics
from dmq.trace_reference import REFERENCE_FIELDS
from dmq.trace import (
    HANDSHAKE_QUERY,
    HUMAN,
    HUMAN_COLOURED,
    MACHINE,
    ConnectionClosed,
    ConnectionOpened,
    LogSink,
    MessageAccepted,
    MessageExpired,
    MessageNotified,
    MessageRejected,
    NodeListening,
    NodeStopped,
    PrometheusSimpleStart,
    StakeViewUpdated,
    Tracer,
    read_log,
    read_log_line,
    route_of,
    severity_threshold,
)

EVENTS = [
    MessageAccepted(1_800_000_000.123456, bytes(range(32)), bytearray(b"\x02" * 28), 2650, "local", 123_456),
    MessageAccepted(1_800_000_000.9999996, b"\x01", b"\x02", 10, "127.0.0.1:3001", 1),
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
#: More cases of the reference's fields: ids in a notification, a local reject, a version query, IPv6.
REFERENCE_CASES = [
    MessageNotified(6.0, 2, 90, "local#2", (b"\x01" * 32, b"\x02" * 32), True),
    MessageRejected(0.5, b"\x00", b"\xff", 1, "local", "SigDuplicate", "reject"),
    ConnectionClosed(7.0, "127.0.0.1:50000", "n2n-in", HANDSHAKE_QUERY),
    ConnectionOpened(8.0, "[::1]:3001", "n2n-out", 1),
]


def expected_data(event) -> dict:
    """``data`` as the standard library would write it: the reference's fields where the namespace
    is also the reference's, ``kind`` (unless the reference took it) and ``event``, then the
    event's own fields (bytes as hex), moved where a reference field took their name."""
    reference = REFERENCE_FIELDS.get(route_of(event)[0])
    fields = dict(zip(reference.keys, reference.values(event))) if reference else {}
    fields.setdefault("kind", type(event).__name__)
    fields["event"] = type(event).__name__
    renames = reference.renames if reference else {}
    for field in dataclasses.fields(event):
        if field.name != "at" and renames.get(field.name, field.name) is not None:
            value = getattr(event, field.name)
            fields[renames.get(field.name, field.name)] = value.hex() if isinstance(value, (bytes, bytearray)) else value
    return fields


def expected_at(at: float) -> str:
    try:
        return datetime.fromtimestamp(round(at, 6), timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    except (ValueError, OverflowError, OSError):
        return repr(at)


@pytest.mark.parametrize("event", EVENTS + REFERENCE_CASES, ids=lambda e: type(e).__name__)
def test_a_machine_line_is_trace_dispatchers_object_with_the_event_in_data(event):
    line = LogSink(io.StringIO(), severities={"": "Debug"}, backend=MACHINE, host="relay-1").format(event)
    assert line.endswith("\n") and "\n" not in line[:-1]
    obj = json.loads(line)
    assert list(obj) == ["at", "ns", "data", "sev", "thread", "host"]  # trace-dispatcher's order
    namespace, severity = route_of(event)
    assert (obj["ns"], obj["sev"], obj["host"]) == (namespace, severity, "relay-1")
    assert obj["thread"].isdigit()
    assert obj["at"] == expected_at(event.at)
    assert json.dumps(obj["data"]) == json.dumps(expected_data(event))  # same keys, same order
    own = event.to_json()
    assert obj["data"]["event"] == own.pop("kind")
    moved = REFERENCE_FIELDS[namespace].renames if namespace in REFERENCE_FIELDS else {}
    assert {moved.get(k, k): v for k, v in own.items() if moved.get(k, k)} == \
        {k: v for k, v in obj["data"].items() if k in {moved.get(n, n) for n in own}}


def test_times_are_utc_with_microseconds_and_a_z():
    sink = LogSink(io.StringIO(), backend=MACHINE)
    stamps = [json.loads(sink.format(MessageExpired(at, b"", 0)))["at"]
              for at in (1_800_000_000.0, 1_800_000_000.0000004, 1_800_000_000.9999996, 1_800_000_001.25)]
    assert stamps == ["2027-01-15T08:00:00.000000Z", "2027-01-15T08:00:00.000000Z",
                      "2027-01-15T08:00:01.000000Z", "2027-01-15T08:00:01.250000Z"]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", s) for s in stamps)


def test_the_reference_namespaces_name_the_events_it_traces_too():
    assert route_of(EVENTS[0]) == ("Net.Local.SigSubmission.Server.TraceSubmitAccept", "Info")
    assert route_of(EVENTS[1]) == ("Net.SigSubmission.Inbound.AddedToMempool", "Debug")
    assert route_of(MessageRejected(0, b"", b"", 0, "local", "SigDuplicate", "reject")) == (
        "Net.Local.SigSubmission.Server.TraceSubmitFailure", "Warning")
    assert route_of(ConnectionOpened(0, "p", "n2n-in", 1))[0] == \
        "Net.ConnectionManager.Remote.ConnectionHandler.HandshakeSuccess"


@pytest.mark.parametrize(("namespace", "decides"), [
    ("Net.Local.SigSubmission.Server.TraceSubmitAccept", "Silence"),
    ("Net.Local.SigSubmission.Server.TraceSubmitFailure", "Debug"),
    ("Net.Local.MsgNotification.Server.TraceMsgNotificationServerReply", "Warning"),
    ("Net.SigSubmission.Inbound.AddedToMempool", "Notice"),
    ("Net.Local", "Warning"),
    ("Netherlands", "Notice"),      # a prefix of a word is not a parent namespace
])
def test_the_most_specific_trace_options_entry_decides(namespace, decides):
    severities = {"": "Notice", "Net.Local": "Warning", "Net.Local.SigSubmission": "Debug",
                  "Net.Local.SigSubmission.Server.TraceSubmitAccept": "Silence"}
    assert severity_threshold(namespace, severities) == decides


def test_the_severity_filter_keeps_what_is_at_least_as_severe():
    out = io.StringIO()
    sink = LogSink(out, severities={"": "Warning", "Net.Local.SigSubmission.Server": "Info"}, backend=MACHINE)
    for event in EVENTS:
        sink(event)
    kept = [(e.kind, e.sev) for e in read_log(out.getvalue())]
    # Local accept (Info) passes its namespace's Info; a peer's invalid message is an Error;
    # the rest (Info, Debug and Notice under the root's Warning) is dropped.
    assert kept == [("MessageAccepted", "Info"), ("MessageRejected", "Error")]


def test_without_trace_options_info_and_above_are_logged():
    out = io.StringIO()
    sink = LogSink(out, backend=MACHINE)
    for event in EVENTS:
        sink(event)
    assert {e.sev for e in read_log(out.getvalue())} <= {"Info", "Notice", "Warning", "Error"}
    assert "Debug" not in out.getvalue()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_coloured_human_lines_and_anything_else_json():
    assert LogSink(Terminal()).backend == HUMAN_COLOURED
    assert LogSink(io.StringIO()).backend == MACHINE
    assert LogSink(Terminal(), backend=MACHINE).backend == MACHINE  # the Stdout backend forces it


def test_a_human_line_is_trace_dispatchers_prefix_and_the_fields():
    event = MessageRejected(1_800_000_000.5, b"\x00", b"\xff", 1, "local", "SigDuplicate x", "reject")
    plain = LogSink(io.StringIO(), backend=HUMAN, host="h").format(event)
    assert re.fullmatch(r"\[2027-01-15 08:00:00\.5000Z\]\[h:Net\.Local\.SigSubmission\.Server\.TraceSubmitFailure\]"
                        r"\(Warning,\d+\) MessageRejected message_id=00 pool_id=ff size=1 origin=local "
                        r'reason="SigDuplicate x" reaction=reject\n', plain)
    coloured = LogSink(io.StringIO(), backend=HUMAN_COLOURED, host="h").format(event)
    assert coloured.startswith("\x1b[33m[2027") and "\x1b[0m MessageRejected" in coloured  # Warning: yellow
    assert read_log_line(plain) is None  # the reader takes machine lines only


def test_every_line_is_flushed_as_it_is_written(tmp_path):
    path = tmp_path / "node.log"
    with open(path, "w") as stream:
        sink = LogSink(stream, severities={"": "Debug"})
        for count, event in enumerate(EVENTS[:3], start=1):
            sink(event)
            text = path.read_text()  # read while the stream is still open
            assert len(text.splitlines()) == count
            assert read_log(text)[-1].kind == type(event).__name__


def test_the_reader_gives_kind_data_and_time():
    out = io.StringIO()
    LogSink(out, backend=MACHINE)(EVENTS[0])
    out.write("not json\n{\"partial\": 1}\n")
    events = read_log(out.getvalue())
    assert len(events) == 1
    (event,) = events
    assert (event.kind, event.data["size"], event.ns) == ("MessageAccepted", 2650,
                                                          "Net.Local.SigSubmission.Server.TraceSubmitAccept")
    assert event.timestamp == pytest.approx(1_800_000_000.123456, abs=1e-6)
    assert read_log(out.getvalue(), "MessageExpired") == []


def exposition(page: bytes) -> tuple[dict[str, str], dict[tuple[str, tuple], str]]:
    """A metrics page read strictly: family -> ``# TYPE``, and (series, labels) -> the value as printed."""
    types, values = {}, {}
    for line in page.decode().splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            name, _, labels = series.partition("{")
            pairs = tuple(sorted(tuple(pair.split("=", 1)) for pair in labels.rstrip("}").split(",") if pair))
            values[name, tuple((k, v.strip('"')) for k, v in pairs)] = value
    return types, values


def samples(metrics: NodeMetrics) -> dict[tuple[str, tuple], float]:
    """The page's values as numbers, each checked to print as trace-dispatcher prints it."""
    types, values = exposition(metrics.render())
    for (name, _), text in values.items():
        if name.endswith(("_int", "_counter")):
            assert text.lstrip("-").isdigit(), f"{name} printed {text!r}, not a whole number"
    return {key: float(text) for key, text in values.items()}


def test_metrics_follow_the_events_under_the_reference_names():
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
    values = samples(metrics)
    assert values["dmq_node_submissions_submitted_counter", ()] == 2
    assert values["dmq_node_submissions_accepted_counter", ()] == 1
    assert values["dmq_node_submissions_rejected_counter", ()] == 1
    assert values["dmq_node_localSubmissions_accepted_counter", ()] == 2
    assert values["dmq_node_localSubmissions_rejected_counter", ()] == 1
    assert values["dmq_node_mempool_acceptedBytes_counter", ()] == 4150
    assert values["dmq_node_sigValidation_rejected_counter", (("origin", "local"), ("reason", "SigDuplicate"))] == 1
    assert values["dmq_node_sigValidation_rejected_counter",
                  (("origin", "peer"), ("reason", "InvalidSignatureOp"))] == 1
    assert values["dmq_node_mempool_expired_counter", ()] == 1
    assert values["dmq_node_localNotification_delivered_counter", ()] == 4
    assert values["dmq_node_localConnectionManager_inboundConns_int", ()] == 1
    assert values["dmq_node_stakeView_epoch_int", ()] == 7
    assert values["dmq_node_stakeView_eligiblePools_int", ()] == 10


def test_nosuffix_drops_the_type_suffixes_like_the_reference():
    metrics = NodeMetrics("dmq_node_", no_suffix=True)
    metrics(MessageAccepted(0.0, b"k", b"q", 500, "127.0.0.1:3001"))
    assert samples(metrics)["dmq_node_submissions_accepted", ()] == 1


def test_the_store_and_signing_key_gauges(tmp_path):
    metrics = NodeMetrics()
    (tmp_path / "data.mdb").write_bytes(bytes(12_288))
    metrics.bind_database(tmp_path)
    metrics.bind_kes(lambda: 130, start_period=100, max_evolutions=62)
    values = samples(metrics)
    assert values["dmq_node_database_sizeBytes_int", ()] == 12_288
    assert values["dmq_node_database_freeBytes_int", ()] > 0
    assert values["dmq_node_remainingKESPeriods_int", ()] == 32
    assert values["dmq_node_operationalCertificateExpiryKESPeriod_int", ()] == 162
    assert values["dmq_node_currentKESPeriod_int", ()] == 130


def test_series_are_typed_and_whole_numbers_print_as_integers_like_the_reference():
    metrics = NodeMetrics()
    metrics(MessageAccepted(0.0, b"k", b"q", 500, "local"))
    metrics.bind_mempool(lambda: 3.0, lambda: 1500.0)
    types, values = exposition(metrics.render())
    assert types["dmq_node_localSubmissions_accepted_counter"] == "counter"
    assert types["dmq_node_txsInMempool_int"] == "gauge"
    assert values["dmq_node_txsInMempool_int", ()] == "3"          # not 3.0
    assert values["dmq_node_localSubmissions_accepted_counter", ()] == "1"
    assert not any(name.endswith("_total") for name, _ in values)


def test_rejections_by_reason_exist_at_zero_for_every_known_reason_and_origin():
    from dmq.metrics import ORIGINS, REJECT_REASONS

    assert {"SigDuplicate", "PoolNotEligible", "InvalidKESSignature", "SigTooFrequent"} <= set(REJECT_REASONS)
    values = samples(NodeMetrics())
    by_reason = {labels: value for (name, labels), value in values.items()
                 if name == "dmq_node_sigValidation_rejected_counter"}
    assert by_reason == {(("origin", origin), ("reason", reason)): 0
                         for reason in REJECT_REASONS for origin in ORIGINS}


def test_connection_manager_and_peer_selection_series_follow_the_reference():
    from dmq.diffusion.governor import Governor
    from dmq.diffusion.peers import PeerState, PeerTable
    from dmq.diffusion.prometheus import PeerCollector
    from dmq.topology import parse_topology

    topology = parse_topology({"localRoots": [{"accessPoints": [{"address": "127.0.0.1", "port": 3001},
                                                               {"address": "127.0.0.1", "port": 3002}],
                                               "advertise": False, "valency": 2}],
                               "publicRoots": [], "useLedgerAfterSlot": -1})
    governor = Governor(topology, target_active=2, target_known=10)
    governor.learn([("10.0.0.9", 3001)])               # a shared peer
    peers = PeerTable()
    dialled = governor.peer(("127.0.0.1", 3001))
    dialled.state = PeerState.HOT
    peers.outbound(dialled.label).established(None, 1, duplex=True)
    peers.inbound("127.0.0.1:50000").established(None, 1, duplex=False)
    metrics = NodeMetrics()
    metrics.registry.register(PeerCollector(peers, metrics.names, governor))
    types, values = exposition(metrics.render())
    cm = {name.removeprefix("dmq_node_connectionManager_").removesuffix("_int"): int(value)
          for (name, _), value in values.items() if name.startswith("dmq_node_connectionManager_")}
    # The duplex outbound connection is used both ways; the unidirectional inbound one only inbound.
    assert cm == {"fullDuplexConns": 1, "duplexConns": 1, "unidirectionalConns": 1,
                  "inboundConns": 2, "outboundConns": 1}
    ps = {name.removeprefix("dmq_node_peerSelection_").removesuffix("_int"): int(value)
          for (name, _), value in values.items() if name.startswith("dmq_node_peerSelection_")}
    assert {k: ps[k] for k in ("RootPeers", "KnownPeers", "Cold", "Warm", "Hot", "EstablishedPeers", "ActivePeers",
                               "KnownLocalRootPeers", "ActiveLocalRootPeers", "KnownNonRootPeers")} == {
        "RootPeers": 2, "KnownPeers": 3, "Cold": 2, "Warm": 0, "Hot": 1, "EstablishedPeers": 1, "ActivePeers": 1,
        "KnownLocalRootPeers": 2, "ActiveLocalRootPeers": 1, "KnownNonRootPeers": 1}
    assert types["dmq_node_peerSelection_RootPeers_int"] == "gauge"


def _through_tracer(sinks, events) -> None:
    tracer = Tracer()
    for sink in sinks:
        tracer.add_sink(sink)
    for event in events:
        tracer.emit(event)


@pytest.mark.parametrize("severities", [None, {"": "Debug"}, {"": "Warning"}, {"Net": "Error", "Mempool": "Debug"}])
@pytest.mark.parametrize("backend", [MACHINE, HUMAN])
def test_the_tracer_hands_the_log_and_the_metrics_what_calling_them_with_every_event_gives(severities, backend):
    """Sinks with ``handler_for`` get each event class's handler once, through the tracer; what
    they write and count is what calling the sink itself with every event gives."""
    events = EVENTS + REFERENCE_CASES + [PrometheusSimpleStart(9.0, "127.0.0.1", 9100)]
    direct, handed = io.StringIO(), io.StringIO()
    direct_log = LogSink(direct, severities=severities, backend=backend, host="h")
    direct_metrics = NodeMetrics()
    for event in events:
        direct_log(event)
        direct_metrics(event)
    metrics = NodeMetrics()
    _through_tracer([LogSink(handed, severities=severities, backend=backend, host="h"), metrics], events)
    assert handed.getvalue() == direct.getvalue()
    assert samples(metrics) == samples(direct_metrics)


def test_a_class_no_sink_wants_is_not_wanted_and_reaches_no_sink():
    seen: list = []

    class Picky:
        def handler_for(self, cls):
            return seen.append if cls is MessageExpired else None

    tracer = Tracer()
    tracer.add_sink(Picky())
    tracer.add_sink(LogSink(io.StringIO(), severities={"": "Warning"}, host="h"))
    stake = StakeViewUpdated(1.0, "file", 1, 2, 3)                 # logged at Info, below Warning
    assert tracer.wants(MessageExpired) and not tracer.wants(StakeViewUpdated)
    assert tracer.wants(NodeListening)               # its target depends on the link: the log judges each one
    tracer.emit(stake)
    tracer.emit(MessageExpired(1.0, b"", 0))
    assert seen == [MessageExpired(1.0, b"", 0)]
    tracer.add_sink(seen.append)                     # a plain callable takes every event, from now on
    assert tracer.wants(StakeViewUpdated)
    tracer.emit(stake)
    assert seen[-1] is stake


def test_a_failing_handler_does_not_stop_the_others(capsys):
    class Broken:
        def handler_for(self, cls):
            def fail(event):
                raise RuntimeError("boom")
            return fail

    seen: list = []
    _through_tracer([Broken(), seen.append], [NodeStopped(1.0, "x")])
    assert seen == [NodeStopped(1.0, "x")] and "boom" in capsys.readouterr().err
