#!/usr/bin/env bash
# Host tests of the eBPF programs, the xdcc agent and the CLI, in network
# namespaces and a cgroup made here (nothing else on the machine is touched).
#
#   userspace/tests/netns.sh [telemetry] [reroute] [cli] [switch] [sample] [flowgen] [phantom] [apply] [policy] [churn] [prometheus] [bpfcc] [transport] [unolb]   (default: all; root)
#
# Needs target/release/xdcc (cargo build --release -p xdcc), python3, jq,
# nft, bpftool and iproute2 (ebpf/install-toolchain.sh installs them).
# Prints TAP-style lines, one per check ("ok N - what"; "not ok N - what"
# followed by the failed command's output as "# " lines), and "N passed,
# M failed" at the end. XDCC_TEST_VERBOSE=1 shows every check's output.
#
# This file is the driver: the checks, namespaces, CC properties and the
# transfer tool ($XFER) come from the shared test library tests/lib/lib.sh;
# the helpers below are this suite's own (its work directory, cgroups and
# agents); each section is a function section_<name> in
# userspace/tests/netns/<name>.sh.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
X=$root/target/release/xdcc
XT=$root/target/release/xdcc-testbed  # the testbed's tools (sample, flowgen)
[[ -x $X ]] || { echo "netns.sh: build first: cargo build --release -p xdcc" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "netns.sh: must run as root" >&2; exit 2; }
XDCC_BIN=$X # the library's CC properties are those of the binary under test
# shellcheck source=../../tests/lib/lib.sh
source "$root/tests/lib/lib.sh"
NS_TAG=x$$ # this run's namespaces and cgroups: x<pid>...

all_sections=(telemetry reroute cli switch sample flowgen phantom apply policy churn prometheus bpfcc transport unolb)
# Run only when named (none now; unolb was, until its black-holed transfer stopped
# stalling: testbed/notes/2026-11-29-unolb-tcp.md).
opt_in_sections=()
sections=("$@")
if ((${#sections[@]} == 0)); then
    for s in "${all_sections[@]}"; do [[ " ${opt_in_sections[*]} " == *" $s "* ]] || sections+=("$s"); done
fi
for s in "${sections[@]}"; do
    [[ " ${all_sections[*]} " == *" $s "* ]] ||
        { echo "netns.sh: unknown section $s (${all_sections[*]})" >&2; exit 2; }
done

work=$(mktemp -d /tmp/xdcc-netns.XXXXXX)
cg=$work/cgroup
pids=()

cleanup() {
    set +e
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    ns_cleanup
    if mountpoint -q "$cg"; then
        for d in "$cg"/"$NS_TAG"-*; do
            [[ -d $d ]] || continue
            xargs -r kill <"$d/cgroup.procs" 2>/dev/null
            for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$d" 2>/dev/null && break; sleep 0.2; done
        done
        umount "$cg"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$cg"
mount -t cgroup2 none "$cg"

log() { printf '[netns] %s\n' "$*" >&2; }
# run_in_cgroup CGROUP NS CMD...: the process joins the cgroup before exec
run_in_cgroup() { local c=$1 n=$2; shift 2; bash -c 'echo $$ > "$0/cgroup.procs"; exec ip netns exec "$@"' "$c" "$n" "$@"; }
# new_cgroup NAME: makes cgroup $NS_TAG-NAME in this run's cgroup2 mount, prints its path
new_cgroup() { local d=$cg/$NS_TAG-$1; mkdir -p "$d"; echo "$d"; }
# start_agent NS SOCKET CGROUP [ARGS...]: an agent in NS (its pid: ${pids[-1]}),
# once its socket is there
start_agent() {
    local n=$1 s=$2 c=$3; shift 3
    ip netns exec "$n" "$X" --socket "$s" agent --cgroup "$c" "$@" >>"$work/agent-$n.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do [[ -S $s ]] && return 0; sleep 0.1; done
    cat "$work/agent-$n.log" >&2
    return 1
}
stop_agent() { kill "$1"; wait "$1" 2>/dev/null || true; }
# agents_and_marker S D R PREFIX: on a routed_path, an agent at each end (S on
# s0, D on d0; cgroups PREFIXsnd and PREFIXrcv, sockets $work/PREFIXs.sock
# and PREFIXd.sock) and `xdcc mark-ce --every 25` on the router's port r1
# (counters in $work/PREFIXmarker.json). Sets cs and cd (the cgroups) and
# marker (the marker's pid) in the caller.
agents_and_marker() {
    local S=$1 D=$2 R=$3 p=$4
    cs=$(new_cgroup "${p}snd"); cd=$(new_cgroup "${p}rcv")
    start_agent "$S" "$work/${p}s.sock" "$cs" --iface s0
    start_agent "$D" "$work/${p}d.sock" "$cd" --iface d0
    ip netns exec "$R" "$X" mark-ce --iface r1 --every 25 >"$work/${p}marker.json" 2>"$work/${p}marker.log" &
    marker=$!
    pids+=("$marker")
    sleep 1
}
# two_paths S A B D NAME NET6: S -- A =(la | lb)= B -- D over IPv6 (the
# variables named by S, A, B, D set to namespaces NAMEs, NAMEa, NAMEb,
# NAMEd): S NET6:1::1 on s0, D NET6:2::1 on d0; A and B reach each other's
# side over two equal-cost next hops (la-ra on NET6:a::, lb-rb on NET6:b::),
# hashing the flow label (fib_multipath_hash_policy 0).
two_paths() {
    local -n _s=$1 _a=$2 _b=$3 _d=$4
    local name=$5 p=$6
    mkns "$1" "${name}s" && mkns "$2" "${name}a" && mkns "$3" "${name}b" && mkns "$4" "${name}d" || return 1
    link "$_s" s0 "$_a" a0 && link "$_a" la "$_b" ra && link "$_a" lb "$_b" rb && link "$_b" b0 "$_d" d0 || return 1
    ip -n "$_s" addr add "$p:1::1/64" dev s0 nodad; ip -n "$_a" addr add "$p:1::fe/64" dev a0 nodad
    ip -n "$_a" addr add "$p:a::1/64" dev la nodad; ip -n "$_b" addr add "$p:a::2/64" dev ra nodad
    ip -n "$_a" addr add "$p:b::1/64" dev lb nodad; ip -n "$_b" addr add "$p:b::2/64" dev rb nodad
    ip -n "$_b" addr add "$p:2::fe/64" dev b0 nodad; ip -n "$_d" addr add "$p:2::1/64" dev d0 nodad
    ip -n "$_s" -6 route add default via "$p:1::fe"; ip -n "$_d" -6 route add default via "$p:2::fe"
    ip -n "$_a" -6 route add "$p:2::/64" nexthop via "$p:a::2" dev la nexthop via "$p:b::2" dev lb
    ip -n "$_b" -6 route add "$p:1::/64" nexthop via "$p:a::1" dev ra nexthop via "$p:b::1" dev rb
    local n
    for n in "$_a" "$_b"; do in_ns "$n" sysctl -qw net.ipv6.conf.all.forwarding=1 net.ipv6.fib_multipath_hash_policy=0; done
}
# forward_drop NS RULE...: NS drops the forwarded packets that the nft
# RULE matches (e.g. `oifname lb`, `oifname la numgen random mod 100 < 2`),
# counted; forward_heal NS: it drops nothing again.
forward_drop() {
    local n=$1; shift
    in_ns "$n" nft list table inet xdcc_t >/dev/null 2>&1 || {
        in_ns "$n" nft add table inet xdcc_t &&
            in_ns "$n" nft add chain inet xdcc_t blk '{ type filter hook forward priority 0; }'
    } || return 1
    in_ns "$n" nft add rule inet xdcc_t blk "$@" counter drop
}
# forward_dropped NS: bytes NS's forward_drop rules dropped
forward_dropped() {
    in_ns "$1" nft -j list table inet xdcc_t | jq '[.nftables[] | .rule? // empty | .expr[] | .counter? // empty | .bytes] | add // 0'
}
forward_heal() { in_ns "$1" nft delete table inet xdcc_t; }
# flow_json NS SOCKET LOCAL: the agent's flow whose local address is LOCAL
flow_json() {
    in_ns "$1" "$X" --socket "$2" flows --all --json | jq -c --arg l "$3" '.[] | select(.local == $l)'
}
# tx_bytes NS DEV: bytes DEV has sent
tx_bytes() { in_ns "$1" cat "/sys/class/net/$2/statistics/tx_bytes"; }

for s in "${all_sections[@]}"; do
    # shellcheck source=/dev/null
    source "$root/userspace/tests/netns/$s.sh"
done
for s in "${sections[@]}"; do
    "section_$s"
done
tap_done
