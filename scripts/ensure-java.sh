#!/usr/bin/env bash
# Spark needs a Java runtime (8, 11, 17 or 21). Install one when it is absent and we can.
set -uo pipefail
if command -v java >/dev/null 2>&1; then
    exit 0
fi
echo "setup: no Java runtime found; Spark needs one. Trying to install it." >&2
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless >/dev/null \
        && exit 0
fi
echo "setup: could not install Java; install a JRE (e.g. 'apt-get install default-jre-headless') for the Spark pipeline." >&2
exit 0
