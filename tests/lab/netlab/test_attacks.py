"""The netlab's attack material: each flood class fails the one check it is named for in the node's
own validation, and the verdicts judge what the attackers and the nodes reported."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import trio

from dmq.clock import ManualClock
from dmq.codec import decode_message
from dmq.stake import PoolStake, StakeView
from dmq.validation import Validator
from dmq.validation.reactions import PeerReaction
from lab.devnet.node_process import NodeExited, NodeProcess
from lab.netlab.attacks import AdversaryFiles, choose_attack_nodes, connections_per_peer, flood_verdict, ready_adversaries
from lab.netlab.invalid import FLOOD_CLASSES, FLOOD_MARK, FloodMessages
from lab.netlab.resources import ResourceSampler
from tests.conftest import ROOT
from tests.dmq.diffusion.network import pool

NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def flood():
    registered = pool(1)
    return FloodMessages(registered.opcert, registered.cold_vk, 0, "test"), registered


@pytest.mark.parametrize("kind", list(FLOOD_CLASSES))
def test_each_flood_class_fails_exactly_its_check_at_the_node(flood, kind):
    messages, registered = flood
    clock = ManualClock(now=NOW, monotonic=5_000.0)
    view = StakeView(clock, max_kes_evolutions=62)
    view.update({registered.pool_id: PoolStake(0, 1, 0)}, 600)
    message_id, raw = messages.build(kind, 7, NOW)
    decoded = decode_message(raw)
    assert decoded.message_id == message_id and decoded.has_valid_id()
    assert decoded.body.startswith(FLOOD_MARK)
    error = Validator(view, clock).check(decoded)
    assert type(error) is FLOOD_CLASSES[kind].error_type
    # The valid message of the same pool passes the same validator: only the flaw fails.
    assert Validator(view, clock).check(decode_message(registered.sign(1, int(NOW) + 600).raw)) is None


def test_flood_classes_cover_both_reactions_and_ids_are_distinct(flood):
    messages, _ = flood
    assert {c.reaction for c in FLOOD_CLASSES.values()} == {r.value for r in PeerReaction}
    ids = {messages.build(kind, n, NOW)[0] for kind in FLOOD_CLASSES for n in range(20)}
    assert len(ids) == 20 * len(FLOOD_CLASSES)
    with pytest.raises(ValueError, match="no flood class"):
        messages.build("bad-everything", 0, NOW)


def test_attack_nodes_avoid_the_faults_and_each_other():
    targets, victim = choose_attack_nodes(10, 3, True, seed=4, avoid={0, 1, 2})
    assert victim not in targets and len(targets) == 3
    assert not ({victim, *targets} & {0, 1, 2})
    assert choose_attack_nodes(3, 5, True, seed=0, avoid={0}) [1] != 0
    assert connections_per_peer(512, 4) * 4 > 512


def _link(kind, opened, closed, offered=10):
    return {"kind": kind, "opened": opened, "closed_by_node": closed, "offered": offered, "served": offered}


def test_flood_verdict_holds_only_when_every_check_passes():
    links = [_link("bad-kes", 5, 5), _link("unknown-pool", 1, 0, 100)]
    rejected = {"node-1": {"InvalidKESSignature": 5, "UnrecognizedPool": 100}, "node-2": {}}
    held = flood_verdict(links, {b"x" * 32}, [{b"y" * 32: 1.0}], 0, rejected, ["node-1"])
    assert held["held"] and held["classes"]["bad-kes"]["as_documented"]
    assert held["rejected_at_targets"] == {"node-1": {"InvalidKESSignature": 5, "UnrecognizedPool": 100}}
    # A flood message reached an aggregator; another node rejected one (it was relayed); a trace
    # class's connection was closed; a disconnect class's connections stayed open.
    assert not flood_verdict(links, {b"y" * 32}, [{b"y" * 32: 1.0}], 1, rejected, ["node-1"])["held"]
    assert not flood_verdict(links, set(), [], 0, {**rejected, "node-2": {"UnrecognizedPool": 1}}, ["node-1"])["held"]
    assert not flood_verdict([_link("unknown-pool", 2, 1)], set(), [], 0, rejected, ["node-1"])["held"]
    assert not flood_verdict([_link("bad-kes", 5, 0)], set(), [], 0, rejected, ["node-1"])["held"]


def test_resource_sampler_reads_cpu_memory_and_niceness_of_a_running_process():
    # ``nice`` execs the command: the pid is the busy process's, at 3 below this one's priority (little enough that it still gets its CPU).
    busy = subprocess.Popen(["nice", "-n", "3", sys.executable, "-c", "b = bytearray(64 * 2**20)\nwhile True: pass"])
    try:
        sampler = ResourceSampler(lambda: [("busy", busy.pid), ("gone", None)], interval=0.3)
        for _ in range(4):
            sampler.sample()
            time.sleep(0.3)
        summary = sampler.summary(["busy", "gone"])
    finally:
        busy.kill()
        busy.wait()
    usage, = summary["processes"]
    # It spun for the whole span, at whatever share a busy machine left it: CPU was counted, and in
    # percent of a core (the busiest interval at least the span's mean, 100 x seconds / span).
    mean = summary["total"]["cpu_percent_mean"]
    assert usage["samples"] == 4 and usage["cpu_seconds"] > 0 and mean > 0
    assert usage["cpu_percent"]["max"] >= mean - 0.1, summary
    assert usage["niceness"] == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 3)
    assert usage["rss_mib"]["max"] >= 64 and summary["total"]["rss_mib_peak"] >= 64
    assert 0 < summary["total"]["cpu_seconds"]


def _withholder(tmp_path, address: str) -> tuple[subprocess.Popen, object, object]:
    tmp_path.mkdir()
    ready, result = tmp_path / "ready", tmp_path / "result.json"
    process = subprocess.Popen([sys.executable, "-m", "lab.netlab.adversary", "withhold", "--target", address,
                                "--connections", "1", "--magic", "42", "--result", str(result), "--ready", str(ready)],
                               cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the attacker never said it was ready"
        time.sleep(0.05)
    return process, ready, result


def _links_after_sigint(process: subprocess.Popen, result) -> list[dict]:
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return json.loads(result.read_text())["links"]


def test_an_attacker_started_ready_waits_for_its_go_signal(tmp_path):
    # A run starts its attackers before publishing (their imports can take many seconds on a busy
    # machine) and signals them at the attack's time: until then they dial nobody.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(60)
        address = "127.0.0.1:%d" % listener.getsockname()[1]
        process, _, result = _withholder(tmp_path / "stopped", address)
        try:
            assert _links_after_sigint(process, result) == []  # stopped before its go: no attack began
        finally:
            process.kill()
        process, _, result = _withholder(tmp_path / "going", address)
        try:
            assert not result.exists()
            process.send_signal(signal.SIGUSR1)
            connection, _ = listener.accept()  # it dials at once
            connection.close()
            link, = _links_after_sigint(process, result)
            assert link["target"] == address and link["kind"] == "withhold"
        finally:
            process.kill()


def test_an_attacker_that_dies_before_it_is_ready_fails_the_run_in_one_line_naming_it(tmp_path):
    files = AdversaryFiles("stakeless-1", tmp_path / "stakeless-1", {}, {}, (),
                           ("withhold", "--target", "no-port-here", "--magic", "42", "--result",
                            str(tmp_path / "result.json"), "--ready", str(tmp_path / "ready")))
    with pytest.raises(NodeExited, match="stakeless-1 exited with status [1-9].* before it was ready to attack"):
        trio.run(ready_adversaries, [NodeProcess(files)], 120.0)
