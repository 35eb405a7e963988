"""The wake probe of ``bench/diffusion_cost.py --count-wakes`` (bench/wake_count.py), on a real process."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench import wake_count

PROGRAM = """
import trio

async def tick(scope):
    for _ in range(5):
        await trio.sleep(0.2)
    scope.cancel()

async def idle():
    await trio.sleep(10)

async def main():
    async with trio.open_nursery() as nursery:
        nursery.start_soon(idle)
        nursery.start_soon(tick, nursery.cancel_scope)

trio.run(main)
"""


def test_a_process_counts_its_wakes_by_the_task_that_woke(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))  # restored after the test
    monkeypatch.setenv("DMQ_WAKE_PROBE_DIR", "")
    wake_count.enable(tmp_path / "wakes")
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", PROGRAM], check=True, timeout=60, env=dict(os.environ))
    end = time.monotonic()
    [written] = list((tmp_path / "wakes").glob("*.json"))
    summary = wake_count.summarize(tmp_path / "wakes", start, end)
    assert summary["nodes"] == 1
    causes = dict(summary["by_cause"])
    # Five sleeps of 0.2 s: five timer wakes of the sleeping task, none of the idle one.
    assert round(causes["__main__.tick"] * (end - start)) == 5
    assert "__main__.idle" not in causes
    assert summary["by_node"] == [summary["per_second"]]
    assert wake_count.summarize(tmp_path / "wakes", end, end + 10)["per_second"] == 0
