#!/usr/bin/env bash
# The default demo: 4 intra-DC + 4 inter-DC long flows sharing one DC switch
# port, simulated for UnoCC, Gemini, SMaRTT and OSCAR with each paper's switch
# marking; prints a summary table and writes JSON + CSV per algorithm.
#   ./demo.sh [OUT_DIR]      (default: out/demo)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
out=${1:-out/demo}
if ! command -v cargo >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq cargo rustc >/dev/null
fi
cargo build --release --locked -q -p xdcc-sim
./target/release/xdcc-sim run testbed/sim/scenarios/rtt-fairness.toml --out "$out"
