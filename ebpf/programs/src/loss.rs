//! `xdcc_loss` (TCX egress, a router's or switch's port in tests and
//! experiments): drops packets as Uno's Table 1 describes a lossy WAN link,
//! in blocks of consecutive packets (`xdcc_common::markers::loss_step`; the
//! host has no netem). Positions count the skbs the port sends (a GSO
//! super-packet is one).

use aya_ebpf::{
    bindings::{TC_ACT_SHOT, TC_ACT_UNSPEC},
    macros::{classifier, map},
    maps::Array,
    programs::TcContext,
};
use xdcc_common::markers::{loss_step, LossConfig, LossState, LossStats};

use crate::{atomic_add, random};

#[map]
static LOSS_CFG: Array<LossConfig> = Array::with_max_entries(1, 0);
#[map]
static LOSS_STATE: Array<LossState> = Array::with_max_entries(1, 0);
#[map]
static LOSS_STATS: Array<LossStats> = Array::with_max_entries(1, 0);

#[classifier]
pub fn xdcc_loss(_ctx: TcContext) -> i32 {
    let Some(cfg) = LOSS_CFG.get(0) else {
        return TC_ACT_UNSPEC;
    };
    if cfg.block == 0 {
        return TC_ACT_UNSPEC;
    }
    let (Some(st), Some(stats)) = (LOSS_STATE.get_ptr_mut(0), LOSS_STATS.get_ptr_mut(0)) else {
        return TC_ACT_UNSPEC;
    };
    // SAFETY: `st` points at the live state value. The block's place is
    // read and written without a lock: two CPUs sending on the port at once
    // may share a position, which shifts a block's drops but not their rate.
    let (drop, opened) = loss_step(cfg, unsafe { &mut *st }, random);
    // SAFETY (all four): fields of the live stats value, addressed without
    // a reference; the adds are atomic.
    atomic_add(unsafe { core::ptr::addr_of_mut!((*stats).packets) }, 1);
    if let Some(lossy) = opened {
        atomic_add(unsafe { core::ptr::addr_of_mut!((*stats).blocks) }, 1);
        if lossy {
            atomic_add(unsafe { core::ptr::addr_of_mut!((*stats).lossy_blocks) }, 1);
        }
    }
    if drop {
        atomic_add(unsafe { core::ptr::addr_of_mut!((*stats).dropped) }, 1);
        return TC_ACT_SHOT;
    }
    TC_ACT_UNSPEC
}
