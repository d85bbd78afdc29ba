#!/usr/bin/env bash
# A scenario on real kernels, from build to report, with the model beside it:
#
#   testbed/run.sh [SCENARIO] [--cc a,b,...] [--duration S] [--repeat N] [--out DIR]
#   testbed/run.sh [--backend vm|host|servers] SCENARIO [--inventory F] [--cc ..] [--set CC.K=V] [--duration S] [--out DIR]
#   testbed/run.sh --capacity          measure what the VM forwards
#   testbed/run.sh --list              shipped scenarios, each with the backends that run it
#
# SCENARIO is a name under testbed/scenarios/ (default a-rtt-fairness) or a
# path to a .toml, of one of two kinds (told apart by content):
# - one bottleneck (the simulator's format: duration_ms, [[queues]],
#   [[flows]]): testbed/host/run.py builds its port and runs it, --backend
#   host at real speed on this kernel's namespaces (BPF CCs), servers on
#   the machines of an inventory over SSH, vm (the default) in the qemu
#   guest with the modules, 20x slowed;
# - two DCs joined by a WAN ([[long]], [[incast]], [workload], [net]): in
#   the VM only (its WAN delays are netem's, and the host and servers
#   backends build one port, not the 2-DC network). Builds what is missing
#   (the xdcc binary with its eBPF programs, the test kernel and our
#   modules: cached, ~15 min the first time), plans the runs (xdcc-sim
#   plan), boots the qemu VM, runs every (sweep point, CC) of the scenario,
#   then writes DIR (default out/SCENARIO): report.md, summary.{json,csv},
#   timeseries/*.csv, plots/*.{png,svg}, raw/*.json, plan.json.
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
        -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
        -*) echo "testbed/run.sh: unknown option $1" >&2; exit 2 ;;
        *) scenario=$1; shift ;;
    esac
done

# The scenario's file and kind: one bottleneck (the simulator's format has
# duration_ms or [[queues]]) or two DCs.
one_port() { grep -qE '^(duration_ms *=|\[\[queues\]\])' "$1"; }
scenario_file=""
if [[ $mode == run ]]; then
    scenario_file=$scenario
    [[ -f $scenario_file ]] || scenario_file=testbed/scenarios/$scenario.toml
    [[ -f $scenario_file ]] || { echo "testbed/run.sh: no scenario '$scenario' (testbed/run.sh --list)" >&2; exit 2; }
fi
if [[ $backend != vm || ( -n $scenario_file ) && $(one_port "$scenario_file" && echo 1) == 1 ]]; then
    [[ $mode == run ]] || { echo "testbed/run.sh: --capacity and --list are for the 2-DC testbed (--backend vm)" >&2; exit 2; }
    ((repeat == 1)) || { echo "testbed/run.sh: --repeat is for the 2-DC testbed (--backend vm)" >&2; exit 2; }
    one_port "$scenario_file" || { echo "testbed/run.sh: $scenario has two DCs joined by a WAN: it runs in the VM only (its WAN delays are netem's; --backend $backend builds one bottleneck port)" >&2; exit 2; }
    scenario=$scenario_file
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
    echo "testbed/run.sh: --inventory and --set are for a one-bottleneck scenario" >&2; exit 2
fi

if [[ $mode == list ]]; then
    # Which backends carry each: the planner says (a routed network or
    # several ports run in the simulator only).
    [[ -x target/release/xdcc-sim ]] || cargo build --release --locked -q -p xdcc-sim
    for f in testbed/scenarios/*.toml; do
        # (its first CC, its description's start)
        { read -r cc; read -r d; } < <(/usr/bin/python3 -c 'import sys, tomllib; t = tomllib.load(open(sys.argv[1], "rb")); d = " ".join(t.get("description", "").split())
print((t.get("cc") or ["dctcp"])[0]); print(d[:90] + ("..." if len(d) > 90 else ""))' "$f")
        if ! one_port "$f"; then kind="vm (two DCs)"
        elif target/release/xdcc-sim plan "$f" --cc "$cc" >/dev/null 2>&1; then kind="vm, host, servers"
        else kind="model only"; fi
        printf '%-30s %-18s %s\n' "$(basename "$f" .toml)" "$kind" "$d"
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
