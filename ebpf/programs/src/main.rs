//! xdcc eBPF programs (aya-ebpf), loaded by the `xdcc` agent.
//!
//! - `xdcc_sockops` (cgroup sock_ops): the flow table's lifecycle, one RTT
//!   sample and one transport snapshot per round trip, the ECE fraction of
//!   each round, and the rerouter (UnoLB / PLB): on an RTO, after
//!   `lossy_rounds` rounds with retransmissions or `congested_rounds` rounds
//!   with an ECE fraction above the threshold, the flow gets a new path id,
//!   at most once per `min_interval_base_rtts` base RTTs, chosen at random
//!   among the ids that recently ended an uncongested round to the same
//!   destination (uno-sc25 Alg. 2: "a subflow that has recently received ACKs").
//! - `xdcc_tc_egress` / `xdcc_tc_ingress` (TCX): per-flow segment, byte,
//!   ECT, CE and ECE counters (atomic adds; GSO packets count as their
//!   segments), and on egress the IPv6 flow label = f(path id), which the
//!   network's ECMP hashes (`fib_multipath_hash_policy`). Labels are pinned
//!   to the path id even with moves disabled.
//! - `xdcc_mark_ce` (TCX, for a router or switch port in tests and demos):
//!   sets CE on every Nth ECT packet, deterministically, and counts them.
//! - `xdcc_phantom` (`phantom.rs`, TCX egress of a switch port): Uno's
//!   phantom-queue ECN marker.
//! - `xdcc_amrt` (`amrt.rs`, TCX at a switch port's dequeue point): AMRT's
//!   anti-ECN marker (CE = spare bandwidth).
//!
//! Map types are in `xdcc-common`. Nothing here allocates; every loop is
//! bounded by a constant; no arithmetic can trap (wrapping or saturating).
#![no_std]
#![no_main]
// The BPF target has no `AtomicU64::fetch_add`; the intrinsic lowers to BPF's
// atomic add (BPF_ATOMIC | BPF_ADD, with BPF_FETCH for SeqCst).
#![feature(core_intrinsics)]
#![allow(internal_features)]

use core::intrinsics::{atomic_xadd, AtomicOrdering};

use aya_ebpf::{
    bindings::{bpf_sock_ops, TC_ACT_UNSPEC},
    helpers::{bpf_get_prandom_u32, bpf_getsockopt, bpf_ktime_get_ns, bpf_skb_ecn_set_ce},
    macros::{classifier, map, sock_ops},
    maps::{Array, LruHashMap, PerCpuArray},
    programs::{SockOpsContext, TcContext},
};
use aya_log_ebpf::{info, warn};

mod amrt;
mod phantom;
use xdcc_common::{
    path_label, rtt_bucket, Config, Counters, FlowKey, FlowStats, PathHealth, RerouteReason, MAX_DESTS, MAX_FLOWS, MAX_FORCED,
    PATHS, RTT_BUCKETS,
};

#[map]
static FLOWS: LruHashMap<FlowKey, FlowStats> = LruHashMap::with_max_entries(MAX_FLOWS, 0);
/// Per destination address (IPv4-mapped IPv6): which path ids are healthy.
#[map]
static PATH_HEALTH: LruHashMap<[u8; 16], PathHealth> = LruHashMap::with_max_entries(MAX_DESTS, 0);
/// Scratch space to build a new flow's entry (FlowStats exceeds the 512-byte
/// BPF stack).
#[map]
static SCRATCH: PerCpuArray<FlowStats> = PerCpuArray::with_max_entries(1, 0);
/// Flows the operator asked to move (`xdcc reroute force`).
#[map]
static FORCE: LruHashMap<FlowKey, u32> = LruHashMap::with_max_entries(MAX_FORCED, 0);
#[map]
static CONFIG: Array<Config> = Array::with_max_entries(1, 0);
#[map]
static COUNTERS: PerCpuArray<Counters> = PerCpuArray::with_max_entries(1, 0);
/// The CE marker's settings: [every_n, 0] and its counters [ect_seen, marked].
#[map]
static MARK_CE: Array<u64> = Array::with_max_entries(4, 0);

// --- constants from the uapi headers ---
const AF_INET: u32 = 2;
const AF_INET6: u32 = 10;
const SOL_TCP: i32 = 6;
const TCP_CONGESTION: i32 = 13;
const OP_ACTIVE_ESTABLISHED: u32 = 4;
const OP_PASSIVE_ESTABLISHED: u32 = 5;
const OP_RTO: u32 = 8;
const OP_STATE: u32 = 10;
const OP_RTT: u32 = 12;
const CB_RTO: i32 = 1 << 0;
const CB_STATE: i32 = 1 << 2;
const CB_RTT: i32 = 1 << 3;
const TCP_CLOSE: u32 = 7;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const IPPROTO_TCP: u8 = 6;
const ETH_HLEN: usize = 14;
const TCP_FLAG_ECE: u8 = 0x40;
const ECN_MASK: u8 = 3;
const ECN_CE: u8 = 3;
/// Settling rounds after a move: the recovery of what was lost on the old
/// path does not count against the new one.
const SETTLE_ROUNDS: u32 = 2;
/// Random draws when looking for a healthy path.
const PICK_TRIES: u32 = 4;

#[inline(always)]
fn config() -> Config {
    match CONFIG.get(0) {
        Some(c) => *c,
        None => Config::DEFAULT,
    }
}

#[inline(always)]
fn count(f: impl FnOnce(&mut Counters)) {
    if let Some(c) = COUNTERS.get_ptr_mut(0) {
        // SAFETY: a per-CPU array value is only touched by this CPU while
        // the program runs (programs do not migrate while running).
        f(unsafe { &mut *c });
    }
}

#[inline(always)]
fn now_ns() -> u64 {
    // SAFETY: helper without arguments.
    unsafe { bpf_ktime_get_ns() }
}

#[inline(always)]
fn random() -> u32 {
    // SAFETY: helper without arguments.
    unsafe { bpf_get_prandom_u32() }
}

/// `x` in `[0, n)` without a division (multiply-shift range reduction).
#[inline(always)]
fn below(x: u32, n: u32) -> u32 {
    (((x as u64) * (n as u64)) >> 32) as u32
}

/// Atomically adds to a counter inside a map value shared by all CPUs.
#[inline(always)]
fn atomic_add(field: *mut u64, v: u64) {
    // SAFETY: `field` points into a live map value (the caller got it from a
    // successful lookup) and is 8-byte aligned (FlowStats is repr(C) with u64
    // fields at multiples of 8). Relaxed with the result unused: a plain
    // BPF atomic add (no fetch), the cheapest form.
    unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(field, v) };
}

// ------------------------------------------------------------------------
// sock_ops
// ------------------------------------------------------------------------

/// The fields of `bpf_sock_ops` used here, read once in straight-line code:
/// the verifier only allows ctx loads at constant offsets, and reading them
/// up front keeps LLVM from forming `ctx + off` pointers in loops.
struct OpsSnapshot {
    op: u32,
    family: u32,
    args: [u32; 2],
    local_ip4: u32,
    remote_ip4: u32,
    local_ip6: [u32; 4],
    remote_ip6: [u32; 4],
    local_port: u32,
    remote_port: u32,
    is_fullsock: u32,
    snd_cwnd: u32,
    srtt_us: u32,
    rtt_min: u32,
    mss_cache: u32,
    total_retrans: u32,
    bytes_received: u64,
    bytes_acked: u64,
}

impl OpsSnapshot {
    #[inline(always)]
    fn read(ops: *mut bpf_sock_ops) -> Self {
        // SAFETY: `ops` is the program's context pointer; every field read
        // is a ctx access the verifier rewrites to the socket's fields.
        unsafe {
            let o = &*ops;
            OpsSnapshot {
                op: o.op,
                family: o.family,
                args: [o.__bindgen_anon_1.args[0], o.__bindgen_anon_1.args[1]],
                local_ip4: o.local_ip4,
                remote_ip4: o.remote_ip4,
                local_ip6: o.local_ip6,
                remote_ip6: o.remote_ip6,
                local_port: o.local_port,
                remote_port: o.remote_port,
                is_fullsock: o.is_fullsock,
                snd_cwnd: o.snd_cwnd,
                srtt_us: o.srtt_us,
                rtt_min: o.rtt_min,
                mss_cache: o.mss_cache,
                total_retrans: o.total_retrans,
                bytes_received: o.bytes_received,
                bytes_acked: o.bytes_acked,
            }
        }
    }

    /// The flow key, as the tc programs build it from packets. An IPv6
    /// socket talking to a v4-mapped peer is family 4 (its packets are IPv4).
    fn key(&self) -> FlowKey {
        let mut k = FlowKey::default();
        if self.family == AF_INET {
            k.local_addr = FlowKey::map_v4(self.local_ip4.to_ne_bytes());
            k.remote_addr = FlowKey::map_v4(self.remote_ip4.to_ne_bytes());
            k.family = 4;
        } else {
            k.local_addr = words_to_bytes(self.local_ip6);
            k.remote_addr = words_to_bytes(self.remote_ip6);
            let mapped = k.remote_addr[..10] == [0u8; 10] && k.remote_addr[10] == 0xff && k.remote_addr[11] == 0xff;
            k.family = if mapped { 4 } else { 6 };
        }
        k.local_port = self.local_port as u16;
        // remote_port is in network byte order in the upper 16 bits (LE).
        k.remote_port = u16::from_be((self.remote_port >> 16) as u16);
        k
    }
}

/// IPv6 address words as stored in bpf_sock_ops (network byte order per
/// word) to bytes.
#[inline(always)]
fn words_to_bytes(w: [u32; 4]) -> [u8; 16] {
    let mut b = [0u8; 16];
    let (a, c, d, e) = (w[0].to_ne_bytes(), w[1].to_ne_bytes(), w[2].to_ne_bytes(), w[3].to_ne_bytes());
    b[0..4].copy_from_slice(&a);
    b[4..8].copy_from_slice(&c);
    b[8..12].copy_from_slice(&d);
    b[12..16].copy_from_slice(&e);
    b
}

#[sock_ops]
pub fn xdcc_sockops(ctx: SockOpsContext) -> u32 {
    let s = OpsSnapshot::read(ctx.ops);
    if s.family != AF_INET && s.family != AF_INET6 {
        return 1;
    }
    match s.op {
        OP_ACTIVE_ESTABLISHED | OP_PASSIVE_ESTABLISHED => on_established(&ctx, &s),
        OP_RTT => on_round(&ctx, &s),
        OP_RTO => on_rto(&ctx, &s),
        OP_STATE => on_state(&s),
        _ => {}
    }
    1
}

fn on_established(ctx: &SockOpsContext, s: &OpsSnapshot) {
    let key = s.key();
    let now = now_ns();
    let cfg = config();
    let Some(st) = SCRATCH.get_ptr_mut(0) else {
        return;
    };
    // SAFETY: this CPU's scratch value, used only until the insert below.
    let st = unsafe {
        core::ptr::write_bytes(st, 0, 1);
        &mut *st
    };
    st.established_ns = now;
    st.mss = s.mss_cache;
    st.snd_cwnd = s.snd_cwnd;
    // SAFETY: getsockopt(TCP_CONGESTION) into a 16-byte buffer, allowed
    // from sock_ops on a full socket (established callbacks are).
    unsafe {
        bpf_getsockopt(ctx.ops as *mut _, SOL_TCP, TCP_CONGESTION, st.cc.as_mut_ptr() as *mut _, 16);
    }
    st.path_id = first_path(&key, &cfg, now);
    if FLOWS.insert(&key, &*st, 0).is_err() {
        count(|c| c.insert_failures = c.insert_failures.wrapping_add(1));
        warn!(ctx, "xdcc: flow table insert failed (port {})", key.local_port);
        return;
    }
    count(|c| c.flows_opened = c.flows_opened.wrapping_add(1));
    let _ = ctx.set_cb_flags(CB_RTO | CB_STATE | CB_RTT);
}

/// A new flow's path id: the destination's next subflow id (UnoLB spreads an
/// application's connections over distinct paths) or a hash of the ports.
fn first_path(key: &FlowKey, cfg: &Config, now: u64) -> u32 {
    let paths = cfg.paths.clamp(1, PATHS);
    if cfg.spread_subflows == 0 {
        let h = (key.local_port as u32 ^ ((key.remote_port as u32) << 16)).wrapping_mul(0x9e37_79b1);
        return below(h, paths);
    }
    match PATH_HEALTH.get_ptr_mut(&key.remote_addr) {
        Some(h) => {
            // SAFETY: live map value; a racing connect to the same peer may
            // get the same id, which only makes the spreading less even.
            let h = unsafe { &mut *h };
            let id = if h.next_subflow < paths { h.next_subflow } else { 0 };
            h.next_subflow = if id + 1 < paths { id + 1 } else { 0 };
            id
        }
        None => {
            let id = below(random(), paths);
            let mut h = PathHealth { last_good_ns: [0; PATHS as usize], next_subflow: 0, _pad: 0 };
            h.next_subflow = if id + 1 < paths { id + 1 } else { 0 };
            let _ = now;
            let _ = PATH_HEALTH.insert(&key.remote_addr, &h, 0);
            id
        }
    }
}

/// Once per round trip (the kernel's RTT callback fires when snd_una passes
/// the sequence that started the round): RTT sample, transport snapshot,
/// the round's ECE fraction, and the rerouting decision.
fn on_round(ctx: &SockOpsContext, s: &OpsSnapshot) {
    let key = s.key();
    let Some(st) = FLOWS.get_ptr_mut(&key) else {
        return;
    };
    // SAFETY: live map value; sock_ops of one socket run under its lock, so
    // the non-atomic fields below have a single writer.
    let st = unsafe { &mut *st };
    let now = now_ns();
    let mrtt = s.args[0];
    st.last_rtt_us = mrtt;
    st.srtt_us = s.srtt_us >> 3;
    st.min_rtt_us = s.rtt_min;
    st.snd_cwnd = s.snd_cwnd;
    st.mss = s.mss_cache;
    st.bytes_acked = s.bytes_acked;
    st.bytes_received = s.bytes_received;
    st.rtt_samples = st.rtt_samples.wrapping_add(1);
    // The CC can change after establishment (setsockopt): refresh its name
    // every 16 rounds (the helper is a third of this callback's cost).
    if st.rtt_samples & 15 == 1 {
        // SAFETY: as in on_established (RTT callbacks run on full sockets).
        unsafe {
            bpf_getsockopt(ctx.ops as *mut _, SOL_TCP, TCP_CONGESTION, st.cc.as_mut_ptr() as *mut _, 16);
        }
    }
    let b = core::hint::black_box(rtt_bucket(mrtt));
    if b < RTT_BUCKETS {
        st.rtt_hist[b] = st.rtt_hist[b].wrapping_add(1);
    }

    // ECE fraction of the round: ACKs with ECE / ACKs (segments in).
    let ece = st.ece_in;
    let segs = st.segs_in;
    let d_ece = ece.wrapping_sub(st.round_ece_start);
    let d_segs = segs.wrapping_sub(st.round_segs_start);
    st.round_ece_start = ece;
    st.round_segs_start = segs;
    let ppm = if d_segs == 0 { 0 } else { (d_ece.min(d_segs).wrapping_mul(1_000_000) / d_segs) as u32 };
    st.round_ecn_ppm = ppm;
    let retrans = s.total_retrans;
    let lossy = retrans != st.round_retrans_start;
    st.round_retrans_start = retrans;
    st.total_retrans = retrans;

    let cfg = config();
    let congested = ppm >= cfg.congested_ecn_ppm && d_segs > 0;
    if !congested && !lossy {
        mark_healthy(&key.remote_addr, st.path_id, now);
    }
    if st.settle_rounds > 0 {
        st.settle_rounds -= 1;
        st.congested_run = 0;
        st.lossy_run = 0;
    } else {
        st.congested_run = if congested { st.congested_run.saturating_add(1) } else { 0 };
        st.lossy_run = if lossy { st.lossy_run.saturating_add(1) } else { 0 };
    }
    let reason = if forced(&key) {
        RerouteReason::Forced
    } else if cfg.lossy_rounds > 0 && st.lossy_run >= cfg.lossy_rounds {
        RerouteReason::Loss
    } else if cfg.congested_rounds > 0 && st.congested_run >= cfg.congested_rounds {
        RerouteReason::Congestion
    } else {
        return;
    };
    reroute(ctx, &key, st, &cfg, reason, now);
}

fn on_rto(ctx: &SockOpsContext, s: &OpsSnapshot) {
    let key = s.key();
    let Some(st) = FLOWS.get_ptr_mut(&key) else {
        return;
    };
    // SAFETY: as in on_round.
    let st = unsafe { &mut *st };
    let cfg = config();
    let force = forced(&key);
    if cfg.reroute_on_rto != 0 || force {
        let reason = if force { RerouteReason::Forced } else { RerouteReason::Rto };
        reroute(ctx, &key, st, &cfg, reason, now_ns());
    }
}

/// The operator asked to move this flow.
#[inline(always)]
fn forced(key: &FlowKey) -> bool {
    // SAFETY: read of a live map value.
    unsafe { FORCE.get(key).is_some() }
}

fn on_state(s: &OpsSnapshot) {
    // args[0] = old state, args[1] = new state
    if s.args[1] != TCP_CLOSE {
        return;
    }
    let key = s.key();
    if let Some(st) = FLOWS.get_ptr_mut(&key) {
        // SAFETY: as in on_round.
        let st = unsafe { &mut *st };
        st.closed_ns = now_ns();
        if s.is_fullsock != 0 {
            st.bytes_acked = s.bytes_acked;
            st.bytes_received = s.bytes_received;
            st.total_retrans = s.total_retrans;
        }
        count(|c| c.flows_closed = c.flows_closed.wrapping_add(1));
    }
}

fn mark_healthy(dest: &[u8; 16], path: u32, now: u64) {
    if let Some(h) = PATH_HEALTH.get_ptr_mut(dest) {
        // SAFETY: live map value; a racing writer stores a similar time.
        let h = unsafe { &mut *h };
        let i = core::hint::black_box(path) as usize;
        if i < PATHS as usize {
            h.last_good_ns[i] = now;
        }
    }
}

/// Moves the flow to another path id (IPv6 only: IPv4 has no flow label).
fn reroute(ctx: &SockOpsContext, key: &FlowKey, st: &mut FlowStats, cfg: &Config, reason: RerouteReason, now: u64) {
    if cfg.reroute_enabled == 0 || key.family != 6 {
        let _ = FORCE.remove(key);
        return;
    }
    // (products of a u32 and ≤ 1000 · 1000 cannot overflow u64; BPF has no
    // 128-bit multiply for checked arithmetic)
    let base_rtt_ns = (st.min_rtt_us as u64).wrapping_mul(1000);
    let min_gap = base_rtt_ns.wrapping_mul(cfg.min_interval_base_rtts.min(1000) as u64);
    if st.last_reroute_ns != 0 && now.wrapping_sub(st.last_reroute_ns) < min_gap {
        return;
    }
    let paths = cfg.paths.clamp(2, PATHS);
    let old = st.path_id;
    // Random other ids, up to PICK_TRIES of them; the first one that ended an
    // uncongested round to this destination within the healthy window wins,
    // else the first draw. (Sampling keeps the verifier's work constant; with
    // h healthy ids among n, a healthy one is missed with probability
    // ((n-1-h)/(n-1))^4.)
    let window = (cfg.healthy_window_us as u64).wrapping_mul(1000);
    let health = PATH_HEALTH.get_ptr(&key.remote_addr);
    let mut new = other_path(old, paths);
    for _ in 0..PICK_TRIES {
        let cand = other_path(old, paths);
        if let Some(h) = health {
            let i = core::hint::black_box(cand) as usize;
            if i < PATHS as usize {
                // SAFETY: live map value, read only.
                let t = unsafe { (*h).last_good_ns[i] };
                if t != 0 && now.wrapping_sub(t) <= window {
                    new = cand;
                    break;
                }
            }
        }
    }
    st.path_id = if new < paths { new } else { 0 };
    st.reroutes = st.reroutes.wrapping_add(1);
    st.last_reason = reason as u32;
    st.last_reroute_ns = now;
    let _ = FORCE.remove(key);
    st.settle_rounds = SETTLE_ROUNDS;
    st.congested_run = 0;
    st.lossy_run = 0;
    count(|c| c.reroutes = c.reroutes.wrapping_add(1));
    info!(ctx, "xdcc: reroute port {} path {} -> {} ({})", key.local_port, old, st.path_id, reason as u32);
}

/// A random path id other than `old`: old + 1 + r (mod paths), r < paths - 1.
#[inline(always)]
fn other_path(old: u32, paths: u32) -> u32 {
    let id = old.wrapping_add(1).wrapping_add(below(random(), paths - 1));
    if id >= paths {
        id.wrapping_sub(paths)
    } else {
        id
    }
}

// ------------------------------------------------------------------------
// tc (TCX) telemetry and flow-label rewrite
// ------------------------------------------------------------------------

/// What the tc programs need of a TCP/IP packet.
struct Packet {
    family: u16,
    src: [u8; 16],
    dst: [u8; 16],
    sport: u16,
    dport: u16,
    ecn: u8,
    tcp_flags: u8,
    /// TCP payload bytes (of the whole GSO packet).
    payload: u32,
    /// IPv6: the first header word (version, traffic class, flow label), host order.
    v6_word0: u32,
    segs: u32,
}

/// Headers are copied to the stack with one `bpf_skb_load_bytes` per family
/// (helper calls dominate the per-packet cost): Ethernet + IPv4 (no options)
/// + TCP = 54 bytes, Ethernet + IPv6 + TCP = 74 bytes. IPv4 options cost a
/// second load; IPv6 extension headers are not followed.
#[inline(always)]
fn parse(ctx: &TcContext) -> Option<Packet> {
    let proto = u16::from_be(ctx.load::<u16>(12).ok()?);
    let mut v6_word0 = 0;
    let (family, src, dst, ecn, tcp, ip_len) = if proto == ETH_P_IP {
        let h: [u8; 54] = ctx.load(0).ok()?;
        if h[ETH_HLEN + 9] != IPPROTO_TCP {
            return None;
        }
        let ihl = ((h[ETH_HLEN] & 0x0f) as usize) * 4;
        let s = [h[26], h[27], h[28], h[29]];
        let d = [h[30], h[31], h[32], h[33]];
        let tcp: [u8; 14] = if ihl == 20 {
            let mut t = [0u8; 14];
            t.copy_from_slice(&h[34..48]);
            t
        } else {
            ctx.load(ETH_HLEN + ihl).ok()?
        };
        (4u16, FlowKey::map_v4(s), FlowKey::map_v4(d), h[ETH_HLEN + 1] & ECN_MASK, tcp, ihl)
    } else if proto == ETH_P_IPV6 {
        let h: [u8; 74] = ctx.load(0).ok()?;
        if h[ETH_HLEN + 6] != IPPROTO_TCP {
            return None; // extension headers are not followed
        }
        let mut s = [0u8; 16];
        let mut d = [0u8; 16];
        s.copy_from_slice(&h[22..38]);
        d.copy_from_slice(&h[38..54]);
        let mut tcp = [0u8; 14];
        tcp.copy_from_slice(&h[54..68]);
        v6_word0 = u32::from_be_bytes([h[14], h[15], h[16], h[17]]);
        // traffic class = bits 20..27 of the first word; ECN = its low 2 bits
        let ecn = ((v6_word0 >> 20) as u8) & ECN_MASK;
        (6u16, s, d, ecn, tcp, 40)
    } else {
        return None;
    };
    let sport = u16::from_be_bytes([tcp[0], tcp[1]]);
    let dport = u16::from_be_bytes([tcp[2], tcp[3]]);
    let hdrs = (ETH_HLEN + ip_len + ((tcp[12] >> 4) as usize) * 4) as u32;
    let payload = ctx.len().saturating_sub(hdrs);
    // SAFETY: reading the context's gso_segs field.
    let gso = unsafe { (*ctx.skb.skb).gso_segs };
    let segs = if gso == 0 { 1 } else { gso };
    Some(Packet { family, src, dst, sport, dport, ecn, tcp_flags: tcp[13], payload, v6_word0, segs })
}

/// The flow entry of a packet this host sends (`outgoing`) or receives.
#[inline(always)]
fn flow_of(p: &Packet, outgoing: bool) -> Option<*mut FlowStats> {
    let (local_addr, remote_addr, local_port, remote_port) =
        if outgoing { (p.src, p.dst, p.sport, p.dport) } else { (p.dst, p.src, p.dport, p.sport) };
    let key = FlowKey { local_addr, remote_addr, local_port, remote_port, family: p.family, _pad: 0 };
    let st = FLOWS.get_ptr_mut(&key);
    if st.is_none() {
        count(|c| c.untracked_packets = c.untracked_packets.wrapping_add(1));
    }
    st
}

#[classifier]
pub fn xdcc_tc_egress(ctx: TcContext) -> i32 {
    let Some((p, st)) = parse(&ctx).and_then(|p| flow_of(&p, true).map(|st| (p, st))) else {
        return TC_ACT_UNSPEC;
    };
    let segs = p.segs as u64;
    // SAFETY: `st` is a live map value; addr_of_mut! takes field addresses
    // without creating references that other CPUs could alias.
    unsafe {
        atomic_add(core::ptr::addr_of_mut!((*st).segs_out), segs);
        atomic_add(core::ptr::addr_of_mut!((*st).bytes_out), p.payload as u64);
        if p.ecn != 0 {
            atomic_add(core::ptr::addr_of_mut!((*st).ect_out), segs);
        }
        if p.tcp_flags & TCP_FLAG_ECE != 0 {
            atomic_add(core::ptr::addr_of_mut!((*st).ece_out), segs);
        }
    }
    if p.family == 6 {
        // xdcc owns the flow label of every tracked IPv6 flow (also with
        // moves disabled): the kernel's own label changes (txhash rethink on
        // RTO) would otherwise move flows behind the rerouter's back.
        // SAFETY: plain read of a u32 written by sock_ops.
        let path = unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*st).path_id)) };
        set_flow_label(&ctx, p.v6_word0, path_label(path, config().label_salt));
    }
    TC_ACT_UNSPEC
}

/// Rewrites the 20-bit flow label (no checksum covers it).
#[inline(always)]
fn set_flow_label(ctx: &TcContext, old: u32, label: u32) {
    let new = (old & 0xfff0_0000) | (label & 0x000f_ffff);
    if new != old && ctx.store(ETH_HLEN, &new.to_be(), 0).is_ok() {
        count(|c| c.labels_rewritten = c.labels_rewritten.wrapping_add(1));
    }
}

#[classifier]
pub fn xdcc_tc_ingress(ctx: TcContext) -> i32 {
    let Some((p, st)) = parse(&ctx).and_then(|p| flow_of(&p, false).map(|st| (p, st))) else {
        return TC_ACT_UNSPEC;
    };
    let segs = p.segs as u64;
    // SAFETY: as in xdcc_tc_egress.
    unsafe {
        atomic_add(core::ptr::addr_of_mut!((*st).segs_in), segs);
        atomic_add(core::ptr::addr_of_mut!((*st).bytes_in), p.payload as u64);
        if p.ecn == ECN_CE && p.payload > 0 {
            atomic_add(core::ptr::addr_of_mut!((*st).ce_in), segs);
        }
        if p.tcp_flags & TCP_FLAG_ECE != 0 {
            atomic_add(core::ptr::addr_of_mut!((*st).ece_in), segs);
        }
    }
    TC_ACT_UNSPEC
}

// ------------------------------------------------------------------------
// CE marker (router / switch port)
// ------------------------------------------------------------------------

/// Marks CE on every Nth ECT packet (N in MARK_CE[0]; 0 = off). Counts ECT
/// segments seen (MARK_CE[2]) and segments marked (MARK_CE[3]).
#[classifier]
pub fn xdcc_mark_ce(ctx: TcContext) -> i32 {
    let every = match MARK_CE.get(0) {
        Some(n) => *n,
        None => 0,
    };
    if every == 0 {
        return TC_ACT_UNSPEC;
    }
    let Some(p) = parse(&ctx) else {
        return TC_ACT_UNSPEC;
    };
    if p.ecn == 0 || p.ecn == ECN_CE || p.payload == 0 {
        return TC_ACT_UNSPEC;
    }
    let (Some(seen), Some(marked)) = (MARK_CE.get_ptr_mut(2), MARK_CE.get_ptr_mut(3)) else {
        return TC_ACT_UNSPEC;
    };
    // SAFETY: live array values; the marker runs on one port whose packets
    // are serialized by the qdisc lock, atomics only for readers.
    let n = unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::SeqCst }>(seen, 1) };
    // mark when n + 1 is a multiple of `every`, without a division
    if (n.wrapping_add(1)).wrapping_sub(((n.wrapping_add(1)) / every) * every) == 0 {
        // SAFETY: helper on the context's skb.
        if unsafe { bpf_skb_ecn_set_ce(ctx.skb.skb) } == 1 {
            atomic_add(marked, p.segs as u64);
        }
    }
    TC_ACT_UNSPEC
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
