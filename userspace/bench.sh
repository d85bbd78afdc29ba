#!/usr/bin/env bash
# Cost of the xdcc eBPF programs, printed as numbers (root; host kernel):
#   1. ns per packet of xdcc_tc_egress / xdcc_tc_ingress with a flow-table
#      hit, from BPF_PROG_TEST_RUN (bpftool prog run, 1M repetitions);
#   2. ns per run from the kernel's BPF run-time stats during a real
#      iperf3 transfer (kernel.bpf_stats_enabled), sock_ops included;
#   3. veth throughput between two namespaces with and without the
#      telemetry attached (alternating runs, medians) and their ratio.
#
#   userspace/bench.sh [SECONDS_PER_RUN] [ROUNDS]      (default 3 s, 3 rounds)
# Targets (issue 4): <= 100 ns per packet, <= 3 % throughput loss.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${1:-3}
rounds=${2:-3}
[[ $(id -u) == 0 ]] || { echo "bench.sh: must run as root" >&2; exit 2; }
XDCC_BPF_LINKER_DIR=$("$root/ebpf/install-toolchain.sh")
export XDCC_BPF_LINKER_DIR
(cd "$root" && cargo build --release --locked -q -p xdcc)
X=$root/target/release/xdcc

tag=xb$$
A=${tag}a B=${tag}b
work=$(mktemp -d /tmp/xdcc-bench.XXXXXX)
cg=$work/cgroup
agent=""
cleanup() {
    set +e
    [[ -n $agent ]] && { kill "$agent"; wait "$agent"; }
    for n in "$A" "$B"; do ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null; ip netns del "$n" 2>/dev/null; done
    sysctl -qw kernel.bpf_stats_enabled=0
    if mountpoint -q "$cg"; then
        xargs -r kill <"$cg/$tag/cgroup.procs" 2>/dev/null; sleep 0.2; rmdir "$cg/$tag"; umount "$cg"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$A"; ip netns add "$B"
ip link add va netns "$A" type veth peer name vb netns "$B"
ip -n "$A" addr add 10.95.0.1/24 dev va; ip -n "$B" addr add 10.95.0.2/24 dev vb
for n in "$A" "$B"; do ip -n "$n" link set lo up; done
ip -n "$A" link set va up; ip -n "$B" link set vb up
mkdir -p "$cg"; mount -t cgroup2 none "$cg"; mkdir "$cg/$tag"
ip netns exec "$B" iperf3 -s -p 5201 -D

start_agent() {
    ip netns exec "$A" "$X" --socket "$work/a.sock" agent --cgroup "$cg/$tag" --iface va >"$work/agent.log" 2>&1 &
    agent=$!
    for _ in $(seq 100); do [[ -S $work/a.sock ]] && return; sleep 0.1; done
    cat "$work/agent.log" >&2; exit 1
}
stop_agent() { kill "$agent"; wait "$agent" || true; agent=""; }
# iperf3 from A (in the tracked cgroup) to B; prints Gbit/s
iperf() {
    bash -c 'echo $$ > "$0/cgroup.procs"; exec ip netns exec "$1" iperf3 -c 10.95.0.2 -p 5201 -t "$2" -J' \
        "$cg/$tag" "$A" "$1" | jq '.end.sum_received.bits_per_second / 1e9'
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
prog_id() { bpftool prog show -j | jq --arg n "$1" '[.[] | select(.name == $n)] | last | .id'; }

echo "== 1. BPF_PROG_TEST_RUN: ns per packet (flow-table hit, 1M runs)"
start_agent
# a long flow so the table holds an entry the crafted packets hit
bash -c 'echo $$ > "$0/cgroup.procs"; exec ip netns exec "$1" iperf3 -c 10.95.0.2 -p 5201 -t 30 -b 10M' "$cg/$tag" "$A" >/dev/null &
flowpid=$!
sleep 1.5
flow=$(ip netns exec "$A" "$X" --socket "$work/a.sock" flows --json | jq -c '[.[] | select(.remote == "10.95.0.2:5201" and .bytes_sent > 100000)][0]')
lport=${flow#*\"local\":\"10.95.0.1:}; lport=${lport%%\"*}
python3 - "$work" "$lport" <<'EOF'
import struct, sys
work, lport = sys.argv[1], int(sys.argv[2])
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def pkt(src, dst, sport, dport, payload):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, 1, 1, 5 << 4, 0x10, 65535, 0, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 2, 20 + len(tcp), 0, 0x4000, 64, 6, 0, bytes(src), bytes(dst))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp
a, b = [10, 95, 0, 1], [10, 95, 0, 2]
open(f"{work}/egress.bin", "wb").write(pkt(a, b, lport, 5201, b"x" * 1448))
open(f"{work}/ingress.bin", "wb").write(pkt(b, a, 5201, lport, b""))
EOF
for p in egress ingress; do
    id=$(prog_id "xdcc_tc_$p")
    out=$(bpftool prog run id "$id" data_in "$work/$p.bin" repeat 1000000)
    ns=$(grep -o 'duration (average): [0-9]*ns' <<<"$out" | grep -o '[0-9]*')
    printf '  %-16s %5s ns/packet\n' "xdcc_tc_$p" "$ns"
done

echo "== 2. kernel BPF run-time stats during iperf3 (${secs} s)"
kill "$flowpid" 2>/dev/null; wait "$flowpid" 2>/dev/null || true
sysctl -qw kernel.bpf_stats_enabled=1
declare -A t0 c0
for p in xdcc_tc_egress xdcc_tc_ingress xdcc_sockops; do
    id=$(prog_id $p)
    t0[$p]=$(bpftool prog show id "$id" -j | jq '.run_time_ns // 0'); c0[$p]=$(bpftool prog show id "$id" -j | jq '.run_cnt // 0')
done
gbps=$(iperf "$secs")
total=0
for p in xdcc_tc_egress xdcc_tc_ingress xdcc_sockops; do
    id=$(prog_id $p)
    t=$(( $(bpftool prog show id "$id" -j | jq '.run_time_ns // 0') - t0[$p] ))
    c=$(( $(bpftool prog show id "$id" -j | jq '.run_cnt // 0') - c0[$p] ))
    printf '  %-16s %10d runs %7s ns/run\n' "$p" "$c" "$( ((c > 0)) && echo $((t / c)) || echo -)"
    total=$((total + t))
done
awk -v t="$total" -v s="$secs" 'BEGIN { printf "  all programs together: %.2f %% of one CPU\n", t / (s * 1e9) * 100 }'

echo "  (during a $gbps Gbit/s transfer; tc runs once per GSO packet)"
sysctl -qw kernel.bpf_stats_enabled=0
stop_agent

echo "== 3. veth throughput, ${rounds} x ${secs} s each way, alternating"
with=() without=()
for r in $(seq "$rounds"); do
    without+=("$(iperf "$secs")")
    start_agent; with+=("$(iperf "$secs")"); stop_agent
done
m0=$(printf '%s\n' "${without[@]}" | median); m1=$(printf '%s\n' "${with[@]}" | median)
echo "  without telemetry: ${without[*]} Gbit/s (median $m0)"
echo "  with telemetry:    ${with[*]} Gbit/s (median $m1)"
awk -v a="$m0" -v b="$m1" 'BEGIN { printf "  ratio without/with: %.3f (%.1f %% loss)\n", a / b, (1 - b / a) * 100 }'
