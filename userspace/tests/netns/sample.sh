# shellcheck shell=bash
# Section "sample" of userspace/tests/netns.sh, which sources it (the helpers
# it uses are netns.sh's and tests/lib/lib.sh's).
# `xdcc-testbed sample` (the testbed's sampler): one process, run from the root
# namespace, reads sockets and a port's qdisc in other namespaces.
section_sample() {
    log "sample: sockets and queue counters of other namespaces, NDJSON, stops when stdin closes"
    local S D; host_pair S D sa 10.95.0 # the port: a0 in S
    ip -n "$S" link set a0 gso_max_segs 1 # MTU packets into the 9-packet fifo, as a switch port sees them
    check "a 20 Mbit/s dc-fifo port to sample" "$X" switch apply dc-fifo a0 --netns "$S" --rate-mbit 20
    ip netns exec "$D" iperf3 -s -p 5501 -D
    sleep 0.5
    in_ns "$S" iperf3 -c 10.95.0.2 -p 5501 -t 3 -C cubic >/dev/null &
    local c=$!; pids+=("$c")
    # A closed connection to port 5999 that S closed first: S keeps it in
    # TIME_WAIT (60 s), which the sampler must not report as a flow.
    ip netns exec "$D" python3 -c '
import socket
l = socket.socket(); l.bind(("10.95.0.2", 5999)); l.listen(1)
c, _ = l.accept(); c.recv(1); c.close()' &
    local tw=$!; pids+=("$tw")
    sleep 0.5
    in_ns "$S" python3 -c '
import socket, time
s = socket.create_connection(("10.95.0.2", 5999)); s.close(); time.sleep(0.2)'
    wait "$tw" 2>/dev/null || true
    check "a TIME_WAIT socket to port 5999 in $S" bash -c "ip netns exec $S ss -tan state time-wait | grep -q ':5999'"
    "$XT" sample --sockets "$S:5501,5999" --port "$S:a0" --interval-ms 100 --duration 2 >"$work/sample.ndjson" </dev/null
    wait "$c" 2>/dev/null || true
    local f="$work/sample.ndjson"
    check "flow samples of the data connection (bytes_acked grows, cubic, a window), none of the TIME_WAIT one" python3 -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
f = [x for x in r if x.get("dport") == 5501]
assert len(f) >= 10 and all(x["ns"] == sys.argv[2] and x["cc"] == "cubic" and x["cwnd"] > 0 for x in f), f[:3]
assert f[-1]["bytes_acked"] > f[0]["bytes_acked"] + 1_000_000, (f[0], f[-1])
assert not [x for x in r if x.get("dport") == 5999]' "$f" "$S"
    check "queue samples of the port: bytes sent grow at ~20 Mbit/s, a backlog builds" python3 -c '
import json, sys
q = [json.loads(l) for l in open(sys.argv[1])]
q = [x for x in q if x.get("port") == sys.argv[2]]
assert len(q) >= 10, len(q)
rate = (q[-1]["bytes"] - q[0]["bytes"]) * 8 / (q[-1]["t"] - q[0]["t"])
assert 15e6 < rate < 22e6, rate
assert max(x["backlog"] for x in q) > 0' "$f" "$S:a0"
    check "the last line reports the sampler's own timing" python3 -c '
import json, sys
s = json.loads(open(sys.argv[1]).readlines()[-1])["sampler"]
assert s["samples"] >= 15 and s["gap_max_ms"] < 1000, s' "$f"
    check "stops when stdin closes" timeout 10 bash -c "echo | $XT sample --port $S:a0 >/dev/null"
    expect_fail "sample: a missing interface is named" "no interface nosuch0" "$XT" sample --port "$S:nosuch0" --duration 1
    expect_fail "sample: a bad --sockets spec" "expected NAMESPACE:PORT" "$XT" sample --sockets "$S" --duration 1
    expect_fail "sample: a missing namespace" "network namespace nosuchns" "$XT" sample --sockets nosuchns:1 --duration 1
}
