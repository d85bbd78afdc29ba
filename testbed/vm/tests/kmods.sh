#!/bin/bash
# VM tests of the xdcc kernel modules (run by testbed/vm/run.sh inside the
# test kernel). For each xdcc CC (`xdcc cc known`, the algorithm crate's
# list; what each CC is from its properties there, see tests/lib/lib.sh
# cc_is): load, list, select (global, per netns, per socket),
# a byte-exact transfer over veth with a rate limit and netem delay, ECN
# negotiation, reaction to a RED ECN-marking bottleneck, pacing (OSCAR),
# AMRT's growth on anti-ECN marks and its guard against classic ECN marks,
# tunables (read back, EINVAL, effect), and rmmod refused while in use;
# then robustness: every tunable file fuzzed, and 30 load/transfer/unload
# cycles with tunables rewritten mid-transfer; then the xdcc CLI. One file
# per part in kmods/: cc.sh (per CC, with per-cc.sh: the tunables each
# CC's checks use), spare-marks.sh, robustness.sh, cli.sh.
#   run.sh testbed/vm/tests/kmods.sh [CC...]     (default: all of them, all parts)
#   run.sh testbed/vm/tests/kmods.sh robustness [CC...]   (that part only)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
only_robustness=0
if [[ ${1:-} == robustness ]]; then only_robustness=1; shift; fi
source "$here/lib.sh"
select_ccs "$@" || { tap_done; exit 1; }
for part in per-cc cc spare-marks robustness cli; do source "$here/kmods/$part.sh"; done

sysctl_dir() { echo "/proc/sys/net/xdcc/$1"; }

FLOWS_CLI=$XDCC_BIN
[[ -x $FLOWS_CLI ]] || FLOWS_CLI=""
if ((only_robustness == 0)); then
    for cc in "${ccs[@]}"; do
        test_cc "$cc"
    done
fi
if (($# == 0)) || ((only_robustness)); then
    part robustness
    for cc in "${ccs[@]}"; do test_tunable_fuzz "$cc"; done
    part "load/transfer/unload churn"
    test_churn
fi
(($# || only_robustness)) || test_cli
tap_done
