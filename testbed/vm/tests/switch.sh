#!/bin/bash
# VM tests of the switch profiles (switch-config/) on the test kernel, which
# has the RED and netem qdiscs the host lacks: Gemini's step marking, Uno's
# RED, the WAN border's delay (two border ports give the inter-DC RTT) and
# Uno's correlated loss model; apply is idempotent, revert removes it.
#   run.sh testbed/vm/tests/switch.sh
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
source "$root/tests/lib/lib.sh"
X=$XDCC_BIN
[[ -x $X ]] || { bad "$X not built"; tap_done; exit 1; }

# Two hosts on one link: a (10.8.0.1 on a0) and b (10.8.0.2 on b0).
host_pair A B "" 10.8.0
q() { tc -n "$1" qdisc show dev "$2"; }

check "dc-gemini applies" "$X" switch apply dc-gemini a0 --netns $A
check "step marking at K = 75 kB, ECN" sh -c "tc -n $A qdisc show dev a0 | grep -q 'red 10: parent 1:1 limit 675000b min 75000b max 76500b ecn'"
before=$(q $A a0)
check "dc-gemini again (idempotent)" "$X" switch apply dc-gemini a0 --netns $A
check "unchanged after the second apply" test "$(q $A a0)" = "$before"
check "dc-uno replaces it" "$X" switch apply dc-uno a0 --netns $A --rate-mbit 100
check "Uno RED 25 %/75 % of a 45-packet buffer" sh -c "tc -n $A qdisc show dev a0 | grep -q 'min 16875b max 50625b ecn'"
check "htb at 100 Mbit/s" sh -c "tc -n $A class show dev a0 | grep -q 'rate 100Mbit'"

# Two WAN border ports (one per direction): 5 ms each way = 10 ms RTT.
rtt_ms() { ip netns exec $A python3 -c '
import socket, time
s = socket.socket(); t = time.monotonic(); s.connect(("10.8.0.2", 7001)); print(int((time.monotonic() - t) * 1000))'; }
ip netns exec $B python3 -c '
import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 7001)); s.listen(8)
while True: s.accept()[0].close()' &
srv=$!
sleep 1
rtt_ms >/dev/null # warm up (ARP, page cache)
base=$(rtt_ms)
check "wan-border on a" "$X" switch apply wan-border a0 --netns $A
check "wan-border on b" "$X" switch apply wan-border b0 --netns $B
check "netem 5 ms with a 10000-packet limit" sh -c "tc -n $A qdisc show dev a0 | grep -q 'netem 10: parent 1:1 limit 10000 delay 5ms'"
wan=$(rtt_ms)
echo "  handshake RTT: $base ms without, $wan ms with two wan-border ports (10 ms configured)"
check "handshake RTT through two border ports in [10, 30] ms" test "$wan" -ge 10 -a "$wan" -le 30
check "wan-uno-loss-setup1 (Gilbert-Elliott)" "$X" switch apply wan-uno-loss-setup1 a0 --netns $A
check "gemodel loss configured" sh -c "tc -n $A qdisc show dev a0 | grep -q 'loss gemodel'"
check "revert a" "$X" switch revert a0 --netns $A
check "revert b" "$X" switch revert b0 --netns $B
check "no htb left" sh -c "! tc -n $A qdisc show dev a0 | grep -q htb"
# (The least of three handshakes: one under TCG once took 5 ms on a busy
# host; a netem left behind would delay every one by 10 ms.)
after=$(for _ in 1 2 3; do rtt_ms; done | sort -n | head -1)
check "RTT back to base after revert (< 5 ms, least of 3 handshakes: $after ms)" test "$after" -lt 5
kill $srv
ns_cleanup
tap_done
