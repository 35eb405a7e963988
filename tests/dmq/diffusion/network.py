"""Real nodes in one trio process: pools with real keys, stake files, topologies, local clients.

Every node is a full :class:`dmq.node.Node` (its own LMDB directory, Unix socket and TCP
port 0 on 127.0.0.1) with diffusion on. Pools are generated here with the project's KES
and opcert code, and their stake is written to a JSON stake file, so validation runs all
ten checks on every hop. All nodes share one :class:`ManualClock` for the wall clock
(expiry, rate limit): expiry is then exact and under the test's control, while the
network itself runs in real time on loopback.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import trio

from dmq.clock import ManualClock
from dmq.codec import build_message
from dmq.config import read_config
from dmq.diffusion import BackoffPolicy, DiffusionPolicy
from dmq.kes import KesSigningKey
from dmq.mempool import DEFAULT_EXPIRY_INTERVAL
from dmq.message import DmqMessage, pool_id_of
from dmq.cli.wiring import assemble_node
from dmq.node import Node
from dmq.opcert import OperationalCertificate, cold_verification_key, issue_opcert
from dmq.topology import AccessPoint, LocalRootGroup, PublicRootGroup, Topology
from dmq.trace import MessageAccepted, MessageRejected, TraceEvent, Tracer
from handshake.driver import connect_and_handshake
from handshake.links import DMQ_NODE_TO_CLIENT, dmq_node_to_client_versions
from miniprotocols.local_msg_notification import LocalMsgNotificationClient
from miniprotocols.local_msg_submission import LocalMsgSubmissionClient
from ouroboros_mux.mux import Mode, Mux, Provenance

#: The Mithril devnet's DMQ magic: not mainnet, so a short ``MinSigDelay`` is allowed.
MAGIC = 2147483690
NOW = 1_800_000_000.0
HOST = "127.0.0.1"

#: Timings for tests: quick keep-alives and retries, V2 "no ids" after one second.
FAST = DiffusionPolicy(
    connect_timeout=2.0,
    keep_alive_interval=1.0,
    blocking_reply_timeout=1.0,
    peer_share_interval=0.5,
    backoff=BackoffPolicy(base=0.1, cap=0.4, jitter=0.5, stable_after=5.0, forget_after=3),
    seed=7,
)


@dataclass(frozen=True)
class Pool:
    cold_sk: bytes
    cold_vk: bytes
    kes: KesSigningKey
    opcert: OperationalCertificate

    @property
    def pool_id(self) -> bytes:
        return pool_id_of(self.cold_vk)

    def sign(self, tag: int, expires_at: int, *, kes_period: int = 0, body_size: int = 120,
             sign_period: int | None = None) -> DmqMessage:
        body = tag.to_bytes(4, "big") * (body_size // 4)
        return build_message(body, kes_period, expires_at, self.kes, self.opcert, self.cold_vk,
                             sign_period=sign_period)

    def with_opcert(self, issue_number: int, start_kes_period: int = 0) -> Pool:
        """The same pool under another operational certificate (same KES key)."""
        opcert = issue_opcert(self.cold_sk, self.kes.verification_key(), issue_number, start_kes_period)
        return replace(self, opcert=opcert)


@lru_cache(maxsize=None)
def pool(n: int) -> Pool:
    """The n-th test pool (deterministic keys)."""
    cold = bytes([n % 251 + 1]) * 31 + bytes([n // 251])
    kes = KesSigningKey.generate(bytes([n % 251 + 101]) * 31 + bytes([n // 251]))
    return Pool(cold, cold_verification_key(cold), kes, issue_opcert(cold, kes.verification_key(), 0, 0))


def write_stake_file(path: Path, pools: list[Pool], *, unstaked: list[Pool] = ()) -> Path:
    document = {
        "epoch": 500,
        "maxKESEvolutions": 62,
        "pools": {**{p.pool_id.hex(): 1_000_000 for p in pools}, **{p.pool_id.hex(): 0 for p in unstaked}},
    }
    path.write_text(json.dumps(document))
    return path


def local_roots(*ports: int, valency: int | None = None) -> Topology:
    points = tuple(AccessPoint(HOST, p) for p in ports)
    hot = len(points) if valency is None else valency
    return Topology(local_roots=(LocalRootGroup(points, hot_valency=hot, warm_valency=hot),))


def public_roots(*ports: int, advertise: bool = False) -> Topology:
    return Topology(public_roots=(PublicRootGroup(tuple(AccessPoint(HOST, p) for p in ports), advertise),))


@dataclass(eq=False)
class RunningNode:
    """A node, where it lives, and every trace event it emitted."""

    name: str
    directory: Path
    node: Node
    events: list[TraceEvent] = field(default_factory=list)
    cancel: trio.CancelScope | None = None
    stopped: trio.Event = field(default_factory=trio.Event)

    @property
    def port(self) -> int:
        return self.node.diffusion.port

    @property
    def socket(self) -> Path:
        return self.node.config.local_address

    def held(self) -> set[bytes]:
        """Ids of the unexpired messages readers can see (durable, published)."""
        return {entry.message_id for entry in self.node.mempool.messages_after(-1, 1 << 30)}

    def accepted(self) -> set[bytes]:
        """Ids whose acceptance the node traced, from its local clients or its peers."""
        return {e.message_id for e in self.events if isinstance(e, MessageAccepted)}

    def accepted_from_peers(self) -> Counter:
        return Counter(e.message_id for e in self.events if isinstance(e, MessageAccepted) and e.origin != "local")

    def rejections(self) -> list[MessageRejected]:
        return [e for e in self.events if isinstance(e, MessageRejected)]

    def stop(self) -> None:
        assert self.cancel is not None
        self.cancel.cancel()


class Network:
    """Starts and stops test nodes in a nursery; each gets its own directory and socket."""

    def __init__(self, nursery: trio.Nursery, stake_file: Path, *, clock: ManualClock | None = None,
                 policy: DiffusionPolicy = FAST) -> None:
        self.nursery = nursery
        self.stake_file = stake_file
        self.clock = clock or ManualClock(now=NOW)
        self.policy = policy
        # Unix socket paths must stay short (108 bytes): a short private directory.
        self.root = Path(tempfile.mkdtemp(prefix="dqd"))
        self.nodes: list[RunningNode] = []

    def config(self, name: str, *, port: int = 0, **keys: str):
        directory = self.root / name
        directory.mkdir(exist_ok=True)
        values = {
            "ConfigFile": str(directory / "absent.json"),
            "NetworkMagic": str(MAGIC),
            "IPv4": HOST,
            "PortNumber": str(port),
            "LocalAddress": str(directory / "s"),
            "StakeSource": str(self.stake_file),
            "DatabasePath": str(directory / "db"),
            "MinSigDelay": "0",
        }
        values.update(keys)
        return read_config(values)

    async def start(self, name: str, topology: Topology | None = None, *, port: int = 0,
                    config_overrides: dict | None = None, policy: DiffusionPolicy | None = None,
                    **keys: str) -> RunningNode:
        config = self.config(name, port=port, **keys)
        if config_overrides:
            config = replace(config, **config_overrides)
        tracer = Tracer(self.clock.now)
        # The manual clock jumps while the purge sleeps toward the soonest expiry in real time:
        # it looks every 50 ms at most instead, so a test waits briefly for it after a jump.
        node = assemble_node(config, topology, clock=self.clock, tracer=tracer, diffusion_policy=policy or self.policy,
                             expiry_max_sleep=DEFAULT_EXPIRY_INTERVAL)
        test_node = RunningNode(name, self.root / name, node)
        tracer.add_sink(test_node.events.append)

        async def run(task_status=trio.TASK_STATUS_IGNORED):
            try:
                with trio.CancelScope() as scope:
                    test_node.cancel = scope
                    await node.run(task_status=task_status)
            finally:
                test_node.stopped.set()

        await self.nursery.start(run)
        self.nodes.append(test_node)
        return test_node

    async def restart(self, test_node: RunningNode, topology: Topology | None = None) -> RunningNode:
        """Stop the node, then start it again on its port with its database."""
        port = test_node.port
        await self.stop(test_node)
        return await self.start(test_node.name, topology if topology is not None else test_node.node.topology,
                                port=port)

    async def stop(self, test_node: RunningNode) -> None:
        test_node.stop()
        await test_node.stopped.wait()
        self.nodes.remove(test_node)


class LocalClient:
    """One node-to-client connection, as a Mithril signer or aggregator opens it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def __aenter__(self) -> LocalClient:
        self.bearer, _ = await connect_and_handshake(self.path, dmq_node_to_client_versions(MAGIC), DMQ_NODE_TO_CLIENT)
        self.mux = Mux(self.bearer, Provenance.OUTBOUND)
        self.submission = LocalMsgSubmissionClient(self.mux.register(14, Mode.INITIATOR, 0xFFFFFFFF))
        self.notification = LocalMsgNotificationClient(self.mux.register(15, Mode.INITIATOR, 0xFFFFFFFF))
        self._nursery_cm = trio.open_nursery()
        nursery = await self._nursery_cm.__aenter__()
        self._cancel = nursery.cancel_scope
        nursery.start_soon(self._run)
        return self

    async def _run(self) -> None:
        try:
            await self.mux.run()
        except Exception:
            pass

    async def __aexit__(self, *exc) -> None:
        self.mux.stop()
        self._cancel.cancel()
        await self._nursery_cm.__aexit__(None, None, None)


async def submit(test_node: RunningNode, messages: list[DmqMessage]) -> list:
    """Submit each message over the node's local socket; return the replies."""
    async with LocalClient(test_node.socket) as client:
        return [await client.submission.submit(m.raw) for m in messages]


def purged(mempools, clock) -> bool:
    """True once every mempool has purged what the clock expired: after a test's clock jumps,
    the purge (asleep toward the soonest expiry it knew, in real time) catches up."""
    return not any(entry.expires_at <= clock.now() for mempool in mempools for entry in mempool)


async def wait_until(predicate, timeout: float, *, what: str = "condition") -> None:
    """Poll ``predicate`` every 20 ms; fail with ``what`` after ``timeout`` seconds."""
    with trio.move_on_after(timeout):
        while not predicate():
            await trio.sleep(0.02)
        return
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
