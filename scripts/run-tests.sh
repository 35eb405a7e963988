#!/usr/bin/env bash
# The default test run (what CI runs): everything but the long suites marked slow.
set -uo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest -m "not slow" -q "$@"
rc=$?
# pytest exits 5 when it collected nothing; that is a failure of the suite, not a pass.
exit $rc
