"""The ``dmq-node`` program as an operator runs it: a separate process, files, flags, a socket.

End-to-end tests and the local-service benchmark start the real entry point
(``python -m dmq.cli.node``, the same ``main`` as the ``dmq-node`` script) in its own working
directory with a configuration file, a topology file and the reference's flags, and talk to
it only through its Unix socket. Readiness is the socket accepting a connection, with a
deadline; the process is killed on the way out whatever happened, and its JSON log and
standard error are kept in the working directory for the failure report.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import trio

from dmq.trace import LogEvent, read_log
from lab.devnet.node_process import (CONFIG_FILE, TOPOLOGY_FILE, NodeExited, NodeStartTimeout,
                                              accepts_connections, node_command, output_tail)

__all__ = ["NodeProcess", "NodeStartTimeout", "NodeExited", "read_rss", "start_in_threads"]

T = TypeVar("T")

#: The flags a node needs beyond its configuration file. ``--host-addr`` is required by the
#: reference CLI; port 0 lets the system pick a free one, so runs never collide.
BASE_FLAGS = ("--host-addr", "127.0.0.1", "--port", "0")


@dataclass
class NodeProcess:
    """One ``dmq-node`` process in ``workdir``; ``start`` again after ``kill`` to restart it.

    ``config`` is written as ``dmq.config.json``; ``LocalAddress`` and ``DatabasePath`` are
    relative to ``workdir`` (kept short: a Unix socket path is limited to 107 bytes).
    """

    workdir: Path
    config: dict[str, Any]
    extra_flags: tuple[str, ...] = ()
    start_timeout: float = 20.0
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    starts: int = field(default=0, init=False)

    @property
    def socket_path(self) -> Path:
        return self.workdir / self.config.get("LocalAddress", "dmq-node.socket")

    @property
    def pid(self) -> int:
        assert self.process is not None, "the node is not running"
        return self.process.pid

    @property
    def log_path(self) -> Path:
        return self.workdir / f"node-{self.starts}.log"

    @property
    def stderr_path(self) -> Path:
        return self.workdir / f"node-{self.starts}.stderr"

    def command(self) -> list[str]:
        return node_command(*BASE_FLAGS, *self.extra_flags)

    def start(self) -> NodeProcess:
        """Spawn the node and return once its socket accepts connections."""
        if self.running:
            raise RuntimeError(f"node {self.pid} is already running")
        self.workdir.mkdir(parents=True, exist_ok=True)
        # Every event is logged (Debug) unless the test sets its own ``TraceOptions``: tests read
        # events the reference logs at Debug, such as a clean close.
        config = {"TraceOptions": {"": {"severity": "Debug"}}, **self.config}
        (self.workdir / CONFIG_FILE).write_text(json.dumps(config, indent=2))
        topology = self.workdir / TOPOLOGY_FILE
        if not topology.exists():
            topology.write_text(json.dumps({"localRoots": [], "publicRoots": []}))
        self.starts += 1
        with open(self.log_path, "wb") as log, open(self.stderr_path, "wb") as err:
            # Output goes to files, never to a pipe nobody reads: a full pipe would stall the node.
            self.process = subprocess.Popen(self.command(), cwd=self.workdir, stdout=log, stderr=err,
                                            stdin=subprocess.DEVNULL)
        try:
            self._wait_until_listening()
        except BaseException:
            self.kill()
            raise
        return self

    def _wait_until_listening(self) -> None:
        """Until the socket accepts a connection (a stale socket file of a crashed run does not)."""
        deadline = time.monotonic() + self.start_timeout
        while True:
            self.check_running()
            if accepts_connections(self.socket_path):
                return
            if time.monotonic() > deadline:
                raise NodeStartTimeout(f"dmq-node did not listen on {self.socket_path} within "
                                       f"{self.start_timeout} s; {self.diagnostics()}")
            time.sleep(0.02)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def check_running(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise NodeExited(f"dmq-node exited with status {self.process.returncode}; {self.diagnostics()}")

    def diagnostics(self) -> str:
        return output_tail((self.stderr_path, self.log_path), 2000)

    def kill(self, sig: int = signal.SIGKILL, timeout: float = 10.0) -> None:
        """Send ``sig`` (SIGKILL by default: no clean-up at all) and reap the process, killing it
        after ``timeout`` seconds."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log_events(self, kind: str | None = None) -> list[LogEvent]:
        """The current run's log events, whole (optionally of one event kind)."""
        return list(read_log(self.log_path.read_text(errors="replace"), kind))

    def trace_events(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The ``data`` of the current run's log events (optionally of one event kind)."""
        return [event.data for event in self.log_events(kind)]


def read_rss(pid: int) -> dict[str, int]:
    """``VmRSS``, ``RssAnon`` and ``RssFile`` of a process, in bytes (from /proc/<pid>/status)."""
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                values[name] = int(rest.split()[0]) * 1024
    return values


async def start_in_threads(starts: Sequence[Callable[[], T]]) -> list[T]:
    """Call every one of ``starts`` at once, each in a worker thread (a node's start waits for its
    socket, seconds on a busy machine): their results, in order."""
    results: list = [None] * len(starts)

    async def one(i: int) -> None:
        results[i] = await trio.to_thread.run_sync(starts[i])

    async with trio.open_nursery() as nursery:
        for i in range(len(starts)):
            nursery.start_soon(one, i)
    return results
