"""The README's Operator section stays true: its ``dmq-node`` and ``dmq`` command lines use flags the
programs accept and the paths the systemd unit gives the node, the files it installs exist, and
the wheel it names is the one the build makes.

(Running those commands is done elsewhere: tests/operator/test_wheel.py builds and installs the
wheel and runs the commands, test_check.py and test_db.py run ``--check`` and ``dmq db``.)
"""

from __future__ import annotations

import re
import shlex
import tomllib

from dmq.cli.node import build_parser as node_parser
from dmq.cli.node_flags import FLAG_KEYS
from dmq.cli.tool import build_parser as tool_parser
from tests.conftest import ROOT

from .test_systemd_unit import UNIT, _commands


def _operator_commands() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Operator\n", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", section, flags=re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv:
                commands.append(argv)
    return commands


def _program(argv: list[str]) -> tuple[str, list[str]]:
    """``sudo -u dmq /opt/dmq-node/bin/dmq db info`` -> (``/opt/dmq-node/bin/dmq``, ``[db, info]``)."""
    if argv[:1] == ["sudo"]:
        argv = argv[3:] if argv[1:2] == ["-u"] else argv[1:]
    return argv[0], argv[1:]


def test_node_and_tool_command_lines_parse_and_use_the_units_paths():
    start = _commands(UNIT.read_text())["ExecStart"]
    unit = node_parser().parse_args(start[1:])
    seen = set()
    for argv in _operator_commands():
        program, args = _program(argv)
        if program.endswith("/dmq-node"):
            parsed = node_parser().parse_args(args)
        elif program.endswith("/dmq"):
            parsed = tool_parser().parse_args(args)
        else:
            continue
        seen.add((program.rsplit("/", 1)[1], args[0]))
        assert program.rsplit("/", 1)[0] == start[0].rsplit("/", 1)[0], program  # the unit's installation
        database = getattr(parsed, "DatabasePath", None) or getattr(parsed, "database_path", None)
        assert database in (None, unit.DatabasePath), argv
        assert getattr(parsed, "LocalAddress", None) in (None, unit.LocalAddress), argv
    assert {("dmq-node", "--version"), ("dmq-node", "--check"), ("dmq", "db")} <= seen


def test_the_files_it_installs_exist_and_the_wheel_is_the_one_built():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for argv in _operator_commands():
        for word in argv:
            if word.startswith("deploy/"):
                assert (ROOT / word).is_file(), word
            if word.endswith(".whl"):
                assert word == f"dist/dmq_node-{version}-py3-none-any.whl", word


def test_the_manual_checks_run_the_unit_s_check_for_a_running_and_a_stopped_node():
    """Both check lines give the configuration the unit starts the node with (so the ports and the
    socket they judge are the node's), one of them with --running (tests/operator/test_check_running.py)."""
    unit = vars(node_parser().parse_args(_commands(UNIT.read_text())["ExecStartPre"][1:]))
    checks = []
    for argv in _operator_commands():
        program, args = _program(argv)
        if program.endswith("/dmq-node") and "--check" in args:
            checks.append(vars(node_parser().parse_args(args)))
    assert sorted(check["running"] for check in checks) == [False, True]
    for check in checks:
        assert {key: check[key] for key in FLAG_KEYS} == {key: unit[key] for key in FLAG_KEYS}
