"""The allocator a simulation runs on (``--allocator``, lab/simnet/heap.py): the run starts itself
again on glibc's malloc with transparent huge pages when asked (or from 500 nodes), once, and its
report says which allocator its nodes ran on."""

from __future__ import annotations

import json

import pytest

from lab.simnet import heap
from tests.dmq.cli.conftest import run_dmq

_SMALL_RUN = ["simnet", "--nodes", "4", "--pools", "8", "--period", "4", "--duration", "4", "--warmup", "10",
              "--drain", "20", "--kill-fraction", "0", "--partition-fraction", "0", "--no-flood", "--seed", "3",
              "--check"]


@pytest.mark.parametrize("allocator, restarted", [("huge-pages", True), ("auto", False)])
def test_a_run_starts_again_on_the_allocator_it_asks_for_and_reports_it(tmp_path, monkeypatch, allocator, restarted):
    for name in ("PYTHONMALLOC", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    report = tmp_path / "report.json"
    done = run_dmq([*_SMALL_RUN, "--allocator", allocator, "--report", str(report)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("starting again on glibc's malloc") == (1 if restarted else 0), done.stdout
    written = json.loads(report.read_text())
    assert written["allocator"] == ("huge-pages" if restarted else "python")
    assert written["complete"] and written["accepted"] > 0


def _restarts(monkeypatch, choice, nodes, environ):
    """The environment ``restart_with`` would start the program again with, or None if it would not."""
    for name in ("PYTHONMALLOC", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    started = []
    heap.restart_with(choice, nodes, lambda text: None, execute=lambda program, argv, env: started.append(env))
    return started[0] if started else None


def test_auto_means_huge_pages_from_500_nodes_and_leaves_a_callers_choice_alone(monkeypatch):
    assert _restarts(monkeypatch, "auto", heap.HUGE_PAGES_FROM - 1, {}) is None
    env = _restarts(monkeypatch, "auto", heap.HUGE_PAGES_FROM, {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"})
    assert env["PYTHONMALLOC"] == "malloc"
    assert env["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
    assert heap.allocator_in_use(env) == "huge-pages"
    # The caller chose an allocator in the environment: auto keeps it, an explicit choice does not.
    assert _restarts(monkeypatch, "auto", 1000, {"PYTHONMALLOC": "pymalloc"}) is None
    assert _restarts(monkeypatch, "huge-pages", 4, {"PYTHONMALLOC": "pymalloc"})["PYTHONMALLOC"] == "malloc"


def test_python_removes_the_huge_pages_and_keeps_other_tunables(monkeypatch):
    on = {"PYTHONMALLOC": "malloc", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1:glibc.malloc.arena_max=2"}
    assert _restarts(monkeypatch, "huge-pages", 4, on) is None  # already on them: no second start
    env = _restarts(monkeypatch, "python", 1000, on)
    assert "PYTHONMALLOC" not in env and env["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2"
    assert heap.allocator_in_use(env) == "python"
    with pytest.raises(ValueError, match="--allocator must be one of"):
        heap.restart_with("jemalloc", 4, lambda text: None)
