"""Two relays accept the same message at about the same moment: their announcements should not cross.

Real components on both ends of one duplex connection over a real socket pair: each node's
mempool (running, so its relayed publishes wait a round of the event loop), its serving and
pulling peers on a real mux, and a shared known-held set per connection end. Node ``a``
accepts a relayed message; its parked serving peer announces it to ``b`` (written to the
socket at once); in the next round of the event loop ``b`` accepts the same message from
elsewhere, in the round whose poll woke ``b``'s reader for ``a``'s announcement, the two in
either order. ``b`` takes the announcement in before it publishes, and does not announce the id
back (docs/protocol/node-to-node.md 9.8). The control: a mempool whose background task is not
running publishes relayed messages at once, and ``b`` announces back every id it accepted
before its reader ran (the announcements cross). Attempts repeat until the acceptance ran
first a few times: those are the attempts that test something.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from dmq.diffusion.sig_submission import KnownHeld, PullingPeer, ServingPeer
from miniprotocols.sig_submission import INGRESS_LIMIT, PROTOCOL_NUM
from ouroboros_mux import Bearer, Mode, Mux, Provenance

from .test_known_held import Node, msg


def socket_duplex(dialect, nursery, a: Node, b: Node) -> list[ServingPeer]:
    """One connection between ``a`` and ``b`` over a real socket pair; the serving peers of ``a`` and ``b``."""
    sockets = trio.socket.socketpair()
    muxes = (Mux(Bearer(trio.SocketStream(sockets[0])), Provenance.OUTBOUND),
             Mux(Bearer(trio.SocketStream(sockets[1])), Provenance.INBOUND))
    serving = []
    for mux, node in zip(muxes, (a, b)):
        shared = KnownHeld()
        for mode, initiator in ((Mode.INITIATOR, True), (Mode.RESPONDER, False)):
            channel = mux.register(PROTOCOL_NUM, mode, INGRESS_LIMIT)
            if dialect.side_of(initiator).name == "SERVING":
                peer = ServingPeer(dialect, channel, node.source, known=shared)
                serving.append(peer)
            else:
                peer = PullingPeer(dialect, channel, node.sink(shared))
            nursery.start_soon(peer.run)
    for mux in muxes:
        nursery.start_soon(mux.run)
    return serving


@pytest.mark.parametrize("running", [True, False], ids=["published-a-round-later", "published-at-once"])
async def test_an_announcement_already_read_in_is_not_crossed(dialect, running):
    a, b = Node(), Node()
    first = msg(1)
    b_accepted_first = 0  # attempts where b accepted before its reader took a's announcement in
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            if running:
                for node in (a, b):
                    await nursery.start(node.mempool.run)
            a_serving, b_serving = socket_duplex(dialect, nursery, a, b)
            # One message from a to b first: both directions are then past their first exchange.
            await a.mempool.submit([first])
            await b.wait_holds(first.message_id)
            for n in range(2, 42):
                crossing = msg(n)
                await trio.testing.wait_all_tasks_blocked()
                assert a_serving._parked is not None and b_serving._parked is not None
                offered_to_a = len(a.offered)
                accepts = trio.Event()
                before_reading: list[bool] = []

                async def b_accepts_too():
                    # Woken in the round of a's publish (whose serving peer wrote its announcement
                    # to the socket then), this runs in the next round beside b's reader, which that
                    # poll woke: b accepts the same message, as a relay of another peer's.
                    await accepts.wait()
                    before_reading.append(crossing.message_id not in b.offered)
                    if not b.mempool.contains(crossing.message_id):
                        b.mempool.submit_relayed([crossing])

                nursery.start_soon(b_accepts_too)
                await trio.testing.wait_all_tasks_blocked()
                a.mempool.call_on_publish(lambda published: accepts.set())  # after a's serving peer's hook
                a.mempool.submit_relayed([crossing])
                while not (crossing.message_id in b.offered and b.mempool.lookup_unexpired(crossing.message_id)):
                    await trio.sleep(0.01)
                await trio.testing.wait_all_tasks_blocked()
                assert b.offered.count(crossing.message_id) == 1  # a announced it, once
                b_accepted_first += before_reading == [True]
                if running:
                    # b took a's announcement in before it announced: the id is not announced back.
                    assert a.offered[offered_to_a:] == []
                else:
                    # Published at once, b announces what it accepts before reading a's
                    # announcement of it (the two cross), and not what it accepts after.
                    assert a.offered[offered_to_a:] == ([crossing.message_id] if before_reading[0] else [])
                if b_accepted_first >= 3:
                    break
            nursery.cancel_scope.cancel()
    assert b_accepted_first >= 3  # rounds where the order mattered happened
