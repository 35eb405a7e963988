"""tests/worker_crashes.py on a real pytest-xdist run: a worker killed by a segmentation fault."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def test_a_workers_fatal_error_is_printed_in_the_summary(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_dies.py").write_text(
        "import faulthandler\n\n"
        "def test_passes():\n    pass\n\n"
        "def test_dies_of_a_segmentation_fault():\n    faulthandler._sigsegv()\n")
    # A run of its own: nothing of this run's workers is passed down.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(ROOT)
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "1", "-p", "tests.worker_crashes",
                          "-p", "no:cacheprovider", "test_dies.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    summary = run.stdout[run.stdout.index("fatal error in worker gw0"):]
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Fatal Python error: Segmentation fault" in summary, run.stdout
    assert 'test_dies.py", line 7 in test_dies_of_a_segmentation_fault' in summary, summary
    assert "/_pytest/" not in summary and "Extension modules" not in summary, summary  # what every crash shares
    assert "worker 'gw0' crashed while running" in run.stdout, run.stdout
