#!/usr/bin/env bash
# Boot the xdcc test kernel under qemu (TCG) and run one script in it.
#
#   testbed/vm/run.sh [--debug] [--timeout SECONDS] [--out DIR] SCRIPT [ARG...]
#
# The guest mounts the host's root file system read-only over 9p (cached in the
# guest: do not change host files a running guest reads) and runs
# SCRIPT (an absolute or repository-relative path) with bash, chrooted into it,
# so it has the host's tools and the freshly built modules. /tmp and /run are
# tmpfs in the guest; --out DIR (on the host) is mounted writable at the same
# path for results. The console streams to stdout.
#
# Exit status: the script's, or 1 if the kernel log shows a BUG, WARNING,
# Oops, KASAN, lockdep or kmemleak report (even if the script passed), or 124
# if the time limit (default 300 s) expired. qemu never outlives this script.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${XDCC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xdcc}
variant=()
timeout_s=300
out=""
while (($#)); do
    case $1 in
        --debug) variant=(--debug); shift ;;
        --timeout) timeout_s=$2; shift 2 ;;
        --out) out=$(cd "$2" && pwd); shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        --) shift; break ;;
        -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
(($#)) || { echo "usage: run.sh [--debug] [--timeout S] [--out DIR] SCRIPT [ARG...]" >&2; exit 2; }
script=$1; shift
[[ $script == /* ]] || script="$root/$script"
[[ -f $script ]] || { echo "run.sh: no such script: $script" >&2; exit 2; }
for a in "$root" "$script" "$@"; do
    [[ $a =~ ^[A-Za-z0-9_./=:,+-]*$ ]] || { echo "run.sh: unsupported character in argument: $a" >&2; exit 2; }
done

# The guest uses the host's tools: qemu and busybox here, iproute2, kmod,
# procps, python3, ethtool, ping and iperf3 inside the guest.
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
[[ -x /bin/busybox ]] || need+=(busybox-static)
[[ -x /usr/sbin/tc && -x /usr/bin/ss ]] || need+=(iproute2)
[[ -x /usr/sbin/insmod || -x /sbin/insmod ]] || need+=(kmod)
[[ -x /usr/sbin/sysctl || -x /sbin/sysctl ]] || need+=(procps)
[[ -x /usr/bin/python3 ]] || need+=(python3)
# The 2-DC testbed (testbed/runner) also uses ethtool, ping and iperf3.
[[ -x /usr/sbin/ethtool || -x /sbin/ethtool ]] || need+=(ethtool)
[[ -x /usr/bin/ping || -x /bin/ping ]] || need+=(iputils-ping)
[[ -x /usr/bin/iperf3 ]] || need+=(iperf3)
if ((${#need[@]})); then
    echo "[vm] installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi

kdir=$("$root/testbed/kernel/build.sh" "${variant[@]}")
bzimage="$kdir/arch/x86/boot/bzImage"

# The initramfs: busybox and an init that mounts the host and runs the script.
initrd="$cache/vm/initrd-$(sha256sum "$here/init.sh" /bin/busybox | sha256sum | cut -c1-12).cpio.gz"
if [[ ! -f $initrd ]]; then
    mkdir -p "$cache/vm"
    tmp=$(mktemp -d)
    mkdir -p "$tmp"/{bin,proc,sys,dev,mnt/host}
    cp /bin/busybox "$tmp/bin/busybox"
    cp "$here/init.sh" "$tmp/init"
    chmod +x "$tmp/init"
    (cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd.tmp"
    mv "$initrd.tmp" "$initrd"
    rm -rf "$tmp"
fi

cmdline="console=ttyS0 panic=-1 loglevel=7 tsc=reliable xdcc_root=$root xdcc_script=$script"
if (($#)); then
    # Arguments travel comma-separated on the kernel command line; a comma
    # (or %) inside one (`--cc uno,dctcp`) is sent as %2C (%25), which
    # init.sh decodes after splitting.
    args=""
    for a in "$@"; do
        a=${a//%/%25}
        args+="${args:+,}${a//,/%2C}"
    done
    cmdline+=" xdcc_args=$args"
fi
shares=(-virtfs "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap")
if [[ -n $out ]]; then
    shares+=(-virtfs "local,path=$out,mount_tag=out,security_model=none,multidevs=remap")
    cmdline+=" xdcc_out=$out"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
# Two guest CPUs, each on its own host thread (multi-threaded TCG): the
# guest's sampler, iperf3s and softirqs no longer share one emulated CPU.
timeout --foreground -k 10 "$timeout_s" qemu-system-x86_64 -nographic -no-reboot -m 2048 -smp 2 -accel tcg,thread=multi \
    -kernel "$bzimage" -initrd "$initrd" -append "$cmdline" "${shares[@]}" </dev/null 2>&1 | tee "$log"
qrc=${PIPESTATUS[0]}
set -e
if ((qrc == 124 || qrc == 137)); then
    echo "[vm] time limit of ${timeout_s}s expired" >&2
    exit 124
fi
rc=$(sed -n 's/.*XDCC-EXIT \([0-9][0-9]*\).*/\1/p' "$log" | tail -1)
if [[ -z $rc ]]; then
    echo "[vm] the guest did not report an exit status (qemu exit $qrc)" >&2
    exit 1
fi
if grep -Eq '(BUG:|WARNING:|Oops|KASAN|kernel BUG|possible circular locking|possible recursive locking|inconsistent lock state|unreferenced object|suspected memory leak|Call Trace:|general protection)' "$log"; then
    echo "[vm] the kernel log shows a warning or error (see above)" >&2
    exit 1
fi
exit "$rc"
