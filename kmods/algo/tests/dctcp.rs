//! DCTCP against Linux's `tcp_dctcp.c` + Reno and against the DCTCP
//! paper's steady state (Alizadeh et al., SIGCOMM 2010, §3.3).
//!
//! The flows here are driven round by round: a round sends the window (one
//! packet per ns), its ACKs come back one RTT later in order, and the
//! network marks the packets a test chooses.

use xdcc_algo::dctcp::{Dctcp, Params, ALPHA_ONE};
use xdcc_algo::{AckSample, CongestionControl, Event, FlowInit, NetConfig};

const MSS: u32 = 1500;
const RTT: u64 = 100_000;

fn params() -> Params {
    Params::from_net(&NetConfig::LINUX_DEFAULT)
}

fn flow(p: &Params) -> Dctcp {
    Dctcp::new(p, &FlowInit { now_ns: 1_000, mss: MSS, rtt_hint_ns: RTT as u32 })
}

fn pkts(c: &Dctcp) -> u32 {
    c.cwnd() / MSS
}

/// One round: the window's packets sent at `t`, `t+1`, ... and ACKed one
/// RTT later; `marked(i, window)` says whether packet `i` carried CE.
/// Returns the time of the next round and the packets sent.
fn round(c: &mut Dctcp, p: &Params, t: u64, marked: impl Fn(u32, u32) -> bool) -> (u64, u32) {
    let w = pkts(c);
    for i in 0..w {
        let sent = t + i as u64;
        let m = marked(i, w);
        c.on_ack(
            p,
            &AckSample {
                now_ns: sent + RTT,
                acked_bytes: MSS,
                marked_bytes: if m { MSS } else { 0 },
                rtt_ns: RTT as u32,
                srtt_ns: 0,
                send_time_ns: sent,
                inflight_at_send: 0,
                inflight: 0,
                app_limited: false,
            },
        );
    }
    (t + RTT + w as u64, w)
}

#[test]
fn reno_without_marks_doubles_in_slow_start_then_adds_one_packet_per_round() {
    let p = params();
    let mut c = flow(&p);
    assert_eq!(pkts(&c), 10, "Linux's initial window");
    let mut t = 10_000;
    for expect in [20, 40, 80] {
        t = round(&mut c, &p, t, |_, _| false).0;
        assert_eq!(pkts(&c), expect, "slow start doubles per round");
    }
    c.on_event(&p, Event::Loss { bytes: MSS }, t);
    assert_eq!(pkts(&c), 40, "a loss halves (dctcp_react_to_loss)");
    // The reduction lasts until data sent after it is acknowledged.
    t += 1;
    t = round(&mut c, &p, t, |_, _| false).0;
    for expect in [41, 42, 43] {
        t = round(&mut c, &p, t, |_, _| false).0;
        assert_eq!(pkts(&c), expect, "congestion avoidance: one packet per round");
    }
}

#[test]
fn alpha_follows_linux_arithmetic() {
    let p = params();
    let mut c = flow(&p);
    assert_eq!(c.alpha(), ALPHA_ONE, "dctcp_alpha_on_init");
    let mut t = 10_000;
    // Unmarked windows: α −= α >> 4 per window, a small α drops to 0
    // (min_not_zero).
    let mut linux = ALPHA_ONE;
    for _ in 0..6 {
        t = round(&mut c, &p, t, |_, _| false).0;
    }
    // Each round's first ACK closes the previous α window, the first one the
    // (empty) window opened at init, as Linux's first ACK passes the
    // `next_seq` of `dctcp_init`: 6 rounds close 6.
    for _ in 0..6 {
        let d = linux >> 4;
        linux -= if d == 0 { linux } else { d.min(linux) };
    }
    assert_eq!(c.alpha(), linux);
    // A window with every packet marked: its first ACK closes the last
    // unmarked window (one more decay); the next round's first ACK closes it:
    // decay, then α += (delivered_ce << 6) / delivered = 64.
    let decay = |a: u32| a - (a >> 4).max(1).min(a);
    let expect = (decay(decay(c.alpha())) + 64).min(ALPHA_ONE);
    let (t2, _) = round(&mut c, &p, t, |_, _| true);
    round(&mut c, &p, t2, |_, _| false);
    assert_eq!(c.alpha(), expect);
}

#[test]
fn marks_cut_once_per_window_by_alpha_over_two() {
    let p = params();
    let mut c = flow(&p);
    let mut t = 10_000;
    for _ in 0..3 {
        t = round(&mut c, &p, t, |_, _| false).0;
    }
    let w = pkts(&c);
    assert_eq!(w, 80);
    // Every ACK of the window carries ECE: one cut, by α/2, with α as the
    // round's first ACK updated it (`in_ack_event` runs before the stack
    // enters CWR): still near its initial 1 (the first congested windows
    // nearly halve, as in Linux).
    let alpha = c.alpha() - (c.alpha() >> 4);
    t = round(&mut c, &p, t, |_, _| true).0;
    let expect = w - ((w as u64 * alpha as u64) >> 11) as u32;
    assert_eq!(pkts(&c), expect, "cwnd − cwnd·α/2, once for the whole window");
    assert_eq!(c.ecn_cuts(), 1);
    assert_eq!(c.ssthresh() / MSS, expect, "ssthresh = the cut window: slow start is over");
    // Undo (a spurious reduction) restores the window.
    c.undo(&p);
    assert_eq!(pkts(&c), w);
    let _ = t;
}

#[test]
fn rto_restarts_from_one_packet_and_undo_restores() {
    let p = params();
    let mut c = flow(&p);
    let mut t = 10_000;
    for _ in 0..2 {
        t = round(&mut c, &p, t, |_, _| false).0;
    }
    assert_eq!(pkts(&c), 40);
    c.on_event(&p, Event::Rto, t);
    assert_eq!(pkts(&c), 1);
    assert_eq!(c.ssthresh() / MSS, 20);
    c.undo(&p);
    assert_eq!(pkts(&c), 40);
}

#[test]
fn the_paper_steady_state_alpha_and_oscillation() {
    // One long flow; the bottleneck marks every packet of a window above
    // W* = C·RTT + K, whose queue stays above K for that whole round trip
    // (the paper's §3.3 sawtooth model). The
    // paper's analysis: α ≈ sqrt(2 / W*) (eq. 7), the window oscillates
    // between W* + 1 and (W* + 1)(1 − α/2): amplitude D = (W* + 1)·α/2.
    for w_star in [60u32, 100, 200] {
        let p = params();
        let mut c = flow(&p);
        let mut t = 10_000;
        let (mut lo, mut hi, mut alphas) = (u32::MAX, 0u32, Vec::new());
        for r in 0..3000 {
            let (next, w) = round(&mut c, &p, t, |_, w| w > w_star);
            t = next;
            if r >= 1000 {
                lo = lo.min(w);
                hi = hi.max(w);
                alphas.push(c.alpha());
            }
        }
        // Integers only (as everything under kmods/): the claims squared.
        // α / sqrt(2/W*) within [0.7, 1.3]  ⇔  α² · W* / 2 within [0.49, 1.69],
        // with α the mean in 1/1024.
        let a = alphas.iter().map(|&a| a as u64).sum::<u64>() / alphas.len() as u64;
        let w = w_star as u64;
        let one2 = (ALPHA_ONE as u64) * (ALPHA_ONE as u64);
        let lhs = a * a * w * 100;
        assert!(
            (49 * 2 * one2..=169 * 2 * one2).contains(&lhs),
            "W* {w_star}: α {a}/1024, the paper's sqrt(2/W*) = {}/1024 (squared ratio {}/100)",
            (2 * one2 / w).isqrt(),
            lhs / (2 * one2)
        );
        assert!(hi <= w_star + 2, "W* {w_star}: the window never passes W* + 1 by more than one packet (max {hi})");
        // D = (W* + 1)·sqrt(2/W*)/2, so D² = (W* + 1)² / (2 W*): the
        // amplitude within [0.5, 1.5] D  ⇔  amp² · 2 W* within [0.25, 2.25] (W* + 1)².
        let amp = (hi - lo) as u64;
        let d2x100 = (w + 1) * (w + 1);
        let lhs = amp * amp * 2 * w * 100;
        assert!(
            (25 * d2x100..=225 * d2x100).contains(&lhs),
            "W* {w_star}: amplitude {amp} packets, the paper's D ≈ {} (squared ratio {}/100)",
            (d2x100 / (2 * w)).isqrt(),
            lhs / d2x100
        );
    }
}

#[test]
fn tunables_are_linux_module_parameters_with_linux_ranges() {
    let mut p = params();
    assert_eq!((p.shift_g, p.alpha_on_init, p.init_cwnd_pkts), (4, 1024, 10));
    assert!(p.set("shift_g", 11).is_err(), "Linux accepts 0..=10");
    assert!(p.set("alpha_on_init", 1025).is_err());
    assert_eq!(p.shift_g, 4, "a rejected value changes nothing");
    p.set("shift_g", 0).unwrap();
    // g = 1: α is the last window's fraction.
    let mut c = flow(&p);
    let mut t = 10_000;
    for _ in 0..3 {
        t = round(&mut c, &p, t, |_, _| false).0;
    }
    t = round(&mut c, &p, t, |i, w| i >= w - w / 4).0;
    round(&mut c, &p, t, |_, _| false);
    assert_eq!(c.alpha(), 256, "α = F = 1/4 with g = 1");
}
