#!/usr/bin/env bash
# The xdcc test suite: everything a fresh machine needs is installed here.
#   ./test.sh          unit, equation, property and simulator behaviour tests,
#                      then the kernel modules in the qemu VM (builds the
#                      test kernel on first use: ~15 min on a fresh machine)
#   XDCC_SKIP_VM=1 ./test.sh   only the cargo tests
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if ! command -v cargo >/dev/null; then
    echo "[test] installing a Rust toolchain (Debian packages)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq cargo rustc >/dev/null
fi

echo "[test] algorithm core and simulator (release build: overflow checks stay on, as in the kernel)" >&2
cargo test --release --workspace --locked

if [[ ${XDCC_SKIP_VM:-0} != 1 ]]; then
    echo "[test] kernel modules in the VM (tcp_uno, tcp_gemini, tcp_oscar, tcp_smartt)" >&2
    testbed/kernel/build.sh >/dev/null
    testbed/vm/run.sh --timeout 900 testbed/vm/tests/kmods.sh
fi
