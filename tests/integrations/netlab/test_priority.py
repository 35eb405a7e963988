"""The run above its nodes: a node started through the prefix runs at the nodes' niceness in its
own session's autogroup too, and the run's own priority is raised only while it runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from integrations.netlab.priority import RunPriority, autogroup_niceness, lowered
from tests.interop.conftest import missing_tool


def _wait_for(read, wanted, seconds: float = 20.0):
    deadline = time.monotonic() + seconds
    while (value := read()) != wanted and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def test_a_process_started_through_the_prefix_is_lowered_in_its_own_session():
    own = os.getpriority(os.PRIO_PROCESS, 0)
    # As a node starts: a session of its own (and so, with autogroups, an autogroup of its own).
    child = subprocess.Popen([*lowered(19, own), sys.executable, "-c", "import time; time.sleep(60)"],
                             start_new_session=True)
    try:
        assert _wait_for(lambda: os.getpriority(os.PRIO_PROCESS, child.pid), 19) == 19
        if autogroup_niceness() is not None:
            assert _wait_for(lambda: autogroup_niceness(child.pid), 19) == 19
        # The prefix execs all the way: the pid is the Python process's.
        assert _wait_for(lambda: open(f"/proc/{child.pid}/cmdline", "rb").read().split(b"\0")[0],
                         sys.executable.encode()) == sys.executable.encode()
    finally:
        child.kill()
        child.wait()


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
