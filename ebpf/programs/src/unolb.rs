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

use aya_ebpf::{bindings::bpf_sock_ops, helpers::bpf_load_hdr_opt, macros::map, maps::LruHashMap};
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
    // `unanswered`: a loss re-draws only a subflow that stopped delivering
    // (a spurious retransmission of a reordered packet does not).
    let cfg = UnoLbConfig { subflows: subflows.min(xdcc_multipath::lb::MAX_SUBFLOWS as u32) as u8, prefer_recent: false, unanswered: true };
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
    // A retransmission goes on the subflow answered last
    // (`Balancer::retransmit_subflow`); new data round robin.
    let (subflow, entropy) = if lb.sent.is_retransmission(seq) {
        lb.balancer.retransmit_subflow(now, &mut || random())
    } else {
        lb.balancer.next_subflow(now, &mut || random())
    };
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

/// A retransmission timeout at `now`, before the head segment is sent
/// again: the subflows silent for their wait get new entropies
/// (`Balancer::on_timeout`). Whether any did.
pub(crate) fn on_rto(key: &FlowKey, now: u64) -> bool {
    let Some(lb) = TCP_LB.get_ptr_mut(key) else {
        return false;
    };
    // SAFETY: as in `start`.
    let lb = unsafe { &mut *lb };
    let before = lb.balancer.moves.timeout;
    lb.balancer.on_timeout(now, &mut || random());
    lb.balancer.moves.timeout != before
}

/// TCP's SACK option: kind 5, length, up to 4 blocks of (start, end).
const TCPOPT_SACK: u8 = 5;
const SACK_OPT_MAX: usize = 2 + 4 * 8;

/// An ACK arrived (sock_ops' header callback, `ops` its context): the
/// subflows that carried the last byte it acknowledges cumulatively and the
/// last byte of each SACK block answer; `srtt_us`, the connection's.
pub(crate) fn on_ack(ops: *mut bpf_sock_ops, key: &FlowKey, snd_una: u32, srtt_us: u32, now: u64) {
    let Some(lb) = TCP_LB.get_ptr_mut(key) else {
        return;
    };
    // SAFETY: as in `start`.
    let lb = unsafe { &mut *lb };
    lb.balancer.observe_rtt((srtt_us as u64).wrapping_mul(1000));
    if let Some(t) = lb.sent.carrier(snd_una.wrapping_sub(1), 0) {
        lb.balancer.on_subflow_ack(t.subflow, t.entropy, now);
    }
    let mut opt = [0u8; SACK_OPT_MAX];
    opt[0] = TCPOPT_SACK;
    // SAFETY: the helper searches the received header for option kind
    // opt[0] and copies it (kind, length, data) into the 34-byte buffer.
    let len = unsafe { bpf_load_hdr_opt(ops, opt.as_mut_ptr() as *mut _, SACK_OPT_MAX as u32, 0) };
    if len < 10 {
        return;
    }
    let blocks = ((len as usize - 2) / 8).min(4);
    for b in 0..4 {
        if b >= blocks {
            break;
        }
        let o = 2 + 8 * b + 4;
        let end = u32::from_be_bytes([opt[o], opt[o + 1], opt[o + 2], opt[o + 3]]);
        if let Some(t) = lb.sent.carrier(end.wrapping_sub(1), 0) {
            lb.balancer.on_subflow_ack(t.subflow, t.entropy, now);
        }
    }
}

/// The connection closed.
pub(crate) fn stop(key: &FlowKey) {
    let _ = TCP_LB.remove(key);
}
