#!/usr/bin/env bash
# Builds one Rust interop harness and prints the path of its program; on failure prints ONE
# line saying what is missing, on standard error, and exits 1.
#   scripts/build-interop.sh [pallas]   tests/interop/pallas: pallas-network's clients and servers
#   scripts/build-interop.sh mithril    tests/interop/mithril: Mithril signer registrations (mithril-common)
# The target directory lives outside the checkout (CARGO_TARGET_DIR, else the user's cache),
# so a fresh clone on the same machine reuses the compiled crates.
set -uo pipefail
cd "$(dirname "$0")/.."
harness="${1:-pallas}"
case "$harness" in
    pallas) program=dmq-pallas-interop ;;
    mithril) program=dmq-mithril-interop ;;
    *) echo "build-interop.sh: unknown harness '$harness' (pallas or mithril)" >&2; exit 1 ;;
esac
crate="tests/interop/$harness"
label="$harness interop harness"
target="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dmq-node/interop-target}"
cargo="$(command -v cargo || true)"
if [ -z "$cargo" ] && [ -x "$HOME/.cargo/bin/cargo" ]; then
    cargo="$HOME/.cargo/bin/cargo"  # rustup's place, often not on a non-login PATH
fi
if [ -z "$cargo" ]; then
    echo "$label: cargo not found (install a Rust toolchain)" >&2
    exit 1
fi
# The target directory is shared by every checkout on the machine, and cargo judges the harness
# fresh by the files of whichever checkout built it last: a checkout whose sources differ would
# get that other build. So the harness's own artifacts are dropped (dependencies are kept) when
# the sources differ from the ones of the last build.
# The pallas harness is two packages: the harness, and its pallas-network 1.1.1 program
# (v1_1_1/, its own dependency graph, since cargo admits one 1.x release per graph), which the
# harness runs for version 1.1.1.
case "$harness" in
    pallas) manifests="$crate/Cargo.toml $crate/v1_1_1/Cargo.toml"
            source_files="Cargo.toml Cargo.lock src v1_1_1/Cargo.toml v1_1_1/Cargo.lock v1_1_1/src" ;;
    mithril) manifests="$crate/Cargo.toml"
             source_files="Cargo.toml Cargo.lock src" ;;
esac
# shellcheck disable=SC2086  # the lists are split on purpose
sources="$(cd "$crate" && find $source_files -type f | LC_ALL=C sort | xargs sha256sum | sha256sum)"
stamp="$target/release/.$program-sources"
if [ "$(cat "$stamp" 2>/dev/null)" != "$sources" ]; then
    for manifest in $manifests; do
        package="$(sed -n 's/^name = "\(.*\)"$/\1/p' "$manifest" | head -n 1)"
        CARGO_TARGET_DIR="$target" "$cargo" clean --release --quiet -p "$package" \
            --manifest-path "$manifest" 2>/dev/null || true
    done
fi
for manifest in $manifests; do
    if ! log="$(CARGO_TARGET_DIR="$target" "$cargo" build --locked --release --quiet \
            --manifest-path "$manifest" 2>&1)"; then
        first_error="$(printf '%s\n' "$log" | grep -m1 '^error' || printf '%s\n' "$log" | tail -n 1)"
        echo "$label: cargo build failed ($manifest): $first_error" >&2
        exit 1
    fi
done
printf '%s\n' "$sources" > "$stamp"
echo "$target/release/$program"
