#!/usr/bin/env bash
# Cost of starting a program in the testbed's guest (qemu TCG), where the
# host's root file system is mounted read-only over 9p with cache=loose
# (testbed/vm/init.sh). Prints the mean wall time per exec of the programs
# the testbed spawns, warm (the guest's page cache keeps what it read: what
# cache=loose buys) and cold (caches dropped before each exec, so the binary
# and its libraries are read over 9p again; a lower bound on a mount without
# cache=loose, which also loses readahead and cached metadata).
#
#   bench/vm-exec.sh [N]      (default 10 execs per program and mode)
#
# Numbers, not assertions. 2026-11-25, development machine: warm iperf3 46,
# tc 51, ip 50 ms, python3 0.26 s; cold 76, 74, 78 ms, 0.79 s. With
# cache=loose removed from testbed/vm/init.sh (same machine, same day):
# iperf3 140, tc 123, ip 104 ms, python3 1.14 s per exec.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=${1:-10}
[[ $n =~ ^[1-9][0-9]?$ ]] || { echo "bench/vm-exec.sh: N must be 1-99 (got '$n')" >&2; exit 2; }

if [[ -z ${XDCC_IN_VM:-} ]]; then
    exec "$root/testbed/vm/run.sh" --timeout 600 "$root/bench/vm-exec.sh" "$n"
fi

# In the guest.
grep ' /mnt/host \| / 9p' /proc/mounts | head -1 | sed 's/^/[bench] mount: /'
for mode in warm cold; do
    for prog in "iperf3 -v" "tc -V" "ip -V" "python3 -c pass"; do
        $prog >/dev/null 2>&1 || true  # (warm: load it once)
        total=0  # microseconds; bash's own clock (EPOCHREALTIME), no exec
        for ((i = 0; i < n; i++)); do
            [[ $mode == cold ]] && echo 3 >/proc/sys/vm/drop_caches
            s=${EPOCHREALTIME/./}
            $prog >/dev/null 2>&1 || true
            e=${EPOCHREALTIME/./}
            total=$((total + e - s))
        done
        printf '[bench] %-4s %-16s %6d ms per exec\n' "$mode" "$prog" $((total / n / 1000))
    done
done
