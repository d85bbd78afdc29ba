# shellcheck shell=bash
# Section "prometheus" of userspace/tests/netns.sh, which sources it (the helpers
# it uses are netns.sh's and tests/lib/lib.sh's).
# A real Prometheus server (Debian's package, unpacked into the cache: no
# service is installed or started) scrapes the agent every 0.5 s while flows
# run, and the test asks its HTTP API what an operator's dashboard would: a
# counter's rate, the RTT histogram's median, and the metadata that says the
# counters are stored as counters. promtool lints one scrape in the text
# format the server was not offered (plain Prometheus text 0.0.4).
prometheus_bin() { # prints the directory holding prometheus and promtool
    local dir=${XDCC_CACHE:-$HOME/.cache/xdcc}/tools/prometheus
    if [[ ! -x $dir/usr/bin/prometheus || ! -x $dir/usr/bin/promtool ]]; then
        log "prometheus: fetching Debian's prometheus package into $dir (apt-get download; nothing is installed)"
        local tmp; tmp=$(mktemp -d)
        (cd "$tmp" && { apt-get download prometheus >/dev/null 2>&1 || { apt-get update -qq && apt-get download prometheus >/dev/null; }; }) || { rm -rf "$tmp"; return 1; }
        rm -rf "$dir"; mkdir -p "$dir"
        dpkg-deb -x "$tmp"/prometheus_*.deb "$dir"
        rm -rf "$tmp"
    fi
    echo "$dir/usr/bin"
}
section_prometheus() {
    log "prometheus: a real Prometheus server scrapes the agent; its API answers a counter's rate and the RTT histogram's median"
    local bin; bin=$(prometheus_bin) || { bad "prometheus: could not fetch Debian's prometheus package"; return 0; }
    local S D; host_pair S D pm 10.93.0
    local cs; cs=$(new_cgroup prom)
    start_agent "$S" "$work/prom.sock" "$cs" --iface a0 --metrics 127.0.0.1:9878
    cat >"$work/prometheus.yml" <<YML
global:
  scrape_interval: 500ms
  scrape_timeout: 400ms
scrape_configs:
  - job_name: xdcc
    static_configs:
      - targets: ["127.0.0.1:9878"]
YML
    check "promtool: the scrape configuration is valid" "$bin/promtool" check config "$work/prometheus.yml"
    in_ns "$S" "$bin/prometheus" --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom-data" \
        --web.listen-address=127.0.0.1:9090 >"$work/prometheus.log" 2>&1 &
    pids+=($!)
    cat >"$work/promq.py" <<'PY'
import json, sys, urllib.parse as p, urllib.request as u
path, query = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
url = "http://127.0.0.1:9090/api/v1/" + path + ("?" + p.urlencode({"query": query}) if path == "query" else "")
r = json.load(u.urlopen(url))
assert r["status"] == "success", r
if path == "query":
    vals = [float(x["value"][1]) for x in r["data"]["result"]]
    print(vals[0] if vals else "none")
else:
    print(json.dumps(r["data"]))
PY
    # The server up and its first scrape done before any flow starts: the
    # counters' increase must fall between scrapes.
    local waited=0
    until [[ $(in_ns "$S" python3 "$work/promq.py" query 'up{job="xdcc"}' 2>/dev/null) == 1.0 ]] || ((waited >= 150)); do
        sleep 0.2; waited=$((waited + 1))
    done
    # Transfers for a few seconds: bytes acked and RTT samples for the
    # counters and the histogram (cubic: the metrics do not depend on the CC).
    local port=5301 i
    for i in 1 2 3 4; do
        rm -f "$work/ready"
        run_in_cgroup "$cs" "$D" $XFER recv --port $port --cc cubic --out "$work/prom-recv$i.json" --ready "$work/ready" &
        local rpid=$!
        wait_file "$work/ready"
        run_in_cgroup "$cs" "$S" $XFER send --to 10.93.0.2 --port $port --bytes 60000000 --cc cubic >"$work/prom-send$i.json" || true
        wait $rpid || true
        port=$((port + 1))
        sleep 0.5
    done
    sleep 1.5
    local q
    q=$(in_ns "$S" python3 "$work/promq.py" query 'sum(max_over_time(up{job="xdcc"}[1m]))' 2>/dev/null || echo none)
    check "prometheus scraped the agent (up = 1)" eq "$q" 1.0
    q=$(in_ns "$S" python3 "$work/promq.py" query 'sum(rate(xdcc_cc_bytes_acked_total{cc="cubic"}[30s]))' 2>/dev/null || echo none)
    check "prometheus: rate(xdcc_cc_bytes_acked_total) > 0 while flows ran (got $q B/s)" python3 -c "import sys; sys.exit(not float('$q'.replace('none','0')) > 0)"
    q=$(in_ns "$S" python3 "$work/promq.py" query 'histogram_quantile(0.5, sum by (le) (rate(xdcc_cc_rtt_seconds_bucket{cc="cubic"}[30s])))' 2>/dev/null || echo none)
    check "prometheus: the RTT histogram's median is a time between 1 us and 1 s (got $q s)" python3 -c "import sys; v = float('$q'.replace('none','nan')); sys.exit(not 1e-6 <= v <= 1)"
    in_ns "$S" python3 "$work/promq.py" metadata >"$work/prom-meta.json" 2>/dev/null || echo '{}' >"$work/prom-meta.json"
    check "prometheus stored xdcc_cc_bytes_acked as a counter with its help" \
        jq -e '.xdcc_cc_bytes_acked[0].type == "counter" and (.xdcc_cc_bytes_acked[0].help | length > 0)' "$work/prom-meta.json"
    check "prometheus stored xdcc_cc_rtt_seconds as a histogram" jq -e '.xdcc_cc_rtt_seconds[0].type == "histogram"' "$work/prom-meta.json"
    in_ns "$S" python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:9878/metrics').read().decode(), end='')" >"$work/prom-scrape.txt" || true
    check "promtool check metrics: the agent's Prometheus text lints clean" bash -c "[[ -s $work/prom-scrape.txt ]] && $bin/promtool check metrics <$work/prom-scrape.txt"
    check "the dashboard's queries name metrics this scrape exports" \
        python3 "$root/packaging/grafana/check_dashboard.py" "$root/packaging/grafana/xdcc.json" "$work/prom-scrape.txt"
}
