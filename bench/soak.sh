#!/usr/bin/env bash
# Soak (issue 44, item 6): minutes of byte-checked bulk transfers through a
# namespace router at datacenter rate, a CC per destination chosen by the
# agent, a link black-holed at intervals and a CPU hog beside one sender.
#
#   s1 ─┐        ┌─ p1 (HTB RATE, the marker of CC1) ── d1   10.81.1.0/24: bpf_CC1
#       ├─ r ────┤
#   s2 ─┘        └─ p2 (HTB RATE, the marker of CC2) ── d2   10.81.2.0/24: bpf_CC2
#
# An xdcc agent runs in each sender with [[policy]] d1 -> bpf_CC1, d2 ->
# bpf_CC2 (retain_closed_secs 60, so its table reaches its steady size within
# the soak); the transfers run in the agents' cgroups asking for cubic, so
# the policy, not the application, picks the CC. FLOWS transfer loops per
# (sender, destination) send CHUNK-MB transfers back to back
# (tests/lib/xfer.py: data that differs per 64 KiB block, sha256 at both
# ends, graceful close), and one loop per pair sends 1 MB transfers, one
# every ~0.5 s (churn: new connections and closed-flow records for the agent).
# Beside them BULK iperf3 flows per sender and destination (bytes not
# checked) load the ports toward their rate: the checked transfers hash
# every byte in Python and alone carry ~2 Gbit/s on a 2-CPU host.
# Every EVERY seconds the router black-holes d2's address for DOWN seconds
# (a route `blackhole`: packets silently dropped, as a dead link). A busy
# loop shares CPU 0 with sender s1's transfers (taskset) unless --no-hog.
# The ports' markers are the papers' as in bench/realspeed.sh: Uno's phantom
# queue (dc-uno-phantom) for UnoCC, a RED-like 20-80 % mirror of the port's
# buffer for the other ECN CCs, none for OSCAR.
#
# Checks (PASS/FAIL lines; exit 1 on any FAIL):
#   bytes     every transfer that ended is byte-exact at both ends (sha256),
#             and no transfer failed
#   heals     5 s after each heal, every flow to d2 that was moving in the
#             second before the link went and is open when it comes back has
#             acked more bytes (`xdcc flows`): no stuck flow
#   agent     each agent's RSS and flow table: the largest value of the second
#             half at most 1.25x the largest of the first half + 4 MB (RSS)
#             or + 64 (flow records): bounded under the churn
#   kernel    no new WARNING, BUG, Oops, leak, hung task or RCU stall in dmesg
#
#   bench/soak.sh [--minutes M] [--rate-mbit R] [--ccs CC1,CC2] [--flows N]
#                 [--chunk-mb MB] [--bulk N] [--every S] [--down-secs S] [--no-hog] [--out DIR]
# Defaults: 10 minutes, 10000 Mbit/s, uno,smartt, 1 loop, 256 MB, 1 bulk
# flow, every 30 s for 1 s. Root; needs target/release/xdcc (built if missing). Numbers and
# verdicts, not a CI test: results in DIR/summary.json (default a temp dir).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
minutes=10 rate=10000 ccs=uno,smartt flows=1 chunk_mb=256 bulk=1 every=30 down=1 hog=1 out=""
while (($#)); do
    case $1 in
        --minutes) minutes=$2; shift 2 ;;
        --rate-mbit) rate=$2; shift 2 ;;
        --ccs) ccs=$2; shift 2 ;;
        --flows) flows=$2; shift 2 ;;
        --chunk-mb) chunk_mb=$2; shift 2 ;;
        --bulk) bulk=$2; shift 2 ;;
        --every) every=$2; shift 2 ;;
        --down-secs) down=$2; shift 2 ;;
        --no-hog) hog=0; shift ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/soak.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
done
int() { [[ $2 =~ ^[0-9]+$ ]] && (($2 >= $3)) || { echo "bench/soak.sh: --$1 must be an integer >= $3" >&2; exit 2; }; }
int minutes "$minutes" 1; int rate-mbit "$rate" 10; int flows "$flows" 1; int chunk-mb "$chunk_mb" 1
int bulk "$bulk" 0; int every "$every" 5; int down-secs "$down" 1
((down < every)) || { echo "bench/soak.sh: --down-secs must be below --every" >&2; exit 2; }
IFS=, read -r cc1 cc2 extra <<<"$ccs"
[[ -n ${cc1:-} && -n ${cc2:-} && -z ${extra:-} ]] || { echo "bench/soak.sh: --ccs takes two xdcc CCs, e.g. uno,smartt" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "bench/soak.sh: needs root (namespaces, BPF, cgroups)" >&2; exit 2; }
for t in jq tc ping taskset python3 iperf3; do command -v $t >/dev/null || { echo "bench/soak.sh: needs $t" >&2; exit 2; }; done
X=${XDCC_BIN:-$root/target/release/xdcc}
[[ -x $X ]] || (cd "$root" && cargo build --release --locked -q -p xdcc)
known=$("$X" cc known | awk '{print $1}')
for c in "$cc1" "$cc2"; do
    grep -qxw "$c" <<<"$known" || { echo "bench/soak.sh: unknown CC $c (xdcc cc known: $(echo $known))" >&2; exit 2; }
done

XDCC_ROOT=$root
# shellcheck source=../tests/lib/lib.sh
source "$root/tests/lib/lib.sh"
NS_TAG=xk$$-
work=$(mktemp -d /tmp/xdcc-soak.XXXXXX)
[[ -n $out ]] || out=$work/out
mkdir -p "$out"
cg=$work/cgroup
pids=() loaded=()
cleanup() {
    touch "$work/stop"
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    ns_cleanup
    for d in "$cg"/*/; do [[ -d $d ]] && rmdir "$d" 2>/dev/null || true; done
    mountpoint -q "$cg" && umount "$cg" 2>/dev/null || true
    for c in "${loaded[@]}"; do "$X" cc unload "$c" --bpf >/dev/null 2>&1 || true; done
    rm -rf "${work:?}"/{r,s} "$work/cgroup"
}
trap cleanup EXIT

# ------------------------------------------------------------- the network
mkns S1 s1; mkns S2 s2; mkns R r; mkns D1 d1; mkns D2 d2
link "$S1" e0 "$R" a1 10.81.11.1/24 10.81.11.254/24
link "$S2" e0 "$R" a2 10.81.12.1/24 10.81.12.254/24
link "$R" p1 "$D1" e0 10.81.1.254/24 10.81.1.1/24
link "$R" p2 "$D2" e0 10.81.2.254/24 10.81.2.1/24
ip -n "$S1" route add default via 10.81.11.254
ip -n "$S2" route add default via 10.81.12.254
ip -n "$D1" route add default via 10.81.1.254
ip -n "$D2" route add default via 10.81.2.254
in_ns "$R" sysctl -qw net.ipv4.ip_forward=1
for n in "$S1" "$S2" "$D1" "$D2"; do
    in_ns "$n" sysctl -qw net.ipv4.tcp_ecn=1
    "$X" -n "$n" usec-ts on default4 >/dev/null
done
buf=$((rate * 450 / 1000 * 1500)); ((buf >= 96000)) || buf=96000
for p in p1 p2; do
    tc -n "$R" qdisc add dev $p root handle 1: htb default 1
    tc -n "$R" class add dev $p parent 1: classid 1:1 htb rate "${rate}mbit" ceil "${rate}mbit" burst 64k cburst 64k
    tc -n "$R" qdisc add dev $p parent 1:1 handle 10: bfifo limit $buf
done 2>&1 | grep -v "quantum of class" || true
base_rtt_us=$(in_ns "$S1" ping -c 20 -i 0.01 -q 10.81.1.1 | awk -F/ '/^rtt/{printf "%d", $5 * 1000}')
((base_rtt_us >= 1)) || base_rtt_us=1

# ----------------------------------------------------------- CCs, markers
secs=$((minutes * 60))
for c in "$cc1" "$cc2"; do
    if ! grep -qw "bpf_$c" /proc/sys/net/ipv4/tcp_available_congestion_control; then
        "$X" cc load "$c" --bpf >/dev/null
        loaded+=("$c")
    fi
    "$X" tunable set "bpf_$c" net_link_rate_mbps "$rate" >/dev/null
    "$X" tunable set "bpf_$c" net_intra_rtt_us "$base_rtt_us" >/dev/null
done
marker() { # PORT CC
    local m=()
    if [[ $2 == uno ]]; then
        m=(mark-phantom --iface "$1" --profile dc-uno-phantom --rate-mbit "$rate")
    elif "$X" cc known | awk -v c="$2" '$1 == c && $3 == "ecn" {f = 1} END {exit !f}'; then
        m=(mark-phantom --iface "$1" --rate-mbit "$rate" --drain-pct 100 --size-bytes "$buf" --kmin-pct 20 --kmax-pct 80)
    else
        return 0
    fi
    in_ns "$R" "$X" "${m[@]}" --duration $((secs + 60)) >"$out/marker-$1.out" 2>&1 &
    pids+=($!)
}
marker p1 "$cc1"
marker p2 "$cc2"

# ------------------------------------------------------------------ agents
mkdir -p "$cg" && mount -t cgroup2 none "$cg"
declare -A agent_pid sock
for s in 1 2; do
    n=S$s; c=$cg/soak-s$s; mkdir -p "$c"
    cat >"$work/agent-s$s.toml" <<TOML
cgroup = "$c"
retain_closed_secs = 60
[[policy]]
prefix = "10.81.1.0/24"
cc = "bpf_$cc1"
[[policy]]
prefix = "10.81.2.0/24"
cc = "bpf_$cc2"
TOML
    sock[$s]=$work/agent-s$s.sock
    ip netns exec "${!n}" "$X" --socket "${sock[$s]}" agent --config "$work/agent-s$s.toml" --iface e0 >"$out/agent-s$s.log" 2>&1 &
    agent_pid[$s]=$!; pids+=($!)
done
for s in 1 2; do
    for _ in $(seq 100); do [[ -S ${sock[$s]} ]] && break; sleep 0.1; done
    [[ -S ${sock[$s]} ]] || { echo "bench/soak.sh: agent s$s did not start: $(tail -3 "$out/agent-s$s.log")" >&2; exit 1; }
done

# --------------------------------------------------------------- traffic
mkdir -p "$work/r" "$work/s" "$out/loops"
dmesg_before=$(dmesg | wc -l)
recv_loop() { # NS PORT CC
    local i=0
    while [[ ! -e $work/stop ]]; do
        in_ns "$1" $XFER recv --port "$2" --cc "bpf_$3" --timeout 30 --out "$work/r/$2-$i.json" 2>>"$out/loops/recv-$2.err" || true
        i=$((i + 1))
    done
}
send_loop() { # SENDER-NS CGROUP CPUS DEST PORT BYTES [PAUSE]
    local i=0 aff=()
    [[ -z $3 ]] || aff=(taskset -c "$3")
    while [[ ! -e $work/stop ]]; do
        if ! bash -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$2" "${aff[@]}" ip netns exec "$1" \
            $XFER send --to "$4" --port "$5" --bytes "$6" --cc cubic --timeout 30 >"$work/s/$5-$i.json" 2>>"$out/loops/send-$5.err"; then
            echo "$5-$i" >>"$out/loops/failed"
        fi
        i=$((i + 1))
        [[ -z ${7:-} ]] || sleep "$7"
    done
}
port=7000
for s in 1 2; do
    n=S$s
    cpus=""; ((hog && s == 1)) && cpus=0
    for d in 1 2; do
        dn=D$d; cc=cc$d
        for k in $(seq "$flows") churn; do
            port=$((port + 1))
            bytes=$((chunk_mb << 20)) pause=""
            [[ $k == churn ]] && bytes=$((1 << 20)) pause=0.5
            recv_loop "${!dn}" $port "${!cc}" &
            pids+=($!)
            sleep 0.1
            send_loop "${!n}" "$cg/soak-s$s" "$cpus" "10.81.$d.1" $port $bytes $pause &
            pids+=($!)
        done
    done
done
if ((bulk)); then
    for d in 1 2; do
        dn=D$d
        for s in 1 2; do # (an iperf3 server runs one test at a time)
            ip netns exec "${!dn}" iperf3 -s -p $((5200 + s)) >/dev/null 2>&1 &
            pids+=($!)
        done
    done
    sleep 0.3
    for s in 1 2; do
        n=S$s cpus=()
        ((hog && s == 1)) && cpus=(taskset -c 0)
        for d in 1 2; do
            bash -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$cg/soak-s$s" "${cpus[@]}" ip netns exec "${!n}" \
                iperf3 -c "10.81.$d.1" -p $((5200 + s)) -P "$bulk" -t "$secs" -C cubic -J >"$out/bulk-s$s-d$d.json" 2>&1 &
            pids+=($!)
        done
    done
fi
if ((hog)); then
    taskset -c 0 bash -c 'while :; do :; done' &
    pids+=($!)
fi
echo "soak: $minutes min, $rate Mbit/s ports, d1 bpf_$cc1, d2 bpf_$cc2, $flows x $chunk_mb MB loop(s) + a 1 MB churn loop + $bulk iperf3 flow(s) per sender and destination, d2 black-holed ${down}s every ${every}s, CPU hog $( ((hog)) && echo "on CPU 0 with s1" || echo off ), base RTT ${base_rtt_us} us, kernel $(uname -r), $(nproc) CPUs"

# ------------------------------------------------- black holes and probes
flows_json() { in_ns "$1" "$X" --socket "$2" flows --all -j 2>/dev/null || echo '[]'; }
agent_sample() { # -> one JSON line per agent
    local s rss st
    for s in 1 2; do
        rss=$(awk '/^VmRSS/{print $2}' "/proc/${agent_pid[$s]}/status" 2>/dev/null || echo 0)
        n=S$s
        st=$(in_ns "${!n}" "$X" --socket "${sock[$s]}" stats -j 2>/dev/null || echo '{}')
        jq -c --argjson t "$SECONDS" --argjson s "$s" --argjson rss "${rss:-0}" \
            '{t: $t, agent: $s, rss_kb: $rss, tracked: (.flows_tracked // 0), retained: (.flows_retained_closed // 0), evicted: (.closed_flows_evicted // 0)}' <<<"$st"
    done
}
t0=$SECONDS heals=0 stuck=0 checked=0
: >"$out/agents.jsonl"; : >"$out/heals.jsonl"
next=$((t0 + every)) sample_at=$t0
while ((SECONDS - t0 < secs)); do
    sleep 1
    if ((SECONDS >= sample_at)); then
        agent_sample >>"$out/agents.jsonl"
        sample_at=$((SECONDS + 10))
    fi
    ((SECONDS >= next)) || continue
    next=$((next + every))
    # (no heal in the last 15 s: the bulk flows end with the soak)
    ((SECONDS + down + 15 < t0 + secs)) || continue
    # The flows to d2 that were moving just before the link went.
    p1=$(flows_json "$S1" "${sock[1]}") p2=$(flows_json "$S2" "${sock[2]}")
    sleep 1
    q1=$(flows_json "$S1" "${sock[1]}") q2=$(flows_json "$S2" "${sock[2]}")
    ip -n "$R" route add blackhole 10.81.2.1/32
    sleep "$down"
    ip -n "$R" route del blackhole 10.81.2.1/32
    heals=$((heals + 1))
    a1=$(flows_json "$S1" "${sock[1]}") a2=$(flows_json "$S2" "${sock[2]}")
    sleep 5
    b1=$(flows_json "$S1" "${sock[1]}") b2=$(flows_json "$S2" "${sock[2]}")
    # The flows to d2 moving before the link went (acked more in the second
    # before) and open when it came back: each must have acked more 5 s later.
    verdict=$(python3 - "$p1" "$q1" "$a1" "$b1" "$p2" "$q2" "$a2" "$b2" <<'PY'
import json, sys
res = {"checked": 0, "stuck": []}
def table(x):
    return {(f["local"], f["remote"]): f for f in json.loads(x)}
for p, q, a, b in (sys.argv[1:5], sys.argv[5:9]):
    p, q, before, after = table(p), table(q), table(a), table(b)
    for key, f in before.items():
        if not f["remote"].startswith("10.81.2.1:") or f.get("state") == "closed":
            continue
        if key not in p or key not in q or q[key].get("bytes_acked", 0) <= p[key].get("bytes_acked", 0):
            continue  # idle before the black hole (an iperf3 control connection, a transfer not yet started)
        res["checked"] += 1
        g = after.get(key)
        if g is None or g.get("bytes_acked", 0) <= f.get("bytes_acked", 0):
            res["stuck"].append({"flow": "%s->%s" % key, "acked_at_heal": f.get("bytes_acked"), "acked_5s_later": g and g.get("bytes_acked")})
print(json.dumps(res))
PY
)
    echo "$verdict" | jq -c --argjson h "$heals" '{heal: $h} + .' >>"$out/heals.jsonl"
    checked=$((checked + $(jq .checked <<<"$verdict")))
    stuck=$((stuck + $(jq '.stuck | length' <<<"$verdict")))
done

# ---------------------------------------------------------------- results
touch "$work/stop"
# The senders finish the transfer they are in (a chunk at a few Gbit/s);
# the receivers write their record after the close the sender waits for,
# then listen again until killed below.
for _ in $(seq 120); do
    pgrep -f "xfer.py send|iperf3 -c 10.81" >/dev/null || break
    sleep 1
done
sleep 2
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
pkill -f "xfer.py recv" 2>/dev/null || true
sleep 0.5
dmesg | tail -n +"$((dmesg_before + 1))" >"$out/dmesg-new.txt" || true
python3 - "$work" "$out" "$secs" <<'PY'
import glob, json, os, re, sys
work, out, secs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
recv = {}  # (sender's address, receiver's address) -> the records (ports are reused over time)
for p in glob.glob(f"{work}/r/*.json"):
    r = load(p)
    if r:
        recv.setdefault((r["remote"], r["local"]), []).append(r)
done = exact = 0
mismatch, nbytes = [], {"10.81.1.1": 0, "10.81.2.1": 0}
for p in glob.glob(f"{work}/s/*.json"):
    s = load(p)
    if not s:
        continue  # a send the stop interrupted, or one that failed (counted below)
    done += 1
    rs = recv.get((s["local"], s["remote"]), [])
    r = next((x for x in rs if x["sha256"] == s["sha256"] and x["bytes"] == s["bytes"]), None)
    if r:
        exact += 1
        nbytes[s["remote"].split(":")[0]] += s["bytes"]
    else:
        mismatch.append(os.path.basename(p) + (": no receiver record" if not rs else ": sha256 or length differs"))
failed = open(f"{out}/loops/failed").read().split() if os.path.exists(f"{out}/loops/failed") else []
agents = [json.loads(l) for l in open(f"{out}/agents.jsonl") if l.strip()]
heals = [json.loads(l) for l in open(f"{out}/heals.jsonl") if l.strip()]
bad_kernel = [l for l in open(f"{out}/dmesg-new.txt") if re.search(r"WARNING|BUG:|Oops|leak|hung task|rcu.*stall", l)]
def bounded(key, slack):
    res = {}
    for a in (1, 2):
        xs = [r for r in agents if r["agent"] == a]
        mid = (xs[0]["t"] + xs[-1]["t"]) / 2 if xs else 0
        half = [r[key] for r in xs if r["t"] <= mid]
        late = [r[key] for r in xs if r["t"] > mid]
        first, second = (max(half) if half else 0), (max(late) if late else 0)
        res[a] = {"first_half_max": first, "second_half_max": second, "ok": second <= 1.25 * first + slack}
    return res
rss, table = bounded("rss_kb", 4096), bounded("retained", 64)
stuck = [s for h in heals for s in h["stuck"]]
bulk = {}
for p in sorted(glob.glob(f"{out}/bulk-*.json")):
    try:
        bulk[os.path.basename(p)[5:-5]] = round(json.load(open(p))["end"]["sum_received"]["bits_per_second"] / 1e9, 2)
    except Exception:
        bulk[os.path.basename(p)[5:-5]] = None  # it did not finish (see the file)
summary = {
    "seconds": secs,
    "bulk_gbps": bulk,
    "transfers": {"ended": done, "byte_exact": exact, "mismatched": mismatch, "failed": failed},
    "goodput_gbps": {d: round(b * 8 / secs / 1e9, 2) for d, b in nbytes.items()},
    "heals": {"count": len(heals), "flows_checked": sum(h["checked"] for h in heals), "stuck": stuck},
    "agent_rss_kb": rss, "agent_retained_closed": table,
    "agent_last": [r for r in agents[-2:]],
    "kernel": bad_kernel,
}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print(f"transfers: {exact} of {done} ended byte-exact; {len(failed)} failed; goodput d1 {summary['goodput_gbps']['10.81.1.1']} Gbit/s, d2 {summary['goodput_gbps']['10.81.2.1']} Gbit/s")
if bulk:
    print("bulk iperf3 (bytes not checked), Gbit/s: " + ", ".join(f"{k} {v}" for k, v in bulk.items()))
print(f"heals: {len(heals)}, flows to d2 checked 5 s after each: {summary['heals']['flows_checked']}, stuck: {len(stuck)}")
for a in (1, 2):
    print(f"agent s{a}: RSS max {rss[a]['first_half_max']} kB (first half) -> {rss[a]['second_half_max']} kB (second); closed records {table[a]['first_half_max']} -> {table[a]['second_half_max']}")
checks = [
    ("bytes: every ended transfer byte-exact, none failed", done > 0 and exact == done and not failed),
    ("heals: no stuck flow after a heal", len(heals) > 0 and not stuck and summary["heals"]["flows_checked"] > 0),
    ("agent: RSS and closed-flow table bounded", all(v["ok"] for v in rss.values()) and all(v["ok"] for v in table.values())),
    ("kernel: no warning, BUG, Oops, leak or stall", not bad_kernel),
]
for name, ok in checks:
    print(("PASS " if ok else "FAIL ") + name)
print(f"(details: {out}/summary.json)")
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
