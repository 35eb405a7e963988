"""One devnet node: its directory, its files, and the ``dmq-node`` process running in it.

A node runs as the operator runs it: the real entry point (``python -m dmq.cli.node``, the
``dmq-node`` command's ``main``) in its own working directory with ``dmq.config.json`` and
``dmq.topology.json``, its paths relative to that directory (a Unix socket path must stay
under 108 bytes). Its JSON log and standard error go to files beside them, never to a pipe
nobody reads.

The process gets a session of its own, so a Ctrl-C in the terminal reaches the devnet
orchestrator only, which then stops the nodes in order: SIGINT (the node closes its
database and flushes its recording), SIGKILL only if that grace period passes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

import dmq

__all__ = ["NodeFiles", "NodeProcess", "NodeProcessFailed", "NodeExited", "NodeStartTimeout", "CONFIG_FILE",
           "TOPOLOGY_FILE", "SOCKET_FILE", "node_command", "accepts_connections", "output_tail"]

CONFIG_FILE = "dmq.config.json"
TOPOLOGY_FILE = "dmq.topology.json"
SOCKET_FILE = "dmq.socket"
LOG_FILE = "node.log"
STDERR_FILE = "node.stderr"
#: The directory holding the ``dmq`` package, put on the node's ``PYTHONPATH`` so a node starts
#: from a checkout as well as from an installed package.
_PROJECT_ROOT = Path(dmq.__file__).resolve().parent.parent


class NodeProcessFailed(Exception):
    """A node process ended, or did not listen, before it could be used."""


class NodeExited(NodeProcessFailed):
    """The node process ended while it was expected to run."""


class NodeStartTimeout(NodeProcessFailed):
    """The node did not accept connections on its socket in time."""


def node_command(*flags: str) -> list[str]:
    """The operator's command line (the ``dmq-node`` entry point), run in the node's directory."""
    return [sys.executable, "-m", "dmq.cli.node", "--configuration-file", CONFIG_FILE,
            "--topology-file", TOPOLOGY_FILE, *flags]


def accepts_connections(path: Path) -> bool:
    """Whether the Unix socket at ``path`` accepts a connection now.

    The socket file existing is not enough: after a crash a stale file is left behind, and it
    refuses connections until a new process has replaced it.
    """
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        probe.connect(os.fspath(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def output_tail(paths, limit: int) -> str:
    """The last ``limit`` characters of each non-empty file of ``paths``: why a node failed."""
    parts = []
    for path in paths:
        if path.exists():
            text = path.read_text(errors="replace").strip()
            if text:
                parts.append(f"{path}: {' '.join(text[-limit:].split())}")
    return " | ".join(parts) or "no output"


@dataclass(frozen=True, slots=True)
class NodeFiles:
    """Where one node lives and the files it is started with."""

    name: str
    directory: Path
    config: dict[str, Any]
    topology: dict[str, Any]

    @property
    def socket_path(self) -> Path:
        return self.directory / self.config.get("LocalAddress", SOCKET_FILE)

    @property
    def log_path(self) -> Path:
        return self.directory / LOG_FILE

    @property
    def stderr_path(self) -> Path:
        return self.directory / STDERR_FILE

    def write(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / CONFIG_FILE).write_text(json.dumps(self.config, indent=2) + "\n")
        (self.directory / TOPOLOGY_FILE).write_text(json.dumps(self.topology, indent=2) + "\n")

    def command(self) -> list[str]:
        return node_command()


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(_PROJECT_ROOT) if not path else f"{_PROJECT_ROOT}{os.pathsep}{path}"
    return env


def _default_sigint() -> None:
    """In the child before its exec: SIGINT back to its default action. A program started from a
    background job of a shell (``cmd &``, nohup) inherits SIGINT ignored, and Python then never
    turns it into ``KeyboardInterrupt``: the node would ignore :meth:`NodeProcess.stop`'s SIGINT
    and be killed after its grace, its database and a profiler's statistics left unwritten."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass(eq=False)
class NodeProcess:
    """A started node; :meth:`stop` ends it however it behaves."""

    files: NodeFiles
    process: trio.Process | None = field(default=None, init=False)
    #: How the node ended: ``"signal"`` (stopped by SIGINT), ``"killed"``, ``"exited"`` (by itself).
    ending: str | None = field(default=None, init=False)

    @property
    def name(self) -> str:
        return self.files.name

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.returncode

    async def start(self) -> None:
        """Spawn the node (it is not listening yet: see :meth:`wait_listening`)."""
        self.files.write()
        with open(self.files.log_path, "wb") as log, open(self.files.stderr_path, "wb") as err:
            self.process = await trio.lowlevel.open_process(
                self.files.command(), cwd=self.files.directory, stdin=subprocess.DEVNULL, stdout=log, stderr=err,
                env=_environment(), start_new_session=True, preexec_fn=_default_sigint)

    def diagnostics(self) -> str:
        """The end of the node's standard error (or log): why it failed, for one line."""
        return output_tail((self.files.stderr_path, self.files.log_path), 600)

    async def wait_listening(self, timeout: float) -> None:
        """Until the node's socket accepts a connection (the node is serving)."""
        with trio.move_on_after(timeout):
            while True:
                if not self.running:
                    raise NodeExited(f"{self.name} exited with status {self.returncode} while starting; "
                                         f"{self.diagnostics()}")
                if accepts_connections(self.files.socket_path):
                    return
                await trio.sleep(0.05)
        raise NodeStartTimeout(f"{self.name} did not listen on {self.files.socket_path} within {timeout:g} s; "
                             f"{self.diagnostics()}")

    async def stop(self, grace: float) -> None:
        """SIGINT, then SIGKILL after ``grace`` seconds; returns once the process is reaped."""
        process = self.process
        if process is None:
            return
        with trio.CancelScope(shield=True):
            if process.returncode is not None:
                self.ending = self.ending or "exited"
                return
            process.send_signal(signal.SIGINT)
            with trio.move_on_after(grace):
                await process.wait()
                self.ending = "signal"
                return
            process.kill()
            await process.wait()
            self.ending = "killed"


async def stop_all(nodes: Iterable[NodeProcess], grace: float) -> None:
    """Stop every node at once (SIGINT together, then SIGKILL after ``grace``): a profiled node's
    exit, which writes its statistics, takes a while, and one after another the waits add up."""
    async with trio.open_nursery() as nursery:
        for node in nodes:
            nursery.start_soon(node.stop, grace)
