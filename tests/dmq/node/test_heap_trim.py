"""The C heap's free pages go back to the kernel after expiry (dmq/heap_trim.py).

The first test runs in a fresh interpreter, so that its heap is only what it builds: a window of
message-sized blocks turning over, as the mempool's does, then the oldest of them expire while
the newest, allocated above them, stay. glibc keeps the pages below the live top; a trim must
give them back.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from trio.testing import MockClock

from dmq.heap_trim import HeapTrimmer, release_free_heap
from dmq.metrics import NodeMetrics
from tests.dmq.node.test_trace_sinks import exposition

_PROJECT = Path(__file__).resolve().parents[3]

_CHURN = r"""
import json, random
from dmq.heap_trim import release_free_heap

def rss_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1])

random.seed(7)
held = []
for _ in range(200_000):
    held.append(bytes(random.randint(1_000, 3_000)))
    if len(held) > 30_000:
        del held[random.randrange(len(held) // 2)]
del held[:-2_000]
before = rss_kib()
trimmed = release_free_heap()
print(json.dumps({"before": before, "after": rss_kib(), "trimmed": trimmed}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the resident set from /proc")
def test_a_trim_gives_freed_pages_between_live_blocks_back():
    result = subprocess.run([sys.executable, "-c", _CHURN], cwd=_PROJECT, capture_output=True, text=True,
                            check=True, timeout=120)
    figures = json.loads(result.stdout)
    assert figures["trimmed"] is True
    # 28,000 blocks of 2 kB on average expired below the live ones: about 53 MiB, less what
    # the survivors of the turnover pin; the resident set must fall by at least 20 MiB.
    assert figures["before"] - figures["after"] > 20 * 1024, figures


def test_release_free_heap_answers_without_failing_when_nothing_is_free():
    release_free_heap()
    assert release_free_heap() in (True, False)


def test_the_trimmer_trims_once_per_interval_and_the_metrics_page_counts_it():
    trimmer = HeapTrimmer(interval=60.0)
    metrics = NodeMetrics()
    metrics.bind_heap_trims(lambda: trimmer.trims)

    async def main():
        with trio.move_on_after(150.0):
            await trimmer.run()

    trio.run(main, clock=MockClock(autojump_threshold=0))
    assert trimmer.trims == 2, "trims at 60 s and 120 s of 150"
    types, values = exposition(metrics.render())
    assert types["dmq_node_process_heapTrims_counter"] == "counter"
    assert values["dmq_node_process_heapTrims_counter", ()] == "2"
