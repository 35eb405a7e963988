"""Shared test fixtures: where the conformance data lives; the Hypothesis profiles."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from hypothesis import settings

#: A worker's fatal error (a segmentation fault, an abort) printed in the run's summary.
pytest_plugins = ["tests.worker_crashes"]

ROOT = Path(__file__).resolve().parent.parent
#: Upstream golden vectors, KES files and devnet credentials, copied into the repository with
#: a note of their sources (``tests/data/README.md``).
CONFORMANCE = ROOT / "tests" / "data"

# The default run (CI) draws the same examples every time, so a red build points at the change
# that made it red; `HYPOTHESIS_PROFILE=explore` draws fresh ones (and bench/reliability_fuzz.py
# runs 100,000 inputs per codec) to look for new counterexamples, which then become @example.
# No per-example deadline: how long one example takes on a shared machine is not a property of
# the code under test (pytest-timeout still ends a test that hangs).
settings.register_profile("default-run", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default-run"))

# A test run started in the background by a shell without job control (`make test &` in a
# script) inherits SIGINT ignored, and so would every node process the tests start: a node
# keeps an inherited "ignore" (as `nohup` and background jobs expect), so the tests that stop a
# node with SIGINT, as Ctrl-C does, would wait for it in vain. The run restores Ctrl-C's default
# for itself and therefore for the nodes it starts.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _require_conformance() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.fail(f"conformance data not found at {CONFORMANCE} (part of the repository: is the checkout complete?)")
    return CONFORMANCE


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    return _require_conformance()


@pytest.fixture(scope="session")
def vectors() -> dict:
    return json.loads((_require_conformance() / "vectors.json").read_text())
