"""The ``dmq`` command run as the operator runs it: a fresh interpreter, real exit status and stderr."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import trio

_ENTRY = "from dmq.cli.tool import main; main()"


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str

    def assert_operator_error(self, *fragments: str) -> None:
        """Exit 1 with exactly one line on stderr naming what is wrong, and no traceback."""
        assert self.returncode == 1, (self.returncode, self.stdout, self.stderr)
        assert "Traceback" not in self.stderr
        assert len(self.stderr.splitlines()) == 1, self.stderr
        for fragment in fragments:
            assert fragment in self.stderr, (fragment, self.stderr)


def run_dmq(args: list[str], cwd: Path, stdin: bytes | None = None) -> Completed:
    # A command takes seconds; the limit only stops one that hangs, so it leaves room for a loaded
    # machine (one key generation took over 60 s beside two simulations and a test run).
    done = subprocess.run([sys.executable, "-c", _ENTRY, *args], cwd=cwd, input=stdin, capture_output=True,
                          timeout=300)
    return Completed(done.returncode, done.stdout.decode(), done.stderr.decode())


async def run_dmq_async(args: list[str], cwd: Path, stdin: bytes = b"") -> Completed:
    """For commands that talk to a node running in the test's own trio loop."""
    done = await trio.run_process([sys.executable, "-c", _ENTRY, *args], cwd=cwd, stdin=stdin,
                                  capture_stdout=True, capture_stderr=True, check=False)
    return Completed(done.returncode, done.stdout.decode(), done.stderr.decode())
