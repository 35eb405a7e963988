"""``dmq``: sub-commands found as modules of ``dmq.cli``, operator errors as one line."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Iterator

import pytest

import dmq.cli
from dmq.cli.tool import build_parser, run, subcommand_modules

from .conftest import run_entry_point

HELLO = '''
import argparse

def add_parser(subparsers):
    parser = subparsers.add_parser("say-hello", help="greet")
    parser.add_argument("--name", required=True)

def run(args):
    print(f"hello {args.name}")
    return 0
'''

FAILING = '''
from dmq.errors import OperatorError

def add_parser(subparsers):
    subparsers.add_parser("fail-politely")

def run(args):
    raise OperatorError("stake.json: the stake file is missing;\\ncreate it with dmq stake")
'''

BROKEN = '''
import a_module_that_is_not_installed

def add_parser(subparsers):
    subparsers.add_parser("never-seen")

def run(args):
    return 0
'''

NOT_A_COMMAND = '''
HELPER = 1
'''


@pytest.fixture
def extra_subcommands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Sub-command modules in a second folder of the ``dmq.cli`` package, imported for real."""
    folder = tmp_path / "more_commands"
    folder.mkdir()
    modules = {"zz_hello": HELLO, "zz_failing": FAILING, "zz_broken": BROKEN, "zz_helpers": NOT_A_COMMAND,
               "_zz_private": HELLO}
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.setattr(dmq.cli, "__path__", [*dmq.cli.__path__, str(folder)])
    yield folder
    for name in modules:
        sys.modules.pop(f"dmq.cli.{name}", None)


def test_version_subcommand(tmp_path: Path) -> None:
    done = run_entry_point("tool", ["version"], cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"dmq version: {metadata.version('dmq-node')}\n", "")


def test_the_entry_points_are_not_subcommands() -> None:
    names = {module.module_name for module in subcommand_modules()}
    assert "dmq.cli.version" in names
    assert not {"dmq.cli.node", "dmq.cli.tool"} & names
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert "version" in choices and "node" not in choices and "tool" not in choices


def test_a_new_module_adds_a_subcommand(extra_subcommands: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["say-hello", "--name", "pool1"]) == 0
    assert capsys.readouterr().out == "hello pool1\n"
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"say-hello", "fail-politely", "zz-broken", "version"} <= set(choices)
    assert "zz-helpers" not in choices and "never-seen" not in choices


def test_an_operator_error_is_one_line_and_status_1(extra_subcommands: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["fail-politely"]) == 1
    assert capsys.readouterr().err == (
        "dmq fail-politely: stake.json: the stake file is missing; create it with dmq stake\n"
    )


def test_a_module_that_cannot_import_does_not_break_the_others(
    extra_subcommands: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["version"]) == 0
    capsys.readouterr()
    assert run(["zz-broken"]) == 1
    assert capsys.readouterr().err == (
        "dmq zz-broken: this sub-command is unavailable: No module named 'a_module_that_is_not_installed'\n"
    )


def test_usage_errors_are_one_line(extra_subcommands: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run([])
    assert exited.value.code == 1
    assert capsys.readouterr().err == "dmq: the following arguments are required: COMMAND (see dmq --help)\n"
    with pytest.raises(SystemExit) as exited:
        run(["say-hello"])
    assert exited.value.code == 1
    assert capsys.readouterr().err == (
        "dmq say-hello: the following arguments are required: --name (see dmq say-hello --help)\n"
    )


def _commands(parser) -> dict:
    return parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]


def test_a_named_command_loads_only_its_module(tmp_path: Path) -> None:
    script = ("import json, sys\nfrom dmq.cli.tool import run\nrun(['version'])\n"
              "print(json.dumps(sorted(n for n in sys.modules if n.startswith('dmq.cli.'))))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert loaded == ["dmq.cli.tool", "dmq.cli.version"], loaded


def test_each_command_parses_alike_alone_and_among_all() -> None:
    everything = _commands(build_parser())
    for module in subcommand_modules():
        alone = _commands(build_parser([module]))
        assert alone, module.module_name
        for name, parser in alone.items():
            assert parser.format_help() == everything[name].format_help(), name
