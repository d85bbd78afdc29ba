//! `xdcc_mark_ce` (TCX, for a router or switch port in tests and demos): sets
//! CE on every Nth ECT data packet, deterministically, and counts them.

use core::intrinsics::{atomic_xadd, AtomicOrdering};

use aya_ebpf::{bindings::TC_ACT_UNSPEC, helpers::bpf_skb_ecn_set_ce, macros::{classifier, map}, maps::Array, programs::TcContext};
use xdcc_common::markers::{MarkCeConfig, MarkCeStats};

use crate::atomic_add;
use crate::packet::{parse, ECN_CE};

#[map]
static MARK_CE_CFG: Array<MarkCeConfig> = Array::with_max_entries(1, 0);
#[map]
static MARK_CE_STATS: Array<MarkCeStats> = Array::with_max_entries(1, 0);

#[classifier]
pub fn xdcc_mark_ce(ctx: TcContext) -> i32 {
    let every = match MARK_CE_CFG.get(0) {
        Some(c) => c.every_n,
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
    let Some(stats) = MARK_CE_STATS.get_ptr_mut(0) else {
        return TC_ACT_UNSPEC;
    };
    // SAFETY: `stats` is a live array value; addr_of_mut! takes the field's
    // address without a reference. The marker runs on one port whose packets
    // are serialized by the qdisc lock; the atomic is for readers.
    let n = unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::SeqCst }>(core::ptr::addr_of_mut!((*stats).ect_seen), 1) };
    // mark when n + 1 is a multiple of `every`, without a division
    let n1 = n.wrapping_add(1);
    if n1.wrapping_sub((n1 / every).wrapping_mul(every)) == 0 {
        // SAFETY: helper on the context's skb.
        if unsafe { bpf_skb_ecn_set_ce(ctx.skb.skb) } == 1 {
            // SAFETY: as above, a field of the live stats value.
            atomic_add(unsafe { core::ptr::addr_of_mut!((*stats).marked) }, p.segs as u64);
        }
    }
    TC_ACT_UNSPEC
}
