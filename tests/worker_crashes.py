"""A pytest-xdist worker's fatal error, shown in the run's summary.

A worker that dies of a fatal signal (a segmentation fault, an abort) has faulthandler write
its threads' stacks to stderr, where they land among the other worker's progress dots, far above
the summary that a CI log keeps; the summary itself only says that the worker crashed while
running some test. So each worker writes those stacks to a file of its own, and the controller
prints every file that is not empty at the end of the run: the signal, the thread that took it and
the stacks then come with the failure they explain.

Loaded by ``tests/conftest.py``. A run without workers (``-n 0``) keeps pytest's own faulthandler
on stderr: there the process that crashes is the one printing the run.
"""

from __future__ import annotations

import faulthandler
import shutil
import tempfile
from pathlib import Path

import pytest

#: How the controller tells each worker where to write (``workerinput``, pytest-xdist).
_KEY = "fatal_error_directory"
_DIRECTORY = pytest.StashKey[Path]()
_FILE = pytest.StashKey[object]()
#: Frames printed per thread (innermost first).
FRAMES = 12
_RUNNER_FRAMES = ("/_pytest/", "/pluggy/", "/xdist/", "/execnet/", 'File "<string>"')


@pytest.hookimpl(trylast=True)  # after pytest's own faulthandler set-up, which this replaces
def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        directory = workerinput.get(_KEY)
        if directory is not None:
            report = open(Path(directory) / f"{workerinput['workerid']}.txt", "a")  # open for the whole run
            config.stash[_FILE] = report
            faulthandler.enable(file=report, all_threads=True)
    elif getattr(config.option, "numprocesses", None):
        config.stash[_DIRECTORY] = Path(tempfile.mkdtemp(prefix="pytest-fatal-errors-"))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Controller: a worker (or the one replacing a crashed worker) starts."""
    directory = node.config.stash.get(_DIRECTORY, None)
    if directory is not None:
        node.workerinput[_KEY] = str(directory)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    directory = config.stash.get(_DIRECTORY, None)
    if directory is None:
        return
    for report in sorted(directory.glob("*.txt")):
        lines = report.read_text(errors="replace").splitlines()
        if lines:
            terminalreporter.section(f"fatal error in worker {report.stem}", sep="=", red=True)
            for line in condensed(lines):
                terminalreporter.line(line)


def condensed(lines: list[str]) -> list[str]:
    """faulthandler's report without what every crash shares: the test runner's own frames
    (pytest, pluggy, pytest-xdist, execnet) and the list of loaded extension modules, and at most
    ``FRAMES`` frames a thread (the innermost: faulthandler lists each thread's most recent call
    first). A CI log keeps the end of a run's output, so the signal and the frames that took it
    must fit there."""
    kept: list[str] = []
    frames = 0
    for line in lines:
        if line.startswith("  File "):
            if any(part in line for part in _RUNNER_FRAMES):
                continue
            frames += 1
            if frames > FRAMES:
                continue
        elif line.startswith("Extension modules:") or not line.strip():
            continue
        else:
            frames = 0  # a thread's header: its frames follow
        kept.append(line)
    return kept


def pytest_unconfigure(config: pytest.Config) -> None:
    report = config.stash.get(_FILE, None)
    if report is not None:
        faulthandler.disable()
        report.close()
    directory = config.stash.get(_DIRECTORY, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
