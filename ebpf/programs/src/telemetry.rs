//! `xdcc_tc_egress` / `xdcc_tc_ingress` (TCX): per-flow segment, byte, ECT,
//! CE and ECE counters (atomic adds; GSO packets count as their segments),
//! and on egress the IPv6 flow label = f(path id), which the network's ECMP
//! hashes (`fib_multipath_hash_policy`), or f(entropy of the next subflow)
//! for a connection UnoLB sprays (`unolb.rs`). Labels are pinned to the path id
//! even with moves disabled.

use aya_ebpf::{bindings::TC_ACT_UNSPEC, macros::classifier, programs::TcContext};
use xdcc_common::{path_label, FlowKey, FlowStats};

use crate::packet::{parse, Packet, ECN_CE, ETH_HLEN, TCP_FLAG_ECE};
use crate::{atomic_add, config, count, now_ns, unolb, FLOWS};

/// The flow entry of a packet this host sends (`outgoing`) or receives.
#[inline(always)]
fn flow_of(p: &Packet, outgoing: bool) -> Option<(FlowKey, *mut FlowStats)> {
    let (local_addr, remote_addr, local_port, remote_port) =
        if outgoing { (p.src, p.dst, p.sport, p.dport) } else { (p.dst, p.src, p.dport, p.sport) };
    let key = FlowKey { local_addr, remote_addr, local_port, remote_port, family: p.family, _pad: 0 };
    let st = FLOWS.get_ptr_mut(&key);
    if st.is_none() {
        count(|c| c.untracked_packets = c.untracked_packets.wrapping_add(1));
    }
    st.map(|st| (key, st))
}

#[classifier]
pub fn xdcc_tc_egress(ctx: TcContext) -> i32 {
    let Some((p, (key, st))) = parse(&ctx).and_then(|p| flow_of(&p, true).map(|f| (p, f))) else {
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
        // SAFETY: plain reads of u32s written by sock_ops.
        let (path, sprayed) = unsafe {
            (
                core::ptr::read_volatile(core::ptr::addr_of!((*st).path_id)),
                core::ptr::read_volatile(core::ptr::addr_of!((*st).lb_subflows)) != 0,
            )
        };
        // A sprayed connection (UnoLB): its next subflow's entropy.
        let id = match sprayed.then(|| unolb::next_entropy(&key, p.seq, p.payload, now_ns())).flatten() {
            Some(entropy) => entropy as u32,
            None => path,
        };
        set_flow_label(&ctx, p.v6_word0, path_label(id, config().label_salt));
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
    let Some((p, (_, st))) = parse(&ctx).and_then(|p| flow_of(&p, false).map(|f| (p, f))) else {
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
