"""Helpers for the configuration and command-line tests: files in a temporary folder, and
``dmq-node`` / ``dmq`` run as real processes (so exit status and stderr are the operator's)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def write_json(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2))
    return path


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


def run_entry_point(module: str, args: list[str], cwd: Path) -> Completed:
    """Run ``main()`` of ``dmq.cli.<module>`` in a fresh interpreter, as the console script does."""
    done = subprocess.run(
        [sys.executable, "-c", f"from dmq.cli.{module} import main; main()", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Completed(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test from an empty working directory (relative paths resolve against it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
