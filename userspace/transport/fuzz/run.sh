#!/usr/bin/env bash
# Coverage-guided fuzzing of the transport (cargo-fuzz, libFuzzer): the
# packet parser and both ends' state machines against any datagrams
# (fuzz_targets/ends.rs says what must hold).
#
#   userspace/transport/fuzz/run.sh [RUNS]     (default 1000000)
#
# Prints the runs done and whether it found anything; a crash leaves its
# input under userspace/transport/fuzz/artifacts/ (replay: cargo fuzz run
# ends FILE) and makes the script exit 1. The corpus is kept under the cache
# (${XDCC_CACHE:-~/.cache/xdcc}/fuzz/corpus/transport-ends).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
# shellcheck source=../../../tests/lib/cargo-fuzz.sh
source "$root/tests/lib/cargo-fuzz.sh"

cd "$here"
corpus="$cache/fuzz/corpus/transport-ends"
mkdir -p "$corpus" "$here/artifacts/ends"
log=$(mktemp)
if cargo "${toolchain[@]}" fuzz run --release --debug-assertions --sanitizer "$sanitizer" ends "$corpus" -- \
    -runs="$runs" -max_len=16384 -print_final_stats=1 -artifact_prefix="$here/artifacts/ends/" >"$log" 2>&1; then
    status=ok
else
    status="FOUND A FAILURE (log: $log)"
fi
n=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
echo "transport ends: runs ${n:-?} $status"
if [[ $status == ok ]]; then
    rm -f "$log"
else
    grep -m5 -E 'panicked|ERROR|Test unit written' "$log" >&2 || true
    exit 1
fi
