"""Wake-ups between the mux and its channels' tasks: each waiting task is woken once per
reason, and a woken task is never forgotten (several senders may wait on one channel)."""

from __future__ import annotations

import trio
import trio.testing

from ouroboros_mux.bearer import Bearer
from ouroboros_mux.mux import SEND_BUFFER_LIMIT, Mode, Mux, Provenance

from .cbor_messages import big_bytes

UNLIMITED = 0xFFFFFFFF


async def connected_muxes():
    a, b = trio.socket.socketpair()
    sender = Mux(Bearer(trio.SocketStream(a)), Provenance.OUTBOUND)
    receiver = Mux(Bearer(trio.SocketStream(b)), Provenance.INBOUND)
    return sender, receiver


async def test_a_message_of_many_sdus_in_one_read_wakes_its_receiver_once(monkeypatch):
    sender, receiver = await connected_muxes()
    out = sender.register(2, Mode.INITIATOR, UNLIMITED)
    inn = receiver.register(2, Mode.RESPONDER, UNLIMITED)
    wakes = []
    lot = inn._recv_lot
    original = type(lot).unpark_all
    monkeypatch.setattr(type(lot), "unpark_all", lambda self: (wakes.append(self is lot), original(self))[1])
    message = big_bytes(60_000)  # five SDUs
    async with trio.open_nursery() as nursery:
        nursery.start_soon(receiver.run)
        got = []

        async def receive() -> None:
            got.append(await inn.recv_message())

        nursery.start_soon(receive)
        await trio.testing.wait_all_tasks_blocked()  # the receiver waits on an empty buffer
        nursery.start_soon(sender.run)
        await out.send(message)
        with trio.fail_after(5):
            while not got:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert got == [message]
    # Woken when the first SDU arrived, then when the message was complete, never per SDU.
    assert 1 <= wakes.count(True) <= 2


async def test_every_sender_waiting_on_a_full_channel_is_woken():
    sender, receiver = await connected_muxes()
    out = sender.register(2, Mode.INITIATOR, UNLIMITED)
    inn = receiver.register(2, Mode.RESPONDER, UNLIMITED)
    chunk = big_bytes(SEND_BUFFER_LIMIT // 3)
    per_sender = 12
    received = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender.run)
        nursery.start_soon(receiver.run)

        async def send() -> None:
            for _ in range(per_sender):
                await out.send(chunk)

        async def receive() -> None:
            while len(received) < 3 * per_sender:
                received.append(await inn.recv_message())

        with trio.fail_after(10):  # a sender never woken again would hang here
            async with trio.open_nursery() as flows:
                for _ in range(3):
                    flows.start_soon(send)
                flows.start_soon(receive)
        nursery.cancel_scope.cancel()
    assert received == [chunk] * (3 * per_sender)
