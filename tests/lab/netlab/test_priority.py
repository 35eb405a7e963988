"""The run above its nodes: a node is lowered, every thread and its session's autogroup, once it
listens, and the run's own priority is raised only while it runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from lab.netlab.priority import RunPriority, autogroup_niceness, lower
from tests.interop.conftest import missing_tool


def _wait_for(read, wanted, seconds: float = 20.0):
    deadline = time.monotonic() + seconds
    while (value := read()) != wanted and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def test_the_run_priority_is_raised_inside_and_put_back_after():
    if os.geteuid() != 0:
        missing_tool("raising a process's priority needs root")
    before = (os.getpriority(os.PRIO_PROCESS, 0), autogroup_niceness())
    with RunPriority(-10) as priority:
        assert priority.problem is None
        assert os.getpriority(os.PRIO_PROCESS, 0) == -10
        assert autogroup_niceness() == (None if before[1] is None else -10)
    assert (os.getpriority(os.PRIO_PROCESS, 0), autogroup_niceness()) == before
    with RunPriority(None):
        assert (os.getpriority(os.PRIO_PROCESS, 0), autogroup_niceness()) == before


def test_a_running_process_is_lowered_in_every_thread_and_its_autogroup():
    # Two threads, as a node has (trio's and a worker): Linux keeps a niceness per thread.
    code = "import threading, time\nthreading.Thread(target=time.sleep, args=(60,)).start()\ntime.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        threads = _wait_for(lambda: len(os.listdir(f"/proc/{child.pid}/task")), 2)
        assert threads == 2
        lower(child.pid, 19)
        assert {os.getpriority(os.PRIO_PROCESS, int(tid)) for tid in os.listdir(f"/proc/{child.pid}/task")} == {19}
        if autogroup_niceness() is not None:
            assert autogroup_niceness(child.pid) == 19
    finally:
        child.kill()
        child.wait()
    lower(child.pid, 19)  # gone: nothing to do, nothing raised
