# shellcheck shell=bash
# Section "telemetry" of userspace/tests/netns.sh, which sources it (the helpers
# it uses are netns.sh's and tests/lib/lib.sh's).
# snd — rtr — rcv (routed_path, IPv4 and IPv6); the router's port to rcv is
# a 50 Mbit/s TBF (queueing delay <= 20 ms) and marks CE on every 25th ECT
# packet (xdcc mark-ce).
section_telemetry() {
    log "telemetry: CE/ECE/bytes/RTT per flow against a deterministic marker"
    local S R D; routed_path S R D t 10.91 fd91
    for n in "$S" "$D"; do in_ns "$n" sysctl -qw net.ipv4.tcp_ecn=1; done
    in_ns "$R" tc qdisc add dev r1 root tbf rate 50mbit burst 16k latency 20ms
    local cs cd marker; agents_and_marker "$S" "$D" "$R" ""

    local n=8000000 fam to port=5001 res
    for fam in 4 6; do
        to=10.91.2.1; [[ $fam == 6 ]] && to=fd91:2::1
        rm -f "$work/ready"
        run_in_cgroup "$cd" "$D" $XFER recv --port $port --cc cubic --out "$work/recv$fam.json" --ready "$work/ready" &
        local rpid=$!
        wait_file "$work/ready"
        run_in_cgroup "$cs" "$S" $XFER send --to $to --port $port --bytes $n --cc cubic >"$work/send$fam.json"
        wait $rpid
        port=$((port + 1))
    done
    sleep 1.5 # let the agents harvest the closed flows
    kill "$marker"; wait "$marker" || true
    local marked; marked=$(tail -1 "$work/marker.json" | jq .marked_segments)

    for fam in 4 6; do
        local sl rl snd rcv
        sl=$(jq -r .local "$work/send$fam.json"); rl=$(jq -r .local "$work/recv$fam.json")
        snd=$(flow_json "$S" "$work/s.sock" "$sl"); rcv=$(flow_json "$D" "$work/d.sock" "$rl")
        echo "$snd" >"$work/flow-snd$fam.json"; echo "$rcv" >"$work/flow-rcv$fam.json"
        check "IPv$fam: transfer byte-exact (sha256)" same_sha "$work/send$fam.json" "$work/recv$fam.json"
        check "IPv$fam: sender flow tracked, closed, cc cubic" eq "$(jq -r '.state + " " + .cc' <<<"$snd")" "closed cubic"
        check "IPv$fam: receiver flow tracked" eq "$(jq -r .state <<<"$rcv")" "closed"
        check "IPv$fam: payload bytes sender tc = receiver tc" eq "$(jq .tc_bytes_out <<<"$snd")" "$(jq .tc_bytes_in <<<"$rcv")"
        check "IPv$fam: receiver saw >= N payload bytes" le $n "$(jq .tc_bytes_in <<<"$rcv")"
        check "IPv$fam: bytes_received in [N, N+1] (FIN)" bash -c "(( $(jq .bytes_received <<<"$rcv") - $n <= 1 && $(jq .bytes_received <<<"$rcv") >= $n ))"
        check "IPv$fam: bytes_acked in [N, N+2]" bash -c "(( $(jq .bytes_acked <<<"$snd") >= $n && $(jq .bytes_acked <<<"$snd") <= $n + 2 ))"
        check "IPv$fam: sender's ECE ACKs = receiver's ECE ACKs sent (> 0)" bash -c \
            "(( $(jq .ece_in <<<"$snd") == $(jq .ece_out <<<"$rcv") && $(jq .ece_in <<<"$snd") > 0 ))"
        # Linux sends a retransmission Not-ECT (tcp_ecn_send: only new data
        # is ECT), as it does SYN, the handshake's ACK and FIN: 3 + retrans.
        check "IPv$fam: every new data segment was ECT" le "$(jq '.segs_out - .retrans - 3' <<<"$snd")" "$(jq .ect_out <<<"$snd")"
        check "IPv$fam: no more ECT segments than segments" le "$(jq .ect_out <<<"$snd")" "$(jq .segs_out <<<"$snd")"
        check "IPv$fam: RTT p50 >= 240 us (a full packet's serialization at 50 Mbit/s)" le 240 "$(jq .rtt_p50_us <<<"$snd")"
        check "IPv$fam: RTT p99 <= 30 ms (20 ms TBF queue + slack)" le "$(jq .rtt_p99_us <<<"$snd")" 30000
        check "IPv$fam: RTT p50 <= p99 and >= min" bash -c \
            "(( $(jq .rtt_p50_us <<<"$snd") <= $(jq .rtt_p99_us <<<"$snd") && $(jq .rtt_p50_us <<<"$snd") >= $(jq .rtt_min_us <<<"$snd") ))"
        check "IPv$fam: >= 10 RTT samples" le 10 "$(jq .rtt_samples <<<"$snd")"
    done
    local ce4 ce6; ce4=$(jq .ce_in "$work/flow-rcv4.json"); ce6=$(jq .ce_in "$work/flow-rcv6.json")
    log "marker: $(tail -1 "$work/marker.json"); receivers saw CE on $ce4 + $ce6 segments"
    check "CE seen by receivers = segments the router marked (> 0)" bash -c "(( $ce4 + $ce6 == $marked && $marked > 0 ))"
    check "IPv6 sender flow has a path id and a 20-bit label" bash -c \
        "(( $(jq .flow_label "$work/flow-snd6.json") > 0 && $(jq .flow_label "$work/flow-snd6.json") < 1048576 ))"
    check "IPv4 flow has no path id" eq "$(jq -r .path_id "$work/flow-snd4.json")" null
    { echo "--- xdcc flows --all (sender, then receiver) ---"
        in_ns "$S" "$X" --socket "$work/s.sock" flows --all
        in_ns "$D" "$X" --socket "$work/d.sock" flows --all; } | sed 's/^/# /'
}
