#!/bin/bash
# Ad-hoc measurement: one 12 MB transfer per CC through the fifo bottleneck.
#   run.sh testbed/vm/tests/probe.sh cubic uno ...
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd); root=$(cd "$here/../../.." && pwd)
source "$here/lib.sh"
mode=${PROBE_QDISC:-fifo}
for m in "$@"; do [[ -f $root/kmods/tcp_$m.ko ]] && insmod "$root/kmods/tcp_$m.ko" && configure_cc "$m"; done
for cc in "$@"; do
    net_up "$mode"
    t0=$(date +%s.%N); transfer "$cc" ${PROBE_BYTES:-4000000}; t1=$(date +%s.%N)
    echo "$cc ok=$XFER_OK maxcwnd=$MAX_CWND seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}') pacing=$LAST_PACING"
    echo "  $(tail -1 <<<"$SS_LINES")"
    net_down
done
