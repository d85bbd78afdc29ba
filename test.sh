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

# Each step is announced with the time the suite has run so far and what the
# step before it took: CI has a time limit, and this is where it goes.
step_started=$SECONDS
stage() {
    printf '[test] [%dm%02ds, last step %ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) \
        $((SECONDS - step_started)) "$1" >&2
    step_started=$SECONDS
}

if ! command -v cargo >/dev/null; then
    stage "installing a Rust toolchain (Debian packages)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq cargo rustc >/dev/null
fi

stage "eBPF toolchain (rustc-web, bpf-linker, bpftool, test tools)"
XDCC_BPF_LINKER_DIR=$(ebpf/install-toolchain.sh)

stage "the CLI crate's unit tests without building any BPF object (XDCC_NO_BPF=1: no bpf-linker, no BTF)"
XDCC_NO_BPF=1 cargo test --release --locked -p xdcc
export XDCC_BPF_LINKER_DIR

stage "cargo tests (release build: overflow checks stay on, as in the kernel)"
cargo test --release --workspace --locked
cargo build --release --locked -p xdcc -p xdcc-metrics -p xdcc-sim

stage "BPF struct_ops CCs: build from the algorithm crate, check it is BPF-clean (no 128-bit ops, overflow intrinsics, signed division, libcalls)"
bpf_out=$(mktemp -d)
kmods/bpf/build.sh "$bpf_out"
rm -rf "$bpf_out"

stage "coverage-guided fuzzers, briefly: every CC through the Linux adapter, and the fast paths against the full logic (20,000 sequences each; the deep run is kmods/algo/fuzz/run.sh)"
# (The transport's fuzzer, userspace/transport/fuzz/run.sh, is not run here:
# its instrumented build adds ~4 min to a suite near CI's limit; the cargo
# tests above feed its parser 200,000 random datagrams.)
kmods/algo/fuzz/run.sh 20000

stage "testbed runner units (scenarios, topology validation, profiles, metrics)"
if [[ ! -x /usr/bin/python3 ]] || ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq python3 python3-matplotlib >/dev/null
fi
/usr/bin/python3 testbed/runner/test_runner.py

stage "docs: every relative link and anchor in README.md, docs/ and RESULTS.md resolves"
/usr/bin/python3 docs/check_links.py
stage "docs: the tunables reference in docs/tunables.md matches the Params doc comments and defaults"
/usr/bin/python3 docs/gen_tunables.py --check
stage "docs: the CLI reference in docs/cli-reference.md matches the binary's help"
/usr/bin/python3 docs/gen_cli.py --check

if [[ ${XDCC_SKIP_NETNS:-0} != 1 ]]; then
    stage "eBPF telemetry, rerouting and the CLI in network namespaces (host kernel)"
    userspace/tests/netns.sh
    stage "real speed on the host kernel: the BPF CCs through a 1 Gbit/s port against their targets, and the host backend end to end (userspace/tests/realspeed.sh, ~1.5 min)"
    userspace/tests/realspeed.sh
    stage "the testbed's servers backend over SSH against four sshd namespaces (userspace/tests/servers.sh, ~30 s)"
    userspace/tests/servers.sh
    stage "the systemd units under a real systemd (systemd-nspawn --boot of a Debian root; userspace/tests/systemd.sh)"
    userspace/tests/systemd.sh
    stage "the Ansible role rolling xdcc out to three hosts (systemd-nspawn with sshd; userspace/tests/ansible.sh, ~1 min)"
    userspace/tests/ansible.sh
fi

if [[ ${XDCC_SKIP_VM:-0} != 1 ]]; then
    stage "kernel modules and the xdcc CLI in the VM (every CC of xdcc cc known: tcp_<cc>)"
    testbed/kernel/build.sh >/dev/null
    testbed/vm/run.sh --timeout 1800 testbed/vm/tests/kmods.sh
    stage "kernel modules through event sequences (RTO storm, app-limited, idle, non-ECN peer, delayed ACKs, no handshake RTT) in the VM"
    testbed/vm/run.sh --timeout 1500 testbed/vm/tests/events.sh
    stage "xdcc's DCTCP against Linux's own tcp_dctcp on a step-marking port in the VM"
    # Completion times in a TCG guest vary between two runs of one CC by up
    # to ~10 % on a busy host (the suite prints each CC's spread;
    # testbed/notes/2026-11-28-flakes.md): a failed comparison runs once
    # more, and that run is judged in full.
    if ! testbed/vm/run.sh --timeout 900 testbed/vm/tests/dctcp.sh; then
        echo "[test] the DCTCP comparison failed (its lines above): running it once more"
        testbed/vm/run.sh --timeout 900 testbed/vm/tests/dctcp.sh
    fi
    stage "switch profiles (RED, step marking, netem) in the VM"
    testbed/vm/run.sh --timeout 300 testbed/vm/tests/switch.sh
    stage "testbed: 2-DC topology (namespaces, addresses, routes, qdiscs) in the VM"
    testbed/vm/run.sh --timeout 600 testbed/runner/guest.sh topo-test
    stage "testbed: the CI smoke scenario end to end, down to a report"
    smoke=$(mktemp -d)
    trap 'rm -rf "$smoke"' EXIT
    # (--cc with a comma: the list must reach the guest as one argument)
    testbed/run.sh ci-smoke --cc gemini,dctcp --out "$smoke"
    # Exit 3: the only disagreements with the model are in runs whose guest
    # stalled (the host did not run the VM's CPU: check_report.py,
    # STALLED_GAPS); the comparison is void there, so the scenario runs once
    # more and that run is judged in full.
    rc=0; /usr/bin/python3 testbed/runner/check_report.py "$smoke" || rc=$?
    if ((rc == 3)); then
        echo "[test] the guest stalled in the smoke scenario: running it once more"
        testbed/run.sh ci-smoke --cc gemini,dctcp --out "$smoke/again"
        rc=0; /usr/bin/python3 testbed/runner/check_report.py "$smoke/again" || rc=$?
        ((rc != 3)) || echo "[test] the guest stalled twice: this host is too busy for the smoke's kernel-vs-model check"
    fi
    ((rc == 0))
    stage "testbed: a real-speed scenario file on the VM backend (the modules, 20x slowed), judged as on the host backend"
    testbed/run.sh --backend vm realspeed-incast --cc dctcp --out "$smoke/vm"
    # A TCG guest's timing: the session CI of 0acb019 saw the port at 80.4 %
    # (model 100 %) once, in a run whose every other suite passed; not yet
    # traced (testbed/notes/2026-11-28-flakes.md). A miss runs once more, and
    # that run is judged in full.
    if ! testbed/host/check_dctcp_incast.py "$smoke/vm" "vm backend"; then
        echo "[test] the VM backend's DCTCP incast missed (its line above): running it once more"
        testbed/run.sh --backend vm realspeed-incast --cc dctcp --out "$smoke/vm-again"
        testbed/host/check_dctcp_incast.py "$smoke/vm-again" "vm backend"
    fi
fi
stage "all suites passed"
