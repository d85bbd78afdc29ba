#!/usr/bin/env bash
# Build the xdcc test kernel: Debian's linux-source-6.12 with CONFIG_RUST, the
# project's TCP bindings patch and config fragment, into a cache directory
# outside the repository keyed by a hash of every input, so a second run with
# the same inputs does nothing. Then (re)build the xdcc kernel modules against
# it whenever the kernel or the module sources changed.
#
#   testbed/kernel/build.sh            build (or reuse) the normal kernel
#   testbed/kernel/build.sh --debug    the KASAN + lockdep + kmemleak variant
#   testbed/kernel/build.sh --print    only print the build directory (no build)
#
# Installs what it needs on a fresh Debian 12 machine (apt packages; a pinned
# bindgen-cli under the cache). Cache root: $XDCC_CACHE, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/xdcc.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${XDCC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xdcc}
bindgen_version=0.73.2
variant=normal
print_only=0
for a in "$@"; do
    case $a in
        --debug) variant=debug ;;
        --print) print_only=1 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "build.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
    esac
done

log() { printf '[kernel] %s\n' "$*" >&2; }

apt_packages=(linux-source-6.12 rustc-web cargo-web rust-web-src libclang-dev clang-19 llvm-19 lld-19
    flex bison bc libelf-dev libssl-dev cpio dwarves make gcc xz-utils kmod)

install_packages() {
    local missing=()
    for p in "${apt_packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        log "installing packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

bindgen_bin() { echo "$cache/tools/bindgen-$bindgen_version/bin/bindgen"; }

install_bindgen() {
    if [[ ! -x $(bindgen_bin) ]]; then
        log "installing bindgen-cli $bindgen_version (a few minutes, once)"
        LIBCLANG_PATH=/usr/lib/llvm-19/lib cargo install --locked --quiet bindgen-cli \
            --version "$bindgen_version" --root "$cache/tools/bindgen-$bindgen_version"
    fi
}

# The settings of a config fragment, without its comments (editing a comment
# must not rebuild the kernel); "# CONFIG_X is not set" is a setting.
config_settings() {
    grep -E '^(CONFIG_|# CONFIG_[A-Z0-9_]+ is not set)' "$1"
}

# Everything that determines the kernel build goes into its key.
kernel_key() {
    {
        config_settings "$here/config.fragment"
        [[ $variant == debug ]] && config_settings "$here/config.debug.fragment"
        cat "$here"/patches/*.patch
        dpkg-query -W -f='${Version}\n' linux-source-6.12
        /usr/bin/rustc --version
        echo "bindgen $bindgen_version"
        clang-19 --version | head -1
        echo "variant $variant"
    } | sha256sum | cut -c1-16
}

make_vars() {
    echo LLVM=-19 RUSTC=/usr/bin/rustc HOSTRUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc BINDGEN="$(bindgen_bin)"
}

# Apply a fragment with scripts/config; remember the lines for the check.
apply_fragment() {
    local src=$1 build=$2 frag=$3 line name
    while IFS= read -r line; do
        case $line in
            CONFIG_*=y) name=${line%%=*}; "$src/scripts/config" --file "$build/.config" --enable "${name#CONFIG_}" ;;
            CONFIG_*=*) name=${line%%=*}; "$src/scripts/config" --file "$build/.config" --set-val "${name#CONFIG_}" "${line#*=}" ;;
            "# CONFIG_"*" is not set") name=${line#\# }; name=${name%% *}; "$src/scripts/config" --file "$build/.config" --disable "${name#CONFIG_}" ;;
        esac
    done <"$frag"
}

check_fragment() {
    local build=$1 frag=$2 line bad=0
    while IFS= read -r line; do
        case $line in
            CONFIG_*=*|"# CONFIG_"*" is not set")
                if ! grep -qxF -- "$line" "$build/.config"; then
                    if [[ $line == "# CONFIG_"* ]]; then
                        local n=${line#\# }; n=${n%% *}
                        grep -q "^$n=" "$build/.config" || continue
                    fi
                    log "config line did not survive olddefconfig: $line"
                    bad=1
                fi ;;
        esac
    done <"$frag"
    return $bad
}

build_kernel() {
    local key=$1 build="$cache/kernel/$key" src="$cache/kernel/$key.src"
    if [[ -f $build/.xdcc-complete ]]; then
        log "kernel $variant $key: cached ($build)"
        return
    fi
    log "kernel $variant $key: building (about 13 minutes on 2 cores)"
    rm -rf "$build" "$src"
    mkdir -p "$build" "$src"
    tar -xf /usr/src/linux-source-6.12.tar.xz -C "$src" --strip-components=1
    for p in "$here"/patches/*.patch; do
        patch -d "$src" -p1 --quiet --forward <"$p"
    done
    # shellcheck disable=SC2046
    make -s -C "$src" O="$build" $(make_vars) tinyconfig >/dev/null
    apply_fragment "$src" "$build" "$here/config.fragment"
    [[ $variant == debug ]] && apply_fragment "$src" "$build" "$here/config.debug.fragment"
    # shellcheck disable=SC2046
    LIBCLANG_PATH=/usr/lib/llvm-19/lib make -s -C "$src" O="$build" $(make_vars) olddefconfig >/dev/null
    check_fragment "$build" "$here/config.fragment"
    [[ $variant == debug ]] && check_fragment "$build" "$here/config.debug.fragment"
    # shellcheck disable=SC2046
    LIBCLANG_PATH=/usr/lib/llvm-19/lib make -C "$src" O="$build" $(make_vars) -j"$(nproc)" all >"$build/build.log" 2>&1 || {
        tail -40 "$build/build.log" >&2
        log "kernel build failed; full log: $build/build.log"
        exit 1
    }
    touch "$build/.xdcc-complete"
    log "kernel built: $build/arch/x86/boot/bzImage"
}

# Modules are rebuilt when the kernel they were built for or any module
# source changed. The objects live in kmods/ (one set for all kernels), so
# the stamp there names the kernel build they match.
build_modules() {
    local build=$1
    [[ -f $root/Kbuild ]] || return 0
    # (Not the *.mod.c files the build itself writes into kmods/: they would
    # make every second call rebuild.)
    local stamp="$root/kmods/.xdcc-built-for" mkey
    mkey=$( { echo "$build"; cat "$build/.xdcc-complete" 2>/dev/null; find "$root/Kbuild" "$root/kmods" -type f \( -name '*.rs' -o -name 'Kbuild' -o -name '*.c' \) ! -name '*.mod.c' -print0 | sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16)
    if [[ -f $stamp && $(cat "$stamp") == "$mkey" ]] && ls "$root"/kmods/*.ko >/dev/null 2>&1; then
        log "modules: up to date"
        return
    fi
    log "modules: building"
    # Objects from another kernel must not be reused. (Not `make M=... clean`:
    # with M = the repository root it deletes every *.o below it, cargo's
    # target/ included, such as the xdcc binary's embedded eBPF object.)
    find "$root" "$root/kmods" -maxdepth 1 -type f \( -name '*.o' -o -name '*.ko' -o -name '*.mod' \
        -o -name '*.mod.c' -o -name '.*.cmd' -o -name 'modules.order' -o -name 'Module.symvers' \) -delete
    # shellcheck disable=SC2046
    LIBCLANG_PATH=/usr/lib/llvm-19/lib make -s -C "$build" M="$root" $(make_vars) -j"$(nproc)" modules >&2
    # Linux's own DCTCP (CONFIG_TCP_CONG_DCTCP=m) next to xdcc's, for
    # testbed/vm/tests/dctcp.sh: the guest has the host's /lib/modules.
    mkdir -p "$root/kmods/linux"
    cp "$build/net/ipv4/tcp_dctcp.ko" "$root/kmods/linux/tcp_dctcp.ko"
    echo "$mkey" >"$stamp"
}

main() {
    if ((print_only)); then
        echo "$cache/kernel/$(kernel_key)"
        exit 0
    fi
    install_packages
    install_bindgen
    local key
    key=$(kernel_key)
    build_kernel "$key"
    mkdir -p "$cache/kernel"
    ln -sfn "$key" "$cache/kernel/current-$variant"
    build_modules "$cache/kernel/$key"
    echo "$cache/kernel/$key"
}

main
