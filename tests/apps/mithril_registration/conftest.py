"""The Mithril harness (tests/interop/mithril), for the tests that ask Mithril's own code."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.interop.conftest import missing_tool
from tests.interop.pallas_harness import harness_path

ENV_VAR = "DMQ_MITHRIL_INTEROP"


@pytest.fixture(scope="module")
def harness() -> Path:
    unbuilt = os.environ.get(f"{ENV_VAR}_MISSING")
    if unbuilt:
        missing_tool(unbuilt)
    program = harness_path(ENV_VAR, "dmq-mithril-interop")
    if not os.access(program, os.X_OK):
        missing_tool(f"mithril interop harness not built at {program} (${ENV_VAR}): "
                     "run scripts/build-interop.sh mithril (needs cargo and crates.io)")
    return program


def run_harness(program: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(program), *args], input=stdin, capture_output=True, text=True, timeout=120)
