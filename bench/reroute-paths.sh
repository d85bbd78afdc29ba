#!/usr/bin/env bash
# Four equal-cost paths and a sender's TCP flows across them, at real speed
# on this host's kernel: what moving a connection to another path buys when
# one path fails silently and when another is congested (issue 31, "the TCP
# side"; Uno's Fig. 13A/B question asked of Linux TCP). Three ways to choose
# a path, one run each:
#   single   the flow label (ECMP's entropy) never changes: no agent, and
#            net.core.txrehash=0 so an RTO keeps the label
#   rto      Linux's own behaviour: no agent, txrehash=1 (the default): an
#            RTO draws a new flow label, hence a new path
#   agent    the xdcc agent's rerouter: a new path after 3 ECN-congested
#            rounds (PLB) or an RTO, at most once per base RTT
#
#           ┌── r1 ──┐
#   s ── r ─┼── r2 ──┼─ d        each r→d link: HTB RATE with a DCTCP step
#   x ──┘   ├── r3 ──┤           marker at K (xdcc mark-phantom, drain 100 %)
#           └── r4 ──┘           r hashes (src, dst, flow label) over r1..r4
# s runs FLOWS bpf_dctcp streams (iperf3 -P) to d's service address; d's
# ACKs return over r1. Phases (seconds): 0–6 healthy; at 6 r3 silently drops
# everything it should forward to d (its queue's limit set to 0: no routing
# update); at 14 r3 heals and x starts 4 cubic streams (no ECN) to d's
# address on r4, which only r4 reaches; the run ends at 24. Prints per phase
# the aggregate throughput of s's flows, the streams that carried under
# 1 Mbit/s (1/400 of a path) in the failure phase's last 4 s (stuck), and the
# agent's moves; per link the bytes r sent in each phase.
# --delay-ms D gives every path a WAN's RTT: netem delays d's ACKs by D ms
# (the kernel needs netem: this project's host has none, its test kernel
# does). Each link's buffer is then at least one BDP and DCTCP's K at least
# BDP/7 (and 4 packets). --vm runs the script in the test kernel under qemu
# (testbed/vm/run.sh; 20x slower than this host): defaults there are 10
# Mbit/s per path, a 20 ms WAN RTT and xdcc's DCTCP module (`--cc dctcp`).
#   bench/reroute-paths.sh [--vm] [--rate-mbit 400] [--flows 16] [--delay-ms 0]
#                          [--cc bpf_dctcp] [--only single,rto,agent]
#                          [--reroute-set NAME=VALUE ...]   (the agent's settings, `xdcc reroute set`)
# Root. Numbers, not assertions.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
X=${XDCC_BIN:-$root/target/release/xdcc}
usage="usage: bench/reroute-paths.sh [--vm] [--rate-mbit R] [--flows N] [--delay-ms D] [--cc CC] [--only single,rto,agent] [--reroute-set NAME=VALUE]"
vm=0
[[ -n ${XDCC_IN_VM:-} ]] && rate=10 delay_ms=20 cc=dctcp || rate=400 delay_ms=0 cc=bpf_dctcp
flows=16
only=single,rto,agent
reroute_set=()
args=("$@")
while (($#)); do
    case $1 in
        --vm) vm=1; shift ;;
        --reroute-set) reroute_set+=("$2"); shift 2 ;;
        --rate-mbit) rate=$2; shift 2 ;;
        --flows) flows=$2; shift 2 ;;
        --delay-ms) delay_ms=$2; shift 2 ;;
        --cc) cc=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
done
[[ $rate =~ ^[0-9]+$ && $rate -ge 1 ]] || { echo "reroute-paths.sh: --rate-mbit must be a positive integer" >&2; exit 2; }
[[ $flows =~ ^[0-9]+$ && $flows -ge 1 && $flows -le 128 ]] || { echo "reroute-paths.sh: --flows must be 1-128" >&2; exit 2; }
[[ $delay_ms =~ ^[0-9]+$ && $delay_ms -le 1000 ]] || { echo "reroute-paths.sh: --delay-ms must be an integer 0-1000" >&2; exit 2; }
for p in ${only//,/ }; do
    [[ $p == single || $p == rto || $p == agent ]] || { echo "reroute-paths.sh: --only takes single, rto, agent (got '$p')" >&2; exit 2; }
done
[[ $(id -u) == 0 ]] || { echo "reroute-paths.sh: needs root" >&2; exit 2; }
[[ -x $X ]] || { echo "reroute-paths.sh: build first: cargo build --release -p xdcc" >&2; exit 2; }
if ((vm)) && [[ -z ${XDCC_IN_VM:-} ]]; then
    # The guest gets the arguments without --vm (run.sh passes them through).
    rest=()
    for a in "${args[@]}"; do [[ $a == --vm ]] || rest+=("$a"); done
    exec "$root/testbed/vm/run.sh" --timeout 420 "$root/bench/reroute-paths.sh" "${rest[@]}"
fi
for t in iperf3 jq; do
    command -v $t >/dev/null || { echo "reroute-paths.sh: needs $t (apt-get install iperf3 jq)" >&2; exit 2; }
done
if [[ -n ${XDCC_IN_VM:-} && $cc != bpf_* ]] && ! grep -qw "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control; then
    # the test kernel has no BTF for BPF CCs: xdcc's module (testbed/kernel/build.sh built it)
    insmod "$root/kmods/tcp_$cc.ko" || { echo "reroute-paths.sh: no module kmods/tcp_$cc.ko" >&2; exit 2; }
fi

tag=rp$$
work=$(mktemp -d /tmp/xdcc-reroute-paths.XXXXXX)
N() { echo "$tag-$1"; }
pids=()
registered=$(grep -cw "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control || true)
cleanup() {
    set +e
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    for n in s x r d; do ip netns del "$(N $n)" 2>/dev/null; done
    mountpoint -q "$work/cg" && rmdir "$work/cg/$tag" 2>/dev/null; mountpoint -q "$work/cg" && umount "$work/cg"
    [[ $registered != 0 || $cc != bpf_* ]] || "$X" cc unload "${cc#bpf_}" --bpf >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
in_ns() { local n=$1; shift; ip netns exec "$(N "$n")" "$@"; }

# (accept_dad=0: while the router's new link-local addresses are tentative,
# ~2 s, it sends no neighbour solicitation and drops what it forwards.)
for n in s x r d; do ip netns add "$(N $n)"; in_ns $n ip link set lo up; in_ns $n sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0; done
veth() { # veth A IFA B IFB
    ip link add "$2" netns "$(N "$1")" type veth peer "$4" netns "$(N "$3")"
    in_ns "$1" ip link set "$2" up; in_ns "$3" ip link set "$4" up
}
veth s s0 r r0
veth x x0 r rx
in_ns s ip addr add fd93:1::1/64 dev s0 nodad; in_ns r ip addr add fd93:1::fe/64 dev r0 nodad
in_ns x ip addr add fd93:3::1/64 dev x0 nodad; in_ns r ip addr add fd93:3::fe/64 dev rx nodad
in_ns d ip addr add fd93:99::1/128 dev lo
# DCTCP's step marker at K = 65 packets per Gbit/s (as bench/realspeed.sh),
# at least BDP/7 of the WAN's RTT and 4 packets; the buffer 20 ms of the
# link's rate, at least one BDP
bdp=$((rate * delay_ms * 125))
k_bytes=$((rate * 65 * 1500 / 1000))
((k_bytes >= bdp / 7)) || k_bytes=$((bdp / 7))
((k_bytes >= 6000)) || k_bytes=6000
buffer=$((rate * 2500))
((buffer >= bdp)) || buffer=$bdp
((buffer >= 2 * k_bytes)) || buffer=$((2 * k_bytes))
hops=()
for k in 1 2 3 4; do
    veth r "r$k" d "d$k"
    in_ns r ip addr add "fd93:2$k::1/64" dev "r$k" nodad
    in_ns d ip addr add "fd93:2$k::2/64" dev "d$k" nodad
    hops+=(nexthop via "fd93:2$k::2" dev "r$k")
    in_ns r tc qdisc add dev "r$k" root handle 1: htb default 1
    in_ns r tc class add dev "r$k" parent 1: classid 1:1 htb rate "${rate}mbit" ceil "${rate}mbit"
    in_ns r tc qdisc add dev "r$k" parent 1:1 handle 10: bfifo limit "$buffer"
    # one wire packet per skb, as a switch port sees them
    in_ns r ip link set "r$k" gso_max_segs 1
done
in_ns r sysctl -qw net.ipv6.conf.all.forwarding=1 net.ipv6.fib_multipath_hash_policy=0
in_ns r ip -6 route add fd93:99::1/128 "${hops[@]}"
in_ns s ip -6 route add default via fd93:1::fe
in_ns x ip -6 route add default via fd93:3::fe
in_ns d ip -6 route add fd93:1::/64 via fd93:21::1 dev d1
in_ns d ip -6 route add fd93:3::/64 via fd93:21::1 dev d1
if ((delay_ms)); then
    # the WAN's RTT on the ACK path (every path's ACKs return over d1)
    in_ns d tc qdisc add dev d1 root netem delay "${delay_ms}ms" limit 100000 \
        || { echo "reroute-paths.sh: --delay-ms needs netem (sch_netem), which this kernel lacks" >&2; exit 2; }
fi
for n in s d; do in_ns $n sysctl -qw net.ipv4.tcp_ecn=1; done
in_ns x sysctl -qw net.ipv4.tcp_ecn=0  # the cross traffic ignores marks: it fills the queue
if [[ $cc == bpf_* ]]; then
    "$X" cc load "${cc#bpf_}" --bpf >/dev/null 2>&1 || [[ $registered != 0 ]]
fi
for k in 1 2 3 4; do
    in_ns r "$X" mark-phantom --iface "r$k" --rate-mbit "$rate" --drain-pct 100 --size-bytes $((k_bytes * 10)) \
        --kmin-pct 10 --kmax-pct 11 >"$work/marker-$k.out" 2>&1 &
    pids+=($!)
done
in_ns d iperf3 -s -p 5301 -D
in_ns d iperf3 -s -p 5302 -D
mkdir -p "$work/cg"; mount -t cgroup2 none "$work/cg"; mkdir -p "$work/cg/$tag"
sleep 1

link_bytes() { for k in 1 2 3 4; do in_ns r cat "/sys/class/net/r$k/statistics/tx_bytes"; done | paste -sd' '; }

run() { # run POLICY
    local policy=$1 agent_pid=""
    in_ns s sysctl -qw net.core.txrehash=$([[ $policy == single ]] && echo 0 || echo 1)
    if [[ $policy == agent ]]; then
        in_ns s "$X" --socket "$work/agent.sock" agent --cgroup "$work/cg/$tag" --iface s0 >"$work/agent.log" 2>&1 &
        agent_pid=$!
        for _ in $(seq 100); do [[ -S $work/agent.sock ]] && break; sleep 0.1; done
        in_ns s "$X" --socket "$work/agent.sock" reroute set paths 16 >/dev/null
        local kv
        for kv in "${reroute_set[@]}"; do
            in_ns s "$X" --socket "$work/agent.sock" reroute set "${kv%%=*}" "${kv#*=}" >/dev/null
        done
    fi
    local b0 b1 b2 b3
    b0=$(link_bytes)
    # the sender inside the tracked cgroup, so the agent sees its sockets
    bash -c 'echo $$ > "$0/cgroup.procs"; exec ip netns exec "$1" iperf3 -6 -c fd93:99::1 -p 5301 -P "$2" -t 24 -i 1 -C "$3" --json' \
        "$work/cg/$tag" "$(N s)" "$flows" "$cc" >"$work/$policy.json" 2>"$work/$policy.err" &
    local ipid=$!
    sleep 6; b1=$(link_bytes)
    in_ns r tc qdisc change dev r3 parent 1:1 handle 10: bfifo limit 0
    sleep 8; b2=$(link_bytes)
    in_ns r tc qdisc change dev r3 parent 1:1 handle 10: bfifo limit "$buffer"
    in_ns x timeout 12 iperf3 -6 -c fd93:24::2 -p 5302 -P 4 -t 10 -C cubic >/dev/null 2>&1 &
    local xpid=$!
    sleep 10; b3=$(link_bytes)
    wait $ipid || true
    wait $xpid || true
    local moves=0
    if [[ -n $agent_pid ]]; then
        moves=$(in_ns s "$X" --socket "$work/agent.sock" --json stats | jq .reroutes)
        in_ns s "$X" --socket "$work/agent.sock" --json flows --all | jq -r --arg cc "$cc" '.[] | select(.cc == $cc) | .last_reroute' \
            | sort | uniq -c | tr '\n' ' ' >"$work/reasons"
        kill "$agent_pid"; wait "$agent_pid" 2>/dev/null || true
    fi
    python3 - "$work/$policy.json" "$policy" "$moves" "$rate" "$b0" "$b1" "$b2" "$b3" <<'PY'
import json, sys
path, policy, moves, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
b = [list(map(int, s.split())) for s in sys.argv[5:9]]
dec = 0 if rate >= 100 else 1  # Mbit/s: one decimal on slow paths
try:
    d = json.load(open(path))
    iv = d["intervals"]
except (ValueError, KeyError):
    print(f"{policy:<7} iperf3 gave no result"); sys.exit(0)
def agg(lo, hi):
    xs = [i["sum"]["bits_per_second"] for i in iv if lo <= i["sum"]["start"] < hi]
    return sum(xs) / len(xs) / 1e6 if xs else 0.0
n = len(iv[0]["streams"])
stuck = 0
for s in range(n):
    xs = [i["streams"][s]["bits_per_second"] for i in iv if 10 <= i["sum"]["start"] < 14]
    stuck += bool(xs) and sum(xs) / len(xs) < rate * 1e6 / 400
def link(a, c):
    return "/".join(f"{(b[c][k] - b[a][k]) * 8 / 1e6 / [6, 8, 10][a]:.{dec}f}" for k in range(4))
import os
reasons = open(os.path.join(os.path.dirname(path), "reasons")).read().strip() if policy == "agent" else ""
print(f"{policy:<7} {agg(1, 6):>8.{dec}f} {agg(7, 14):>8.{dec}f} {agg(15, 24):>8.{dec}f} {stuck:>3}/{n:<3} {moves:>5}   "
      f"{link(0, 1)} | {link(1, 2)} | {link(2, 3)}" + (f"   last move of each flow: {reasons}" if reasons else ""))
PY
}

echo "4 paths of ${rate} Mbit/s, WAN RTT ${delay_ms} ms (${flows} $cc streams; r3 black-holed 6-14 s; 4 cubic streams on r4 14-24 s; K $k_bytes B, buffer $buffer B, kernel $(uname -r))"
printf '%-7s %8s %8s %8s %7s %5s   %s\n' policy healthy failed congest stuck moves "Mbit/s per link r1/r2/r3/r4: healthy | failed | congested"
for p in ${only//,/ }; do run "$p"; done

# The model beside (a WAN RTT only): xdcc-sim on the same paths — two DCs of
# one host each (k = 2 fat trees at 1 Gbit/s, so only the border links
# limit) joined by 4 border links of RATE, the RTT, K and buffer above, FLOWS
# DCTCP flows; "rto" is PLB moving on timeouts only (Linux's txrehash),
# "agent" PLB after 12 rounds with half the ACKs marked, and on timeouts
# (the agent's defaults). Its black hole does not heal, and its ECMP cannot
# pin cross traffic to one path, so it has the healthy and failed phases only
# (seconds 1-6 and 7-14, 5 seeds each).
S=${XDCC_SIM_BIN:-$root/target/release/xdcc-sim}
if ((delay_ms)) && [[ -x $S ]]; then
    pairs=$(for ((i = 0; i < flows; i++)); do printf '"a.0>b.0"%s' "$([[ $i -lt $((flows - 1)) ]] && echo ', ')"; done)
    for p in ${only//,/ }; do
        case $p in
            single) lb='{ kind = "ecmp" }' ;;
            rto) lb='{ kind = "plb", congested_rounds = 1000000 }' ;;
            agent) lb='{ kind = "plb", congested_rounds = 12, congested_frac = 0.5 }' ;;
        esac
        row=()
        for phase in "1000 6000" "7000 14000"; do
            read -r from until <<<"$phase"
            tot=0 stuck=0
            for seed in 1 2 3 4 5; do
                cat >"$work/model.toml" <<TOML
name = "reroute-paths-model"
duration_ms = $until
measure_from_ms = $from
cc = ["dctcp"]
seed = $seed
sample_interval_us = 100000
[net]
link_rate_gbps = $(awk -v r="$rate" 'BEGIN {print r / 1000}')
intra_rtt_us = 100
inter_rtt_us = $((delay_ms * 1000))
mtu = 1500
[topology]
kind = "interdc"
k = 2
link_rate_gbps = 1.0
hop_latency_us = 5.0
buffer_kb = 1000
marking = { kind = "threshold", k_pkts = $(((k_bytes + 1499) / 1500)) }
border_links = 4
border_rate_gbps = $(awk -v r="$rate" 'BEGIN {print r / 1000}')
border_buffer_kb = $(awk -v b="$buffer" 'BEGIN {print b / 1000}')
border_latency_us = $((delay_ms * 500 - 50))
fail = [{ link = "border2", from_ms = 6000 }]
[[flows]]
name = "s"
count = $flows
pairs = [$pairs]
lb = $lb
TOML
                out=$("$S" run "$work/model.toml" --json | jq -r --argjson r "$rate" \
                    '.[0] | [([.flows[].mean_rate_mbps] | add), ([.flows[] | select(.mean_rate_mbps < $r / 400)] | length)] | @tsv')
                read -r t s <<<"$out"
                tot=$(awk -v a="$tot" -v b="$t" 'BEGIN {print a + b}')
                stuck=$((stuck + s))
            done
            row+=("$(awk -v a="$tot" 'BEGIN {printf "%.1f", a / 5}')" "$(awk -v s="$stuck" 'BEGIN {printf "%.1f", s / 5}')")
        done
        printf '%-7s %8s %8s %8s %7s %5s   (model: xdcc-sim, 5 seeds; stuck = mean of the failed phase)\n' \
            "$p" "${row[0]}" "${row[2]}" "-" "${row[3]}/$flows" "-"
    done
fi
