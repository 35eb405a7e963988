"""The attacks of a run: who attacks whom and when, the attackers' processes, and the verdicts.

Each attacker is a process of :mod:`.adversary` in a namespace of its own, with an address
after the nodes' on the same bridge, so the nodes see it as one more host. Two attacks:

* ``flood``: one flooding peer dials a few honest nodes and offers them invalid messages
  (:mod:`.invalid`). It is held off when nothing invalid reaches anyone: no aggregator
  received a message that no pool published, no node other than the targets rejected a
  message for one of the flood's reasons (so the targets relayed none of it to their peers),
  and each class met the reaction docs/protocol/validation.md 6.2 gives it (the targets closed
  every connection that offered a "disconnect" class, and none that offered only "trace").
* ``stakeless``: a cluster of stake-less peers dials one victim and holds as many of its
  inbound slots as the victim's ``AcceptedConnectionsLimit`` lets it, delivering nothing. It
  is held off when the victim still got every accepted message, through the peers it dials
  itself; how much later than the others it got them is measured, not judged.

The faults (kill, partition) of :mod:`.faults` happen to other nodes: victims and targets are
chosen among the nodes no fault touches, when there are enough.
"""

from __future__ import annotations

import json
import math
import random
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import trio

from lab.devnet.node_process import NodeExited, NodeStartTimeout

from .invalid import FLOOD_CLASSES, FLOOD_MARK
from .plan import NamespacedNodeFiles

__all__ = ["AdversaryFiles", "AttackPlan", "choose_attack_nodes", "ready_adversaries", "run_adversaries",
           "read_result", "read_offered_ids", "flood_verdict", "FLOOD", "STAKELESS", "RESULT_FILE", "IDS_FILE",
           "READY_FILE"]

FLOOD = "flood"
STAKELESS = "stakeless"
RESULT_FILE = "result.json"
IDS_FILE = "offered-ids.txt"
READY_FILE = "ready"


@dataclass(frozen=True, slots=True)
class AdversaryFiles(NamespacedNodeFiles):
    """An attacker started like a node (:class:`~lab.devnet.node_process.NodeProcess`):
    its own directory for its log and result, its command run inside its namespace."""

    arguments: tuple[str, ...] = ()

    def write(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        return [*self.prefix, sys.executable, "-m", "lab.netlab.adversary", *self.arguments]

    @property
    def result_path(self) -> Path:
        return self.directory / RESULT_FILE

    @property
    def ids_path(self) -> Path:
        return self.directory / IDS_FILE

    @property
    def ready_path(self) -> Path:
        return self.directory / READY_FILE


@dataclass(frozen=True)
class AttackPlan:
    """Targets and timing (seconds into publishing) of each attack; no target: no attack."""

    flood_targets: tuple[int, ...]
    flood_at: float
    flood_seconds: float
    stakeless_victim: int | None
    stakeless_peers: int
    #: Connections each stake-less peer keeps open (or keeps dialling).
    stakeless_connections: int
    stakeless_at: float
    stakeless_seconds: float


def choose_attack_nodes(nodes: int, flood_targets: int, stakeless: bool, seed: int, avoid: set[int]
                        ) -> tuple[tuple[int, ...], int | None]:
    """Flood targets and the stake-less cluster's victim, apart from each other and from
    ``avoid`` (the faults' nodes) where the network is large enough."""
    rng = random.Random(f"dmq-netlab-attacks/{seed}")
    order = [i for i in range(nodes) if i not in avoid]
    rng.shuffle(order)
    order += sorted(avoid, key=lambda _: rng.random())
    victim = order.pop(0) if stakeless else None
    return tuple(sorted(order[:min(flood_targets, len(order))])), victim


def connections_per_peer(hard_limit: int, peers: int) -> int:
    """Enough connections, spread over the cluster, to take every inbound slot of the victim."""
    return math.ceil(hard_limit / peers) + 1


async def ready_adversaries(processes, timeout: float) -> None:
    """Start the attackers and wait until each is ready to attack (its ``--ready`` file written):
    its imports done and its messages built, so that the attack's window, timed from the go
    signal of :func:`run_adversaries`, is spent attacking. Raises
    :class:`~lab.devnet.node_process.NodeProcessFailed` if one exits or is not ready within
    ``timeout`` seconds."""
    for process in processes:
        await process.start()
    with trio.move_on_after(timeout):
        while not all(process.files.ready_path.exists() for process in processes):
            for process in processes:
                if not process.running:
                    raise NodeExited(f"{process.name} exited with status {process.returncode} before it was "
                                     f"ready to attack; {process.diagnostics()}")
            await trio.sleep(0.1)
        return
    late = [process for process in processes if not process.files.ready_path.exists()]
    raise NodeStartTimeout(f"{', '.join(process.name for process in late)} not ready to attack within "
                           f"{timeout:g} s; {late[0].diagnostics()}")


async def run_adversaries(processes, at: float, length: float, started: float, until: float, record,
                          grace: float = 5.0, least: float = 6.0) -> None:
    """At ``started + at`` tell the attackers (started and ready: :func:`ready_adversaries`) to
    attack; ``length`` seconds later, or at ``until`` (the end of publishing) if that comes first,
    stop them (SIGINT: each writes its final account). An attack lasts at least ``least`` seconds
    (or ``length`` if shorter) even past ``until``: a run so starved that the go came late still
    measures an attack that happened."""
    await trio.sleep_until(started + at)
    try:
        for process in processes:
            if process.running:
                process.process.send_signal(signal.SIGUSR1)
        now = trio.current_time()
        record.began_at = round(now - started, 3)
        await trio.sleep_until(max(min(now + length, until), now + min(least, length)))
    finally:
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for process in processes:
                    nursery.start_soon(process.stop, grace)
    record.ended_at = round(trio.current_time() - started, 3)


def read_result(path: Path) -> list[dict]:
    """The links an attacker accounted for (none if it never wrote its result)."""
    try:
        return json.loads(path.read_text())["links"]
    except (OSError, ValueError, KeyError):
        return []


def read_offered_ids(path: Path) -> set[bytes]:
    try:
        return {bytes.fromhex(line) for line in path.read_text().split()}
    except (OSError, ValueError):
        return set()


def flood_verdict(links: list[dict], offered: set[bytes], arrivals: list[dict[bytes, float]],
                  foreign: int, rejected: dict[str, dict[str, int]], targets: list[str]) -> dict[str, object]:
    """The flood's outcome (see the module docstring); ``held`` says whether every check passed.

    ``foreign`` counts the deliveries to aggregators whose body is not a pool's probe,
    ``rejected`` is each node's rejections by reason (from its metrics at the end of the run),
    ``targets`` the names of the flooded nodes.
    """
    classes = {}
    for kind, flood_class in FLOOD_CLASSES.items():
        mine = [link for link in links if link["kind"] == kind]
        if not mine:
            continue
        opened = sum(link["opened"] for link in mine)
        closed = sum(link["closed_by_node"] for link in mine)
        # The connection open when the flood stopped was not (yet) closed by the node.
        as_documented = (closed >= opened - len(mine) and opened > len(mine) if flood_class.reaction == "disconnect"
                         else closed == 0 and opened >= 1)
        classes[kind] = {"error": flood_class.error, "reaction": flood_class.reaction, "opened": opened,
                         "closed_by_node": closed, "offered": sum(link["offered"] for link in mine),
                         "served": sum(link["served"] for link in mine), "as_documented": as_documented}
    reasons = {c.error for c in FLOOD_CLASSES.values()}
    at_targets = {name: {r: n for r, n in rejected.get(name, {}).items() if r in reasons} for name in targets}
    elsewhere = {name: {r: n for r, n in by_reason.items() if r in reasons}
                 for name, by_reason in rejected.items() if name not in targets}
    elsewhere = {name: counts for name, counts in elsewhere.items() if sum(counts.values())}
    relayed = sum(1 for arrived in arrivals for message_id in arrived if message_id in offered)
    held = (bool(classes) and all(c["as_documented"] for c in classes.values()) and relayed == 0
            and foreign == 0 and not elsewhere and len(rejected) > 0)
    return {"classes": classes, "offered_ids": len(offered), "delivered_to_aggregators": relayed,
            "foreign_deliveries": foreign, "rejected_at_targets": at_targets,
            "flood_rejections_elsewhere": elsewhere, "held": held, "mark": FLOOD_MARK.decode().strip()}
