"""Faults at a running node, the quick variants; ``bench/reliability_faults.py`` runs them at length.

SIGKILL under load, a torn page and changed bytes in ``data.mdb``, a full disk, clock jumps
and cardano-node going away. The promise each time: nothing acknowledged is lost, nothing
expired or invalid is served, and the node either keeps serving or stops with one line.
The single SIGKILL with rejected messages in the stream is
``tests/e2e/test_crash_recovery.py``; SIGKILL of the store alone, many times, is
``tests/dmq/mempool/test_mempool_crash.py``; the cardano-node link's own reconnects are
``tests/dmq/cardano_node/test_link.py::test_cardano_node_disappears_and_comes_back``.
"""

from __future__ import annotations

import os
import random

import pytest
import trio

from dmq.clock import ManualClock
from miniprotocols.local_msg_submission import ACCEPTED, RejectExpired, RejectInvalid
from tests.dmq.cardano_node.fake_node import FakeCardanoNode, FakeChain
from tests.dmq.cardano_node.helpers import eventually
from tests.dmq.cardano_node.test_node_with_cardano_node import NOW as CARDANO_NOW, _config, _message, _submit
from tests.dmq.diffusion.network import LocalClient, pool
from tests.e2e.messages import devnet_signers
from tests.e2e.node_process import NodeExited
from tests.e2e.raw_n2c import ACCEPT, ConnectionLost, publish_like_mithril_signer
from dmq.keyfiles import read_bulk_credentials
from dmq.cli.wiring import assemble_node
from dmq.cardano_node import Backoff
from tests.conftest import CONFORMANCE

from .faults import MAGIC, SizeLimitedNode, devnet_node, fill_database, kill_trial, served_now, tear_a_page
from .world import start_world


@pytest.fixture(scope="module")
def signers():
    return devnet_signers()


async def test_random_sigkills_under_load_lose_nothing_acknowledged(tmp_path, signers):
    node = devnet_node(tmp_path / "n").start()
    rng = random.Random(7)
    earlier: set[bytes] = set()
    try:
        for _ in range(1):
            trial = await kill_trial(node, signers, rng, earlier=earlier)
            earlier |= set(trial.acknowledged) | set(trial.unanswered)
            assert trial.acknowledged and trial.rejected
            assert not trial.lost, f"{len(trial.lost)} acknowledged messages lost"
            assert not trial.expired_served and not trial.unexpected
    finally:
        node.kill()


async def test_a_damaged_database_stops_the_node_with_one_line(tmp_path, signers):
    workdir = tmp_path / "n"
    node = devnet_node(workdir)
    fill_database(workdir / "db", signers, 100)
    rng = random.Random(3)
    data = workdir / "db" / "data.mdb"
    for _ in range(data.stat().st_size // 4096):
        tear_a_page(data, rng, length=4000)
    with pytest.raises(NodeExited):
        node.start()
    lines = node.stderr_path.read_text().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dmq-node: database db is damaged"), lines
    assert "move the directory aside" in lines[0]


async def test_bytes_changed_on_disk_are_never_served(tmp_path, signers):
    workdir = tmp_path / "n"
    node = devnet_node(workdir)
    raws = fill_database(workdir / "db", signers, 20)
    data = workdir / "db" / "data.mdb"
    content = bytearray(data.read_bytes())
    victim = raws[7]
    body_at = content.find(victim[40:100])          # inside the payload of one stored message
    assert body_at > 0
    content[body_at + 10] ^= 0x01
    data.write_bytes(content)
    node.start()
    try:
        served, _ = await served_now(node)
    finally:
        node.kill()
    assert served == raws[:7] + raws[8:]


async def test_a_full_disk_refuses_submissions_cleanly_and_loses_nothing(tmp_path, signers):
    workdir = tmp_path / "n"
    node = devnet_node(workdir, SizeLimitedNode).start()
    acknowledged, refused = [], []
    try:
        for i in range(400):
            raw = signers[i % 2].sign(body=os.urandom(1500)).raw
            try:
                reply = await publish_like_mithril_signer(node.socket_path, MAGIC, raw)
            except ConnectionLost:
                refused.append(raw)          # closed without a reply: never acknowledged
                if len(refused) >= 10:
                    break
                continue
            assert reply == ACCEPT
            acknowledged.append(raw)
        assert len(refused) >= 10 and node.running, "the disk never filled, or the node died"
        served, _ = await served_now(node)   # still serving readers while full
        assert served == acknowledged
        closes = [e["error"] for e in node.trace_events("ConnectionClosed") if e.get("error")]
        assert any("MempoolWriteError" in error for error in closes)
    finally:
        node.kill()
    unlimited = devnet_node(workdir).start()   # the same database, space again
    try:
        served, _ = await served_now(unlimited)
        assert set(acknowledged) <= set(served) <= set(acknowledged) | set(refused)
        raw = signers[0].sign().raw
        assert await publish_like_mithril_signer(unlimited.socket_path, MAGIC, raw) == ACCEPT
    finally:
        unlimited.kill()


async def test_clock_jumps_expire_by_the_wall_clock_and_rate_limit_by_the_signed_times(nursery, tmp_path):
    world = await start_world(nursery, tmp_path)
    clock: ManualClock = world.clock
    async with LocalClient(world.x.socket) as client:
        held = pool(1).sign(1, world.now() + 600)
        assert await client.submission.submit(held.raw) == ACCEPTED
        # Forward one hour: the message expired and is served to no one, new ones are fine.
        clock.set_wall(clock.now() + 3600)
        await eventually(lambda: not world.x.node.mempool.contains(held.message_id), "the message purged")
        raws, _ = await client.notification.request(blocking=False)
        assert held.raw not in raws
        assert await client.submission.submit(held.raw) == RejectExpired()
        # The rate limit reads the times pool 1 signed (docs/protocol/validation.md 6.12), not the
        # clocks: an hour after its last one in signed time a message passes though no monotonic
        # time went by, and one signed 30 s after that is too frequent.
        again_expires = world.now() + 600
        again = pool(1).sign(2, again_expires)
        assert await client.submission.submit(again.raw) == ACCEPTED
        close = pool(1).sign(3, world.now() + 630)
        reply = await client.submission.submit(close.raw)
        assert isinstance(reply, RejectInvalid) and reply.text.startswith("SigTooFrequent")
        assert reply.text.endswith(" 30s")
        # Jumping back 20 minutes neither extends the limit nor opens it: a message signed
        # 20 minutes before ``again`` passes, one signed 30 s before it does not.
        clock.set_wall(clock.now() - 1200)
        clock.advance(61)
        later = pool(1).sign(4, world.now() + 600)
        assert await client.submission.submit(later.raw) == ACCEPTED
        squeezed = pool(1).sign(5, again_expires - 30)
        assert (await client.submission.submit(squeezed.raw)).text.startswith("SigTooFrequent")
        raws, _ = await client.notification.request(blocking=False)
        assert raws == (again.raw, later.raw)


async def test_cardano_node_vanishing_keeps_the_last_stake_map(tmp_path):
    creds = read_bulk_credentials(CONFORMANCE / "cardano-devnet" / "bulk-creds-k2.json")
    chain = FakeChain.devnet(epoch=30)
    fake = FakeCardanoNode(tmp_path / "node.socket", chain)
    clock = ManualClock(now=CARDANO_NOW)
    node = assemble_node(_config(tmp_path), None, clock=clock)
    node.stake_link.backoff = Backoff(initial=0.02, maximum=0.1, jitter=0)
    status = node.stake_link_status
    local = tmp_path / "dmq.socket"
    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        await fake.start(nursery)
        await eventually(lambda: status.ready and status.connected, "the stake view ready")
        assert await _submit(local, _message(creds[0], 1).raw) is ACCEPTED
        fake.stop()                                   # the socket vanishes
        await eventually(lambda: not status.connected, "the link noticing")
        assert not (tmp_path / "node.socket").exists()
        # Validation goes on against the last snapshot, for every pool it listed.
        assert await _submit(local, _message(creds[1], 2).raw) is ACCEPTED
        assert status.ready and status.epoch == 30
        await fake.start(nursery)
        await eventually(lambda: status.connected, "reconnected")
        clock.advance(61)
        # Signed 61 s after pool 0's first one: past its rate limit.
        assert await _submit(local, _message(creds[0], 3, int(CARDANO_NOW) + 1761).raw) is ACCEPTED
        assert len(node.mempool) == 3
        nursery.cancel_scope.cancel()
    assert fake.violations == []
