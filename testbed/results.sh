#!/usr/bin/env bash
# testbed/RESULTS.md's generated section, from repeated runs:
#
#   testbed/results.sh [--repeat N] [--out DIR] [--no-run] [SCENARIO...]
#
# Runs every SCENARIO (default: all shipped ones except ci-smoke) with
# `testbed/run.sh SCENARIO --repeat N --out DIR/SCENARIO` (N default 3, DIR
# default out/results), then rewrites the part of testbed/RESULTS.md between
# its "generated" markers: per scenario the paper's claim, the kernel's mean
# and 95 % interval over the repetitions next to the simulator's prediction,
# FCT rows and per-phase utilization (testbed/runner/report.py --results).
# Scenarios not named keep their earlier runs in DIR, if any.
# --no-run: no VM; the kernel runs already in DIR are analysed again with the
# current code (the simulator's prediction too), then the rewrite. One
# repetition of all scenarios takes about 40 minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

repeat=3
out=out/results
run=1
scenarios=()
while (($#)); do
    case $1 in
        --repeat)
            [[ ${2:-} =~ ^[1-9][0-9]?$ && $2 -ge 2 ]] || { echo "testbed/results.sh: --repeat takes a number of repetitions, 2-99: an interval needs two (got '${2:-}')" >&2; exit 2; }
            repeat=$2; shift 2 ;;
        --out) [[ -n ${2:-} ]] || { echo "testbed/results.sh: --out needs a directory" >&2; exit 2; }; out=$2; shift 2 ;;
        --no-run) run=0; shift ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        -*) echo "testbed/results.sh: unknown option $1" >&2; exit 2 ;;
        *) scenarios+=("$1"); shift ;;
    esac
done
if ((${#scenarios[@]} == 0)); then
    for f in testbed/scenarios/*.toml; do
        n=$(basename "$f" .toml)
        # (The 2-DC ones: a one-bottleneck file has duration_ms or [[queues]].)
        grep -qE '^(duration_ms *=|\[\[queues\]\])' "$f" && continue
        [[ $n == ci-smoke ]] || scenarios+=("$n")
    done
fi
for s in "${scenarios[@]}"; do
    [[ -f testbed/scenarios/$s.toml ]] || { echo "testbed/results.sh: no scenario '$s' (testbed/run.sh --list)" >&2; exit 2; }
done

# (--no-run: the simulator and the metrics of this checkout, built once.)
((run)) || cargo build --release --locked -q -p xdcc-sim -p xdcc-metrics
for s in "${scenarios[@]}"; do
    dir=$out/$s
    if ((run)); then
        echo "[results] $s: $repeat repetitions into $dir" >&2
        testbed/run.sh "$s" --repeat "$repeat" --out "$dir"
    else
        reps=("$dir"/rep-*)
        [[ -f ${reps[0]}/summary.json ]] || { echo "testbed/results.sh: no repetitions of $s in $dir (run without --no-run)" >&2; exit 1; }
        echo "[results] $s: analysing the ${#reps[@]} repetitions in $dir again" >&2
        target/release/xdcc-sim run "testbed/scenarios/$s.toml" --json --seeds 3 >"$dir/prediction.json"
        for r in "${reps[@]}"; do
            cp "$dir/prediction.json" "$r/"
            /usr/bin/python3 testbed/runner/report.py "$r" >/dev/null
        done
        /usr/bin/python3 testbed/runner/report.py --combine "$dir" "${reps[@]}" >/dev/null
    fi
done
# Every shipped scenario with repetitions in DIR, not only those named: the
# generated section keeps the scenarios this call did not run.
dirs=()
for f in testbed/scenarios/*.toml; do
    s=$(basename "$f" .toml)
    [[ $s != ci-smoke && -f $out/$s/summary.json && -d $out/$s/rep-1 ]] && dirs+=("$out/$s")
done
/usr/bin/python3 testbed/runner/report.py --results testbed/RESULTS.md "${dirs[@]}"
