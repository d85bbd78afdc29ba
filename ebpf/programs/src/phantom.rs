//! Uno's phantom-queue marker for a Linux switch port (TCX egress).
//!
//! A virtual queue grows by every packet entering the port and drains at a
//! fraction of the line rate (uno-sc25 §4.1: 0.9), so it signals congestion
//! before the physical queue builds; ECT packets are marked CE with a
//! probability rising linearly between kmin and kmax of its size (htsim
//! compositequeue.cpp). Link-fed (`PhantomConfig::line_bytes_per_sec`, as
//! HULL places it), the queue grows instead by what a mirror of the port —
//! a second virtual queue draining at the line rate — transmits. Each queue
//! is one u64 — bytes in the upper 32 bits, the time of its last update in
//! µs (mod 2^32) in the lower — updated with compare-and-swap, so all CPUs
//! feeding the port share them. Behind ingress links
//! (`PhantomConfig::ingress_bytes_per_sec`), every ingress interface is a
//! wire of the same packing that delivers at the links' rate, and a packet
//! is judged by the queue less the bytes still on the wires; mirroring a
//! shaped port (`port_burst_bytes`), less what the shaper sends ahead.

use core::intrinsics::{atomic_cxchg, atomic_xadd, AtomicOrdering};

use aya_ebpf::{
    bindings::TC_ACT_UNSPEC,
    helpers::{bpf_get_prandom_u32, bpf_ktime_get_ns, bpf_skb_ecn_set_ce},
    macros::{classifier, map},
    maps::Array,
    programs::TcContext,
};
use xdcc_common::markers::{
    judged_queue, link_phantom_step, packed_elapsed, mirror_step, phantom_mark, phantom_step, wire_level, wire_step, PhantomConfig, PhantomStats, INGRESS_WIRES,
};

#[map]
static PHANTOM_CFG: Array<PhantomConfig> = Array::with_max_entries(1, 0);
/// The packed queue states: [0] the phantom queue, [1] the port's mirror
/// (link feed only).
#[map]
static PHANTOM_STATE: Array<u64> = Array::with_max_entries(2, 0);
#[map]
static PHANTOM_STATS: Array<PhantomStats> = Array::with_max_entries(1, 0);
/// The ingress links' wires, packed as the queues (ingress model only),
/// indexed by the ingress interface modulo `INGRESS_WIRES`.
#[map]
static PHANTOM_WIRES: Array<u64> = Array::with_max_entries(INGRESS_WIRES, 0);

/// Compare-and-swap attempts before the packet just passes unaccounted
/// (only under heavy contention; keeps the verifier's work bounded).
const CAS_TRIES: u32 = 4;
const ECN_MASK: u8 = 3;

#[classifier]
pub fn xdcc_phantom(ctx: TcContext) -> i32 {
    let Some(cfg) = PHANTOM_CFG.get(0) else {
        return TC_ACT_UNSPEC;
    };
    let cfg = *cfg;
    if cfg.drain_bytes_per_sec == 0 {
        return TC_ACT_UNSPEC;
    }
    let (Some(state), Some(stats)) = (PHANTOM_STATE.get_ptr_mut(0), PHANTOM_STATS.get_ptr_mut(0)) else {
        return TC_ACT_UNSPEC;
    };
    let (Some(mirror), true) = (PHANTOM_STATE.get_ptr_mut(1), cfg.line_bytes_per_sec != 0) else {
        // Fed at enqueue: the packet joins the phantom queue.
        let len = wire_len(&ctx);
        let queue = update(state, |q, elapsed| (phantom_step(q, elapsed, len, &cfg), 0)).0;
        let queue = judged_queue(queue, on_wires(&ctx, stats, len, &cfg), &cfg);
        return mark(&ctx, stats, len, queue, &cfg);
    };
    // Fed by the link: the packet joins the port's mirror, and what the
    // mirror transmitted since the last packet joins the phantom queue.
    let len = wire_len(&ctx);
    let (m, sent) = update(mirror, |m, elapsed| mirror_step(m, elapsed, len, &cfg));
    // SAFETY: as in `mark` (a racy maximum).
    unsafe {
        if m > (*stats).max_mirror_bytes {
            (*stats).max_mirror_bytes = m;
        }
    }
    let queue = update(state, |q, elapsed| (link_phantom_step(q, elapsed, sent, &cfg), 0)).0;
    let queue = judged_queue(queue, on_wires(&ctx, stats, len, &cfg), &cfg);
    mark(&ctx, stats, len, queue, &cfg)
}

/// The bytes still on the ingress links' wires once this packet is put on
/// its own (0 without the ingress model): its interface's wire takes the
/// packet, every wire is read at the current time.
#[inline(always)]
fn on_wires(ctx: &TcContext, stats: *mut PhantomStats, len: u64, cfg: &PhantomConfig) -> u64 {
    let rate = cfg.ingress_bytes_per_sec;
    if rate == 0 {
        return 0;
    }
    // SAFETY: a field read of the program's context (tc programs may read it).
    let ingress = unsafe { (*ctx.skb.skb).ingress_ifindex } % INGRESS_WIRES;
    if let Some(wire) = PHANTOM_WIRES.get_ptr_mut(ingress) {
        update(wire, |w, elapsed| (wire_step(w, elapsed, len, rate), 0));
    }
    // SAFETY: helper without arguments.
    let now_us = (unsafe { bpf_ktime_get_ns() } / 1000) as u32;
    let mut total = 0u64;
    for i in 0..INGRESS_WIRES {
        let Some(wire) = PHANTOM_WIRES.get_ptr_mut(i) else { continue };
        // SAFETY: a live array value, 8-byte aligned; a racy read of one
        // packed word (a wire updated meanwhile is read a moment late).
        let w = unsafe { core::ptr::read_volatile(wire) };
        if w == 0 {
            continue;
        }
        // A wire updated after `now_us` was read (another CPU) counts as is.
        let elapsed = now_us.wrapping_sub(w as u32);
        let elapsed = if (elapsed as i32) < 0 { 0 } else { elapsed as u64 };
        total = total.saturating_add(wire_level(w >> 32, elapsed, rate));
    }
    // SAFETY: `stats` is a live array value; a racy maximum as in `mark`.
    unsafe {
        if total > (*stats).max_on_wires_bytes {
            (*stats).max_on_wires_bytes = total;
        }
    }
    total
}

/// Advances one packed queue (bytes in the upper 32 bits, the time of its
/// last update in µs mod 2^32 in the lower) by `step(level, elapsed_us) ->
/// (level, out)` with compare-and-swap; returns the new level and `out`
/// (0, 0 if every attempt lost a race: the packet passes unaccounted).
#[inline(always)]
fn update(state: *mut u64, step: impl Fn(u64, u64) -> (u64, u64)) -> (u64, u64) {
    // SAFETY: helper without arguments.
    let now_us = (unsafe { bpf_ktime_get_ns() } / 1000) as u32;
    for _ in 0..CAS_TRIES {
        // SAFETY: `state` is a live array value, 8-byte aligned.
        let old = unsafe { core::ptr::read_volatile(state) };
        let (elapsed, stamp) = packed_elapsed(old, now_us);
        let (q, out) = step(old >> 32, elapsed);
        let new = (q << 32) | stamp as u64;
        // SAFETY: as above; BPF_CMPXCHG on a map value.
        let (_, swapped) = unsafe { atomic_cxchg::<u64, { AtomicOrdering::SeqCst }, { AtomicOrdering::SeqCst }>(state, old, new) };
        if swapped {
            return (q, out);
        }
    }
    (0, 0)
}

/// Counts the packet and marks it CE with the phantom queue at `queue`.
#[inline(always)]
fn mark(ctx: &TcContext, stats: *mut PhantomStats, len: u64, queue: u64, cfg: &PhantomConfig) -> i32 {
    // SAFETY: `stats` is a live array value; counters use atomic adds, the
    // maximum a racy read-compare-write (a lost update only lowers it).
    unsafe {
        atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(core::ptr::addr_of_mut!((*stats).packets), 1);
        atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(core::ptr::addr_of_mut!((*stats).bytes), len);
        if queue > (*stats).max_queue_bytes {
            (*stats).max_queue_bytes = queue;
        }
    }
    if queue == 0 || !is_ect(ctx) {
        return TC_ACT_UNSPEC;
    }
    // SAFETY: as above.
    unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(core::ptr::addr_of_mut!((*stats).ect_packets), 1) };
    // SAFETY: helper without arguments.
    let r = unsafe { bpf_get_prandom_u32() };
    // SAFETY: helper on the context's skb (returns 1 if it set CE).
    if phantom_mark(queue, r, cfg) && unsafe { bpf_skb_ecn_set_ce(ctx.skb.skb) } == 1 {
        // SAFETY: as above.
        unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(core::ptr::addr_of_mut!((*stats).marked), 1) };
    }
    TC_ACT_UNSPEC
}

/// The bytes the port's qdisc counts for this packet, and its rate limit
/// spends: a GSO packet is `gso_segs` packets on the wire, each with its own
/// headers (Linux's `qdisc_pkt_len_init`). With `skb->len` alone a queue
/// that mirrors a port drains faster than the port does (by the headers of
/// the segments: ~4 % with 7-segment GSO packets at 1 Gbit/s), so under a
/// standing queue it drifts below the port's and stops marking
/// (bench/realspeed.sh measured DCTCP's port at 430 kB with K = 97.5 kB).
#[inline(always)]
fn wire_len(ctx: &TcContext) -> u64 {
    let len = ctx.len() as u64;
    // SAFETY: a field read of the program's context (tc programs may read it).
    let segs = unsafe { (*ctx.skb.skb).gso_segs } as u64;
    if segs <= 1 {
        return len;
    }
    len.saturating_add((segs - 1).saturating_mul(header_len(ctx)))
}

/// Ethernet + IP + TCP header bytes of a TCP packet (0 if unknown: the
/// packet then counts as `skb->len`).
#[inline(always)]
fn header_len(ctx: &TcContext) -> u64 {
    const ETH: u64 = 14;
    let Ok(proto) = ctx.load::<u16>(12) else { return 0 };
    let l3 = match u16::from_be(proto) {
        0x0800 => match ctx.load::<u8>(14) {
            Ok(v) => ((v & 0x0f) as u64) * 4,
            Err(_) => return 0,
        },
        0x86dd => 40,
        _ => return 0,
    };
    // TCP's data offset: the upper four bits of byte 12 of its header.
    match ctx.load::<u8>((ETH + l3 + 12) as usize) {
        Ok(doff) => ETH + l3 + ((doff >> 4) as u64) * 4,
        Err(_) => 0,
    }
}

/// ECT(0) or ECT(1), IPv4 or IPv6 (CE packets are already marked).
#[inline(always)]
fn is_ect(ctx: &TcContext) -> bool {
    let Ok(proto) = ctx.load::<u16>(12) else { return false };
    let ecn = match u16::from_be(proto) {
        0x0800 => ctx.load::<u8>(15).map(|tos| tos & ECN_MASK).unwrap_or(0),
        0x86dd => ctx.load::<u8>(15).map(|b| (b >> 4) & ECN_MASK).unwrap_or(0),
        _ => 0,
    };
    ecn == 1 || ecn == 2
}
