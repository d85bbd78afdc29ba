# shellcheck shell=bash
# Section "cli" of userspace/tests/netns.sh, which sources it (the helpers
# it uses are netns.sh's and tests/lib/lib.sh's).
section_cli() {
    log "cli: every subcommand, bad input, --json parsed back"
    local S; mkns S c
    ip -n "$S" addr add 10.93.0.1/24 dev lo
    local sock=$work/c.sock cgc; cgc=$(new_cgroup cli)

    check "--help" "$X" --help
    expect_fail "unknown subcommand" "unrecognized subcommand" "$X" frobnicate
    # check (preflight): what this host really has. Its kernel has BTF and
    # struct_ops but no module support (README, "The machine"): every CC
    # runs as bpf_<cc>, none as a module, and the host is ready.
    "$X" check -j >"$work/check.json"; local crc=$?
    check "check: exit 0 (every CC has a backend here)" eq "$crc" 0
    check "check: kernel = uname -r" eq "$(jq -r .kernel "$work/check.json")" "$(uname -r)"
    check "check: BTF, struct_ops and links found" eq "$(jq -r '[.checks[] | select(.name == "BTF" or .name == "struct_ops TCP CCs" or .name == "struct_ops links") | .ok] | all' "$work/check.json")" true
    check "check: every CC loadable as bpf_<cc>" eq "$(jq -r '[.ccs[].bpf.ok] | all' "$work/check.json")" true
    check "check: modules named as unsupported, with why" eq "$(jq -r '.ccs[0].module.why' "$work/check.json")" "$(if [[ -e /proc/modules ]]; then jq -r '.ccs[0].module.why' "$work/check.json"; else echo 'no module support (no /proc/modules: CONFIG_MODULES is off)'; fi)"
    check "check: the CCs of xdcc cc known, in order" eq "$(jq -r '[.ccs[].cc] | join(" ")' "$work/check.json")" "$(cc_names | xargs)"
    check "check: human output says ready" bash -c "$X check | grep -q '^ready: every xdcc CC can run here'"
    # cc
    check "cc list" in_ns "$S" "$X" cc list
    check "cc list --json parses, lists cubic" bash -c "ip netns exec $S $X cc list --json | jq -e '.available | index(\"cubic\")'"
    check "cc set reno --netns" "$X" cc set reno --netns "$S"
    check "cc set took effect in the namespace" eq "$(in_ns "$S" sysctl -n net.ipv4.tcp_congestion_control)" reno
    expect_fail "cc set unknown name" "not available" "$X" cc set nosuch --netns "$S"
    check "cc set unknown changed nothing" eq "$(in_ns "$S" sysctl -n net.ipv4.tcp_congestion_control)" reno
    expect_fail "cc set uno without its module names the module" "module load tcp_uno" "$X" cc set uno --netns "$S"
    expect_fail "cc set --netns missing namespace" "network namespace" "$X" cc set cubic --netns "$NS_TAG-none"
    # global options and exit status (docs/cli.md)
    check "-n before the subcommand, like ip -n" eq "$("$X" -n "$S" cc list -j | jq -r .default)" reno
    check "-n covers every command (flows in the namespace)" bash -c "$X -n $S --socket $work/none.sock flows -j | jq -e 'type == \"array\"'"
    exit_is() { local want=$1 rc=0; shift; "$@" >/dev/null 2>&1 || rc=$?; eq "$rc" "$want"; }
    check "exit 2: usage" exit_is 2 "$X" frobnicate
    check "exit 3: no agent" exit_is 3 "$X" --socket "$work/none.sock" stats
    check "exit 5: bad value (unknown CC)" exit_is 5 "$X" -n "$S" cc set nosuch
    check "exit 5: bad value (missing namespace)" exit_is 5 "$X" -n "$NS_TAG-none" cc list
    check "exit 5: bad value (unknown BPF CC)" exit_is 5 "$X" cc load nosuch --bpf
    check "completions: a bash script naming the subcommands" bash -c "$X completions bash | grep -q 'tunable'"
    check "man page: roff with the global options and the exit status" bash -c "$X man | grep -q '^.TH xdcc 1' && $X man | grep -q 'Exit status'"
    # module
    check "module list --json has every module of xdcc cc known" bash -c "$X module list --json | jq -e --argjson n $(cc_names | wc -l) 'length == \$n'"
    check "module list table" bash -c "$X module list | grep -q tcp_gemini"
    expect_fail "module load unknown name" "unknown module" "$X" module load tcp_nosuch
    expect_fail "module load missing file" "module file" env XDCC_MODULE_DIR="$work/none" "$X" module load uno
    mkdir -p "$work/mods"; echo "not an ELF" >"$work/mods/tcp_uno.ko"
    expect_fail "module load on a kernel without modules / bad file" "cannot load modules|not a module|not permitted" \
        env XDCC_MODULE_DIR="$work/mods" "$X" module load uno
    expect_fail "module unload not loaded" "not loaded|cannot unload" "$X" module unload gemini
    # tunables against a sysctl tree laid out like the module's (XDCC_SYSCTL_ROOT)
    local sys=$work/sys; mkdir -p "$sys/net/xdcc/uno"
    (cd "$root" && cargo run -q --release -p xdcc-algo --example tunables -- 1000 200 10000 1500) |
        awk '/^`\/proc\/sys\/net\/xdcc\//{cc=$0; gsub(/.*xdcc\/|\/`.*/,"",cc)} /^\| `/{gsub(/[`| ]+/," "); split($0,f," "); if (cc=="uno") print f[1], f[2]}' |
        while read -r k v; do echo "$v" >"$sys/net/xdcc/uno/$k"; done
    for k in net_link_rate_mbps:1000 net_intra_rtt_us:200 net_inter_rtt_us:10000 net_mtu:1500 window_pacing_pct:100 window_pacing_ss_pct:200; do
        echo "${k#*:}" >"$sys/net/xdcc/uno/${k%%:*}"
    done
    export XDCC_SYSCTL_ROOT=$sys
    check "tunable list uno" bash -c "$X tunable list uno | grep -q 'uno.k_bytes = 3571'"
    check "tunable list --json parses" bash -c "$X tunable list uno --json | jq -e '.k_bytes == 3571'"
    check "tunable get" eq "$("$X" tunable get uno epoch_ns)" 200000
    check "tunable set valid value" "$X" tunable set uno k_bytes 30000
    check "tunable set wrote the file" eq "$(cat "$sys/net/xdcc/uno/k_bytes")" 30000
    expect_fail "tunable set out of range names the range" "qa_beta_q16.*allowed" "$X" tunable set uno qa_beta_q16 99999999
    check "out-of-range set changed nothing" eq "$(cat "$sys/net/xdcc/uno/qa_beta_q16")" 32768
    expect_fail "tunable set unknown name lists known ones" "not a tunable.*known" "$X" tunable set uno bogus 1
    expect_fail "tunable set garbage value" "not a non-negative integer" "$X" tunable set uno k_bytes 12abc
    expect_fail "tunable set inconsistent network (inter < intra)" "inter_rtt_ns" "$X" tunable set uno net_inter_rtt_us 100
    check "inconsistent set changed nothing" eq "$(cat "$sys/net/xdcc/uno/net_inter_rtt_us")" 10000
    expect_fail "tunable of an unloaded module" "not loaded.*module load tcp_gemini" "$X" tunable list gemini
    expect_fail "tunable of an unknown cc" "unknown congestion control" "$X" tunable get cubic x
    # cc allow, against that tree's copy of the CC lists
    mkdir -p "$sys/net/ipv4"
    echo "reno cubic bbr" >"$sys/net/ipv4/tcp_available_congestion_control"
    echo "reno cubic" >"$sys/net/ipv4/tcp_allowed_congestion_control"
    check "cc allow bbr" "$X" cc allow bbr
    check "cc allow appended it" eq "$(cat "$sys/net/ipv4/tcp_allowed_congestion_control")" "reno cubic bbr"
    check "cc allow again changes nothing" bash -c "$X cc allow bbr cubic && [[ \$(cat $sys/net/ipv4/tcp_allowed_congestion_control) == 'reno cubic bbr' ]]"
    expect_fail "cc allow an unavailable CC" "not available" "$X" cc allow bbr vegas
    check "the refused allow changed nothing" eq "$(cat "$sys/net/ipv4/tcp_allowed_congestion_control")" "reno cubic bbr"
    unset XDCC_SYSCTL_ROOT
    # no agent
    expect_fail "stats without an agent" "no xdcc agent" "$X" --socket "$sock" stats
    check "flows without an agent (tcp_info table)" bash -c "ip netns exec $S $X --socket $sock flows | grep -q 'no agent'"
    check "flows --json without an agent parses" bash -c "ip netns exec $S $X --socket $sock flows --json | jq -e 'type == \"array\"'"
    # agent: bad input
    printf 'interfaces = ["lo"]\n\n[reroute]\npaths = 40\n' >"$work/bad.toml"
    expect_fail "agent: bad config names the line" "bad.toml:4: .*paths" "$X" --socket "$sock" agent --config "$work/bad.toml"
    printf 'cgroup = "%s"\nbogus = 1\n' "$cgc" >"$work/bad2.toml"
    expect_fail "agent: unknown config key names the line" "bad2.toml:2: .*bogus" "$X" --socket "$sock" agent --config "$work/bad2.toml"
    expect_fail "agent: missing interface" "no such network interface" in_ns "$S" "$X" --socket "$sock" agent --cgroup "$cgc" --iface nosuch0
    expect_fail "agent: not a cgroup2 directory" "not a cgroup2" in_ns "$S" "$X" --socket "$sock" agent --cgroup "$work"
    check "failed agents left no socket" bash -c "[[ ! -e $sock ]]"
    # agent: running (config file + metrics on loopback)
    printf 'cgroup = "%s"\ninterfaces = ["lo"]\nmetrics = "127.0.0.1:9877"\n[reroute]\npaths = 4\n' "$cgc" >"$work/good.toml"
    local before; before=$(bpftool prog show | grep -c xdcc_ || true)
    start_agent "$S" "$sock" "$cgc" --config "$work/good.toml"
    local agent=${pids[-1]}
    expect_fail "second agent refused" "another xdcc agent is running" in_ns "$S" "$X" --socket "$sock" agent --cgroup "$cgc"
    check "socket is root-only (0600)" eq "$(stat -c %a "$sock")" 600
    ip netns exec "$S" python3 -c 'import socket,time
s=socket.socket(); s.bind(("10.93.0.1",7000)); s.listen(1)
c=socket.create_connection(("10.93.0.1",7000)); a,_=s.accept(); c.sendall(b"x"*100000); a.recv(1); time.sleep(3)' &
    local conn=$!
    echo $conn >"$cgc/cgroup.procs" 2>/dev/null || true
    sleep 1.5
    check "reroute show lists settings" bash -c "ip netns exec $S $X --socket $sock reroute show | grep -q congested_rounds"
    check "reroute show --json: paths from the config file" bash -c "ip netns exec $S $X --socket $sock reroute show --json | jq -e '.paths == 4'"
    expect_fail "reroute set out of range" "out of range" in_ns "$S" "$X" --socket "$sock" reroute set paths 40
    expect_fail "reroute set unknown name" "unknown reroute setting" in_ns "$S" "$X" --socket "$sock" reroute set nope 1
    expect_fail "reroute set garbage" "not a non-negative integer" in_ns "$S" "$X" --socket "$sock" reroute set paths x
    check "reroute show: bad sets changed nothing" bash -c "ip netns exec $S $X --socket $sock reroute show --json | jq -e '.paths == 4'"
    check "reroute set congested_rounds 5" in_ns "$S" "$X" --socket "$sock" reroute set congested_rounds 5
    check "reroute show reflects it" bash -c "ip netns exec $S $X --socket $sock reroute show --json | jq -e '.congested_rounds == 5'"
    check "reroute force (no IPv6 flows: 0)" bash -c "ip netns exec $S $X --socket $sock reroute force | grep -q '0 flow'"
    check "stats" bash -c "ip netns exec $S $X --socket $sock stats | grep -q flows_opened"
    check "stats --json parses" bash -c "ip netns exec $S $X --socket $sock stats --json | jq -e '.interfaces == [\"lo\"]'"
    check "flows --json parses back" bash -c "ip netns exec $S $X --socket $sock flows --json | jq -e 'type == \"array\"'"
    check "flows --watch refreshes" bash -c "timeout 2.5 ip netns exec $S $X --socket $sock flows --watch 0.5 | grep -c LOCAL | awk '{exit !(\$1 >= 2)}'"
    expect_fail "flows --watch rejects a bad interval" "at least 0.1" in_ns "$S" "$X" --socket "$sock" flows --watch 0
    check "metrics (CLI)" bash -c "ip netns exec $S $X --socket $sock metrics | grep -q '^xdcc_flows_opened_total'"
    check "metrics: xdcc_build_info with the version" bash -c "ip netns exec $S $X --socket $sock metrics | grep -q '^xdcc_build_info{version=\"$("$X" --version | cut -d' ' -f2)\"} 1'"
    # Content negotiation: the Prometheus text format by default (a
    # counter's TYPE and HELP name its _total samples), OpenMetrics (TYPE on
    # the family, # EOF) to a scraper that asks for it.
    cat >"$work/scrape.py" <<'PY'
import sys, urllib.request as u
req = u.Request("http://127.0.0.1:9877/metrics", headers={"Accept": sys.argv[1]} if len(sys.argv) > 1 else {})
r = u.urlopen(req)
print("CONTENT-TYPE", r.headers["Content-Type"])
print(r.read().decode())
PY
    check "metrics over HTTP, Prometheus text 0.0.4: TYPE names the counter samples" bash -c "ip netns exec $S python3 $work/scrape.py >$work/scrape-text.txt &&
        grep -q '^CONTENT-TYPE text/plain; version=0.0.4' $work/scrape-text.txt && grep -q '^# TYPE xdcc_cc_bytes_acked_total counter' $work/scrape-text.txt &&
        ! grep -q '^# EOF' $work/scrape-text.txt"
    check "metrics over HTTP, OpenMetrics when asked (Accept: application/openmetrics-text)" bash -c "ip netns exec $S python3 $work/scrape.py 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5' >$work/scrape-om.txt &&
        grep -q '^CONTENT-TYPE application/openmetrics-text; version=1.0.0' $work/scrape-om.txt && grep -q '^# TYPE xdcc_cc_bytes_acked counter' $work/scrape-om.txt &&
        grep -q '^# EOF' $work/scrape-om.txt"
    # The shipped Grafana dashboard queries only what the agent exports, in
    # either format, and the check catches a query that does not.
    check "metrics: every Grafana dashboard query names a metric the agent exports (Prometheus text)" \
        python3 "$root/packaging/grafana/check_dashboard.py" "$root/packaging/grafana/xdcc.json" "$work/scrape-text.txt"
    check "metrics: every Grafana dashboard query names a metric the agent exports (OpenMetrics)" \
        python3 "$root/packaging/grafana/check_dashboard.py" "$root/packaging/grafana/xdcc.json" "$work/scrape-om.txt"
    sed 's/xdcc_cc_rtos_total/xdcc_cc_rto_total/; s/sum by (cc) (xdcc_cc_open_flows)/rate(xdcc_cc_open_flows[1m])/' \
        "$root/packaging/grafana/xdcc.json" >"$work/bad-dashboard.json"
    expect_fail "metrics: the dashboard check refuses a metric the agent does not export" "xdcc_cc_rto_total is not exported" \
        python3 "$root/packaging/grafana/check_dashboard.py" "$work/bad-dashboard.json" "$work/scrape-text.txt"
    expect_fail "metrics: the dashboard check refuses rate() of a gauge" "rate\(\) of xdcc_cc_open_flows" \
        python3 "$root/packaging/grafana/check_dashboard.py" "$work/bad-dashboard.json" "$work/scrape-text.txt"
    check "metrics: recoveries, RTOs and tunables are exported" bash -c "grep -q '^# TYPE xdcc_cc_loss_recoveries_total counter' $work/scrape-text.txt &&
        grep -q '^# TYPE xdcc_cc_rtos_total counter' $work/scrape-text.txt && grep -q '^# TYPE xdcc_cc_tunable gauge' $work/scrape-text.txt"
    wait $conn || true
    check "agent attached its programs" le $((before + 3)) "$(bpftool prog show | grep -c xdcc_ || true)"
    stop_agent "$agent"
    check "SIGTERM: programs detached and unloaded" eq "$(bpftool prog show | grep -c xdcc_ || true)" "$before"
    check "SIGTERM: socket removed" bash -c "[[ ! -e $sock ]]"
    expect_fail "mark-ce on a missing interface" "no such network interface" in_ns "$S" "$X" mark-ce --iface nosuch0 --every 2
    expect_fail "mark-ce --every 0" "every" "$X" mark-ce --iface lo --every 0
}
