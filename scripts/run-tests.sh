#!/usr/bin/env bash
# The default test run (what CI runs): everything but the long suites marked slow.
set -uo pipefail
cd "$(dirname "$0")/.."
# The pallas interop harness is built first. Outside CI a failed build only makes its tests
# skip, with the reason; under CI it fails the run with the one line the script printed.
if program="$(bash scripts/build-interop.sh)"; then
    export DMQ_PALLAS_INTEROP="$program"
    unset DMQ_PALLAS_INTEROP_MISSING
elif [ -n "${CI:-}" ]; then
    exit 1
else
    export DMQ_PALLAS_INTEROP_MISSING="the pallas interop harness did not build (see the line above)"
fi
.venv/bin/python -m pytest -m "not slow" -q "$@"
rc=$?
# pytest exits 5 when it collected nothing; that is a failure of the suite, not a pass.
exit $rc
