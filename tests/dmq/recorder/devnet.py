"""A small recorded devnet run: one node with ``RecordTraffic``, real clients on its socket.

Signers open one connection per message and close it after ``MsgDone``, as Mithril does;
one aggregator keeps a connection and reads notifications. The node validates against the
Haskell-generated devnet (two pools, real KES signatures) with a manual clock, so rounds
are a minute apart without waiting. Used by the recorder tests, the Spark tests (which
check the measured tables against the node's own metrics) and the overhead benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import trio

from dmq.clock import ManualClock
from dmq.codec import build_message
from dmq.config import read_config
from dmq.keyfiles import read_bulk_credentials
from dmq.mempool import DEFAULT_EXPIRY_INTERVAL
from dmq.cli.wiring import assemble_node
from dmq.node import Node
from handshake.driver import connect_and_handshake
from handshake.links import DMQ_NODE_TO_CLIENT, dmq_node_to_client_versions
from miniprotocols.local_msg_notification import LocalMsgNotificationClient
from miniprotocols.local_msg_submission import ACCEPTED, LocalMsgSubmissionClient
from ouroboros_mux.mux import Mode, Mux, Provenance
from tests.conftest import CONFORMANCE
from tests.dmq.diffusion.network import purged, wait_until

DEVNET = CONFORMANCE / "cardano-devnet"
MAGIC = 2147483690
NOW = 1_800_000_000.0


def devnet_config(directory: Path, record: Path | None, **extra: str):
    return read_config({
        "ConfigFile": str(directory / "absent.json"),
        "NetworkMagic": str(MAGIC),
        "LocalAddress": str(directory / "dmq.socket"),
        "StakeSource": "genesis",
        "ShelleyGenesisFile": str(DEVNET / "shelley-genesis.json"),
        "DatabasePath": str(directory / "db"),
        **({"RecordTraffic": str(record)} if record is not None else {}),
        **extra,
    })


def credentials():
    return read_bulk_credentials(DEVNET / "bulk-creds-k2.json")


def message(cred, body_byte: int, expires_at: int, body_size: int = 451):
    return build_message(bytes([body_byte]) * body_size, 0, expires_at, cred.kes_key, cred.opcert, cred.cold_vk)


class LocalClient:
    """One node-to-client connection with both protocols, and its mux's counters at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.counters = None

    async def __aenter__(self) -> "LocalClient":
        self.bearer, _ = await connect_and_handshake(self.path, dmq_node_to_client_versions(MAGIC), DMQ_NODE_TO_CLIENT)
        self.mux = Mux(self.bearer, Provenance.OUTBOUND)
        self.submission = LocalMsgSubmissionClient(self.mux.register(14, Mode.INITIATOR, 0xFFFFFFFF))
        self.notification = LocalMsgNotificationClient(self.mux.register(15, Mode.INITIATOR, 0xFFFFFFFF))
        self._cm = trio.open_nursery()
        self._nursery = await self._cm.__aenter__()
        self._nursery.start_soon(self._run)
        return self

    async def _run(self) -> None:
        try:
            await self.mux.run()
        except Exception:
            pass

    async def __aexit__(self, *exc) -> None:
        self.counters = self.mux.counters()
        self.mux.stop()
        self._nursery.cancel_scope.cancel()
        await self._cm.__aexit__(None, None, None)


@dataclass
class DevnetRun:
    """What the clients and the node's own metrics saw."""

    recording: Path
    verdicts: list = field(default_factory=list)
    client_bytes_out: int = 0
    client_bytes_in: int = 0
    connections: int = 0
    notified: list[bytes] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    mempool_len: int = 0
    mempool_bytes: int = 0


def _metric(node: Node, name: str, labels: dict | None = None) -> float:
    value = node.metrics.registry.get_sample_value(f"dmq_node_{name}", labels or {})
    return value or 0.0


def _snapshot(node: Node, reasons: list[str]) -> dict:
    return {
        "accepted": _metric(node, "localSubmissions_accepted_counter"),
        "accepted_bytes": _metric(node, "mempool_acceptedBytes_counter"),
        "expired": _metric(node, "mempool_expired_counter"),
        "notified": _metric(node, "localNotification_delivered_counter"),
        "rejected": {r: _metric(node, "sigValidation_rejected_counter", {"reason": r, "origin": "local"})
                     for r in reasons},
        "mempool_messages": _metric(node, "txsInMempool_int"),
        "mempool_bytes": _metric(node, "mempoolBytes_int"),
    }


async def record_devnet_run(directory: Path, rounds: int = 6) -> DevnetRun:
    """Run the scenario; the recording is complete when this returns (the node has stopped)."""
    creds = credentials()
    clock = ManualClock(now=NOW)
    run = DevnetRun(directory / "recording")
    # The manual clock jumps while the purge sleeps toward the soonest expiry in real time:
    # it looks every 50 ms at most instead.
    node = assemble_node(devnet_config(directory, run.recording), None, clock=clock,
                         expiry_max_sleep=DEFAULT_EXPIRY_INTERVAL)
    socket_path = directory / "dmq.socket"

    def account(client: LocalClient) -> None:
        run.connections += 1
        run.client_bytes_out += sum(c.bytes_out for c in client.counters.values())
        run.client_bytes_in += sum(c.bytes_in for c in client.counters.values())

    async def sign(raw: bytes) -> None:
        client = LocalClient(socket_path)
        async with client:
            run.verdicts.append(await client.submission.submit(raw))
            await client.submission.done()
        account(client)

    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        aggregator = LocalClient(socket_path)
        async with aggregator:
            for r in range(rounds):
                now = int(clock.now())
                first = message(creds[0], r, now + 150)   # pool 0's messages expire within 3 rounds
                await sign(first.raw)
                await sign(message(creds[1], 100 + r, now + 1700).raw)
                if r == 1:
                    await sign(first.raw)                                 # SigDuplicate
                    await sign(message(creds[0], 200, now + 180).raw)     # SigTooFrequent: signed 30 s after `first`
                if r == 2:
                    await sign(message(creds[1], 201, now - 5).raw)       # SigExpired
                got, _ = await aggregator.notification.request(blocking=False)
                run.notified.extend(got)
                clock.advance(61)
                await wait_until(lambda: purged([node.mempool], clock), 30, what="the purge after the clock's jump")
        account(aggregator)
        run.metrics = _snapshot(node, ["SigDuplicate", "SigTooFrequent", "SigExpired"])
        assert node.mempool is not None
        run.mempool_len, run.mempool_bytes = len(node.mempool), node.mempool.bytes_held
        nursery.cancel_scope.cancel()
    assert sum(v is ACCEPTED for v in run.verdicts) == 2 * rounds
    return run
