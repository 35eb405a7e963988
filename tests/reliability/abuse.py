"""Protocol abuse from one connection, in raw bytes, while honest parties keep being served.

Each :class:`Abuse` opens its own connection to X (the node-to-node port or the local
socket), behaves badly in one way, and then waits: X must end that connection, naming the
violation in its trace, within the reference time limit (``limit``; 0 means at once), and
never before it for the timed ones. Meanwhile :class:`HonestTraffic` publishes a message
every 100 ms on fresh local connections (the Mithril signer pattern) and records each
latency, the aggregator of the world keeps its blocking request, and B keeps its link.

Used by ``test_protocol_abuse.py`` (the immediate violations, and the timed ones behind
``slow``) and by ``bench/reliability_abuse.py`` (everything, with the figures).
"""

from __future__ import annotations

import itertools
import socket as stdlib_socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

from miniprotocols.local_msg_submission import ACCEPTED
from ouroboros_mux.bearer import HANDSHAKE_SDU_TIMEOUT, SDU_TIMEOUT
from dmq.trace import ConnectionClosed

from tests.dmq.diffusion.network import HOST, MAGIC, LocalClient, pool
from tests.e2e.raw_n2c import REQUEST_NON_BLOCKING, RawN2CClient, sdu

from .world import World

__all__ = ["Abuse", "IMMEDIATE", "TIMED", "HonestTraffic", "AbuseResult", "commit_abuse", "abuse_while_serving"]

#: How long "at once" may take on a loaded 2-core machine.
PROMPT = 5.0


def n2n_proposal(magic: int = MAGIC, *, initiator_only: bool = False) -> bytes:
    """``[0, {2: [magic, initiatorOnly, 0, false]}]``: propose version 2, no peer sharing."""
    mode = b"\xf5" if initiator_only else b"\xf4"
    return bytes.fromhex("8200a102841a") + magic.to_bytes(4, "big") + mode + bytes.fromhex("00f4")


def n2c_proposal(magic: int = MAGIC) -> bytes:
    return bytes.fromhex("8200a1191001821a") + magic.to_bytes(4, "big") + b"\xf4"


async def n2n_handshake(client: RawN2CClient, *, initiator_only: bool = False) -> None:
    await client.send(sdu(b"\x00\x00", n2n_proposal(initiator_only=initiator_only)))
    answer = await client.read_sdu()
    assert answer.payload[:3] == bytes.fromhex("830102"), f"handshake answer {answer.payload.hex()}"


async def n2c_handshake(client: RawN2CClient) -> None:
    await client.send(sdu(b"\x00\x00", n2c_proposal()))
    answer = await client.read_sdu()
    assert answer.payload[:4] == bytes.fromhex("83011910"), f"handshake answer {answer.payload.hex()}"


def word(protocol: int, from_responder: bool = False) -> bytes:
    return ((0x8000 if from_responder else 0) | protocol).to_bytes(2, "big")


@dataclass(frozen=True)
class Abuse:
    name: str
    link: str                                   # "n2n" or "n2c"
    act: Callable[[RawN2CClient], Awaitable[None]]
    expected: str                               # a fragment of X's ConnectionClosed error
    limit: float = 0.0                          # the reference time limit; 0 = at once
    #: Shrinks the receive buffer, so the node's writes block (a slow reader).
    small_receive_buffer: bool = False


# -- immediate violations --------------------------------------------------------------

async def _garbage_handshake(c):
    await c.send(sdu(b"\x00\x00", b"\xff\xfe\xfd"))


async def _wrong_magic(c):
    await c.send(sdu(b"\x00\x00", n2n_proposal(764824073)))


def _one_sdu(link: str, protocol: int, payload_hex: str, *, from_responder: bool = False,
             initiator_only: bool = False) -> Callable[[RawN2CClient], Awaitable[None]]:
    """After a good handshake on ``link``, one SDU carrying ``payload_hex``."""
    async def act(c: RawN2CClient) -> None:
        if link == "n2n":
            await n2n_handshake(c, initiator_only=initiator_only)
        else:
            await n2c_handshake(c)
        await c.send(sdu(word(protocol, from_responder), bytes.fromhex(payload_hex)))
    return act


async def _zero_length_sdu(c):
    await n2n_handshake(c)
    await c.send(b"\x00\x00\x00\x00" + word(12) + b"\x00\x00")


async def _ingress_overrun(c):
    """A keep-alive message announced as 60 000 bytes: far past the 1 408-byte ingress limit."""
    await n2n_handshake(c)
    payload = b"\x82\x00\x59\xea\x60" + bytes(60_000)
    await c.send(b"".join(sdu(word(12), payload[i:i + 12_000]) for i in range(0, len(payload), 12_000)))


IMMEDIATE = [
    Abuse("garbage handshake", "n2n", _garbage_handshake, "handshake"),
    Abuse("wrong network magic", "n2n", _wrong_magic, "handshake"),
    Abuse("unknown mini-protocol", "n2n", _one_sdu("n2n", 99, "80"), "UnknownMiniProtocol"),
    # Initiator-only: X runs no initiator instances here, so no SDU may come "from a responder".
    Abuse("wrong direction", "n2n", _one_sdu("n2n", 12, "8200182a", from_responder=True, initiator_only=True),
          "WrongDirection"),
    Abuse("zero-length SDU", "n2n", _zero_length_sdu, "SDUDecodeError"),
    Abuse("ingress overrun", "n2n", _ingress_overrun, "IngressQueueOverRun"),
    # A keep-alive *response* to the node's server, which waits for a request.
    Abuse("message out of turn", "n2n", _one_sdu("n2n", 12, "8201182a"), "ProtocolViolation"),
    Abuse("malformed message", "n2n", _one_sdu("n2n", 12, "8109"), "DecoderFailure"),
    # Sig submission V2, pulling side: 10 000 ids asked for (the window is 33).
    Abuse("too many ids requested", "n2n", _one_sdu("n2n", 11, "8401f500192710"), "RequestedTooMany"),
    Abuse("local: malformed submission", "n2c", _one_sdu("n2c", 14, "8109"), "DecoderFailure"),
    Abuse("local: unknown mini-protocol", "n2c", _one_sdu("n2c", 11, "8200"), "UnknownMiniProtocol"),
]


# -- violations with a reference time limit ------------------------------------------

async def _stalled_handshake(c):
    await c.send(b"\x00\x00\x00")                # an SDU header that never completes


async def _silent_after_connect(c):
    pass                                          # connects, never proposes


async def _stalled_sdu(c):
    """Initiator-only, so X starts no protocol of its own here whose time limit would come first."""
    await n2n_handshake(c, initiator_only=True)
    await c.send(sdu(word(12), bytes.fromhex("8200182a"))[:10])   # header and 2 of 4 payload bytes


async def _slow_reader(c):
    """An aggregator that asks for everything X holds and never reads the reply."""
    await n2c_handshake(c)
    await c.send(sdu(word(15), REQUEST_NON_BLOCKING))


TIMED = [
    Abuse("stalled handshake SDU", "n2n", _stalled_handshake, "handshake", HANDSHAKE_SDU_TIMEOUT),
    Abuse("no handshake proposal", "n2n", _silent_after_connect, "handshake", HANDSHAKE_SDU_TIMEOUT),
    Abuse("stalled SDU", "n2n", _stalled_sdu, "SDUReadTimeout", SDU_TIMEOUT),
    Abuse("slow reader", "n2c", _slow_reader, "SDUWriteTimeout", SDU_TIMEOUT, small_receive_buffer=True),
]


# -- running one ---------------------------------------------------------------------

@dataclass
class AbuseResult:
    abuse: Abuse
    closed_after: float | None            # seconds from the violation to X's trace of the close
    error: str | None

    @property
    def in_time(self) -> bool:
        if self.closed_after is None:
            return False
        low = self.abuse.limit - 0.5 if self.abuse.limit else 0.0
        return low <= self.closed_after <= self.abuse.limit + PROMPT


async def _open(world: World, abuse: Abuse) -> RawN2CClient:
    if abuse.link == "n2n":
        return RawN2CClient(await trio.open_tcp_stream(HOST, world.x.port))
    sock = trio.socket.socket(stdlib_socket.AF_UNIX, stdlib_socket.SOCK_STREAM)
    if abuse.small_receive_buffer:
        sock.setsockopt(stdlib_socket.SOL_SOCKET, stdlib_socket.SO_RCVBUF, 4096)
    await sock.connect(str(world.x.socket))
    return RawN2CClient(trio.SocketStream(sock))


def _new_closes(world: World, start: int, fragment: str, label: str | None) -> list[ConnectionClosed]:
    return [e for e in world.x.events[start:] if isinstance(e, ConnectionClosed) and e.error
            and fragment in e.error and (label is None or e.peer == label)]


async def commit_abuse(world: World, abuse: Abuse) -> AbuseResult:
    """Open a connection, misbehave, and wait for X to end it (at most the limit + slack)."""
    start = len(world.x.events)
    client = await _open(world, abuse)
    label = None
    if abuse.link == "n2n":
        host, port = client.stream.socket.getsockname()[:2]
        label = f"{host}:{port}"
    try:
        await abuse.act(client)
        began = time.monotonic()
        with trio.move_on_after(abuse.limit + PROMPT + 2):
            while not _new_closes(world, start, abuse.expected, label):
                await trio.sleep(0.02)
        found = _new_closes(world, start, abuse.expected, label)
        if found:
            return AbuseResult(abuse, time.monotonic() - began, found[0].error)
        others = [e.error for e in world.x.events[start:] if isinstance(e, ConnectionClosed) and e.error]
        return AbuseResult(abuse, None, f"no close naming {abuse.expected!r}; closes seen: {others}")
    finally:
        with trio.CancelScope(shield=True):
            await client.aclose()


#: Bodies of the honest signer's messages: unique across every run in one process.
_traffic_tags = itertools.count(100_000)


@dataclass
class HonestTraffic:
    """A Mithril signer publishing every ``interval`` seconds, one connection per message."""

    world: World
    interval: float = 0.1
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    stopping: trio.Event = field(default_factory=trio.Event)

    async def run(self) -> None:
        """Publish until :meth:`stop`; a submission under way is finished, so that what was
        accepted is always recorded."""
        while not self.stopping.is_set():
            n = next(_traffic_tags)
            message = pool(40 + n % 40).sign(n, self.world.now() + 900)
            began = time.monotonic()
            try:
                async with LocalClient(self.world.x.socket) as client:
                    reply = await client.submission.submit(message.raw)
            except Exception as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}")
            else:
                if reply != ACCEPTED:
                    self.failures.append(f"rejected: {reply}")
                else:
                    self.world.honest.append(message.raw)
                    self.latencies.append(time.monotonic() - began)
            with trio.move_on_after(self.interval):
                await self.stopping.wait()

    def stop(self) -> None:
        self.stopping.set()


async def _fill(world: World, part: int, parts: int, count: int) -> None:
    async with LocalClient(world.x.socket) as client:
        for i in range(part, count, parts):
            message = pool(40 + i % 40).sign(500_000 + i, world.now() + 900, body_size=2000)
            assert await client.submission.submit(message.raw) == ACCEPTED
            world.honest.append(message.raw)


async def abuse_while_serving(world: World, abuses: list[Abuse], *, concurrently: bool
                              ) -> tuple[list[AbuseResult], HonestTraffic]:
    """Commit ``abuses`` (one after the other, or all at once) while honest traffic runs."""
    if any(a.small_receive_buffer for a in abuses):
        # Enough held for one notification reply to overflow every socket buffer on the way.
        async with trio.open_nursery() as fill:
            for part in range(3):
                fill.start_soon(_fill, world, part, 3, 240)
    traffic = HonestTraffic(world)
    results: list[AbuseResult] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(traffic.run)
        await trio.sleep(0.3)                       # served before ...
        if concurrently:
            async def one(abuse: Abuse) -> None:
                results.append(await commit_abuse(world, abuse))
            async with trio.open_nursery() as attacks:
                for abuse in abuses:
                    attacks.start_soon(one, abuse)
        else:
            for abuse in abuses:
                results.append(await commit_abuse(world, abuse))
        await trio.sleep(0.5)                       # ... and after
        traffic.stop()
    return results, traffic
