"""A reader that goes away (``dmq keys pool-id node.cert | head -1``) ends every command quietly.

Python ignores SIGPIPE, so without care a closed pipe is a ``BrokenPipeError`` traceback. The
commands run here as processes whose stdout is a real pipe whose reading end is already closed,
so the first write fails, whichever command it is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dmq.cli import CLOSED_PIPE
from tests.conftest import CONFORMANCE

DEVNET_BULK_CREDENTIALS = CONFORMANCE / "cardano-devnet" / "bulk-creds-k2.json"


def _run_into_closed_pipe(entry: str, args: list[str], cwd: Path) -> tuple[int, str]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes a byte
    try:
        done = subprocess.run([sys.executable, "-c", f"from {entry} import main; main()", *args], cwd=cwd,
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    return done.returncode, done.stderr


@pytest.mark.parametrize(("entry", "args"), [
    ("dmq.cli.tool", ["keys", "pool-id", "node1.cert"]),
    ("dmq.cli.node", ["--version"]),
])
def test_a_closed_pipe_ends_the_command_without_a_traceback(tmp_path: Path, entry: str, args: list[str]):
    opcert_envelope = json.loads(DEVNET_BULK_CREDENTIALS.read_text())[1][0]
    (tmp_path / "node1.cert").write_text(json.dumps(opcert_envelope))
    status, stderr = _run_into_closed_pipe(entry, args, tmp_path)
    assert (status, stderr) == (CLOSED_PIPE, "")


def test_head_reads_the_first_line(tmp_path: Path):
    """The operator's line, through a shell: ``head`` gets its line, the command says nothing."""
    opcert_envelope = json.loads(DEVNET_BULK_CREDENTIALS.read_text())[1][0]
    (tmp_path / "node1.cert").write_text(json.dumps(opcert_envelope))
    command = f"{sys.executable} -c 'from dmq.cli.tool import main; main()' keys pool-id node1.cert | head -1"
    done = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    assert len(done.stdout.splitlines()) == 1 and len(done.stdout.strip()) == 56
