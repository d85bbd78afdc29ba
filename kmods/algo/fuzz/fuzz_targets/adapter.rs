//! Every CC through the Linux adapter (`linux::Flow`), driven by arbitrary
//! callback sequences as the kernel and the BPF struct_ops backend make them:
//! ACKs with any RTT sample (negative, zero, huge), any delivery counts, ECE or
//! not, cwnd-limited or not; recovery, RTO, idle restarts, CE events on the
//! receiver, ssthresh and undo calls; arbitrary networks, tunables, pacing
//! ratios, MSS and window clamps. Checks, after every call:
//! - no panic (overflow checks are on, as in the kernel);
//! - every window written back is within [2, clamp] packets, and the
//!   algorithm's window within `MAX_CWND_BYTES`;
//! - the same sequence gives the same outputs (no hidden state).
//! And the configuration codec (`linux::Config`, the bytes the BPF map and
//! `xdcc` exchange): a valid configuration survives write → read unchanged,
//! and arbitrary bytes either decode to a set that validates and round-trips
//! or are refused.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use xdcc_algo::linux::*;
use xdcc_algo::{with_cc, CongestionControl, NetConfig, Tunables, MAX_CWND_BYTES};

#[path = "common.rs"]
mod common;

#[derive(Arbitrary, Debug, Clone)]
enum Call {
    Ack {
        gap_us: u16,
        rtt_us: i32,
        send_back_us: i32,
        acked_sacked: u16,
        new_delivery: bool,
        app_limited: bool,
        ece: bool,
        cwnd_limited: bool,
        in_flight: u16,
        srtt_us: u32,
    },
    /// `n` in-order ACKs of one packet each, `gap_us` apart, each with RTT
    /// `rtt_us`, ECE on every `ece_every`-th (0: none): a steady stream, so
    /// that short inputs reach the states of long flows.
    Train { n: u16, gap_us: u8, rtt_us: u16, ece_every: u8 },
    EnterRecovery { from: u8 },
    Rto,
    TxStart { idle_jiffies: u32 },
    Ce { is_ce: bool, rcv_nxt: u32, delayed_ack_pending: bool },
    Ssthresh,
    Undo,
    Sleep { us: u32 },
}

#[derive(Arbitrary, Debug)]
struct Input {
    setup: common::Setup,
    ss_pct: u16,
    ca_pct: u16,
    mss: u16,
    clamp: u16,
    ecn_ok: bool,
    handshake_srtt_us: u32,
    calls: Vec<Call>,
    config_bytes: Vec<u8>,
}

fn check_codec<P: Tunables + PartialEq + core::fmt::Debug>(p: &P, net: &NetConfig, pacing: &Pacing, raw: &[u8]) {
    let mut buf = [0u8; 256];
    let cfg = Config { params: *p, pacing: *pacing, net: *net };
    assert!(cfg.write_bytes(&mut buf), "a configuration does not fit 256 bytes");
    assert_eq!(Config::<P>::read_bytes(&buf), Some(cfg), "write → read changed a valid configuration");
    for name in P::TUNABLES {
        assert!(p.get(name).is_some(), "tunable {name} listed but not readable");
    }
    if let Some(c) = Config::<P>::read_bytes(raw) {
        assert!(c.params.validate().is_ok(), "decoded a set that does not validate: {c:?}");
        let mut again = [0u8; 256];
        assert!(c.write_bytes(&mut again));
        assert_eq!(Config::<P>::read_bytes(&again), Some(c), "decoded set does not round-trip");
    }
}

/// ACKs of all trains of one run together (bounds the time of one input).
const MAX_ACKS_PER_RUN: u32 = 3_000;

/// One output per call, for the determinism check.
#[derive(Debug, PartialEq)]
enum Out {
    Update(Update),
    Maybe(Option<Update>),
    Echo(Option<CeEcho>),
    Pkts(u32),
}

fn check_update(u: &Update, clamp: u32) {
    if u.cwnd_pkts != 0 {
        assert!(u.cwnd_pkts >= 2, "window below 2 packets: {u:?}");
        assert!(u.cwnd_pkts <= clamp.max(2), "window above the clamp {clamp}: {u:?}");
    }
}

fn run<A: CongestionControl>(p: &A::Params, input: &Input) -> Vec<Out> {
    let pacing = Pacing {
        ss_pct: (input.ss_pct as u32).min(Pacing::MAX_PCT),
        ca_pct: (input.ca_pct as u32).min(Pacing::MAX_PCT),
    };
    let clamp = input.clamp as u32;
    let mut s = Sock {
        now_us: 1_000_000,
        mss: input.mss as u32,
        srtt_us8: input.handshake_srtt_us.wrapping_shl(3),
        snd_cwnd_clamp: clamp,
        delivered: 0,
        packets_in_flight: 0,
        ca_state: TCP_CA_OPEN,
        cwnd_limited: 1,
        ecn_ok: input.ecn_ok as u8,
        _pad: 0,
        idle_jiffies: 0,
        rto_jiffies: 50,
        snd_cwnd: 10,
        _pad2: 0,
    };
    let mut f = Flow::<A>::new(p, &s);
    let mut outs = Vec::with_capacity(input.calls.len());
    let mut budget = MAX_ACKS_PER_RUN;
    for call in input.calls.iter().take(2000) {
        let out = match *call {
            Call::Train { n, gap_us, rtt_us, ece_every } => {
                let n = (n as u32).min(budget);
                budget -= n;
                let mut last = Update::default();
                for i in 0..n {
                    s.now_us = s.now_us.saturating_add(gap_us as u64);
                    s.srtt_us8 = (rtt_us as u32) << 3;
                    s.cwnd_limited = 1;
                    let prior = s.delivered;
                    s.delivered = s.delivered.wrapping_add(1);
                    let rs = RateSample {
                        send_time_us: s.now_us.saturating_sub(rtt_us as u64),
                        rtt_us: rtt_us as i64,
                        acked_sacked: 1,
                        prior_delivered: prior,
                        is_app_limited: 0,
                        _pad: [0; 3],
                        flag: if ece_every != 0 && i % ece_every as u32 == 0 { FLAG_ECE } else { 0 },
                    };
                    last = f.on_ack(p, &pacing, &s, &rs);
                    check_update(&last, clamp);
                    s.packets_in_flight = last.cwnd_pkts;
                }
                s.ca_state = TCP_CA_OPEN;
                Out::Update(last)
            }
            Call::Ack { gap_us, rtt_us, send_back_us, acked_sacked, new_delivery, app_limited, ece, cwnd_limited, in_flight, srtt_us } => {
                s.now_us = s.now_us.saturating_add(gap_us as u64);
                s.srtt_us8 = srtt_us.wrapping_shl(3);
                s.packets_in_flight = in_flight as u32;
                s.cwnd_limited = cwnd_limited as u8;
                let prior = s.delivered;
                s.delivered = s.delivered.wrapping_add(acked_sacked as u32);
                let rs = RateSample {
                    send_time_us: (s.now_us as i64).saturating_sub(send_back_us as i64).max(0) as u64,
                    rtt_us: rtt_us as i64,
                    acked_sacked: acked_sacked as u32,
                    prior_delivered: if new_delivery { prior } else { 0 },
                    is_app_limited: app_limited as u8,
                    _pad: [0; 3],
                    flag: if ece { FLAG_ECE } else { 0 },
                };
                let u = f.on_ack(p, &pacing, &s, &rs);
                check_update(&u, clamp);
                s.ca_state = TCP_CA_OPEN;
                Out::Update(u)
            }
            Call::EnterRecovery { from } => {
                s.ca_state = from % 5;
                let u = f.on_set_state(p, &pacing, &s, TCP_CA_RECOVERY);
                s.ca_state = TCP_CA_RECOVERY;
                if let Some(u) = &u {
                    check_update(u, clamp);
                }
                Out::Maybe(u)
            }
            Call::Rto => {
                let u = f.on_cwnd_event(p, &pacing, &s, CA_EVENT_LOSS);
                s.ca_state = TCP_CA_LOSS;
                if let Some(u) = &u {
                    check_update(u, clamp);
                }
                Out::Maybe(u)
            }
            Call::TxStart { idle_jiffies } => {
                s.idle_jiffies = idle_jiffies;
                Out::Maybe(f.on_cwnd_event(p, &pacing, &s, CA_EVENT_TX_START))
            }
            Call::Ce { is_ce, rcv_nxt, delayed_ack_pending } => {
                let ev = if is_ce { CA_EVENT_ECN_IS_CE } else { CA_EVENT_ECN_NO_CE };
                Out::Echo(f.on_ce_event(ev, rcv_nxt, delayed_ack_pending))
            }
            Call::Ssthresh => {
                let th = f.ssthresh_pkts(&s);
                assert!(th >= 2, "ssthresh below 2 packets: {th}");
                Out::Pkts(th)
            }
            Call::Undo => {
                let w = f.undo_cwnd_pkts(p, &s);
                assert!((2..=clamp.max(2)).contains(&w), "undo window {w} outside [2, {clamp}]");
                Out::Pkts(w)
            }
            Call::Sleep { us } => {
                s.now_us = s.now_us.saturating_add(us as u64);
                Out::Pkts(0)
            }
        };
        assert!(f.algo.cwnd() <= MAX_CWND_BYTES, "window {} above MAX_CWND_BYTES", f.algo.cwnd());
        let _ = f.info();
        outs.push(out);
    }
    outs
}

fuzz_target!(|input: Input| {
    let name = common::chosen_cc(input.setup.cc);
    with_cc!(name, |C, P| {
        let Some(p) = input.setup.params::<P>() else { return };
        let pacing = Pacing { ss_pct: (input.ss_pct as u32).min(Pacing::MAX_PCT), ca_pct: (input.ca_pct as u32).min(Pacing::MAX_PCT) };
        check_codec(&p, &input.setup.net(), &pacing, &input.config_bytes);
        let a = run::<C>(&p, &input);
        let b = run::<C>(&p, &input);
        assert_eq!(a, b, "same calls, different outputs");
    }, _ => {});
});
