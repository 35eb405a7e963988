"""Scheduling priorities of a run: its own process above the nodes it measures.

The run is one process that signs for every pool, reads every aggregator and keeps the faults'
clock; the nodes are many, and at equal weight a hundred busy ones leave it a hundredth of the
CPU. Two kernel settings weigh a process (docs/network-scale.md, "What it builds"):

* its niceness, which orders the processes of one session (1024 at 0, 15 at +19, 9548 at -10);
* with autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``), its session's
  autogroup niceness, which orders sessions: every session gets an equal share of a busy CPU
  whatever its processes' niceness. Every node starts in a session of its own
  (:class:`lab.devnet.node_process.NodeProcess`), so a node's niceness alone changed
  nothing against the run, and a hundred nodes weighed a hundred times the run.

So the run lowers both for each node once it listens (:func:`lower`): a node that starts, or
restarts after a kill, while a hundred others are busy would take minutes to import and load
its stake at the lowest priority (a killed node of the 100-node run did not listen within 60 s).
Attackers keep the run's priority: they are a few, and at the lowest one they were not in place
within their attack's window. The run sets both for itself for as long as it runs
(:class:`RunPriority`).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["AUTOGROUP", "RunPriority", "autogroup_niceness", "lower"]

AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")


def _autogroup_enabled() -> bool:
    try:
        return AUTOGROUP.read_text().strip() == "1"
    except OSError:
        return False


def autogroup_niceness(pid: int | str = "self") -> int | None:
    """The niceness of ``pid``'s autogroup (``/autogroup-N nice X``); None without autogroups."""
    try:
        return int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def lower(pid: int, niceness: int) -> None:
    """Every thread of ``pid`` to ``niceness`` (Linux keeps a niceness per thread; threads made
    later inherit their maker's), and its session's autogroup too; a process already gone is
    left alone."""
    try:
        threads = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return
    for tid in threads:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, niceness)
        except ProcessLookupError:
            pass
    if _autogroup_enabled():
        try:
            Path(f"/proc/{pid}/autogroup").write_text(str(niceness))
        except (FileNotFoundError, ProcessLookupError):
            pass


class RunPriority:
    """Sets this process's niceness (its thread's, which the nodes it starts inherit) and its
    session's autogroup to ``niceness`` on entry, and puts both back on exit; without the right
    to raise them (not root), ``problem`` says so and the run goes on as it is."""

    def __init__(self, niceness: int | None) -> None:
        self.niceness = niceness
        self.problem: str | None = None
        self._before: tuple[int, int | None] | None = None

    def __enter__(self) -> RunPriority:
        if self.niceness is None:
            return self
        before = (os.getpriority(os.PRIO_PROCESS, 0), autogroup_niceness())
        try:
            os.setpriority(os.PRIO_PROCESS, 0, self.niceness)
            if before[1] is not None:
                Path("/proc/self/autogroup").write_text(str(self.niceness))
        except PermissionError:
            self.problem = f"cannot raise this process's priority to niceness {self.niceness} (needs root)"
        self._before = before
        return self

    def __exit__(self, *exc_info) -> None:
        if self._before is None:
            return
        niceness, group = self._before
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
        if group is not None:
            Path("/proc/self/autogroup").write_text(str(group))
