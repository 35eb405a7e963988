"""Connected trio streams and raw SDU helpers shared by the mux tests."""

from __future__ import annotations

from pathlib import Path

import trio
import trio.testing

from ouroboros_mux.bearer import Bearer
from ouroboros_mux.errors import BearerClosed
from ouroboros_mux.sdu import SDU, encode_sdu


async def tcp_stream_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    """Two ends of one real TCP connection on 127.0.0.1: (connecting side, accepting side)."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    try:
        client = await trio.testing.open_stream_to_socket_listener(listeners[0])
        server = await listeners[0].accept()
    finally:
        for listener in listeners:
            await listener.aclose()
    return client, server


async def open_unix_listener(path: Path) -> trio.SocketListener:
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    await sock.bind(str(path))
    sock.listen()
    return trio.SocketListener(sock)


async def unix_stream_pair(path: Path) -> tuple[trio.SocketStream, trio.SocketStream]:
    """Two ends of one real Unix stream socket connection at ``path``."""
    listener = await open_unix_listener(path)
    try:
        client = await trio.open_unix_socket(str(path))
        server = await listener.accept()
    finally:
        await listener.aclose()
    return client, server


def raw_sdu(protocol_num: int, from_responder: bool, payload: bytes, timestamp: int = 0) -> bytes:
    return encode_sdu(SDU(protocol_num, from_responder, payload, timestamp))


async def read_until_closed(bearer: Bearer) -> list[SDU]:
    """Every SDU the peer sends until its end of the stream."""
    sdus = []
    while True:
        try:
            sdus.append(await bearer.read_sdu())
        except BearerClosed:
            return sdus


async def drain_until_closed(stream: trio.abc.ReceiveStream) -> bytes:
    """Every byte until the peer closes (a reset counts as closed)."""
    data = bytearray()
    while True:
        try:
            chunk = await stream.receive_some()
        except trio.BrokenResourceError:
            return bytes(data)
        if not chunk:
            return bytes(data)
        data += chunk
