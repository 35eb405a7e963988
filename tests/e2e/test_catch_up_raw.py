"""Raw messages: a node that starts empty, or comes back from a partition, gets every unexpired
message its peers hold, with the default configuration (``MinSigDelay`` 60 s).

The backlog is a history as a Mithril signer builds it: each pool's messages signed 60 s apart
(``expiresAt`` 60 s apart), all of them still alive. A peer offers it in one burst; check 3 counts
the times the pools signed, not arrivals (docs/protocol/validation.md 6.9), so all of it is
accepted: nothing missing, nothing twice, no peer disconnected, no error-level line. The
reference node, which spaces arrivals, keeps one message per pool per minute of such a burst
and disconnects the peer that offers the next.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterable

import pytest
import trio

from lab.devnet.topology import topology_document
from tests.e2e.catch_up import assert_caught_up_cleanly
from tests.e2e.messages import DMQ_DEVNET_MAGIC as MAGIC, Signer, now_s
from tests.e2e.node_process import NodeProcess
from tests.e2e.raw_n2c import ACCEPT, publish_like_mithril_signer, read_everything
from tests.e2e.topic_node import n2n_port

pytestmark = pytest.mark.trio

#: 60 s apart in signed time: the spacing the default configuration asks of a pool.
SPACING = 60


def history(signer: Signer, count: int, first_expiry: int) -> list[bytes]:
    """``count`` messages of one pool, signed ``SPACING`` s apart (the newest expires last)."""
    return [signer.sign(expires_at=first_expiry + SPACING * k).raw for k in range(count)]


async def publish_all(node: NodeProcess, messages: Iterable[bytes]) -> None:
    for raw in messages:
        assert await publish_like_mithril_signer(node.socket_path, MAGIC, raw) == ACCEPT


def dial(workdir, peers: list[NodeProcess]) -> None:
    """The node in ``workdir`` dials ``peers`` (its topology file)."""
    workdir.mkdir(exist_ok=True)
    document = topology_document([("127.0.0.1", n2n_port(p)) for p in peers])
    (workdir / "dmq.topology.json").write_text(json.dumps(document))


async def holds(node: NodeProcess, wanted: set[bytes], timeout: float = 60.0) -> list[bytes]:
    """What ``node`` serves a new notification client, once that includes all of ``wanted``."""
    deadline = time.monotonic() + timeout
    while True:
        node.check_running()
        served = await read_everything(node.socket_path, MAGIC)
        if wanted <= set(served):
            return served
        if time.monotonic() > deadline:
            raise AssertionError(f"{node.workdir.name}: {len(wanted - set(served))} of {len(wanted)} "
                                 f"messages missing after {timeout} s")
        await trio.sleep(0.2)


def assert_complete(served: list[bytes], expected: set[bytes]) -> None:
    assert len(served) == len(set(served)), "a message served twice"
    assert set(served) == expected, f"{len(expected - set(served))} missing, {len(set(served) - expected)} unexpected"


async def test_a_fresh_node_dialling_a_loaded_peer_gets_its_whole_backlog(start_node, signers, tmp_path):
    loaded = start_node("loaded")
    pool0, pool1 = signers
    backlog = history(pool0, 15, now_s() + 800) + history(pool1, 10, now_s() + 900)
    await publish_all(loaded, backlog)

    dial(tmp_path / "fresh", [loaded])
    fresh = start_node("fresh")
    served = await holds(fresh, set(backlog))
    assert_complete(served, set(backlog))
    for node in (loaded, fresh):
        assert_caught_up_cleanly(node)


async def test_a_partition_heals_and_each_side_gets_what_the_other_accepted(start_node, signers, tmp_path):
    """``left`` and ``right`` reach each other only through ``bridge``. The bridge goes down (a
    partition: both sides stay up and keep accepting the same pools' messages), then comes back
    on its database and dials both: every node ends with the union, each message once."""
    left, right = start_node("left"), start_node("right")
    dial(tmp_path / "bridge", [left, right])
    bridge = start_node("bridge")
    pool0, pool1 = signers
    start = now_s() + 300
    # Before: one message of each pool, through the bridge to the other side.
    before = [pool0.sign(expires_at=start).raw, pool1.sign(expires_at=start).raw]
    await publish_all(left, before[:1])
    await publish_all(right, before[1:])
    for node in (left, right, bridge):
        await holds(node, set(before))

    bridge.kill(signal.SIGTERM)
    # During: each side's signers go on, every pool's messages 60 s apart in signed time, on
    # whichever side its signer reaches.
    on_left = [pool0.sign(expires_at=start + SPACING * k).raw for k in range(1, 8)]
    on_left += [pool1.sign(expires_at=start + SPACING * k).raw for k in range(1, 8, 2)]
    on_right = [pool1.sign(expires_at=start + SPACING * k).raw for k in range(2, 8, 2)]
    on_right += [pool0.sign(expires_at=start + SPACING * k).raw for k in range(8, 12)]
    await publish_all(left, on_left)
    await publish_all(right, on_right)

    bridge.start()
    everything = set(before + on_left + on_right)
    for node in (left, right, bridge):
        assert_complete(await holds(node, everything), everything)
    for node in (left, right, bridge):
        assert_caught_up_cleanly(node)
