"""CPU and resident memory of every process of a run, read from ``/proc`` in the root namespace.

A process in a network namespace is still an ordinary process of the host's process namespace,
so its ``/proc/<pid>/stat`` (user and system CPU time, fields 14 and 15, in clock ticks) and
``/proc/<pid>/status`` (``VmRSS``) are read from here with no help from the process: nothing
is scraped across namespaces, and a node that is busy or stuck is measured all the same.

CPU% over an interval is the CPU time the process used in it over the wall time, so 100 % is
one core. A restarted node is a new pid: its first sample only sets a baseline.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import trio

from .priority import autogroup_niceness

__all__ = ["ProcessUsage", "ResourceSampler", "read_cpu_seconds", "read_cpu_split", "read_memory_bytes", "read_niceness", "read_rss_bytes"]

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int, thread: int | None = None) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` (or of its ``thread``) from the third (the state) on;
    None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat") as stat:
            text = stat.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    return text[text.rindex(")") + 2:].split()


def read_cpu_seconds(pid: int, thread: int | None = None) -> float | None:
    """User + system CPU seconds of ``pid`` (or of its ``thread``) so far; None once it is gone."""
    split = read_cpu_split(pid, thread)
    return None if split is None else split[0] + split[1]


def read_cpu_split(pid: int, thread: int | None = None) -> tuple[float, float] | None:
    """User and system CPU seconds of ``pid`` (or of its ``thread``) so far, apart; None once it is
    gone. The system part is the kernel's work for the process (socket calls, and on loopback the
    receiving end's TCP path run in the sender's call), which no change to the process's own code
    can take off."""
    fields = _stat_fields(pid, thread)
    return None if fields is None else (int(fields[11]) / _TICKS, int(fields[12]) / _TICKS)


def read_niceness(pid: int) -> int | None:
    """The scheduling niceness of ``pid`` (field 19 of its ``stat``); None once it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[16])


def read_memory_bytes(pid: int, names: Iterable[str] = ("VmRSS", "RssAnon", "RssFile", "RssShmem")
                      ) -> dict[str, int] | None:
    """The named sizes of ``/proc/<pid>/status`` in bytes (``VmRSS`` is the resident set: ``RssAnon``,
    the process's own heap, plus ``RssFile`` and ``RssShmem``, mapped files and shared memory, as an
    LMDB map on a tmpfs is); None once it is gone."""
    wanted = set(names)
    found: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key, _, rest = line.partition(":")
                if key in wanted:
                    found[key] = int(rest.split()[0]) * 1024
    except OSError:
        return None
    return found


def read_rss_bytes(pid: int) -> int | None:
    """Resident set size of ``pid`` (``VmRSS``); None once it is gone."""
    found = read_memory_bytes(pid, ("VmRSS",))
    return None if found is None else found.get("VmRSS")


def _spread(values: list[float], digits: int) -> dict[str, float | None]:
    if not values:
        return {"min": None, "median": None, "max": None}
    return {"min": round(min(values), digits), "median": round(statistics.median(values), digits),
            "max": round(max(values), digits)}


@dataclass
class ProcessUsage:
    """The samples of one named process (a node across its restarts)."""

    name: str
    cpu_percent: list[float] = field(default_factory=list)
    rss_bytes: list[int] = field(default_factory=list)
    cpu_seconds: float = 0.0
    #: The niceness it ran at, as last sampled (not at the first sample only: a process started
    #: through ``nice`` may be sampled before ``nice`` has lowered its priority and exec'd).
    niceness: int | None = None
    #: Its session's autogroup niceness, likewise (None without autogroup scheduling).
    autogroup_niceness: int | None = None
    _last: tuple[int, float, float] | None = field(default=None, repr=False)

    def add(self, pid: int, now: float) -> None:
        cpu, rss = read_cpu_seconds(pid), read_rss_bytes(pid)
        if cpu is None or rss is None:
            return
        self.rss_bytes.append(rss)
        self.niceness, self.autogroup_niceness = read_niceness(pid), autogroup_niceness(pid)
        if self._last is not None and self._last[0] == pid and now > self._last[1]:
            used = max(0.0, cpu - self._last[2])
            self.cpu_percent.append(100.0 * used / (now - self._last[1]))
            self.cpu_seconds += used
        self._last = (pid, now, cpu)

    def summary(self) -> dict[str, object]:
        return {"name": self.name, "samples": len(self.rss_bytes), "cpu_seconds": round(self.cpu_seconds, 2),
                "niceness": self.niceness, "autogroup_niceness": self.autogroup_niceness,
                "cpu_percent": _spread(self.cpu_percent, 1),
                "rss_mib": _spread([b / 2**20 for b in self.rss_bytes], 1)}


@dataclass
class ResourceSampler:
    """Samples every process ``processes()`` names, every ``interval`` seconds, until cancelled."""

    processes: Callable[[], Iterable[tuple[str, int | None]]]
    interval: float = 2.0
    usage: dict[str, ProcessUsage] = field(default_factory=dict)
    #: Per sampling round: the RSS of every process sampled in it, by name.
    rounds: list[dict[str, int]] = field(default_factory=list)
    started: float | None = None
    ended: float | None = None

    def sample(self, processes: Iterable[tuple[str, int | None]] | None = None) -> None:
        """One round over ``processes`` (default: ``processes()``)."""
        now = time.monotonic()
        if self.started is None:
            self.started = now
        self.ended = now
        resident = {}
        for name, pid in self.processes() if processes is None else processes:
            if pid is None:
                continue
            usage = self.usage.setdefault(name, ProcessUsage(name))
            before = len(usage.rss_bytes)
            usage.add(pid, now)
            if len(usage.rss_bytes) > before:
                resident[name] = usage.rss_bytes[-1]
        self.rounds.append(resident)

    async def run(self) -> None:
        while True:
            # The list is made here, in trio: asking a trio process whether it still runs
            # reaps it when it has ended, and that may only happen in trio's thread.
            await trio.to_thread.run_sync(self.sample, list(self.processes()))
            await trio.sleep(self.interval)

    def summary(self, names: Iterable[str]) -> dict[str, object]:
        """Per process of ``names``, and their totals: CPU over the whole span, peak summed RSS."""
        chosen = [self.usage[name] for name in names if name in self.usage]
        wanted = {u.name for u in chosen}
        peak = max((sum(rss for name, rss in round_.items() if name in wanted) for round_ in self.rounds), default=0)
        span = (self.ended or 0.0) - (self.started or 0.0)
        cpu = sum(u.cpu_seconds for u in chosen)
        return {
            "interval_seconds": self.interval,
            "processes": [u.summary() for u in chosen],
            "total": {"cpu_seconds": round(cpu, 1),
                      "cpu_percent_mean": round(100.0 * cpu / span, 1) if span > 0 else None,
                      "rss_mib_peak": round(peak / 2**20, 1)},
        }
