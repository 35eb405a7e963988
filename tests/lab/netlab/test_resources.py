"""A process's memory and CPU as ``/proc/<pid>/status`` and ``stat`` give them: the resident set and its
parts, user and system time."""

from __future__ import annotations

import os
import subprocess
import sys

from lab.netlab.resources import read_cpu_seconds, read_cpu_split, read_memory_bytes, read_rss_bytes


def test_the_resident_set_is_read_with_its_own_heap_files_and_shared_memory():
    held = bytearray(64 * 2**20)  # 64 MiB of the process's own heap, touched
    held[::4096] = b"x" * len(held[::4096])
    memory = read_memory_bytes(os.getpid())
    assert memory is not None and set(memory) == {"VmRSS", "RssAnon", "RssFile", "RssShmem"}
    assert memory["RssAnon"] >= 64 * 2**20
    assert memory["VmRSS"] == memory["RssAnon"] + memory["RssFile"] + memory["RssShmem"]
    assert read_rss_bytes(os.getpid()) >= memory["RssAnon"]


def test_a_process_that_is_gone_has_no_memory():
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    pid = int(child.stdout)
    assert read_memory_bytes(pid) is None and read_rss_bytes(pid) is None
    assert read_cpu_split(pid) is None


def test_user_and_system_time_are_read_apart_and_add_up_to_the_cpu_time():
    child = subprocess.Popen([sys.executable, "-c", """
import os, sys, time
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
end = time.process_time() + 0.6
while time.process_time() < end:
    os.stat("/")  # a system call a turn: the kernel's time
print("done", flush=True)
sys.stdin.read()
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "done\n"
        user, system = read_cpu_split(child.pid)
        # The kernel splits a process's time between user and system by sampling at its ticks, so
        # on a busy machine the split is rough: each part clearly there, the sum the 0.9 s spent.
        assert user > 0.15 and system > 0.05
        assert user + system >= 0.8
        assert abs(user + system - read_cpu_seconds(child.pid)) < 1e-9
    finally:
        child.kill()
        child.wait()
