# kmods.sh: the xdcc CLI against the real modules.
# shellcheck shell=bash

# The xdcc CLI against the real modules: load/unload, selection, tunables.
test_cli() {
    local X=$XDCC_BIN
    part "xdcc CLI"
    [[ -x $X ]] || { bad "xdcc CLI: $X not built (cargo build --release -p xdcc)"; return; }
    export XDCC_MODULE_DIR="$root/kmods"
    # check (preflight): what this guest really has. Its kernel has modules
    # (ours, built for it) and no BTF: every CC runs as tcp_<cc>, none as
    # bpf_<cc>, and it says why.
    local cj
    cj=$("$X" check -j); local crc=$?
    check "cli: check exits 0 (every CC has a backend)" test "$crc" = 0
    check "cli: check finds no BTF" test "$(echo "$cj" | jq -r '.checks[] | select(.name == "BTF") | .ok')" = false
    check "cli: check finds module loading allowed" test "$(echo "$cj" | jq -r '.checks[] | select(.name == "kernel modules") | .ok')" = true
    check "cli: check: every CC loadable as tcp_<cc>" test "$(echo "$cj" | jq -r '[.ccs[].module.ok] | all')" = true
    check "cli: check: no CC as bpf_<cc>, BTF named" test "$(echo "$cj" | jq -r '[.ccs[].bpf | (.ok == false and (.why | contains("BTF")))] | all')" = true
    check "cli: module load tcp_uno" "$X" module load tcp_uno
    check "cli: module list --json shows it loaded" sh -c "$X module list --json | grep -A2 '\"tcp_uno\"' | grep -q '\"loaded\": true'"
    check "cli: second load refused (already loaded)" sh -c "$X module load uno 2>&1 | grep -q 'already loaded'"
    check "cli: cc list shows uno available" sh -c "$X cc list | grep '^available' | grep -qw uno"
    check "cli: cc set uno (global)" "$X" cc set uno
    check "cli: global default is uno" test "$(sysctl -n net.ipv4.tcp_congestion_control)" = uno
    "$X" cc set cubic >/dev/null
    ip netns add clins
    check "cli: cc set uno --netns" "$X" cc set uno --netns clins
    check "cli: namespace default is uno" test "$(ip netns exec clins sysctl -n net.ipv4.tcp_congestion_control)" = uno
    check "cli: unload refused while a namespace default uses it" sh -c "$X module unload tcp_uno 2>&1 | grep -q 'in use'"
    ip netns del clins
    sleep 0.5
    local d=/proc/sys/net/xdcc/uno k0
    k0=$(cat $d/k_bytes)
    check "cli: tunable get = the sysctl" test "$("$X" tunable get uno k_bytes)" = "$k0"
    check "cli: tunable list has every file" test "$("$X" tunable list uno | wc -l)" = "$(ls $d | wc -l)"
    check "cli: tunable set k_bytes" "$X" tunable set uno k_bytes 30000
    check "cli: the module took it" test "$(cat $d/k_bytes)" = 30000
    check "cli: out-of-range value refused before writing" sh -c "! $X tunable set uno qa_beta_q16 99999999 2>/dev/null"
    check "cli: the module's value unchanged" test "$(cat $d/qa_beta_q16)" = 32768
    check "cli: bad network refused (mtu 10)" sh -c "! $X tunable set uno net_mtu 10 2>/dev/null"
    check "cli: net_link_rate_mbps re-derives the set" sh -c "$X tunable set uno net_link_rate_mbps 1000 && test \$(cat $d/rate_bytes_per_sec) = 125000000"
    check "cli: module unload" "$X" module unload tcp_uno
    check "cli: module list shows it unloaded" sh -c "$X module list | grep tcp_uno | grep -qw no"
    check "cli: tunables of an unloaded module: clear error" sh -c "$X tunable list uno 2>&1 | grep -q 'not loaded'"
}

