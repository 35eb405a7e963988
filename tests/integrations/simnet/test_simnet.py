"""The simulated network end to end: the real node code at every node, faults, exactly-once delivery,
and the same report from the same seed."""

from __future__ import annotations

from dataclasses import replace

from dmq.cli.wiring import assemble_node
from integrations.simnet import SimnetOptions, run_simnet

#: Figures that depend on the machine, not on the seed.
_MACHINE = {"load_average", "wall_seconds", "wall_per_simulated_minute", "cpu_seconds", "cpu_per_simulated_minute"}


def _seeded(report) -> dict:
    return {key: value for key, value in report.to_json().items() if key not in _MACHINE}


def test_two_hundred_nodes_get_every_message_exactly_once_through_a_kill_and_a_partition():
    # 200 nodes, one killed and restarted, a third of them partitioned and healed, a flooder. The
    # work grows with messages x nodes x peers: a light load (a message every 2 s) and four active
    # peers a node keep the default run short; the scale runs (docs/network-scale.md) use 20.
    options = SimnetOptions(nodes=200, pools=5, period=10.0, duration=30.0, kill_fraction=0.005,
                            partition_fraction=1 / 3, active_peers=4, warmup=15.0, drain=120.0, seed=11)
    report = run_simnet(options, assemble_node)
    assert report.accepted > 0.9 * report.attempted
    assert report.missing == 0 and report.duplicates == 0 and report.unknown_hops == 0, report.lines()
    kinds = {fault.kind: fault for fault in report.faults}
    assert len(kinds["kill and restart"].nodes) == 1
    assert len(kinds["partition and heal"].nodes) == 67
    assert all(fault.recovery_seconds is not None for fault in report.faults), report.lines()
    # The flooder got connections and was dropped on each, and every forged message was refused.
    flood = report.attacks[0].outcome
    assert flood["connections"] > 0 and flood["invalid_messages_served"] > 0
    assert sum(count for reason, count in report.rejections.items() if reason.startswith("InvalidKESSignature")) \
        == flood["invalid_messages_served"]
    # Messages crossed several hops, and every node sent each about as many bytes as the degree implies.
    assert report.hops["max"] >= 2
    assert report.bytes_per_message_per_node > report.message_size


def test_the_same_seed_gives_the_same_run():
    options = SimnetOptions(nodes=8, pools=4, period=5.0, duration=10.0, active_peers=4, warmup=5.0, drain=30.0,
                            seed=5)
    first, second = run_simnet(options, assemble_node), run_simnet(options, assemble_node)
    assert first.missing == 0 and first.duplicates == 0
    assert _seeded(first) == _seeded(second)
    other = run_simnet(replace(options, seed=6), assemble_node)
    assert _seeded(other) != _seeded(first)
