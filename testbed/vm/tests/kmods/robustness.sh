# kmods.sh: robustness: every tunable file fuzzed, and 30 load/transfer/unload
# cycles with tunables rewritten mid-transfer.
# shellcheck shell=bash

# Every tunable file of every CC against bad and random input: garbage,
# negatives, overflows, a 5000-digit number, odd formats — EINVAL and the
# value unchanged; 12 random values per file (64-bit or below 100000) — accepted values read
# back, rejected ones change nothing. (Kernel warnings fail the whole run:
# run.sh scans the log.) Reads and random values use shell builtins only:
# under TCG a fork costs tens of ms, and forks made this part 6 minutes.
test_tunable_fuzz() {
    local cc=$1 d=/proc/sys/net/xdcc/$1 f v before after bad_total=0 bad_ok=0 rnd_acc=0 rnd_rej=0 broken=""
    insmod "$root/kmods/tcp_$cc.ko" || { bad "fuzz: insmod tcp_$cc"; return; }
    local huge
    huge=$(head -c 5000 /dev/zero | tr '\0' 9)
    for f in "$d"/*; do
        read -r before <"$f"
        # (Not "" or "1 2": an empty write is no write, and the sysctl core
        # takes "1 2" as two writes, the second setting 2.)
        for v in garbage -1 -18446744073709551615 18446744073709551616 99999999999999999999999 "$huge" 0x1g 1.5 $'\x01'; do
            bad_total=$((bad_total + 1))
            if printf '%s' "$v" >"$f" 2>/dev/null; then
                broken+=" ${f##*/}<-'${v:0:12}'"
                echo "$before" >"$f"
            elif read -r after <"$f"; [[ $after == "$before" ]]; then
                bad_ok=$((bad_ok + 1))
            else
                broken+=" ${f##*/}:changed-on-EINVAL"
            fi
        done
        for _ in {1..12}; do
            # 64 random bits as an unsigned decimal, or below 100000
            printf -v v '%u' $(( (RANDOM << 49) ^ (RANDOM << 34) ^ (RANDOM << 19) ^ (RANDOM << 4) ^ (RANDOM & 15) ))
            (( RANDOM % 2 )) && v=$(( (RANDOM << 15 | RANDOM) % 100000 ))
            if echo "$v" >"$f" 2>/dev/null; then
                read -r after <"$f"
                rnd_acc=$((rnd_acc + 1))
                [[ $after == "$v" || ${f##*/} == net_* ]] || broken+=" ${f##*/}:$v->$after"
                echo "$before" >"$f" 2>/dev/null
            else
                rnd_rej=$((rnd_rej + 1))
                read -r after <"$f"
                [[ $after == "$before" ]] || broken+=" ${f##*/}:changed-by-$v"
            fi
        done
        read -r after <"$f"
        [[ $after == "$before" ]] || { echo "$before" >"$f"; }
    done
    echo "  fuzz tcp_$cc: $bad_ok/$bad_total bad writes refused unchanged; random values: $rnd_acc accepted (read back), $rnd_rej refused"
    check "fuzz: tcp_$cc refuses every bad write and changes nothing${broken:+ ($broken)}" test -z "$broken" -a "$bad_ok" = "$bad_total"
    rmmod "tcp_$cc" || bad "fuzz: rmmod tcp_$cc"
}

# A transfer without transfer()'s ss sampler (cheap under TCG): sets XFER_OK.
quick_transfer() {
    local cc=$1 bytes=$2 out srv
    out=$(mktemp -d)
    ip netns exec snd sysctl -qw net.ipv4.tcp_congestion_control="$cc"
    ip netns exec rcv sysctl -qw net.ipv4.tcp_congestion_control="$cc"
    ip netns exec rcv $XFER recv --port 5001 --out "$out/rcv" &
    srv=$!
    ip netns exec snd $XFER send --to 10.9.2.1 --port 5001 --bytes "$bytes" >"$out/snd"
    wait $srv
    XFER_OK=0
    same_sha "$out/snd" "$out/rcv" && [[ $(jq .bytes "$out/rcv") == "$bytes" ]] && XFER_OK=1
    rm -rf "$out"
}

# 30 load / transfer / unload cycles over the CCs, each transfer running
# while a second process rewrites the module's tunables (random values from
# half to twice the current ones, every 0.1 s): every transfer byte-exact,
# every unload clean. (The writer forks nothing: under TCG a `cat` per file
# every 0.1 s took the guest's CPUs from the transfer.)
test_churn() {
    # (Not `n`: lib.sh's net_up loops over a global n.)
    local ncc=${#ccs[@]} i cc d ok_x=0 ok_rm=0 writer
    for i in $(seq 0 29); do
        cc=${ccs[$((i % ncc))]}
        d=/proc/sys/net/xdcc/$cc
        insmod "$root/kmods/tcp_$cc.ko" || continue
        configure_cc "$cc"
        net_up fifo
        (
            for _ in {1..200}; do
                for f in "$d"/*; do
                    case ${f##*/} in net_*|rate_bytes_per_sec|mtu|mss) continue ;; esac
                    read -r v <"$f"; v=$(( v / 2 + RANDOM % (v + 2) ))
                    echo "$v" >"$f" 2>/dev/null
                done
                sleep 0.1
            done
        ) &
        writer=$!
        quick_transfer "$cc" 300000
        kill $writer 2>/dev/null; wait $writer 2>/dev/null
        [[ $XFER_OK == 1 ]] && ok_x=$((ok_x + 1))
        net_down
        local w=0
        while ! rmmod "tcp_$cc" 2>/dev/null && ((w < 30)); do sleep 1; w=$((w + 1)); done
        grep -qw "^tcp_$cc" /proc/modules || ok_rm=$((ok_rm + 1))
    done
    echo "  churn: 30 cycles over ${ccs[*]}: $ok_x transfers byte-exact, $ok_rm clean unloads"
    check "churn: 30 load/transfer/unload cycles with tunables rewritten mid-transfer (transfers $ok_x/30, unloads $ok_rm/30)" \
        test "$ok_x" = 30 -a "$ok_rm" = 30
}

