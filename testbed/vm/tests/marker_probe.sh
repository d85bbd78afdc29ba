#!/bin/bash
# Measurement: does the AMRT anti-ECN marker see spare capacity on a link
# that is full? Two cubic flows with ECN (ECT set, no CE from the fifo;
# iperf3: the Python transfer tool is CPU-bound at ~5 Mbit/s under TCG)
# keep a standing queue in the router's 20 Mbit/s HTB port for the whole
# run, so the link is never idle and eq. 2 must mark (almost) nothing. The marker
# runs on rcv's ingress (the port's dequeue times), as in the AMRT tests.
# Each run prints the marker's counters (marked / ECT packets = the
# fraction of packets it called "spare"), the throughput and the queue.
#   run.sh testbed/vm/tests/marker_probe.sh [XDCC_BINARY [MBIT [BURST...]]]
# (the port's rate, default 20 Mbit/s; HTB burst/cburst in bytes, default
# 3000 and 1500)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd); root=$(cd "$here/../../.." && pwd)
source "$here/lib.sh"
X=${1:-$root/target/release/xdcc}
mbit=${2:-20}
RATE=${mbit}mbit
bursts=("${@:3}")
((${#bursts[@]})) || bursts=(3000 1500)
for burst in "${bursts[@]}"; do
    net_up fifo
    tc -n rtr class change dev r1 parent 1: classid 1:1 htb rate $RATE ceil $RATE burst "$burst" cburst "$burst"
    ip netns exec snd sysctl -qw net.ipv4.tcp_ecn=1
    ip netns exec rcv sysctl -qw net.ipv4.tcp_ecn=1
    out=$(mktemp -d)
    ip netns exec rcv "$X" mark-amrt --iface d0 --rate-mbit "$mbit" >"$out/marker.json" 2>"$out/marker.log" &
    m=$!
    for _ in $(seq 1 300); do [[ -s $out/marker.json ]] && break; sleep 0.1; done
    ip netns exec rcv iperf3 -s -1 >/dev/null 2>&1 &
    srv=$!
    sleep 1
    ip netns exec snd iperf3 -c 10.9.2.1 -t 8 -P 2 -C cubic -J >"$out/iperf.json" 2>&1
    wait $srv
    kill -INT $m 2>/dev/null; wait $m 2>/dev/null
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); e=j["end"]["sum_received"]
print("burst %s: %.1f Mbit/s of %s (iperf3 -P 2 cubic, 8 s), retransmits %s" % (sys.argv[2], e["bits_per_second"]/1e6, sys.argv[3], j["end"]["sum_sent"].get("retransmits")))' "$out/iperf.json" "$burst" "$mbit"
    echo "  marker: $(tail -1 "$out/marker.json")"
    tc -n rtr -s qdisc show dev r1 | sed 's/^/  /'
    rm -rf "$out"
    net_down
done
