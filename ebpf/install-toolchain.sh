#!/usr/bin/env bash
# Install what building and testing the eBPF programs and the xdcc agent needs
# on a fresh Debian 12 machine, then print the directory holding bpf-linker
# (put it on PATH). Idempotent: a second run installs nothing.
#
#   ebpf/install-toolchain.sh        install (apt packages; bpf-linker under the cache)
#
# - apt: Debian's rustc-web 1.96 (LLVM 22) with the prebuilt libcore for
#   bpfel-unknown-none, LLVM 22 for bpf-linker, bpftool, and the test tools
#   (iproute2, iperf3, jq, nftables).
# - bpf-linker 0.13.0 (pinned), built once into $XDCC_CACHE/tools (default
#   ~/.cache/xdcc/tools), keyed on its version and the LLVM package version.
set -euo pipefail

cache=${XDCC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xdcc}
linker_version=0.13.0
log() { printf '[ebpf-toolchain] %s\n' "$*" >&2; }

packages=(rustc-web cargo-web libstd-rust-web-dev-bpf llvm-22-dev libpolly-22-dev libzstd-dev zlib1g-dev
    bpftool libbpf-dev clang-22 libelf-dev pkg-config iproute2 iperf3 jq nftables procps iputils-ping)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    log "installing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=900 update -qq
    apt-get -o DPkg::Lock::Timeout=900 install -y -qq "${missing[@]}" >/dev/null
fi

llvm_version=$(dpkg-query -W -f='${Version}' llvm-22-dev)
dir="$cache/tools/bpf-linker-$linker_version-$(printf '%s' "$llvm_version" | sha256sum | cut -c1-12)"
if [[ ! -x $dir/bin/bpf-linker ]]; then
    log "building bpf-linker $linker_version against LLVM 22 (a few minutes, once)"
    LLVM_PREFIX=/usr/lib/llvm-22 PATH=/usr/lib/llvm-22/bin:$PATH \
        cargo install --quiet --locked bpf-linker --version "$linker_version" \
        --no-default-features --features llvm-22 --root "$dir.partial"
    rm -rf "$dir" && mv "$dir.partial" "$dir"
fi
echo "$dir/bin"
