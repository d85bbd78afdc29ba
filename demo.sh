#!/usr/bin/env bash
# The default demo: scenario (a) of the 2-DC testbed (4 intra-DC + 4 inter-DC
# long flows into one receiver, inter/intra RTT ratio 4x, 16x, 64x) for
# UnoCC, Gemini, Cubic and DCTCP, as real kernel TCP in our qemu VM. Builds
# what is missing (kernel + modules ~15 min the first time, cached), prints
# the summary table and the report path.
#   ./demo.sh [--cc a,b] [--duration S] [--out DIR]     (default out/demo)
# The same flows in the packet-level simulator (seconds, no VM):
#   cargo run --release -p xdcc-sim -- run testbed/scenarios/rtt-fairness.toml
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
args=("$@")
[[ " ${args[*]} " == *" --out "* ]] || args+=(--out out/demo)
exec testbed/run.sh a-rtt-fairness "${args[@]}"
