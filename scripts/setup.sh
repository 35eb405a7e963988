#!/usr/bin/env bash
# Create the project-local virtual environment and install everything the node, the tests
# and the Spark pipeline need. Safe to run again.
set -euo pipefail
python=${1:-python3}
venv=${2:-.venv}
cd "$(dirname "$0")/.."

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "setup: Python 3.11 or newer is needed (found: $("$python" --version 2>&1))" >&2
    exit 1
fi
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e ".[dev,spark]"
bash scripts/ensure-java.sh
# The unit file deploy/dmq-node.service is checked with systemd-analyze (tests/operator).
if ! command -v systemd-analyze >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null \
        || echo "setup: could not install systemd-analyze (package systemd); the unit-file test needs it" >&2
fi
# The dashboard test runs deploy/grafana/dmq-node.json's queries on a real Prometheus (tests/e2e).
if ! command -v prometheus >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null \
            || echo "setup: could not install prometheus (Debian package prometheus); the dashboard test needs it" >&2
    else
        echo "setup: prometheus is missing (Debian package prometheus, installed here only as root with apt-get); the dashboard test needs it" >&2
    fi
fi
