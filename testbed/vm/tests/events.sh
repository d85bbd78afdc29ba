#!/bin/bash
# Event-sequence tests of the xdcc kernel modules (issue 10's findings, run
# by testbed/vm/run.sh inside the test kernel): each drives real kernel TCP
# on both ends through one sequence of events that a well-made Linux CC
# must survive, and checks what `ss -tin` and the module's own state
# (`xdcc flows`, get_info) show afterwards.
#   - RTO storm: the sender's link drops everything for 3 s (several backoff
#     RTOs), then heals. One loss episode: ssthresh is set once (the same
#     value through every backoff) and the module counts one RTO episode
#     (finding 1: every backoff used to halve it again, down to 2 packets).
#   - Application-limited: 1 kB every 10 ms for 1.5 s. The window must not grow
#     (finding 3: it grew on every ACK).
#   - Drain every round vs idle: 20 kB every 20 ms (the flow drains each
#     round, CA_EVENT_TX_START each time) is no idle restart; 20 kB every
#     1 s (more than an RTO of silence) is one per gap (finding 2).
#   - Non-ECN peer (receiver with net.ipv4.tcp_ecn=0 and cubic) behind a
#     RED/ECN port: ECN is not negotiated, the module says so (ecn_ok 0)
#     and reacts to RED's drops (finding 8).
#   - Delayed ACKs on a sub-millisecond path: the window never goes below 2
#     packets and 1 MB does not crawl at one packet per
#     delayed-ACK timeout (finding 3).
#   - No RTT from the handshake (timestamps off, first SYN lost) on a 40 ms
#     path: the base RTT comes from the first real sample, not the
#     intra-DC constant (finding 5).
#   run.sh testbed/vm/tests/events.sh [CC...]     (default: every xdcc CC)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
source "$here/lib.sh"
FLOWS_CLI=$XDCC_BIN
if [[ ! -x $FLOWS_CLI ]]; then
    bad "$FLOWS_CLI not built (cargo build --release -p xdcc)"
    tap_done; exit 1
fi
select_ccs "$@" || { tap_done; exit 1; }

# cc_state FIELD: a field of the module's state in the last `xdcc flows`
# sample of the connection to port 5001 (the sender holds the connection
# open for a while after its last write, so that one sample follows the
# end of the transfer: one `xdcc flows` under TCG takes up to a second) (top level, e.g. rtos, or one of
# the algorithm's values); -1 when there was none.
cc_state() {
    python3 -c 'import json,sys
r=[r for r in json.loads(sys.argv[1] or "[]") if r["remote"].endswith(":5001") and r.get("cc_state")]
c=r[0]["cc_state"] if r else {}
v=c.get(sys.argv[2], c.get("values", {}).get(sys.argv[2], -1))
print(int(v) if not isinstance(v, bool) else int(v))' "${FLOWS_JSON:-}" "$1"
}

# ss_field NAME: every value of `NAME:` in the samples, one per line.
ss_field() { grep -o " $1:[0-9]*" <<<"$SS_LINES" | cut -d: -f2; }

# Finding 1. The blackhole is a netem qdisc dropping everything on the
# sender's own port, added once 300 packets are delivered (the window has
# grown) and removed 3 s later: RTOs back off 200, 400, 800, 1600 ms.
# The script that adds it runs at real-time priority: under TCG the transfer,
# the `ss` sampler and `xdcc flows` saturate the guest, and once starved it
# added the blackhole only after the transfer had ended (no loss at all).
# An attempt whose blackhole came with less than 1 MB left to send judges
# nothing and is repeated (at most 3 attempts).
STORM_BYTES=8000000
test_rto_storm() {
    local cc=$1 at try acked
    at=$(mktemp)
    local rt=()
    command -v chrt >/dev/null && rt=(chrt -f 20)
    for try in 1 2 3; do
        net_up fifo || { bad "$cc: network setup"; return; }
        : >"$at"
        ip netns exec snd "${rt[@]}" bash -c 'for _ in $(seq 1 400); do
                ss -tinH dst 10.9.2.1:5001 | grep -Eq " delivered:([3-9][0-9]{2}|[0-9]{4,})" && break; sleep 0.05; done
            ss -tinH dst 10.9.2.1:5001 >'"$at"'
            tc qdisc add dev s0 root netem loss 100%; sleep 3; tc qdisc del dev s0 root' &
        local storm=$!
        FLOWS_REFRESH=1 SEND_ARGS="--hold 1.5" transfer "$cc" $STORM_BYTES
        wait $storm
        acked=$(grep -o " bytes_acked:[0-9]*" "$at" | cut -d: -f2)
        (( ${acked:-$STORM_BYTES} <= STORM_BYTES - 1000000 )) && break
        echo "  (the blackhole came with ${acked:-all} of $STORM_BYTES bytes acknowledged: attempt $try of at most 3)"
        ((try < 3)) && net_down
    done
    local before backoffs th_storm rtos
    before=$(grep -o " cwnd:[0-9]*" "$at" | cut -d: -f2)
    backoffs=$(ss_field backoff | sort -n | tail -1)
    # ssthresh in every sample taken during the backoffs.
    th_storm=$(grep " backoff:" <<<"$SS_LINES" | grep -o " ssthresh:[0-9]*" | cut -d: -f2 | sort -un | tr '\n' ' ')
    rtos=$(cc_state rtos)
    local recs
    recs=$(cc_state recoveries)
    # Every RTO that fired in the sender's namespace (backoffs included;
    # the connection is the namespace's only one), and Linux's undos.
    local timeouts undos
    timeouts=$(ip netns exec snd nstat -asz TcpExtTCPTimeouts | awk '$1 == "TcpExtTCPTimeouts" {print $2}')
    undos=$(ip netns exec snd nstat -asz TcpExtTCPLossUndo TcpExtTCPSpuriousRTOs | awk '{n += $2} END {print n + 0}')
    echo "  rto storm: cwnd before ${before:-?}, max backoff ${backoffs:-0}, ssthresh during the backoffs: ${th_storm:-none}, module's RTO episodes $rtos, Linux's RTOs ${timeouts:-?} (undone $undos), after: $(tail -1 <<<"$SS_LINES" | grep -o ' cwnd:[0-9]* ssthresh:[0-9]*')"
    check "$cc: rto storm: the transfer survives 3 s of total loss byte-exact" test "$XFER_OK" = 1
    check "$cc: rto storm: several backoff RTOs happened (max backoff ${backoffs:-0} >= 2)" test "${backoffs:-0}" -ge 2
    check "$cc: rto storm: ssthresh set once for the episode (values during the backoffs: ${th_storm:-none})" \
        test "$(wc -w <<<"$th_storm")" = 1
    # One episode for the storm's chain of backoff RTOs (the finding: one per
    # backoff). Linux starts a new episode (and raises CA_EVENT_LOSS again)
    # when an RTO follows progress, e.g. a TCG stall longer than the RTO
    # once the link is back (seen once: 2): each RTO beyond the chain of
    # max-backoff ones may add one, never a backoff inside the chain.
    # At least one, unless the storm began inside a fast recovery: an RTO
    # within the window of a reduction already made raises no
    # CA_EVENT_LOSS (tcp_enter_loss(): "Reduce ssthresh if it has not yet
    # been made inside this window"). CI saw it once with DCTCP, whose window
    # had filled the FIFO (recoveries 1, rtos 0, ssthresh set once).
    local most=$(( ${timeouts:-0} - ${backoffs:-0} + 1 )) least=1
    ((${recs:-0} >= 1)) && least=0
    check "$cc: rto storm: one loss episode for the chain of backoffs in the module's state (rtos $rtos, recoveries ${recs:-?}; at least $least, at most $most: $timeouts RTOs, $backoffs of them one chain)" \
        test "$rtos" -ge "$least" -a "$rtos" -le "$most"
    net_down
    rm -f "$at"
}

# Finding 3 (window growth while not cwnd-limited).
test_app_limited() {
    local cc=$1
    net_up fifo || { bad "$cc: network setup"; return; }
    SEND_ARGS="--chunk 1000 --interval 0.01" transfer "$cc" 150000
    local first last
    first=$FIRST_CWND
    last=$(ss_field cwnd | tail -1)
    echo "  app-limited (150 x 1 kB / 10 ms, ${XFER_MS} ms): cwnd first ${first:-?} max $MAX_CWND last ${last:-?}, median rtt $MED_RTT ms"
    check "$cc: app-limited: transfer byte-exact" test "$XFER_OK" = 1
    if cc_is "$cc" rate_based; then
        # (A rate-based CC's window follows its rate × RTT, not ACK counting.)
        check "$cc: app-limited: window >= 2 packets" test "$MIN_CWND" -ge 2 -o "$MAX_CWND" -ge 2
    else
        check "$cc: app-limited: the window does not grow without the window limiting (max $MAX_CWND <= first ${first:-?} + 2)" \
            test -n "$first" -a "$MAX_CWND" -le $((${first:-0} + 2))
    fi
    net_down
}

# Finding 2 (idle restart only after an RTO of silence).
test_idle() {
    local cc=$1 drained idle late
    net_up fifo || { bad "$cc: network setup"; return; }
    FLOWS_REFRESH=1 SEND_ARGS="--chunk 20000 --interval 0.02 --hold 1.5" transfer "$cc" 1000000
    drained=$(cc_state idle_restarts)
    # (Under TCG the guest now and then stalls the sender itself for more
    # than an RTO: such a round really was idle. The sender counts the
    # writes that came >= 200 ms after the one before; the bug counted
    # every one of the 50 rounds.)
    late=$XFER_LATE
    check "$cc: drain every round: transfer byte-exact" test "$XFER_OK" = 1
    net_down
    net_up fifo
    FLOWS_REFRESH=1 SEND_ARGS="--chunk 20000 --interval 1 --hold 1.5" transfer "$cc" 80000
    idle=$(cc_state idle_restarts)
    echo "  idle restarts: 50 rounds of 20 kB every 20 ms: $drained (writes the guest delayed >= 200 ms: $late); 4 writes 1 s apart: $idle"
    check "$cc: a flow that drains every round keeps its state (idle restarts $drained <= stalled writes $late)" test "$drained" -le "$late"
    check "$cc: the drain test ran paced (stalled writes $late <= 10 of 50)" test "$late" -le 10
    check "$cc: 1 s of silence (> RTO) is an idle restart (3 gaps: $idle)" test "$idle" -ge 2 -a "$idle" -le 3
    net_down
}

# Finding 8 (no ECN negotiated). The stack sets ECT on a NEEDS_ECN CC's
# socket (for the SYN and again after `init`) whether or not ECN was
# negotiated; the module clears it (kmods/glue.rs, stop_ect_without_ecn), so
# RED drops the flow's packets instead of marking CE the peer never echoes.
test_no_ecn_peer() {
    local cc=$1 ecn rec rto init_saved=""
    # RED shows whether packets carry ECT only once its queue is in RED's
    # region: a CC must put one there. A CC whose marks mean spare bandwidth
    # (AMRT) keeps, without ECN, the window it starts with (one BDP: no
    # queue; it once passed only when a stretched handshake RTT gave it a
    # bigger start), and one that also reads delay (SMaRTT) may hold the
    # queue below RED's min (CI of 1263330: RED dropped 0, marked 0, for
    # SMaRTT; 2-21 drops in earlier runs). So every CC with a first-window
    # tunable starts at 4 BDP, 3 BDP of queue above RED's max.
    net_up red || { bad "$cc: network setup"; return; }
    local init=/proc/sys/net/xdcc/$cc/init_bdp_q16
    if [[ -e $init ]]; then
        init_saved=$(cat "$init")
        echo $((4 * 65536)) >"$init"
    fi
    ip netns exec rcv sysctl -qw net.ipv4.tcp_ecn=0
    RCV_CC=cubic FLOWS_REFRESH=1 SEND_ARGS="--hold 1.5" transfer "$cc" 2000000
    [[ -n $init_saved ]] && echo "$init_saved" >"$init"
    ecn=$(cc_state ecn_ok); rec=$(cc_state recoveries); rto=$(cc_state rtos)
    # RED's own counters: CE marks set (only on ECT packets) and drops.
    local red marked dropped
    red=$(tc -n rtr -s qdisc show dev r1 | grep -o 'marked [0-9]* early [0-9]* pdrop [0-9]*')
    marked=$(awk '{print $2}' <<<"$red"); dropped=$(awk '{print $4 + $6}' <<<"$red")
    echo "  non-ECN peer behind RED: ecn_ok $ecn, recoveries $rec, rtos $rto, RED marked ${marked:-?} dropped ${dropped:-?}, delivered_ce $DELIVERED_CE, median cwnd $MED_CWND, median rtt $MED_RTT ms"
    check "$cc: non-ECN peer: transfer byte-exact" test "$XFER_OK" = 1
    check "$cc: non-ECN peer: the module reports ECN off (ecn_ok $ecn)" test "$ecn" = 0
    check "$cc: non-ECN peer: its packets leave without ECT, so RED drops (${dropped:-?}) and marks none (${marked:-?})" \
        test "${marked:-1}" = 0 -a "${dropped:-0}" -gt 0
    check "$cc: non-ECN peer: it reacts to RED's drops (recoveries $rec + rtos $rto > 0)" test $((rec + rto)) -gt 0
    net_down
}

# Finding 3 (never below 2 packets): a sub-millisecond path whose CC sees
# its 20 Mbit/s queue as heavy congestion (base RTT configured 100 µs).
test_delayed_ack() {
    local cc=$1 secs
    NET_INTRA_US=100 configure_cc "$cc"
    RTT=0ms net_up fifo || { bad "$cc: network setup"; return; }
    local try
    for try in 1 2 3; do
        transfer "$cc" 1000000
        # (The window check needs samples after the first window: under TCG
        # the sampler was once starved from the first window to the end.)
        ((MIN_CWND > 0)) && break
        echo "  (no ss sample after the first window: transfer $try of at most 3)"
    done
    echo "  µs path (delayed ACKs on the receiver): 1 MB in $XFER_MS ms, min cwnd $MIN_CWND, median cwnd $MED_CWND, median rtt $MED_RTT ms"
    check "$cc: µs path: transfer byte-exact" test "$XFER_OK" = 1
    check "$cc: µs path: the window never below 2 packets (min $MIN_CWND)" test "$MIN_CWND" -ge 2
    # One packet per 40 ms delayed-ACK timeout would take ~27 s; the link
    # 0.4 s. Under TCG the whole transfer (Python at both ends, the sampler)
    # takes 4.7-8 s for every CC, so the bound is 15 s.
    check "$cc: µs path: no delayed-ACK crawl (1 MB in $XFER_MS ms < 15 s)" test "$XFER_MS" -lt 15000
    net_down
    configure_cc "$cc"
}

# Finding 5 (base RTT from the first sample when the handshake has none).
test_base_rtt_seed() {
    local cc=$1 base retrans
    RTT=40ms net_up fifo || { bad "$cc: network setup"; return; }
    ip netns exec snd sysctl -qw net.ipv4.tcp_timestamps=0
    # The first SYN is lost: the handshake is retransmitted and gives no RTT
    # (the loss ends once the SYN is out; the retransmission follows 1 s later).
    tc -n snd qdisc add dev s0 root netem loss 100%
    ip netns exec snd bash -c 'for _ in $(seq 1 600); do ss -tnH state syn-sent | grep -q . && break; sleep 0.02; done
        sleep 0.2; tc qdisc del dev s0 root' &
    FLOWS_REFRESH=1 SEND_ARGS="--hold 1.5" transfer "$cc" 1000000
    wait
    base=$(cc_state base_rtt_us)
    retrans=$(grep -o ' retrans:[0-9/]*' <<<"$SS_LINES" | tail -1)
    echo "  40 ms path, handshake without RTT: base_rtt_us $base (intra-DC constant ${NET_INTRA_US:-4000}), median rtt $MED_RTT ms,${retrans:- no retrans field}"
    check "$cc: no handshake RTT: transfer byte-exact" test "$XFER_OK" = 1
    check "$cc: no handshake RTT: base RTT from the first sample ($base us >= 30000 on the 40 ms path)" test "$base" -ge 30000
    net_down
}

for cc in "${ccs[@]}"; do
    part "tcp_$cc"
    insmod "$root/kmods/tcp_$cc.ko" || { bad "insmod tcp_$cc"; continue; }
    configure_cc "$cc"
    test_rto_storm "$cc"
    test_app_limited "$cc"
    test_idle "$cc"
    # (Only a CC that negotiates ECN can meet a peer that does not.)
    cc_is "$cc" needs_ecn && test_no_ecn_peer "$cc"
    test_delayed_ack "$cc"
    # (DCTCP keeps no base RTT.)
    cc_is "$cc" keeps_base_rtt && test_base_rtt_seed "$cc"
    w=0
    while ! rmmod "tcp_$cc" 2>/dev/null && ((w < 60)); do sleep 2; w=$((w + 2)); done
    check "tcp_$cc: unloads after the event tests" sh -c "! grep -qw ^tcp_$cc /proc/modules"
done
tap_done
