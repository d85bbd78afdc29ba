#!/usr/bin/env bash
# Builds the Debian package of xdcc from target/release/xdcc with Debian's
# own tools (dpkg-shlibdeps for the library dependencies, dpkg-gencontrol
# for the control file, dpkg-deb for the archive):
#   /usr/bin/xdcc                              the CLI and agent (the BPF CCs embedded)
#   /lib/systemd/system/xdcc.service           xdcc apply at boot
#   /lib/systemd/system/xdcc-agent.service     the agent
#   /etc/xdcc/xdcc.toml                        the configuration (a conffile: every key commented)
#   /usr/share/man/man1/xdcc*.1.gz             one page per command and subcommand
#   /usr/share/bash-completion/completions/xdcc
#   /usr/share/xdcc/grafana/xdcc.json          the Grafana dashboard
#   /usr/share/doc/xdcc/copyright
# Installing enables both units (started at once where systemd runs);
# removing stops them (registered CCs stay until reboot or `xdcc cc
# unload`: sockets may still use them); purging removes /etc/xdcc.
#   packaging/deb/build.sh [OUTDIR]     (prints the .deb's path; default OUTDIR target/deb)
#   XDCC_DEB_MAINTAINER="Name <mail>"   the Maintainer field (default: xdcc developers <xdcc@example.org>)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/target/deb}
X=$root/target/release/xdcc
[[ -x $X ]] || { echo "packaging/deb/build.sh: build first: cargo build --release -p xdcc" >&2; exit 2; }
for t in dpkg-deb dpkg-shlibdeps dpkg-gencontrol; do
    command -v $t >/dev/null || { echo "packaging/deb/build.sh: needs $t (apt-get install dpkg-dev)" >&2; exit 2; }
done
# Who builds it (lintian wants a real address; set yours).
maintainer=${XDCC_DEB_MAINTAINER:-xdcc developers <xdcc@example.org>}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/userspace/xdcc/Cargo.toml" | head -1)
arch=$(dpkg --print-architecture)
stage=$(mktemp -d /tmp/xdcc-deb.XXXXXX)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/xdcc

install -D -m 755 "$X" "$pkg/usr/bin/xdcc"
strip --strip-unneeded "$pkg/usr/bin/xdcc"
install -D -m 644 "$root/packaging/systemd/xdcc.service" "$pkg/lib/systemd/system/xdcc.service"
install -D -m 644 "$root/packaging/systemd/xdcc-agent.service" "$pkg/lib/systemd/system/xdcc-agent.service"
install -D -m 644 "$here/xdcc.toml" "$pkg/etc/xdcc/xdcc.toml"
install -D -m 644 "$root/packaging/grafana/xdcc.json" "$pkg/usr/share/xdcc/grafana/xdcc.json"
mkdir -p "$pkg/usr/share/man/man1" "$pkg/usr/share/bash-completion/completions" "$pkg/usr/share/doc/xdcc"
"$X" man --out "$stage/man"
for m in "$stage"/man/*.1; do gzip -9n <"$m" >"$pkg/usr/share/man/man1/$(basename "$m").gz"; done
"$X" completions bash >"$pkg/usr/share/bash-completion/completions/xdcc"
cat >"$pkg/usr/share/doc/xdcc/copyright" <<COPY
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: xdcc
Files: *
Copyright: 2026 the xdcc developers
License: GPL-2.0-only
 On Debian systems the full text is in /usr/share/common-licenses/GPL-2.
COPY
mkdir -p "$pkg/DEBIAN"
install -m 755 "$here/postinst" "$here/prerm" "$here/postrm" "$pkg/DEBIAN/"
echo /etc/xdcc/xdcc.toml >"$pkg/DEBIAN/conffiles"

# dpkg-shlibdeps and dpkg-gencontrol read a source package's debian/ tree.
src=$stage/src
mkdir -p "$src/debian"
sed "s|^Maintainer: .*|Maintainer: $maintainer|" "$here/control" >"$src/debian/control"
printf 'xdcc (%s) unstable; urgency=medium\n\n  * Built from the xdcc repository.\n\n -- %s  %s\n' \
    "$version" "$maintainer" "$(date -R)" >"$src/debian/changelog"
gzip -9n <"$src/debian/changelog" >"$pkg/usr/share/doc/xdcc/changelog.gz"
(cd "$src" && dpkg-shlibdeps -O"$stage/substvars" -e"$pkg/usr/bin/xdcc" >/dev/null 2>"$stage/shlibdeps.log" &&
    sed -i 's/^/shlibs:/; s/^shlibs:shlibs:/shlibs:/' "$stage/substvars" &&
    dpkg-gencontrol -pxdcc -P"$pkg" -T"$stage/substvars" -DArchitecture="$arch" -DInstalled-Size="$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)") ||
    { cat "$stage/shlibdeps.log" >&2; exit 1; }
mkdir -p "$out"
deb=$out/xdcc_${version}_${arch}.deb
dpkg-deb --root-owner-group --build "$pkg" "$deb" >/dev/null
echo "$deb"
