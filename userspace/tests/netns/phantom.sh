# shellcheck shell=bash
# Section "phantom" of userspace/tests/netns.sh, which sources it (the helpers
# it uses are netns.sh's and tests/lib/lib.sh's).
# Uno's phantom queue on a 50 Mbit/s port (TBF): draining at 90 % of the
# line rate, it marks a flow that fills the port and never one paced at 40 %.
section_phantom() {
    log "phantom, amrt: phantom marks at line rate, not at 40 %; AMRT marks spare capacity"
    local S D; host_pair S D ph 10.96.0 # the port: a0 in S; the next hop: b0 in D
    # one wire packet per skb, as a switch port sees them (no GSO bursts)
    ip -n "$S" link set a0 gso_max_segs 1
    for n in "$S" "$D"; do in_ns "$n" sysctl -qw net.ipv4.tcp_ecn=1; done
    in_ns "$S" tc qdisc add dev a0 root tbf rate 50mbit burst 16k latency 50ms
    ip netns exec "$D" iperf3 -s -p 5301 -D
    # with_marker OUT NS LOAD MARKER-ARGS...: the marker runs around a 3 s
    # cubic transfer at line rate (LOAD=full) or paced at 40 % (paced)
    with_marker() {
        local out=$1 ns=$2 load=$3; shift 3
        ip netns exec "$ns" "$X" "$@" >"$out" 2>"${out%.json}.log" &
        local m=$!; pids+=("$m")
        sleep 1
        if [[ $load == full ]]; then in_ns "$S" iperf3 -c 10.96.0.2 -p 5301 -t 3 -C cubic >/dev/null
        else in_ns "$S" iperf3 -c 10.96.0.2 -p 5301 -t 3 -C cubic --fq-rate 20M >/dev/null; fi
        kill $m; wait $m || true
    }
    local r
    for r in full paced; do
        with_marker "$work/ph-$r.json" "$S" $r mark-phantom --iface a0 --rate-mbit 50 --size-bytes 100000
        log "$r: $(tail -1 "$work/ph-$r.json")"
    done
    # the same marker configured from a switch profile's [phantom] section
    with_marker "$work/ph-prof.json" "$S" full mark-phantom --iface a0 --profile dc-uno-phantom --rate-mbit 50
    log "profile: $(head -1 "$work/ph-prof.json"); $(tail -1 "$work/ph-prof.json")"
    check "profile dc-uno-phantom at 50 Mbit/s: drain 90 %, size 22 packets" eq \
        "$(head -1 "$work/ph-prof.json")" "phantom queue on a0: drain 5625000 B/s, size 33000 B, marking 6600..26400 B, fed at enqueue, arrivals at once"
    check "profile dc-uno-phantom: line-rate flow marked (> 100)" le 100 "$(tail -1 "$work/ph-prof.json" | jq .marked)"
    expect_fail "mark-phantom: a profile without [phantom] refused" "no .phantom. section" "$X" mark-phantom --iface a0 --profile dc-uno
    expect_fail "mark-phantom: --profile with --drain-pct refused" "cannot be used with" "$X" mark-phantom --iface a0 --profile dc-uno-phantom --drain-pct 50
    expect_fail "mark-phantom: no rate and no profile refused" "rate-mbit" "$X" mark-phantom --iface a0
    expect_fail "mark-phantom: kmin >= kmax refused" "kmin" "$X" mark-phantom --iface a0 --rate-mbit 50 --kmin-pct 80 --kmax-pct 20
    expect_fail "mark-phantom: rate 0 refused" "rate-mbit" "$X" mark-phantom --iface a0 --rate-mbit 0
    check "line-rate flow: phantom reaches kmax (80 kB)" le 80000 "$(tail -1 "$work/ph-full.json" | jq .max_queue_bytes)"
    check "line-rate flow: ECT packets marked (> 100)" le 100 "$(tail -1 "$work/ph-full.json" | jq .marked)"
    check "flow at 40 % of line rate: never marked" eq "$(tail -1 "$work/ph-paced.json" | jq .marked)" 0
    check "flow at 40 %: phantom stays below kmin (20 kB)" le "$(tail -1 "$work/ph-paced.json" | jq .max_queue_bytes)" 20000
    # Fed by the link (a mirror of the port feeds it what the port sends):
    # the same verdicts; the marker counts the port's bytes as the TBF does.
    for r in full paced; do
        with_marker "$work/phl-$r.json" "$S" $r mark-phantom --iface a0 --rate-mbit 50 --size-bytes 100000 --feed link
        log "link-fed $r: $(head -1 "$work/phl-$r.json"); $(tail -1 "$work/phl-$r.json")"
    done
    check "link-fed phantom: says so" eq "$(head -1 "$work/phl-full.json" | sed 's/.*, fed //')" "by a link of 6250000 B/s, arrivals at once"
    check "link-fed phantom: line-rate flow marked (> 100)" le 100 "$(tail -1 "$work/phl-full.json" | jq .marked)"
    check "link-fed phantom: the port's mirror holds a backlog" le 1 "$(tail -1 "$work/phl-full.json" | jq .max_mirror_bytes)"
    check "link-fed phantom: flow at 40 % never marked" eq "$(tail -1 "$work/phl-paced.json" | jq .marked)" 0
    expect_fail "mark-phantom: --feed dequeue refused" "enqueue or link" "$X" mark-phantom --iface a0 --rate-mbit 50 --feed dequeue
    # Behind ingress links (--ingress-rate-mbit): one sender whose link runs
    # at the port's rate cannot build the port's queue (its excess is on its
    # wire), so the mirror that marked its line-rate flow above stays quiet;
    # behind links 100x faster the burst arrives as at once and is marked.
    # The phantom drains at the port's rate, so it holds what the port
    # queues: cubic's sawtooth in the shaper's ~50 kB, marked from 5 kB on
    # (from 20 kB, the sawtooth's time above it made 14 to 324 marks a run).
    for r in 50 5000; do
        with_marker "$work/phi-$r.json" "$S" full mark-phantom --iface a0 --rate-mbit 50 --drain-pct 100 --size-bytes 100000 \
            --kmin-pct 5 --kmax-pct 50 --ingress-rate-mbit $r
        log "ingress $r Mbit/s: $(head -1 "$work/phi-$r.json"); $(tail -1 "$work/phi-$r.json")"
    done
    check "ingress model: says so" eq "$(head -1 "$work/phi-50.json" | sed 's/.*, arrivals //')" "over ingress links of 6250000 B/s"
    check "ingress model: the sender's wire holds its excess" le 30000 "$(tail -1 "$work/phi-50.json" | jq .max_on_wires_bytes)"
    check "ingress model: one sender behind a link at the port's rate: <= 1 % marked" le "$(tail -1 "$work/phi-50.json" | jq .marked)" "$(tail -1 "$work/phi-50.json" | jq '.packets / 100 | floor')"
    check "ingress model: behind links 100x the port's rate: line-rate flow marked (> 100)" le 100 "$(tail -1 "$work/phi-5000.json" | jq .marked)"
    expect_fail "mark-phantom: --ingress-rate-mbit above 400 Gbit/s refused" "ingress-rate-mbit" "$X" mark-phantom --iface a0 --rate-mbit 50 --ingress-rate-mbit 500000
    # A mirror of a shaped port judged less the shaper's bucket
    # (--port-burst-bytes): a bucket as large as the mirror never marks.
    with_marker "$work/phb.json" "$S" full mark-phantom --iface a0 --rate-mbit 50 --drain-pct 100 --size-bytes 100000 --port-burst-bytes 100000
    log "port burst: $(head -1 "$work/phb.json"); $(tail -1 "$work/phb.json")"
    check "port burst: says so" eq "$(head -1 "$work/phb.json" | sed 's/.*, less //')" "the port's burst of 100000 B"
    check "port burst: a bucket the mirror's size: line-rate flow never marked" eq "$(tail -1 "$work/phb.json" | jq .marked)" 0
    expect_fail "mark-phantom: --port-burst-bytes above 1 GiB refused" "port-burst-bytes" "$X" mark-phantom --iface a0 --rate-mbit 50 --port-burst-bytes 2000000000
    # The marker's counters for Prometheus (--metrics ADDR): typed, labelled
    # with the marker and its interface, read from its map at every scrape.
    ip netns exec "$S" "$X" mark-phantom --iface a0 --rate-mbit 50 --size-bytes 100000 --metrics 127.0.0.1:9881 \
        >"$work/phm.out" 2>"$work/phm.log" &
    local phm=$!; pids+=("$phm")
    sleep 1
    in_ns "$S" iperf3 -c 10.96.0.2 -p 5301 -t 2 -C cubic >/dev/null
    local get='import sys, urllib.request as u; sys.stdout.write(u.urlopen(u.Request(sys.argv[1], headers=dict(h.split(": ", 1) for h in sys.argv[2:]))).read().decode())'
    in_ns "$S" python3 -c "$get" http://127.0.0.1:9881/metrics "Accept: application/openmetrics-text;version=1.0.0" >"$work/phm.om" || true
    in_ns "$S" python3 -c "$get" http://127.0.0.1:9881/metrics >"$work/phm.txt" || true
    kill $phm; wait $phm || true
    local scraped
    scraped=$(sed -n 's/^xdcc_marker_marked_packets_total{marker="phantom",iface="a0"} \([0-9]*\)$/\1/p' "$work/phm.om")
    log "phantom --metrics: ${scraped:-no} marks scraped mid-run; at exit $(tail -1 "$work/phm.out")"
    check "phantom --metrics: OpenMetrics, the marks a typed counter" grep -q '^# TYPE xdcc_marker_marked_packets counter' "$work/phm.om"
    check "phantom --metrics: the scrape counts the marks (> 100)" le 101 "${scraped:-0}"
    check "phantom --metrics: no more marks scraped than counted at exit" le "${scraped:-0}" "$(tail -1 "$work/phm.out" | jq .marked)"
    check "phantom --metrics: the Prometheus text format for old scrapers, _total typed" \
        grep -q '^# TYPE xdcc_marker_marked_packets_total counter' "$work/phm.txt"

    # AMRT anti-ECN at the next hop's ingress (= dequeue times of the TBF):
    # a saturated port has (almost) no spare time, a port at 40 % has plenty.
    for r in full paced; do
        with_marker "$work/am-$r.json" "$D" $r mark-amrt --iface b0 --rate-mbit 50
        log "amrt $r: $(tail -1 "$work/am-$r.json")"
    done
    local fm ft pm pt
    fm=$(tail -1 "$work/am-full.json" | jq .marked); ft=$(tail -1 "$work/am-full.json" | jq .ecn_packets)
    pm=$(tail -1 "$work/am-paced.json" | jq .marked); pt=$(tail -1 "$work/am-paced.json" | jq .ecn_packets)
    # (veth delivery batches packets, so gaps at the hook are noisy: bounds are loose)
    check "AMRT: saturated port marks < 30 % of packets as spare" bash -c "(( $fm * 10 < $ft * 3 && $ft > 1000 ))"
    check "AMRT: port at 40 % marks > 60 % as spare" bash -c "(( $pm * 10 > $pt * 6 && $pt > 100 ))"
    expect_fail "mark-amrt: bad hook" "possible values" "$X" mark-amrt --iface b0 --rate-mbit 50 --hook middle
}
