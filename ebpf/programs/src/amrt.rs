//! AMRT's anti-ECN marker for a Linux switch port (amrt-icpp20 §4.1).
//!
//! A switch marks a packet CE when the link was idle, before it, for at
//! least one MTU's transmission time ("spare bandwidth"); along a path the
//! marks AND (a switch without spare bandwidth clears CE to ECT(0)).
//! Linux has no eBPF hook at qdisc dequeue, so the program runs where
//! packets appear at their dequeue times: the TCX *ingress* of the next hop
//! (e.g. the peer of a veth whose egress qdisc shapes the port), or the
//! egress of a port without a queue of its own. The link is modelled as a
//! line-rate serializer (`xdcc_common::markers::amrt_step`): idle time is the time
//! since the link finished the previous packets, so a shaper's burst of
//! back-to-back packets followed by a gap is busy time, not spare capacity.
//! State: one u64, the link's finish time in ns (48 bits; 0: no packet yet).

use core::intrinsics::{atomic_xchg, AtomicOrdering};

use aya_ebpf::{
    bindings::TC_ACT_UNSPEC,
    helpers::{bpf_ktime_get_ns, bpf_skb_ecn_set_ce},
    macros::{classifier, map},
    maps::Array,
    programs::TcContext,
};
use xdcc_common::markers::{amrt_step, AmrtConfig, AmrtStats, AMRT_TIME_MASK};

#[map]
static AMRT_CFG: Array<AmrtConfig> = Array::with_max_entries(1, 0);
/// When the port's link finishes the packets seen so far (48-bit ns).
#[map]
static AMRT_STATE: Array<u64> = Array::with_max_entries(1, 0);
#[map]
static AMRT_STATS: Array<AmrtStats> = Array::with_max_entries(1, 0);

#[classifier]
pub fn xdcc_amrt(ctx: TcContext) -> i32 {
    let Some(cfg) = AMRT_CFG.get(0) else {
        return TC_ACT_UNSPEC;
    };
    let cfg = *cfg;
    let Some(state) = AMRT_STATE.get_ptr_mut(0) else {
        return TC_ACT_UNSPEC;
    };
    if cfg.ps_per_byte == 0 {
        return TC_ACT_UNSPEC;
    }
    let len = ctx.len() as u64;
    // SAFETY: helper without arguments.
    let now = unsafe { bpf_ktime_get_ns() } & AMRT_TIME_MASK;
    // SAFETY: `state` is a live array value, 8-byte aligned.
    let finish = unsafe { core::ptr::read_volatile(state) };
    let (spare, next) = amrt_step(finish, now, len, &cfg);
    // (Two CPUs racing here each add their packet to the same finish time:
    // the virtual link then runs one packet short, which only errs towards
    // "spare" by one packet's time. Packets of one veth queue arrive on one
    // CPU. 0 means "no packet yet": a finish time of 0 is stored as 1 ns.)
    // SAFETY: as above (BPF_XCHG).
    unsafe { atomic_xchg::<u64, { AtomicOrdering::SeqCst }>(state, if next == 0 { 1 } else { next }) };
    let spare = finish != 0 && spare;

    let Ok(proto) = ctx.load::<u16>(12) else { return TC_ACT_UNSPEC };
    let v6 = match u16::from_be(proto) {
        0x0800 => false,
        0x86dd => true,
        _ => return TC_ACT_UNSPEC,
    };
    let Ok(b) = ctx.load::<u8>(15) else { return TC_ACT_UNSPEC };
    let ecn = if v6 { (b >> 4) & 3 } else { b & 3 };
    if ecn == 0 {
        return TC_ACT_UNSPEC; // not ECN-capable: AMRT only marks ECN packets
    }
    let Some(stats) = AMRT_STATS.get_ptr_mut(0) else {
        return TC_ACT_UNSPEC;
    };
    // SAFETY (the three blocks below): fields of a live array value, by
    // address (no reference), atomic adds with the result unused.
    count(unsafe { core::ptr::addr_of_mut!((*stats).ect_packets) });
    if spare && (cfg.transit == 0 || ecn == 3) {
        // SAFETY: helper on the context's skb.
        if ecn == 3 || unsafe { bpf_skb_ecn_set_ce(ctx.skb.skb) } == 1 {
            // SAFETY: see above.
            count(unsafe { core::ptr::addr_of_mut!((*stats).marked) });
        }
    } else if ecn == 3 && clear_ce(&ctx, v6, b) {
        // SAFETY: see above.
        count(unsafe { core::ptr::addr_of_mut!((*stats).cleared) });
    }
    TC_ACT_UNSPEC
}

#[inline(always)]
fn count(field: *mut u64) {
    crate::atomic_add(field, 1);
}

/// CE → ECT(0). IPv4 also fixes the header checksum (the TOS byte is the low
/// half of the 16-bit word at offset 14 of the Ethernet frame).
#[inline(always)]
fn clear_ce(ctx: &TcContext, v6: bool, b: u8) -> bool {
    if v6 {
        let nb = (b & !0x30) | 0x20;
        return ctx.store(15, &nb, 0).is_ok();
    }
    let Ok(word) = ctx.load::<u16>(14) else { return false };
    let nb = (b & !3) | 2;
    let new_word = (u16::from_be(word) & 0xff00) | nb as u16;
    // checksum at 14 + 10; from/to in network order
    ctx.l3_csum_replace(24, word as u64, new_word.to_be() as u64, 2).is_ok() && ctx.store(15, &nb, 0).is_ok()
}
