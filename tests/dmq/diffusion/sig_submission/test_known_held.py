"""The serving peer leaves out ids the peer holds (docs/protocol/node-to-node.md 9.8).

Real components: the node's in-memory mempool behind its ``MempoolSigSource``, the serving peer
run from a real mux's reader (where the publish hook acts), and a scripted pulling
side (a protocol driver on the other mux) that sends requests and reads replies, so every id
announced is seen on the wire. The duplex tests run two nodes' pulling and serving peers over
one pair of real muxes.
"""

from __future__ import annotations

from collections import namedtuple

import pytest
import trio
import trio.testing

from dmq.clock import ManualClock
from dmq.diffusion.mempool_source import MempoolSigSource
from dmq.diffusion.sig_submission import (
    ClaimingSink,
    InFlightRegistry,
    KnownHeld,
    PullingPeer,
    ServingPeer,
)
from dmq.mempool import Mempool
from miniprotocols.framework import Driver
from miniprotocols.sig_submission import INGRESS_LIMIT, PROTOCOL_NUM
from miniprotocols.sig_submission.errors import AckedTooManyIds
from ouroboros_mux import Bearer, Mode, Mux, Provenance

from tests.miniprotocols.sig_submission.helpers import make_message, message_id, mux_channel_pair

Message = namedtuple("Message", "message_id expires_at raw")
EXPIRES = 1_900_000_000


def msg(n: int) -> Message:
    raw = make_message(n, expires_at=EXPIRES)
    return Message(message_id(raw), EXPIRES, raw)


def ids_of(reply) -> list[bytes]:
    return [i for i, _ in reply.ids]


class Scripted:
    """The pulling side, request by request, over a real mux; the serving peer answers from its reader."""

    def __init__(self, dialect, nursery, source, **serving_options) -> None:
        pulling, serving = mux_channel_pair(dialect, nursery)
        self.dialect = dialect
        self.driver = Driver(pulling, dialect.spec, dialect.pulling_role)
        self.serving = ServingPeer(dialect, serving, source, **serving_options)
        self.failure: BaseException | None = None
        nursery.start_soon(self._serve)

    async def _serve(self) -> None:
        try:
            await self.serving.run()
        except Exception as exc:  # the test looks at it
            self.failure = exc

    async def start(self) -> None:
        if self.dialect.init is not None:  # V1: the serving peer's MsgInit first
            assert await self.driver.recv() == self.dialect.init()

    async def ask(self, blocking: bool, ack: int, req: int) -> None:
        await self.driver.send(self.dialect.request_ids(blocking, ack, req))

    async def reply(self):
        return await self.driver.recv()

    async def nothing_yet(self) -> bool:
        """Whether no reply has come once everything that could run has run."""
        await trio.testing.wait_all_tasks_blocked()
        return self.driver.recv_nowait() is None


@pytest.fixture
def mempool():
    return Mempool(ManualClock())


async def test_known_ids_are_left_out_and_the_position_moves_past_them(dialect, nursery, mempool, autojump_clock):
    messages = [msg(n) for n in range(1, 6)]
    mempool.append(messages[:4])
    known = KnownHeld()
    known.add([messages[1].message_id, messages[3].message_id])
    peer = Scripted(dialect, nursery, MempoolSigSource(mempool), known=known)
    await peer.start()

    await peer.ask(True, 0, 10)
    assert ids_of(await peer.reply()) == [messages[0].message_id, messages[2].message_id]
    # Both announced ids acknowledged: the window counted only those two, so a blocking request is allowed.
    await peer.ask(True, 2, 10)
    assert await peer.nothing_yet()  # m4 is known: the blocking request waits as if nothing were new
    assert peer.serving.window.position == 3  # ... and the position passed m4 (index 3)
    mempool.append([messages[4]])
    reply = await peer.reply()
    assert ids_of(reply) == [messages[4].message_id]
    assert peer.serving.window.unacknowledged == (messages[4].message_id,)


async def test_the_window_rules_are_unchanged(dialect, nursery, mempool, autojump_clock):
    messages = [msg(n) for n in range(1, 4)]
    mempool.append(messages)
    known = KnownHeld()
    known.add([messages[1].message_id])
    peer = Scripted(dialect, nursery, MempoolSigSource(mempool), known=known)
    await peer.start()
    await peer.ask(True, 0, 10)
    assert len(ids_of(await peer.reply())) == 2
    await peer.ask(True, 3, 10)  # three acknowledged, two announced
    with trio.fail_after(30):
        while peer.failure is None:
            await trio.sleep(0.1)
    assert isinstance(peer.failure, AckedTooManyIds)


async def _one_announced(dialect, nursery, mempool) -> tuple[Scripted, KnownHeld]:
    """A serving peer with a known-held set that announced one message (still unacknowledged)."""
    first = msg(1)
    mempool.append([first])
    known = KnownHeld()
    peer = Scripted(dialect, nursery, MempoolSigSource(mempool), known=known)
    await peer.start()
    await peer.ask(True, 0, 10)
    assert ids_of(await peer.reply()) == [first.message_id]
    return peer, known


async def test_a_parked_request_stays_parked_when_every_new_id_is_known(dialect, nursery, mempool, autojump_clock):
    held, fresh = msg(2), msg(3)
    peer, known = await _one_announced(dialect, nursery, mempool)
    await peer.ask(True, 1, 10)
    assert await peer.nothing_yet()  # parked
    known.add([held.message_id])
    mempool.append([held])
    assert await peer.nothing_yet()  # still parked: the only new id is one the peer holds
    await trio.sleep(1)
    mempool.append([fresh])
    assert ids_of(await peer.reply()) == [fresh.message_id]  # announced once, the known one never


async def test_a_non_blocking_request_gets_an_empty_reply_when_every_new_id_is_known(dialect, nursery, mempool,
                                                                                  autojump_clock):
    second = msg(2)
    peer, known = await _one_announced(dialect, nursery, mempool)
    known.add([second.message_id])
    mempool.append([second])
    await peer.ask(False, 0, 5)  # one still unacknowledged: a non-blocking request
    assert ids_of(await peer.reply()) == []


def test_the_known_set_keeps_the_most_recent_ids_within_its_capacity():
    known = KnownHeld(capacity=100)
    ids = [n.to_bytes(32, "big") for n in range(250)]
    for message_id in ids:
        known.add([message_id])
        assert len(known) <= 100
    assert ids[-1] in known and ids[0] not in known
    with pytest.raises(ValueError):
        KnownHeld(capacity=1)


def test_the_known_set_forgets_what_the_serving_peer_passed():
    passed_up_to = 10
    known = KnownHeld()
    known.unpassed = lambda ids: [i for i in ids if int.from_bytes(i, "big") > passed_up_to]
    ids = [n.to_bytes(2, "big") for n in range(1000)]
    known.add([ids[5], ids[20]])  # 5 was passed already (the announcements crossed)
    assert ids[5] not in known and ids[20] in known
    for n in range(21, 21 + 64):  # none passed yet: 65 kept, the next sweep when the set doubles
        known.add([ids[n]])
    assert len(known) == 65
    passed_up_to = 100  # the serving peer passed them all meanwhile
    for n in range(101, 101 + 66):
        known.add([ids[n]])
    assert len(known) < 131 and ids[20] not in known and all(ids[n] in known for n in range(101, 167))
    known.discard(ids[166])
    assert ids[166] not in known


async def test_the_serving_peer_keeps_only_the_ids_it_has_not_passed(dialect, nursery, mempool, autojump_clock):
    messages = [msg(n) for n in range(1, 4)]
    mempool.append(messages[:2])
    known = KnownHeld()
    peer = Scripted(dialect, nursery, MempoolSigSource(mempool), known=known)
    await peer.start()
    await peer.ask(True, 0, 10)
    assert len(ids_of(await peer.reply())) == 2
    known.add([m.message_id for m in messages])  # the first two crossed: the peer announced them too late
    assert list(known.ids) == [messages[2].message_id]
    await peer.ask(True, 2, 10)
    assert await peer.nothing_yet()
    mempool.append([messages[2]])  # accepted here: the position passes it, leaving it out
    assert await peer.nothing_yet()
    assert len(known) == 0


# -- two nodes over one duplex connection -------------------------------------------------------


class Node:
    """A node's side of sig submission: its mempool, and what its pulling peers were offered."""

    def __init__(self) -> None:
        self.mempool = Mempool(ManualClock())
        self.source = MempoolSigSource(self.mempool)
        self.registry = InFlightRegistry()
        self.offered: list[bytes] = []
        self.changed = trio.Event()

    def sink(self, known: KnownHeld | None) -> ClaimingSink:
        def announced_by_peer(ids):
            self.offered.extend(ids)
            if known is not None:
                known.add(ids)

        async def accept(raw_messages):
            by_id = {message_id(raw): raw for raw in raw_messages}
            by_id = {i: raw for i, raw in by_id.items() if not self.mempool.contains(i)}  # accepted meanwhile
            await self.mempool.submit([Message(i, EXPIRES, raw) for i, raw in by_id.items()], relayed=True)
            self.changed.set()
            self.changed = trio.Event()

        return ClaimingSink(self.registry, "peer", holds=self.mempool.contains, accept=accept,
                            announced_by_peer=announced_by_peer)

    async def wait_holds(self, mid: bytes) -> None:
        while not self.mempool.contains(mid):
            await self.changed.wait()


def duplex(dialect, nursery, a: Node, b: Node, *, known: bool) -> None:
    """One connection between ``a`` and ``b`` with both sig-submission instances on each mux."""
    a_stream, b_stream = trio.testing.memory_stream_pair()
    muxes = Mux(Bearer(a_stream), Provenance.OUTBOUND), Mux(Bearer(b_stream), Provenance.INBOUND)
    for mux, node in zip(muxes, (a, b)):
        shared = KnownHeld() if known else None
        for mode, initiator in ((Mode.INITIATOR, True), (Mode.RESPONDER, False)):
            channel = mux.register(PROTOCOL_NUM, mode, INGRESS_LIMIT)
            if dialect.side_of(initiator).name == "SERVING":
                peer = ServingPeer(dialect, channel, node.source, known=shared)
            else:
                peer = PullingPeer(dialect, channel, node.sink(shared))
            nursery.start_soon(peer.run)
    for mux in muxes:
        nursery.start_soon(mux.run)


@pytest.mark.parametrize("known", [True, False], ids=["known-held", "without"])
async def test_an_id_the_peer_announced_is_not_announced_back(dialect, nursery, known, autojump_clock):
    a, b = Node(), Node()
    duplex(dialect, nursery, a, b, known=known)
    submitted = [msg(n) for n in range(1, 4)]
    for message in submitted:
        await a.mempool.submit([message])
        await b.wait_holds(message.message_id)
    await trio.testing.wait_all_tasks_blocked()
    ids = [m.message_id for m in submitted]
    assert b.offered == ids  # a announced each once
    # b holds them all; it announces none back to the peer that announced them to it (without the
    # known-held set it would announce each one back: the control case).
    assert a.offered == ([] if known else ids)
