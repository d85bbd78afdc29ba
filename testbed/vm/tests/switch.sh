#!/bin/bash
# VM tests of the switch profiles (switch-config/) on the test kernel, which
# has the RED and netem qdiscs the host lacks: Gemini's step marking, Uno's
# RED, the WAN border's delay (two border ports give the inter-DC RTT) and
# Uno's correlated loss model; apply is idempotent, revert removes it.
#   run.sh testbed/vm/tests/switch.sh
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
X=$root/target/release/xdcc
pass=0
fail=0
ok() { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
[[ -x $X ]] || { echo "FAIL: $X not built"; exit 1; }

ip netns add a; ip netns add b
ip link add pa netns a type veth peer name pb netns b
ip -n a addr add 10.8.0.1/24 dev pa; ip -n b addr add 10.8.0.2/24 dev pb
ip -n a link set pa up; ip -n b link set pb up
q() { tc -n "$1" qdisc show dev "$2"; }

check "dc-gemini applies" "$X" switch apply dc-gemini pa --netns a
check "step marking at K = 75 kB, ECN" sh -c "tc -n a qdisc show dev pa | grep -q 'red 10: parent 1:1 limit 675000b min 75000b max 76500b ecn'"
before=$(q a pa)
check "dc-gemini again (idempotent)" "$X" switch apply dc-gemini pa --netns a
check "unchanged after the second apply" test "$(q a pa)" = "$before"
check "dc-uno replaces it" "$X" switch apply dc-uno pa --netns a --rate-mbit 100
check "Uno RED 25 %/75 % of a 45-packet buffer" sh -c "tc -n a qdisc show dev pa | grep -q 'min 16875b max 50625b ecn'"
check "htb at 100 Mbit/s" sh -c "tc -n a class show dev pa | grep -q 'rate 100Mbit'"

# Two WAN border ports (one per direction): 5 ms each way = 10 ms RTT.
rtt_ms() { ip netns exec a python3 -c '
import socket, time
s = socket.socket(); t = time.monotonic(); s.connect(("10.8.0.2", 7001)); print(int((time.monotonic() - t) * 1000))'; }
ip netns exec b python3 -c '
import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 7001)); s.listen(8)
while True: s.accept()[0].close()' &
srv=$!
sleep 1
rtt_ms >/dev/null # warm up (ARP, page cache)
base=$(rtt_ms)
check "wan-border on a" "$X" switch apply wan-border pa --netns a
check "wan-border on b" "$X" switch apply wan-border pb --netns b
check "netem 5 ms with a 10000-packet limit" sh -c "tc -n a qdisc show dev pa | grep -q 'netem 10: parent 1:1 limit 10000 delay 5ms'"
wan=$(rtt_ms)
echo "  handshake RTT: $base ms without, $wan ms with two wan-border ports (10 ms configured)"
check "handshake RTT through two border ports in [10, 30] ms" test "$wan" -ge 10 -a "$wan" -le 30
check "wan-uno-loss-setup1 (Gilbert-Elliott)" "$X" switch apply wan-uno-loss-setup1 pa --netns a
check "gemodel loss configured" sh -c "tc -n a qdisc show dev pa | grep -q 'loss gemodel'"
check "revert a" "$X" switch revert pa --netns a
check "revert b" "$X" switch revert pb --netns b
check "no htb left" sh -c "! tc -n a qdisc show dev pa | grep -q htb"
after=$(rtt_ms)
check "RTT back to base after revert (< 5 ms)" test "$after" -lt 5
kill $srv
ip netns del a; ip netns del b
echo "$pass passed, $fail failed"
((fail == 0))
