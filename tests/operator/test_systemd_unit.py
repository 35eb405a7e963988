"""``deploy/dmq-node.service``: systemd accepts it, and what it runs is what ``dmq-node`` accepts.

``systemd-analyze verify`` parses the unit as systemd would, without a running systemd (it
works in a container whose PID 1 is something else). It also insists that the programs of
``ExecStart=`` exist, and the unit names the installed path ``/opt/dmq-node/bin/dmq-node``, so
the verification runs with ``--root`` on a directory of its own holding the system's unit
files (for the default dependencies, such as ``sysinit.target``), the unit, and an executable at
that path. The unit's stop signal is systemd's default SIGTERM, which the node treats as a
clean stop (tests/e2e/test_stop.py).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from dmq.cli.node import build_parser
from dmq.config import NodeConfig
from tests.conftest import ROOT

DEPLOY = ROOT / "deploy"
UNIT = DEPLOY / "dmq-node.service"
ENVIRONMENT_FILE = DEPLOY / "dmq-node.env"
#: Where distributions keep the system's unit files.
_SYSTEM_UNIT_DIRS = (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system"))


def _systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is not None:
        return found
    reason = "systemd-analyze is missing (Debian/Ubuntu package systemd; scripts/setup.sh installs it as root)"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def _verify(unit_text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``systemd-analyze verify`` of ``unit_text`` installed as dmq-node.service in a root of its own."""
    analyze = _systemd_analyze()
    system_units = next((d for d in _SYSTEM_UNIT_DIRS if d.is_dir()), None)
    if system_units is None:
        pytest.fail(f"systemd-analyze is installed but none of {', '.join(map(str, _SYSTEM_UNIT_DIRS))} exists")
    root = tmp_path / "root"
    shutil.copytree(system_units, root / "usr/lib/systemd/system", symlinks=True)
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "etc/systemd/system/dmq-node.service").write_text(unit_text)
    for program in {PurePosixPath(command[0]) for command in _commands(unit_text).values()}:
        stub = root / program.relative_to("/")
        stub.parent.mkdir(parents=True, exist_ok=True)
        stub.write_text("#!/bin/sh\n")
        stub.chmod(0o755)
    return subprocess.run([analyze, "verify", f"--root={root}", "dmq-node.service"],
                          capture_output=True, text=True, timeout=60)


def _settings(unit_text: str) -> dict[str, list[str]]:
    """``Key`` -> every value given to it, in order (systemd allows a key more than once)."""
    found: dict[str, list[str]] = {}
    for line in unit_text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def _environment() -> dict[str, str]:
    values = {}
    for line in ENVIRONMENT_FILE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def _commands(unit_text: str) -> dict[str, list[str]]:
    """``ExecStart`` and ``ExecStartPre`` as argv, with systemd's expansion of the environment
    file's variables (``${VAR}``: one word; ``$VAR``: split at white space)."""
    environment = _environment()
    commands = {}
    for key in ("ExecStartPre", "ExecStart"):
        (line,) = _settings(unit_text)[key]
        line = line.lstrip("-@:+!")  # systemd's prefixes (failure ignored, ...), not part of the path
        argv: list[str] = []
        for word in shlex.split(line):
            whole = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
            if whole:
                argv.extend(environment[whole.group(1)].split())
            else:
                argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: environment[m.group(1)], word))
        commands[key] = argv
    return commands


def test_systemd_analyze_verify_accepts_the_unit(tmp_path):
    done = _verify(UNIT.read_text(), tmp_path)
    assert (done.returncode, done.stdout + done.stderr) == (0, ""), (
        f"systemd-analyze verify: exit {done.returncode}: {done.stdout}{done.stderr}")


def test_systemd_analyze_verify_reports_a_mistake(tmp_path):
    """The verification above can fail: a misspelt key is reported."""
    broken = UNIT.read_text().replace("ProtectSystem=strict", "ProtectSytem=strict")
    done = _verify(broken, tmp_path)
    assert "Unknown key 'ProtectSytem'" in done.stdout + done.stderr


def test_the_unit_orders_after_cardano_node_and_sandboxes_the_node():
    settings = _settings(UNIT.read_text())
    assert "cardano-node.service" in " ".join(settings["After"])
    assert "cardano-node.service" in " ".join(settings["Wants"])
    assert settings["Restart"] == ["on-failure"]
    assert settings["User"] == ["dmq"] and settings["Group"] == ["dmq"] and settings["SupplementaryGroups"]
    assert "KillSignal" not in settings  # SIGTERM: a clean stop for the node
    for key, value in {"ProtectSystem": "strict", "ProtectHome": "yes", "NoNewPrivileges": "yes",
                       "PrivateTmp": "yes"}.items():
        assert settings[key] == [value], key
    assert set(settings["RestrictAddressFamilies"][0].split()) == {"AF_UNIX", "AF_INET", "AF_INET6"}


def test_the_unit_runs_flags_dmq_node_accepts_in_the_directories_systemd_gives_it():
    settings = _settings(UNIT.read_text())
    state = PurePosixPath("/var/lib") / settings["StateDirectory"][0]
    runtime = PurePosixPath("/run") / settings["RuntimeDirectory"][0]
    commands = _commands(UNIT.read_text())
    assert commands["ExecStartPre"] == [commands["ExecStart"][0], "--check", *commands["ExecStart"][1:]]
    # The check's failure does not stop the start: the node refuses real problems itself, and
    # starts with a warning on what the check only doubts (a private network's magic).
    assert settings["ExecStartPre"][0].startswith("-/")
    assert settings["RuntimeDirectoryPreserve"] == ["yes"]  # a manual check of a stopped node finds the directory
    flags = vars(build_parser().parse_args(commands["ExecStartPre"][1:]))
    assert flags["check"] is True
    assert PurePosixPath(flags["DatabasePath"]).parent == state
    assert PurePosixPath(flags["LocalAddress"]).parent == runtime
    assert flags["ConfigFile"] and flags["TopologyFile"] and flags["IPv4"]
    # The socket is created 0660 with the group dmq; the directory must let that group through.
    assert NodeConfig().local_socket_mode == 0o660
    assert int(settings["RuntimeDirectoryMode"][0], 8) & 0o050 == 0o050
