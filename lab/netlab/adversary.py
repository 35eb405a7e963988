"""The netlab's attackers: processes in their own namespaces speaking the real node-to-node protocol.

``python -m lab.netlab.adversary flood``: one connection per target and flood class
(:mod:`.invalid`), each a duplex DMQ node-to-node connection (handshake, keep-alive, sig
submission) whose serving side offers the class's invalid messages at a fixed rate. The node
pulls them like any peer's (in V2 through its initiator instance, which a duplex inbound
connection runs too), rejects them, and closes the connection where docs/protocol/validation.md
6.2 says "disconnect"; the flooder then dials again after a short pause, as a determined
attacker would.

``python -m lab.netlab.adversary withhold``: stake-less peers that dial one victim
and hold as many inbound connections as they can, offering nothing and pulling nothing
(they only answer keep-alives and send their own): the victim's inbound slots fill with
peers that never deliver a message, and it must get every message through the peers it
chose itself. A connection the victim refuses (at its ``AcceptedConnectionsLimit`` hard limit
it closes new sockets at once) is dialled again two seconds later.

Each writes what it did as JSON (``--result``) every second and when it stops (SIGINT or
SIGTERM), and the flooder appends every id it offered to ``--ids`` so a run can check that
none of them reached anyone.

With ``--ready PATH`` an attacker gets everything ready (its imports, its messages), writes
``PATH`` and waits for SIGUSR1 before it dials anyone. A run starts its attackers before
publishing and signals them at the attack's time: on a loaded machine the imports alone can
take twenty seconds, which would otherwise eat the attack's window.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import trio

from dmq.diffusion import DIALECTS
from dmq.diffusion.sig_submission import ServingPeer
from dmq.keyfiles import read_operational_certificate
from miniprotocols.keep_alive import KeepAliveClient
from miniprotocols.sig_submission import Side
from ouroboros_mux.mux import Mode

from .invalid import FLOOD_CLASSES, FloodMessages
from .peer import ScriptedPeer

__all__ = ["LinkStats", "flood", "withhold", "main", "FLOOD_RECONNECT_DELAY", "WITHHOLD_RECONNECT_DELAY"]

FLOOD_RECONNECT_DELAY = 0.5
WITHHOLD_RECONNECT_DELAY = 2.0
#: Shorter than the node's keep-alive timeout: a withholding peer looks perfectly alive.
_KEEP_ALIVE_INTERVAL = 10.0


@dataclass
class LinkStats:
    """What one kind of connection to one target went through."""

    target: str
    kind: str
    #: Connections whose handshake completed.
    opened: int = 0
    #: Dials that failed before the handshake completed (refused, closed at once by the node).
    refused: int = 0
    #: Open connections the node ended.
    closed_by_node: int = 0
    #: Connections open now, and the most at once.
    holding: int = 0
    peak_holding: int = 0
    #: Ids announced, and message bodies the node asked for and got.
    offered: int = 0
    served: int = 0
    errors: Counter[str] = field(default_factory=Counter)

    def to_json(self) -> dict[str, object]:
        document = asdict(self)
        document["errors"] = dict(self.errors)
        return document


class _FloodSource:
    """A :class:`~dmq.diffusion.sig_submission.interfaces.SigSource` of one class's invalid
    messages, one every ``1/rate`` seconds from the connection's start."""

    def __init__(self, messages: FloodMessages, kind: str, rate: float, numbers: itertools.count,
                 stats: LinkStats, offered: Callable[[bytes], None]) -> None:
        self.messages, self.kind, self.rate, self.numbers = messages, kind, rate, numbers
        self.stats, self.offered = stats, offered
        self.start = trio.current_time()
        self.ids: list[tuple[bytes, int]] = []
        self.bodies: dict[bytes, bytes] = {}

    def _due(self) -> int:
        return int((trio.current_time() - self.start) * self.rate)

    def ids_after(self, position: int, limit: int) -> list[tuple[int, bytes, int]]:
        end = min(self._due(), position + 1 + limit)
        while len(self.ids) < end:
            message_id, raw = self.messages.build(self.kind, next(self.numbers), time.time())
            self.ids.append((message_id, len(raw)))
            self.bodies[message_id] = raw
            self.stats.offered += 1
            self.offered(message_id)
        return [(index, *self.ids[index]) for index in range(position + 1, end)]

    async def wait_for_ids_after(self, position: int) -> None:
        await trio.sleep_until(self.start + (position + 2) / self.rate)

    def lookup(self, message_id: bytes) -> bytes | None:
        raw = self.bodies.pop(message_id, None)
        if raw is not None:
            self.stats.served += 1
        return raw


class _NothingSource:
    """A source that never has a message: the withholding peer's."""

    def ids_after(self, position: int, limit: int) -> list[tuple[int, bytes, int]]:
        return []

    async def wait_for_ids_after(self, position: int) -> None:
        await trio.sleep_forever()

    def lookup(self, message_id: bytes) -> bytes | None:
        return None


def _address(target: str) -> tuple[str, int]:
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {target!r}")
    return host, int(port)


async def _connection(target: str, magic: int, stats: LinkStats, source, reconnect_delay: float) -> None:
    """Dial ``target`` again and again; while connected, serve ``source()`` and ping."""
    host, port = _address(target)
    while True:
        connected = False
        try:
            async with ScriptedPeer(host, port, DIALECTS, magic=magic) as peer:
                connected = True
                stats.opened += 1
                stats.holding += 1
                stats.peak_holding = max(stats.peak_holding, stats.holding)
                try:
                    async with trio.open_nursery() as nursery:
                        keep_alive = KeepAliveClient(peer.channels[(12, Mode.INITIATOR)], interval=_KEEP_ALIVE_INTERVAL)
                        nursery.start_soon(_quietly, keep_alive.run, stats)
                        serving = ServingPeer(peer.dialect, peer.channel(Side.SERVING), source())
                        nursery.start_soon(_quietly, serving.run, stats)
                        await peer.ended.wait()
                        nursery.cancel_scope.cancel()
                    stats.closed_by_node += 1
                finally:
                    stats.holding -= 1
        except Exception as exc:
            if not connected:
                stats.refused += 1
            stats.errors[type(exc).__name__] += 1
        await trio.sleep(reconnect_delay)


async def _quietly(work, stats: LinkStats) -> None:
    """Run one side of the connection; when the node ends it, the error is only counted."""
    try:
        await work()
    except Exception as exc:
        stats.errors[type(exc).__name__] += 1


async def flood(targets: list[str], kinds: list[str], rate: float, messages: FloodMessages, magic: int,
                stats: list[LinkStats], offered: Callable[[bytes], None]) -> None:
    numbers = itertools.count()
    async with trio.open_nursery() as nursery:
        for target in targets:
            for kind in kinds:
                link = LinkStats(target, kind)
                stats.append(link)
                source = lambda kind=kind, link=link: _FloodSource(messages, kind, rate, numbers, link, offered)  # noqa: E731
                nursery.start_soon(_connection, target, magic, link, source, FLOOD_RECONNECT_DELAY)


async def withhold(target: str, connections: int, magic: int, stats: list[LinkStats]) -> None:
    link = LinkStats(target, "withhold")
    stats.append(link)
    async with trio.open_nursery() as nursery:
        for _ in range(connections):
            nursery.start_soon(_connection, target, magic, link, _NothingSource, WITHHOLD_RECONNECT_DELAY)
            # Dials spread out a little, as a cluster's would.
            await trio.sleep(0.01)


def _write(path: Path, stats: list[LinkStats], started: float) -> None:
    document = {"seconds": round(time.monotonic() - started, 3), "links": [link.to_json() for link in stats]}
    _replace(path, json.dumps(document) + "\n")


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all: the run reads it while this process may be stopped."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _attack(args: argparse.Namespace, stats: list[LinkStats], offered: Callable[[bytes], None]):
    """The attack ``args`` asks for, prepared (its messages built) and ready to start in a nursery."""
    if args.attack == "flood":
        opcert, cold_vk = read_operational_certificate(args.opcert)
        messages = FloodMessages(opcert, cold_vk, args.kes_period, args.tag)
        return lambda: flood(args.target, args.classes, args.rate, messages, args.magic, stats, offered)
    return lambda: withhold(args.target[0], args.connections, args.magic, stats)


async def _go(signals, ready: Path) -> bool:
    """Say ``ready`` and wait for SIGUSR1 (True), or for SIGINT or SIGTERM first (False)."""
    _replace(ready, f"{os.getpid()}\n")
    async for signum in signals:
        return signum == signal.SIGUSR1
    return False


async def _main(args: argparse.Namespace) -> None:
    stats: list[LinkStats] = []
    started = time.monotonic()
    ids_file = open(args.ids, "a") if getattr(args, "ids", None) else None

    def offered(message_id: bytes) -> None:
        if ids_file is not None:
            ids_file.write(message_id.hex() + "\n")

    try:
        attack = _attack(args, stats, offered)
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGUSR1) as signals:
            if args.ready is not None and not await _go(signals, args.ready):
                return
            started = time.monotonic()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(attack)

                async def report() -> None:
                    while True:
                        await trio.sleep(1.0)
                        if ids_file is not None:
                            ids_file.flush()
                        _write(args.result, stats, started)

                nursery.start_soon(report)
                async for signum in signals:
                    if signum != signal.SIGUSR1:
                        nursery.cancel_scope.cancel()
                        break
    finally:
        if ids_file is not None:
            ids_file.close()
        _write(args.result, stats, started)


def _classes(text: str) -> list[str]:
    kinds = [kind.strip() for kind in text.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in FLOOD_CLASSES]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(f"flood classes are {', '.join(FLOOD_CLASSES)}; got {text!r}")
    return kinds


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m lab.netlab.adversary", description=__doc__.splitlines()[0])
    commands = top.add_subparsers(dest="attack", required=True)
    for name in ("flood", "withhold"):
        command = commands.add_parser(name)
        command.add_argument("--target", action="append", required=True, help="HOST:PORT (repeatable)")
        command.add_argument("--magic", type=int, required=True, help="the DMQ network magic")
        command.add_argument("--result", type=Path, required=True, help="where the JSON account goes")
        command.add_argument("--ready", type=Path, default=None,
                             help="write this file once ready, then wait for SIGUSR1 before attacking")
    flooding = commands.choices["flood"]
    flooding.add_argument("--opcert", type=Path, required=True, help="a registered pool's node.cert")
    flooding.add_argument("--kes-period", type=int, required=True)
    flooding.add_argument("--classes", type=_classes, default=list(FLOOD_CLASSES))
    flooding.add_argument("--rate", type=float, default=20.0, help="messages offered per second per connection")
    flooding.add_argument("--tag", default="flood", help="kept in every body, so two flooders' ids differ")
    flooding.add_argument("--ids", type=Path, default=None, help="append every offered id (hex) here")
    commands.choices["withhold"].add_argument("--connections", type=int, default=64)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.attack == "withhold":
        _address(args.target[0])
    trio.run(_main, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
