"""Driving the pallas-network test harness (``tests/interop/pallas``) from pytest.

``scripts/build-interop.sh`` builds the harness with cargo; ``scripts/run-tests.sh`` exports
where the program is (``DMQ_PALLAS_INTEROP``), or why it is not there
(``DMQ_PALLAS_INTEROP_MISSING``); without either the tests look in the build script's default
target directory. The program plays Mithril's signer and aggregator with pallas's own
``DmqClient``, or serves protocols 14 and 15 with pallas's ``DmqServer``, or stands in for
cardano-node (``NodeServer`` and its local-state-query server), and prints one JSON object per
line for everything it sees.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "PALLAS_VERSIONS", "LEGACY_VERSIONS", "ENV_VAR", "harness_path", "HarnessProcess", "run_signer",
    "run_signers",
]

#: The pallas-network release lines the harness is built against (its Cargo.toml): "1" is 1.4.0,
#: "1.1.1" what current Mithril pins (``internal/mithril-dmq/Cargo.toml``; its own program, v1_1_1/).
PALLAS_VERSIONS = ("1", "1.1.1", "0.35", "0.34")
#: The lines that send the legacy layout (id inside the payload, docs/protocol/message.md 5.5).
LEGACY_VERSIONS = frozenset({"0.35", "0.34"})
ENV_VAR = "DMQ_PALLAS_INTEROP"
PROGRAM = "dmq-pallas-interop"


def harness_path(env_var: str = ENV_VAR, program: str = PROGRAM) -> Path:
    """The built program: ``$DMQ_PALLAS_INTEROP``, else the build script's default place.

    ``env_var`` and ``program`` name another harness the same script builds (tests/interop/mithril).
    """
    explicit = os.environ.get(env_var)
    if explicit:
        return Path(explicit)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    target = Path(os.environ.get("CARGO_TARGET_DIR") or cache / "dmq-node" / "interop-target")
    return target / "release" / program


def run_signer(program: Path, version: str, socket: Path, magic: int, raws: Iterable[bytes], *,
               shared_connection: bool = False, connection: str | None = None, pace_ms: int = 0,
               timeout: float = 120) -> list[dict[str, Any]]:
    """Publish each message as a signer on ``version`` (a connection each, torn down after MsgDone;
    all on one with ``shared_connection``; ``connection="mithril"``: Mithril's publisher exactly,
    each client dropped after MsgDone without ``abort``, its socket left open while the program
    runs); one result per message, with the descriptors the program then holds (``fds``)."""
    lines = "".join(raw.hex() + "\n" for raw in raws)
    connection = connection or ("shared" if shared_connection else "per-message")
    done = subprocess.run([os.fspath(program), version, "signer", "--socket", os.fspath(socket), "--magic", str(magic),
                           "--connection", connection, "--pace-ms", str(pace_ms)],
                          input=lines, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=_descriptors_to_hard_limit)
    assert done.returncode == 0, f"pallas signer {version} exited {done.returncode}: {done.stderr[-2000:]}"
    return [json.loads(line) for line in done.stdout.splitlines()]


def _descriptors_to_hard_limit() -> None:
    """In the child before exec: Mithril's pattern holds a descriptor per publication for the
    life of the program, so it may open as many as the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def run_signers(program: Path, version: str, socket: Path, magic: int, streams: list[list[bytes]],
                timeout: float = 120) -> list[list[dict[str, Any]]]:
    """One signer process per stream, all at once, each submitting its stream on one connection."""
    with ThreadPoolExecutor(len(streams)) as pool:
        return list(pool.map(lambda raws: run_signer(program, version, socket, magic, raws, shared_connection=True,
                                                     timeout=timeout), streams))


class HarnessProcess:
    """A long-running role (aggregator or server), its JSON lines collected by a reader thread."""

    def __init__(self, program: Path, version: str, role: str, *args: str) -> None:
        self.command = [os.fspath(program), version, role, *args]
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.events: list[dict[str, Any]] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30,
                 count: int = 1) -> list[dict[str, Any]]:
        """Until ``count`` events (seen so far or to come) satisfy ``predicate``; returns them."""
        deadline = time.monotonic() + timeout
        while len(matching := [event for event in self.events if predicate(event)]) < count:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{self.describe()}: {len(matching)} of {count} awaited events in {timeout} s; "
                                     f"last events: {self.events[-5:]}") from None
            if line is None:
                raise AssertionError(f"{self.describe()} ended with {len(matching)} of {count} awaited events: "
                                     f"{self.stderr()} last events: {self.events[-5:]}")
            self.events.append(json.loads(line))
        return matching[:count]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event.get("event") == kind]

    def describe(self) -> str:
        return " ".join(self.command[1:3])

    def stderr(self) -> str:
        if self.process.poll() is None or self.process.stderr is None:
            return ""
        return self.process.stderr.read()[-2000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self._reader.join(timeout=10)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> HarnessProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
