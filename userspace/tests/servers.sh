#!/usr/bin/env bash
# The testbed's servers backend (testbed/host/run.py --backend servers) end
# to end, against four "machines" that are network namespaces each running
# its own sshd with test-generated keys: two senders, a router, a receiver,
# reached over a management bridge as real servers are over their
# management network, with the data path s0/s1 -> r -> d apart from it.
# DCTCP in the 16-to-1 incast beside a long flow (the scenario the host
# backend's test runs), then the same checks: every incast flow completes,
# the port is full, the step marker holds the queue near K, the model sits
# beside the run. And what a run must leave behind on real machines: each
# machine's default CC put back, the port's qdisc removed from the router,
# the copied xdcc binary gone, the BPF CC it registered unregistered. A bad
# inventory is refused with the key named, before anything runs.
#   userspace/tests/servers.sh   (root; installs openssh-server if missing)
# Prints the test library's TAP lines (tests/lib/lib.sh) and "N passed, M
# failed"; a machine that cannot be set up (sshd not answering) ends it
# with an error before any check.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../tests/lib/lib.sh
source "$root/tests/lib/lib.sh"
[[ $(id -u) == 0 ]] || { echo "servers.sh: needs root (namespaces, BPF)" >&2; exit 2; }
if [[ ! -x /usr/sbin/sshd ]] || ! command -v ssh-keygen >/dev/null; then
    echo "[servers] installing openssh-server (sshd for the test's machines)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null
fi
tag=$$
dir=$(mktemp -d /tmp/xdcc-servers.XXXXXX)
names=(s0 s1 r d)
N() { echo "xs$tag-$1"; }
cleanup() {
    for f in "$dir"/sshd-*.pid; do [[ -s $f ]] && kill "$(cat "$f")" 2>/dev/null; done
    for n in "${names[@]}"; do ip netns del "$(N "$n")" 2>/dev/null || true; done
    [[ -z ${bridge-} ]] || ip link del "$bridge" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
die() { echo "[servers] cannot set up the machines: $*" >&2; exit 1; }

# Management network: a bridge in this namespace, 10.80.0.254; machine k at 10.80.0.k.
bridge=$(host_bridge xsb 10.80.0.0/24 10.80.0.254/24) || die "no management bridge"
k=0
for n in "${names[@]}"; do
    k=$((k + 1))
    ip netns add "$(N "$n")"
    ip -n "$(N "$n")" link set lo up
    ip link add "xsm$tag-$k" type veth peer m0 netns "$(N "$n")"
    ip link set "xsm$tag-$k" master "$bridge" up
    ip -n "$(N "$n")" addr add "10.80.0.$k/24" dev m0
    ip -n "$(N "$n")" link set m0 up
done
# Data path: s0 -> r (10.81.1.0/24), s1 -> r (10.81.2.0/24), r -> d (10.81.200.0/24).
for l in "s0 e0 a0 1" "s1 e0 a1 2" "d e0 p0 200"; do
    read -r a ia ib net <<<"$l"
    ip link add "$ia" netns "$(N "$a")" type veth peer "$ib" netns "$(N r)"
    ip -n "$(N "$a")" addr add "10.81.$net.1/24" dev "$ia"
    ip -n "$(N r)" addr add "10.81.$net.2/24" dev "$ib"
    ip -n "$(N "$a")" link set "$ia" up
    ip -n "$(N r)" link set "$ib" up
    ip -n "$(N "$a")" route add default via "10.81.$net.2"
done
ip netns exec "$(N r)" sysctl -qw net.ipv4.ip_forward=1

# sshd per machine: its own network namespace, this machine's mount
# namespace (so a BPF CC registered over ssh is pinned where every machine
# of this one kernel finds it, as on separate servers each finds its own).
ssh-keygen -q -t ed25519 -N '' -C xdcc-test -f "$dir/id"
ssh-keygen -q -t ed25519 -N '' -C xdcc-test-host -f "$dir/host"
cat >"$dir/sshd_config" <<CFG
HostKey $dir/host
AuthorizedKeysFile $dir/id.pub
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel ERROR
CFG
mkdir -p /run/sshd
k=0
for n in "${names[@]}"; do
    k=$((k + 1))
    nsenter --net="/run/netns/$(N "$n")" /usr/sbin/sshd -D -e -f "$dir/sshd_config" \
        -o "ListenAddress=10.80.0.$k" -o "PidFile=$dir/sshd-$n.pid" 2>>"$dir/sshd.log" &
done
ssh_opts=(-i "$dir/id" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5)
for k in 1 2 3 4; do
    for _ in $(seq 50); do ssh "${ssh_opts[@]}" -o BatchMode=yes "root@10.80.0.$k" true 2>/dev/null && break; sleep 0.1; done
    ssh "${ssh_opts[@]}" -o BatchMode=yes "root@10.80.0.$k" true || die "sshd on 10.80.0.$k does not answer: $(cat "$dir/sshd.log")"
done
q() { printf '"%s", ' "$@" | sed 's/, $//'; }
cat >"$dir/inventory.toml" <<INV
ssh_options = [$(q "${ssh_opts[@]}")]
work_dir = "/tmp/xdcc-servers-test-$tag"
[router]
ssh = "root@10.80.0.3"
port_iface = "p0"
[receiver]
ssh = "root@10.80.0.4"
addr = "10.81.200.1"
iface = "e0"
[[senders]]
ssh = "root@10.80.0.1"
[[senders]]
ssh = "root@10.80.0.2"
INV

# A bad inventory: refused, the key named, nothing started.
sed '/port_iface/d' "$dir/inventory.toml" >"$dir/bad.toml"
expect_fail "an inventory without [router] port_iface is refused, the key named" port_iface \
    "$root/testbed/host/run.py" "$root/testbed/scenarios/realspeed-incast.toml" --cc dctcp --backend servers \
    --inventory "$dir/bad.toml"

before_cc=$(ip netns exec "$(N s0)" sysctl -n net.ipv4.tcp_congestion_control)
had_bpf_dctcp=$(grep -cw bpf_dctcp /proc/sys/net/ipv4/tcp_available_congestion_control || true)
# The run and its checks, as one real-speed run (tests/lib/lib.sh unstarved:
# a run the hypervisor starved is void and run again).
incast() { # incast N
    "$root/testbed/host/run.py" "$root/testbed/scenarios/realspeed-incast.toml" --cc dctcp --backend servers \
        --inventory "$dir/inventory.toml" --out "$dir/out$1" >"$dir/run$1.log" 2>&1 || {
        tail -n 20 "$dir/run$1.log"; echo "[servers] run $1: testbed/host/run.py failed (above)"; return 1; }
    "$root/testbed/host/check_dctcp_incast.py" "$dir/out$1" servers
}
check "DCTCP's 16-to-1 incast runs on the four machines over ssh, and its checks hold (every flow completes, port full, queue near K, model beside it)" \
    unstarved servers 1 incast
# What the run leaves on the machines.
default_cc() { [[ $(ip netns exec "$(N "$1")" sysctl -n net.ipv4.tcp_congestion_control) == "$before_cc" ]]; }
for n in s0 s1 d; do
    check "machine $n's default CC is put back ($before_cc)" default_cc "$n"
done
no_htb() { ! tc -n "$(N r)" qdisc show dev p0 | grep -q htb; }
check "the port's HTB is removed from the router's p0" no_htb
work_dir_empty() { [[ -z $(find "/tmp/xdcc-servers-test-$tag" -mindepth 1 2>/dev/null) ]]; }
check "the run leaves no file in its work_dir (the copied xdcc is gone)" work_dir_empty
rmdir "/tmp/xdcc-servers-test-$tag" 2>/dev/null || true
bpf_dctcp_gone() { [[ $had_bpf_dctcp != 0 ]] || ! grep -qw bpf_dctcp /proc/sys/net/ipv4/tcp_available_congestion_control; }
check "bpf_dctcp, registered by the run, is unregistered after it" bpf_dctcp_gone
tap_done
