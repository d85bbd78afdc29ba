# shellcheck shell=bash
# Section "transport" of userspace/tests/netns.sh, which sources it (the
# helpers it uses are netns.sh's and tests/lib/lib.sh's): `xdcc send` and
# `xdcc recv` (the UDP transport with UnoRC's coded blocks) through a
# namespace router whose port is 1 Gbit/s over a 300 kB FIFO, so that the
# transfer meets real drops.
section_transport() {
    log "transport: xdcc send / xdcc recv through a 1 Gbit/s port, IPv4 and IPv6, the key and the target checked"
    local S R D
    routed_path S R D ud 10.95 fd95
    bottleneck "$R" r1 1gbit bfifo:300000
    local k=$work/transport.key src=$work/transport.src
    head -c 32 /dev/urandom >"$k"
    head -c 30000000 /dev/urandom >"$src"
    # recv_bg ADDR OUT [ARGS...]: a receiver in D (its pid: $rpid, its
    # output in OUT.log), once its port listens.
    recv_bg() {
        local addr=$1 out=$2; shift 2
        in_ns "$D" "$X" recv --listen "$addr" --out "$out" --key-file "$k" -q "$@" >"$out.log" 2>&1 &
        rpid=$!
        pids+=("$rpid")
        local port=${addr##*:}
        for _ in $(seq 50); do in_ns "$D" ss -Htln "sport = :$port" | grep -q . && return 0; sleep 0.1; done
        return 1
    }
    local rpid
    recv_bg 10.95.2.1:7400 "$work/t4.out"
    check "send over IPv4: 30 MB, the sender's summary" in_ns "$S" "$X" send "$src" --to 10.95.2.1:7400 --key-file "$k" --rate-mbit 1000 -q
    check "recv over IPv4 ends and reports" wait "$rpid"
    log "transport: $(head -c 400 "$work/t4.out.log")"
    check "the file arrived byte-exact" cmp "$src" "$work/t4.out"
    check "the receiver's summary has the sender's sha256" grep -q "sha256 $(sha256sum "$src" | cut -d' ' -f1)" "$work/t4.out.log"

    recv_bg "[fd95:2::1]:7401" "$work/t6.out"
    check "send over IPv6 (JSON summary: goodput, counters)" bash -c '
        j=$(ip netns exec "$1" "$2" --json send "$3" --to "[fd95:2::1]:7401" --key-file "$4" --rate-mbit 1000) &&
        jq -e ".bytes == 30000000 and .goodput_mbps > 50 and .sent.packets >= 21429" <<<"$j"' _ "$S" "$X" "$src" "$k"
    check "recv over IPv6 ends" wait "$rpid"
    check "the IPv6 copy is byte-exact" cmp "$src" "$work/t6.out"

    # ECN: a phantom queue on the router's port draining at 90 % of
    # 200 Mbit/s marks CE once the transfer outruns it; the data leaves
    # ECT(0), the receiver reads CE from the IP header and echoes it.
    ip netns exec "$R" "$X" mark-phantom --iface r1 --rate-mbit 200 >"$work/tce.json" 2>"$work/tce.log" &
    local marker=$!
    pids+=("$marker")
    sleep 1.5
    recv_bg 10.95.2.1:7404 "$work/tce.out"
    check "send through a phantom queue: CE comes back in the ACKs" bash -c '
        j=$(ip netns exec "$1" "$2" --json send "$3" --to 10.95.2.1:7404 --key-file "$4" --rate-mbit 1000) &&
        jq -e ".sent.marked > 0" <<<"$j"' _ "$S" "$X" "$src" "$k"
    check "recv with CE marks ends" wait "$rpid"
    kill "$marker"; wait "$marker" 2>/dev/null || true
    # (Its counters: the last line it prints, at exit.)
    check "the data crossed the port ECN-capable (ECT), and the port marked some" bash -c 'tail -n 1 "$1" | jq -e ".ect_packets > 20000 and .marked > 0"' _ "$work/tce.json"
    check "the receiver counted the CE-marked packets" grep -q "CE-marked [1-9]" "$work/tce.out.log"
    check "the marked copy is byte-exact" cmp "$src" "$work/tce.out"

    head -c 32 /dev/urandom >"$work/other.key"
    recv_bg 10.95.2.1:7402 "$work/tk.out"
    expect_fail "a sender without the receiver's key is refused" "does not hold the key" \
        in_ns "$S" "$X" send "$src" --to 10.95.2.1:7402 --key-file "$work/other.key" -q
    wait "$rpid" 2>/dev/null || true
    check "nothing was written for it (no file, no partial file)" bash -c '! ls -a "$1" | grep -q "tk.out\$\|xdcc-partial"' _ "$work"

    echo precious >"$work/tkeep.out"
    recv_bg 10.95.2.1:7403 "$work/tkeep.out"
    expect_fail "an existing target is refused without --overwrite" "exists" \
        in_ns "$S" "$X" send "$src" --to 10.95.2.1:7403 --key-file "$k" -q
    wait "$rpid" 2>/dev/null || true
    check "the existing target is unchanged" grep -qx precious "$work/tkeep.out"

    expect_fail "a short key is refused (exit 5)" "at least 16" bash -c 'echo short >"$1.short"; "$2" send "$3" --to 127.0.0.1:1 --key-file "$1.short"; s=$?; ((s == 5)) || exit 0; exit $s' _ "$k" "$X" "$src"
    expect_fail "an unresolvable --to is refused" "--to nosuchhost" "$X" send "$src" --to nosuchhost:1 --key-file "$k"
    expect_fail "an unknown --lb is refused" "invalid value 'spray'" "$X" send "$src" --to 127.0.0.1:1 --key-file "$k" --lb spray

    transport_paths "$k" "$src"
}

# UnoLB on real paths: two equal-cost paths of 300 Mbit/s (the router
# hashes the IPv6 flow label, which Linux derives from the UDP ports: each
# of the sender's 10 subflows has its own port), each with Uno's phantom
# queue marking CE: both healthy, then one of them losing packets as Uno's
# Table 1 describes a WAN link, at 300 times its rates (`xdcc inject-loss`:
# blocks of 10 packets losing 1, 2 or 3 with probability 9 %, 2.25 %,
# 0.48 %; UnoLB leaves that path subflow by subflow as losses go
# unanswered),
# then one of them
# dead both ways for the data (UDP; the control connection is TCP's to
# route: Linux moves its label on a timeout, slowly).
transport_paths() {
    local k=$1 src=$2
    log "transport: UnoLB's subflows over two ECMP paths with phantom queues: healthy, one with Table-1 losses, one dead"
    local S A B D; two_paths S A B D um fd96
    local l rpid
    for l in la lb; do
        in_ns "$A" tc qdisc add dev $l root tbf rate 300mbit burst 32k latency 20ms
        ip netns exec "$A" "$X" mark-phantom --iface $l --rate-mbit 300 >"$work/um-$l.json" 2>&1 &
        pids+=($!)
    done
    sleep 1.5
    # recv_json PORT OUT: a receiver in D, its JSON summary in OUT.json.
    recv_json() {
        ip netns exec "$D" "$X" --json recv --listen "[fd96:2::1]:$1" --out "$2" --key-file "$k" >"$2.json" 2>"$2.log" &
        rpid=$!
        pids+=("$rpid")
        for _ in $(seq 50); do in_ns "$D" ss -Htln "sport = :$1" | grep -q . && return 0; sleep 0.1; done
        return 1
    }
    # transfer PORT OUT WHAT [ARGS...]: $src from S to a receiver in D on
    # PORT, into OUT (the ends' summaries in OUT.sent.json and OUT.json),
    # byte-exact; ARGS go to `xdcc send`.
    # (16 subflows: all on one of the two paths once in 32,768 transfers.)
    transfer() {
        local port=$1 out=$2 what=$3; shift 3
        recv_json "$port" "$out" || { check "a receiver listens for the transfer $what" false; return 0; }
        check "send $what" bash -c '
            ip netns exec "$1" "$2" --json send "$3" --to "[fd96:2::1]:$4" --key-file "$5" --rate-mbit 600 --subflows 16 "${@:7}" >"$6.sent.json"' \
            _ "$S" "$X" "$src" "$port" "$k" "$out" "$@"
        check "recv $what ends" wait "$rpid"
        check "the copy $what is byte-exact" cmp "$src" "$out"
        log "transport: $(jq -c '{goodput_mbps, sent, received}' "$out.sent.json" "$out.json" | tr '\n' ' ')"
    }
    local la0 lb0; la0=$(tx_bytes "$A" la); lb0=$(tx_bytes "$A" lb)
    transfer 7412 "$work/th.out" "over two healthy paths"
    local la=$(( $(tx_bytes "$A" la) - la0 )) lb=$(( $(tx_bytes "$A" lb) - lb0 ))
    log "transport: la carried $la bytes, lb $lb"
    # (Each subflow's path is the hash's coin toss, all 16 on one path once
    # in 32,768 draws. UnoLB leaves a path that loses packets and nothing
    # brings a subflow back while the other delivers, so a path black-holed
    # at the start gathers them all: testbed/notes/2026-11-29-unolb-tcp.md.)
    check "the subflows spread over both paths (each carried a fiftieth or more)" bash -c '(( $3 >= 30000000 && $1 * 50 >= $3 && $2 * 50 >= $3 ))' _ "$la" "$lb" $((la + lb))

    ip netns exec "$A" "$X" inject-loss --iface la --block 10 --p 0.09,0.0225,0.0048 >"$work/um-loss.json" 2>"$work/um-loss.log" &
    local injector=$!
    pids+=("$injector")
    check "the loss injector runs on la" bash -c 'for _ in $(seq 100); do grep -q dropping "$1" && exit 0; sleep 0.1; done; exit 1' _ "$work/um-loss.json"
    transfer 7410 "$work/tl.out" "over two paths, one with Table-1 losses"
    check "the parity rebuilt the blocks that lost packets" jq -e ".received.rebuilt_blocks > 0" "$work/tl.out.json"
    kill -INT "$injector" 2>/dev/null || true
    wait "$injector" 2>/dev/null || true
    log "transport: the injector: $(tail -n 1 "$work/um-loss.json")"
    check "the injector dropped packets, 1 to 3 per lossy block" bash -c '
        tail -n 1 "$1" | jq -e ".dropped > 0 and .lossy_blocks > 0 and .dropped >= .lossy_blocks and .dropped <= 3 * .lossy_blocks"' _ "$work/um-loss.json"

    forward_drop "$A" oifname lb meta l4proto udp
    forward_drop "$A" iifname lb meta l4proto udp
    transfer 7411 "$work/tb.out" "with one of two paths dead both ways (no stuck subflow)"
    check "the balancer re-drew the dead path's subflows, the parity rebuilt their blocks" bash -c '
        jq -e ".sent.redrawn > 0" "$1.sent.json" && jq -e ".received.rebuilt_blocks > 0" "$1.json"' _ "$work/tb.out"
    forward_heal "$A"
}
