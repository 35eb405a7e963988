"""Faults injected during a run: SIGKILL and restart of some nodes, a partition that heals.

A killed node loses its process, not its directory: restarted, it reopens its database and must
get what it missed from its peers. A partition takes the bridge ports of some nodes down, so
they reach nobody while their own pools keep publishing to them; healed, both sides must
exchange what they got meanwhile. Recovery time is measured from the end of the fault until
every aggregator holds every message accepted by the end of the fault.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import trio

from lab.devnet.aggregator import Aggregator
from lab.devnet.node_process import NodeProcess, NodeProcessFailed
from lab.devnet.orchestrator import DevnetError
from lab.devnet.publisher import PublishingTally

from .namespaces import Lab
from .report import FaultRecord

__all__ = ["FaultPlan", "choose_victims", "plan_faults", "kill_and_restart", "partition_and_heal", "await_recovery",
           "await_delivered"]


@dataclass(frozen=True)
class FaultPlan:
    """When (seconds into publishing) each fault begins and how long it lasts; no victims: none."""

    kill: tuple[int, ...]
    kill_at: float
    kill_seconds: float
    partition: tuple[int, ...]
    partition_at: float
    partition_seconds: float


def choose_victims(nodes: int, kill_fraction: float, partition_fraction: float, seed: int
                   ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Nodes to kill and nodes to partition, disjoint where possible, from ``seed``."""
    rng = random.Random(f"dmq-netlab-faults/{seed}")
    order = list(range(nodes))
    rng.shuffle(order)
    killed = max(1, round(nodes * kill_fraction)) if kill_fraction > 0 else 0
    isolated = max(1, round(nodes * partition_fraction)) if partition_fraction > 0 else 0
    killed, isolated = min(killed, nodes - 1), min(isolated, nodes - 1)
    kill = order[:killed]
    rest = order[killed:] if len(order) - killed >= isolated else order
    return tuple(sorted(kill)), tuple(sorted(rest[:isolated]))


def plan_faults(nodes: int, duration: float, kill_fraction: float, partition_fraction: float,
                seed: int) -> FaultPlan:
    """The run's faults: the kill 15 % into publishing for 15 % of it (at least 3 s), the
    partition half-way for 20 % of it (at least 3 s); the victims from ``seed``. The real and
    the simulated network (``lab.simnet``) share this plan."""
    kill, partition = choose_victims(nodes, kill_fraction, partition_fraction, seed)
    return FaultPlan(kill, 0.15 * duration, max(3.0, 0.15 * duration),
                     partition, 0.5 * duration, max(3.0, 0.2 * duration))


async def await_delivered(aggregators: list[Aggregator], wanted: Iterable[bytes], interval: float = 0.1) -> None:
    """Return once every aggregator holds every message of ``wanted``.

    Each round looks only at what was still missing in the round before, so a check costs what
    is missing, not every aggregator times every message: at 100 nodes and thousands of messages,
    ten full checks a second took most of the core the run's own process has."""
    ids = list(wanted)
    pending = [(aggregator, ids) for aggregator in aggregators]
    while True:
        pending = [(aggregator, still) for aggregator, ids in pending
                   if (still := [message_id for message_id in ids if message_id not in aggregator.arrivals])]
        if not pending:
            return
        await trio.sleep(interval)


async def await_recovery(record: FaultRecord, tally: PublishingTally,
                         aggregators: list[Aggregator]) -> None:
    """Set ``record.recovery_seconds`` once every aggregator holds what was accepted by the fault's end."""
    ended = trio.current_time()
    await await_delivered(aggregators, set(tally.accepted))
    record.recovery_seconds = round(trio.current_time() - ended, 3)


async def kill_and_restart(nodes: list[NodeProcess], victims: tuple[int, ...], at: float, down: float,
                           started: float, record: FaultRecord, on_restart,
                           on_listening: Callable[[NodeProcess], None] = lambda process: None,
                           start_timeout: float = 60.0) -> None:
    """At ``started + at``: SIGKILL the victims; ``down`` seconds later start them again, and
    hand each to ``on_listening`` once it listens."""
    await trio.sleep_until(started + at)
    for index in victims:
        process = nodes[index].process
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()
    record.began_at = round(trio.current_time() - started, 3)
    await trio.sleep(down)
    try:
        for index in victims:
            await nodes[index].start()
        for index in victims:
            await nodes[index].wait_listening(start_timeout)
            on_listening(nodes[index])
    except NodeProcessFailed as exc:
        raise DevnetError(f"a killed node did not come back: {exc}") from None
    record.ended_at = round(trio.current_time() - started, 3)
    on_restart(record)


async def partition_and_heal(lab: Lab, victims: tuple[int, ...], at: float, length: float, started: float,
                             record: FaultRecord, on_heal) -> None:
    """At ``started + at``: cut the victims' bridge ports; ``length`` seconds later reconnect them."""
    await trio.sleep_until(started + at)
    for index in victims:
        lab.set_connected(index, False)
    record.began_at = round(trio.current_time() - started, 3)
    await trio.sleep(length)
    for index in victims:
        lab.set_connected(index, True)
    record.ended_at = round(trio.current_time() - started, 3)
    on_heal(record)
