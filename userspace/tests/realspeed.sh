#!/usr/bin/env bash
# Behaviour at real speed on this host's kernel (issue 28): UnoCC, SMaRTT and
# OSCAR as BPF CCs fill a 1 Gbit/s port of four flows with the port's queue
# far below cubic's. bench/realspeed.sh runs the flows (4 s per CC, cubic in
# the same invocation); this script judges them against targets with a
# stated tolerance:
#   utilization  UnoCC >= 84 % (its phantom queue drains at 90 %: target 88
#                % - 4), SMaRTT and OSCAR >= 90 % (target 95 % - 5)
#   mean RTT     UnoCC and OSCAR <= 0.25 x cubic's in the same run (a queue
#                far below cubic's; measured 0.07-0.08 x); SMaRTT <= 0.8 x
#                (its switch profile marks RED from 20 to 80 % of the buffer,
#                so its queue sits there, while cubic fills the buffer;
#                measured 0.4-0.6 x)
# Before the host-delay changes these CCs ran at 61-82 % (README, "Real
# speed"), so each check fails on that code. Not flaky on a busy machine:
# the flows are CPU-bound (2-10 packet windows), so a CC that misses its
# target is run a second time and fails only if it misses twice; the
# thresholds sit 5-15 points below today's measurements (90-99 %).
#   userspace/tests/realspeed.sh   (root; needs target/release/xdcc)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$(mktemp -d /tmp/xdcc-realspeed-test.XXXXXX)
trap 'rm -rf "$out"' EXIT
declare -A min_util=([bpf_uno]=84 [bpf_smartt]=90 [bpf_oscar]=90)
declare -A max_rtt_ratio=([bpf_uno]=0.25 [bpf_smartt]=0.8 [bpf_oscar]=0.25)
todo=(bpf_uno bpf_smartt bpf_oscar)
fails=()
for attempt in 1 2; do
    list=$(IFS=,; echo "cubic,${todo[*]}")
    "$root/bench/realspeed.sh" --secs 4 --cc "$list" --json "$out/r$attempt.json" | sed 's/^/[realspeed] /'
    again=()
    for cc in "${todo[@]}"; do
        verdict=$(python3 - "$out/r$attempt.json" "$cc" "${min_util[$cc]}" "${max_rtt_ratio[$cc]}" <<'PY'
import json, sys
r, cc, lo, ratio = json.load(open(sys.argv[1])), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
c, x = r["cubic"], r[cc]
bad = []
if not x["util_pct"] >= lo:
    bad.append(f"utilization {x['util_pct']:.1f} % < {lo:.0f} %")
if not x["rtt_ms"] <= ratio * c["rtt_ms"]:
    bad.append(f"mean RTT {x['rtt_ms']:.3f} ms > {ratio} x cubic's {c['rtt_ms']:.3f} ms")
print("; ".join(bad) if bad else f"ok: {x['util_pct']:.1f} %, RTT {x['rtt_ms']:.3f} ms (cubic {c['rtt_ms']:.3f} ms), Jain {x['jain']:.3f}")
PY
)
        echo "[realspeed] attempt $attempt $cc: $verdict"
        [[ $verdict == ok:* ]] || again+=("$cc")
    done
    ((${#again[@]})) || break
    todo=("${again[@]}")
    [[ $attempt == 2 ]] && fails=("${again[@]}")
done
if ((${#fails[@]})); then
    echo "[realspeed] FAIL: ${fails[*]} missed their targets twice" >&2
    exit 1
fi
echo "[realspeed] all CCs at their targets"
