#!/usr/bin/env bash
# The xdcc test suite: everything a fresh machine needs is installed here.
#   ./test.sh          unit, equation, property and simulator behaviour tests
# Kernel-module VM tests join this script as they land (see README).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if ! command -v cargo >/dev/null; then
    echo "[test] installing a Rust toolchain (Debian packages)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq cargo rustc >/dev/null
fi

echo "[test] algorithm core and simulator (release build: overflow checks stay on, as in the kernel)" >&2
cargo test --release --workspace --locked
