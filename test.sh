#!/usr/bin/env bash
# The xdcc test suite: everything a fresh machine needs is installed here.
#   ./test.sh          1. cargo tests: algorithms, the Linux adapter, simulator,
#                         eBPF map types, agent/CLI units (builds the eBPF
#                         programs); the BPF struct_ops CCs built and checked
#                         for BPF-cleanliness (kmods/bpf/build.sh); the
#                         fuzzers, briefly (kmods/algo/fuzz/run.sh 20000)
#                      2. host namespace tests of the eBPF programs, agent
#                         and CLI (userspace/tests/netns.sh, root), and the
#                         BPF CCs at real speed (userspace/tests/realspeed.sh),
#                         the testbed's servers backend over SSH
#                         (userspace/tests/servers.sh), the systemd units
#                         booted under systemd-nspawn (systemd.sh), the
#                         Ansible role on three such hosts (ansible.sh)
#                      3. the kernel modules (incl. their event-sequence
#                         tests), DCTCP against Linux's tcp_dctcp, the CLI and
#                         the switch profiles in the qemu VM
#                         (builds the test kernel on first use: ~15 min)
#                      4. the 2-DC testbed: runner units (host), topology
#                         build in the VM, and a short scenario end to end
#                         (testbed/scenarios/ci-smoke.toml) down to a report;
#                         a real-speed scenario file on the VM backend
#   XDCC_SKIP_VM=1 ./test.sh      skip 3
#   XDCC_SKIP_NETNS=1 ./test.sh   skip 2
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if ! command -v cargo >/dev/null; then
    echo "[test] installing a Rust toolchain (Debian packages)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq cargo rustc >/dev/null
fi

echo "[test] eBPF toolchain (rustc-web, bpf-linker, bpftool, test tools)" >&2
XDCC_BPF_LINKER_DIR=$(ebpf/install-toolchain.sh)

echo "[test] the CLI crate's unit tests without building any BPF object (XDCC_NO_BPF=1: no bpf-linker, no BTF)" >&2
XDCC_NO_BPF=1 cargo test --release --locked -p xdcc
export XDCC_BPF_LINKER_DIR

echo "[test] cargo tests (release build: overflow checks stay on, as in the kernel)" >&2
cargo test --release --workspace --locked
cargo build --release --locked -p xdcc -p xdcc-metrics -p xdcc-sim

echo "[test] BPF struct_ops CCs: build from the algorithm crate, check it is BPF-clean (no 128-bit ops, overflow intrinsics, signed division, libcalls)" >&2
bpf_out=$(mktemp -d)
kmods/bpf/build.sh "$bpf_out"
rm -rf "$bpf_out"

echo "[test] coverage-guided fuzzers, briefly: every CC through the Linux adapter, and the fast paths against the full logic (20,000 sequences each; the deep run is kmods/algo/fuzz/run.sh)" >&2
kmods/algo/fuzz/run.sh 20000

echo "[test] testbed runner units (scenarios, topology validation, profiles, metrics)" >&2
if [[ ! -x /usr/bin/python3 ]] || ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq python3 python3-matplotlib >/dev/null
fi
/usr/bin/python3 testbed/runner/test_runner.py

echo "[test] docs: every relative link and anchor in README.md, docs/ and RESULTS.md resolves" >&2
/usr/bin/python3 docs/check_links.py
echo "[test] docs: the tunables reference in docs/tunables.md matches the Params doc comments and defaults" >&2
/usr/bin/python3 docs/gen_tunables.py --check
echo "[test] docs: the CLI reference in docs/cli-reference.md matches the binary's help" >&2
/usr/bin/python3 docs/gen_cli.py --check

if [[ ${XDCC_SKIP_NETNS:-0} != 1 ]]; then
    echo "[test] eBPF telemetry, rerouting and the CLI in network namespaces (host kernel)" >&2
    userspace/tests/netns.sh
    echo "[test] real speed on the host kernel: the BPF CCs through a 1 Gbit/s port against their targets, and the host backend end to end (userspace/tests/realspeed.sh, ~1.5 min)" >&2
    userspace/tests/realspeed.sh
    echo "[test] the testbed's servers backend over SSH against four sshd namespaces (userspace/tests/servers.sh, ~30 s)" >&2
    userspace/tests/servers.sh
    echo "[test] the systemd units under a real systemd (systemd-nspawn --boot of a Debian root; userspace/tests/systemd.sh)" >&2
    userspace/tests/systemd.sh
    echo "[test] the Ansible role rolling xdcc out to three hosts (systemd-nspawn with sshd; userspace/tests/ansible.sh, ~1 min)" >&2
    userspace/tests/ansible.sh
fi

if [[ ${XDCC_SKIP_VM:-0} != 1 ]]; then
    echo "[test] kernel modules and the xdcc CLI in the VM (every CC of xdcc cc known: tcp_<cc>)" >&2
    testbed/kernel/build.sh >/dev/null
    testbed/vm/run.sh --timeout 1800 testbed/vm/tests/kmods.sh
    echo "[test] kernel modules through event sequences (RTO storm, app-limited, idle, non-ECN peer, delayed ACKs, no handshake RTT) in the VM" >&2
    testbed/vm/run.sh --timeout 1500 testbed/vm/tests/events.sh
    echo "[test] xdcc's DCTCP against Linux's own tcp_dctcp on a step-marking port in the VM" >&2
    testbed/vm/run.sh --timeout 900 testbed/vm/tests/dctcp.sh
    echo "[test] switch profiles (RED, step marking, netem) in the VM" >&2
    testbed/vm/run.sh --timeout 300 testbed/vm/tests/switch.sh
    echo "[test] testbed: 2-DC topology (namespaces, addresses, routes, qdiscs) in the VM" >&2
    testbed/vm/run.sh --timeout 600 testbed/runner/guest.sh topo-test
    echo "[test] testbed: the CI smoke scenario end to end, down to a report" >&2
    smoke=$(mktemp -d)
    trap 'rm -rf "$smoke"' EXIT
    # (--cc with a comma: the list must reach the guest as one argument)
    testbed/run.sh ci-smoke --cc gemini,dctcp --out "$smoke"
    /usr/bin/python3 testbed/runner/check_report.py "$smoke"
    echo "[test] testbed: a real-speed scenario file on the VM backend (the modules, 20x slowed), judged as on the host backend" >&2
    testbed/run.sh --backend vm realspeed-incast --cc dctcp --out "$smoke/vm"
    testbed/host/check_dctcp_incast.py "$smoke/vm" "vm backend"
fi
