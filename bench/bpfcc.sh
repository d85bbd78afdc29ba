#!/usr/bin/env bash
# Throughput and CPU cost of the BPF struct_ops CCs against the kernel's own
# cubic and bbr, on a veth pair between two network namespaces of this host
# (no rate limit: the CPU is the bottleneck, so CPU per GB is what differs).
# One iperf3 run per CC, all in one invocation so the ratios compare like
# with like. Prints, per CC: throughput, host CPU seconds per GB moved
# (every core, sender and receiver: /proc/stat), the sender process's CPU
# (iperf3), and both as ratios to cubic.
#   bench/bpfcc.sh [SECONDS] [RATE]   (root; default 8 s per CC, no limit)
# RATE (e.g. 1gbit) puts a TBF on the sender's port: at equal throughput the
# CPU per GB compares the per-packet cost of the CCs alone.
# Numbers, not assertions: docs/benchmarks.md quotes one run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${1:-8}
rate=${2:-}
[[ $(id -u) == 0 ]] || { echo "bench/bpfcc.sh: needs root (network namespaces, BPF)" >&2; exit 2; }
for t in iperf3 jq; do command -v $t >/dev/null || { echo "bench/bpfcc.sh: needs $t (apt-get install $t)" >&2; exit 2; }; done
X=$root/target/release/xdcc
[[ -x $X ]] || (cd "$root" && cargo build --release --locked -q -p xdcc)

a=xb-snd-$$ b=xb-rcv-$$
loaded=()
cleanup() {
    # The iperf3 daemon outlives its namespace's deletion and would keep a
    # socket, the namespace and the last BPF CC's struct_ops map alive.
    [[ ! -s /tmp/xdcc-bench-$$.pid ]] || kill "$(cat /tmp/xdcc-bench-$$.pid)" 2>/dev/null || true
    rm -f /tmp/xdcc-bench-$$.pid
    ip netns del $a 2>/dev/null || true
    ip netns del $b 2>/dev/null || true
    for c in "${loaded[@]}"; do "$X" cc unload "$c" --bpf >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
ip netns add $a
ip netns add $b
ip link add v0 netns $a type veth peer v1 netns $b
ip -n $a addr add 10.98.0.1/24 dev v0
ip -n $b addr add 10.98.0.2/24 dev v1
for n in $a $b; do
    ip -n $n link set lo up
    ip netns exec $n sysctl -qw net.ipv4.tcp_ecn=1
done
ip -n $a link set v0 up
ip -n $b link set v1 up
[[ -z $rate ]] || tc -n $a qdisc add dev v0 root tbf rate "$rate" burst 256k latency 5ms
ip netns exec $b iperf3 -s -D -p 5399 -I /tmp/xdcc-bench-$$.pid
sleep 0.5

known=$("$X" cc known | awk '{print $1}')
for c in $known; do
    if ! grep -qw "bpf_$c" /proc/sys/net/ipv4/tcp_available_congestion_control; then
        "$X" cc load $c --bpf >/dev/null
        loaded+=("$c")
    fi
done

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; } # user nice system irq softirq
hz=$(getconf CLK_TCK)
declare -A gbps cpu_gb snd_pct
# shellcheck disable=SC2207
ccs=(cubic bbr $(for c in $known; do echo "bpf_$c"; done))
for cc in "${ccs[@]}"; do
    # The receiver runs the same CC where a namespace may select it (only
    # TCP_CONG_NON_RESTRICTED CCs, i.e. the BPF ones and the host's
    # tcp_allowed_congestion_control; otherwise it keeps the default).
    ip netns exec $b sysctl -qw net.ipv4.tcp_congestion_control="$cc" 2>/dev/null || true
    b0=$(busy)
    ip netns exec $a iperf3 -c 10.98.0.2 -p 5399 -t "$secs" -C "$cc" -J >/tmp/xdcc-bench-$$.json
    b1=$(busy)
    bytes=$(jq '.end.sum_received.bytes' /tmp/xdcc-bench-$$.json)
    gbps[$cc]=$(jq '.end.sum_received.bits_per_second / 1e9' /tmp/xdcc-bench-$$.json)
    snd_pct[$cc]=$(jq '.end.cpu_utilization_percent.host_total' /tmp/xdcc-bench-$$.json)
    cpu_gb[$cc]=$(python3 -c "print(($b1 - $b0) / $hz / ($bytes / 1e9))")
done
rm -f /tmp/xdcc-bench-$$.json

echo "veth between two namespaces${rate:+, TBF $rate}, $secs s per CC, $(nproc) CPUs, kernel $(uname -r)"
printf '%-11s %9s %10s %14s %10s %12s\n' cc Gbit/s "vs cubic" "CPU s/GB" "vs cubic" "sender CPU%"
for cc in "${ccs[@]}"; do
    python3 - "$cc" "${gbps[$cc]}" "${gbps[cubic]}" "${cpu_gb[$cc]}" "${cpu_gb[cubic]}" "${snd_pct[$cc]}" <<'EOF'
import sys
cc, g, g0, c, c0, s = sys.argv[1], *map(float, sys.argv[2:])
print(f"{cc:<11} {g:9.2f} {g / g0:10.2f} {c:14.3f} {c / c0:10.2f} {s:12.1f}")
EOF
done
