"""Shared by the client-library and ``dmq`` command tests: a real node on a Unix socket in a
temporary directory (devnet genesis as the stake source, the system clock), the devnet's
Haskell-generated credentials, and the raw SDU reads and writes of a stand-in node that records
exactly what a client sends."""

from __future__ import annotations

import struct
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import trio

from dmq.clock import Clock, SystemClock
from dmq.config import read_config
from dmq.keyfiles import BulkCredential, read_bulk_credentials, write_kes_signing_key, write_operational_certificate
from dmq.cli.wiring import assemble_node
from dmq.node import Node
from tests.conftest import CONFORMANCE

DEVNET = CONFORMANCE / "cardano-devnet"
DEVNET_GENESIS = DEVNET / "shelley-genesis.json"
DEVNET_BULK_CREDENTIALS = DEVNET / "bulk-creds-k2.json"
DEVNET_MAGIC = 2147483690
#: The two genesis pools of the devnet, in the order of the bulk credentials file (docs/protocol/README.md 12.1).
DEVNET_POOL_IDS = (
    "1dc0a846ec816bdcc5288c0b57871a0400e86728ad0851132e43883f",
    "d3e16257b8c608ec4b2cb89621d7ddb60fc08839c1b491a598615fb5",
)


def devnet_credentials() -> list[BulkCredential]:
    return read_bulk_credentials(DEVNET_BULK_CREDENTIALS)


def write_credential_files(directory: Path, index: int) -> tuple[Path, Path]:
    """``kes.skey`` and ``node.cert`` of devnet pool ``index``, as an operator would hold them."""
    credential = devnet_credentials()[index]
    directory.mkdir(parents=True, exist_ok=True)
    kes_path, opcert_path = directory / "kes.skey", directory / "node.cert"
    write_kes_signing_key(kes_path, credential.kes_key)
    write_operational_certificate(opcert_path, credential.opcert, credential.cold_vk)
    return kes_path, opcert_path


@asynccontextmanager
async def running_node(directory: Path, clock: Clock | None = None) -> AsyncIterator[Node]:
    """A node serving ``directory/dmq.socket`` until the block ends."""
    config = read_config({
        "ConfigFile": str(directory / "absent.json"),
        "NetworkMagic": str(DEVNET_MAGIC),
        "LocalAddress": str(directory / "dmq.socket"),
        "StakeSource": "genesis",
        "ShelleyGenesisFile": str(DEVNET_GENESIS),
        "DatabasePath": str(directory / "db"),
    })
    async with trio.open_nursery() as nursery:
        node = await nursery.start(assemble_node(config, None, clock=clock or SystemClock()).run)
        yield node
        nursery.cancel_scope.cancel()


# -- a stand-in node that records raw SDUs --------------------------------------------------

_HEADER = struct.Struct(">IHH")
RESPONDER_BIT = 0x8000


async def unix_listener(path: Path) -> trio.SocketListener:
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    await sock.bind(str(path))
    sock.listen(4)
    return trio.SocketListener(sock)


async def receive_exactly(stream: trio.abc.Stream, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = await stream.receive_some(size - len(data))
        if not chunk:
            raise EOFError(f"stream ended after {len(data)} of {size} bytes")
        data += chunk
    return data


async def read_sdu(stream: trio.abc.Stream) -> tuple[int, bytes]:
    """``(second header word, payload)`` of the next SDU: the word is M << 15 | protocol."""
    _time, word, length = _HEADER.unpack(await receive_exactly(stream, _HEADER.size))
    return word, await receive_exactly(stream, length)


async def write_sdu(stream: trio.abc.Stream, protocol: int, payload: bytes) -> None:
    """Send ``payload`` as the responder instance of ``protocol`` (M = 1)."""
    await stream.send_all(_HEADER.pack(0, RESPONDER_BIT | protocol, len(payload)) + payload)


async def at_eof(stream: trio.abc.Stream) -> bool:
    return await stream.receive_some(1) == b""
