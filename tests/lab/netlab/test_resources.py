"""A process's memory as ``/proc/<pid>/status`` gives it: the resident set and its parts."""

from __future__ import annotations

import os
import subprocess
import sys

from lab.netlab.resources import read_memory_bytes, read_rss_bytes


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
