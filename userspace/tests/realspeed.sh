#!/usr/bin/env bash
# Behaviour at real speed on this host's kernel (issue 28): the BPF CCs fill
# a 1 Gbit/s port of four flows with the port's queue far below cubic's, ECN
# negotiated for every ECN CC. bench/realspeed.sh runs the flows (4 s per CC,
# cubic in the same invocation); this script judges them against targets
# with a stated tolerance:
#   ECN          every flow of an ECN CC has ECN negotiated (a run without it
#                says nothing of the CC's ECN reaction; the harness once
#                gave ECN only to CCs that followed an ECN CC in its list)
#   utilization  SMaRTT, OSCAR, DCTCP, Gemini >= 90 % (target 95 % - 5;
#                measured 98.7-99.9 %). UnoCC >= 83 % (target 88 % - 5, its
#                phantom queue draining at 90 %; measured 94-99 % since it is
#                not paced from the line rate up, 77-83 % before on this
#                session's hosts, CPU-bound by its pacing timer; above the
#                drain rate because four flows' 2-packet floor windows
#                exceed 90 % of a pipe of a few µs:
#                testbed/notes/2026-11-29-realspeed-uno-cpu.md).
#   mean RTT     <= 0.25 x cubic's in the same run for all of them (a queue
#                far below cubic's; measured 0.02-0.12 x)
# Before the host-delay changes UnoCC, SMaRTT and OSCAR ran at 61-82 %
# (testbed/RESULTS.md, "Real speed"), so their checks fail on that code. Not flaky on a
# busy machine: the flows are CPU-bound (2-10 packet windows keep 1.6-1.9 of the
# 2 CPUs busy, printed as "CPUs busy"; DCTCP and Gemini, paced at their window
# over the smoothed RTT until 2026-11-29, took 200-300 pacing-timer expiries per
# MB, hrt/MB, and missed 90 % in all three attempts of one CI run), so a CC that
# misses its target is run again, up to three times, and fails only if it
# misses every time.
# A run in which cubic itself does not fill the port (the host could not
# carry it: below) is void, judged for no CC, and said so with the
# hypervisor's steal; five void runs fail the test with that reason.
# Then the host backend end to end (testbed/host/run.py, see below).
#   userspace/tests/realspeed.sh   (root; needs target/release/xdcc and xdcc-sim)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../tests/lib/lib.sh
source "$root/tests/lib/lib.sh"
out=$(mktemp -d /tmp/xdcc-realspeed-test.XXXXXX)
trap 'rm -rf "$out"' EXIT
declare -A min_util=([bpf_uno]=83 [bpf_smartt]=90 [bpf_oscar]=90 [bpf_dctcp]=90 [bpf_gemini]=90)
declare -A max_rtt_ratio=([bpf_uno]=0.25 [bpf_smartt]=0.25 [bpf_oscar]=0.25 [bpf_dctcp]=0.25 [bpf_gemini]=0.25)
todo=(bpf_uno bpf_smartt bpf_oscar bpf_dctcp bpf_gemini)
fails=()
attempts=3
# The precondition of a judged attempt: the host carries the port. On a
# quiet host cubic, run first in each attempt, fills 93-100 % of it; when
# the hypervisor takes the CPUs from under this VM (steal 9-21 % of them
# while the flows run, seen in CI on 2026-11-29) cubic reached 77-86 % and
# every xdcc CC missed its target with it (testbed/notes/2026-11-28-flakes.md):
# such an attempt is void, judged for no CC, and the next one waits a little.
# Void attempts count against a cap of their own, and reaching it fails.
cubic_min=88
max_void=5
attempt=0 void=0
while ((attempt < attempts)); do
    run=$((attempt + void + 1))
    list=$(IFS=,; echo "cubic,${todo[*]}")
    stolen_pct >/dev/null
    "$root/bench/realspeed.sh" --secs 4 --cc "$list" --json "$out/r$run.json" | sed 's/^/[realspeed] /'
    stolen=$(stolen_pct)
    cubic=$(jq -r '.cubic.util_pct' "$out/r$run.json")
    if ! awk -v c="$cubic" -v m="$cubic_min" 'BEGIN { exit !(c >= m) }'; then
        void=$((void + 1))
        echo "[realspeed] run $run void: the host did not carry the port (cubic $cubic % < $cubic_min %; the hypervisor took $stolen % of the CPUs)"
        if ((void >= max_void)); then
            echo "[realspeed] FAIL: the host carried the 1 Gbit/s port in $attempt of $run runs (cubic below $cubic_min % in $void): ${todo[*]} not judged" >&2
            exit 1
        fi
        sleep 20
        continue
    fi
    attempt=$((attempt + 1))
    echo "[realspeed] run $run is attempt $attempt (cubic $cubic %, the hypervisor took $stolen % of the CPUs)"
    again=()
    for cc in "${todo[@]}"; do
        verdict=$(python3 - "$out/r$run.json" "$cc" "${min_util[$cc]}" "${max_rtt_ratio[$cc]}" <<'PY'
import json, sys
r, cc, lo, ratio = json.load(open(sys.argv[1])), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
c, x = r["cubic"], r[cc]
bad = []
if not x["util_pct"] >= lo:
    bad.append(f"utilization {x['util_pct']:.1f} % < {lo:.0f} %")
if not x["rtt_ms"] <= ratio * c["rtt_ms"]:
    bad.append(f"mean RTT {x['rtt_ms']:.3f} ms > {ratio} x cubic's {c['rtt_ms']:.3f} ms")
if cc != "bpf_oscar" and x["ecn_pct"] != 100:
    bad.append(f"ECN negotiated on {x['ecn_pct']:.0f} % of its flows, not all")
busy = x["cpu_s_per_GB"] * x["mbps"] / 8000
tail = f"CPUs busy {busy:.2f}"
print("; ".join(bad) + f" ({tail})" if bad else f"ok: {x['util_pct']:.1f} %, RTT {x['rtt_ms']:.3f} ms (cubic {c['rtt_ms']:.3f} ms), Jain {x['jain']:.3f}, {tail}")
PY
)
        echo "[realspeed] attempt $attempt $cc: $verdict"
        [[ $verdict == ok:* ]] || again+=("$cc")
    done
    ((${#again[@]})) || break
    todo=("${again[@]}")
    [[ $attempt == "$attempts" ]] && fails=("${again[@]}")
done
if ((${#fails[@]})); then
    echo "[realspeed] FAIL: ${fails[*]} missed their targets $attempts times" >&2
    exit 1
fi

# The host backend end to end (testbed/host/run.py): a scenario file's plan
# built on this kernel, with the model's prediction beside it. DCTCP in the
# 16-to-1 incast beside a long flow, judged by check_dctcp_incast.py.
# A busy host can starve the 2 s run (CI once: 88.7 % with cubic itself at
# 87.8 % of the port in the bench above; on 2026-11-29 49.8 % with the
# hypervisor taking 44-55 % of the CPUs; quiet, 99.7-99.9 %:
# testbed/notes/2026-11-28-flakes.md): such a run is void (lib.sh unstarved).
host_backend() { # host_backend N
    "$root/testbed/host/run.py" "$root/testbed/scenarios/realspeed-incast.toml" --cc dctcp --out "$out/host$1" | sed 's/^/[realspeed] /'
    "$root/testbed/host/check_dctcp_incast.py" "$out/host$1" "realspeed: host backend"
}
unstarved realspeed 1 host_backend
echo "[realspeed] every CC within its bounds"
