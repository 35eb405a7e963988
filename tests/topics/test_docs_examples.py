"""docs/topics.md runs as written.

Every ``sh`` block of the page runs, in the page's order, in one ``bash`` (``-e``, so the first
failing command stops the session) in an empty directory, with this tree's ``dmq`` and
``dmq-node`` first on the ``PATH``: the page generates a pool, starts a ``dmq-node`` process and
drives it with the ``dmq topic`` commands. A ``text`` block right after a ``sh`` block is what
that block prints: line for line, where ``<...>`` stands for one word and ``...`` for the
rest of a line or, alone on a line, for any lines. Every ``json`` block is a configuration
that the node reads without complaint, every ``python`` block a program that exits 0.

The walkthrough starts some forty processes (a minute on an idle machine, many more on a
shared one), so it runs with the slow tests (``-m slow``); every command line of it is parsed
by the real ``dmq`` and ``dmq-node`` parsers in the default run.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dmq.config import read_config
from tests.conftest import ROOT

DOC = ROOT / "docs" / "topics.md"
#: Seconds one block may take: each command is a process of its own, and a shared machine is slow.
BLOCK_TIMEOUT = 600.0


def blocks() -> list[tuple[str, str]]:
    """``(language, text)`` of every fenced block of the page, in order."""
    return [(lang, text) for lang, text in re.findall(r"^```(\w*)[^\n]*\n(.*?)^```", DOC.read_text(), flags=re.M | re.S)]


def commands_and_outputs() -> list[tuple[str, str | None]]:
    """Each ``sh`` block with the ``text`` block that follows it, if one does."""
    found = blocks()
    out = []
    for i, (lang, text) in enumerate(found):
        if lang == "sh":
            follows = found[i + 1] if i + 1 < len(found) else ("", "")
            out.append((text, follows[1] if follows[0] == "text" else None))
    return out


def _line_pattern(expected: str) -> re.Pattern[str]:
    pattern = ""
    for part in re.split(r"(<[^>]+>|\.\.\.)", expected):
        if part == "...":
            pattern += ".*"
        elif part.startswith("<") and part.endswith(">"):
            pattern += r"\S+"
        else:
            pattern += re.escape(part)
    return re.compile(pattern)


def matches(expected: str, actual: list[str]) -> bool:
    """Whether the printed lines are the expected ones (``...`` alone on a line: any lines)."""
    wanted = expected.rstrip("\n").split("\n")

    def walk(i: int, j: int) -> bool:
        if i == len(wanted):
            return j == len(actual)
        if wanted[i] == "...":
            return any(walk(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and _line_pattern(wanted[i]).fullmatch(actual[j]) is not None and walk(i + 1, j + 1)

    return walk(0, 0)


def test_the_matching_of_outputs_is_strict():
    assert matches("published id=<hex> inner=<hex>\n", ["published id=ab12 inner=cd"])
    assert not matches("published id=<hex> inner=<hex>\n", ["published id=ab12"])
    assert not matches("a\n", ["a", "b"]) and matches("a\n...\n", ["a", "b", "c"])
    assert matches("x=1 ... z=3\n", ["x=1 y=2 z=3"]) and not matches("x=1 ... z=3\n", ["x=1 y=2 z=4"])
    assert not matches("id=<hex>\n", ["id=a b"])


def test_the_page_has_the_examples_this_test_runs():
    langs = [lang for lang, _ in blocks()]
    assert langs.count("sh") >= 10 and "json" in langs and "python" in langs
    assert all(lang in ("sh", "text", "json", "python", "cddl") for lang in langs), set(langs)
    commands = "\n".join(text for text, _ in commands_and_outputs())
    for command in ("dmq-node --topics", "topic upsycle multicast", "topic upsycle unicast", "topic upsycle advertise",
                    "topic join", "topic leave", "topic blocklace create", "topic blocklace event",
                    "topic blocklace propose-epoch", "topic blocklace ack-epoch", "topic dmsg publish",
                    "--json", "--tag", "topic private members"):
        assert command in commands, command


#: ``dmq ...`` or ``dmq-node ...`` up to the end of its command: a pipe, ``)``, ``;``, ``&`` or a redirection.
_COMMAND = re.compile(r"(?:^|\$\(|\|\s*|;\s*|do\s+)\s*(dmq(?:-node)?) ([^|);&>\n]*)", re.M)


def command_lines() -> list[tuple[str, list[str]]]:
    """Every ``dmq`` and ``dmq-node`` command of the ``sh`` blocks, continuation lines joined."""
    found = []
    for block, _ in commands_and_outputs():
        for program, arguments in _COMMAND.findall(block.replace("\\\n", " ")):
            found.append((program, shlex.split(arguments)))
    return found


def test_every_command_line_of_the_page_parses():
    from dmq.cli.node import build_parser as node_parser
    from dmq.cli.tool import build_parser as tool_parser

    lines = command_lines()
    assert len(lines) >= 40
    for program, argv in lines:
        parser = node_parser() if program == "dmq-node" else tool_parser()
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{program} {' '.join(argv)}: refused by its parser")


def test_the_configuration_example_is_read_as_written(tmp_path):
    from topics.classify import ADAPTER_TAGS

    examples = [text for lang, text in blocks() if lang == "json"]
    assert examples
    for text in examples:
        document = json.loads(text)
        path = tmp_path / "dmq.config.json"
        path.write_text(text)
        config = read_config({"ConfigFile": str(path)})
        assert config.topics_carried == tuple(document["TopicsCarried"])
        known = {"raw", *ADAPTER_TAGS}
        assert {name for name, _ in config.topic_budgets or ()} <= known


def test_the_python_examples_run(tmp_path):
    for text in (text for lang, text in blocks() if lang == "python"):
        done = subprocess.run([sys.executable, "-c", text], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class Shell:
    """One ``bash -e`` fed block after block; its standard output read line by line."""

    def __init__(self, directory: Path) -> None:
        bin_dir = Path(sys.executable).parent
        env = {key: value for key, value in os.environ.items() if not key.startswith("DMQ_")}
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
        self.errors = directory / "stderr.txt"
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-s"], cwd=directory, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors.open("w"), start_new_session=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def run(self, block: str, number: int) -> list[str]:
        """The lines ``block`` printed; fails with bash's standard error when a command failed."""
        marker = f"--- end of block {number} ---"
        assert self.process.stdin is not None
        self.process.stdin.write(f"{block}\necho '{marker}'\n")
        self.process.stdin.flush()
        printed = []
        while True:
            try:
                line = self.lines.get(timeout=BLOCK_TIMEOUT)
            except queue.Empty:
                pytest.fail(f"block {number} still running after {BLOCK_TIMEOUT} s:\n{block}")
            if line is None:
                pytest.fail(f"block {number} failed:\n{block}\nprinted: {printed}\nstderr: {self.errors.read_text()}")
            if line == marker:
                return printed
            printed.append(line)

    def close(self) -> None:
        """Ends the shell and whatever it left running (a node the page did not stop)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_walkthrough_runs_against_a_dmq_node(tmp_path):
    shell = Shell(tmp_path)
    try:
        for number, (block, expected) in enumerate(commands_and_outputs()):
            printed = shell.run(block, number)
            if expected is not None:
                assert matches(expected, printed), f"block {number}:\n{block}\nexpected:\n{expected}\nprinted:\n" + \
                    "\n".join(printed)
        # The page stopped its node (SIGTERM): it ended cleanly and said so.
        pid = int((tmp_path / "node.pid").read_text())
        deadline = time.monotonic() + 120
        while _running(pid):
            assert time.monotonic() < deadline, "the node did not stop"
            time.sleep(0.2)
        assert '"NodeStopped"' in (tmp_path / "node.log").read_text()
    finally:
        shell.close()
