"""SIGKILL a process that appends in a loop: every acknowledged message must survive."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from dmq.clock import SystemClock
from dmq.mempool import DurableMempool

from tests.conftest import ROOT
from .messages import decode


def run_and_kill(path, submitters: int, rng: random.Random) -> dict[bytes, int]:
    """Start the writer, kill it at a random moment, return the acknowledged ``id -> index``."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.dmq.mempool.crash_writer", str(path), str(submitters)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout.readline() == b"ready\n", child.stderr.read().decode()
        time.sleep(rng.uniform(0.05, 0.6))
    finally:
        child.send_signal(signal.SIGKILL)
        # Read on through the same buffered stream: ``readline`` may have buffered lines past
        # ``ready`` (on a busy machine the writer can be far ahead), and ``communicate`` would
        # read the descriptor behind that buffer, starting in the middle of a line. The child
        # is dead, so neither pipe can block it.
        output = child.stdout.read()
        child.stderr.read()
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    acknowledged = {}
    for line in output.split(b"\n")[:-1]:  # an unterminated last line was cut by the kill
        index, message_id = line.split()
        acknowledged[bytes.fromhex(message_id.decode())] = int(index)
    return acknowledged


def check_survivors(path, acknowledged: dict[bytes, int]) -> int:
    mempool = DurableMempool(path, SystemClock(), decode=decode)
    try:
        held = {entry.message_id: entry.index for entry in mempool}
        missing = {mid.hex(): index for mid, index in acknowledged.items() if held.get(mid) != index}
        assert not missing, f"acknowledged but lost or moved: {missing}"
        assert mempool.load_report.corrupt == ()
        indices = [entry.index for entry in mempool]
        assert indices == sorted(set(indices))
        assert mempool.next_index > max(indices, default=-1)
        return len(held)
    finally:
        mempool.close()


def crash_rounds(path, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    total_acknowledged: dict[bytes, int] = {}
    for _ in range(rounds):
        acknowledged = run_and_kill(path, submitters=rng.choice([1, 8, 32]), rng=rng)
        assert acknowledged, "the writer acknowledged nothing before the kill"
        total_acknowledged.update(acknowledged)
        held = check_survivors(path, total_acknowledged)
        assert held >= len(total_acknowledged)


def test_every_acknowledged_message_survives_sigkill(tmp_path):
    crash_rounds(tmp_path / "store", rounds=3, seed=random.randrange(2**32))


@pytest.mark.slow
def test_every_acknowledged_message_survives_many_sigkills(tmp_path):
    crash_rounds(tmp_path / "store", rounds=40, seed=random.randrange(2**32))
