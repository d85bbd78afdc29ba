# shellcheck shell=bash
# cargo-fuzz for the project's fuzzers (kmods/algo/fuzz, userspace/transport/fuzz),
# sourced by their run.sh: installs the pinned cargo-fuzz once under the cache
# and puts it on PATH; sets `toolchain` (+nightly when one is installed) and
# `sanitizer` (address with nightly; none on a stable-only machine, which still
# checks every assertion and overflow); `runs` from the script's first
# argument (default 1000000).
runs=${1:-1000000}
[[ $runs =~ ^[0-9]+$ ]] || { echo "run.sh: RUNS must be a number, not '$runs'" >&2; exit 2; }
cache=${XDCC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xdcc}
cargo_fuzz_version=0.13.2
fuzz="$cache/tools/cargo-fuzz-$cargo_fuzz_version/bin/cargo-fuzz"
if [[ ! -x $fuzz ]]; then
    echo "[fuzz] installing cargo-fuzz $cargo_fuzz_version (once)" >&2
    cargo install --locked --quiet cargo-fuzz --version "$cargo_fuzz_version" \
        --root "$cache/tools/cargo-fuzz-$cargo_fuzz_version"
fi
PATH="$(dirname "$fuzz"):$PATH"
export PATH
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly); sanitizer=address
else
    toolchain=(); sanitizer=none
fi
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer || command -v llvm-symbolizer-19 || true)}
