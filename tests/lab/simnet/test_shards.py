"""One simulated network on two processes (lab.simnet.shards): the split, the links across it, the
merged report, and a failure in either process."""

from __future__ import annotations

import errno
import multiprocessing
import select
import socket
import struct
from dataclasses import replace
from types import SimpleNamespace

import pytest
import trio

from dmq.cli.wiring import assemble_node
from lab.simnet import SimnetOptions, run_simnet
from lab.simnet.collector import CollectorTime
from lab.simnet.links import LinkModel, SimNetwork
from lab.simnet.regions import REGIONS, place_nodes, rtt_ms
from lab.simnet.run import run_on_virtual_clock
from lab.simnet.shards import Shard, run_sharded, split_problem, split_regions

from .test_simnet import _seeded_difference

_OPTIONS = SimnetOptions(nodes=30, pools=60, period=10.0, duration=20.0, active_peers=4, kill_fraction=0.0,
                         partition_fraction=0.0, flood=False, warmup=10.0, drain=60.0, seed=3)


def test_the_split_keeps_regions_whole_halves_the_nodes_and_takes_the_farthest_apart_sides():
    regions = place_nodes(1000, 1)
    owner, lookahead = split_regions(regions, lambda a, b: rtt_ms(a, b) / 1000)
    sides = {region: {owner[i] for i, r in enumerate(regions) if r == region} for region in set(regions)}
    assert all(len(side) == 1 for side in sides.values()), sides
    assert abs(owner.count(0) - owner.count(1)) <= 0.1 * 1000
    # The lookahead is half the shortest round trip across: Europe's regions are on one side, the
    # Americas' and Asia's round trips to them (80.5 ms Ireland to Virginia the shortest) across.
    europe = {REGIONS.index("eu-west-1"), REGIONS.index("eu-central-1")}
    assert len({sides[region].pop() for region in europe}) == 1
    across = [rtt_ms(a, b) for a in set(regions) for b in set(regions)
              if owner[regions.index(a)] != owner[regions.index(b)]]
    assert lookahead == pytest.approx(min(across) / 2000) == pytest.approx(0.04025)


def test_what_a_split_run_cannot_have_is_named_in_one_line():
    assert split_problem(_OPTIONS) is None
    problem = split_problem(replace(_OPTIONS, kill_fraction=0.1, flood=True))
    assert problem is not None and "kills" in problem and "a flood" in problem and "\n" not in problem
    with pytest.raises(ValueError, match="partitions"):
        run_simnet(replace(_OPTIONS, partition_fraction=0.2), assemble_node, processes=2)
    with pytest.raises(ValueError, match="one process or two"):
        run_simnet(_OPTIONS, assemble_node, processes=3)


def test_a_run_over_two_processes_delivers_every_message_once_with_every_hop_known_and_repeats_itself():
    first = run_simnet(_OPTIONS, assemble_node, processes=2)
    assert first.accepted == first.attempted == 120, first.lines()
    assert first.missing == 0 and first.duplicates == 0 and first.unknown_hops == 0, first.lines()
    # Messages crossed between the processes: each node sees every message, and the hops counted
    # across the split continue the sender's (a node of one process got most from the other's).
    assert first.hops["max"] >= 3 and first.latency["count"] == 120 * 29
    assert first.bytes_per_message_per_node > first.message_size
    processes = first.cost["processes"]
    assert [part["nodes"] for part in processes] == [15, 15]
    assert all(part["windows"] > 700 and part["mib_exchanged"] > 0 for part in processes), processes
    # Where each process waited for the other, phase by phase: all of its waiting but what came
    # after the drain's end, and never more than the phase's own wall time.
    for part in processes:
        waiting, walls = part["wall_seconds_waiting_by_phase"], part["wall_seconds_by_phase"]
        assert list(waiting) == list(walls) == ["pools", "start", "connect", "idle", "publishing", "drain"]
        assert all(0 <= waiting[phase] <= walls[phase] + 0.1 for phase in waiting), part
        assert sum(waiting.values()) <= part["wall_seconds_waiting"] + 0.1 and waiting["publishing"] > 0, part
    assert first.received_messages["decoded"] >= 29 * 120
    second = run_simnet(_OPTIONS, assemble_node, processes=2)
    assert not (differing := _seeded_difference(first, second)), differing


class _Exchange:
    """A stand-in for the simulation around two linked nodes (one per process): node 1 listens;
    node 0 dials a port with no listener, then node 1's, and writes; node 1 answers each read."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        self.options = SimpleNamespace(seed=1)
        self.collector = CollectorTime()
        self.net = SimNetwork(LinkModel(rtt=lambda a, b: 0.1, jitter=0.0, rate_bps=None), ["10.0.0.1", "10.0.0.2"])
        shard.attach(self.net)

    async def run(self) -> dict:
        transport = self.net.transport(self.shard.index)
        seen: dict = {}
        if self.shard.index == 1:
            [(listener, _)] = await transport.listen("10.0.0.2", 3001)
            stream = await listener.accept()
            seen["accepted_at"] = trio.current_time()
            while data := await stream.receive_some():
                seen.setdefault("reads", []).append((round(trio.current_time(), 6), data))
                await stream.send_all(data.upper())
            seen["eof_at"] = trio.current_time()
            await trio.sleep(1)
        else:
            await trio.sleep(0.01)
            try:
                await transport.connect("10.0.0.2", 9)
            except OSError as exc:
                seen["refused"] = (exc.errno, round(trio.current_time(), 6))
            bearer = await transport.connect("10.0.0.2", 3001)
            stream = bearer.stream
            seen["connected_at"] = round(trio.current_time(), 6)
            for word in (b"one", b"two"):
                await stream.send_all(word)
                seen.setdefault("answers", []).append((await stream.receive_some(), round(trio.current_time(), 6)))
            await stream.aclose()
            await trio.sleep(1)
        return seen


def test_a_link_across_the_processes_keeps_its_latency_refuses_and_ends():
    # The round trip is 100 ms, so windows of 50 ms: a connection refused after one round trip, one
    # accepted half a round trip after the dial reached it, every write half a round trip on the way.
    node0, node1 = run_sharded(lambda shard: run_on_virtual_clock(_Exchange(shard)), [0, 1], 0.05 * (1 - 1e-6))
    assert node0["refused"] == (errno.ECONNREFUSED, 0.11)
    assert node0["connected_at"] == pytest.approx(0.21)
    assert node1["accepted_at"] == pytest.approx(0.16)
    assert [answer for answer, _ in node0["answers"]] == [b"ONE", b"TWO"]
    assert node1["reads"] == [(pytest.approx(0.26), b"one"), (pytest.approx(0.36), b"two")]
    assert [at for _, at in node0["answers"]] == [pytest.approx(0.31), pytest.approx(0.41)]
    assert node1["eof_at"] == pytest.approx(0.46)


def test_a_failure_in_one_process_stops_both_and_names_it():
    class Failing(_Exchange):
        async def run(self) -> dict:
            if self.shard.index == 1:
                raise RuntimeError("node 1 could not start")
            return await super().run()

    with pytest.raises(RuntimeError, match="node 1 could not start"):
        run_sharded(lambda shard: run_on_virtual_clock(Failing(shard)), [0, 1], 0.05 * (1 - 1e-6))
    assert multiprocessing.active_children() == []


def test_a_failure_the_other_learns_of_when_its_send_fails_still_stops_both():
    # Process 1 fails at once (its run still ends the first window with process 0); process 0 reaches
    # the second window's end only after process 1 has closed its end, so its send finds the socket
    # closed. Taken for a finish, process 0 went on alone and dialled a node that was gone, waiting
    # for an answer with nothing left to wake it.
    class FailingFirst(_Exchange):
        async def run(self) -> dict:
            if self.shard.index == 1:
                raise RuntimeError("node 1 could not start")
            await trio.sleep(self.shard.window)
            assert self.shard.exchanges == 1
            closed = select.poll()
            closed.register(self.shard._peer, select.POLLRDHUP)
            closed.poll()  # until process 1's end of the socket is closed
            return await super().run()

    with pytest.raises(RuntimeError) as failed:
        run_sharded(lambda shard: run_on_virtual_clock(FailingFirst(shard)), [0, 1], 0.05 * (1 - 1e-6))
    report = str(failed.value)  # each process's failure, in the order the parent heard of them
    assert "node 1 could not start" in report and "ended without finishing" in report, report
    assert multiprocessing.active_children() == []


def test_a_closed_end_is_a_finish_only_after_the_others_marker():
    for marker in (b"", struct.pack("!Q", 0)):
        here, there = socket.socketpair()
        shard = Shard(0, [0, 1], 0.05, here)
        there.sendall(marker)
        there.close()
        if marker:
            shard.advance()
            assert shard.peer_done and shard.window_end == float("inf")
        else:
            with pytest.raises(ConnectionError, match="ended without finishing"):
                shard.advance()
            assert not shard.peer_done
        here.close()
