# shellcheck shell=bash
# Section "apply" of userspace/tests/netns.sh, which sources it (the helpers
# it uses are netns.sh's and tests/lib/lib.sh's).
# `xdcc apply` on this host's kernel (BPF CCs), in a namespace (whose
# default CC it sets): registers what the file names with its network and
# tunables, then nothing to change; --check reports drift with its exit
# status; a hand-made change is drift and apply undoes it; a bad file is
# refused with its line and changes nothing.
section_apply() {
    log "apply: a config file applied, idempotent, drift checked, bad files refused"
    local S; mkns S ap
    for c in uno gemini; do
        grep -qw "bpf_$c" /proc/sys/net/ipv4/tcp_available_congestion_control && { log "bpf_$c already registered: apply section skipped"; return 0; }
    done
    cat >"$work/xdcc.toml" <<'TOML'
default_cc = "bpf_uno"
[cc.uno]
backend = "bpf"
[cc.uno.net]
link_rate_mbps = 1000
intra_rtt_us = 50
inter_rtt_us = 2000
[cc.uno.tunables]
k_bytes = 30000
[cc.gemini]
preset = "uno-artifact"
TOML
    local out rc
    rc=0; out=$("$X" -n "$S" apply --check --config "$work/xdcc.toml" 2>&1) || rc=$?
    check "apply --check before: drift, exit 1" eq "$rc" 1
    check "apply --check before: registrations and the default named, nothing else" eq "$(grep -c '^drift: ' <<<"$out")" 3
    check "apply --check changed nothing" bash -c "! grep -qw bpf_uno /proc/sys/net/ipv4/tcp_available_congestion_control"
    rc=0; out=$("$X" -n "$S" apply --config "$work/xdcc.toml" 2>&1) || rc=$?
    log "apply: $(echo "$out" | tr '\n' ';' | cut -c1-300)"
    check "apply: exit 0" eq "$rc" 0
    check "apply: bpf_uno and bpf_gemini registered" bash -c "grep -qw bpf_uno /proc/sys/net/ipv4/tcp_available_congestion_control && grep -qw bpf_gemini /proc/sys/net/ipv4/tcp_available_congestion_control"
    check "apply: bpf_uno's network written" eq "$("$X" tunable get bpf_uno net_link_rate_mbps)" 1000
    check "apply: bpf_uno's tunable written after it" eq "$("$X" tunable get bpf_uno k_bytes)" 30000
    check "apply: gemini's preset written (uno-artifact: alpha gain 0.5)" eq "$("$X" tunable get bpf_gemini alpha_gain_q16)" 32768
    check "apply: the namespace's default is bpf_uno" eq "$(in_ns "$S" sysctl -n net.ipv4.tcp_congestion_control)" bpf_uno
    check "apply: the host's default untouched" bash -c "[[ \$(sysctl -n net.ipv4.tcp_congestion_control) != bpf_uno ]]"
    check "apply again: nothing to change" bash -c "$X -n $S apply --config $work/xdcc.toml | grep -q 'nothing to change'"
    check "apply --check after: no drift, exit 0" "$X" -n "$S" apply --check --config "$work/xdcc.toml"
    "$X" tunable set bpf_uno ai_bdp_ppm 5 >/dev/null
    rc=0; out=$("$X" -n "$S" apply --check --config "$work/xdcc.toml" 2>&1) || rc=$?
    check "a tunable changed by hand: drift, exit 1" eq "$rc" 1
    check "the drift names it with both values" bash -c "grep -q '^drift: bpf_uno.ai_bdp_ppm 5 -> 1000' <<<'$out'"
    check "apply puts it back" bash -c "$X -n $S apply --config $work/xdcc.toml | grep -q 'bpf_uno.ai_bdp_ppm 5 -> 1000' && [[ \$($X tunable get bpf_uno ai_bdp_ppm) == 1000 ]]"
    # A bad file: the line named, exit 5 (bad value), nothing changed.
    in_ns "$S" sysctl -qw net.ipv4.tcp_congestion_control=reno
    sed 's/^k_bytes = 30000/k_bytes = 30000\nqa_beta_q16 = 99999999/' "$work/xdcc.toml" >"$work/bad.toml"
    rc=0; out=$("$X" -n "$S" apply --config "$work/bad.toml" 2>&1) || rc=$?
    check "bad file: exit 5" eq "$rc" 5
    check "bad file: the line and key named" bash -c "grep -q 'bad.toml:10: .*qa_beta_q16' <<<'$out'"
    check "bad file: nothing changed (default still reno, k_bytes 30000)" bash -c "[[ \$(ip netns exec $S sysctl -n net.ipv4.tcp_congestion_control) == reno && \$($X tunable get bpf_uno k_bytes) == 30000 ]]"
    expect_fail "apply: a missing file is named" "no configuration file" "$X" apply --config "$work/nosuch.toml"
    in_ns "$S" sysctl -qw net.ipv4.tcp_congestion_control=reno
    for c in uno gemini; do "$X" cc unload $c --bpf >/dev/null; done
}
