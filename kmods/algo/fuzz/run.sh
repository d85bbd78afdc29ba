#!/usr/bin/env bash
# Deep random testing of the algorithm crate: coverage-guided fuzzing
# (cargo-fuzz, libFuzzer) of every CC through the Linux adapter
# (fuzz_targets/adapter.rs), one fuzzer per CC, then of UnoCC's and Gemini's
# fast paths against their full logic (fuzz_targets/fast_path.rs).
#
#   kmods/algo/fuzz/run.sh [RUNS]     RUNS sequences per target and CC
#                                     (default 1000000)
#   XDCC_FUZZ_CCS="uno gemini" kmods/algo/fuzz/run.sh 100000
#
# Prints, per target and CC: sequences run, edges covered out of the
# instrumented total, and whether it found anything; a crash leaves its input
# under kmods/algo/fuzz/artifacts/ (replay: cargo fuzz run adapter FILE) and
# makes the script exit 1. Corpora are kept under the cache
# (${XDCC_CACHE:-~/.cache/xdcc}/fuzz/), so a second run starts where the first
# stopped. Needs a nightly toolchain when one is installed (for the address
# sanitizer); on a stable-only machine it fuzzes without a sanitizer, which
# still checks every assertion and overflow (the crate has no unsafe code
# outside the kernel glue).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
# shellcheck source=../../../tests/lib/cargo-fuzz.sh
source "$root/tests/lib/cargo-fuzz.sh"

# The CCs, from the crate's one list (CCS, printed by its `ccs` example).
ccs=${XDCC_FUZZ_CCS:-$(cd "$root" && cargo run -q --locked -p xdcc-algo --example ccs | cut -d' ' -f1)}
[[ -n $ccs ]] || { echo "run.sh: no CC from the algorithm crate's list" >&2; exit 1; }

cd "$here"
echo "[fuzz] building (sanitizer: $sanitizer)" >&2
cargo "${toolchain[@]}" fuzz build --release --debug-assertions --sanitizer "$sanitizer" >&2

fail=0
# Edges covered, from libFuzzer's -print_coverage (per function, after
# inlining): the functions of kmods/algo/src/<cc>.rs and the generic code
# (adapter, window) as instantiated for that CC.
coverage() { # log cc
    awk -v cc="$2" '/^(UN)?COVERED_FUNC:/ && $NF ~ /kmods\/algo\/src\// && ($NF ~ ("/" cc ".rs:") || index($0, "xdcc_algo::" cc "::")) {
        split($5, e, "/"); c += e[1]; t += e[2] } END { if (t) printf "%d/%d (%.0f %%)", c, t, 100 * c / t; else printf "?" }' "$1"
}
one() { # target label cc...
    local target=$1 label=$2 log corpus n cov="" cc
    shift 2
    log=$(mktemp)
    corpus="$cache/fuzz/corpus/$target-$label"
    mkdir -p "$corpus" "$here/artifacts/$target"
    local env=()
    [[ $target == adapter ]] && env=(XDCC_FUZZ_CC="$label")
    if env "${env[@]}" cargo "${toolchain[@]}" fuzz run --release --debug-assertions --sanitizer "$sanitizer" "$target" "$corpus" -- \
        -runs="$runs" -max_len=8192 -print_final_stats=1 -print_coverage=1 \
        -artifact_prefix="$here/artifacts/$target/$label-" >"$log" 2>&1; then
        status=ok
    else
        status="FOUND A FAILURE (log: $log)"
        fail=1
    fi
    n=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
    for cc in "$@"; do cov+="$cc $(coverage "$log" "$cc")  "; done
    printf '%-9s %-10s runs %-8s edges %s %s\n' "$target" "$label" "${n:-?}" "$cov" "$status"
    if [[ $status == ok ]]; then
        rm -f "$log"
    else
        grep -m5 -E 'panicked|ERROR|Test unit written' "$log" >&2 || true
    fi
}

for cc in $ccs; do
    one adapter "$cc" "$cc"
done
one fast_path uno-gemini uno gemini
exit "$fail"
