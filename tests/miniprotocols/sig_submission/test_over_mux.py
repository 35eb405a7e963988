"""Sig submission both ways on one duplex loopback TCP connection, through two real muxes.

Each side registers both instances of protocol 11 (docs/protocol/mux.md 2.2): its initiator instance
talks to the other side's responder instance, told apart on the wire by the M bit only.
The version decides which instance serves and which pulls (docs/protocol/node-to-node.md 9.1), so in V2 each
side pulls through its initiator instance and in V1 each side serves through it; either
way, each side ends up with exactly the other side's messages, byte for byte.
"""

from __future__ import annotations

import trio

from miniprotocols import sig_submission_v1, sig_submission_v2
from miniprotocols.sig_submission import INGRESS_LIMIT, PROTOCOL_NUM, Side
from dmq.diffusion.sig_submission import PullingPeer, ServingPeer
from ouroboros_mux import Bearer, Mode, Mux
from ouroboros_mux import Provenance
from tests.ouroboros_mux.streams import tcp_stream_pair

from .helpers import ListSigSource, RecordingSink, make_message


class Node:
    """One end of the connection: a mempool, a sink, and the two protocol-11 instances."""

    def __init__(self, dialect, mux: Mux, messages: list[bytes]) -> None:
        self.dialect = dialect
        self.mux = mux
        self.source = ListSigSource(messages)
        self.sink = RecordingSink(holds={m[3:35] for m in messages})
        self.peers = {}
        for initiator, mode in ((True, Mode.INITIATOR), (False, Mode.RESPONDER)):
            channel = mux.register(PROTOCOL_NUM, mode, INGRESS_LIMIT)
            if dialect.side_of(initiator) is Side.SERVING:
                options = {} if dialect.reply_no_ids is None else {"blocking_timeout": 0.05}
                peer = ServingPeer(dialect, channel, self.source, **options)
            else:
                peer = PullingPeer(dialect, channel, self.sink)
            self.peers[mode] = (peer, channel)

    def side(self, mode: Mode) -> Side:
        return self.dialect.side_of(mode is Mode.INITIATOR)

    async def run_instance(self, mode: Mode) -> None:
        peer, channel = self.peers[mode]
        await peer.run()
        channel.finish()

    def stop(self) -> None:
        for peer, _ in self.peers.values():
            if isinstance(peer, PullingPeer) and self.dialect.done_by is Side.PULLING:
                peer.stop()
            if isinstance(peer, ServingPeer) and self.dialect.done_by is Side.SERVING:
                peer.stop()


async def exchange(dialect) -> None:
    connecting, accepted = await tcp_stream_pair()
    a = Node(dialect, Mux(Bearer(connecting), Provenance.OUTBOUND), [make_message(n) for n in range(150)])
    b = Node(dialect, Mux(Bearer(accepted), Provenance.INBOUND), [make_message(n) for n in range(1000, 1120)])
    shared = b.source.entries[0][2]  # one message both hold: never fetched either way
    a.source.append(shared)
    a.sink.holds.add(shared[3:35])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(a.mux.run)
        nursery.start_soon(b.mux.run)
        async with trio.open_nursery() as peers:
            for node in (a, b):
                for mode in (Mode.INITIATOR, Mode.RESPONDER):
                    peers.start_soon(node.run_instance, mode)
            with trio.fail_after(30):
                await a.sink.wait_for(119)
                await b.sink.wait_for(150)
            a.stop()
            b.stop()
        a.mux.stop()
        b.mux.stop()

    assert a.sink.accepted == [raw for _, _, raw in b.source.entries[1:]]
    assert b.sink.accepted == [raw for _, _, raw in a.source.entries[:150]]
    assert a.mux.error is None and b.mux.error is None
    for node in (a, b):
        assert node.sink.outstanding_claims == []
        for mode in (Mode.INITIATOR, Mode.RESPONDER):
            peer, channel = node.peers[mode]
            counters = channel.counters()
            assert counters.sdus_in > 0 and counters.sdus_out > 0
            assert peer.driver.done
    # Who pulls through the initiator instance depends on the version.
    assert a.side(Mode.INITIATOR) is (Side.PULLING if dialect.version == 2 else Side.SERVING)


async def test_v2_both_directions_over_loopback_tcp():
    await exchange(sig_submission_v2.DIALECT)


async def test_v1_both_directions_over_loopback_tcp():
    await exchange(sig_submission_v1.DIALECT)
