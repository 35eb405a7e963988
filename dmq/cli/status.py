"""``dmq status``: a live view of a running node, from its metrics endpoint and its local socket.

Everything counted comes from the Prometheus endpoint (the series of ``dmq.metrics`` and
``dmq.diffusion.prometheus``), so the view shows what a dashboard would; the local socket is
asked, with a handshake query, which node-to-client versions the node offers (it answers
and closes: nothing is submitted or read). Rates are the difference of two scrapes over the
time between them. ``--json`` prints one document for scripts, ``--once`` one text frame;
otherwise the view refreshes until Ctrl-C. An endpoint that does not answer is one line and
exit status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from dmq.cli.publish import add_connection_arguments, network_magic_of, socket_path_of
from dmq.errors import OperatorError

__all__ = ["add_parser", "run", "Scrape", "parse_scrape", "status_document"]

_SUFFIXES = ("_int", "_counter", "_real")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status", help="live view of a running node (peers, messages, clients, stake, disk, KES)",
        description="Show a running node's state from its Prometheus endpoint and local socket.")
    parser.add_argument("--metrics", metavar="[HOST:]PORT", default="127.0.0.1:12798",
                        help="the node's Prometheus endpoint (default: 127.0.0.1:12798)")
    parser.add_argument("--prefix", default="dmq_node_", help="the node's TraceOptionMetricsPrefix")
    add_connection_arguments(parser)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print one JSON document and stop")
    output.add_argument("--once", action="store_true", help="print one text frame and stop")
    parser.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                        help="time between scrapes, and over which rates are taken (default: 1)")


@dataclass
class Scrape:
    """One metrics page: series name (prefix and type suffix removed) -> [(labels, value)]."""

    at: float
    series: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)

    def value(self, name: str, default: float | None = 0.0) -> float | None:
        samples = self.series.get(name)
        return samples[0][1] if samples else default

    def labelled(self, name: str) -> list[tuple[dict[str, str], float]]:
        return self.series.get(name, [])


def parse_scrape(text: str, prefix: str, at: float) -> Scrape:
    """The node's series of a metrics page, named as in ``dmq.metrics`` without prefix and suffix."""
    from dmq.metrics import read_page

    series: dict[str, list] = defaultdict(list)
    for name, labels, value in read_page(text, prefix):
        for suffix in _SUFFIXES:
            if name.endswith(suffix):
                name = name[:-len(suffix)]
                break
        series[name].append((labels, value))
    return Scrape(at, dict(series))


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _rate(now: Scrape, before: Scrape | None, value_of) -> float | None:
    if before is None or now.at <= before.at:
        return None
    return max(0.0, (value_of(now) - value_of(before)) / (now.at - before.at))


def _by_reason(scrape: Scrape) -> dict[str, float]:
    """Rejections per reason that happened (the node exports every known reason, at zero until then)."""
    totals: dict[str, float] = defaultdict(float)
    for labels, value in scrape.labelled("sigValidation_rejected"):
        totals[labels.get("reason", "")] += value
    return {reason: total for reason, total in totals.items() if total}


def status_document(now: Scrape, before: Scrape | None, socket: dict[str, Any], endpoint: str) -> dict[str, Any]:
    """Everything the view shows, as one JSON-ready document."""
    accepted = {"local": _int(now.value("localSubmissions_accepted")), "peer": _int(now.value("submissions_accepted"))}
    rejected = {"local": _int(now.value("localSubmissions_rejected")), "peer": _int(now.value("submissions_rejected"))}
    reasons = _by_reason(now)
    peers: dict[tuple[str, str], dict[str, Any]] = {}

    def peer(labels: dict[str, str]) -> dict[str, Any]:
        key = (labels.get("peer", ""), labels.get("direction", ""))
        return peers.setdefault(key, {"peer": key[0], "direction": key[1], "state": None, "rttSeconds": None,
                                      "bytesIn": 0, "bytesOut": 0, "accepted": 0, "rejected": 0})

    for labels, value in now.labelled("peer_state"):
        if value:
            peer(labels)["state"] = labels.get("state")
    for name, key in (("peer_bytesIn", "bytesIn"), ("peer_bytesOut", "bytesOut"), ("peer_sigsAccepted", "accepted"),
                      ("peer_sigsRejected", "rejected")):
        for labels, value in now.labelled(name):
            peer(labels)[key] = int(value)
    for labels, value in now.labelled("peer_keepAliveRtt"):
        peer(labels)["rttSeconds"] = value
    kes = None
    if "operationalCertificateExpiryKESPeriod" in now.series:
        kes = {"currentPeriod": _int(now.value("currentKESPeriod", None)),
               "expiryPeriod": _int(now.value("operationalCertificateExpiryKESPeriod", None)),
               "remainingPeriods": _int(now.value("remainingKESPeriods", None))}
    return {
        "endpoint": endpoint,
        "at": now.at,
        "socket": socket,
        "messages": {
            "held": _int(now.value("txsInMempool", None)),
            "heldBytes": _int(now.value("mempoolBytes", None)),
            "accepted": accepted,
            "rejected": rejected,
            "rejectedByReason": {reason: int(count) for reason, count in sorted(reasons.items())},
            "expired": _int(now.value("mempool_expired")),
            "delivered": _int(now.value("localNotification_delivered")),
            "perSecond": {
                "accepted": _rate(now, before, lambda s: s.value("localSubmissions_accepted")
                                  + s.value("submissions_accepted")),
                "rejected": _rate(now, before, lambda s: s.value("localSubmissions_rejected")
                                  + s.value("submissions_rejected")),
                "rejectedByReason": {reason: _rate(now, before, lambda s, r=reason: _by_reason(s).get(r, 0.0))
                                     for reason in sorted(reasons)},
            },
        },
        "connections": {"inbound": _int(now.value("connectionManager_inboundConns")),
                        "outbound": _int(now.value("connectionManager_outboundConns")),
                        "localClients": _int(now.value("localConnectionManager_inboundConns"))},
        "peers": sorted(peers.values(), key=lambda p: (p["direction"], p["peer"])),
        "stake": {"epoch": (None if now.value("stakeView_epoch", -1) < 0 else _int(now.value("stakeView_epoch"))),
                  "pools": _int(now.value("stakeView_pools", None)),
                  "eligiblePools": _int(now.value("stakeView_eligiblePools", None))},
        "database": {"sizeBytes": _int(now.value("database_sizeBytes", None)),
                     "freeBytes": _int(now.value("database_freeBytes", None))},
        "kes": kes,
    }


def _endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 < int(port) <= 65535:
        raise OperatorError(f"--metrics {text!r}: expected [HOST:]PORT")
    return host or "127.0.0.1", int(port)


async def _scrape(host: str, port: int, prefix: str) -> Scrape:
    from lab.devnet.scrape import ScrapeError, scrape_text

    try:
        text = await scrape_text(port, host=host, timeout=3.0)
    except ScrapeError as exc:
        raise OperatorError(f"metrics endpoint unreachable: {exc}") from None
    return parse_scrape(text, prefix, time.time())


async def _ask_socket(path: str, magic: int) -> dict[str, Any]:
    """The node-to-client versions the node offers on ``path`` (a handshake query)."""
    import trio

    from handshake.driver import connect_and_handshake
    from handshake.errors import HandshakeError, HandshakeQueryResult
    from handshake.links import DMQ_NODE_TO_CLIENT, dmq_node_to_client_versions
    from ouroboros_mux.errors import ConnectFailed, MuxError

    answer: dict[str, Any] = {"path": path, "reachable": False, "versions": None, "error": None}
    try:
        with trio.fail_after(3):
            bearer, _ = await connect_and_handshake(path, dmq_node_to_client_versions(magic, query=True),
                                                    DMQ_NODE_TO_CLIENT)
            await bearer.aclose()  # a node that accepts the query proposal (none should) is left at once
    except HandshakeQueryResult as result:
        answer.update(reachable=True, versions=sorted(result.versions))
    except (ConnectFailed, HandshakeError, MuxError, OSError, trio.TooSlowError) as exc:
        answer["error"] = str(exc) or type(exc).__name__
    return answer


def _size(value: int | None) -> str:
    if value is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return "-"


def _per_second(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}/s"


def render(document: dict[str, Any]):
    """The text frame of a status document (a rich renderable)."""
    from rich.console import Group
    from rich.table import Table

    messages, connections = document["messages"], document["connections"]
    socket, stake, database, kes = document["socket"], document["stake"], document["database"], document["kes"]
    overview = Table.grid(padding=(0, 2))
    overview.add_column(style="bold")
    overview.add_column()
    overview.add_row("endpoint", document["endpoint"])
    overview.add_row("local socket", f"{socket['path']}: " + (
        f"versions {', '.join(map(str, socket['versions']))}" if socket["reachable"] else f"unreachable ({socket['error']})"))
    overview.add_row("messages held", f"{messages['held']} ({_size(messages['heldBytes'])})")
    accepted, rejected, rates = messages["accepted"], messages["rejected"], messages["perSecond"]
    overview.add_row("accepted", f"{accepted['local']} local, {accepted['peer']} from peers "
                                 f"({_per_second(rates['accepted'])})")
    overview.add_row("rejected", f"{rejected['local']} local, {rejected['peer']} from peers "
                                 f"({_per_second(rates['rejected'])})")
    for reason, count in messages["rejectedByReason"].items():
        overview.add_row("", f"  {reason}: {count} ({_per_second(rates['rejectedByReason'].get(reason))})")
    overview.add_row("expired / delivered", f"{messages['expired']} / {messages['delivered']}")
    overview.add_row("connections", f"{connections['outbound']} outbound, {connections['inbound']} inbound, "
                                    f"{connections['localClients']} local clients")
    overview.add_row("stake snapshot", "none" if stake["pools"] is None else
                     f"epoch {stake['epoch'] if stake['epoch'] is not None else '-'}, {stake['pools']} pools "
                     f"({stake['eligiblePools']} with stake)")
    overview.add_row("database", f"{_size(database['sizeBytes'])}, {_size(database['freeBytes'])} free on disk")
    if kes is not None:
        overview.add_row("KES", f"period {kes['currentPeriod']}, {kes['remainingPeriods']} periods left "
                                f"(certificate expires at period {kes['expiryPeriod']})")
    peers = Table(title="peers", expand=False)
    for column in ("peer", "direction", "state", "rtt", "in", "out", "accepted", "rejected"):
        peers.add_column(column, justify="right" if column in ("rtt", "in", "out", "accepted", "rejected") else "left")
    for p in document["peers"]:
        rtt = "-" if p["rttSeconds"] is None else f"{p['rttSeconds'] * 1000:.1f} ms"
        peers.add_row(p["peer"], p["direction"], p["state"] or "-", rtt, _size(p["bytesIn"]), _size(p["bytesOut"]),
                      str(p["accepted"]), str(p["rejected"]))
    return Group(overview, peers)


def run(args: argparse.Namespace) -> int:
    import trio

    host, port = _endpoint(args.metrics)
    socket_path, magic = socket_path_of(args), network_magic_of(args)
    endpoint = f"{host}:{port}"

    async def document(before: Scrape | None) -> tuple[dict[str, Any], Scrape]:
        now = await _scrape(host, port, args.prefix)
        return status_document(now, before, await _ask_socket(socket_path, magic), endpoint), now

    async def main() -> int:
        first = await _scrape(host, port, args.prefix)
        if args.json or args.once:
            await trio.sleep(max(0.0, args.interval))
            doc, _ = await document(first)
            if args.json:
                print(json.dumps(doc, indent=2))
            else:
                from rich.console import Console

                Console(width=max(100, _columns())).print(render(doc))
            return 0
        from rich.live import Live

        before = first
        with Live(refresh_per_second=4, screen=False) as live:
            while True:
                await trio.sleep(max(0.1, args.interval))
                doc, before = await document(before)
                live.update(render(doc))

    return trio.run(main)


def _columns() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 100
