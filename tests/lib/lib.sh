# The one library of xdcc's shell test suites: the host suite
# (userspace/tests/netns.sh) and the VM suites (testbed/vm/tests/*.sh) source
# it. It has three parts:
#   checks      TAP-style lines ("ok 7 - what", "not ok 8 - what" followed by
#               the failing command's output as "# " lines) and the summary
#               every suite ends with, "N passed, M failed";
#   namespaces  namespaces made here and removed at exit, veth links, a
#               sender - router - receiver path, a bottleneck port;
#   CCs         the xdcc CCs and their properties, from `xdcc cc known --json`
#               (the algorithm crate's list), never from their names;
# and the one transfer tool, tests/lib/xfer.py ($XFER).
# shellcheck shell=bash

XDCC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
XFER="python3 $XDCC_ROOT/tests/lib/xfer.py"
XDCC_BIN=${XDCC_BIN:-$XDCC_ROOT/target/release/xdcc}

# ------------------------------------------------------------------ checks
T_PASS=0
T_FAIL=0
T_N=0
ok() { T_N=$((T_N + 1)); T_PASS=$((T_PASS + 1)); echo "ok $T_N - $*"; }
bad() { T_N=$((T_N + 1)); T_FAIL=$((T_FAIL + 1)); echo "not ok $T_N - $*"; }
# diag FILE: a failed check's output, as TAP diagnostics (its last 20 lines).
diag() { [[ -s $1 ]] && tail -n 20 "$1" | sed 's/^/# /'; return 0; }
# check DESCRIPTION COMMAND...: one line for the command's success; its output
# is shown only when it fails (XDCC_TEST_VERBOSE=1: always). The command runs
# in this shell, so it may be a function that sets variables.
check() {
    local d=$1 out rc=0
    shift
    out=$(mktemp)
    "$@" >"$out" 2>&1 || rc=$?
    if ((rc == 0)); then
        ok "$d"
        [[ ${XDCC_TEST_VERBOSE:-0} == 1 ]] && diag "$out"
    else
        bad "$d (exit $rc)"
        diag "$out"
    fi
    rm -f "$out"
    return 0
}
# expect_fail DESCRIPTION PATTERN COMMAND...: the command fails and its
# stderr matches PATTERN (an extended regex, case-insensitive).
expect_fail() {
    local d=$1 pat=$2 out rc=0
    shift 2
    out=$("$@" 2>&1 >/dev/null) || rc=$?
    if ((rc != 0)) && grep -qiE -- "$pat" <<<"$out"; then
        ok "$d"
    else
        bad "$d (exit $rc)"
        sed 's/^/# /' <<<"$out" | tail -n 20
    fi
    return 0
}
# stolen_pct: the share of this VM's CPU time the hypervisor took (steal)
# since the last call, in percent; the first call starts the count.
STOLEN_AT=""
stolen_pct() {
    local now
    now=$(awk '/^cpu /{t=0; for (i=2; i<=NF; i++) t+=$i; print $9, t}' /proc/stat)
    if [[ -n $STOLEN_AT ]]; then
        awk -v a="$STOLEN_AT" -v b="$now" 'BEGIN { split(a, x, " "); split(b, y, " ");
            d = y[2] - x[2]; print (d > 0 ? int((y[1] - x[1]) * 100 / d) : 0) }'
    fi
    STOLEN_AT=$now
}
# unstarved LABEL JUDGED COMMAND...: a real-speed run that needs the CPUs it
# was given. Runs COMMAND N (N = 1, 2, ...: a fresh output per run) until it
# passes. A run that failed while the hypervisor took >= 9 % of this VM's
# CPUs is void (at 9-21 % cubic itself fills only 77-86 % of a 1 Gbit/s
# port; quiet, steal is 0-2 %: testbed/notes/2026-11-28-flakes.md) and is
# run again after 20 s, up to 5 void runs; other failures count against
# JUDGED. Fails, saying which, when the judged or the void runs run out.
unstarved() {
    local label=$1 judged=$2 n=0 void=0 failed=0 stolen
    shift 2
    while :; do
        n=$((n + 1))
        stolen_pct >/dev/null
        if "$@" "$n"; then return 0; fi
        stolen=$(stolen_pct)
        if ((stolen >= 9)); then
            void=$((void + 1))
            echo "[$label] run $n void: it failed while the hypervisor took $stolen % of the CPUs"
            if ((void >= 5)); then
                echo "[$label] FAIL: $void runs starved of CPU by the hypervisor (>= 9 % steal): not judged" >&2
                return 1
            fi
            sleep 20
        else
            failed=$((failed + 1))
            echo "[$label] run $n failed with the CPUs this VM's own (the hypervisor took $stolen %)"
            ((failed < judged)) || return 1
        fi
    done
}
# tap_done: the summary line; the status is 0 when nothing failed.
tap_done() {
    echo "$T_PASS passed, $T_FAIL failed"
    ((T_FAIL == 0))
}
eq() { [[ $1 == "$2" ]]; }
le() { (($1 <= $2)); }
# same_sha A.json B.json: both ends of a transfer ($XFER) wrote the same
# sha256 (an end that died wrote nothing: no match).
same_sha() {
    local a b
    a=$(jq -r .sha256 "$1" 2>/dev/null) && b=$(jq -r .sha256 "$2" 2>/dev/null) || return 1
    [[ $a =~ ^[0-9a-f]{64}$ && $a == "$b" ]]
}
wait_file() { local i; for i in $(seq 100); do [[ -e $1 ]] && return 0; sleep 0.05; done; return 1; }
to_bps() { # 95.3Mbps -> 95300000 (ss's rates)
    local v=${1%bps}
    case $v in
        *G) awk -v x="${v%G}" 'BEGIN{printf "%d", x*1e9}' ;;
        *M) awk -v x="${v%M}" 'BEGIN{printf "%d", x*1e6}' ;;
        *K) awk -v x="${v%K}" 'BEGIN{printf "%d", x*1e3}' ;;
        *) printf '%d' "${v:-0}" ;;
    esac
}

# -------------------------------------------------------------- namespaces
# Namespaces are named $NS_TAG<name> (NS_TAG: a per-run prefix, so that a
# suite's namespaces cannot meet another run's; empty in the VM, whose
# kernel is the test's own) and recorded for ns_cleanup.
NS_TAG=${NS_TAG-}
T_NSS=()
# mkns VAR NAME: makes namespace $NS_TAG$NAME with lo up and sets VAR to it.
mkns() {
    local n=$NS_TAG$2
    ip netns add "$n" || return 1
    T_NSS+=("$n")
    ip -n "$n" link set lo up
    # No duplicate address detection on the links made here: a new link's
    # link-local address stays tentative for ~2 s, and while it is, Linux
    # sends no neighbour solicitation from it, so a route's next hop on that
    # link stays unresolved and the packets routed to it are lost: a path
    # black-holed for the first second of a test
    # (testbed/notes/2026-11-29-unolb-tcp.md, "The gathering's cause").
    in_ns "$n" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 2>/dev/null || true
    printf -v "$1" %s "$n"
}
in_ns() { local n=$1; shift; ip netns exec "$n" "$@"; }
# link NS_A IF_A NS_B IF_B [ADDR_A ADDR_B]: a veth pair, both ends up (and
# given those addresses, e.g. 10.9.1.1/24).
link() {
    ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" || return 1
    ip -n "$1" link set "$2" up
    ip -n "$3" link set "$4" up
    if (($# == 6)); then
        ip -n "$1" addr add "$5" dev "$2" && ip -n "$3" addr add "$6" dev "$4"
    fi
}
# host_bridge NAME SUBNET ADDR: a bridge NAME<pid of this run> in the
# host's own namespace with ADDR (e.g. 10.80.0.254/24) on SUBNET, echoed.
# A run killed before its cleanup (SIGKILL, a session's end) leaves its
# bridge holding the subnet, and the next run's route would lead to that
# dead bridge: bridges NAME<pid> of runs no longer alive are removed first;
# anything else routing SUBNET is not the suite's to touch, and fails.
host_bridge() {
    local name=$1 subnet=$2 addr=$3 link held
    for link in $(ip -o link show type bridge | awk -F': ' '{print $2}' | grep -E "^$name[0-9]+\$"); do
        [[ -d /proc/${link#"$name"} ]] || { ip link del "$link" && echo "removed bridge $link, left by a killed run" >&2; }
    done
    held=$(ip -o route show "$subnet")
    [[ -z $held ]] || { echo "$subnet is already routed: $held" >&2; return 1; }
    ip link add "$name$$" type bridge && ip addr add "$addr" dev "$name$$" && ip link set "$name$$" up || return 1
    echo "$name$$"
}
# ns_cleanup: every namespace mkns made goes, with the processes in it
# (daemons such as iperf3 -D die with it).
ns_cleanup() {
    local n
    for n in "${T_NSS[@]}"; do
        ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$n" 2>/dev/null
    done
    T_NSS=()
}
# routed_path S R D NAME NET4 [NET6]: sender $S -- router $R -- receiver $D
# (the variables named by S, R, D set to namespaces NAMEsnd, NAMErtr,
# NAMErcv: snd, rtr and rcv in the VM, where NAME and NS_TAG are empty). Addresses:
# S NET4.1.1 on s0, R NET4.1.254 on r0 and NET4.2.254 on r1 (the port towards
# the receiver: where a bottleneck goes), D NET4.2.1 on d0; with NET6 (e.g.
# fd91) also NET6:1::1, NET6:1::fe, NET6:2::fe, NET6:2::1. Routes and
# forwarding are set.
routed_path() {
    local -n _s=$1 _r=$2 _d=$3
    local name=$4 v4=$5 v6=${6:-}
    mkns "$1" "${name}snd" && mkns "$2" "${name}rtr" && mkns "$3" "${name}rcv" || return 1
    link "$_s" s0 "$_r" r0 "$v4.1.1/24" "$v4.1.254/24" || return 1
    link "$_r" r1 "$_d" d0 "$v4.2.254/24" "$v4.2.1/24" || return 1
    ip -n "$_s" route add default via "$v4.1.254"
    ip -n "$_d" route add default via "$v4.2.254"
    in_ns "$_r" sysctl -qw net.ipv4.ip_forward=1
    if [[ -n $v6 ]]; then
        ip -n "$_s" addr add "$v6:1::1/64" dev s0 nodad
        ip -n "$_r" addr add "$v6:1::fe/64" dev r0 nodad
        ip -n "$_r" addr add "$v6:2::fe/64" dev r1 nodad
        ip -n "$_d" addr add "$v6:2::1/64" dev d0 nodad
        ip -n "$_s" -6 route add default via "$v6:1::fe"
        ip -n "$_d" -6 route add default via "$v6:2::fe"
        in_ns "$_r" sysctl -qw net.ipv6.conf.all.forwarding=1
    fi
}
# host_pair A B NAME NET4: two namespaces (NAMEa, NAMEb) on one veth link,
# A NET4.1 on a0, B NET4.2 on b0.
host_pair() {
    local -n _a=$1 _b=$2
    mkns "$1" "${3}a" && mkns "$2" "${3}b" || return 1
    link "$_a" a0 "$_b" b0 "$4.1/24" "$4.2/24"
}
# star HUB A B NAME NET4: a namespace $HUB linked to $A and to $B (NAMEhub,
# NAMEa, NAMEb), one subnet per link: A NET4.1.1 on a0 -- NET4.1.2 on h0 of
# the hub, B NET4.2.1 on b0 -- NET4.2.2 on h1 (no routes: each leaf reaches
# the hub only).
star() {
    local -n _h=$1 _a=$2 _b=$3
    mkns "$1" "${4}hub" && mkns "$2" "${4}a" && mkns "$3" "${4}b" || return 1
    link "$_a" a0 "$_h" h0 "$5.1.1/24" "$5.1.2/24" &&
        link "$_b" b0 "$_h" h1 "$5.2.1/24" "$5.2.2/24"
}
# bottleneck NS DEV RATE LEAF: an HTB rate limit at RATE (tc's units) on DEV
# whose leaf (handle 10:) is LEAF:
#   fifo     a byte FIFO of 300 kB, no marking
#   red      RED with ECN from 2 to 6 packets (the Linux RED of the papers)
#   step     DCTCP's step marking at 20 packets (switch-config's Step: RED
#            from K to K + 1 MTU, probability 1)
#   reddeep  RED with ECN from 20 to 40 packets
#   bfifo:N  a byte FIFO of N bytes
bottleneck() {
    local n=$1 dev=$2 rate=$3 leaf=$4
    tc -n "$n" qdisc add dev "$dev" root handle 1: htb default 1 || return 1
    tc -n "$n" class add dev "$dev" parent 1: classid 1:1 htb rate "$rate" ceil "$rate" || return 1
    local at=(tc -n "$n" qdisc add dev "$dev" parent 1:1 handle 10:)
    case $leaf in
        fifo) "${at[@]}" bfifo limit 300000 ;;
        bfifo:*) "${at[@]}" bfifo limit "${leaf#bfifo:}" ;;
        red) "${at[@]}" red limit 300000 min 3000 max 9000 avpkt 1500 burst 3 bandwidth "$rate" probability 1.0 ecn ;;
        step) "${at[@]}" red limit 300000 min 30000 max 31500 avpkt 1500 burst 20 bandwidth "$rate" probability 1.0 ecn ;;
        reddeep) "${at[@]}" red limit 300000 min 30000 max 60000 avpkt 1500 burst 25 bandwidth "$rate" probability 1.0 ecn ;;
        *) echo "bottleneck: unknown leaf $leaf" >&2; return 2 ;;
    esac
}

# --------------------------------------------------------------------- CCs
# The xdcc CCs and what they are, from the binary that is under test.
T_KNOWN=""
cc_known() {
    [[ -n $T_KNOWN ]] || T_KNOWN=$("$XDCC_BIN" cc known --json) || return 1
    printf '%s\n' "$T_KNOWN"
}
# cc_names: every xdcc CC, one per line, in the crate's order.
cc_names() { cc_known | jq -r '.[].name'; }
# cc_is CC PROPERTY: the CC has the property (a boolean of `xdcc cc known
# --json`, or one of the derived ones below):
#   needs_ecn          negotiates ECN (TCP_CONG_NEEDS_ECN)
#   marks_congestion   a CE mark means congestion (`marks`: not for AMRT,
#                      whose marks mean spare bandwidth, nor a CC without ECN)
#   keeps_base_rtt     its flow state has a base RTT (`base_rtt_us`)
#   rate_based         it computes its own sending rate (a pacing rate)
cc_is() {
    local v
    case $2 in
        marks_congestion) v=$(cc_known | jq --arg c "$1" 'any(.[] | select(.name == $c); .marks == "congestion")') ;;
        keeps_base_rtt) v=$(cc_known | jq --arg c "$1" 'any(.[] | select(.name == $c); .info_fields | index("base_rtt_us") != null)') ;;
        *) v=$(cc_known | jq --arg c "$1" --arg p "$2" '.[] | select(.name == $c) | .[$p]') ;;
    esac
    [[ $v == true ]]
}
# select_ccs [CC...]: sets `ccs` to the given CCs or every xdcc CC and
# prints them; fails when there are none.
select_ccs() {
    ccs=("$@")
    # shellcheck disable=SC2207
    ((${#ccs[@]})) || ccs=($(cc_names))
    if ((${#ccs[@]} == 0)); then
        bad "no CC list (\`$XDCC_BIN cc known --json\`)"
        return 1
    fi
    echo "# CCs under test: ${ccs[*]}"
}
