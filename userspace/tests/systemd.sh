#!/usr/bin/env bash
# The Debian package (packaging/deb/build.sh) and its systemd units under a
# real systemd: a Debian root (userspace/tests/debian-root.sh: debootstrap,
# cached; each run works on an overlay of it) gets the
# .deb installed with dpkg, offline as an image build would (its postinst
# enables both units), and the test's /etc/xdcc/xdcc.toml; then
# systemd-nspawn --boot boots it on this host's kernel. Inside it checks:
#   - dpkg enabled both units;
#   - both units pass `systemd-analyze verify`;
#   - xdcc.service ran `xdcc apply` at boot: bpf_uno registered, its network
#     and tunable written, the (container's own network namespace's)
#     default CC is bpf_uno;
#   - xdcc-agent.service is running under its hardening, answers `xdcc
#     stats`, and after `kill -9` systemd restarts it (a new PID, active);
#   - lintian is clean on the package; `xdcc --version` and `xdcc check`
#     run in the root; one man page per subcommand is installed;
#   - `dpkg --purge xdcc` stops the agent and removes the binary and
#     /etc/xdcc.
# Results come back through a bind-mounted directory; the container powers
# itself off. Registrations are kernel-wide: what the container registered
# is unregistered afterwards if it was not there before.
#   userspace/tests/systemd.sh   (root; installs systemd-container, debootstrap
#                                 and dpkg-dev, downloads ~60 MB of .debs once)
# Prints the test library's TAP lines (tests/lib/lib.sh) and "N passed, M
# failed"; a root that cannot be built or booted ends it with an error.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../tests/lib/lib.sh
source "$root/tests/lib/lib.sh"
X=$root/target/release/xdcc
[[ $(id -u) == 0 ]] || { echo "systemd.sh: needs root" >&2; exit 2; }
[[ -x $X ]] || { echo "systemd.sh: build first: cargo build --release -p xdcc" >&2; exit 2; }
if ! command -v dpkg-shlibdeps >/dev/null || ! command -v lintian >/dev/null; then
    echo "[systemd] installing dpkg-dev and lintian" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends dpkg-dev lintian >/dev/null
fi
# shellcheck source=userspace/tests/debian-root.sh
source "$root/userspace/tests/debian-root.sh"
rootfs=$(debian_root)
work=$(mktemp -d /tmp/xdcc-systemd.XXXXXX)
registered_before=$(grep -cw bpf_uno /proc/sys/net/ipv4/tcp_available_congestion_control || true)
cleanup() {
    [[ $registered_before != 0 ]] || "$X" cc unload uno --bpf >/dev/null 2>&1 || true
    mountpoint -q "$work/root" 2>/dev/null && umount "$work/root"
    if [[ ${XDCC_KEEP:-0} == 1 ]]; then echo "[systemd] kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
die() { echo "[systemd] cannot run the root: $*" >&2; [[ -s $work/nspawn.log ]] && tail -30 "$work/nspawn.log" >&2; exit 1; }

# The package, and an overlay of the cached root to install it into.
deb=$("$root/packaging/deb/build.sh" "$work/deb")
lintian_clean() { local tags; tags=$(lintian "$1" 2>&1 | grep -v 'root privileges' || true); echo "$tags"; [[ -z $tags ]]; }
check "lintian is clean on $(basename "$deb")" lintian_clean "$deb"
mnt=$work/root
mkdir -p "$work/upper" "$work/ovl" "$mnt" "$work/out"
mount -t overlay overlay -o "lowerdir=$rootfs,upperdir=$work/upper,workdir=$work/ovl" "$mnt" ||
    cp -a "$rootfs/." "$mnt/"
nspawn() { systemd-nspawn -q -D "$mnt" --register=no --keep-unit --private-network "$@"; }
echo "[systemd] dpkg -i $(basename "$deb") in the Debian root (offline)" >&2
nspawn --bind-ro="$deb:/xdcc.deb" dpkg -i /xdcc.deb >"$work/dpkg.log" 2>&1 || die "dpkg -i dieed: $(cat "$work/dpkg.log")"
cat >"$mnt/etc/systemd/system/xdcc-probe.service" <<'UNIT'
[Unit]
Description=xdcc test probe (reports, then powers off)
After=multi-user.target xdcc.service xdcc-agent.service
[Service]
Type=oneshot
ExecStart=/bin/bash /probe.sh
ExecStartPost=/bin/systemctl --no-block poweroff
UNIT
mkdir -p "$mnt/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/xdcc-probe.service "$mnt/etc/systemd/system/multi-user.target.wants/xdcc-probe.service"
mkdir -p "$work/etc-xdcc"
cat >"$work/etc-xdcc/xdcc.toml" <<'TOML'
cgroup = "/sys/fs/cgroup/unified"
default_cc = "bpf_uno"
[cc.uno.net]
link_rate_mbps = 25000
[cc.uno.tunables]
k_bytes = 31000
TOML
[[ -d /sys/fs/cgroup/unified ]] || sed -i 's|^cgroup = .*|cgroup = "/sys/fs/cgroup"|' "$work/etc-xdcc/xdcc.toml"
cp "$work/etc-xdcc/xdcc.toml" "$mnt/etc/xdcc/xdcc.toml"
cat >"$work/probe.sh" <<'PROBE'
out=/out/result
r() { echo "$1=$2" >>"$out"; }
r enabled "$(systemctl is-enabled xdcc.service) $(systemctl is-enabled xdcc-agent.service)"
r verify "$(systemd-analyze verify --man=no /lib/systemd/system/xdcc.service /lib/systemd/system/xdcc-agent.service >/out/verify.log 2>&1 && echo ok || echo failed)"
r apply_state "$(systemctl is-active xdcc.service)"
r apply_result "$(systemctl show -P Result xdcc.service)"
r registered "$(grep -cw bpf_uno /proc/sys/net/ipv4/tcp_available_congestion_control)"
r net "$(xdcc tunable get bpf_uno net_link_rate_mbps 2>&1)"
r k_bytes "$(xdcc tunable get bpf_uno k_bytes 2>&1)"
r default_cc "$(cat /proc/sys/net/ipv4/tcp_congestion_control)"
for _ in $(seq 50); do systemctl is-active -q xdcc-agent.service && [[ -S /run/xdcc/agent.sock ]] && break; sleep 0.2; done
r agent_state "$(systemctl is-active xdcc-agent.service)"
r agent_stats "$(xdcc stats >/out/stats.log 2>&1 && echo ok || echo failed)"
r agent_nonewprivs "$(grep NoNewPrivs /proc/$(systemctl show -P MainPID xdcc-agent.service)/status | awk '{print $2}')"
pid=$(systemctl show -P MainPID xdcc-agent.service)
kill -9 "$pid"
for _ in $(seq 50); do
    new=$(systemctl show -P MainPID xdcc-agent.service)
    [[ $new != 0 && $new != "$pid" ]] && systemctl is-active -q xdcc-agent.service && break
    sleep 0.2
done
r restarted "$([[ $new != 0 && $new != "$pid" ]] && echo yes || echo no)"
r agent_state_after "$(systemctl is-active xdcc-agent.service)"
r restarts "$(systemctl show -P NRestarts xdcc-agent.service)"
journalctl -u xdcc.service -u xdcc-agent.service --no-pager >/out/journal.log 2>&1
r version "$(xdcc --version)"
xdcc check >/out/check.log 2>&1; r check_rc $?
r man_pages "$(ls /usr/share/man/man1/xdcc*.1.gz | wc -l)"
dpkg --purge xdcc >/out/purge.log 2>&1
r purged_agent "$(systemctl is-active xdcc-agent.service)"
r purged_files "$(for f in /usr/bin/xdcc /etc/xdcc /lib/systemd/system/xdcc.service; do [ -e $f ] && echo $f; done | wc -l)"
r done yes
PROBE

echo "[systemd] booting the Debian root under systemd-nspawn (a real systemd as PID 1)" >&2
timeout "${XDCC_NSPAWN_TIMEOUT:-180}" systemd-nspawn -q -D "$mnt" --register=no --keep-unit --private-network --boot \
    --capability=all --system-call-filter="bpf perf_event_open" \
    --bind=/sys/fs/bpf --bind="$work/out:/out" --bind-ro="$work/probe.sh:/probe.sh" >"$work/nspawn.log" 2>&1 \
    || die "systemd-nspawn exited with $?"
[[ -s $work/out/result ]] || die "the probe reported nothing"
declare -A r
while IFS='=' read -r k v; do r[$k]=$v; done <"$work/out/result"
[[ ${r[done]:-} == yes ]] || die "the probe did not finish: $(cat "$work/out/result")"
# is KEY VALUE [LOG]: the probe reported KEY = VALUE (else what it reported, and LOG).
is() {
    [[ ${r[$1]:-} == "$2" ]] && return 0
    echo "$1 = '${r[$1]:-}', want '$2'"
    [[ -z ${3:-} ]] || cat "$3"
    return 1
}
check "dpkg -i enabled both units" is enabled "enabled enabled"
check "both units pass systemd-analyze verify" is verify ok "$work/out/verify.log"
check "xdcc.service ran at boot" is apply_state active
check "xdcc apply succeeded" is apply_result success
check "bpf_uno registered by the boot unit" is registered 1
check "its network written" is net 25000
check "its tunable written" is k_bytes 31000
check "the default CC set" is default_cc bpf_uno
check "the agent runs" is agent_state active
check "the agent answers the CLI" is agent_stats ok "$work/out/stats.log"
check "under its hardening (NoNewPrivileges)" is agent_nonewprivs 1
check "killed, systemd restarted it" is restarted yes "$work/out/journal.log"
check "and it is active again" is agent_state_after active
check "xdcc --version in the root" is version "xdcc $(sed -n 's/^version = "\(.*\)"/\1/p' "$root/userspace/xdcc/Cargo.toml" | head -1)"
check "xdcc check in the root: every CC has a backend" is check_rc 0 "$work/out/check.log"
man_pages() { echo "man pages installed: ${r[man_pages]:-0}"; [[ ${r[man_pages]:-0} -gt 20 ]]; }
check "one man page per command and subcommand (more than 20)" man_pages
check "dpkg --purge stopped the agent" is purged_agent inactive "$work/out/purge.log"
check "and removed /usr/bin/xdcc, the units and /etc/xdcc" is purged_files 0 "$work/out/purge.log"
tap_done
