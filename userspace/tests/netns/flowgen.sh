# shellcheck shell=bash
# Section "flowgen" of userspace/tests/netns.sh, which sources it (the helpers
# it uses are netns.sh's and tests/lib/lib.sh's).
section_flowgen() {
    log "flowgen: sized flows from a plan, each from its namespace with its CC, timed to the answer"
    local A B D; star D A B f 10.94
    ip -n "$B" addr add fd94::1/64 dev b0 nodad; ip -n "$D" addr add fd94::2/64 dev h1 nodad
    cat >"$work/plan.json" <<EOF
{"port": 7300, "servers": ["$D"], "deadline_s": 3, "flows": [
 {"at_s": 0.1, "src": "$A", "dst": "10.94.1.2", "size": 150000, "cc": "cubic"},
 {"at_s": 0.2, "src": "$B", "dst": "fd94::2", "size": 2000000, "cc": "reno"},
 {"at_s": 0.3, "src": "$A", "dst": "10.94.1.2", "size": 1000, "cc": "nosuchcc"},
 {"at_s": 30, "src": "$A", "dst": "10.94.1.2", "size": 1000, "cc": "cubic"}]}
EOF
    check "flowgen runs a plan: sizes delivered, FCTs, a bad CC named, a late flow unfinished" python3 -c '
import json, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "flowgen", "--plan", sys.argv[2], "--out", sys.argv[3]],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
assert json.loads(p.stdout.readline()) == {"ready": True}
t0 = time.monotonic(); p.stdin.write(repr(t0) + "\n"); p.stdin.flush()
assert p.wait(timeout=30) == 0
assert 2.5 < time.monotonic() - t0 < 10, "stops at the deadline"
r = [json.loads(l) for l in open(sys.argv[3])]
by = {x["id"]: x for x in r if "id" in x}
assert by[0]["ok"] and by[1]["ok"] and 0 < by[0]["fct_s"] < 2 and 0 < by[1]["fct_s"] < 2, by
assert abs(by[0]["start_s"] - 0.1) < 0.05 and abs(by[1]["start_s"] - 0.2) < 0.05, by
assert not by[2]["ok"] and "TCP_CONGESTION nosuchcc" in by[2]["error"], by[2]
assert 3 not in by and r[-1] == {"summary": {"done": 3, "failed": 1, "unfinished": 1}}, r[-1]' "$XT" "$work/plan.json" "$work/fg.ndjson"
    echo '{"port": 7300, "servers": [], "deadline_s": 3, "flows": [{"at_s": -1, "src": "a", "dst": "10.0.0.1", "size": 1, "cc": "cubic"}]}' >"$work/bad.json"
    expect_fail "flowgen: a bad plan is refused, the field named" 'flows\[0\]\.at_s' "$XT" flowgen --plan "$work/bad.json" --out "$work/bad.out"
    echo '{"port": 7300, "servers": ["nosuchns"], "deadline_s": 3, "flows": []}' >"$work/nons.json"
    expect_fail "flowgen: a missing server namespace is named" "network namespace nosuchns" "$XT" flowgen --plan "$work/nons.json" --out "$work/nons.out"
}
