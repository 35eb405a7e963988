"""The dmsg adapter in the real topic pipeline: entries wrapped by nodes, diffused, looked up
(6.4), refreshed under the publication limit, kept across a restart, pruned at T + W; and the
Blocklace adapter's state reloaded from LMDB after a restart."""

from __future__ import annotations

import argparse
import json

import pytest
import trio

from dmq.clock import ManualClock
from dmq.errors import OperatorError
from topics.classify import TAG_DMSG
from topics.dmsg.adapter import REFRESH_INTERVAL
from topics.dmsg.entry import WINDOW
from topics.envelope import encode_envelope
from tests.topics.blocklace.cluster import Cluster, open_node, pools_for
from tests.topics.blocklace.world import ALL, NOW, Author, ad_payload, advertisement, event, pool

from .test_dmsg import _static, entry


def _body(raw_entry: bytes) -> bytes:
    return encode_envelope(TAG_DMSG, 0, raw_entry)


def _relay(node, target: int, now: float):
    with node.ingress.dbs.reading("dmsg") as view:
        found = node.dmsg.find_relay(view, _static(target), now)
    return None if found is None else found.static


@pytest.mark.trio
async def test_entries_diffuse_refresh_survive_restart_and_expire(tmp_path):
    clock = ManualClock(NOW)
    pools = pools_for(4)
    nodes = [open_node(tmp_path / f"n{i}", f"n{i}", pool(i), clock, pools) for i in range(3)]
    async with trio.open_nursery() as nursery:
        for node in nodes:
            await nursery.start(node.run)
        cluster = Cluster(nodes)
        assert (await nodes[0].publish(_body(entry(1, servers=[10, 11])))).accepted
        assert (await nodes[1].publish(_body(entry(10, address="203.0.113.10:80", sessions=0)))).accepted
        assert (await nodes[2].publish(_body(entry(11, address="203.0.113.11:80")))).accepted
        await cluster.settle()
        for node in nodes:
            assert _relay(node, 1, NOW) == _static(11)             # D4 on every node

        # a refresh of the same key inside 60 s is refused at the publishing node; the wrapping
        # of a given entry has one DMQ id, so the client retries with a newly signed entry
        early = await nodes[0].publish(_body(entry(1, seq=1, ts=NOW + 1, servers=[10])))
        assert early.reject is not None and early.reject.reason.name == "rate_limited"
        clock.advance(REFRESH_INTERVAL)
        assert (await nodes[0].publish(_body(entry(1, seq=1, ts=NOW + REFRESH_INTERVAL, servers=[10])))).accepted
        await cluster.settle()
        assert all(_relay(node, 1, clock.now()) is None for node in nodes)   # 10 is full now

        # a replay of the old entry, wrapped by another pool, is stale everywhere
        replay = pool(3).sign(_body(entry(1, servers=[10, 11])), expires_at=int(clock.now()) + 200)
        for node in nodes:
            error = await node.submit_local(replay.raw)
            assert error is not None and error.reason == "stale"

        # restart node 2 from its LMDB: the entries and the sequence memory are still there
        await nodes[2].stop()
        nodes[2] = open_node(tmp_path / "n2", "n2", pool(2), clock, pools)
        await nursery.start(nodes[2].run)
        with nodes[2].ingress.dbs.reading("dmsg") as view:
            assert nodes[2].dmsg.find_relay(view, _static(1), clock.now()) is None
            assert len(list(view.scan("entry"))) == 3
        replay2 = pool(3).sign(_body(entry(1, servers=[10, 11])), expires_at=int(clock.now()) + 150)
        error = await nodes[2].submit_local(replay2.raw)
        assert error is not None and error.reason == "stale"

        # past T + W the entries are dropped by prune, the sequence memory stays
        clock.advance(WINDOW + 1)
        await nodes[2].ingress.prune()
        with nodes[2].ingress.dbs.reading("dmsg") as view:
            assert list(view.scan("entry")) == []
            assert len(list(view.scan("seq"))) == 3
        nursery.cancel_scope.cancel()
    for node in nodes:
        node.close()


@pytest.mark.trio
async def test_blocklace_state_reloads_after_restart(tmp_path):
    clock = ManualClock(NOW)
    pools = pools_for(4)
    async with trio.open_nursery() as nursery:
        node = open_node(tmp_path / "n", "n", pool(0), clock, pools)
        await nursery.start(node.run)
        authors = [Author(pool(i)) for i in range(3)]
        ad0 = authors[0].block(ad_payload(advertisement(0, {pool(i).id: ALL for i in range(3)})))
        a = authors[1].block(event(b"a"), others=[ad0.message_id])
        authors[1].seq, authors[1].last = 0, None
        b = authors[1].block(event(b"b"), others=[ad0.message_id])
        for message in (ad0, a, b):
            assert await node.submit_local(message.raw) is None
        before = (set(node.blocklace.lace.blocks), node.blocklace.equivocations())
        await node.stop()
        node = open_node(tmp_path / "n", "n", pool(0), clock, pools)
        await nursery.start(node.run)
        with node.ingress.dbs.reading("blocklace") as view:
            node.blocklace.due_publications(view, clock.now())          # first hook call reloads
        assert (set(node.blocklace.lace.blocks), node.blocklace.equivocations()) == before
        later = authors[1].block(event(b"later"), others=[])
        error = await node.submit_local(later.raw)
        assert error is not None and error.reason == "equivocator_excluded"
        nursery.cancel_scope.cancel()
    node.close()


def _topic_command(argv: list[str]) -> int:
    from dmq.cli.topic_queries import register

    parser = argparse.ArgumentParser(prog="dmq topic")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.mark.trio
async def test_topic_commands_read_a_stopped_node(tmp_path, capsys):
    clock = ManualClock(NOW)
    pools = pools_for(3)
    async with trio.open_nursery() as nursery:
        node = open_node(tmp_path / "n", "n", pool(0), clock, pools)
        await nursery.start(node.run)
        author = Author(pool(1))
        ad0 = Author(pool(0)).block(ad_payload(advertisement(0, {pool(i).id: ALL for i in range(3)})))
        a = author.block(event(b"a"), others=[ad0.message_id])
        author.seq, author.last = 0, None
        b = author.block(event(b"b"), others=[ad0.message_id])
        for message in (ad0, a, b):
            assert await node.submit_local(message.raw) is None
        for raw in (entry(1, servers=[11]), entry(11, address="203.0.113.11:80")):
            assert (await node.publish(_body(raw))).accepted
            clock.advance(1)
        await node.stop()
        nursery.cancel_scope.cancel()
    db = str(tmp_path / "n")
    assert _topic_command(["equivocations", "--database-path", db, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["kind"], r["culprit"], r["verified"]) for r in rows] == [("same_seq", pool(1).id.hex(), True)]
    assert sorted((rows[0]["a"], rows[0]["b"])) == sorted((a.message_id.hex(), b.message_id.hex()))
    assert _topic_command(["find-relay", _static(1), "--database-path", db, "--now", str(NOW + 2)]) == 0
    assert capsys.readouterr().out.startswith(_static(11) + " 203.0.113.11:80")
    assert _topic_command(["find-relay", _static(11), "--database-path", db, "--now", str(NOW + 2)]) == 1
    with pytest.raises(OperatorError):
        _topic_command(["equivocations", "--database-path", str(tmp_path / "nothing")])
