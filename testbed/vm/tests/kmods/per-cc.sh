# What kmods.sh needs to know of each CC beyond its properties (`cc_is`,
# from `xdcc cc known --json`): the tunables its checks use. One entry per CC
# here; a CC without one fails its checks with a line saying so.
# shellcheck shell=bash

# The fifo/RED comparison isolates the reaction to ECN: each CC's other
# signals that limit the window on a queue are off for both runs.
# QuickAdapt (UnoCC, SMaRTT) cuts when the ACK rate collapses or the delay
# grows, which a stalled TCG guest's stretched RTTs set off in the fifo run
# too (a UnoCC fifo median of 13 packets once failed the check); Gemini cuts
# on queueing > T = 5 ms: T = 1 s leaves ECN its only signal.
declare -A ECN_ONLY=([uno]="qa_beta_q16=0" [smartt]="qa_beta_q16=0" [gemini]="t_ns=1000000000"
    [oscar]="" [amrt]="" [dctcp]="")

# A tunable's range: "KNOB GOOD BAD" (BAD is outside the range; DCTCP's
# shift_g has Linux's dctcp_shift_g range 0..10).
declare -A RANGE_CHECK=([uno]="qa_beta_q16 16384 70000" [gemini]="beta_q16 9830 70000"
    [smartt]="gamma_q16 32768 70000" [oscar]="u_ai_q16 131 0" [amrt]="max_wnd_bdp_q16 196608 0"
    [dctcp]="shift_g 5 11")

# The delay target of a rate-based CC (its pacing test judges the samples
# whose queue stands above twice it).
declare -A QUEUE_TARGET_KNOB=([oscar]=target_qdelay_ns)

# effect_<cc> FIFO_MAX: a tunable changes the CC's behaviour, against the
# default run's max cwnd FIFO_MAX; each sets its tunable, runs one transfer
# through the fifo and puts the tunable back.
set_knob() { echo "$3" >"/proc/sys/net/xdcc/$1/$2"; }
get_knob() { cat "/proc/sys/net/xdcc/$1/$2"; }

# (effect_max_cwnd CC KNOB VALUE FIFO_MAX: the window's maximum goes down.)
effect_max_cwnd() {
    local cc=$1 knob=$2 val=$3 fifo_max=$4 before
    before=$(get_knob "$cc" "$knob")
    check "tcp_$cc: set $knob=$val" set_knob "$cc" "$knob" "$val"
    net_up fifo
    transfer "$cc" 2000000
    echo "  $knob=$val: max cwnd $MAX_CWND (default run: $fifo_max)"
    check "tcp_$cc: $knob=$val changes the window (max $MAX_CWND vs $fifo_max)" test "$MAX_CWND" -lt "$fifo_max"
    set_knob "$cc" "$knob" "$before"
    net_down
}
effect_gemini() { effect_max_cwnd gemini t_ns 500000 "$1"; }
effect_smartt() { effect_max_cwnd smartt max_wnd_bdp_q16 32768 "$1"; }
effect_amrt() { effect_max_cwnd amrt init_bdp_q16 16384 "$1"; }

# UnoCC: a 4-BDP start (28 packets here). In the fifo it stays in slow
# start, so its window never falls below the start (a max-cwnd comparison
# with the default start is decided by the receive window and the guest's
# timing instead). QuickAdapt is off for this run (qa_beta_q16 = 0): a guest
# stall that halves the bytes acked in one QA period would otherwise cut the
# window (CI saw min cwnd 5).
effect_uno() {
    local qa init
    qa=$(get_knob uno qa_beta_q16); init=$(get_knob uno init_bdp_q16)
    set_knob uno qa_beta_q16 0
    check "tcp_uno: set init_bdp_q16=262144" set_knob uno init_bdp_q16 262144
    net_up fifo
    transfer uno 2000000
    echo "  init_bdp_q16=262144: min cwnd $MIN_CWND, max $MAX_CWND (default run max: $1)"
    check "tcp_uno: a 4-BDP start holds the window at >= 20 packets from the first sample (min $MIN_CWND)" test "$MIN_CWND" -ge 20
    set_knob uno init_bdp_q16 "$init"; set_knob uno qa_beta_q16 "$qa"
    net_down
}

# OSCAR: μ lowered to 250 kB/s = 2 Mbit/s, so u·μ ≤ u_max·μ = 4 Mbit/s (a
# smaller transfer at that rate).
effect_oscar() {
    local before p
    before=$(get_knob oscar rate_bytes_per_sec)
    check "tcp_oscar: set rate_bytes_per_sec=250000" set_knob oscar rate_bytes_per_sec 250000
    net_up fifo
    transfer oscar 600000
    p=$(to_bps "$LAST_PACING")
    echo "  rate_bytes_per_sec=250000: pacing $LAST_PACING, max cwnd $MAX_CWND"
    check "tcp_oscar: lowering μ lowers the pacing rate to ≤ u_max·μ (${LAST_PACING})" test "$p" -gt 0 -a "$p" -le 4000000
    set_knob oscar rate_bytes_per_sec "$before"
    net_down
}

# DCTCP: a 40-packet initial window. Until the first ACK the socket has the
# stack's 10 packets; the CC's window from the first ACK is its initial
# window plus what that round acknowledges: 40 + up to 10 here, at most
# 10 + 10 with the default. (A 200 ms path keeps that window for several
# samples.)
effect_dctcp() {
    local before
    before=$(get_knob dctcp init_cwnd_pkts)
    check "tcp_dctcp: set init_cwnd_pkts=40" set_knob dctcp init_cwnd_pkts 40
    RTT=200ms net_up fifo
    transfer dctcp 2000000
    echo "  init_cwnd_pkts=40: first cwnd after an ACK ${FIRST_CWND:-none}, max $MAX_CWND"
    check "tcp_dctcp: a 40-packet initial window is the window after the first ACK (first ${FIRST_CWND:-none} >= 40)" test "${FIRST_CWND:-0}" -ge 40
    set_knob dctcp init_cwnd_pkts "$before"
    net_down
}
