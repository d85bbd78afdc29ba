#!/bin/bash
# VM tests of the xdcc kernel modules (run by testbed/vm/run.sh inside the
# test kernel). For each xdcc CC (the algorithm crate's list, CCS in
# kmods/algo/src/lib.rs): load, list, select (global, per netns, per socket),
# a byte-exact transfer over veth with a rate limit and netem delay, ECN
# negotiation, reaction to a RED ECN-marking bottleneck, pacing (OSCAR),
# AMRT's growth on anti-ECN marks and its guard against classic ECN marks,
# tunables (read back, EINVAL, effect), and rmmod refused while in use;
# then robustness: every tunable file fuzzed, and 30 load/transfer/unload
# cycles with tunables rewritten mid-transfer; then the xdcc CLI.
#   run.sh testbed/vm/tests/kmods.sh [CC...]     (default: all of them, all parts)
#   run.sh testbed/vm/tests/kmods.sh robustness [CC...]   (that part only)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
only_robustness=0
if [[ ${1:-} == robustness ]]; then only_robustness=1; shift; fi
source "$here/lib.sh"
select_ccs "$root" "$@" || { echo "0 passed, 1 failed"; exit 1; }

sysctl_dir() { echo "/proc/sys/net/xdcc/$1"; }

# pacing_while_rtt_above MS: reads `ss -ti` samples on stdin and prints the
# pacing rate (bit/s) of each sample whose smoothed RTT exceeds its min RTT
# by more than MS milliseconds, one per line.
pacing_while_rtt_above() {
    awk -v above="$1" '{r = ""; m = ""; p = ""
        for (i = 1; i <= NF; i++) {
            if ($i ~ /^rtt:/) { split(substr($i, 5), a, "/"); r = a[1] }
            if ($i ~ /^minrtt:/) m = substr($i, 8)
            if ($i == "pacing_rate") p = $(i + 1)
        }
        if (r != "" && m != "" && p != "" && r - m > above) print p}' | while read -r p; do to_bps "$p"; echo; done
}

test_cc() {
    local cc=$1 mod="tcp_$1" ko="$root/kmods/tcp_$1.ko" ecn=1
    [[ $cc == oscar ]] && ecn=0
    echo "=== $mod"

    check "$mod: insmod" insmod "$ko"
    configure_cc "$cc"
    check "$mod: listed in tcp_available_congestion_control" \
        grep -qw "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control
    check "$mod: sysctl selects it globally" sysctl -qw net.ipv4.tcp_congestion_control="$cc"
    check "$mod: global default reads back" test "$(sysctl -n net.ipv4.tcp_congestion_control)" = "$cc"
    sysctl -qw net.ipv4.tcp_congestion_control=cubic

    # The fifo/RED comparison isolates the reaction to ECN: each CC's other
    # signals that limit the window on a queue are off for both runs.
    # QuickAdapt (UnoCC, SMaRTT) cuts when the ACK rate collapses or the delay
    # grows, which a stalled TCG guest's stretched RTTs set off in the fifo
    # run too (a UnoCC fifo median of 13 packets once failed the check);
    # Gemini cuts on queueing > T = 5 ms: T = 1 s leaves ECN its only signal.
    local ecn_only=() saved=() kv
    case $cc in
        uno|smartt) ecn_only=(qa_beta_q16=0) ;;
        gemini) ecn_only=(t_ns=1000000000) ;;
    esac
    for kv in "${ecn_only[@]}"; do
        saved+=("${kv%%=*}=$(cat "$(sysctl_dir "$cc")/${kv%%=*}")")
        echo "${kv#*=}" >"$(sysctl_dir "$cc")/${kv%%=*}"
    done

    # Bottleneck without marking: byte-exact transfer, CC on the socket.
    net_up fifo || { bad "$mod: network setup"; return; }
    check "$mod: selectable as the default inside a netns" ip netns exec snd sysctl -qw net.ipv4.tcp_congestion_control="$cc"
    transfer "$cc" 4000000
    check "$mod: 4 MB transfer arrives complete and byte-exact" test "$XFER_OK" = 1
    check "$mod: ss -tin shows the CC on the socket" grep -qw "$cc" <<<"$SS_LINES"
    local fifo_cwnd=$MED_CWND fifo_max=$MAX_CWND
    echo "  fifo: median cwnd $fifo_cwnd (max $MAX_CWND), median rtt ${MED_RTT} ms, last pacing ${LAST_PACING:-none}"
    echo "  ss sample: $(tail -1 <<<"$SS_LINES")"
    net_down

    # setsockopt(TCP_CONGESTION) per socket while the default is cubic.
    net_up fifo
    ip netns exec snd sysctl -qw net.ipv4.tcp_congestion_control=cubic
    ip netns exec rcv $xfer serve 5002 >/dev/null &
    sleep 0.3
    local used
    used=$(ip netns exec snd $xfer send 10.9.2.2 5002 100000 --cc "$cc" | awk '{print $3}')
    wait
    check "$mod: setsockopt(TCP_CONGESTION) selects it for one socket" test "$used" = "$cc"
    net_down

    # RED ECN-marking bottleneck. Under TCG the router's HTB timer sometimes
    # stalls ("htb: too many events"), RED drops the ECT SYN and the
    # connection falls back to no ECN: such a run is repeated once.
    # (The sender holds the connection 1.5 s after its last write, so that
    # an `xdcc flows` call, up to a second under TCG, finds the flow: a 4 MB
    # transfer once ended before any did.)
    net_up red
    SEND_ARGS="--hold 1.5" transfer "$cc" 4000000
    if ((ecn)) && [[ $XFER_OK == 1 && $DELIVERED_CE == 0 ]]; then
        echo "  red/ecn: no CE echoed (ECN not negotiated?): repeating the run once"
        net_down; sleep 0.5; net_up red
        SEND_ARGS="--hold 1.5" transfer "$cc" 4000000
    fi
    check "$mod: transfer through a RED/ECN bottleneck is byte-exact" test "$XFER_OK" = 1
    # get_info: `xdcc flows` decodes the module's state of the flow.
    # (DCTCP keeps no base RTT: its α, which marks raise, instead.)
    check "$mod: xdcc flows shows the module's state (get_info; ecn_ok=$ecn, base RTT > 0 or DCTCP's α > 0)" \
        python3 -c 'import json,sys; rows=[r for r in json.loads(sys.argv[1]) if r["remote"].endswith(":5001") and r.get("cc_state")]
c=rows[0]["cc_state"]; v=c["values"]; print("  cc_state:", c); assert c["ecn_ok"]==(sys.argv[2]=="1") and v.get("base_rtt_us", v.get("alpha_q16", 0))>0' "${FLOWS_JSON:-[]}" "$ecn"
    local red_cwnd=$MED_CWND
    echo "  red/ecn: median cwnd $red_cwnd (fifo $fifo_cwnd), median rtt ${MED_RTT} ms, CE-marked packets delivered $DELIVERED_CE, last pacing ${LAST_PACING:-none}"
    echo "  ss sample: $(tail -1 <<<"$SS_LINES")"
    if ((ecn)); then
        # ECN must have been negotiated for the receiver to echo marks.
        check "$mod: ECN negotiated and CE marks echoed (delivered_ce $DELIVERED_CE)" test "$DELIVERED_CE" -gt 0
        # (AMRT's marks mean spare bandwidth, not congestion: test_amrt.)
        [[ $cc == amrt ]] ||
            check "$mod: reacts to ECN marks (median cwnd $red_cwnd < $fifo_cwnd without marking)" test "$red_cwnd" -lt "$fifo_cwnd"
    fi
    net_down
    for kv in "${saved[@]}"; do echo "${kv#*=}" >"$(sysctl_dir "$cc")/${kv%%=*}"; done

    # Tunables: read back, reject bad values, change behaviour.
    local d
    d=$(sysctl_dir "$cc")
    check "$mod: tunables exist under $d" test -d "$d"
    local first
    first=$(ls "$d" | head -1)
    check "$mod: tunable $first reads back" test -n "$(cat "$d/$first")"
    local knob good badv effect_knob effect_val
    case $cc in
        # UnoCC: a 4-BDP start (28 packets here). In the fifo it stays in
        # slow start, so its window never falls below the start (a max-cwnd
        # comparison with the default start is decided by the receive window
        # and the guest's timing instead). QuickAdapt is off for this run
        # (qa_beta_q16 = 0): a guest stall that halves the bytes acked in one
        # QA period would otherwise cut the window (CI saw min cwnd 5).
        uno) knob=qa_beta_q16; good=16384; badv=70000; effect_knob=init_bdp_q16; effect_val=262144 ;;
        gemini) knob=beta_q16; good=9830; badv=70000; effect_knob=t_ns; effect_val=500000 ;;
        smartt) knob=gamma_q16; good=32768; badv=70000; effect_knob=max_wnd_bdp_q16; effect_val=32768 ;;
        oscar) knob=u_ai_q16; good=131; badv=0; effect_knob=rate_bytes_per_sec; effect_val=250000 ;;
        amrt) knob=max_wnd_bdp_q16; good=196608; badv=0; effect_knob=init_bdp_q16; effect_val=16384 ;;
        # DCTCP: Linux's dctcp_shift_g range (0..10); a 40-packet initial window.
        dctcp) knob=shift_g; good=5; badv=11; effect_knob=init_cwnd_pkts; effect_val=40 ;;
    esac
    local before
    before=$(cat "$d/$knob")
    check "$mod: $knob accepts $good" bash -c "echo $good > $d/$knob"
    check "$mod: $knob reads back $good" test "$(cat "$d/$knob")" = "$good"
    if bash -c "echo $badv > $d/$knob" 2>/tmp/err; then
        bad "$mod: $knob=$badv must fail with EINVAL"
    else
        check "$mod: $knob=$badv fails with EINVAL" grep -q "Invalid argument" /tmp/err
    fi
    check "$mod: the rejected write changed nothing" test "$(cat "$d/$knob")" = "$good"
    if bash -c "echo not-a-number > $d/$knob" 2>/dev/null; then bad "$mod: garbage accepted"; else ok "$mod: garbage rejected"; fi
    echo "$before" >"$d/$knob"

    # Effect of a tunable on behaviour, against the defaults measured above.
    local eb
    eb=$(cat "$d/$effect_knob")
    local qa_before=""
    if [[ $cc == uno ]]; then qa_before=$(cat "$d/qa_beta_q16"); echo 0 >"$d/qa_beta_q16"; fi
    check "$mod: set $effect_knob=$effect_val" bash -c "echo $effect_val > $d/$effect_knob"
    # (DCTCP's initial window shows in the window the CC writes at the first
    # ACK, which a 200 ms path keeps for several samples.)
    if [[ $cc == dctcp ]]; then RTT=200ms net_up fifo; else net_up fifo; fi
    # (OSCAR's run is at μ = 2 Mbit/s: a smaller transfer.)
    if [[ $cc == oscar ]]; then transfer "$cc" 600000; else transfer "$cc" 2000000; fi
    if [[ $cc == oscar ]]; then
        local p
        p=$(to_bps "$LAST_PACING")
        echo "  $effect_knob=$effect_val: pacing $LAST_PACING, max cwnd $MAX_CWND"
        # μ lowered to 250 kB/s = 2 Mbit/s: u·μ ≤ u_max·μ = 4 Mbit/s.
        check "$mod: lowering μ lowers the pacing rate to ≤ u_max·μ (${LAST_PACING})" test "$p" -gt 0 -a "$p" -le 4000000
    elif [[ $cc == uno ]]; then
        echo "  $effect_knob=$effect_val: min cwnd $MIN_CWND, max $MAX_CWND (default run max: $fifo_max)"
        check "$mod: a 4-BDP start holds the window at >= 20 packets from the first sample (min $MIN_CWND)" test "$MIN_CWND" -ge 20
    elif [[ $cc == dctcp ]]; then
        # Until the first ACK the socket has the stack's 10 packets; the CC's
        # window from the first ACK is its initial window plus what that
        # round acknowledges: 40 + up to 10 here, at most 10 + 10 with the
        # default.
        echo "  $effect_knob=$effect_val: first cwnd after an ACK ${FIRST_CWND:-none}, max $MAX_CWND"
        check "$mod: a 40-packet initial window is the window after the first ACK (first ${FIRST_CWND:-none} >= 40)" test "${FIRST_CWND:-0}" -ge 40
    else
        echo "  $effect_knob=$effect_val: max cwnd $MAX_CWND (default run: $fifo_max)"
        check "$mod: $effect_knob=$effect_val changes the window (max $MAX_CWND vs $fifo_max)" test "$MAX_CWND" -lt "$fifo_max"
    fi
    echo "$eb" >"$d/$effect_knob"
    [[ -n $qa_before ]] && echo "$qa_before" >"$d/qa_beta_q16"
    net_down

    # Pacing with marking (OSCAR): pacing rate set, below line rate when a
    # queue stands above the target (two flows on the bottleneck).
    if [[ $cc == oscar ]]; then
        # A cubic flow joins and keeps a standing queue far above OSCAR's
        # target. OSCAR must start first so that its base RTT is the real
        # one: cubic is started once OSCAR's connection has delivered 20
        # packets (a fixed delay raced the guest's slow process start-up under
        # TCG, and OSCAR then took cubic's queue for its base RTT).
        net_up fifo
        ip netns exec rcv $xfer serve 5004 >/dev/null &
        ip netns exec snd bash -c 'for _ in $(seq 1 200); do
                ss -tinH dst 10.9.2.2:5001 | grep -Eq " delivered:([2-9][0-9]|[0-9]{3,})" && break; sleep 0.05; done
            exec '"$xfer"' send 10.9.2.2 5004 8000000 --cc cubic' >/dev/null &
        # 5 MB: long enough that cubic, however late the guest starts it,
        # holds its queue through the second half of OSCAR's samples.
        transfer "$cc" 5000000
        wait
        # Judged on the samples taken while the queue stood above the target
        # (smoothed RTT > min RTT + 2 × target_qdelay): cubic may finish first,
        # and OSCAR alone on an empty link rightly paces above line rate (u up
        # to u_max = 2), so a median over the second half of the transfer
        # once failed at 20.7 Mbit/s when cubic had finished early.
        local target_ms queued
        target_ms=$(awk -v ns="$(cat "$(sysctl_dir oscar)/target_qdelay_ns")" 'BEGIN{print ns / 1e6}')
        queued=$(pacing_while_rtt_above "$(awk -v t="$target_ms" 'BEGIN{print 2 * t}')" <<<"$SS_LINES" | sort -n)
        local n_queued med_queued
        n_queued=$(grep -c . <<<"$queued")
        med_queued=$(sed -n "$(( (n_queued + 1) / 2 ))p" <<<"$queued")
        echo "  against cubic: median pacing ${med_queued:-none}bps over the $n_queued samples with the queue above 2 x target (${target_ms} ms; all samples' second half: ${MED_PACING}bps, last $LAST_PACING), median cwnd $MED_CWND"
        check "$mod: the queue stood above target in >= 3 samples (cubic ran alongside: $n_queued)" test "$n_queued" -ge 3
        check "$mod: pacing_rate set and below line rate while the queue is above target (${med_queued:-none}bps)" \
            test "${med_queued:-0}" -gt 0 -a "${med_queued:-0}" -lt 20000000
        net_down
    fi

    [[ $cc == amrt ]] && test_amrt "$fifo_cwnd"

    # rmmod: refused while a socket or a netns default uses the CC.
    net_up fifo
    ip netns exec rcv $xfer serve 5003 >/dev/null &
    sleep 0.3
    ip netns exec snd $xfer send 10.9.2.2 5003 10000 --cc "$cc" --hold 4 >/dev/null &
    for _ in $(seq 1 50); do
        ip netns exec snd ss -tnH state established dport = :5003 | grep -q . && break
        sleep 0.1
    done
    if rmmod "$mod" 2>/dev/null; then bad "$mod: rmmod must be refused while a socket uses it"; insmod "$ko"; else ok "$mod: rmmod refused while a socket uses it"; fi
    wait
    ip netns exec snd sysctl -qw net.ipv4.tcp_congestion_control="$cc"
    sleep 0.5
    if rmmod "$mod" 2>/dev/null; then bad "$mod: rmmod must be refused while a netns default uses it"; insmod "$ko"; else ok "$mod: rmmod refused while a netns default uses it"; fi
    net_down
    sleep 0.5
    # (net_down lets closing connections finish; an orphan would hold the CC
    # until its timers end. Up to 60 s; what still holds it is printed.)
    local waited=0
    while ! rmmod "$mod" 2>/dev/null && ((waited < 60)); do
        ((waited == 0)) && { echo "  $mod still in use; sockets on it:"; ss -taniH 2>/dev/null | grep -B1 -w "$cc" | head -6; }
        sleep 2; waited=$((waited + 2))
    done
    ((waited > 0)) && echo "  $mod: unused after ${waited}s"
    check "$mod: rmmod succeeds once unused" sh -c "! grep -qw ^$mod /proc/modules"
    check "$mod: gone from tcp_available_congestion_control" \
        sh -c "! grep -qw $cc /proc/sys/net/ipv4/tcp_available_congestion_control"
}

# AMRT (amrt-icpp20 §4.3): its window grows on anti-ECN marks (`xdcc
# mark-amrt` at the bottleneck's dequeue side: CE = the link was idle for an
# MTU before the packet) and stays without them (the receiver-driven
# baseline, spare_increase = 0); behind a classic RED/ECN port marking from
# 20 packets of queue, its guard (mark_max_qdelay_ns, 16 MTUs = 9.6 ms here)
# ignores the congestion marks, and with the guard off the same marks grow
# the window into the queue: the mistake the guard protects from.
# $1: median cwnd of the plain fifo run (printed for comparison).
test_amrt() {
    local fifo_cwnd=$1 d=/proc/sys/net/xdcc/amrt X="$root/target/release/xdcc" out k
    [[ -x $X ]] || { bad "tcp_amrt: $X not built (cargo build --release -p xdcc)"; return; }
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
        ip netns exec rcv "$X" mark-amrt --iface vr --rate-mbit 20 >"$out/marker.json" 2>"$out/marker.log" &
        local m=$! i
        for i in $(seq 1 300); do [[ -s $out/marker.json ]] && break; sleep 0.1; done
        FLOWS_REFRESH=1 SEND_ARGS="--hold 1.5" transfer amrt 1500000
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
    check "tcp_amrt: transfer with the anti-ECN marker is byte-exact" test "$XFER_OK" = 1
    check "tcp_amrt: spare-bandwidth marks echoed and believed (delivered_ce $DELIVERED_CE, spare_marks $sm)" \
        test "$DELIVERED_CE" -gt 0 -a "$sm" -gt 0
    echo 0 >"$d/spare_increase"
    marked_run
    sm=$(spare spare_marks)
    echo "  baseline (spare_increase=0) with the marker: median cwnd $MED_CWND, max $MAX_CWND, delivered_ce $DELIVERED_CE, spare_marks $sm"
    check "tcp_amrt: spare_increase=0 ignores the marks (delivered_ce $DELIVERED_CE > 0, spare_marks $sm = 0)" \
        test "$DELIVERED_CE" -gt 0 -a "$sm" = 0
    # Both started at 1/16 of a BDP (at most 5 packets even from a 10x
    # handshake RTT); only the marks can take a window past that, towards
    # the 2-BDP cap (about 14 packets).
    check "tcp_amrt: the marks grow the window (max cwnd $grown with them, $MAX_CWND without)" \
        test "$grown" -gt "$MAX_CWND"
    echo 1 >"$d/spare_increase"

    # Classic RED/ECN: start at 5 BDP (a 4-BDP = 16 ms standing queue, in
    # RED's marking range), cap 16 BDP.
    echo 327680 >"$d/init_bdp_q16"
    echo 1048576 >"$d/max_wnd_bdp_q16"
    net_up reddeep
    FLOWS_REFRESH=1 SEND_ARGS="--hold 1.5" transfer amrt 4000000
    net_down
    ign=$(spare ignored_marks); sm=$(spare spare_marks)
    echo "  RED from 20 packets, guard ${saved[mark_max_qdelay_ns]} ns: max cwnd $MAX_CWND, median rtt $MED_RTT ms, delivered_ce $DELIVERED_CE, ignored_marks $ign, spare_marks $sm"
    check "tcp_amrt: behind classic ECN the congestion marks are ignored (ignored_marks $ign > 0, > 10 x spare_marks $sm)" \
        test "$ign" -gt 0 -a "$ign" -gt $((10 * sm))
    echo 0 >"$d/mark_max_qdelay_ns"
    net_up reddeep
    FLOWS_REFRESH=1 SEND_ARGS="--hold 1.5" transfer amrt 4000000
    net_down
    ign=$(spare ignored_marks); sm=$(spare spare_marks)
    echo "  same port, guard off: max cwnd $MAX_CWND, median rtt $MED_RTT ms, spare_marks $sm, ignored_marks $ign"
    check "tcp_amrt: with the guard off the same marks grow the window (spare_marks $sm > 0)" test "$sm" -gt 0 -a "$ign" = 0
    for k in "${!saved[@]}"; do echo "${saved[$k]}" >"$d/$k"; done
    rm -rf "$out"
}

# The xdcc CLI against the real modules: load/unload, selection, tunables.
test_cli() {
    local X="$root/target/release/xdcc"
    echo "=== xdcc CLI"
    [[ -x $X ]] || { bad "xdcc CLI: $X not built (cargo build --release -p xdcc)"; return; }
    export XDCC_MODULE_DIR="$root/kmods"
    # check (preflight): what this guest really has. Its kernel has modules
    # (ours, built for it) and no BTF: every CC runs as tcp_<cc>, none as
    # bpf_<cc>, and it says why.
    local cj
    cj=$("$X" check -j); local crc=$?
    check "cli: check exits 0 (every CC has a backend)" test "$crc" = 0
    check "cli: check finds no BTF" test "$(echo "$cj" | jq -r '.checks[] | select(.name == "BTF") | .ok')" = false
    check "cli: check finds module loading allowed" test "$(echo "$cj" | jq -r '.checks[] | select(.name == "kernel modules") | .ok')" = true
    check "cli: check: every CC loadable as tcp_<cc>" test "$(echo "$cj" | jq -r '[.ccs[].module.ok] | all')" = true
    check "cli: check: no CC as bpf_<cc>, BTF named" test "$(echo "$cj" | jq -r '[.ccs[].bpf | (.ok == false and (.why | contains("BTF")))] | all')" = true
    check "cli: module load tcp_uno" "$X" module load tcp_uno
    check "cli: module list --json shows it loaded" sh -c "$X module list --json | grep -A2 '\"tcp_uno\"' | grep -q '\"loaded\": true'"
    check "cli: second load refused (already loaded)" sh -c "$X module load uno 2>&1 | grep -q 'already loaded'"
    check "cli: cc list shows uno available" sh -c "$X cc list | grep '^available' | grep -qw uno"
    check "cli: cc set uno (global)" "$X" cc set uno
    check "cli: global default is uno" test "$(sysctl -n net.ipv4.tcp_congestion_control)" = uno
    "$X" cc set cubic >/dev/null
    ip netns add clins
    check "cli: cc set uno --netns" "$X" cc set uno --netns clins
    check "cli: namespace default is uno" test "$(ip netns exec clins sysctl -n net.ipv4.tcp_congestion_control)" = uno
    check "cli: unload refused while a namespace default uses it" sh -c "$X module unload tcp_uno 2>&1 | grep -q 'in use'"
    ip netns del clins
    sleep 0.5
    local d=/proc/sys/net/xdcc/uno k0
    k0=$(cat $d/k_bytes)
    check "cli: tunable get = the sysctl" test "$("$X" tunable get uno k_bytes)" = "$k0"
    check "cli: tunable list has every file" test "$("$X" tunable list uno | wc -l)" = "$(ls $d | wc -l)"
    check "cli: tunable set k_bytes" "$X" tunable set uno k_bytes 30000
    check "cli: the module took it" test "$(cat $d/k_bytes)" = 30000
    check "cli: out-of-range value refused before writing" sh -c "! $X tunable set uno qa_beta_q16 99999999 2>/dev/null"
    check "cli: the module's value unchanged" test "$(cat $d/qa_beta_q16)" = 32768
    check "cli: bad network refused (mtu 10)" sh -c "! $X tunable set uno net_mtu 10 2>/dev/null"
    check "cli: net_link_rate_mbps re-derives the set" sh -c "$X tunable set uno net_link_rate_mbps 1000 && test \$(cat $d/rate_bytes_per_sec) = 125000000"
    check "cli: module unload" "$X" module unload tcp_uno
    check "cli: module list shows it unloaded" sh -c "$X module list | grep tcp_uno | grep -qw no"
    check "cli: tunables of an unloaded module: clear error" sh -c "$X tunable list uno 2>&1 | grep -q 'not loaded'"
}

# Every tunable file of every CC against bad and random input: garbage,
# negatives, overflows, a 5000-digit number, odd formats — EINVAL and the
# value unchanged; 12 random values per file (64-bit or below 100000) — accepted values read
# back, rejected ones change nothing. (Kernel warnings fail the whole run:
# run.sh scans the log.)
test_tunable_fuzz() {
    local cc=$1 d=/proc/sys/net/xdcc/$1 f v before after bad_total=0 bad_ok=0 rnd_acc=0 rnd_rej=0 broken=""
    insmod "$root/kmods/tcp_$cc.ko" || { bad "fuzz: insmod tcp_$cc"; return; }
    local huge
    huge=$(head -c 5000 /dev/zero | tr '\0' 9)
    for f in "$d"/*; do
        before=$(cat "$f")
        # (Not "" or "1 2": an empty write is no write, and the sysctl core
        # takes "1 2" as two writes, the second setting 2.)
        for v in garbage -1 -18446744073709551615 18446744073709551616 99999999999999999999999 "$huge" 0x1g 1.5 $'\x01'; do
            bad_total=$((bad_total + 1))
            if printf '%s' "$v" >"$f" 2>/dev/null; then
                broken+=" ${f##*/}<-'${v:0:12}'"
                echo "$before" >"$f"
            elif [[ $(cat "$f") == "$before" ]]; then
                bad_ok=$((bad_ok + 1))
            else
                broken+=" ${f##*/}:changed-on-EINVAL"
            fi
        done
        for _ in $(seq 1 12); do
            v=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
            (( RANDOM % 2 )) && v=$((v % 100000))
            if echo "$v" >"$f" 2>/dev/null; then
                after=$(cat "$f")
                rnd_acc=$((rnd_acc + 1))
                [[ $after == "$v" || ${f##*/} == net_* ]] || broken+=" ${f##*/}:$v->$after"
                echo "$before" >"$f" 2>/dev/null
            else
                rnd_rej=$((rnd_rej + 1))
                [[ $(cat "$f") == "$before" ]] || broken+=" ${f##*/}:changed-by-$v"
            fi
        done
        [[ $(cat "$f") == "$before" ]] || { echo "$before" >"$f"; }
    done
    echo "  fuzz tcp_$cc: $bad_ok/$bad_total bad writes refused unchanged; random values: $rnd_acc accepted (read back), $rnd_rej refused"
    check "fuzz: tcp_$cc refuses every bad write and changes nothing${broken:+ ($broken)}" test -z "$broken" -a "$bad_ok" = "$bad_total"
    rmmod "tcp_$cc" || bad "fuzz: rmmod tcp_$cc"
}

# A transfer without transfer()'s ss sampler (cheap under TCG): sets XFER_OK.
quick_transfer() {
    local cc=$1 bytes=$2 out srv s r
    out=$(mktemp -d)
    ip netns exec snd sysctl -qw net.ipv4.tcp_congestion_control="$cc"
    ip netns exec rcv sysctl -qw net.ipv4.tcp_congestion_control="$cc"
    ip netns exec rcv $xfer serve 5001 >"$out/rcv" &
    srv=$!
    ip netns exec snd $xfer send 10.9.2.2 5001 "$bytes" >"$out/snd"
    wait $srv
    s=$(awk '{print $1, $2}' "$out/snd")
    r=$(cat "$out/rcv")
    XFER_OK=0
    [[ -n $s && "$s" == "$r" && ${s%% *} == "$bytes" ]] && XFER_OK=1
    rm -rf "$out"
}

# 30 load / transfer / unload cycles over the CCs, each transfer running
# while a second process rewrites the module's tunables (random values from
# half to twice the current ones, every 0.1 s): every transfer byte-exact,
# every unload clean.
test_churn() {
    # (Not `n`: lib.sh's net_up loops over a global n.)
    local ncc=${#ccs[@]} i cc d ok_x=0 ok_rm=0 writer
    for i in $(seq 0 29); do
        cc=${ccs[$((i % ncc))]}
        d=/proc/sys/net/xdcc/$cc
        insmod "$root/kmods/tcp_$cc.ko" || continue
        configure_cc "$cc"
        net_up fifo
        (
            for _ in $(seq 1 200); do
                for f in "$d"/*; do
                    case ${f##*/} in net_*|rate_bytes_per_sec|mtu|mss) continue ;; esac
                    v=$(cat "$f"); v=$(( v / 2 + RANDOM % (v + 2) ))
                    echo "$v" >"$f" 2>/dev/null
                done
                sleep 0.1
            done
        ) &
        writer=$!
        quick_transfer "$cc" 300000
        kill $writer 2>/dev/null; wait $writer 2>/dev/null
        [[ $XFER_OK == 1 ]] && ok_x=$((ok_x + 1))
        net_down
        local w=0
        while ! rmmod "tcp_$cc" 2>/dev/null && ((w < 30)); do sleep 1; w=$((w + 1)); done
        grep -qw "^tcp_$cc" /proc/modules || ok_rm=$((ok_rm + 1))
    done
    echo "  churn: 30 cycles over ${ccs[*]}: $ok_x transfers byte-exact, $ok_rm clean unloads"
    check "churn: 30 load/transfer/unload cycles with tunables rewritten mid-transfer (transfers $ok_x/30, unloads $ok_rm/30)" \
        test "$ok_x" = 30 -a "$ok_rm" = 30
}

FLOWS_CLI="$root/target/release/xdcc"
[[ -x $FLOWS_CLI ]] || FLOWS_CLI=""
if ((only_robustness == 0)); then
    for cc in "${ccs[@]}"; do
        test_cc "$cc"
    done
fi
if (($# == 0)) || ((only_robustness)); then
    echo "=== robustness"
    for cc in "${ccs[@]}"; do test_tunable_fuzz "$cc"; done
    test_churn
fi
(($# || only_robustness)) || test_cli
echo "${pass} passed, ${fail} failed"
((fail == 0))
