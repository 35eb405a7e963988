"""A node with the default topic configuration (raw only, here on the Mithril devnet's magic)
classifies nothing: a valid message whose body happens to start with an adapter tag is
accepted on the local socket, notified, and diffused to a peer, as the reference node does
(docs/topics-design.md 2.1). Refusing it would split such a network from its reference nodes."""

from __future__ import annotations

import json

import cbor2
import pytest
import trio

from lab.devnet.topology import topology_document
from tests.e2e.messages import DMQ_DEVNET_MAGIC, generated_signer
from tests.e2e.raw_n2c import ACCEPT, RawN2CClient
from topics.classify import TAG_RANGE, tag_head

from .topic_node import n2n_port

pytestmark = pytest.mark.trio


async def notified(node, count: int) -> list:
    """The messages the node notifies on protocol 15 (decoded), once there are ``count`` of them."""
    held: list[bytes] = []
    with trio.fail_after(20):
        async with await RawN2CClient.connect(node.socket_path) as client:
            await client.handshake(DMQ_DEVNET_MAGIC)
            while len(held) < count:
                _, batch, _ = cbor2.loads(await client.request(False))
                held += batch
                await trio.sleep(0.05)
    return held


async def test_tagged_bodies_are_accepted_notified_and_diffused_by_a_raw_only_node(start_node, tmp_path):
    # One pool per message: the reference rule of one message per pool per 60 s holds here.
    pools = [generated_signer(100 + n) for n in range(len(TAG_RANGE))]
    stake = {"epoch": 1, "pools": {p.pool_id.hex(): 1_000_000 for p in pools}}
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "stake.json").write_text(json.dumps(stake))
    a = start_node("a", StakeSource="stake.json")
    (tmp_path / "b" / "dmq.topology.json").write_text(json.dumps(topology_document([("127.0.0.1", n2n_port(a))])))
    b = start_node("b", StakeSource="stake.json")
    # Mithril-shaped (a u16 length, then the signature message) behind each adapter tag's head.
    messages = [signer.sign(body=tag_head(tag) + b"\x00\x70" + b"m" * 112)
                for signer, tag in zip(pools, TAG_RANGE)]
    async with await RawN2CClient.connect(a.socket_path) as client:
        await client.handshake(DMQ_DEVNET_MAGIC)
        for message in messages:
            assert await client.submit(message.raw) == ACCEPT
    expected = [cbor2.loads(m.raw) for m in messages]
    assert await notified(a, len(messages)) == expected
    diffused = await notified(b, len(messages))
    assert sorted(map(cbor2.dumps, diffused)) == sorted(map(cbor2.dumps, expected))
    assert not [e for e in a.trace_events("MessageRejected") + b.trace_events("MessageRejected")]
