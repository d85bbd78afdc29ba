# shellcheck shell=bash
# Section "policy" of userspace/tests/netns.sh, which sources it (the helpers
# it uses are netns.sh's and tests/lib/lib.sh's).
# The CC per destination ([[policy]] in the agent's file): the agent's
# sock_ops program sets each new connection's CC from the peer's prefix —
# before the SYN for a connection the tracked cgroup opens, once established
# for one it accepts — and says "needs ECN" for a CC that needs it, so ECN is
# negotiated whatever the listener's CC and tcp_ecn say. Two peers in two
# prefixes, bpf_uno and cubic, both directions, byte-exact.
section_policy() {
    log "policy: connections to two prefixes get two CCs, ECN where the CC needs it, both directions"
    local C A B; star C A B p 10.98
    local had_uno=0
    grep -qw bpf_uno /proc/sys/net/ipv4/tcp_available_congestion_control && had_uno=1
    ((had_uno)) || "$X" cc load uno --bpf >/dev/null
    # The tracked side neither requests nor accepts ECN by itself (tcp_ecn
    # 0, reno listeners); the peers accept it when asked (tcp_ecn 2).
    in_ns "$C" sysctl -qw net.ipv4.tcp_ecn=0
    for n in "$A" "$B"; do in_ns "$n" sysctl -qw net.ipv4.tcp_ecn=2; done
    local cgp sock=$work/p.sock; cgp=$(new_cgroup policy)
    cat >"$work/policy.toml" <<TOML
cgroup = "$cgp"
[[policy]]
prefix = "10.98.1.0/24"
cc = "bpf_uno"
[[policy]]
prefix = "10.98.2.0/24"
cc = "cubic"
TOML
    start_agent "$C" "$sock" "$cgp" --config "$work/policy.toml" || { check "policy: agent starts" false; return; }
    local n=4000000 peer ns ip pol port=6201
    # ECN is negotiated exactly where the CC needs it: bpf_uno's side as
    # `xdcc cc known` says, cubic's never.
    local uno_ecn=false; cc_is uno needs_ecn && uno_ecn=true
    # Active: the tracked cgroup connects (asking for reno). The peer's
    # listener runs the same CC: a CC that needs ECN sends an ECT SYN, which
    # Linux accepts only at a listener whose CC needs ECN (or one that says
    # so through sock_ops, as the passive case below).
    for peer in "A 10.98.1.1 bpf_uno 1 $uno_ecn" "B 10.98.2.1 cubic 2 false"; do
        read -r ns ip want pol ecn <<<"$peer"
        local P=$A; [[ $ns == B ]] && P=$B
        rm -f "$work/ready"
        in_ns "$P" $XFER recv --port $port --cc "$want" --out "$work/pr-$ns.json" --ready "$work/ready" &
        local rpid=$!; wait_file "$work/ready"
        run_in_cgroup "$cgp" "$C" $XFER send --to "$ip" --port $port --bytes $n --cc reno >"$work/ps-$ns.json"
        wait $rpid
        check "policy, connect to $ip: byte-exact" same_sha "$work/ps-$ns.json" "$work/pr-$ns.json"
        check "policy, connect to $ip: the CC is $want (the app asked for reno)" eq "$(jq -r .cc "$work/ps-$ns.json")" "$want"
        check "policy, connect to $ip: ECN negotiated = $ecn" eq "$(jq -r .ecn "$work/ps-$ns.json")" "$ecn"
        local f; f=$(ip netns exec "$C" "$X" --socket "$sock" flows --all -j | jq -c "[.[] | select(.remote == \"$ip:$port\")][0]")
        check "policy, connect to $ip: xdcc flows shows entry #$pol and $want" eq "$(jq -r '"\(.policy) \(.cc)"' <<<"$f")" "$pol $want"
        port=$((port + 1))
    done
    # Passive: the tracked cgroup accepts (a reno listener, tcp_ecn 0); the
    # peer asks for ECN only where its own CC needs it.
    for peer in "A 10.98.1.1 bpf_uno 1 $uno_ecn" "B 10.98.2.1 cubic 2 false"; do
        read -r ns ip want pol ecn <<<"$peer"
        local P=$A; [[ $ns == B ]] && P=$B
        rm -f "$work/ready"
        run_in_cgroup "$cgp" "$C" $XFER recv --port $port --cc reno --out "$work/qr-$ns.json" --ready "$work/ready" &
        local rpid=$!; wait_file "$work/ready"
        local ccp=$want; [[ $want == cubic ]] || ccp=bpf_uno
        in_ns "$P" $XFER send --to "${ip%.1}.2" --port $port --bytes $n --cc "$ccp" >"$work/qs-$ns.json"
        wait $rpid
        check "policy, accept from $ip: byte-exact" same_sha "$work/qs-$ns.json" "$work/qr-$ns.json"
        check "policy, accept from $ip: the accepted socket's CC is $want (the listener's is reno)" eq "$(jq -r .cc "$work/qr-$ns.json")" "$want"
        check "policy, accept from $ip: ECN negotiated = $ecn (tcp_ecn 0 here)" eq "$(jq -r .ecn "$work/qr-$ns.json")" "$ecn"
        port=$((port + 1))
    done
    # Without the agent, the same accept refuses ECN (tcp_ecn 0, reno).
    kill "${pids[-1]}" 2>/dev/null; wait "${pids[-1]}" 2>/dev/null || true
    rm -f "$work/ready"
    run_in_cgroup "$cgp" "$C" $XFER recv --port $port --cc reno --out "$work/nr.json" --ready "$work/ready" &
    local rpid=$!; wait_file "$work/ready"
    in_ns "$A" $XFER send --to 10.98.1.2 --port $port --bytes 100000 --cc bpf_uno >"$work/ns.json"
    wait $rpid
    check "no agent: the same accept has no ECN and keeps reno (the policy made the difference)" eq "$(jq -r '"\(.cc) \(.ecn)"' "$work/nr.json")" "reno false"
    ((had_uno)) || "$X" cc unload uno --bpf >/dev/null 2>&1 || true
}
