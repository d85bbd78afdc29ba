# The VM suites' helpers (kmods.sh, events.sh, dctcp.sh and the probes): the
# bottleneck of the test network and a sampled transfer over it, on top of
# the shared test library (tests/lib/lib.sh: checks, namespaces, CC
# properties, the transfer tool $XFER).
# shellcheck shell=bash
source "$(dirname "${BASH_SOURCE[0]}")/../../../tests/lib/lib.sh"

# A part of a suite begins: its name and the seconds the guest has run so
# far (the suites share CI's time limit; this shows where it goes).
part() { echo "=== $1 [$(cut -d. -f1 /proc/uptime) s since boot]"; }

RATE=20mbit
RTT=4ms   # base RTT; BDP 10 kB (7 packets)

# Three namespaces: snd (10.9.1.1) -- rtr -- rcv (10.9.2.1), the shared
# library's routed_path. The router's port towards rcv (r1) is the
# bottleneck: an HTB rate limit whose leaf is $1 (the library's `bottleneck`:
# "red" RED with ECN marking, "reddeep" RED marking from 20 packets, "step"
# DCTCP's step marking at 20 packets, "fifo" a byte FIFO without marking). The
# base RTT is netem delay on the router's port back towards snd (r0). (The
# bottleneck must not be on the sender's own interface: TCP Small Queues
# would then cap its queue at about a millisecond of data and no marking
# threshold would ever be reached.)
net_up() {
    local S R D
    routed_path S R D "" 10.9 || return 1
    bottleneck rtr r1 "$RATE" "$1" || return 1
    tc -n rtr qdisc add dev r0 root netem delay "$RTT" limit 100000
}

net_down() {
    # Let closing connections finish first: a connection still closing when
    # its namespace goes (e.g. a FIN whose ACK a RED queue with a high
    # average dropped) lingers as an orphan, retransmitting for minutes and
    # holding its CC module. Without the bottleneck qdisc the next
    # retransmission gets through.
    tc -n rtr qdisc del dev r1 root 2>/dev/null
    local i
    for i in $(seq 1 30); do
        [[ -z $(ip netns exec snd ss -tanH state fin-wait-1 state fin-wait-2 state closing state last-ack 2>/dev/null;
                ip netns exec rcv ss -tanH state fin-wait-1 state fin-wait-2 state closing state last-ack 2>/dev/null) ]] && break
        sleep 0.5
    done
    ns_cleanup
}

# The cwnd of each `ss -ti` sample (file $2) whose `delivered:` count is
# above $1 packets, in order (ss leaves `delivered:` out while it is 0).
cwnds_once_delivered() {
    awk -v after="$1" '{c = ""; d = 0
        for (i = 1; i <= NF; i++) { if ($i ~ /^cwnd:/) c = substr($i, 6); if ($i ~ /^delivered:/) d = substr($i, 11) }
        if (c != "" && d + 0 > after) print c}' "$2"
}

# transfer CC BYTES: sends BYTES from snd to rcv with the netns default CC
# set to CC (the receiver's: RCV_CC, default CC; SEND_ARGS: more arguments
# of `$XFER send`); samples `ss -tin` on the sender while it runs. Sets XFER_OK, XFER_MS,
# XFER_LATE (paced sender: writes that started >= 200 ms after the one before),
# SS_LINES (all samples of the connection to port 5001), MAX_CWND, MIN_CWND, MED_CWND, MED_RTT, LAST_PACING and
# MED_PACING (bit/s, median over the second half of the samples).
transfer() {
    transfer_once "$@"
    local try
    for try in 2 3; do
        grep -q ' cwnd:' <<<"$SS_LINES" && return 0
        # Under TCG the guest's CPUs are saturated by the transfer itself and
        # the `ss` sampler (one process spawn per sample) is now and then
        # starved for a whole transfer (seen twice in a row once): repeat,
        # up to three transfers, rather than judge a CC on no samples.
        echo "  (no ss sample of the transfer: transfer $try of at most 3)"
        transfer_once "$@"
    done
    grep -q ' cwnd:' <<<"$SS_LINES" || echo "  (no ss sample in 3 transfers: the window checks below have nothing to judge)"
}

transfer_once() {
    local cc=$1 bytes=$2 out
    out=$(mktemp -d)
    # Both ends run the CC, as DCTCP deployments do: an ECN-capable SYN
    # (ECT set, as TCP_CONG_NEEDS_ECN sends it) is only accepted by a
    # listener whose CC needs ECN too.
    ip netns exec snd sysctl -qw net.ipv4.tcp_congestion_control="$cc" || return 1
    ip netns exec rcv sysctl -qw net.ipv4.tcp_congestion_control="${RCV_CC:-$cc}" || return 1
    ip netns exec rcv $XFER recv --port 5001 --out "$out/rcv" &
    local srv=$!
    # Sample `ss` from inside the namespace until the sender is done: one
    # sampler process, because every `ip netns exec` remounts sysfs, which
    # under TCG can take longer than a whole transfer. The sampler starts
    # first and the sender only once it runs, so no transfer goes unsampled.
    # With FLOWS_CLI (the xdcc binary) set, also keep the first `xdcc flows
    # --json` that shows the CC's own state (the module's get_info); with
    # FLOWS_REFRESH=1 the last one instead (costlier: one `xdcc flows` per sample).
    # (`xdcc flows` runs in its own loop, and only once `ss` has seen data
    # delivered, i.e. after the CC's init: one call takes up to a second of
    # the guest's CPU under TCG and must not hold up the `ss` samples.)
    ip netns exec snd bash -c 'touch '"$out/sampling"'
        if [[ -n "'"${FLOWS_CLI:-}"'" ]]; then
            while [[ ! -e '"$out/done"' ]]; do
                if ! grep -q " delivered:" '"$out/ss"'; then
                    sleep 0.05
                elif [[ ! -s '"$out/flows"' || -n "'"${FLOWS_REFRESH:-}"'" ]]; then
                    j=$('"${FLOWS_CLI:-true}"' flows --json 2>/dev/null)
                    grep -q cc_state <<<"$j" && echo "$j" >'"$out/flows.new"' && mv '"$out/flows.new"' '"$out/flows"'
                fi
                sleep 0.05
            done &
        fi
        while [[ ! -e '"$out/done"' ]]; do ss -tinH dst 10.9.2.1:5001; sleep 0.05; done
        wait' \
        >"$out/ss" 2>/dev/null &
    local sampler=$!
    for _ in $(seq 1 600); do [[ -e $out/sampling ]] && break; sleep 0.05; done
    sleep 0.3
    local t0
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    ip netns exec snd $XFER send --to 10.9.2.1 --port 5001 --bytes "$bytes" ${SEND_ARGS:-} >"$out/snd"
    touch "$out/done"
    wait $sampler
    FLOWS_JSON=$(cat "$out/flows" 2>/dev/null)
    wait $srv
    # (Until the receiver has everything: the sender's last write returns
    # while its data is still in the socket buffer.)
    XFER_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
    SS_LINES=$(cat "$out/ss")
    XFER_LATE=$(jq .late "$out/snd" 2>/dev/null)
    # The transfer's own time (handshake to last byte acknowledged; XFER_MS
    # adds the sender's start-up, the hold and the close).
    XFER_ACKED_MS=$(jq '.acked_ms // 0' "$out/snd" 2>/dev/null)
    XFER_ACKED_MS=${XFER_ACKED_MS:-0}
    XFER_LATE=${XFER_LATE:-0}
    XFER_OK=0
    same_sha "$out/snd" "$out/rcv" && [[ $(jq .bytes "$out/rcv") == "$bytes" ]] && XFER_OK=1
    MAX_CWND=$(grep -o 'cwnd:[0-9]*' "$out/ss" | cut -d: -f2 | sort -n | tail -1)
    MAX_CWND=${MAX_CWND:-0}
    # (Once the first window is acknowledged: until then cwnd is the
    # kernel's initial 10, not yet the CC's.)
    MIN_CWND=$(cwnds_once_delivered 11 "$out/ss" | sort -n | head -1)
    MIN_CWND=${MIN_CWND:-0}
    # The first window the CC set: a sample once data was acknowledged
    # (delivered > 1; the handshake counts 1). Until the first data ACK the
    # socket shows the kernel's initial 10: the CC writes its window from its
    # first cong_control (CI once: UnoCC "first 10 max 31" in the app-limited
    # check, 31 being its handshake BDP, sampled between the handshake and
    # the first data ACK).
    FIRST_CWND=$(cwnds_once_delivered 1 "$out/ss" | head -1)
    # Median cwnd over the second half of the samples (steady state).
    local all half
    all=$(grep -o ' cwnd:[0-9]*' "$out/ss" | cut -d: -f2)
    half=$(tail -n $(( ($(wc -l <<<"$all") + 1) / 2 )) <<<"$all" | sort -n)
    MED_CWND=$(sed -n "$(( ($(wc -l <<<"$half") + 1) / 2 ))p" <<<"$half")
    MED_CWND=${MED_CWND:-0}
    MED_RTT=$(grep -o ' rtt:[0-9.]*' "$out/ss" | cut -d: -f2 | tail -n $(( ($(wc -l <<<"$all") + 1) / 2 )) | sort -n | sed -n "$(( ($(wc -l <<<"$half") + 1) / 2 ))p")
    DELIVERED_CE=$(grep -o 'delivered_ce:[0-9]*' "$out/ss" | cut -d: -f2 | sort -n | tail -1)
    DELIVERED_CE=${DELIVERED_CE:-0}
    LAST_PACING=$(grep -o 'pacing_rate [0-9.]*[KMG]\?bps' "$out/ss" | tail -1 | awk '{print $2}')
    local pacings p
    pacings=$(grep -o 'pacing_rate [0-9.]*[KMG]\?bps' "$out/ss" | awk '{print $2}' \
        | while read -r p; do to_bps "$p"; echo; done)
    pacings=$(tail -n $(( ($(wc -l <<<"$pacings") + 1) / 2 )) <<<"$pacings" | sort -n)
    MED_PACING=$(sed -n "$(( ($(wc -l <<<"$pacings") + 1) / 2 ))p" <<<"$pacings")
    MED_PACING=${MED_PACING:-0}
    SENT_CC=$(jq -r .cc "$out/snd" 2>/dev/null)
    rm -rf "$out"
}



# Configure an xdcc CC for the test network (what an operator does on real
# servers): link rate and base RTTs, from which every tunable is re-derived,
# then per-CC adaptations to this emulated network (XDCC_EXTRA_TUNABLES,
# "cc.name=value ..."): UnoCC's AI of 0.1 % BDP per RTT is designed for
# 100 Gbit/s links (here, 7 packets of BDP, it would add 10 bytes per RTT),
# and the guest's RTT noise (1.5x the base RTT without any queue) reads as
# extreme congestion to a QuickAdapt period of one base RTT; the same noise
# sits at OSCAR's default target (2 ms above base here), so it gets 4 ms;
# SMaRTT's window cap of 1.5 BDP would keep this small-BDP link from ever
# queueing enough to show its ECN reaction.
XDCC_EXTRA_TUNABLES=${XDCC_EXTRA_TUNABLES-"uno.ai_bdp_ppm=50000 uno.qa_period_q16=196608 oscar.target_qdelay_ns=4000000 smartt.max_wnd_bdp_q16=262144"}
configure_cc() {
    local d=/proc/sys/net/xdcc/$1
    [[ -d $d ]] || return 0
    echo "${NET_MBPS:-20}" >"$d/net_link_rate_mbps"
    echo "${NET_INTRA_US:-4000}" >"$d/net_intra_rtt_us"
    echo "${NET_INTER_US:-40000}" >"$d/net_inter_rtt_us"
    echo 1500 >"$d/net_mtu"
    local kv
    for kv in ${XDCC_EXTRA_TUNABLES:-}; do
        [[ $kv == "$1".* ]] || continue
        kv=${kv#"$1".}
        echo "${kv#*=}" >"$d/${kv%%=*}"
    done
}
