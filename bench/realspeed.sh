#!/usr/bin/env bash
# Real-speed long flows on this host's own kernel: the BPF CCs beside the
# kernel's cubic and bbr, as an operator would run them (issue 28's setup).
#
#   s1 ─┐
#       ├─ r ── port p0 (HTB RATE, FIFO of BUFFER) ── d
#   s2 ─┘
# Two senders run FLOWS/2 iperf3 streams each into d (--flows 1: s1 alone); the router's port to d
# is the only bottleneck. The xdcc eBPF markers sit on that port as each
# CC's paper configures its switch (the host kernel has no sch_red):
#   bpf_uno     phantom queue draining at 90 %, marking 20-80 % of its size
#               (switch profile dc-uno-phantom)
#   bpf_gemini  marking at K = 75 kB/Gbit/s (rising to certain at 1.1 K) on
#               a virtual queue that drains at the port's rate (a mirror of
#               the port's queue)
#   bpf_smartt  RED-like 20-80 % of the buffer on that mirror
#   bpf_dctcp   the same at the DCTCP paper's K: 20 packets at 1 Gbit/s,
#               65 at 10 Gbit/s (6.5 packets per Gbit/s, at least 20)
#   bpf_oscar, cubic, bbr   no marking (OSCAR is delay-based)
# Each CC is told the network (net_link_rate_mbps = RATE, net_intra_rtt_us =
# the base RTT measured by ping through the idle path).
#
# Prints one line per CC: port utilization (from the port's byte counter),
# mean/p99 of the senders' smoothed RTT samples (ss, every 100 ms), mean and
# p99 port queue (tc backlog), drops, Jain's index of the streams'
# throughputs, minsh (the slowest stream over the fair share: OSCAR's low
# mode is a stream under 0.5), the host's CPU s/GB (senders, router and receiver share its
# CPUs: /proc/stat), ratios to cubic for throughput and CPU, and
# the share of a BPF CC's flows with ECN negotiated (xdcc flows, once per run;
# ecn%: an ECN CC at 0 means
# the path or the listener refused ECN, and its numbers say nothing of its
# ECN reaction), and mark%, the share of ECT packets the port's marker
# marked CE, and hrt/MB, the host's soft hrtimer expiries per MB moved
# (/proc/softirqs HRTIMER; here TCP's pacing timer: one per skb that waited
# for its pacing slot, each a timer interrupt, VM exits in a guest).
# --phantom-feed link feeds UnoCC's phantom queue with what the
# port transmits instead of what enters it (`xdcc mark-phantom --feed`).
#   bench/realspeed.sh [--rate-mbit R] [--nic-mbit R] [--shaper-burst] [--secs S] [--flows N] [--cc a,b,..]
#                      [--real-host] [--preset cc:name ...]
#                      [--set cc:knob=value ...] [--no-marker] [--trace DIR]
#                      [--phantom-feed enqueue|link] [--sender-cpu N] [--rps] [--ms-ts] [--json FILE]
# --nic-mbit R gives the senders NICs of R Mbit/s (HTB on their ports) and
# the markers the same ingress links (`xdcc mark-phantom --ingress-rate-mbit`:
# a burst the router gets at once queues as it would behind such links).
# --shaper-burst judges the port's mirrors (DCTCP's, Gemini's, SMaRTT's
# markers) less what HTB sends ahead of its rate (`--port-burst-bytes`: its
# 64k burst and one 64 kB GSO packet): without it a mirror reads bursts the
# port sends at once as queue (testbed/notes/2026-11-27-datacenter-rates.md).
# --preset cc:name applies a tunable preset (`xdcc tunable preset`, e.g.
# bpf_oscar:real-host) after the defaults and before --set
# (repeatable; --real-host: the `real-host` preset of every CC that has one,
# as the host backend's real-speed files run them), --set applies a tunable
# after the defaults (repeatable), --trace keeps
# sender s1's TCP counters over each run (nstat: recoveries, undos) and
# per-100 ms samples of ss -tin and xdcc flows per CC in DIR, --json writes
# the table as {cc: {util_pct, rtt_ms, ...}} (userspace/tests/realspeed.sh).
# veth queues a packet on the backlog of the CPU that sent it, so a flow
# sent from two CPUs (an application that moves, TCP's pacing timer,
# ACK-clocked sends from either CPU's softirq) arrives reordered and reads
# as loss, which a NIC (one queue per flow) does not do. --rps gives every
# veth RPS over all CPUs, which keeps each flow on one CPU's backlog: a
# lone paced UnoCC flow at 10 Gbit/s had 82-143 reorderings and ~100
# spurious retransmissions in 8 s without it, none with it; but the router
# then forwards each flow in its own CPU batches, and at 1 Gbit/s Jain's
# index of four flows fell (testbed/notes/2026-11-27-datacenter-rates.md,
# 4f): not the default. --sender-cpu N pins s1's iperf3 client to CPU N.
# Every host's routes carry microsecond TCP timestamps (`xdcc usec-ts on`,
# Linux 6.7+, as datacenter hosts run them): with the kernel's millisecond
# timestamps Linux cannot tell at these RTTs that a retransmission of a
# reordered segment was spurious and never undoes the CC's loss reaction
# (four 1 Gbit/s UnoCC flows: 15-25 % of the spurious recoveries undone,
# with µs timestamps 87-99 %). --ms-ts keeps the kernel's default
# (testbed/notes/2026-11-28-usec-timestamps.md).
# Root. Numbers, not assertions.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rps=0 usec_ts=1 sender_cpu="" rate=1000 nic="" shaper_burst=0 secs=6 flows=4 ccs="" marker=1 trace="" json="" sets=() presets=() real_host=0 feed=enqueue
while (($#)); do
    case $1 in
        --rate-mbit) rate=$2; shift 2 ;;
        --nic-mbit) nic=$2; shift 2 ;;
        --shaper-burst) shaper_burst=1; shift ;;
        --secs) secs=$2; shift 2 ;;
        --flows) flows=$2; shift 2 ;;
        --cc) ccs=${2//,/ }; shift 2 ;;
        --set) sets+=("$2"); shift 2 ;;
        --preset) presets+=("$2"); shift 2 ;;
        --real-host) real_host=1; shift ;;
        --no-marker) marker=0; shift ;;
        --phantom-feed) feed=$2; shift 2 ;;
        --trace) trace=$2; shift 2 ;;
        --rps) rps=1; shift ;;
        --ms-ts) usec_ts=0; shift ;;
        --json) json=$2; shift 2 ;;
        --sender-cpu) sender_cpu=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/realspeed.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
done
[[ $rate =~ ^[0-9]+$ && $rate -ge 10 ]] || { echo "bench/realspeed.sh: --rate-mbit must be an integer >= 10" >&2; exit 2; }
[[ -z $nic ]] || [[ $nic =~ ^[0-9]+$ && $nic -ge 0 && $nic -le 400000 ]] || { echo "bench/realspeed.sh: --nic-mbit must be an integer from 0 to 400000" >&2; exit 2; }
[[ $secs =~ ^[0-9]+$ && $secs -ge 2 ]] || { echo "bench/realspeed.sh: --secs must be an integer >= 2" >&2; exit 2; }
[[ $flows =~ ^[0-9]+$ && $flows -ge 1 && ( $flows == 1 || $((flows % 2)) == 0 ) ]] || { echo "bench/realspeed.sh: --flows must be 1 or an even integer >= 2" >&2; exit 2; }
[[ -z $sender_cpu ]] || [[ $sender_cpu =~ ^[0-9]+$ && $sender_cpu -lt $(nproc) ]] || { echo "bench/realspeed.sh: --sender-cpu must be a CPU number below $(nproc)" >&2; exit 2; }
[[ $feed == enqueue || $feed == link ]] || { echo "bench/realspeed.sh: --phantom-feed is enqueue or link" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "bench/realspeed.sh: needs root (network namespaces, BPF)" >&2; exit 2; }
for t in iperf3 jq tc ping; do command -v $t >/dev/null || { echo "bench/realspeed.sh: needs $t" >&2; exit 2; }; done
X=${XDCC_BIN:-$root/target/release/xdcc}
[[ -x $X ]] || (cd "$root" && cargo build --release --locked -q -p xdcc)
[[ -z $trace ]] || mkdir -p "$trace"

tag=$$ ns=(s1 s2 r d)
N() { echo "xr$1-$tag"; }
loaded=() pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    # iperf3 daemons outlive their namespace's deletion (and keep its
    # sockets and a BPF CC's struct_ops map alive): stop them by pid file.
    for f in /tmp/xdcc-realspeed-$tag.*.pid; do [[ -s $f ]] && kill "$(cat "$f")" 2>/dev/null; rm -f "$f"; done
    for n in "${ns[@]}"; do ip netns del "$(N $n)" 2>/dev/null || true; done
    for c in "${loaded[@]}"; do "$X" cc unload "$c" --bpf >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
for n in "${ns[@]}"; do
    ip netns add "$(N $n)"
    ip -n "$(N $n)" link set lo up
    ip netns exec "$(N $n)" sysctl -qw net.ipv4.tcp_ecn=1
done
ip netns exec "$(N r)" sysctl -qw net.ipv4.ip_forward=1
cpu_mask() { # the sysfs bitmap of CPUs 0..N-1 (32-bit words, comma-separated)
    local n=$1 tail=""
    while ((n > 32)); do tail=",ffffffff$tail"; n=$((n - 32)); done
    printf '%x%s' $(((1 << n) - 1)) "$tail"
}
link() { # link NS1 IF1 NS2 IF2 SUBNET
    ip link add "$2" netns "$(N $1)" type veth peer "$4" netns "$(N $3)"
    ip -n "$(N $1)" addr add "10.77.$5.1/24" dev "$2"
    ip -n "$(N $3)" addr add "10.77.$5.2/24" dev "$4"
    ip -n "$(N $1)" link set "$2" up
    ip -n "$(N $3)" link set "$4" up
    if ((rps)); then
        local mask
        mask=$(cpu_mask "$(nproc)")
        ip netns exec "$(N $1)" sh -c "echo $mask >/sys/class/net/$2/queues/rx-0/rps_cpus"
        ip netns exec "$(N $3)" sh -c "echo $mask >/sys/class/net/$4/queues/rx-0/rps_cpus"
    fi
}
link s1 e0 r a1 1
link s2 e0 r a2 2
link d e0 r p0 3
ip -n "$(N s1)" route add default via 10.77.1.2
ip -n "$(N s2)" route add default via 10.77.2.2
ip -n "$(N d)" route add default via 10.77.3.2
if ((usec_ts)); then
    for n in s1 s2 d; do "$X" -n "$(N $n)" usec-ts on default4 >/dev/null; done
fi
# The senders' NICs: HTB at their rate on each sender's port (as a NIC
# serializes; TCP's small-queue limit then holds a sender's excess at home),
# and the markers count what those links deliver (--ingress-rate-mbit).
if [[ -n $nic && $nic != 0 ]]; then
    for n in s1 s2; do
        tc -n "$(N $n)" qdisc add dev e0 root handle 1: htb default 1
        tc -n "$(N $n)" class add dev e0 parent 1: classid 1:1 htb rate "${nic}mbit" ceil "${nic}mbit" burst 64k cburst 64k
    done
fi
# The port: HTB at the line rate over a FIFO of 450 packets per Gbit/s (the
# switch profiles' buffer; 675 kB at 1 Gbit/s).
buf_pkts=$((rate * 450 / 1000)); ((buf_pkts >= 64)) || buf_pkts=64
tc -n "$(N r)" qdisc add dev p0 root handle 1: htb default 1
tc -n "$(N r)" class add dev p0 parent 1: classid 1:1 htb rate "${rate}mbit" ceil "${rate}mbit" burst 64k cburst 64k
tc -n "$(N r)" qdisc add dev p0 parent 1:1 handle 10: bfifo limit $((buf_pkts * 1500))
base_rtt_us=$(ip netns exec "$(N s1)" ping -c 20 -i 0.01 -q 10.77.3.1 | awk -F/ '/^rtt/{printf "%d", $5 * 1000}')
((base_rtt_us >= 1)) || base_rtt_us=1

known=$("$X" cc known | awk '{print $1}')
[[ -n $ccs ]] || ccs="cubic bbr $(for c in $known; do echo -n "bpf_$c "; done)"
for cc in $ccs; do
    c=${cc#bpf_}
    [[ $cc == bpf_* ]] || continue
    grep -qw "$c" <<<"$known" || { echo "bench/realspeed.sh: unknown CC $cc (xdcc cc known)" >&2; exit 2; }
    if ! grep -qw "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control; then
        "$X" cc load "$c" --bpf >/dev/null
        loaded+=("$c")
    else
        # (Two builds compared with XDCC_BIN would otherwise both run
        # whichever object was registered first.)
        echo "bench/realspeed.sh: $cc is already registered: benching that object, not $X's ($X cc unload $c --bpf first to bench $X's)" >&2
    fi
    "$X" tunable set "$cc" net_link_rate_mbps "$rate" >/dev/null
    "$X" tunable set "$cc" net_intra_rtt_us "$base_rtt_us" >/dev/null
    "$X" tunable preset "$cc" defaults >/dev/null 2>&1 || true
    if ((real_host)) && "$X" tunable preset "$cc" 2>/dev/null | grep -qw real-host; then
        "$X" tunable preset "$cc" real-host >/dev/null
    fi
done
for p in "${presets[@]}"; do
    "$X" tunable preset "${p%%:*}" "${p#*:}" >/dev/null
done
for s in "${sets[@]}"; do
    cc=${s%%:*} kv=${s#*:}
    "$X" tunable set "$cc" "${kv%%=*}" "${kv#*=}" >/dev/null
done

per=$(( (flows + 1) / 2 )) per2=$((flows / 2)) # --flows 1: s1 alone
# iperf3 servers, started per CC once the receiver's default is that CC:
# a listener keeps the CC it was created with, and Linux accepts an ECN SYN
# (ECT set, as a TCP_CONG_NEEDS_ECN CC sends it) only at a listener whose
# own CC needs ECN. (Servers started once, before the loop, left every CC
# that followed a non-ECN one without ECN: the CCs' numbers of 2026-11-25
# before this fix were taken so, for UnoCC and SMaRTT among others.)
servers_up() {
    local p
    for p in 5301 5302; do
        ip netns exec "$(N d)" iperf3 -s -D -p $p -I "/tmp/xdcc-realspeed-$tag.$p.pid"
    done
    sleep 0.3
}
servers_down() {
    local f
    for f in /tmp/xdcc-realspeed-$tag.*.pid; do [[ -s $f ]] && kill "$(cat "$f")" 2>/dev/null; rm -f "$f"; done
    sleep 0.2
}
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
# Soft hrtimer expiries of the whole host: TCP's internal pacing timer is one
# (one expiry per skb that waited for its pacing slot), and each costs a timer
# interrupt and its reprogramming (VM exits in a guest).
hrtimers() { awk '/HRTIMER:/{s = 0; for (i = 2; i <= NF; i++) s += $i; print s}' /proc/softirqs; }
hz=$(getconf CLK_TCK)
port_bytes() { tc -s -n "$(N r)" qdisc show dev p0 | awk '/^qdisc htb/{f=1} f&&/Sent/{print $2; exit}'; }
port_drops() { tc -s -n "$(N r)" qdisc show dev p0 | awk '/^qdisc bfifo/{f=1} f&&/dropped/{gsub(",","",$7); print $7; exit}'; }
backlog() { tc -s -n "$(N r)" qdisc show dev p0 | awk '/^qdisc bfifo/{f=1} f&&/backlog/{print $2; exit}'; }
to_bytes() { awk '{v=$1; if (v ~ /Kb$/) {sub("Kb","",v); v*=1024} else if (v ~ /Mb$/) {sub("Mb","",v); v*=1048576} else sub("b","",v); printf "%d\n", v}'; }

run_marker() { # CC: the marker this CC's paper puts on the port
    local m=() size=$((buf_pkts * 1500))
    case $1 in
        bpf_uno) m=(mark-phantom --iface p0 --profile dc-uno-phantom --rate-mbit "$rate" --feed "$feed") ;;
        bpf_gemini) local k=$((rate * 75)); m=(mark-phantom --iface p0 --rate-mbit "$rate" --drain-pct 100 --size-bytes $((k * 10)) --kmin-pct 10 --kmax-pct 11) ;;
        bpf_smartt) m=(mark-phantom --iface p0 --rate-mbit "$rate" --drain-pct 100 --size-bytes "$size" --kmin-pct 20 --kmax-pct 80) ;;
        bpf_dctcp) local k=$(( (rate * 65 / 10000 > 20 ? rate * 65 / 10000 : 20) * 1500 )); m=(mark-phantom --iface p0 --rate-mbit "$rate" --drain-pct 100 --size-bytes $((k * 10)) --kmin-pct 10 --kmax-pct 11) ;;
        *) return 0 ;;
    esac
    ((marker)) || return 0
    [[ -z $nic ]] || m+=(--ingress-rate-mbit "$nic")
    # --shaper-burst, the mirrors of the port (not Uno's phantom queue,
    # which drains at 90 % whatever the port does): the port is HTB (burst
    # 64k) that also sends one packet on negative tokens (a 64 kB GSO
    # packet), so it runs up to that far ahead of a fluid mirror.
    ((! shaper_burst)) || [[ $1 == bpf_uno ]] || m+=(--port-burst-bytes $((2 * 65536)))
    ip netns exec "$(N r)" "$X" "${m[@]}" --duration $((secs + 1)) >"$work/marker.out" 2>&1 &
    mpid=$!; pids+=("$mpid")
    sleep 0.3
    kill -0 "$mpid" 2>/dev/null || { echo "bench/realspeed.sh: the $1 marker did not start: $(cat "$work/marker.out")" >&2; exit 1; }
}

work=$(mktemp -d /tmp/xdcc-realspeed.XXXXXX)
declare -A res
for cc in $ccs; do
    for n in s1 s2 d; do ip netns exec "$(N $n)" sysctl -qw net.ipv4.tcp_congestion_control="$cc" 2>/dev/null || true; done
    servers_up
    mpid=""; run_marker "$cc"
    [[ -z $trace ]] || ip netns exec "$(N s1)" nstat -az >"$work/nstat0"
    b0=$(busy) h0=$(hrtimers) p0=$(port_bytes) d0=$(port_drops)
    ip netns exec "$(N s1)" iperf3 ${sender_cpu:+-A "$sender_cpu"} -c 10.77.3.1 -p 5301 -P "$per" -t "$secs" -C "$cc" -J >"$work/s1.json" &
    c1=$!
    c2=""
    if ((per2)); then
        ip netns exec "$(N s2)" iperf3 -c 10.77.3.1 -p 5302 -P "$per2" -t "$secs" -C "$cc" -J >"$work/s2.json" &
        c2=$!
    else
        echo '{"end": {"streams": []}}' >"$work/s2.json"
    fi
    : >"$work/rtt" ; : >"$work/q"; rm -f "$work"/ecn.*; w0=""
    # Samples from the second half of the run (steady state).
    t_end=$(( $(date +%s%N) + secs * 1000000000 )); t_half=$(( $(date +%s%N) + secs * 500000000 ))
    while kill -0 $c1 2>/dev/null; do
        now=$(date +%s%N)
        if ((now > t_half && now < t_end - 300000000)); then
            [[ -n $w0 ]] || { w0=$now; pb0=$(port_bytes); }
            w1=$now; pb1=$(port_bytes)
            for n in s1 s2; do
                ip netns exec "$(N $n)" ss -tinH dst 10.77.3.1 | grep -o ' rtt:[0-9.]*' | cut -d: -f2 >>"$work/rtt" || true
                # Once per run: the flows with ECN negotiated, from the BPF
                # CC's own state (`xdcc flows`).
                if [[ $cc == bpf_* && ! -s $work/ecn.$n ]]; then
                    ip netns exec "$(N $n)" "$X" --socket "$work/none.sock" flows -j 2>/dev/null |
                        jq -r '[.[] | select(.cc_state != null)] | "\([.[] | select(.cc_state.ecn_ok)] | length) \(length)"' >"$work/ecn.$n" || true
                fi
            done
            backlog | to_bytes >>"$work/q"
            if [[ -n $trace ]]; then
                { date +%s.%N; ip netns exec "$(N s1)" ss -tinH dst 10.77.3.1; } >>"$trace/$cc.ss"
                [[ $cc != bpf_* ]] || { ip netns exec "$(N s1)" "$X" --socket "$work/none.sock" flows -j 2>/dev/null | jq -c '.[]' >>"$trace/$cc.flows" || true; }
            fi
        fi
        sleep 0.1
    done
    wait $c1 $c2 || true # $c2 empty with --flows 1
    servers_down
    # Sender s1's TCP counters over the run (recoveries, undos, reordering).
    [[ -z $trace ]] || ip netns exec "$(N s1)" nstat -az | awk 'NR == FNR && /^[A-Z]/ {a[$1] = $2; next}
        /^[A-Z]/ && $2 - a[$1] != 0 {print $1, $2 - a[$1]}' "$work/nstat0" - >"$trace/$cc.nstat"
    b1=$(busy) h1=$(hrtimers) p1=$(port_bytes) d1=$(port_drops)
    : >"$work/marker.json"
    if [[ -n $mpid ]]; then
        wait "$mpid" || true
        grep '^{' "$work/marker.out" >"$work/marker.json" || true
    fi
    [[ -z $trace || ! -s $work/marker.out ]] || cp "$work/marker.out" "$trace/$cc.marker"
    res[$cc]=$(python3 - "$work" "$rate" "$secs" "$((pb1 - pb0))" "$((w1 - w0))" "$((d1 - d0))" "$(( b1 - b0 ))" "$hz" "$(( h1 - h0 ))" <<'EOF'
import json, sys, statistics as st
work, rate, secs, port, span_ns, drops, busy, hz, hrt = sys.argv[1], *map(int, sys.argv[2:])
streams, retx = [], 0
for s in ("s1", "s2"):
    j = json.load(open(f"{work}/{s}.json"))
    for x in j["end"]["streams"]:
        streams.append(x["receiver"]["bits_per_second"])
        retx += x["sender"].get("retransmits", 0)
util = port * 8 / (rate * 1e6 * span_ns / 1e9) * 100  # over the sampled second half
rtt = sorted(float(v) for v in open(f"{work}/rtt") if v.strip())
q = sorted(int(v) for v in open(f"{work}/q") if v.strip())
p = lambda a, f: a[min(len(a) - 1, int(f * len(a)))] if a else float("nan")
jain = sum(streams) ** 2 / (len(streams) * sum(x * x for x in streams)) if streams else 0
minsh = min(streams) / st.mean(streams) if streams and sum(streams) else 0  # slowest stream / fair share
gb = sum(streams) * secs / 8 / 1e9
import glob
e = [tuple(map(int, l.split())) for f in glob.glob(f"{work}/ecn.*") for l in open(f) if l.strip()]
ecn = 100 * sum(a for a, _ in e) / sum(b for _, b in e) if sum(b for _, b in e) else -1
m = [json.loads(l) for l in open(f"{work}/marker.json") if l.strip()]
mark = 100 * m[0]["marked"] / m[0]["ect_packets"] if m and m[0]["ect_packets"] else -1
print(f"{util:.1f} {st.mean(rtt) if rtt else float('nan'):.3f} {p(rtt, .99):.3f} {(st.mean(q) if q else 0) / 1000:.1f} "
      f"{p(q, .99) / 1000:.1f} {drops} {retx} {jain:.3f} {busy / hz / max(gb, 1e-9):.2f} {sum(streams) / 1e6:.0f} {ecn:.0f} {mark:.1f} {minsh:.2f} {hrt / max(gb * 1000, 1e-9):.0f}")
EOF
)
done

echo "real speed: $flows flows ($( ((per2)) && echo 2 senders || echo 1 sender)) -> 1 port, HTB ${rate} Mbit/s, FIFO $buf_pkts packets, base RTT ${base_rtt_us} us (ping), ${secs} s per CC, marker $( ((marker)) && echo on || echo off ), TCP timestamps in $( ((usec_ts)) && echo us || echo ms ), kernel $(uname -r), $(nproc) CPUs"
printf '%-11s %6s %9s %9s %8s %8s %6s %6s %6s %6s %8s %9s %9s %5s %6s %6s\n' cc util% rtt_ms p99_ms q_kB q99_kB drops retx jain minsh CPUs/GB "tput/cub" "CPU/cub" ecn% mark% hrt/MB
read -r _ _ _ _ _ _ _ _ cub_cpu cub_tput _ _ _ _ <<<"${res[cubic]:-0 0 0 0 0 0 0 0 0 0 0 0 0 0}"
for cc in $ccs; do
    read -r u r r99 q q99 dr rx j cpu tput ecn mark minsh hrt <<<"${res[$cc]}"
    python3 -c "
import sys
cc,u,r,r99,q,q99,dr,rx,j,cpu,tput,ecn,mark,minsh,hrt,cc0,cp0 = sys.argv[1:]
rt = f'{float(tput)/float(cc0):.2f}' if float(cc0) else '-'
rc = f'{float(cpu)/float(cp0):.2f}' if float(cp0) else '-'
ecn = '-' if float(ecn) < 0 else ecn
mark = '-' if float(mark) < 0 else mark
print(f'{cc:<11} {float(u):6.1f} {float(r):9.3f} {float(r99):9.3f} {float(q):8.1f} {float(q99):8.1f} {dr:>6} {rx:>6} {float(j):6.3f} {float(minsh):6.2f} {float(cpu):8.2f} {rt:>9} {rc:>9} {ecn:>5} {mark:>6} {hrt:>6}')
" "$cc" "$u" "$r" "$r99" "$q" "$q99" "$dr" "$rx" "$j" "$cpu" "$tput" "$ecn" "$mark" "$minsh" "$hrt" "$cub_tput" "$cub_cpu"
done
if [[ -n $json ]]; then
    for cc in $ccs; do echo "$cc ${res[$cc]}"; done | python3 -c '
import json, sys
keys = ["util_pct", "rtt_ms", "rtt_p99_ms", "queue_kB", "queue_p99_kB", "drops", "retx", "jain", "cpu_s_per_GB", "mbps", "ecn_pct", "marked_pct", "min_share", "hrtimers_per_MB"]
print(json.dumps({l.split()[0]: dict(zip(keys, map(float, l.split()[1:]))) for l in sys.stdin}, indent=1))' >"$json"
fi
rm -rf "$work"
