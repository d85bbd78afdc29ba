//! UnoLB for TCP (uno-sc25 §4.2): a connection whose `[[policy]]` entry says
//! `lb = "unolb"` sprays its packets round robin over `lb_subflows`
//! entropies of the IPv6 flow label, under its one window (one entropy per
//! skb: a TSO packet's segments share it), and a subflow that loses a packet
//! gets a new entropy, at most once per base RTT. The decisions are
//! `xdcc_multipath::Balancer`'s, the code the simulator and the UDP
//! transport run. Which subflow lost a packet: the subflow that first
//! carried the retransmitted sequence number (`SentRing`), told by the
//! kernel's retransmission callback — SACK/RACK loss detection, tail loss
//! probes and RTOs alike.

use aya_ebpf::{macros::map, maps::LruHashMap};
use xdcc_common::{FlowKey, FlowStats};
use xdcc_multipath::{Balancer, SentRing, Strategy, UnoLbConfig};

use crate::random;

/// One sprayed connection's state (~3.7 kB: too large for the BPF stack, so
/// it is created from [`IDLE`] in its map slot and started there).
#[repr(C)]
pub(crate) struct TcpLb {
    balancer: Balancer,
    sent: SentRing,
}

/// Connections sprayed at once. An evicted one keeps its last label until
/// it closes (`lb_subflows` stays set: the egress program finds no entry and
/// uses the path id).
const MAX_SPRAYED: u32 = 1024;

#[map]
static TCP_LB: LruHashMap<FlowKey, TcpLb> = LruHashMap::with_max_entries(MAX_SPRAYED, 0);

static IDLE: TcpLb = TcpLb { balancer: Balancer::IDLE, sent: SentRing::EMPTY };

/// Without an RTT sample at establishment, a subflow may be re-drawn once
/// per 100 µs (a datacenter's base RTT).
const DEFAULT_BASE_RTT_NS: u64 = 100_000;

/// Starts spraying a connection established at `now` over `subflows`
/// entropies; `base_rtt_us` is its handshake's RTT (0: none). Whether it
/// did (the table had room).
pub(crate) fn start(key: &FlowKey, subflows: u32, base_rtt_us: u32, now: u64) -> bool {
    if TCP_LB.insert(key, &IDLE, 0).is_err() {
        return false;
    }
    let Some(lb) = TCP_LB.get_ptr_mut(key) else {
        return false;
    };
    let base_rtt_ns = if base_rtt_us == 0 { DEFAULT_BASE_RTT_NS } else { (base_rtt_us as u64).wrapping_mul(1000) };
    let cfg = UnoLbConfig { subflows: subflows.min(xdcc_multipath::lb::MAX_SUBFLOWS as u32) as u8, prefer_recent: false, unanswered: false };
    // SAFETY: live map value; the connection's callbacks run under its
    // socket lock, and its egress path too (transmits hold the socket).
    unsafe { (*lb).balancer.start(Strategy::UnoLb(cfg), base_rtt_ns, now, &mut || random()) };
    true
}

/// The entropy of the connection's next packet (`seq`, `payload` bytes),
/// recording its subflow; None: not sprayed (no entry).
#[inline(always)]
pub(crate) fn next_entropy(key: &FlowKey, seq: u32, payload: u32, now: u64) -> Option<u16> {
    let lb = TCP_LB.get_ptr_mut(key)?;
    // SAFETY: as in `start`.
    let lb = unsafe { &mut *lb };
    let (subflow, entropy) = lb.balancer.next_subflow(now, &mut || random());
    lb.sent.record(seq, payload, subflow, entropy);
    Some(entropy)
}

/// The kernel retransmitted the segment starting at `seq` (the copy has
/// just left, through the egress program): the transmission before it lost
/// it, on its subflow and entropy.
pub(crate) fn on_retransmit(key: &FlowKey, st: &mut FlowStats, seq: u32, now: u64) {
    let Some(lb) = TCP_LB.get_ptr_mut(key) else {
        return;
    };
    // SAFETY: as in `start`.
    let lb = unsafe { &mut *lb };
    if let Some(lost) = lb.sent.carrier(seq, 1) {
        if lb.balancer.on_subflow_loss(lost.subflow, lost.entropy, now, &mut || random()) {
            st.lb_redraws = st.lb_redraws.wrapping_add(1);
        }
    }
}

/// The connection closed.
pub(crate) fn stop(key: &FlowKey) {
    let _ = TCP_LB.remove(key);
}
