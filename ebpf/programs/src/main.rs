//! xdcc eBPF programs (aya-ebpf), loaded by the `xdcc` agent. One file per
//! program:
//!
//! - `sockops.rs` — `xdcc_sockops` (cgroup sock_ops): the flow table's
//!   lifecycle, one RTT sample and one transport snapshot per round trip, the
//!   ECE fraction of each round; `reroute.rs` — the rerouter it calls
//!   (UnoLB / PLB: a new path id after an RTO, lossy or congested rounds).
//! - `telemetry.rs` — `xdcc_tc_egress` / `xdcc_tc_ingress` (TCX): per-flow
//!   packet, byte, ECT, CE and ECE counters, and the IPv6 flow label = f(path
//!   id) on egress, or for a connection sprayed by UnoLB the label of its
//!   next subflow (`unolb.rs`); `packet.rs` parses the headers.
//! - `mark_ce.rs` — `xdcc_mark_ce` (TCX, a router or switch port in tests and
//!   demos): CE on every Nth ECT packet.
//! - `phantom.rs` — `xdcc_phantom` (TCX egress of a switch port): Uno's
//!   phantom-queue ECN marker.
//! - `amrt.rs` — `xdcc_amrt` (TCX at a switch port's dequeue point): AMRT's
//!   anti-ECN marker (CE = spare bandwidth).
//! - `loss.rs` — `xdcc_loss` (TCX egress of a port): Uno's Table-1 losses,
//!   in blocks of consecutive packets.
//!
//! Map key, value and configuration types are in `xdcc-common` (shared with
//! the agent). Nothing here allocates; every loop is bounded by a constant;
//! no arithmetic can trap (wrapping or saturating).
#![no_std]
#![no_main]
// The BPF target has no `AtomicU64::fetch_add`; the intrinsic lowers to BPF's
// atomic add (BPF_ATOMIC | BPF_ADD, with BPF_FETCH for SeqCst).
#![feature(core_intrinsics)]
#![allow(internal_features)]

use core::intrinsics::{atomic_xadd, AtomicOrdering};

use aya_ebpf::{
    helpers::{bpf_get_prandom_u32, bpf_ktime_get_ns},
    macros::map,
    maps::{Array, LruHashMap, PerCpuArray},
};
use xdcc_common::{Config, Counters, FlowKey, FlowStats, MAX_FLOWS};

mod amrt;
mod loss;
mod mark_ce;
mod packet;
mod phantom;
mod reroute;
mod sockops;
mod telemetry;
mod unolb;

/// The flow table: written by sock_ops (lifecycle, rounds) and the tc
/// programs (packet counters), read by the agent.
#[map]
static FLOWS: LruHashMap<FlowKey, FlowStats> = LruHashMap::with_max_entries(MAX_FLOWS, 0);
#[map]
static CONFIG: Array<Config> = Array::with_max_entries(1, 0);
#[map]
static COUNTERS: PerCpuArray<Counters> = PerCpuArray::with_max_entries(1, 0);

#[inline(always)]
pub(crate) fn config() -> Config {
    match CONFIG.get(0) {
        Some(c) => *c,
        None => Config::DEFAULT,
    }
}

#[inline(always)]
pub(crate) fn count(f: impl FnOnce(&mut Counters)) {
    if let Some(c) = COUNTERS.get_ptr_mut(0) {
        // SAFETY: a per-CPU array value is only touched by this CPU while
        // the program runs (programs do not migrate while running).
        f(unsafe { &mut *c });
    }
}

#[inline(always)]
pub(crate) fn now_ns() -> u64 {
    // SAFETY: helper without arguments.
    unsafe { bpf_ktime_get_ns() }
}

#[inline(always)]
pub(crate) fn random() -> u32 {
    // SAFETY: helper without arguments.
    unsafe { bpf_get_prandom_u32() }
}

pub(crate) use xdcc_common::below;

/// Atomically adds to a counter inside a map value shared by all CPUs.
#[inline(always)]
pub(crate) fn atomic_add(field: *mut u64, v: u64) {
    // SAFETY: `field` points into a live map value (the caller got it from a
    // successful lookup) and is 8-byte aligned (FlowStats is repr(C) with u64
    // fields at multiples of 8). Relaxed with the result unused: a plain
    // BPF atomic add (no fetch), the cheapest form.
    unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(field, v) };
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
