"""The quick part of the load run (``bench/reliability_load.py`` runs 1 000 signers and 20
peers for minutes): a whole round of Mithril signers connecting at once is queued by the
local socket, not refused."""

from __future__ import annotations

import socket

import trio

from tests.dmq.diffusion.network import MAGIC
from tests.e2e.raw_n2c import ACCEPT, RawN2CClient, accept_version

from .world import start_world

AT_ONCE = 500   # above the old backlog of 128, below a default ``ulimit -n`` of 1 024


async def test_a_round_of_signers_connecting_at_once_is_queued_not_refused(nursery, tmp_path):
    world = await start_world(nursery, tmp_path, MinSigDelay="0")
    sockets, refused = [], 0
    try:
        # Connect every socket before the node's accept loop gets a chance to run.
        for _ in range(AT_ONCE):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                sock.connect(str(world.x.socket))
            except BlockingIOError:
                refused += 1
                sock.close()
                continue
            sockets.append(sock)
        assert refused == 0, f"{refused} of {AT_ONCE} connects refused (listen backlog too short)"
        # Each queued connection is then served: a handshake and one message.
        async def publish(sock: socket.socket, n: int) -> None:
            stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
            async with RawN2CClient(stream) as client:
                assert await client.handshake(MAGIC) == accept_version(MAGIC)
                message = world.honest_message_of(40 + n % 40, n)
                assert await client.submit(message.raw) == ACCEPT
        async with trio.open_nursery() as publishing:
            for n, sock in enumerate(sockets[:100]):
                publishing.start_soon(publish, sock, n)
    finally:
        for sock in sockets[100:]:
            sock.close()
