"""Fixtures for driving third-party implementations from pytest.

* The TypeScript Ouroboros peer: the npm package is pinned to an exact version in
  ``package.json`` with a committed ``package-lock.json``; ``npm ci`` installs exactly that
  into ``node_modules`` (ignored by git) the first time, and again whenever the lock file
  changes.
* The pallas-network harness (``pallas/``): built by ``scripts/build-interop.sh`` before the
  test run; the node-process fixtures of the end-to-end tests are shared with these tests.

A missing tool skips these tests on a developer's machine, with the reason; under CI (the
``CI`` variable set) it fails them with one line saying what is missing.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import signers, start_node  # noqa: F401  (fixtures shared with the e2e tests)
from tests.interop.pallas_harness import ENV_VAR, harness_path

INTEROP_DIR = Path(__file__).resolve().parent
PACKAGE = "@harmoniclabs/ouroboros-miniprotocols-ts"
#: Written into node_modules after a successful ``npm ci``: the digest of the lock file it installed.
STAMP = ".installed-lock-sha256"
#: Held while one test process checks and installs node_modules (ignored by git).
INSTALL_LOCK = ".npm-ci.lock"


def missing_tool(what: str) -> None:
    """Fail under CI (one line, no traceback), skip elsewhere: a required tool is not there."""
    if os.environ.get("CI"):
        pytest.fail(what, pytrace=False)
    pytest.skip(what)


def _lock_digest() -> str:
    return hashlib.sha256((INTEROP_DIR / "package-lock.json").read_bytes()).hexdigest()


def _installed_matches_lock() -> bool:
    """Whether node_modules was installed by ``npm ci`` from the current lock file."""
    stamp = INTEROP_DIR / "node_modules" / STAMP
    return (stamp.is_file() and stamp.read_text().strip() == _lock_digest()
            and (INTEROP_DIR / "node_modules" / PACKAGE).is_dir())


@pytest.fixture(scope="session")
def node_peer() -> Path:
    """The directory holding the node scripts, with the pinned package installed."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(name for name, path in (("node", node), ("npm", npm)) if path is None)
        missing_tool(f"{missing} not installed: the TypeScript interop peer cannot run")
    # The test workers (pytest-xdist) each ask: one installs while the others wait for it and then
    # find the stamp, rather than two `npm ci` runs emptying node_modules under each other.
    with open(INTEROP_DIR / INSTALL_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed_matches_lock():
            env = {**os.environ, "npm_config_update_notifier": "false"}
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=INTEROP_DIR, capture_output=True,
                                  stdin=subprocess.DEVNULL, text=True, timeout=600, env=env)
            if done.returncode != 0:
                pytest.fail(f"npm ci in {INTEROP_DIR} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
            (INTEROP_DIR / "node_modules" / STAMP).write_text(_lock_digest() + "\n")
    return INTEROP_DIR


@pytest.fixture(scope="session")
def pallas_harness() -> Path:
    """The built pallas-network harness program."""
    unbuilt = os.environ.get(f"{ENV_VAR}_MISSING")
    if unbuilt:
        missing_tool(unbuilt)
    program = harness_path()
    if not os.access(program, os.X_OK):
        missing_tool(f"pallas interop harness not built at {program} (${ENV_VAR}): "
                     "run scripts/build-interop.sh (needs cargo and crates.io)")
    return program
