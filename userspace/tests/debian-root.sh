# Sourced by the tests that boot Debian under systemd-nspawn (systemd.sh,
# ansible.sh): one cached Debian root for both.
#   debian_root        prints the root's path, building it with debootstrap
#                      once (cached in ${XDCC_CACHE:-~/.cache/xdcc}/nspawn,
#                      keyed by its package list); installs systemd-container
#                      and debootstrap if missing. Tests mount an overlay of
#                      it and never write to it.
# The packages: systemd as PID 1, iproute2, sshd and the Python that
# Ansible's modules run on (python3-apt for its apt module).
debian_root_packages=systemd,systemd-sysv,dbus,iproute2,openssh-server,python3,python3-apt
debian_root() {
    if ! command -v systemd-nspawn >/dev/null || ! command -v debootstrap >/dev/null; then
        echo "[debian-root] installing systemd-container and debootstrap" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd-container debootstrap >/dev/null
    fi
    local cache=${XDCC_CACHE:-$HOME/.cache/xdcc}/nspawn
    local rootfs=$cache/bookworm-$(echo "$debian_root_packages" | sha256sum | cut -c1-12)
    if [[ ! -x $rootfs/lib/systemd/systemd ]]; then
        echo "[debian-root] building a Debian root with debootstrap (once, cached in $rootfs)" >&2
        rm -rf "$rootfs.tmp"; mkdir -p "$cache"
        debootstrap --variant=minbase --include="$debian_root_packages" bookworm "$rootfs.tmp" \
            http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 ||
            { tail -20 "$cache/debootstrap.log" >&2; return 1; }
        # No host keys in the shared root: each test machine makes its own.
        rm -f "$rootfs.tmp"/etc/ssh/ssh_host_*
        mv "$rootfs.tmp" "$rootfs"
    fi
    echo "$rootfs"
}
