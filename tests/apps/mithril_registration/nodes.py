"""Registration nodes as ``dmq-node`` processes: their chain, their topic, and what the process tests
wait for and read (docs/mithril-registration.md 10).

The nodes sign as the electors of a registration topic whose Blocklace epochs last two seconds,
on a chain whose Cardano epochs last :data:`EPOCH_LENGTH` seconds (a Shelley genesis), so a
registration round opens and closes within a test. Their stake comes from a stake file (one
snapshot, which never changes). Blocklace epochs that short make each elector sign far more
blocks per window than the pools' default budgets allow (8 per 25 s); what these tests check
is the agreement, not the budgets (tests/topics/test_budgets.py), so they open them
(``OPEN_BUDGETS``).
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import trio

from apps.mithril_registration.client import publish_registration
from apps.mithril_registration.events import MAX_POINTERS, Agreed, decode_event
from clients.topics import decode_item, draft_block, open_topic_connection
from dmq.codec import decode_message
from dmq.message import DmqMessage
from lab.devnet.topology import topology_document
from tests.e2e.node_process import NodeProcess, start_in_threads
from tests.e2e.topic_node import n2n_port
from tests.topics.blocklace.world import TOPIC, ad_payload, advertisement
from topics.adapter import ITEM_MESSAGE
from topics.blocklace.codec import EPOCH, EVENT, Block, TopicParams, decode_body

from .conftest import run_harness

__all__ = ["EPOCH_LENGTH", "ROOM", "SETUP", "TOPIC_PARAMS", "Chain", "start_dialling_the_first",
           "generate_signers", "register_with_command", "publish", "advertise", "TopicView", "topic_view", "get_json",
           "http_port", "until", "agreed", "closed", "accepted", "rejected"]

EPOCH_LENGTH = 20          # slots of 1 s
#: Seconds a registration round must still have when the registrations are sent.
ROOM = 8
#: Seconds the tests give their nodes to start and fix the empty set of the round open when the
#: topic began (about 8 on an idle machine): the chain is written so that the next round ends
#: that long, and the room the round needs, after it.
SETUP = 12
#: Blocklace epochs of two seconds, an attempt timeout of four.
TOPIC_PARAMS = dict(epoch_interval=2, attempt_timeout=4, max_pointers=MAX_POINTERS)


@dataclass(frozen=True)
class Chain:
    """A chain that began ``start`` (POSIX seconds) with Cardano epochs of :data:`EPOCH_LENGTH` s."""

    start: int

    @classmethod
    def begun_long_ago(cls, setup: int = SETUP) -> Chain:
        """A chain long enough ago that the KES period (129,600 slots each) is 0 and the first
        epochs are past, in the phase that puts an epoch's beginning ``setup`` seconds and the
        room :meth:`next_round` asks for from now: a test whose nodes are ready by then has its
        round end then, not up to an epoch later (on a machine too busy for that, it waits for
        the next round as before)."""
        return cls(int(time.time()) + setup + ROOM + 4 - 50 * EPOCH_LENGTH)

    def epoch_now(self) -> int:
        return (int(time.time()) - self.start) // EPOCH_LENGTH

    def seconds_left(self) -> float:
        """Seconds until the next Cardano epoch begins."""
        return (self.epoch_now() + 1) * EPOCH_LENGTH + self.start - time.time()

    def write(self, directory: Path, stakes: dict[bytes, int]) -> None:
        """The node's stake file (``stakes``, one snapshot) and Shelley genesis, as ``topic_node`` names them."""
        (directory / "stake.json").write_text(json.dumps(
            {"epoch": 500, "maxKESEvolutions": 62, "pools": {p.hex(): s for p, s in stakes.items()}}))
        system_start = datetime.fromtimestamp(self.start, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        (directory / "shelley-genesis.json").write_text(json.dumps(
            {"systemStart": system_start, "slotLength": 1, "slotsPerKESPeriod": 129600, "networkMagic": 42,
             "epochLength": EPOCH_LENGTH, "maxKESEvolutions": 62}))

    async def next_round(self, nodes: Sequence[NodeProcess]) -> int:
        """Wait until every node fixed the set of the round open when the topic began (empty: it
        closes at once), and then until the open round has :data:`ROOM` seconds left; return the
        registration epoch of the open round."""
        first = self.epoch_now()
        await until(lambda: all(agreed(n, first) or agreed(n, first + 1) for n in nodes), 30,
                    "every node fixed an empty set", nodes)
        left = self.seconds_left()
        if left < ROOM + 4:
            await trio.sleep(left + 0.5)
        return self.epoch_now() + 1


async def start_dialling_the_first(nodes: Sequence[NodeProcess]) -> None:
    """Start the first node, with no peers, then the others together, each with the first as its one peer."""
    first, *others = nodes
    (first.workdir / "dmq.topology.json").write_text(json.dumps(topology_document([])))
    await trio.to_thread.run_sync(first.start)
    dialling_the_first = json.dumps(topology_document([("127.0.0.1", n2n_port(first))]))
    for node in others:
        (node.workdir / "dmq.topology.json").write_text(dialling_the_first)
    await start_in_threads([node.start for node in others])


def generate_signers(harness: Path, directory: Path, epoch: int, count: int, seed: int = 27) -> list[dict]:
    """``count`` signers made by Mithril's harness for registration epoch ``epoch`` (the pools
    depend on ``seed`` only, not on the epoch)."""
    made = run_harness(harness, "generate", "--signers", str(count), "--epoch", str(epoch), "--start-kes-period",
                       "0", "--kes-evolutions", "0", "--seed", str(seed), "--dir", str(directory))
    assert made.returncode == 0, made.stderr
    return [json.loads(line) for line in made.stdout.splitlines()]


def register_with_command(node: NodeProcess, registration: dict, magic: int) -> str:
    """``dmq mithril register`` at ``node``; its output."""
    done = subprocess.run([sys.executable, "-m", "dmq.cli.tool", "mithril", "register", "--socket",
                           str(node.socket_path), "--magic", str(magic), "--topic", TOPIC.hex(),
                           "--registration", "-"], input=json.dumps(registration), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "published id=" in done.stdout
    return done.stdout


async def publish(node: NodeProcess, registration, magic: int) -> bytes:
    """Publish ``registration`` through ``node`` with the client library; the block's DMQ id."""
    async with open_topic_connection(node.socket_path, magic) as conn:
        return (await publish_registration(conn, TOPIC, registration)).dmq_id


async def advertise(node: NodeProcess, publishers: dict[bytes, int], magic: int, **params: Any) -> None:
    """Publish the topic's first advertisement through ``node`` (:data:`TOPIC_PARAMS`, overridden by ``params``)."""
    ad = advertisement(0, publishers, TopicParams(**{**TOPIC_PARAMS, **params}))
    async with open_topic_connection(node.socket_path, magic) as conn:
        await conn.ask(conn.topics.publish(draft_block(TOPIC, ad_payload(ad))))


@dataclass(frozen=True)
class TopicView:
    """What a subscriber of the topic at a node gets from its retained items."""

    blocks: list[tuple[DmqMessage, Block]]

    def notices(self, epoch: int) -> dict[bytes, Agreed]:
        """The ``agreed`` notices of registration epoch ``epoch``, by announcing pool."""
        out = {}
        for message, block in self.blocks:
            if block.payload.type == EVENT:
                event = decode_event(block.payload.event)
                if isinstance(event, Agreed) and event.epoch == epoch:
                    out[message.pool_id] = event
        return out

    def proposals(self, pool: bytes) -> dict[bytes, int]:
        """The Blocklace proposals ``pool`` made, by block id: the epoch number each would open."""
        return {message.message_id: block.payload.epoch.number for message, block in self.blocks
                if message.pool_id == pool and block.payload.type == EPOCH and block.payload.epoch.cut is not None}


async def topic_view(node: NodeProcess, magic: int) -> TopicView:
    """The topic's retained blocks at ``node``, in delivery order."""
    async with open_topic_connection(node.socket_path, magic) as conn:
        await conn.ask(conn.topics.subscribe([{0: 2, 3: [TOPIC]}], 1))
        reply = await conn.ask(conn.topics.next(blocking=False))
    blocks = []
    for item in map(decode_item, reply.items):
        if item.kind == ITEM_MESSAGE:
            message = decode_message(item.payload)
            blocks.append((message, decode_body(message.body)[1]))
    return TopicView(blocks)


async def get_json(port: int, path: str, connect: Callable[[], Awaitable[trio.abc.Stream]] | None = None
                   ) -> tuple[int, dict]:
    """``GET path`` of a node's registration HTTP server: the status and the JSON document.
    ``connect`` opens the stream (from inside a node's network namespace); the default dials
    ``127.0.0.1:port``."""
    with trio.fail_after(20):
        stream = await (connect() if connect is not None else trio.open_tcp_stream("127.0.0.1", port))
        async with stream:
            await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            reply = bytearray()
            while chunk := await stream.receive_some(65536):
                reply += chunk
    head, _, body = bytes(reply).partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def http_port(node: NodeProcess) -> int:
    """The port of the node's registration HTTP server (its ``MithrilRegistrationListening`` line)."""
    return int(node.trace_events("MithrilRegistrationListening")[0]["endpoint"].rsplit(":", 1)[1])


async def until(condition: Callable[[], bool | Awaitable[bool]], timeout: float, what: str,
                nodes: Sequence[NodeProcess]) -> None:
    """Wait for ``condition`` (a function, or a coroutine function), failing if a node exits or
    ``timeout`` seconds pass."""
    deadline = trio.current_time() + timeout
    while True:
        met = condition()
        if inspect.isawaitable(met):
            met = await met
        if met:
            return
        for node in nodes:
            node.check_running()
        if trio.current_time() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}; {nodes[0].diagnostics()}")
        await trio.sleep(0.3)


def agreed(node: NodeProcess, epoch: int) -> dict | None:
    """The node's ``MithrilRegistrationAgreed`` line for registration epoch ``epoch``, if any."""
    return next((e for e in node.trace_events("MithrilRegistrationAgreed") if e["epoch"] == epoch), None)


def closed(node: NodeProcess, epoch: int) -> bool:
    """Whether the node published ``close epoch`` (its ``MithrilRegistrationClosed`` line)."""
    return any(e["epoch"] == epoch for e in node.trace_events("MithrilRegistrationClosed"))


def accepted(node: NodeProcess, message_id: bytes) -> bool:
    """Whether the node accepted the DMQ message ``message_id`` (its ``MessageAccepted`` line)."""
    return any(e["message_id"] == message_id.hex() for e in node.trace_events("MessageAccepted"))


def rejected(node: NodeProcess, pool: bytes) -> list[dict]:
    """The node's ``MessageRejected`` lines for messages of ``pool``."""
    return [e for e in node.trace_events("MessageRejected") if e["pool_id"] == pool.hex()]
