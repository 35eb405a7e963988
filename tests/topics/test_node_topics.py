"""A whole node with topics enabled (in process): configuration refusals, the Mithril path's
bytes next to a raw-only node, and the ``dmq topic`` commands against it."""

from __future__ import annotations

import pytest
import trio

from dmq.cli import tool
from dmq.clock import ManualClock
from dmq.config import ConfigError, load_config, read_config
from dmq.cli.wiring import assemble_node
from tests.e2e.raw_n2c import RawN2CClient

from .harness import DEVNET, NOW, TOPIC_MAGIC, sign

MITHRIL_DEVNET_MAGIC = 2147483690


def _config(tmp_path, magic: int, carried: str, db: str):
    return read_config({
        "ConfigFile": str(tmp_path / "absent.json"),
        "NetworkMagic": str(magic),
        "LocalAddress": str(tmp_path / f"{db}.socket"),
        "StakeSource": "genesis",
        "DatabasePath": str(tmp_path / db),
        "TopicsCarried": carried,
    })


@pytest.fixture
def genesis_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mainnet-shelley-genesis.json").write_bytes((DEVNET / "shelley-genesis.json").read_bytes())
    return tmp_path


def test_an_adapter_on_a_mithril_magic_is_refused_in_one_line(tmp_path):
    config = _config(tmp_path, MITHRIL_DEVNET_MAGIC, "raw,upsycle", "db")
    with pytest.raises(ConfigError) as refused:
        load_config({"ConfigFile": str(tmp_path / "absent.json"), "IPv4": "127.0.0.1",
                     "NetworkMagic": str(MITHRIL_DEVNET_MAGIC), "TopicsCarried": "raw,upsycle"})
    text = str(refused.value)
    assert "\n" not in text and "upsycle" in text and str(MITHRIL_DEVNET_MAGIC) in text
    assert config.is_mithril_network and not _config(tmp_path, TOPIC_MAGIC, "raw,upsycle", "x").is_mithril_network


async def _mithril_bytes(tmp_path, carried: str, db: str) -> list[bytes]:
    clock = ManualClock(now=NOW)
    raw = sign(b"\x00\x70" + b"m" * 112, int(NOW) + 1700)
    async with trio.open_nursery() as nursery:
        node = await nursery.start(assemble_node(_config(tmp_path, TOPIC_MAGIC, carried, db), None, clock=clock).run)
        async with await RawN2CClient.connect(tmp_path / f"{db}.socket") as client:
            seen = [await client.handshake(TOPIC_MAGIC), await client.submit(raw.raw),
                    await client.submit(raw.raw), await client.request(False)]
        assert (node.topics is not None) == ("upsycle" in carried)
        nursery.cancel_scope.cancel()
    return seen


@pytest.mark.trio
async def test_mithril_pattern_client_sees_the_same_bytes_on_a_topic_node(genesis_config):
    topic_node = await _mithril_bytes(genesis_config, "raw,upsycle", "topic-db")
    raw_node = await _mithril_bytes(genesis_config, "raw", "raw-db")
    assert topic_node == raw_node


@pytest.mark.trio
async def test_topic_commands_against_a_node(genesis_config, capsys):
    clock = ManualClock(now=NOW)
    config = _config(genesis_config, TOPIC_MAGIC, "raw,dmsg", "db")
    socket = str(genesis_config / "db.socket")
    connection = ["--socket", socket, "--magic", str(TOPIC_MAGIC)]
    async with trio.open_nursery() as nursery:
        node = await nursery.start(assemble_node(config, None, clock=clock).run)
        message = sign(b"\x00\x70" + b"c" * 112, int(NOW) + 1700)
        assert await node.ingress.submit_local(message.raw) is None
        status = await trio.to_thread.run_sync(
            tool.run, ["topic", "subscribe", *connection, "--start", "retained", "--non-blocking"])
        assert status == 0
        listed = capsys.readouterr().out.splitlines()
        assert len(listed) == 1 and listed[0].startswith("sub=0 dseq=0 kind=message adapter=raw")
        assert f"pool={message.pool_id.hex()}" in listed[0] and f"payload={message.body.hex()}" in listed[0]
        status = await trio.to_thread.run_sync(
            tool.run, ["topic", "publish", *connection, "--body-hex", "d994fb" + "00" * 100])
        nursery.cancel_scope.cancel()
    captured = capsys.readouterr()
    assert status == 1 and "no_signer" in captured.err
