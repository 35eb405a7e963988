"""Fixtures for driving the third-party TypeScript Ouroboros peer from pytest.

The npm package is pinned to an exact version in ``package.json`` with a committed
``package-lock.json``; ``npm ci`` installs exactly that into ``node_modules`` (ignored by
git) the first time, and again whenever the lock file changes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

INTEROP_DIR = Path(__file__).resolve().parent
PACKAGE = "@harmoniclabs/ouroboros-miniprotocols-ts"
#: Written into node_modules after a successful ``npm ci``: the digest of the lock file it installed.
STAMP = ".installed-lock-sha256"


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
        pytest.skip(f"{missing} not installed: the TypeScript interop peer cannot run")
    if not _installed_matches_lock():
        env = {**os.environ, "npm_config_update_notifier": "false"}
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=INTEROP_DIR, capture_output=True,
                              stdin=subprocess.DEVNULL, text=True, timeout=600, env=env)
        if done.returncode != 0:
            pytest.fail(f"npm ci in {INTEROP_DIR} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        (INTEROP_DIR / "node_modules" / STAMP).write_text(_lock_digest() + "\n")
    return INTEROP_DIR
