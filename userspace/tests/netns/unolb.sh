# shellcheck shell=bash
# Section "unolb" of userspace/tests/netns.sh, which sources it (the helpers
# it uses are netns.sh's and tests/lib/lib.sh's).
# UnoLB for TCP: snd — r1 =(la | lb)= r2 — rcv over IPv6, r1 hashing the flow
# label over two equal-cost links of 100 Mbit/s. The agent's [[policy]]
# sprays connections to rcv's first address over 10 subflows (lb = "unolb")
# and keeps those to its second on one path (lb = "ecmp"). One TCP
# connection then uses both links; when one link silently drops everything,
# the subflows on it are re-drawn and the transfer completes.
section_unolb() {
    log "unolb: one TCP connection sprayed over two paths; a dead path's subflows are re-drawn"
    local S A B D; two_paths S A B D ul fd97
    ip -n "$D" addr add fd97:2::2/64 dev d0 nodad
    for l in la lb; do in_ns "$A" tc qdisc add dev $l root tbf rate 100mbit burst 32k latency 20ms; done
    local cs sock=$work/ul.sock; cs=$(new_cgroup ul)
    cat >"$work/unolb.toml" <<TOML
cgroup = "$cs"
[[policy]]
prefix = "fd97:2::1/128"
cc = "cubic"
lb = "unolb"
[[policy]]
prefix = "fd97:2::2/128"
cc = "cubic"
lb = "ecmp"
# The ECMP connection keeps its one path: the rerouter would move it after
# two lossy rounds or a timeout, as PLB does (a sprayed connection's
# subflows move on their own losses, whatever these say).
[reroute]
lossy_rounds = 0
on_rto = false
TOML
    start_agent "$S" "$sock" "$cs" --config "$work/unolb.toml" --iface s0 || { check "unolb: agent starts" false; return; }

    # transfer TAG ADDR PORT BYTES [FAIL]: a transfer from S to ADDR; FAIL:
    # 0.4 s in, the link that carried more in the last 0.2 s drops
    # everything A forwards on it ($bad). Sets la_b and lb_b (bytes each
    # link carried; with FAIL, from the failure on) and f (the sender's flow).
    transfer() {
        local tag=$1 addr=$2 port=$3 n=$4 fail=${5:-}
        rm -f "$work/ready"
        ip netns exec "$D" $XFER recv --port "$port" --out "$work/ur-$tag.json" --ready "$work/ready" &
        local rpid=$!; wait_file "$work/ready"
        local a0 b0; a0=$(tx_bytes "$A" la); b0=$(tx_bytes "$A" lb)
        run_in_cgroup "$cs" "$S" $XFER send --to "$addr" --port "$port" --bytes "$n" --cc reno \
            --started "$work/us-$tag.started" >"$work/us-$tag.json" &
        local spid=$!
        if [[ -n $fail ]]; then
            sleep 0.2; a0=$(tx_bytes "$A" la); b0=$(tx_bytes "$A" lb); sleep 0.2
            bad=la; (( $(tx_bytes "$A" lb) - b0 > $(tx_bytes "$A" la) - a0 )) && bad=lb
            forward_drop "$A" oifname $bad
            a0=$(tx_bytes "$A" la); b0=$(tx_bytes "$A" lb)
        fi
        local ok=1; timeout 120 bash -c "while kill -0 $spid 2>/dev/null; do sleep 0.2; done" || ok=0
        wait $spid || ok=0; wait $rpid || ok=0
        [[ -n $fail ]] && { dropped=$(forward_dropped "$A"); forward_heal "$A"; }
        la_b=$(( $(tx_bytes "$A" la) - a0 )); lb_b=$(( $(tx_bytes "$A" lb) - b0 ))
        f=$(flow_json "$S" "$sock" "$(jq -r .local "$work/us-$tag.started")")
        log "$tag: la $la_b B, lb $lb_b B${fail:+ after $bad failed, which dropped $dropped B}; $(jq -r .acked_ms "$work/us-$tag.json" 2>/dev/null) ms; flow $(jq -c '{subflows,subflow_redraws,retrans,reroutes,last_reroute}' <<<"$f")"
        check "unolb, $tag: transfer completed" eq $ok 1
        check "unolb, $tag: byte-exact (sha256)" same_sha "$work/us-$tag.json" "$work/ur-$tag.json"
    }
    local la_b lb_b f bad dropped n=30000000
    # 1) one path per connection: one link carries it
    transfer ecmp fd97:2::2 6401 $n
    check "unolb, ecmp: the connection has no subflows" eq "$(jq -r .subflows <<<"$f")" null
    check "unolb, ecmp: one link carried >= 95 % of the bytes" \
        test $(( (la_b > lb_b ? la_b : lb_b) * 100 )) -ge $(( (la_b + lb_b) * 95 ))
    if [[ ${UNOLB_SPREAD:-} == 1 ]]; then
        # 2) sprayed, healthy: both links carry it. Open (issue 46): with
        # cubic filling the links' 20 ms queues, the subflows' re-draws on
        # spurious retransmissions gather them on one link in most runs
        # (testbed/notes/2026-11-29-unolb-tcp.md); not run by default.
        transfer sprayed fd97:2::1 6402 $n
        check "unolb, sprayed: each link carried >= 20 % of the bytes" \
            test $(( (la_b < lb_b ? la_b : lb_b) * 100 )) -ge $(( (la_b + lb_b) * 20 ))
    fi
    # 3) sprayed; the busier link dies: the subflows on it leave it
    transfer dead-link fd97:2::1 6403 $n fail
    check "unolb, dead link: the flow has 10 subflows" eq "$(jq -r .subflows <<<"$f")" 10
    check "unolb, dead link: subflows were re-drawn" test "$(jq -r .subflow_redraws <<<"$f")" -ge 1
    # (TCP recovers what the dead link drops; a subflow left on it would
    # lose every tenth packet to the end)
    check "unolb, dead link: it dropped < 5 % of the transfer (the subflows left it)" test $((dropped * 20)) -lt $n
}
