#!/usr/bin/env bash
# CPU cost of one testbed sample (`xdcc-testbed sample`: a sock_diag dump in each of
# 8 sender namespaces), measured in the testbed's guest (qemu TCG), where
# the sampler competes with the emulated network for the CPU. Prints the
# CPU milliseconds per sample (user + system) with the namespaces sharing the
# kernel's TCP hash table (Linux's default: every dump walks all of its
# buckets, 16 384 in the guest) and with their own 1024-bucket tables
# (`net.ipv4.tcp_child_ehash_entries`, what testbed/vm/init.sh sets), and
# what that is per second at the testbed's 100 ms period.
#
#   bench/sampler.sh [SECONDS]      (default 2 s per measurement, 2 rounds)
#
# Numbers, not assertions. 2026-11-25, development machine: 5.5-7.2 ms
# per sample shared, 0.8-1.2 ms with 1024 buckets (four invocations).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${1:-2}
[[ $secs =~ ^[1-9][0-9]?$ ]] || { echo "bench/sampler.sh: SECONDS must be 1-99 (got '$secs')" >&2; exit 2; }

if [[ -z ${XDCC_IN_VM:-} ]]; then
    (cd "$root" && cargo build --release --locked -q -p xdcc)
    exec "$root/testbed/vm/run.sh" --timeout 600 "$root/bench/sampler.sh" "$secs"
fi

# In the guest.
X=$root/target/release/xdcc
made=()
knob=/proc/sys/net/ipv4/tcp_child_ehash_entries
before=$(cat $knob)
trap 'for n in "${made[@]}"; do ip netns del "$n"; done; echo "$before" >$knob' EXIT
for buckets in 0 1024; do
    echo "$buckets" >$knob
    args=()
    for i in 1 2 3 4 5 6 7 8; do
        n=xb$buckets-$i
        ip netns add "$n"; made+=("$n")
        args+=(--sockets "$n:5201")
    done
    what=$([[ $buckets == 0 ]] && echo "shared table" || echo "own $buckets-bucket tables")
    for round in 1 2; do
        TIMEFORMAT='%U %S'
        { time "${X}-testbed" sample "${args[@]}" --interval-ms 1 --duration "$secs" >/tmp/sampler-out; } 2>/tmp/sampler-time
        tail -1 /tmp/sampler-out >/tmp/sampler-stats
        read -r user sys </tmp/sampler-time
        n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sampler"]["samples"])' /tmp/sampler-stats)
        python3 -c '
import sys
what, rnd, n, user, sys_ = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
ms = (user + sys_) * 1e3 / n
print(f"8 namespaces, {what:24s} round {rnd}: {n:5d} samples, {ms:5.2f} ms CPU per sample "
      f"({user:.2f} s user, {sys_:.2f} s system): {ms * 10 / 20:.1f} % of the 2-CPU guest at 10 samples/s")' \
            "$what" "$round" "$n" "$user" "$sys"
    done
done
