#!/usr/bin/env bash
# Build the BPF struct_ops congestion controls bpf_<cc> from the algorithm
# crate (kmods/algo) and the struct_ops shim (shim.c), and check the result:
#
#   kmods/bpf/build.sh OUTDIR [CC...]  -> OUTDIR/bpf_<cc>.o, one object per CC
#
# Without CCs: every CC entry.rs has entries for (`entries!(<cc>, ...)`).
# Which CCs need ECN comes from the algorithm crate's one list (CCS), which
# the crate's `ccs` example prints, compiled here with the same rustc.
#
# Steps (the verified recipe for this kind of host; docs/ccs.md covers loading):
#  1. entry.rs (the algorithms + the Linux adapter) -> LLVM bitcode for
#     bpfel-unknown-none with Debian's rustc-web (prebuilt BPF libcore);
#  2. shim.c -> bitcode with clang-22, types from the running kernel's BTF
#     (vmlinux.h; CO-RE relocations keep the object portable);
#  3. llvm-link both, bpf-linker internalizes everything but the programs,
#     the struct_ops map, the config map and the license and inlines the
#     Rust code into the programs; llc-22 emits the object with BTF.
#  4. Checks, failing the build: the crate's IR has no 128-bit integers, no
#     64-bit overflow intrinsics and no signed division; the object has no
#     calls to anything but BPF helpers/kfuncs and no undefined symbols.
# Needs: ebpf/install-toolchain.sh (rustc-web, llvm-22, bpf-linker on PATH
# or in $XDCC_BPF_LINKER_DIR), clang-22, libbpf-dev, bpftool.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:?usage: build.sh OUTDIR [CC...]}
shift
ccs=("$@")
if ((${#ccs[@]} == 0)); then
    mapfile -t ccs < <(sed -n 's/^entries!(\([a-z]*\),.*/\1/p' "$here/entry.rs")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -n ${XDCC_BPF_LINKER_DIR:-} ]] && PATH=$XDCC_BPF_LINKER_DIR:$PATH
PATH=/usr/lib/llvm-22/bin:$PATH
log() { printf '[bpf-cc] %s\n' "$*" >&2; }
fail() { printf '[bpf-cc] FAIL: %s\n' "$*" >&2; exit 1; }

rustc_bpf() {
    RUSTC_BOOTSTRAP=1 /usr/bin/rustc --edition 2021 --target bpfel-unknown-none --crate-type bin \
        -C opt-level=3 -C panic=abort -C debuginfo=0 -C target-cpu=v3 --cfg xdcc_kernel --cfg xdcc_bpf \
        -A unused_imports "$@" "$here/entry.rs"
}

# 1 + check of the crate's IR.
rustc_bpf --emit=llvm-ir -o "$work/entry.ll"
for pattern in '\bi128 ' '@llvm\.[us]mul\.with\.overflow\.i64' '\bsdiv i64\b' '\bsrem i64\b' \
               '@__multi3' '@__lshrti3' '@__ashlti3' '@__udivti3' '@__divti3' '@__umodti3'; do
    if grep -v '^target datalayout' "$work/entry.ll" | grep -qE "$pattern"; then
        grep -nE "$pattern" "$work/entry.ll" | head -5 >&2
        fail "the algorithm crate is not BPF-clean: '$pattern' in its LLVM IR for bpfel (see kmods/algo/src/fixed.rs)"
    fi
done
rustc_bpf -C link-arg=--emit=llvm-bc -o "$work/entry.bc" 2>"$work/rustc.log" || { cat "$work/rustc.log" >&2; fail "rustc (bpfel)"; }
# rustc+bpf-linker may name the bitcode with or without the extension.
[[ -f $work/entry.bc ]] || fail "no bitcode from rustc"

# 2. The sizes the shim shares with the crate, from the crate (shim.c checks
# the private area's against the kernel's BTF).
rust_const() { # NAME FILE: the value of `pub const NAME: usize = N;`
    local v
    v=$(sed -n "s/^pub const $1: usize = \([0-9]*\);.*/\1/p" "$2")
    [[ -n $v ]] || fail "no \`pub const $1: usize\` in $2"
    echo "$v"
}
sizes=(-DXDCC_CA_PRIV_SIZE="$(rust_const ICSK_CA_PRIV_SIZE "$here/../algo/src/lib.rs")"
       -DXDCC_CONFIG_BYTES="$(rust_const CONFIG_BYTES "$here/../algo/src/linux.rs")")
/usr/bin/rustc --edition 2021 --crate-type rlib --crate-name xdcc_algo -o "$work/libxdcc_algo.rlib" \
    "$here/../algo/src/lib.rs" || fail "rustc (the algorithm crate, host)"
/usr/bin/rustc --edition 2021 --extern xdcc_algo="$work/libxdcc_algo.rlib" -o "$work/ccs" \
    "$here/../algo/examples/ccs.rs" || fail "rustc (the crate's ccs example)"
"$work/ccs" > "$work/ccs.txt"
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$work/vmlinux.h"
for cc in "${ccs[@]}"; do
    grep -q "^entries!($cc," "$here/entry.rs" || fail "entry.rs has no entries for '$cc'"
    case $(awk -v cc="$cc" '$1 == cc {print $3}' "$work/ccs.txt") in
        ecn) ecn=1 ;; no-ecn) ecn=0 ;; *) fail "'$cc' is not in the algorithm crate's CC list (CCS)" ;;
    esac
    # A CC whose complete ACK processing is a global BPF function (entry.rs
    # has its body): shim.c defines it, and it stays a function.
    ack_full=() export_ack_full=
    if grep -q "fn xdcc_${cc}_ack_full_body" "$here/entry.rs"; then
        # (the sample's size from entry.rs, where it is checked against the type)
        ack_full=(-DXDCC_ACK_FULL -DXDCC_ACK_SAMPLE_BYTES="$(rust_const ACK_SAMPLE_BYTES "$here/entry.rs")")
        export_ack_full=,xdcc_${cc}_ack_full
    fi
    clang-22 -target bpf -mcpu=v3 -g -O2 -emit-llvm -c -I"$work" "${sizes[@]}" "${ack_full[@]}" \
        -DXDCC_CC="$cc" -DXDCC_NEEDS_ECN=$ecn -o "$work/shim_$cc.bc" "$here/shim.c"
    # 3.
    llvm-link -o "$work/linked_$cc.bc" "$work/shim_$cc.bc" "$work/entry.bc"
    bpf-linker --export xdcc_init,xdcc_cong_control,xdcc_set_state,xdcc_cwnd_event,xdcc_ssthresh,xdcc_undo_cwnd,flows_$cc,replay_$cc,xdcc_mul_sat,xdcc_mul_div,xdcc_slope_q16$export_ack_full,xdcc_ops,xdcc_config,xdcc_scratch,xdcc_replay_buf,xdcc_trace,xdcc_trace_on,xdcc_trace_dropped,_license \
        --btf -O3 --disable-memory-builtins --disable-expand-memcpy-in-order \
        --llvm-args=-inline-threshold=100000 --emit llvm-bc -o "$work/opt_$cc.bc" "$work/linked_$cc.bc" \
        >"$work/linker_$cc.log" 2>&1 || { cat "$work/linker_$cc.log" >&2; fail "bpf-linker ($cc)"; }
    llc -O2 -march=bpfel -mcpu=v3 -filetype=obj -o "$out/bpf_$cc.o" "$work/opt_$cc.bc" 2>"$work/llc_$cc.log" \
        || { cat "$work/llc_$cc.log" >&2; fail "llc ($cc)"; }
    # 4. Nothing left to link: every call is a BPF helper/kfunc.
    if llvm-objdump -t "$out/bpf_$cc.o" | awk '$0 ~ /\*UND\*/ && $NF != "" {print $NF}' | grep -v '^$' | grep -q .; then
        llvm-objdump -t "$out/bpf_$cc.o" | grep '\*UND\*' >&2
        fail "bpf_$cc.o has undefined symbols (a libcall or a non-inlined Rust function)"
    fi
    log "bpf_$cc.o: $(stat -c %s "$out/bpf_$cc.o") bytes"
done
