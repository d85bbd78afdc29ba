//! `xdcc_sockops` (cgroup sock_ops): the flow table's lifecycle, one RTT
//! sample and one transport snapshot per round trip, the ECE fraction of each
//! round, the decision to reroute (carried out by `reroute.rs`), and the CC
//! per destination (`CC_POLICY`): set before a connection's SYN, or on an
//! accepted one once established, with ECN negotiated for it; for a
//! connection its entry sprays (UnoLB), the start of its subflows and each
//! retransmission (`unolb.rs`).

use aya_ebpf::{
    bindings::bpf_sock_ops,
    helpers::{bpf_getsockopt, bpf_setsockopt},
    macros::{map, sock_ops},
    maps::{lpm_trie::Key, LpmTrie, PerCpuArray, RingBuf},
    programs::SockOpsContext,
};
use aya_log_ebpf::warn;
use xdcc_common::{plb, rtt_bucket, CcPolicy, ClosedFlow, FlowKey, FlowStats, RerouteReason, CLOSED_RING_BYTES, MAX_POLICIES, RTT_BUCKETS};

use crate::reroute::{first_path, forced, mark_healthy, reroute};
use crate::{config, count, now_ns, unolb, FLOWS};

/// Scratch space to build a new flow's entry (FlowStats exceeds the 512-byte
/// BPF stack).
#[map]
static SCRATCH: PerCpuArray<FlowStats> = PerCpuArray::with_max_entries(1, 0);

/// Final records of closed flows, for the agent (see `ClosedFlow`).
#[map]
static CLOSED: RingBuf = RingBuf::with_byte_size(CLOSED_RING_BYTES, 0);

/// Peer prefixes → CC (the agent's `[[policy]]` entries); see `CcPolicy`.
#[map]
static CC_POLICY: LpmTrie<[u8; 16], CcPolicy> = LpmTrie::with_max_entries(MAX_POLICIES, 0);

// --- constants from the uapi headers ---
const AF_INET: u32 = 2;
const AF_INET6: u32 = 10;
const SOL_TCP: i32 = 6;
const TCP_CONGESTION: i32 = 13;
const OP_TCP_CONNECT: u32 = 3;
const OP_ACTIVE_ESTABLISHED: u32 = 4;
const OP_PASSIVE_ESTABLISHED: u32 = 5;
const OP_NEEDS_ECN: u32 = 6;
const OP_RTO: u32 = 8;
const OP_RETRANS: u32 = 9;
const OP_STATE: u32 = 10;
const OP_RTT: u32 = 12;
const OP_PARSE_HDR_OPT: u32 = 13;
const CB_RTO: i32 = 1 << 0;
const CB_RETRANS: i32 = 1 << 1;
const CB_STATE: i32 = 1 << 2;
const CB_RTT: i32 = 1 << 3;
const CB_PARSE_ALL_HDR_OPT: i32 = 1 << 4;
const TCP_CLOSE: u32 = 7;

/// The fields of `bpf_sock_ops` used here, read once in straight-line code:
/// the verifier only allows ctx loads at constant offsets, and reading them
/// up front keeps LLVM from forming `ctx + off` pointers in loops.
struct OpsSnapshot {
    op: u32,
    family: u32,
    args: [u32; 3],
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
    snd_una: u32,
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
                args: [o.__bindgen_anon_1.args[0], o.__bindgen_anon_1.args[1], o.__bindgen_anon_1.args[2]],
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
                snd_una: o.snd_una,
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
        OP_TCP_CONNECT => {
            if let Some(p) = policy(&s) {
                set_cc(&ctx, p);
            }
        }
        OP_NEEDS_ECN => {
            if policy(&s).is_some_and(|p| p.needs_ecn != 0) {
                ctx.set_reply(1);
            }
        }
        OP_ACTIVE_ESTABLISHED | OP_PASSIVE_ESTABLISHED => on_established(&ctx, &s),
        OP_RTT => on_round(&ctx, &s),
        OP_RTO => on_rto(&ctx, &s),
        OP_RETRANS => on_retransmit(&s),
        OP_PARSE_HDR_OPT => on_ack(&ctx, &s),
        OP_STATE => on_state(&s),
        _ => {}
    }
    1
}

/// The policy entry for this connection's peer, if any.
#[inline(always)]
fn policy(s: &OpsSnapshot) -> Option<&'static CcPolicy> {
    CC_POLICY.get(Key::new(128, s.key().remote_addr))
}

/// setsockopt(TCP_CONGESTION) to the entry's CC (a failure, e.g. a CC not
/// registered, leaves the socket's CC as it was).
#[inline(always)]
fn set_cc(ctx: &SockOpsContext, p: &CcPolicy) {
    let mut name = p.cc;
    // SAFETY: setsockopt(TCP_CONGESTION) from sock_ops on a full socket
    // (connect and established callbacks are) with a 16-byte NUL-padded name.
    unsafe {
        bpf_setsockopt(ctx.ops as *mut _, SOL_TCP, TCP_CONGESTION, name.as_mut_ptr() as *mut _, 16);
    }
}

fn on_established(ctx: &SockOpsContext, s: &OpsSnapshot) {
    let key = s.key();
    let pol = policy(s);
    if s.op == OP_PASSIVE_ESTABLISHED {
        if let Some(p) = pol {
            set_cc(ctx, p);
        }
    }
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
    if let Some(p) = pol {
        if p.cc == st.cc {
            st.policy = p.index;
        }
    }
    st.path_id = first_path(&key, &cfg, now);
    // UnoLB (IPv6 only: an IPv4 packet has no flow label, and the ports of
    // a TCP connection cannot change).
    let subflows = pol.map_or(0, |p| p.lb_subflows);
    if subflows != 0 && key.family == 6 {
        let handshake_rtt_us = if s.rtt_min != 0 { s.rtt_min } else { s.srtt_us >> 3 };
        if unolb::start(&key, subflows, handshake_rtt_us, now) {
            st.lb_subflows = subflows;
        }
    }
    if FLOWS.insert(&key, &*st, 0).is_err() {
        count(|c| c.insert_failures = c.insert_failures.wrapping_add(1));
        warn!(ctx, "xdcc: flow table insert failed (port {})", key.local_port);
        unolb::stop(&key);
        return;
    }
    count(|c| c.flows_opened = c.flows_opened.wrapping_add(1));
    // Sprayed: every retransmission, and every ACK's header (which
    // subflows deliver).
    let sprayed = if st.lb_subflows != 0 { CB_RETRANS | CB_PARSE_ALL_HDR_OPT } else { 0 };
    let _ = ctx.set_cb_flags(CB_RTO | CB_STATE | CB_RTT | sprayed);
}

/// A sprayed connection retransmitted the segment at args[0]: the
/// transmission before it lost it (`unolb.rs`). Not when the send failed
/// (args[2] != 0): the egress program may not have seen the copy, and the
/// ring's "transmission before" would then be the wrong one.
fn on_retransmit(s: &OpsSnapshot) {
    if s.args[2] != 0 {
        return;
    }
    let key = s.key();
    let Some(st) = FLOWS.get_ptr_mut(&key) else {
        return;
    };
    // SAFETY: as in on_round.
    let st = unsafe { &mut *st };
    unolb::on_retransmit(&key, st, s.args[0], now_ns());
}

/// A sprayed connection received a segment (an ACK): which subflows its
/// cumulative ACK and SACK blocks answer (`unolb.rs`).
fn on_ack(ctx: &SockOpsContext, s: &OpsSnapshot) {
    unolb::on_ack(ctx.ops, &s.key(), s.snd_una, s.srtt_us >> 3, now_ns());
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
    let ppm = plb::ecn_ppm(d_ece, d_segs);
    st.round_ecn_ppm = ppm;
    let retrans = s.total_retrans;
    let lossy = retrans != st.round_retrans_start;
    st.round_retrans_start = retrans;
    st.total_retrans = retrans;

    let cfg = config();
    let congested = plb::congested(ppm, d_segs, cfg.congested_ecn_ppm);
    if !congested && !lossy {
        mark_healthy(&key.remote_addr, st.path_id, now);
    }
    if st.settle_rounds > 0 {
        st.settle_rounds -= 1;
        st.congested_run = 0;
        st.lossy_run = 0;
    } else {
        st.congested_run = plb::next_run(st.congested_run, congested);
        st.lossy_run = plb::next_run(st.lossy_run, lossy);
    }
    if st.lb_subflows != 0 {
        // Sprayed: its subflows move on their own losses (`unolb.rs`).
        return;
    }
    let reason = if forced(&key) {
        RerouteReason::Forced
    } else if plb::should_move(st.lossy_run, cfg.lossy_rounds) {
        RerouteReason::Loss
    } else if plb::should_move(st.congested_run, cfg.congested_rounds) {
        RerouteReason::Congestion
    } else {
        return;
    };
    core::hint::black_box(reroute(ctx, &key, st, &cfg, reason, now));
}

fn on_rto(ctx: &SockOpsContext, s: &OpsSnapshot) {
    let key = s.key();
    let Some(st) = FLOWS.get_ptr_mut(&key) else {
        return;
    };
    // SAFETY: as in on_round.
    let st = unsafe { &mut *st };
    if st.lb_subflows != 0 {
        // Sprayed: every silent subflow gets a new entropy before the
        // head is sent again (the timeout fires before the retransmission;
        // the retransmission callback charges the copy before it); the
        // path id is not used.
        if unolb::on_rto(&key, now_ns()) {
            st.lb_redraws = st.lb_redraws.wrapping_add(1);
        }
        return;
    }
    let cfg = config();
    let force = forced(&key);
    if cfg.reroute_on_rto != 0 || force {
        let reason = if force { RerouteReason::Forced } else { RerouteReason::Rto };
        core::hint::black_box(reroute(ctx, &key, st, &cfg, reason, now_ns()));
    }
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
        if st.lb_subflows != 0 {
            unolb::stop(&key);
        }
        // The final record goes to the agent now, and the entry leaves the
        // table: under churn an LRU table would evict closed entries before
        // a periodic harvest read them. A full ring buffer keeps the entry
        // for the harvest, counted.
        match CLOSED.reserve::<ClosedFlow>(0) {
            Some(mut rec) => {
                // SAFETY: `rec` is a reserved ring-buffer slot of
                // ClosedFlow's size; `st` a live map value; they do not overlap.
                unsafe {
                    let p = rec.as_mut_ptr();
                    core::ptr::write(core::ptr::addr_of_mut!((*p).key), key);
                    core::ptr::copy_nonoverlapping(st as *const FlowStats, core::ptr::addr_of_mut!((*p).stats), 1);
                }
                rec.submit(0);
                let _ = FLOWS.remove(&key);
            }
            None => count(|c| c.closed_ring_full = c.closed_ring_full.wrapping_add(1)),
        }
    } else {
        // The state callback is armed only once the flow is in the table
        // (`on_established`): it was evicted while open.
        count(|c| c.open_flows_evicted = c.open_flows_evicted.wrapping_add(1));
    }
}
