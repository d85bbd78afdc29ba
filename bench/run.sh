#!/usr/bin/env bash
# Benchmarks of the algorithm core and the simulator. Prints, per algorithm,
# the per-ACK cost in nanoseconds (criterion, mean) and in instructions
# (callgrind: instructions inside the ACK loop / ACKs, minus the same loop
# with a do-nothing algorithm), and the simulator's speed in simulated
# packets per second on the 4+4 RTT-fairness scenario (queues in series)
# and on Uno's 256-host inter-DC topology (Fig. 9's permutation; each
# packet crosses 6-9 queues), and its wall time for one Fig. 13A run
# (bench/uno-multipath.py --artifact puts htsim's beside it).
# Numbers, not assertions: targets are discussed in docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

command -v valgrind >/dev/null || { echo "installing valgrind" >&2; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null; }

cargo build --release -q -p xdcc-algo --example ack_loop
cargo build --release -q -p xdcc-sim
echo "running criterion (about 20 s)" >&2
cargo bench -q -p xdcc-algo --bench per_ack -- --noplot >/dev/null 2>&1 || cargo bench -p xdcc-algo --bench per_ack -- --noplot

n=1000000
count() {
    valgrind --tool=callgrind --toggle-collect='ack_loop::run*' --callgrind-out-file=/dev/null \
        ./target/release/examples/ack_loop "$1" "$n" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
base=$(count noop)
printf '%-8s %12s %16s\n' algorithm "ns/ACK" "instructions/ACK"
cargo build --release -q -p xdcc
for cc in $(./target/release/xdcc cc known | awk '{print $1}'); do
    ir=$(count "$cc")
    ns=$(python3 -c "import json;d=json.load(open('target/criterion/per_ack/$cc/new/estimates.json'));print('%.1f'%(d['mean']['point_estimate']/4096))")
    printf '%-8s %12s %16s\n' "$cc" "$ns" "$(( (ir - base) / n ))"
done
echo
echo "simulator speed (testbed/scenarios/rtt-fairness.toml, 3 s simulated at 10 Gbit/s):"
./target/release/xdcc-sim run testbed/scenarios/rtt-fairness.toml --json \
    | python3 -c "import json,sys
for r in json.load(sys.stdin):
    print('  %-8s %6.2f M simulated packets/s (%d packets in %.2f s)' % (r['cc'], r['sim_packets_per_sec']/1e6, r['packets'], r['wall_s']))"
echo
echo "simulator speed on Uno's 256-host topology (two 8-ary fat trees, 8 border links; Fig. 9's 256 flows of 1 MB):"
for lb in unolb ecmp; do
    ./target/release/xdcc-sim run testbed/scenarios/uno-fig9-permutation.toml --lb "$lb" --json \
        | python3 -c "import json,sys
r=json.load(sys.stdin)[0]
print('  %-6s %6.2f M simulated packets/s (%d packets, %d events, %.2f s)' % ('$lb', r['sim_packets_per_sec']/1e6, r['packets'], r['events'], r['wall_s']))"
done
echo "one Fig. 13A run (8 flows of 5 MB, a black-holed border link), whole process:"
for lb in unolb spray; do
    TIMEFORMAT="  $lb: %R s wall"
    time ./target/release/xdcc-sim run testbed/scenarios/uno-fig13a-linkfail.toml --lb "$lb" >/dev/null 2>&1
done
