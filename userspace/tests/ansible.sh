#!/usr/bin/env bash
# The Ansible role (packaging/ansible) rolling xdcc out to a fleet of three
# hosts, as operators push such a change: each host is a Debian root
# (userspace/tests/debian-root.sh, an overlay per host) booted under
# systemd-nspawn with a real systemd as PID 1 in its own network namespace,
# running sshd with test-generated host and client keys, reached by
# ansible-playbook over a bridge. The inventory gives the fleet UnoCC and
# Gemini with their network, a tunable and a policy, and one host its own
# default CC. Checks:
#   - the play succeeds on all three hosts;
#   - on each: the units are enabled and running, the file is what the
#     inventory says, the default CC is the host's, the tunable written,
#     and `xdcc apply --check` is clean;
#   - a second run changes nothing (idempotent);
#   - a default CC changed by hand on one host is drift (`apply --check`
#     exits 1) and the next run puts it back on that host only;
#   - a bad inventory value (an unknown tunable) fails the template's
#     validation and leaves every host's file as it was.
# The three hosts share this machine's kernel, where a CC's registration is
# kernel-wide (on a real fleet each host has its own): they share this
# machine's BPF filesystem at /sys/fs/bpf (mounted there first if it is not,
# as systemd does at boot) so each sees the registration another made
# (without it each host's xdcc mounts its own and finds the CC another
# registered without its pins: "bpf_gemini is not loaded"), and the play runs one host at
# a time (ANSIBLE_FORKS=1) so two hosts never register the same CC at once.
# What the test registered is unregistered afterwards. Nothing is written
# outside the test's directory but the root cache (ansible's own state
# included: ANSIBLE_HOME, ANSIBLE_LOCAL_TEMP).
#   userspace/tests/ansible.sh   (root; installs ansible-core, openssh-client,
#                                 systemd-container, debootstrap, dpkg-dev)
# Prints the test library's TAP lines (tests/lib/lib.sh) and "N passed, M
# failed"; hosts that cannot be built or booted end it with an error.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../tests/lib/lib.sh
source "$root/tests/lib/lib.sh"
X=$root/target/release/xdcc
[[ $(id -u) == 0 ]] || { echo "ansible.sh: needs root" >&2; exit 2; }
[[ -x $X ]] || { echo "ansible.sh: build first: cargo build --release -p xdcc" >&2; exit 2; }
if ! command -v ansible-playbook >/dev/null || ! command -v ssh-keygen >/dev/null || ! command -v dpkg-shlibdeps >/dev/null; then
    echo "[ansible] installing ansible-core, openssh-client and dpkg-dev" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends ansible-core openssh-client dpkg-dev >/dev/null
fi
# shellcheck source=userspace/tests/debian-root.sh
source "$root/userspace/tests/debian-root.sh"
rootfs=$(debian_root)

mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
tag=$$
dir=$(mktemp -d /tmp/xdcc-ansible.XXXXXX)
hosts=(h1 h2 h3)
before=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)
cleanup() {
    set +e
    for h in "${hosts[@]}"; do
        [[ -s $dir/nspawn-$h.pid ]] && kill "$(cat "$dir/nspawn-$h.pid")" 2>/dev/null
    done
    sleep 1
    for h in "${hosts[@]}"; do
        [[ -s $dir/nspawn-$h.pid ]] && kill -9 "$(cat "$dir/nspawn-$h.pid")" 2>/dev/null
        mountpoint -q "$dir/$h/root" && umount -l "$dir/$h/root"
    done
    [[ -n ${bridge-} ]] && ip link del "$bridge" 2>/dev/null
    [[ -s $dir/cgroups ]] && while read -r d; do find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done <"$dir/cgroups"
    for cc in uno gemini; do
        [[ " $before " == *" bpf_$cc "* ]] || "$X" cc unload "$cc" --bpf >/dev/null 2>&1
    done
    if [[ ${XDCC_KEEP:-0} == 1 ]]; then echo "[ansible] kept $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT
die() { echo "[ansible] cannot set up the hosts: $*" >&2; exit 1; }

deb=$("$root/packaging/deb/build.sh" "$dir/deb")

# Keys: one client key (Ansible's), one host key per machine, known_hosts
# so ssh checks every host key strictly.
ssh-keygen -q -t ed25519 -N '' -C xdcc-ansible-test -f "$dir/id"
: >"$dir/known_hosts"

# The hosts: 10.82.0.k on a bridge (10.82.0.254), each an overlay of the
# cached root with its own host key and root's authorized key.
bridge=$(host_bridge xab 10.82.0.0/24 10.82.0.254/24) || die "no bridge for the hosts"
cgroup=/sys/fs/cgroup
[[ -d /sys/fs/cgroup/unified ]] && cgroup=/sys/fs/cgroup/unified
# Each container's systemd must own its cgroup tree (--keep-unit makes the
# caller's cgroup the container's root): three containers in one cgroup
# would manage the same /system.slice. own_cgroup NAME moves the calling
# process into a new child cgroup of its own in every hierarchy systemd uses
# (cgroup2, and v1's name=systemd on hybrid hosts).
cgroup_dirs() {
    local line mnt
    while read -r line; do
        case $line in
            0::*) mnt=$(findmnt -n -t cgroup2 -o TARGET | head -1); [[ -n $mnt ]] && echo "$mnt${line#0::}" ;;
            *:name=systemd:*) mnt=$(findmnt -n -t cgroup -o TARGET,OPTIONS | awk '/name=systemd/ {print $1; exit}');
                [[ -n $mnt ]] && echo "$mnt${line#*:name=systemd:}" ;;
        esac
    done </proc/self/cgroup
}
own_cgroup() {
    local d
    for d in $(cgroup_dirs); do
        mkdir -p "${d%/}/$1" && echo "$BASHPID" >"${d%/}/$1/cgroup.procs" && echo "${d%/}/$1" >>"$dir/cgroups"
    done
}
k=0
for h in "${hosts[@]}"; do
    k=$((k + 1))
    m=$dir/$h
    mkdir -p "$m/upper" "$m/work" "$m/root"
    mount -t overlay overlay -o "lowerdir=$rootfs,upperdir=$m/upper,workdir=$m/work" "$m/root" ||
        cp -a "$rootfs/." "$m/root/"
    ssh-keygen -q -t ed25519 -N '' -C "xdcc-ansible-$h" -f "$m/root/etc/ssh/ssh_host_ed25519_key"
    echo "10.82.0.$k $(cut -d' ' -f1,2 "$m/root/etc/ssh/ssh_host_ed25519_key.pub")" >>"$dir/known_hosts"
    install -d -m 700 "$m/root/root/.ssh"
    install -m 600 "$dir/id.pub" "$m/root/root/.ssh/authorized_keys"
    echo "$h" >"$m/root/etc/hostname"
    cat >"$m/root/etc/systemd/system/xdcc-test-net.service" <<UNIT
[Unit]
Description=the test network's address
Before=network.target ssh.service xdcc.service
DefaultDependencies=no
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/sbin/ip addr add 10.82.0.$k/24 dev host0
ExecStart=/sbin/ip link set host0 up
ExecStart=/sbin/ip link set lo up
[Install]
WantedBy=sysinit.target
UNIT
    mkdir -p "$m/root/etc/systemd/system/sysinit.target.wants"
    ln -sf /etc/systemd/system/xdcc-test-net.service "$m/root/etc/systemd/system/sysinit.target.wants/"
    # systemd-nspawn --boot as in systemd.sh, its own network namespace
    # joined to the bridge by a veth (host0 inside, set up at boot above).
    (own_cgroup "xdcc-ansible-$tag-$h"; exec systemd-nspawn -q -D "$m/root" --register=no --keep-unit --boot \
        -M "xa$tag-$h" --network-bridge="$bridge" \
        --capability=all --system-call-filter="bpf perf_event_open" \
        --bind=/sys/fs/bpf) >"$dir/nspawn-$h.log" 2>&1 &
    echo $! >"$dir/nspawn-$h.pid"
done
S() { # S HOST CMD...: run CMD on HOST over ssh
    local h=$1; shift
    ssh -q -i "$dir/id" -o UserKnownHostsFile="$dir/known_hosts" -o StrictHostKeyChecking=yes \
        -o BatchMode=yes -o ConnectTimeout=2 "root@10.82.0.${h#h}" "$@"
}
for h in "${hosts[@]}"; do
    for _ in $(seq 60); do S "$h" true 2>/dev/null && break; sleep 1; done
    S "$h" true || die "$h: no ssh after 60 s: $(tail -5 "$dir/nspawn-$h.log")"
done
echo "[ansible] three hosts booted under systemd, sshd answering with their own host keys" >&2

# The inventory: the fleet's CCs, network, tunable and policy; h1's own default.
cat >"$dir/inventory.yml" <<INV
xdcc:
  hosts:
    h1: {ansible_host: 10.82.0.1, xdcc_default_cc: bpf_uno}
    h2: {ansible_host: 10.82.0.2}
    h3: {ansible_host: 10.82.0.3}
  vars:
    ansible_user: root
    ansible_python_interpreter: /usr/bin/python3
    ansible_ssh_private_key_file: $dir/id
    ansible_ssh_common_args: -o UserKnownHostsFile=$dir/known_hosts -o StrictHostKeyChecking=yes
    xdcc_deb: $deb
    xdcc_default_cc: bpf_gemini
    xdcc_cgroup: $cgroup
    xdcc_ccs:
      uno:
        net: {link_rate_mbps: 25000, intra_rtt_us: 14, inter_rtt_us: 2000, mtu: 1500}
        tunables: {k_bytes: 31000}
      gemini:
        net: {link_rate_mbps: 25000, intra_rtt_us: 14, inter_rtt_us: 2000, mtu: 1500}
    xdcc_policy:
      - {prefix: 10.82.0.0/24, cc: bpf_uno}
      - {prefix: 0.0.0.0/0, cc: bpf_gemini}
INV
export ANSIBLE_HOME=$dir/ansible-home ANSIBLE_LOCAL_TEMP=$dir/ansible-tmp ANSIBLE_FORKS=1 \
    ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_CONFIG=$dir/ansible.cfg
: >"$dir/ansible.cfg"  # no ansible.cfg of this machine applies
play() { # play LOG [extra args]: run the role's playbook, log kept
    local log=$1; shift
    ansible-playbook -i "$dir/inventory.yml" "$root/packaging/ansible/site.yml" "$@" >"$dir/$log" 2>&1
}
recap() { # recap LOG HOST KEY: a number from the play recap
    sed -n "s/^$2 *:.*$3=\([0-9]*\).*/\1/p" "$dir/$1"
}
journals() { # the xdcc units' journal of every host, for a failure
    for h in "${hosts[@]}"; do echo "--- $h"; S "$h" journalctl -u xdcc.service -u xdcc-agent.service --no-pager -n 20; done 2>&1
}
# first_run: the role's first run succeeds and changes every host.
first_run() {
    play run1.log || { tail -30 "$dir/run1.log"; journals; return 1; }
    for h in "${hosts[@]}"; do
        [[ $(recap run1.log "$h" failed) == 0 && $(recap run1.log "$h" unreachable) == 0 && $(recap run1.log "$h" changed) -gt 0 ]] ||
            { echo "first run on $h: $(grep "^$h " "$dir/run1.log")"; return 1; }
    done
}
check "the role runs on all three hosts, each changed, none failed or unreachable" first_run

# host_state HOST DEFAULT: what the role leaves on HOST.
host_state() {
    local h=$1 want=$2 v
    v=$(S "$h" systemctl is-enabled xdcc.service xdcc-agent.service | tr '\n' ' ')
    [[ $v == "enabled enabled " ]] || { echo "units enabled: $v"; return 1; }
    v=$(S "$h" systemctl is-active xdcc.service xdcc-agent.service | tr '\n' ' ')
    [[ $v == "active active " ]] || { echo "units active: $v"; return 1; }
    v=$(S "$h" cat /proc/sys/net/ipv4/tcp_congestion_control)
    [[ $v == "$want" ]] || { echo "default CC $v, want $want"; return 1; }
    S "$h" grep -q "'^prefix = \"10.82.0.0/24\"'" /etc/xdcc/xdcc.toml || { echo "the policy is not in its file"; return 1; }
    v=$(S "$h" xdcc tunable get bpf_uno k_bytes)
    [[ $v == 31000 ]] || { echo "k_bytes = $v"; return 1; }
    v=$(S "$h" xdcc tunable get bpf_gemini net_link_rate_mbps)
    [[ $v == 25000 ]] || { echo "gemini's net_link_rate_mbps = $v"; return 1; }
    S "$h" xdcc apply --check || { echo "apply --check is not clean"; return 1; }
    S "$h" xdcc stats >/dev/null || { echo "the agent does not answer"; return 1; }
}
want_default=(bpf_uno bpf_gemini bpf_gemini)
k=0
for h in "${hosts[@]}"; do
    check "$h: units enabled and active, default ${want_default[$k]}, policy, tunables and network written, the agent answers, apply --check clean" \
        host_state "$h" "${want_default[$k]}"
    k=$((k + 1))
done

second_run() {
    play run2.log || { tail -30 "$dir/run2.log"; return 1; }
    for h in "${hosts[@]}"; do
        [[ $(recap run2.log "$h" changed) == 0 && $(recap run2.log "$h" failed) == 0 ]] ||
            { echo "changed on $h: $(grep "^$h " "$dir/run2.log")"; return 1; }
    done
}
check "a second run changes nothing on any host (idempotent)" second_run

S h2 sysctl -qw net.ipv4.tcp_congestion_control=reno
drift_seen() {
    if S h2 xdcc apply --check >"$dir/drift.log" 2>&1; then echo "apply --check passed"; return 1; fi
    grep -q reno "$dir/drift.log" || { cat "$dir/drift.log"; return 1; }
}
check "h2: a default CC changed by hand (reno) is drift: apply --check fails and names it" drift_seen
drift_run() {
    play run3.log || { tail -30 "$dir/run3.log"; return 1; }
    [[ $(recap run3.log h2 changed) == 1 && $(recap run3.log h1 changed) == 0 && $(recap run3.log h3 changed) == 0 ]] ||
        { grep '^h[0-9] ' "$dir/run3.log"; return 1; }
    [[ $(S h2 cat /proc/sys/net/ipv4/tcp_congestion_control) == bpf_gemini ]] || { echo "h2: default not put back"; return 1; }
    S h2 xdcc apply --check
}
check "the next run puts h2's default back, on h2 only, and apply --check is clean" drift_run

for h in "${hosts[@]}"; do S "$h" sha256sum /etc/xdcc/xdcc.toml; done >"$dir/files.before"
bad_value_refused() {
    if play run4.log -e '{"xdcc_ccs": {"uno": {"tunables": {"no_such_knob": 1}}}}'; then echo "the play succeeded"; return 1; fi
    grep -q "no_such_knob" "$dir/run4.log" || { grep -m3 -i 'fatal\|msg' "$dir/run4.log"; return 1; }
}
check "a bad inventory value (unknown tunable) fails the play, the tunable named" bad_value_refused
refused_left_hosts() {
    for h in "${hosts[@]}"; do S "$h" sha256sum /etc/xdcc/xdcc.toml; done >"$dir/files.after"
    cmp "$dir/files.before" "$dir/files.after" || { echo "a refused file replaced a host's configuration"; return 1; }
    for h in "${hosts[@]}"; do S "$h" xdcc apply --check || { echo "$h: not clean after the refused run"; return 1; }; done
}
check "and leaves every host's file and state as it was" refused_left_hosts

for h in "${hosts[@]}"; do S "$h" systemctl --no-block poweroff || true; done
for h in "${hosts[@]}"; do
    p=$(cat "$dir/nspawn-$h.pid")
    for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 1; done
done
tap_done
