#!/usr/bin/env bash
# The 2-DC testbed, from build to report:
#
#   testbed/run.sh [SCENARIO] [--cc a,b,...] [--duration S] [--repeat N] [--out DIR]
#   testbed/run.sh --capacity          measure what the VM forwards
#   testbed/run.sh --list              shipped scenarios
#   testbed/run.sh [--backend vm|host|servers] SIM-SCENARIO [--inventory F] [--cc ..] [--set CC.K=V] [--duration S] [--out DIR]
#
# A one-bottleneck simulator scenario (a name under testbed/sim/scenarios/ or
# a path to one) runs on real kernels with the model beside it
# (testbed/host/run.py): --backend host at real speed on this kernel's
# namespaces (BPF CCs), servers on the machines of an inventory over SSH,
# vm (the default) in the qemu guest with the modules, 20x slowed.
# A 2-DC testbed scenario runs in the VM as what follows.
#
# SCENARIO is a name under testbed/scenarios/ (default a-rtt-fairness) or a
# path to a .toml. Builds what is missing (the xdcc binary with its eBPF
# programs, the test kernel and our modules: cached, ~15 min the first
# time), boots the qemu VM, runs every (sweep point, CC) of the scenario in
# the 2-DC topology, then writes DIR (default out/SCENARIO): report.md,
# summary.{json,csv}, timeseries/*.csv, plots/*.{png,svg}, raw/*.json.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"

scenario=a-rtt-fairness
out=""
guest_args=()
mode=run
repeat=1
backend=vm
host_args=()
while (($#)); do
    case $1 in
        --backend)
            [[ ${2:-} =~ ^(vm|host|servers)$ ]] || { echo "testbed/run.sh: --backend is vm, host or servers (got '${2:-}')" >&2; exit 2; }
            backend=$2; shift 2 ;;
        --inventory|--set) host_args+=("$1" "$2"); shift 2 ;;
        --cc) guest_args+=(--cc "$2"); shift 2 ;;
        --duration) guest_args+=(--duration "$2"); shift 2 ;;
        --out) out=$2; shift 2 ;;
        --repeat)
            [[ ${2:-} =~ ^[1-9][0-9]?$ ]] || { echo "testbed/run.sh: --repeat takes a number of repetitions, 1-99 (got '${2:-}')" >&2; exit 2; }
            repeat=$2; shift 2 ;;
        --capacity) mode=capacity; shift ;;
        --list) mode=list; shift ;;
        -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
        -*) echo "testbed/run.sh: unknown option $1" >&2; exit 2 ;;
        *) scenario=$1; shift ;;
    esac
done

# A simulator scenario (its file has duration_ms or [[queues]]; a name found
# under testbed/sim/scenarios/ and not under testbed/scenarios/).
sim_scenario=""
if [[ $mode == run ]]; then
    if [[ -f $scenario ]]; then
        grep -qE '^(duration_ms *=|\[\[queues\]\])' "$scenario" && sim_scenario=$scenario
    elif [[ ! -f testbed/scenarios/$scenario.toml && -f testbed/sim/scenarios/$scenario.toml ]]; then
        sim_scenario=testbed/sim/scenarios/$scenario.toml
    fi
fi
if [[ $backend != vm || -n $sim_scenario ]]; then
    [[ $mode == run ]] || { echo "testbed/run.sh: --capacity and --list are for the 2-DC testbed (--backend vm)" >&2; exit 2; }
    ((repeat == 1)) || { echo "testbed/run.sh: --repeat is for the 2-DC testbed (--backend vm)" >&2; exit 2; }
    [[ -n $sim_scenario ]] || { echo "testbed/run.sh: no simulator scenario $scenario (testbed/sim/scenarios/; --backend $backend runs those)" >&2; exit 2; }
    scenario=$sim_scenario
    for ((i = 0; i < ${#guest_args[@]}; i += 2)); do
        [[ ${guest_args[i]} == --cc || ${guest_args[i]} == --duration ]] || { echo "testbed/run.sh: ${guest_args[i]} is for a 2-DC testbed scenario" >&2; exit 2; }
        host_args+=("${guest_args[i]}" "${guest_args[i + 1]}")
    done
    [[ -z $out ]] || host_args+=(--out "$out")
    if [[ ! -x target/release/xdcc || ! -x target/release/xdcc-testbed || ! -x target/release/xdcc-sim ]]; then
        XDCC_BPF_LINKER_DIR=$(ebpf/install-toolchain.sh) cargo build --release --locked -q -p xdcc -p xdcc-sim
    fi
    exec /usr/bin/python3 testbed/host/run.py "$scenario" --backend "$backend" "${host_args[@]}"
fi
if ((${#host_args[@]})); then
    echo "testbed/run.sh: --inventory and --set are for a simulator scenario (testbed/sim/scenarios/)" >&2; exit 2
fi

if [[ $mode == list ]]; then
    for f in testbed/scenarios/*.toml; do
        printf '%-20s %s\n' "$(basename "$f" .toml)" "$(sed -n 's/^description = "\(.*\)"/\1/p' "$f")"
    done
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
need=()
[[ -x /usr/bin/python3 ]] || need+=(python3)
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need+=(python3-matplotlib)
command -v cargo >/dev/null || need+=(cargo rustc)
if ((${#need[@]})); then
    echo "[testbed] installing ${need[*]}" >&2
    apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [[ $mode == run ]]; then
    scenario_file=$scenario
    [[ -f $scenario_file ]] || scenario_file=testbed/scenarios/$scenario.toml
    [[ -f $scenario_file ]] || { echo "testbed/run.sh: no scenario '$scenario' (testbed/run.sh --list)" >&2; exit 2; }
fi

echo "[testbed] building the xdcc CLI (switch profiles, tunables), the simulator and the metrics" >&2
XDCC_BPF_LINKER_DIR=$(ebpf/install-toolchain.sh)
export XDCC_BPF_LINKER_DIR
cargo build --release --locked -q -p xdcc -p xdcc-sim -p xdcc-metrics

# Plan the runs (the planner checks the scenario: a bad one stops here,
# before the kernel is built or the VM booted); the VM only executes the plan.
if [[ $mode == run ]]; then
    echo "[testbed] planning the runs: xdcc-sim plan $scenario_file" >&2
    plan=$(target/release/xdcc-sim plan "$scenario_file" "${guest_args[@]}") || exit 2
    out=${out:-out/$(basename "$scenario_file" .toml)}
else
    out=${out:-out/capacity}
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
[[ $mode != run ]] || printf '%s\n' "$plan" >"$out/plan.json"
echo "[testbed] building the test kernel and modules (cached)" >&2
testbed/kernel/build.sh >/dev/null

if [[ $mode == capacity ]]; then
    testbed/vm/run.sh --timeout 600 --out "$out" testbed/runner/guest.sh capacity "$out" | grep --line-buffered '^\[tb\]\|^error\|Traceback\|XDCC-EXIT'
    exit "${PIPESTATUS[0]}"
fi

# The model's prediction for the same scenario (seconds): the report puts it
# beside the kernel's numbers.
echo "[testbed] the model's prediction: xdcc-sim run $scenario_file --seeds 3" >&2
target/release/xdcc-sim run "$scenario_file" --json --seeds 3 "${guest_args[@]}" >"$out/prediction.json"

read -r runs duration < <(/usr/bin/python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); print(len(p["runs"]), p["runs"][0]["duration_s"])' "$out/plan.json")
limit=$(( runs * (duration + 90) + 120 ))

# run_once DIR: every run of the scenario in one VM boot, then its report.
run_once() {
    local dir=$1
    mkdir -p "$dir"
    rm -rf "$dir/raw"
    [[ $dir == "$out" ]] || cp "$out/prediction.json" "$out/plan.json" "$dir/"
    echo "[testbed] $runs run(s) in the VM (time limit ${limit}s); results in $dir" >&2
    set +e
    testbed/vm/run.sh --timeout "$limit" --out "$dir" testbed/runner/guest.sh run "$dir" \
        >"$dir/vm.log" 2>&1 &
    local vm=$!
    tail -n +1 -f "$dir/vm.log" --pid=$vm | grep --line-buffered '^\[tb\]\|^error\|Traceback\|File "\|Error\|XDCC-EXIT\|^Warning\|WARNING\|BUG'
    wait $vm
    local rc=$?
    set -e
    if ((rc != 0)); then
        echo "[testbed] the VM run failed (exit $rc); full log: $dir/vm.log" >&2
        exit "$rc"
    fi
    /usr/bin/python3 testbed/runner/report.py "$dir"
}

if ((repeat == 1)); then
    run_once "$out"
    exit 0
fi
# Repetitions: OUT/rep-1 ... OUT/rep-N, each a complete run directory, and
# OUT/report.md with the mean and 95 % interval of every metric.
rm -rf "$out"/rep-*
reps=()
for i in $(seq 1 "$repeat"); do
    echo "[testbed] repetition $i of $repeat" >&2
    run_once "$out/rep-$i"
    reps+=("$out/rep-$i")
done
/usr/bin/python3 testbed/runner/report.py --combine "$out" "${reps[@]}"
