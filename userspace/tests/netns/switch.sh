# shellcheck shell=bash
# Section "switch" of userspace/tests/netns.sh, which sources it (the helpers
# it uses are netns.sh's and tests/lib/lib.sh's).
# Switch profiles on a veth port. The host kernel has HTB and bfifo but no
# RED or netem: those profiles must fail whole (the VM tests apply them).
section_switch() {
    log "switch: profiles render, apply idempotently, revert, fail whole"
    local S P; host_pair S P sw 10.92.0 # the port: a0 in S
    check "switch list names the shipped profiles" bash -c "$X switch list | grep -q '^dc-gemini '"
    check "switch show renders Gemini's K = 75 kB at 1 Gbit/s" bash -c "$X switch show dc-gemini --iface a0 | grep -q 'min 75000 max 76500'"
    check "switch show scales with --rate-mbit" bash -c "$X switch show dc-gemini --rate-mbit 100 | grep -q 'min 7500 max 9000'"
    expect_fail "switch show unknown profile" "unknown profile" "$X" switch show nope
    printf 'description = "x"\n[port]\nrate_mbit = 100\nbuffer_bytes = 90000\n[marking]\nkind = "red"\nmin_pct = 50\nmax_pct = 40\nprobability_pct = 100\n' >"$work/bad.toml"
    expect_fail "switch: bad profile file names the line" "bad.toml:8: max_pct" "$X" switch show "$work/bad.toml"
    expect_fail "switch apply --rate-mbit 0" "rate_mbit" "$X" switch apply dc-fifo a0 --netns "$S" --rate-mbit 0
    check "switch apply dc-fifo" "$X" switch apply dc-fifo a0 --netns "$S" --rate-mbit 100
    local q1; q1=$(tc -n "$S" qdisc show dev a0)
    check "qdiscs present: htb root and a bfifo leaf of 67500 bytes (45 packets)" bash -c "grep -q 'qdisc htb 1: root' <<<'$q1' && grep -q 'bfifo 10: parent 1:1 limit 67500b' <<<'$q1'"
    check "switch apply again (idempotent)" "$X" switch apply dc-fifo a0 --netns "$S" --rate-mbit 100
    check "same qdiscs after the second apply" eq "$(tc -n "$S" qdisc show dev a0)" "$q1"
    if modprobe -n sch_red >/dev/null 2>&1 || tc -n "$P" qdisc add dev b0 root red limit 100000 min 10000 max 30000 avpkt 1500 burst 10 bandwidth 100mbit probability 0.1 2>/dev/null; then
        tc -n "$P" qdisc del dev b0 root 2>/dev/null
        log "this kernel has sch_red: skipping the all-or-nothing check"
    else
        expect_fail "switch apply dc-gemini without sch_red fails" "nothing applied" "$X" switch apply dc-gemini a0 --netns "$S"
        check "failed apply left no htb behind" bash -c "! tc -n $S qdisc show dev a0 | grep -q htb"
    fi
    check "switch revert" "$X" switch revert a0 --netns "$S"
    check "switch revert again (nothing to remove)" "$X" switch revert a0 --netns "$S"
    check "no htb after revert" bash -c "! tc -n $S qdisc show dev a0 | grep -q htb"
    expect_fail "switch apply to a missing interface" "tc .*nosuch0|Cannot find device" "$X" switch apply dc-fifo nosuch0 --netns "$S"
}
