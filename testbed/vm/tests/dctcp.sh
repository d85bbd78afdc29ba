#!/bin/bash
# xdcc's DCTCP (kmods/tcp_dctcp.ko, the algorithm crate's dctcp.rs) against
# Linux's own tcp_dctcp (the test kernel builds it as a module; build.sh
# copies it to kmods/linux/tcp_dctcp.ko). Both register `dctcp`, so they run
# one after the other, alternating, on the same bottleneck: 20 Mbit/s, base
# RTT 4 ms (BDP 7 packets), DCTCP step marking at K = 20 packets. Both are
# paced the same way: the sender's interface has the fq qdisc, which paces
# every TCP socket at its pacing rate, and xdcc's rate uses Linux's ratios
# (window_pacing_pct = 120, 200 in slow start, as tcp_update_pacing_rate
# sets for Linux's DCTCP). (Without a rate, as with window_pacing_pct = 0,
# TSO autosizing sends 64 KB bursts: one ACK per ten packets.) They agree
# when the completion time (handshake to last byte acknowledged), the window,
# the RTT (the queue), the port's marks and α match within the stated
# tolerances; this guest's timing noise between two runs of the same CC is
# up to ~10 % (the spread is printed; testbed/notes/2026-11-28-flakes.md).
#   run.sh testbed/vm/tests/dctcp.sh
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
source "$here/lib.sh"
X=$XDCC_BIN
linux_ko=$root/kmods/linux/tcp_dctcp.ko
xdcc_ko=$root/kmods/tcp_dctcp.ko
for f in "$linux_ko" "$xdcc_ko" "$X"; do
    [[ -e $f ]] || { bad "$f missing (testbed/kernel/build.sh; cargo build --release -p xdcc)"; tap_done; exit 1; }
done
BYTES=6000000

unload() {
    local w=0
    while grep -qw ^tcp_dctcp /proc/modules && ! rmmod tcp_dctcp 2>/dev/null && ((w < 60)); do sleep 2; w=$((w + 2)); done
    ! grep -qw ^tcp_dctcp /proc/modules
}

# run IMPL: one transfer with IMPL's tcp_dctcp loaded; appends
# "impl ms med_cwnd med_rtt_ms marks alpha_1024" to $results (ms: from the
# handshake to the last byte's acknowledgment).
run() {
    local impl=$1 ko alpha marks
    [[ $impl == linux ]] && ko=$linux_ko || ko=$xdcc_ko
    unload || { bad "$impl: the other tcp_dctcp does not unload"; return; }
    insmod "$ko" || { bad "$impl: insmod $ko"; return; }
    # A namespace may only make an allowed CC its default, and Linux's DCTCP
    # is not TCP_CONG_NON_RESTRICTED (xdcc's CCs are).
    cat /proc/sys/net/ipv4/tcp_available_congestion_control >/proc/sys/net/ipv4/tcp_allowed_congestion_control
    if [[ $impl == xdcc ]]; then
        configure_cc dctcp
        echo 120 >/proc/sys/net/xdcc/dctcp/window_pacing_pct
        echo 200 >/proc/sys/net/xdcc/dctcp/window_pacing_ss_pct
    fi
    # xdcc's alpha is read with `xdcc flows` while the flow sends (one call
    # per ss sample, up to a second of the guest's CPU each under TCG). Both
    # implementations run that observer, so neither transfer shares the
    # guest's CPUs with more than the other (with it on xdcc's runs alone,
    # xdcc's completion time was 15-18 % longer in three CIs of four while
    # its window and RTT matched Linux's).
    export FLOWS_CLI=$X FLOWS_REFRESH=1
    net_up step || { bad "$impl: network setup"; return; }
    tc -n snd qdisc add dev s0 root fq
    SEND_ARGS="--hold 1.5" transfer dctcp "$BYTES"
    local red
    red=$(tc -n rtr -s qdisc show dev r1 | grep -o 'marked [0-9]* early [0-9]* pdrop [0-9]*')
    marks=$(awk '{print $2}' <<<"$red")
    # The window and RTT while the flow sends, past its first fifth (slow
    # start) and before its last bytes: the samples of the hold after the
    # transfer (kept for `xdcc flows`) are idle.
    read -r cwnd rtt n <<<"$(awk -v lo=$((BYTES / 5)) -v hi=$((BYTES * 49 / 50)) '{c = ""; r = ""; a = -1
        for (i = 1; i <= NF; i++) {
            if ($i ~ /^cwnd:/) c = substr($i, 6)
            if ($i ~ /^rtt:/) { split(substr($i, 5), x, "/"); r = x[1] }
            if ($i ~ /^bytes_acked:/) a = substr($i, 13)
        }
        if (c != "" && r != "" && a > lo && a < hi) print c, r}' <<<"$SS_LINES" | python3 -c '
import sys, statistics as s
rows = [l.split() for l in sys.stdin if l.strip()]
print(s.median(float(r[0]) for r in rows) if rows else 0, s.median(float(r[1]) for r in rows) if rows else 0, len(rows))')"
    if [[ $impl == linux ]]; then
        # ss: "dctcp:(ce_state:0,alpha:N,ab_ecn:..,ab_tot:..)"; the last
        # sample's while the flow still sent.
        alpha=$(awk -v hi=$((BYTES * 49 / 50)) '{a = -1; for (i = 1; i <= NF; i++) if ($i ~ /^bytes_acked:/) a = substr($i, 13)
            if (a >= 0 && a < hi) print}' <<<"$SS_LINES" | grep -o 'alpha:[0-9]*' | tail -1 | cut -d: -f2)
    else
        alpha=$(python3 -c 'import json,sys; r=[r for r in json.loads(sys.argv[1] or "[]") if r["remote"].endswith(":5001") and r.get("cc_state")]
print(r[0]["cc_state"]["values"]["alpha_q16"] // 64 if r else "")' "${FLOWS_JSON:-}")
    fi
    echo "  $impl: ${BYTES} B acknowledged in $XFER_ACKED_MS ms ($XFER_MS ms with the sender's start-up, the 1.5 s hold and the close), while sending ($n samples): median cwnd $cwnd, median rtt $rtt ms; RED: ${red:-?}; alpha ${alpha:-?}/1024, byte-exact $XFER_OK, delivered_ce $DELIVERED_CE"
    echo "  ss sample: $(sed -n "$(( $(wc -l <<<"$SS_LINES") / 2 ))p" <<<"$SS_LINES")"
    check "$impl: transfer byte-exact" test "$XFER_OK" = 1
    check "$impl: ECN negotiated, marks echoed (delivered_ce $DELIVERED_CE)" test "$DELIVERED_CE" -gt 0
    echo "$impl $XFER_ACKED_MS $cwnd $rtt ${marks:-0} ${alpha:-0}" >>"$results"
    net_down
}

results=$(mktemp)
for impl in linux xdcc linux xdcc; do run "$impl"; done
unload

# Agreement: the mean of each metric over xdcc's runs against Linux's, and
# each CC's own spread between its two runs for scale.
python3 - "$results" <<'EOF' >"$results.verdict"
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
cols = ["ms", "cwnd", "rtt_ms", "marks", "alpha"]
by = {i: [[float(x) for x in r[1:]] for r in rows if r[0] == i] for i in ("linux", "xdcc")}
if len(by["linux"]) < 2 or len(by["xdcc"]) < 2:
    print("FAIL: not every run finished"); sys.exit()
mean = {i: [sum(r[c] for r in by[i]) / len(by[i]) for c in range(len(cols))] for i in by}
spread = {i: [abs(by[i][0][c] - by[i][1][c]) / max(mean[i][c], 1e-9) for c in range(len(cols))] for i in by}
# Tolerances: completion time 15 %, median window 30 % (a window of ~25
# packets moves by several packets with one guest stall), median RTT 30 %,
# marks 40 %, alpha within a factor 2 (the last sample's value of a
# per-window EWMA).
tol = {"ms": 0.15, "cwnd": 0.30, "rtt_ms": 0.30, "marks": 0.40}
for c, name in enumerate(cols):
    l, x = mean["linux"][c], mean["xdcc"][c]
    rel = abs(x - l) / max(l, 1e-9)
    detail = f"{name}: linux {l:.1f}, xdcc {x:.1f} ({rel * 100:.0f} % apart; run-to-run spread linux {spread['linux'][c] * 100:.0f} %, xdcc {spread['xdcc'][c] * 100:.0f} %)"
    if name == "alpha":
        good = l > 0 and x > 0 and 0.5 <= x / l <= 2.0
        print(("PASS" if good else "FAIL") + f": alpha within a factor 2 of Linux's; {detail}")
    else:
        print(("PASS" if rel <= tol[name] else "FAIL") + f": {name} within {tol[name] * 100:.0f} % of Linux's; {detail}")
EOF
while read -r line; do
    case $line in
        PASS:*) ok "${line#PASS: }" ;;
        *) bad "${line#FAIL: }" ;;
    esac
done <"$results.verdict"
rm -f "$results" "$results.verdict"
tap_done
