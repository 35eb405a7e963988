#!/usr/bin/env bash
# The default test run (what CI runs): everything but the long suites marked slow. It lists its 15
# slowest tests, so a run that creeps towards its 15-minute budget shows where the time went.
set -uo pipefail
cd "$(dirname "$0")/.."
# The Rust interop harnesses are built first. Outside CI a failed build only makes their tests
# skip, with the reason; under CI it fails the run with the one line the script printed.
build_harness() {  # build_harness NAME VARIABLE: exports VARIABLE (the program) or VARIABLE_MISSING
    local program
    if program="$(bash scripts/build-interop.sh "$1")"; then
        export "$2=$program"
        unset "$2_MISSING"
    elif [ -n "${CI:-}" ]; then
        exit 1
    else
        export "$2_MISSING=the $1 interop harness did not build (see the line above)"
    fi
}
build_harness pallas DMQ_PALLAS_INTEROP
build_harness mithril DMQ_MITHRIL_INTEROP
# Every node, command and harness the tests start is a new Python process. Where
# PYTHONDONTWRITEBYTECODE is set, none of them writes the bytecode it compiles, so each one
# compiled every project module it imports again (about 0.4 s a process): compile them once here.
.venv/bin/python -m compileall -q -j 0 -x '(^|/)(\.venv|\.git|node_modules|target)/' . >/dev/null \
    || echo "run-tests: compiling the project's modules failed; the tests will show why" >&2
# Two worker processes (pytest-xdist): most of the suite's time is tests waiting on nodes, Cardano
# epochs and JVMs rather than using a core, so two workers on two cores take about half the wall time.
# Each worker has its own session fixtures (one local Spark session each). Give `-n 0` after the
# command to run in this process instead (a debugger, `-x` on the first failure in order).
.venv/bin/python -m pytest -m "not slow" -q -n 2 --durations=15 "$@"
rc=$?
# pytest exits 5 when it collected nothing; that is a failure of the suite, not a pass.
exit $rc
