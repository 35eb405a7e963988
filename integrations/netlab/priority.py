"""Scheduling priorities of a run: its own process above the nodes it measures.

The run is one process that signs for every pool, reads every aggregator and keeps the faults'
clock; the nodes are many, and at equal weight a hundred busy ones leave it a hundredth of the
CPU. Two kernel settings weigh a process (docs/network-scale.md, "What it builds"):

* its niceness, which orders the processes of one session (1024 at 0, 15 at +19, 9548 at -10);
* with autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``), its session's
  autogroup niceness, which orders sessions: every session gets an equal share of a busy CPU
  whatever its processes' niceness. Every node starts in a session of its own
  (:class:`integrations.devnet.node_process.NodeProcess`), so a node's niceness alone changed
  nothing against the run, and a hundred nodes weighed a hundred times the run.

So each node sets both before it execs (:func:`lowered`), and the run sets both for itself for
as long as it runs (:class:`RunPriority`).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["AUTOGROUP", "RunPriority", "autogroup_niceness", "lowered"]

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


def lowered(niceness: int, own: int) -> list[str]:
    """The command prefix that runs a process at ``niceness`` (given the run's ``own``), and its
    session's autogroup as well; each part execs the next, so the pid stays the process's."""
    prefix = ["nice", "-n", str(niceness - own)] if niceness != own else []
    if _autogroup_enabled():
        prefix += ["sh", "-c", f'echo {niceness} > /proc/self/autogroup; exec "$@"', "sh"]
    return prefix


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
