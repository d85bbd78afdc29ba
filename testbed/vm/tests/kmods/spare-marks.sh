# kmods.sh: the marks that mean spare bandwidth (AMRT).
# shellcheck shell=bash

# AMRT (amrt-icpp20 §4.3): its window grows on anti-ECN marks (`xdcc
# mark-amrt` at the bottleneck's dequeue side: CE = the link was idle for an
# MTU before the packet) and stays without them (the receiver-driven
# baseline, spare_increase = 0); behind a classic RED/ECN port marking from
# 20 packets of queue, its guard (mark_max_qdelay_ns, 16 MTUs = 9.6 ms here)
# ignores the congestion marks, and with the guard off the same marks grow
# the window into the queue: the mistake the guard protects from.
# Run for every CC whose marks mean spare bandwidth (`cc_is CC needs_ecn`
# and not `marks_congestion`). $1: the CC; $2: median cwnd of its plain fifo
# run (printed for comparison).
test_spare_marks() {
    local cc=$1 fifo_cwnd=$2 d=/proc/sys/net/xdcc/$1 X=$XDCC_BIN out k
    [[ -x $X ]] || { bad "tcp_$cc: $X not built (cargo build --release -p xdcc)"; return; }
    out=$(mktemp -d)
    local -A saved
    for k in spare_increase init_bdp_q16 max_wnd_bdp_q16 mark_max_qdelay_ns; do saved[$k]=$(cat "$d/$k"); done
    spare() { python3 -c 'import json,sys; r=[r for r in json.loads(sys.argv[1] or "[]") if r["remote"].endswith(":5001") and r.get("cc_state")]
print(r[0]["cc_state"]["values"][sys.argv[2]] if r else -1)' "${FLOWS_JSON:-}" "$1"; }
    # Runs with the anti-ECN marker on rcv's ingress (the dequeue times of
    # the router's 20 Mbit/s port), started at 1/16 of the BDP so that the
    # link has spare capacity for the marks to report. (The start window is
    # a BDP of the handshake RTT, which under TCG is 3-10x the path's: at
    # the default 1 BDP a flow started at up to 75 packets on a 7-packet
    # BDP, above the 2-BDP cap, with a standing queue and no idle slots, so
    # a run could see no believable mark at all - CI once saw spare_marks 0
    # that way.) Every run holds the connection open after its last write,
    # so the module's counters are read after the transfer (one `xdcc flows`
    # under TCG takes up to a second).
    echo 4096 >"$d/init_bdp_q16"
    marked_run() {
        net_up fifo
        ip netns exec rcv "$X" mark-amrt --iface d0 --rate-mbit 20 >"$out/marker.json" 2>"$out/marker.log" &
        local m=$! i
        for i in $(seq 1 300); do [[ -s $out/marker.json ]] && break; sleep 0.1; done
        FLOWS_REFRESH=1 SEND_ARGS="--hold 1.5" transfer "$cc" 1500000
        kill -INT $m 2>/dev/null; wait $m 2>/dev/null
        MARKER=$(tail -1 "$out/marker.json")
        net_down
    }
    echo 1 >"$d/spare_increase"
    marked_run
    local grown=$MAX_CWND sm ign
    sm=$(spare spare_marks); ign=$(spare ignored_marks)
    echo "  anti-ECN marker from 1/16 BDP: median cwnd $MED_CWND (fifo at 1 BDP: $fifo_cwnd), max $MAX_CWND, delivered_ce $DELIVERED_CE, spare_marks $sm, ignored_marks $ign, marker: $MARKER"
    echo "  ss sample: $(tail -1 <<<"$SS_LINES")"
    check "tcp_$cc: transfer with the anti-ECN marker is byte-exact" test "$XFER_OK" = 1
    check "tcp_$cc: spare-bandwidth marks echoed and believed (delivered_ce $DELIVERED_CE, spare_marks $sm)" \
        test "$DELIVERED_CE" -gt 0 -a "$sm" -gt 0
    echo 0 >"$d/spare_increase"
    marked_run
    sm=$(spare spare_marks)
    echo "  baseline (spare_increase=0) with the marker: median cwnd $MED_CWND, max $MAX_CWND, delivered_ce $DELIVERED_CE, spare_marks $sm"
    check "tcp_$cc: spare_increase=0 ignores the marks (delivered_ce $DELIVERED_CE > 0, spare_marks $sm = 0)" \
        test "$DELIVERED_CE" -gt 0 -a "$sm" = 0
    # Both started at 1/16 of a BDP (at most 5 packets even from a 10x
    # handshake RTT); only the marks can take a window past that, towards
    # the 2-BDP cap (about 14 packets).
    check "tcp_$cc: the marks grow the window (max cwnd $grown with them, $MAX_CWND without)" \
        test "$grown" -gt "$MAX_CWND"
    echo 1 >"$d/spare_increase"

    # Classic RED/ECN: start at 5 BDP (a 4-BDP = 16 ms standing queue, in
    # RED's marking range), cap 16 BDP.
    echo 327680 >"$d/init_bdp_q16"
    echo 1048576 >"$d/max_wnd_bdp_q16"
    # red_run: one transfer through the RED port; sets ign and sm.
    red_run() {
        net_up reddeep
        FLOWS_REFRESH=1 SEND_ARGS="--hold 1.5" transfer "$cc" 4000000
        net_down
        ign=$(spare ignored_marks); sm=$(spare spare_marks)
    }
    red_run
    echo "  RED from 20 packets, guard ${saved[mark_max_qdelay_ns]} ns: max cwnd $MAX_CWND, median rtt $MED_RTT ms, delivered_ce $DELIVERED_CE, ignored_marks $ign, spare_marks $sm"
    check "tcp_$cc: behind classic ECN the congestion marks are ignored (ignored_marks $ign > 0, > 10 x spare_marks $sm)" \
        test "$ign" -gt 0 -a "$ign" -gt $((10 * sm))
    echo 0 >"$d/mark_max_qdelay_ns"
    red_run
    echo "  same port, guard off: max cwnd $MAX_CWND, median rtt $MED_RTT ms, spare_marks $sm, ignored_marks $ign"
    check "tcp_$cc: with the guard off the same marks grow the window (spare_marks $sm > 0)" test "$sm" -gt 0 -a "$ign" = 0
    for k in "${!saved[@]}"; do echo "${saved[$k]}" >"$d/$k"; done
    rm -rf "$out"
}

