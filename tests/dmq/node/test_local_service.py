"""The node's local service end to end, in process: a real Unix socket, handshake, mux,
protocols 14 and 15, validation against the Haskell-generated devnet, the durable mempool.

The client side here is assembled from the protocol layers directly, sending exactly the
bytes Pallas sends (handshake ``{4097: [magic, false]}``, ``[0, msg]``, ``[3]``, ``[0, true]``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from dmq.clock import ManualClock
from dmq.codec import build_message
from dmq.config import read_config
from dmq.keyfiles import read_bulk_credentials
from dmq.cli.wiring import assemble_node
from handshake.driver import connect_and_handshake
from handshake.links import DMQ_NODE_TO_CLIENT, dmq_node_to_client_versions
from miniprotocols.local_msg_notification import LocalMsgNotificationClient
from miniprotocols.local_msg_submission import (
    ACCEPTED,
    LocalMsgSubmissionClient,
    RejectAlreadyReceived,
    RejectExpired,
    RejectInvalid,
)
from ouroboros_mux.mux import Mode, Mux, Provenance
from tests.conftest import CONFORMANCE

DEVNET = CONFORMANCE / "cardano-devnet"
MAGIC = 2147483690
NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def creds():
    return read_bulk_credentials(DEVNET / "bulk-creds-k2.json")


def _config(tmp_path: Path):
    """Defaults, but the devnet's magic and a stake view from the genesis file (copied to
    the working directory under the reference's default name by ``genesis_config``)."""
    return read_config({
        "ConfigFile": str(tmp_path / "absent.json"),
        "NetworkMagic": str(MAGIC),
        "LocalAddress": str(tmp_path / "dmq.socket"),
        "StakeSource": "genesis",
        "DatabasePath": str(tmp_path / "db"),
    })


def _message(cred, body_byte: int, expires_at: int, kes_period: int = 0):
    body = bytes([body_byte]) * 120
    return build_message(body, kes_period, expires_at, cred.kes_key, cred.opcert, cred.cold_vk)


class _Client:
    """One local connection, as a Mithril signer or aggregator opens it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def __aenter__(self):
        self.bearer, _ = await connect_and_handshake(self.path, dmq_node_to_client_versions(MAGIC), DMQ_NODE_TO_CLIENT)
        self.mux = Mux(self.bearer, Provenance.OUTBOUND)
        self.submission = LocalMsgSubmissionClient(self.mux.register(14, Mode.INITIATOR, 0xFFFFFFFF))
        self.notification = LocalMsgNotificationClient(self.mux.register(15, Mode.INITIATOR, 0xFFFFFFFF))
        self._nursery_cm = trio.open_nursery()
        self._nursery = await self._nursery_cm.__aenter__()
        self._nursery.start_soon(self._run)
        return self

    async def _run(self):
        try:
            await self.mux.run()
        except Exception:
            pass

    async def __aexit__(self, *exc):
        self.mux.stop()
        self._nursery.cancel_scope.cancel()
        await self._nursery_cm.__aexit__(None, None, None)


async def _start(tmp_path, clock, nursery):
    return await nursery.start(assemble_node(_config(tmp_path), None, clock=clock).run)


@pytest.fixture
def genesis_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mainnet-shelley-genesis.json").write_bytes((DEVNET / "shelley-genesis.json").read_bytes())
    return tmp_path


async def test_publish_then_subscribe_and_rejects(genesis_config, creds):
    tmp_path = genesis_config
    clock = ManualClock(now=NOW)
    async with trio.open_nursery() as nursery:
        node = await _start(tmp_path, clock, nursery)
        first = _message(creds[0], 1, int(NOW) + 1700)
        async with _Client(tmp_path / "dmq.socket") as c:
            assert await c.submission.submit(first.raw) is ACCEPTED
            await c.submission.done()
        # The same bytes again: alreadyReceived. Another message of the pool within 60 s: invalid.
        async with _Client(tmp_path / "dmq.socket") as c:
            assert await c.submission.submit(first.raw) == RejectAlreadyReceived()
            verdict = await c.submission.submit(_message(creds[0], 2, int(NOW) + 1700).raw)
            assert isinstance(verdict, RejectInvalid) and verdict.text.startswith("SigTooFrequent")
            assert await c.submission.submit(_message(creds[1], 3, int(NOW) - 1).raw) == RejectExpired()
            second = _message(creds[1], 4, int(NOW) + 1700)
            assert await c.submission.submit(second.raw) is ACCEPTED
        # A late subscriber gets the history, in order, as the exact received bytes.
        async with _Client(tmp_path / "dmq.socket") as c:
            msgs, has_more = await c.notification.request(blocking=False)
            assert list(msgs) == [first.raw, second.raw] and has_more is False
            msgs, _ = await c.notification.request(blocking=False)
            assert list(msgs) == []
            # A blocking request waits for the next accepted message.
            clock.advance(61)
            third = _message(creds[0], 5, int(clock.now()) + 1700)
            async with trio.open_nursery() as inner:
                got = []

                async def wait():
                    got.extend((await c.notification.request(blocking=True))[0])

                inner.start_soon(wait)
                await trio.sleep(0.05)
                assert got == []
                async with _Client(tmp_path / "dmq.socket") as p:
                    assert await p.submission.submit(third.raw) is ACCEPTED
            assert got == [third.raw]
        assert len(node.mempool) == 3
        nursery.cancel_scope.cancel()


async def test_undecodable_message_closes_only_that_connection(genesis_config, creds):
    tmp_path = genesis_config
    clock = ManualClock(now=NOW)
    async with trio.open_nursery() as nursery:
        await _start(tmp_path, clock, nursery)
        async with _Client(tmp_path / "dmq.socket") as good:
            bad_bearer, _ = await connect_and_handshake(tmp_path / "dmq.socket", dmq_node_to_client_versions(MAGIC),
                                                        DMQ_NODE_TO_CLIENT)
            bad = Mux(bad_bearer, Provenance.OUTBOUND)
            client = LocalMsgSubmissionClient(bad.register(14, Mode.INITIATOR, 0xFFFFFFFF))
            with pytest.raises(Exception):
                async with trio.open_nursery() as n:
                    n.start_soon(bad.run)
                    await client.submit(bytes.fromhex("83010203"))  # CBOR, not a DMQ message
            # The other client is still served.
            msg = _message(creds[0], 9, int(NOW) + 1700)
            assert await good.submission.submit(msg.raw) is ACCEPTED
        nursery.cancel_scope.cancel()


async def test_restart_serves_what_was_acknowledged(genesis_config, creds):
    tmp_path = genesis_config
    clock = ManualClock(now=NOW)
    sent = [_message(creds[0], 1, int(NOW) + 100), _message(creds[1], 2, int(NOW) + 1000)]
    async with trio.open_nursery() as nursery:
        await _start(tmp_path, clock, nursery)
        async with _Client(tmp_path / "dmq.socket") as c:
            for m in sent:
                assert await c.submission.submit(m.raw) is ACCEPTED
        nursery.cancel_scope.cancel()
    clock.advance(200)  # the first one expired meanwhile
    async with trio.open_nursery() as nursery:
        node = await _start(tmp_path, clock, nursery)
        async with _Client(tmp_path / "dmq.socket") as c:
            msgs, _ = await c.notification.request(blocking=False)
            assert list(msgs) == [sent[1].raw]
            # The rate limit survived the restart: pool 1 sent 200 s ago, pool 0 too.
            assert await c.submission.submit(_message(creds[1], 7, int(clock.now()) + 1000).raw) is ACCEPTED
        assert len(node.mempool) == 2
        nursery.cancel_scope.cancel()
