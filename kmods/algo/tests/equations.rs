//! The papers' equations, checked on the exact integer code.

use xdcc_algo::fixed::ONE;
use xdcc_algo::oscar::{Estimator, Sample, MIN_SAMPLES};
use xdcc_algo::{amrt, gemini, oscar, smartt, uno, AckSample, CongestionControl, Event, FlowInit, NetConfig};

const NET_1G: NetConfig = NetConfig::GEMINI_TESTBED;
const NET_10G: NetConfig =
    NetConfig { link_rate_bps: 10_000_000_000, intra_rtt_ns: 200_000, inter_rtt_ns: 1_600_000, mtu: 1500 };
const T0: u64 = 1_000_000_000;

/// A Q16 value in parts per million (integer: these tests, like the crate,
/// use no floating point).
fn ppm(x_q16: i64) -> i64 {
    (x_q16 * 1_000_000 + ONE as i64 / 2).div_euclid(ONE as i64)
}

/// `a / b` in parts per million, rounded.
fn ratio_ppm(a: u64, b: u64) -> i64 {
    ((a as u128 * 1_000_000 + b as u128 / 2) / b as u128) as i64
}

/// |got − want| ≤ tol, all in ppm.
fn near(got: i64, want: i64, tol: i64) -> bool {
    (got - want).abs() <= tol
}

/// An unmarked (or marked) ACK of one MTU with RTT `rtt` for a packet sent at
/// `sent`.
fn ack(now: u64, sent: u64, rtt: u32, marked: bool) -> AckSample {
    AckSample {
        now_ns: now,
        acked_bytes: 1500,
        marked_bytes: if marked { 1500 } else { 0 },
        rtt_ns: rtt,
        srtt_ns: 0,
        send_time_ns: sent,
        inflight_at_send: 0,
        inflight: 0,
        app_limited: false,
    }
}

// ---------------------------------------------------------------- Gemini --

#[test]
fn gemini_f_is_one_half_when_k_is_a_seventh_of_the_bdp() {
    // gemini-ton §III-B: "following DCTCP, K = (C × RTT)/7 gives F = 1/2".
    for (rate, rtt) in [(1_000_000_000u64, 200_000u32), (10_000_000_000, 1_000_000), (100_000_000_000, 14_000)] {
        let mut p = gemini::Params::from_net(&NET_1G);
        p.rate_bytes_per_sec = rate / 8;
        let bdp = rate / 8 * rtt as u64 / 1_000_000_000;
        p.k_bytes = (bdp / 7) as u32;
        let f = ppm(p.scale_factor_q16(rtt) as i64);
        assert!(near(f, 500_000, 1_000), "F = {f} ppm at {rate} bit/s, {rtt} ns");
    }
}

#[test]
fn gemini_f_shrinks_with_rtt_and_default_k_is_50_packets_per_gbps() {
    let p = gemini::Params::from_net(&NET_1G);
    assert_eq!(p.k_bytes, 50 * 1500);
    assert_eq!(gemini::Params::from_net(&NET_10G).k_bytes, 500 * 1500);
    // F = 4K/(C·RTT + K): 4·75000/(25000 + 75000) = 3 at 200 µs, smaller at 10 ms.
    assert!(near(ppm(p.scale_factor_q16(200_000) as i64), 3_000_000, 1_000));
    let f_wan = ppm(p.scale_factor_q16(10_000_000) as i64);
    assert!(near(f_wan, ratio_ppm(300_000, 1_250_000 + 75_000), 1_000), "{f_wan}");
}

#[test]
fn gemini_h_is_about_one_mss_at_1gbps_8ms_and_is_clamped() {
    // §III-C: H = 1.2e-7 "leads to h = 1 when C = 1 Gbps and RTT = 8 ms"
    // (exactly 0.96), clamped to [0.1, 5] MSS per RTT.
    let p = gemini::Params::from_net(&NET_1G);
    assert!(near(ppm(p.h_q16(8_000_000) as i64), 960_000, 1_000));
    assert!(near(ppm(p.h_q16(200_000) as i64), 100_000, 1_000), "clamped up");
    assert!(near(ppm(p.h_q16(100_000_000) as i64), 5_000_000, 1_000), "clamped down");
}

#[test]
fn gemini_cuts_by_beta_on_wan_delay_and_at_most_once_per_rtt() {
    let p = gemini::Params::from_net(&NET_1G);
    let rtt = 10_000_000u32;
    let mut g = gemini::Gemini::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: rtt });
    // Ten windows at the base RTT, then RTTs 6 ms above it (T = 5 ms), one
    // ACK every 100 µs.
    let mut now = T0 + rtt as u64;
    for _ in 0..1000 {
        now += 100_000;
        g.on_ack(&p, &ack(now, now - rtt as u64, rtt, false));
    }
    let before = g.cwnd();
    let slow = rtt + 6_000_000;
    // The first slow window only records RTT_min; reactions follow, one per
    // RTT (16 ms = 160 ACKs).
    let mut cuts = 0;
    let mut last = g.cwnd();
    for _ in 0..480 {
        now += 100_000;
        g.on_ack(&p, &ack(now, now - slow as u64, slow, false));
        if g.cwnd() < last {
            cuts += 1;
            let ratio = ratio_ppm(g.cwnd() as u64, last as u64);
            assert!(near(ratio, 800_000, 10_000), "WAN cut must be β = 0.2, got ratio {ratio} ppm");
        }
        last = g.cwnd();
    }
    assert!(g.cwnd() < before);
    // 48 ms of 16 ms RTTs: the first RTT only measures, then one cut per RTT.
    assert!((2..=3).contains(&cuts), "cuts = {cuts}");
}

// ------------------------------------------------------------------ Uno --

fn uno_flow(p: &uno::Params, rtt: u32) -> uno::Uno {
    uno::Uno::new(p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: rtt })
}

#[test]
fn uno_md_factor_is_e_times_4k_over_k_plus_bdp() {
    let p = uno::Params::from_net(&NET_10G);
    // K = intra BDP / 7 → 4K/(K + BDP_intra) = 4/8 = 1/2.
    assert_eq!(p.k_bytes as u64, NET_10G.intra_bdp() / 7);
    assert!(near(ppm(p.md_factor_q16(NET_10G.intra_bdp()) as i64), 500_000, 1_000));
    // Inter-DC flows (8x BDP) react far more gently.
    let inter = ppm(p.md_factor_q16(NET_10G.inter_bdp()) as i64);
    let k = p.k_bytes as u64;
    assert!(near(inter, ratio_ppm(4 * k, k + NET_10G.inter_bdp()), 1_000));
}

#[test]
fn uno_unpaced_at_line_rate_only_from_the_line_rate_up() {
    // Paced at cwnd / base RTT (the reference code, `unpaced_at_line_rate =
    // 0`); by default a window at or above the base BDP (that rate at or
    // above the line rate) is not paced, a smaller one still is.
    let mut p = uno::Params { unpaced_at_line_rate: 0, ..uno::Params::from_net(&NET_10G) };
    let line = p.rate_bytes_per_sec as i64;
    let paced = uno_flow(&p, 200_000);
    // Starts at one BDP: cwnd / base RTT is the line rate.
    assert!(near(paced.pacing_rate().unwrap() as i64, line, line / 1000), "{:?}", paced.pacing_rate());
    p.unpaced_at_line_rate = 1;
    p.validate().unwrap();
    assert_eq!(p, uno::Params::from_net(&NET_10G), "unpaced from the line rate up is the default");
    let mut u = uno_flow(&p, 200_000);
    assert_eq!(u.pacing_rate(), Some(xdcc_algo::UNPACED));
    u.on_event(&p, Event::Loss { bytes: 1500 }, T0 + 1_000_000);
    let r = u.pacing_rate().unwrap() as i64;
    assert!(r < line && near(r, u.cwnd() as i64 * 1_000_000_000 / 200_000, line / 1000), "after a cut: {r} of {line}");
    p.unpaced_at_line_rate = 2;
    assert!(p.validate().is_err());
}

/// A loss cuts once per RTT: a second loss within the holdoff (one RTT)
/// keeps the window, one after it cuts again — also 36 minutes, 71
/// minutes and days later (a holdoff stamp that wrapped with 32-bit µs
/// read a half-wrap-old holdoff as pending).
#[test]
fn uno_loss_cuts_once_per_rtt_and_the_holdoff_never_wraps() {
    let p = uno::Params::from_net(&NET_10G);
    let mut u = uno_flow(&p, 200_000);
    let mut t = T0 + 1_000_000;
    u.on_event(&p, Event::Loss { bytes: 1500 }, t);
    let cut = u.cwnd();
    u.on_event(&p, Event::Loss { bytes: 1500 }, t + 100_000);
    assert_eq!(u.cwnd(), cut, "a second loss within the RTT");
    for later_s in [1, 36 * 60, 71 * 60 + 35, 3 * 86_400] {
        t += later_s * 1_000_000_000;
        let before = u.cwnd();
        u.on_event(&p, Event::Loss { bytes: 1500 }, t);
        assert!(u.cwnd() < before, "a loss {later_s} s after the last cut: {before} -> {}", u.cwnd());
        let once = u.cwnd();
        u.on_event(&p, Event::Loss { bytes: 1500 }, t + 1_000);
        assert_eq!(u.cwnd(), once, "and once only");
    }
}

/// Runs one fully marked epoch at `rtt` and returns (cwnd before, after).
fn uno_one_marked_epoch(p: &uno::Params, rtt: u32) -> (u32, u32) {
    let (before, u) = uno_marked_epoch(p, 200_000, rtt);
    (before, u.cwnd())
}

/// A flow with base RTT `base` through one fully marked epoch at `rtt`:
/// (cwnd before the epoch's end, the flow after it).
fn uno_marked_epoch(p: &uno::Params, base: u32, rtt: u32) -> (u32, uno::Uno) {
    let mut u = uno_flow(p, base);
    let mut now = T0;
    // Activate the epoch with the first ACK, then a marked epoch.
    u.on_ack(p, &ack(now, now - base as u64, base, false));
    let start = u.cwnd();
    for i in 1..=10u64 {
        now += 10_000;
        u.on_ack(p, &ack(now, T0 - 100_000 + i, rtt, true));
    }
    let before = u.cwnd();
    // The ACK of a packet sent after T_epoch ends the epoch.
    now += 10_000;
    u.on_ack(p, &ack(now, T0 + 1, rtt, true));
    assert_eq!(start, before, "marked ACKs must not increase the window");
    (before, u)
}

#[test]
fn uno_physical_congestion_cuts_by_e_times_md_ecn() {
    let p = uno::Params::from_net(&NET_10G);
    // Physical queue: RTT well above base. The epoch holds the activating
    // ACK and 11 marked ones: fraction 11/12, E = 0.65 × 11/12 after one
    // epoch (gain 0.65), MD_ECN = E × 1/2, MD_scale = 1.
    let (b, a) = uno_one_marked_epoch(&p, 400_000);
    let cut = 1_000_000 - ratio_ppm(a as u64, b as u64);
    // 0.65 × 11/12 × 0.5 = 0.297917
    assert!(near(cut, 297_917, 2_000), "cut {cut} ppm");
}

/// (window before, after) the ACK that ends each of 4 fully marked epochs,
/// then of 4 where one ACK in 10 is marked (E falling), at a physical-queue
/// RTT.
fn uno_falling_marks(p: &uno::Params) -> Vec<(u32, u32)> {
    let (base, rtt) = (200_000u32, 400_000u32);
    let mut u = uno_flow(p, base);
    let (mut now, mut out, mut k) = (T0, Vec::new(), 0u64);
    while out.len() < 8 {
        let e = u.ecn_ewma_q16();
        now += 10_000;
        k += 1;
        let marked = out.len() < 4 || k % 10 == 0;
        let before = u.cwnd();
        u.on_ack(p, &ack(now, now - rtt as u64, rtt, marked));
        if u.ecn_ewma_q16() != e {
            out.push((before, u.cwnd())); // E moves only at an epoch's end
        }
    }
    out
}

#[test]
fn uno_aimd_phantom_increases_while_marks_fall() {
    // The reference code's variant: an epoch whose E fell below the previous
    // one adds an AI step instead of cutting; Algorithm 1 cuts on every
    // marked epoch.
    let mut p = uno::Params::from_net(&NET_10G);
    let plain = uno_falling_marks(&p);
    p.aimd_phantom = 1;
    let variant = uno_falling_marks(&p);
    // (The first epoch end falls in the hold-off after QuickAdapt, which the
    // start at one BDP with few ACKs triggers: no cut there.)
    assert!(plain[1..].iter().all(|(b, a)| a < b), "Algorithm 1 cuts at every marked epoch: {plain:?}");
    assert_eq!(plain[..4], variant[..4], "rising E: the same cuts");
    assert!(variant[4..].iter().all(|(b, a)| a > b), "aimd_phantom adds while E falls: {variant:?}");
}

#[test]
fn uno_phantom_only_congestion_is_gentle() {
    let p = uno::Params::from_net(&NET_10G);
    // RTT at base: marks came from phantom queues only: MD_scale = 0.3.
    let (b, a) = uno_one_marked_epoch(&p, 200_000);
    let cut = 1_000_000 - ratio_ppm(a as u64, b as u64);
    // 0.65 × 11/12 × 0.5 × 0.3 = 0.089375
    assert!(near(cut, 89_375, 2_000), "cut {cut} ppm");
}

#[test]
fn uno_a_physical_queue_is_physical_for_every_rtt() {
    // 20 µs of queueing (17 packets at 10 Gbit/s): 10 % of the intra-DC RTT
    // (200 µs), 1.25 % of the inter-DC RTT (1.6 ms). An intra-DC and an
    // inter-DC flow through that queue see the same delay, so both must read
    // it as a physical queue (MD_scale = 1, full cut): an inter-DC flow that
    // took it for phantom-only congestion would cut 0.3x as much and take
    // several times the intra-DC flows' share of the port.
    let mut p = uno::Params::from_net(&NET_10G);
    let q = 20_000;
    for base in [NET_10G.intra_rtt_ns, NET_10G.inter_rtt_ns] {
        let (_, u) = uno_marked_epoch(&p, base, base + q);
        assert_eq!(u.md_scale_q16(), ONE, "base RTT {base} ns: a 20 µs queue is physical");
    }
    // Without a queue (RTT at base) both see phantom-only congestion.
    for base in [NET_10G.intra_rtt_ns, NET_10G.inter_rtt_ns] {
        let (_, u) = uno_marked_epoch(&p, base, base);
        assert_eq!(u.md_scale_q16(), ONE * 3 / 10, "base RTT {base} ns: no queue, gentle MD");
    }
    // The reference code's rule (tolerance 5.5 % of the own base RTT): the
    // same queue is physical for the intra-DC flow, phantom-only for the
    // inter-DC one.
    p.queue_tol_own_rtt = 1;
    let (_, intra) = uno_marked_epoch(&p, NET_10G.intra_rtt_ns, NET_10G.intra_rtt_ns + q);
    let (_, inter) = uno_marked_epoch(&p, NET_10G.inter_rtt_ns, NET_10G.inter_rtt_ns + q);
    assert_eq!((intra.md_scale_q16(), inter.md_scale_q16()), (ONE, ONE * 3 / 10));
}

#[test]
fn uno_ai_adds_alpha_per_window_of_unmarked_acks() {
    let mut p = uno::Params::from_net(&NET_10G);
    p.qa_beta_q16 = 0; // keep QuickAdapt out of this measurement
    let rtt = 200_000u32;
    let mut u = uno_flow(&p, rtt);
    let w0 = u.cwnd() as u64;
    let alpha = NET_10G.intra_bdp() / 1000; // 0.1 % of BDP
    // One window's worth of ACKs.
    let mut now = T0;
    let mut acked = 0u64;
    while acked < w0 {
        now += 1_000;
        u.on_ack(&p, &ack(now, now - rtt as u64, rtt, false));
        acked += 1500;
    }
    let grown = u.cwnd() as u64 - w0;
    assert!(grown.abs_diff(alpha) <= alpha / 50 + 2, "grew {grown}, alpha {alpha}");
}

/// A busy host delays every packet alike (issue 28: a lone flow's samples
/// 40–50 µs, rttvar 4 µs, over an idle minimum of 6 µs). UnoCC reads the
/// unmarked rounds above its base RTT, so the pipe its α and QuickAdapt
/// period are sized from is the one its ACKs come back on; rounds with a
/// mark (a switch queue) teach it nothing.
#[test]
fn uno_learns_a_steady_host_delay_from_unmarked_rounds_only() {
    let p = uno::Params::from_net(&NET_1G);
    let run = |mark_every: u64| {
        let mut u = uno_flow(&p, 6_000);
        let mut now = T0;
        for i in 1..=4_000u64 {
            now += 10_000;
            u.on_ack(&p, &ack(now, now - 46_000, 46_000, mark_every != 0 && i % mark_every == 0));
        }
        u.host_delay_ns()
    };
    let unmarked = run(0);
    assert!((36_000..=40_000).contains(&unmarked), "unmarked: {unmarked} ns");
    assert_eq!(run(8), 0, "a mark in every round: nothing learned");
}

/// The physical-queue test measures the port, not the host: an RTT at the
/// learned pipe RTT (base + host delay) is no physical queue (gentle MD),
/// one a packet-train's queue above it is; with the estimate off the same
/// host delay reads as a physical queue, as the paper's test does.
#[test]
fn uno_physical_queue_test_is_against_the_pipe_rtt() {
    let md_scale_after = |gain: u32, rtt_when_marked: u32| {
        let mut p = uno::Params::from_net(&NET_1G);
        p.host_delay_gain_q16 = gain;
        let mut u = uno_flow(&p, 6_000);
        let mut now = T0;
        // Unmarked ACKs at 46 µs: a busy host over a 6 µs base RTT.
        for _ in 0..2_000 {
            now += 10_000;
            u.on_ack(&p, &ack(now, now - 46_000, 46_000, false));
        }
        // A marked epoch, then the ACK that ends it.
        for _ in 0..3 {
            now += 10_000;
            u.on_ack(&p, &ack(now, now - rtt_when_marked as u64, rtt_when_marked, true));
        }
        now += 400_000;
        u.on_ack(&p, &ack(now, now - rtt_when_marked as u64, rtt_when_marked, true));
        u.md_scale_q16()
    };
    let gain = uno::Params::from_net(&NET_1G).host_delay_gain_q16;
    assert_eq!(md_scale_after(gain, 46_000), ONE * 3 / 10, "at the pipe RTT: phantom-only");
    assert_eq!(md_scale_after(gain, 46_000 + 200_000), ONE, "a queue above the pipe RTT is physical");
    assert_eq!(md_scale_after(0, 46_000), ONE, "estimate off: the paper's test against the base RTT");
}

#[test]
fn uno_fast_increase_multiplies_alpha_by_the_unmarked_epochs_in_a_row_until_a_mark() {
    // The reference code's fast increase (off by default): 30 unmarked
    // epochs of 200 µs, an ACK every 10 µs.
    let run = |fi: u32| {
        let mut p = uno::Params::from_net(&NET_10G);
        (p.qa_beta_q16, p.host_delay_gain_q16, p.fast_increase_epochs) = (0, 0, fi);
        let rtt = 200_000u32;
        let mut u = uno_flow(&p, rtt);
        let w0 = u.cwnd();
        let mut now = T0;
        for _ in 0..600 {
            now += 10_000;
            u.on_ack(&p, &ack(now, now - rtt as u64, rtt, false));
        }
        // Per-ACK growth now, then after one marked ACK (same epoch).
        let step = |u: &mut uno::Uno, now: &mut u64, marked: bool| {
            let before = u.cwnd();
            *now += 10;
            u.on_ack(&p, &ack(*now, *now - rtt as u64, rtt, marked));
            u.cwnd() - before
        };
        let fast_step = step(&mut u, &mut now, false);
        step(&mut u, &mut now, true);
        let after_mark = step(&mut u, &mut now, false);
        (u.cwnd() - w0, fast_step, after_mark)
    };
    let (paper, paper_step, _) = run(0);
    let (fast, fast_step, after_mark) = run(3);
    assert!(fast > 5 * paper, "30 unmarked epochs: {fast} bytes with fast increase, {paper} without");
    assert!(fast_step > 10 * paper_step.max(1), "per ACK: {fast_step} vs {paper_step}");
    assert!(after_mark <= paper_step + 1, "a mark ends it: {after_mark} vs the paper's {paper_step}");
}

/// Stretch ACKs on a host (GRO): each ACK's sample times the newest byte it
/// covers (30 µs here), the smoothed RTT the oldest (90 µs), and a window
/// comes back every 90 µs. QuickAdapt's period follows the ACK clock, so a
/// flow whose window returns whole is never judged extremely congested; a
/// period of the newest byte's RTT (no smoothed RTT given) sees a third of
/// the window and cuts.
#[test]
fn uno_quick_adapt_period_follows_the_ack_clock() {
    let qa_cuts = |srtt: u32| {
        // (QuickAdapt on every period, as the paper: no marks here)
        let p = uno::Params { qa_needs_mark: 0, ..uno::Params::from_net(&NET_10G) };
        let mut u = uno_flow(&p, 8_000);
        let mut now = T0;
        u.on_ack(&p, &ack(now, now - 8_000, 8_000, false)); // the base RTT
        let mut cuts = 0;
        for i in 0..20_000 {
            // one window of 1500-byte ACKs every 90 µs
            now += 90_000 * 1500 / u.cwnd() as u64;
            let before = u.cwnd();
            u.on_ack(&p, &AckSample { srtt_ns: srtt, ..ack(now, now - 30_000, 30_000, false) });
            // (after 1,000 ACKs: the estimates' EWMAs have settled)
            cuts += (i >= 1_000 && u.cwnd() < before * 7 / 10) as u32;
        }
        cuts
    };
    assert_eq!(qa_cuts(90_000), 0, "the window comes back whole every ACK-clock period");
    assert!(qa_cuts(0) > 10, "a period of the newest byte's RTT sees a third of the window");
}

/// Only 10 packets come back in an RTT: extreme congestion, and QuickAdapt
/// sets the window to the bytes acked. By default only once the fabric has
/// marked (one marked ACK in the period); a host's stall, which delays the
/// ACK clock without a mark, is not judged. The paper's QuickAdapt
/// (`qa_needs_mark = 0`) judges it too.
#[test]
fn uno_quick_adapt_drops_to_acked_bytes_once_the_fabric_marks() {
    let run = |needs_mark: u32, one_marked: bool| {
        let p = uno::Params { qa_needs_mark: needs_mark, ..uno::Params::from_net(&NET_10G) };
        let rtt = 200_000u32;
        let mut u = uno_flow(&p, rtt);
        let w0 = u.cwnd();
        let mut now = T0;
        u.on_ack(&p, &ack(now, now - rtt as u64, rtt, false));
        for i in 0..10 {
            now += rtt as u64 / 10;
            u.on_ack(&p, &ack(now, now - rtt as u64, rtt, one_marked && i == 5));
        }
        now += 1;
        u.on_ack(&p, &ack(now, now - rtt as u64, rtt, false));
        (w0, u.cwnd())
    };
    for (needs_mark, one_marked) in [(0, false), (1, true)] {
        let (w0, cwnd) = run(needs_mark, one_marked);
        assert!(cwnd < w0 / 4, "QA must cut ({needs_mark}, {one_marked}): {w0} -> {cwnd}");
        assert!((10 * 1500..=12 * 1500).contains(&cwnd), "cwnd = bytes acked in the period: {cwnd}");
    }
    let (w0, kept) = run(1, false);
    assert!(kept >= w0, "no mark, no QuickAdapt by default: {w0} -> {kept}");
}

/// An application-limited collapse (a flow with less data than its window)
/// is judged only with `qa_when_app_limited`, the reference code's rule.
#[test]
fn uno_quick_adapt_judges_app_limited_periods_only_when_asked() {
    let run = |judge: u32| {
        let mut p = uno::Params { qa_needs_mark: 0, ..uno::Params::from_net(&NET_10G) };
        p.qa_when_app_limited = judge;
        let rtt = 200_000u32;
        let mut u = uno_flow(&p, rtt);
        let w0 = u.cwnd();
        let mut now = T0;
        let app = |now: u64| AckSample { app_limited: true, ..ack(now, now - rtt as u64, rtt, false) };
        u.on_ack(&p, &app(now));
        for _ in 0..10 {
            now += rtt as u64 / 10;
            u.on_ack(&p, &app(now));
        }
        now += 1;
        u.on_ack(&p, &app(now));
        (w0, u.cwnd())
    };
    let (w0, kept) = run(0);
    assert_eq!(kept, w0, "not judged: the window did not limit the sender");
    let (_, cut) = run(1);
    assert!((10 * 1500..=12 * 1500).contains(&cut), "judged as the reference code does: {cut}");
}

// ---------------------------------------------------------------- OSCAR --

#[test]
fn oscar_estimator_returns_exact_slope_and_mean_on_linear_delay() {
    // delay = 100 µs + 0.5 × (t − t0): slope 1/2, sampled every 1 µs for τ.
    let tau = 50_000u64;
    let mut e = Estimator::default();
    let mut got = None;
    let mut n = 0u64;
    let t0 = T0;
    for i in 0..=50u64 {
        let x = i * 1_000;
        let delay = 100_000 + x / 2;
        n += 1;
        if let Some(est) = e.add(&Sample { send_ns: t0 + x, delay_ns: delay as u32, inflight: 10_000, acked: 1500 }, tau) {
            got = Some(est);
            break;
        }
    }
    let est = got.expect("an estimate after tau");
    assert_eq!(n, 51);
    assert_eq!(est.gradient_q16, (ONE / 2) as i32, "slope");
    // Mean of 100 µs + x/2 over x = 0..50 µs is 112.5 µs.
    assert_eq!(est.delay_ns, 112_500);
    assert_eq!(est.inflight_bytes, 10_000);
    // 51 × 1500 bytes over 50 µs.
    assert_eq!(est.rate_bytes_per_sec, 51 * 1500 * 1_000_000_000 / 50_000);
}

#[test]
fn oscar_estimator_negative_and_steep_slopes() {
    for (num, den) in [(-9i64, 10i64), (3, 1), (-1, 4), (0, 1)] {
        let mut e = Estimator::default();
        let mut out = None;
        for i in 0..=100i64 {
            let x = i * 500;
            let d = 1_000_000 + x * num / den;
            if let Some(est) = e.add(&Sample { send_ns: T0 + x as u64, delay_ns: d as u32, inflight: 0, acked: 1500 }, 50_000) {
                out = Some(est);
                break;
            }
        }
        let g = ppm(out.expect("estimate").gradient_q16 as i64);
        assert!(near(g, num * 1_000_000 / den, 100), "{num}/{den}: {g} ppm");
    }
}

#[test]
fn oscar_estimator_refuses_with_fewer_than_three_samples() {
    assert_eq!(MIN_SAMPLES, 3);
    let mut e = Estimator::default();
    // Two samples spanning more than tau: no estimate yet.
    assert!(e.add(&Sample { send_ns: T0, delay_ns: 100_000, inflight: 0, acked: 1500 }, 10_000).is_none());
    assert!(e.add(&Sample { send_ns: T0 + 20_000, delay_ns: 110_000, inflight: 0, acked: 1500 }, 10_000).is_none());
    assert_eq!(e.samples(), 2);
    assert!(e.estimate(20_000).is_none(), "two samples are refused");
    // The third one completes the batch.
    assert!(e.add(&Sample { send_ns: T0 + 30_000, delay_ns: 115_000, inflight: 0, acked: 1500 }, 10_000).is_some());
    assert_eq!(e.samples(), 0, "a new batch starts");
}

#[test]
fn oscar_sets_window_and_rate_from_u() {
    let p = oscar::Params::from_net(&NET_10G);
    let rtt = 100_000u32;
    let o = oscar::Oscar::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: rtt });
    // u = 1 at start: rate = line rate, window capped at the base BDP.
    assert_eq!(o.u_q16(), ONE);
    assert_eq!(o.pacing_rate(), Some(NET_10G.rate_bytes_per_sec()));
    assert_eq!(o.cwnd() as u64, NET_10G.rate_bytes_per_sec() * rtt as u64 / 1_000_000_000);
}

#[test]
fn oscar_undo_takes_back_a_spurious_loss_or_rto_cut() {
    let p = oscar::Params::from_net(&NET_10G);
    let mut o = oscar::Oscar::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: 100_000 });
    let (u0, rate0, cwnd0) = (o.u_q16(), o.pacing_rate(), o.cwnd());
    o.on_event(&p, Event::Loss { bytes: 1500 }, T0);
    assert_eq!(o.u_q16(), u0 / 2, "a loss halves u");
    assert!(o.pacing_rate() < rate0);
    // Linux found the recovery spurious (DSACK, timestamps): undo.
    o.undo(&p);
    assert_eq!((o.u_q16(), o.pacing_rate(), o.cwnd()), (u0, rate0, cwnd0), "u, rate and window restored");
    o.undo(&p);
    assert_eq!(o.u_q16(), u0, "a second undo changes nothing");
    o.on_event(&p, Event::Rto, T0 + 10_000_000);
    assert_eq!(o.u_q16(), u0 / 4, "an RTO quarters u");
    o.undo(&p);
    assert_eq!(o.u_q16(), u0, "a spurious RTO is undone too");
}

#[test]
fn oscar_one_step_to_a_tenth_under_tenfold_overload() {
    // Ten flows at line rate into one port: the queue grows at 9 μ, so the
    // gradient is 9 and u_r = rate/((1+g)·μ) = 1/10 in one update.
    let p = oscar::Params::from_net(&NET_10G);
    let base = 100_000u32;
    let mut o = oscar::Oscar::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: base });
    let mu = NET_10G.rate_bytes_per_sec();
    let gap = 1500 * 1_000_000_000 / mu; // this flow sends at line rate
    let mut t = T0;
    let mut updated = false;
    for i in 0..200u64 {
        let sent = T0 + i * gap;
        let delay = base as u64 + 9 * (sent - T0) + 80_000; // above target, rising 9 ns/ns
        t = t.max(sent + delay);
        let s = AckSample {
            now_ns: t,
            acked_bytes: 1500,
            marked_bytes: 0,
            rtt_ns: delay as u32,
            srtt_ns: 0,
            send_time_ns: sent,
            inflight_at_send: 1_000_000,
            inflight: 1_000_000,
            app_limited: false,
        };
        o.on_ack(&p, &s);
        if o.u_q16() != ONE {
            updated = true;
            break;
        }
    }
    assert!(updated);
    let u = ppm(o.u_q16() as i64);
    assert!(near(u, 101_000, 5_000), "u = {u} ppm, expected 1/10 + U_AI");
}

// --------------------------------------------------------------- SMaRTT --

#[test]
fn smartt_md_never_cuts_below_half() {
    let mut p = smartt::Params::from_net(&NET_10G);
    p.qa_beta_q16 = 0; // QuickAdapt may cut deeper, by design; test MD alone
    let base = 100_000u32;
    let mut s = smartt::Smartt::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: base });
    let mut now = T0;
    let mut last = s.cwnd();
    // Marked ACKs with enormous RTTs, spaced by a base RTT so MD may act each time.
    for i in 0..40u64 {
        now += base as u64 + 1;
        let rtt = if i % 2 == 0 { 50_000_000 } else { u32::MAX };
        s.on_ack(&p, &ack(now, now - 1000, rtt, true));
        assert!(s.cwnd() >= last / 2 || s.cwnd() == p.mtu, "{} -> {}", last, s.cwnd());
        last = s.cwnd();
    }
}

#[test]
fn smartt_md_follows_equation_one() {
    let mut p = smartt::Params::from_net(&NET_10G);
    p.avg_rtt_gain_q16 = ONE; // avg_rtt = last RTT, to check eq. 1 exactly
    p.qa_beta_q16 = 0;
    let base = 100_000u32;
    let mut s = smartt::Smartt::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: base });
    let trtt = base as u64 + p.target_qdelay_ns as u64; // 200 µs
    let rtt = 250_000u32;
    let before = s.cwnd();
    s.on_ack(&p, &ack(T0 + 1, T0 - 1000, rtt, true));
    let expect = 1_000_000 - ratio_ppm(8 * (rtt as u64 - trtt), 10 * rtt as u64); // 0.84
    let got = ratio_ppm(s.cwnd() as u64, before as u64);
    assert!(near(got, expect, 2_000), "got {got} ppm, eq. 1 gives {expect}");
}

#[test]
fn smartt_ecn_below_target_leaves_window_and_hints_repath() {
    let p = smartt::Params::from_net(&NET_10G);
    let base = 100_000u32;
    let mut s = smartt::Smartt::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: base });
    let before = s.cwnd();
    s.on_ack(&p, &ack(T0 + 1, T0 - 1000, base + 10_000, true));
    assert_eq!(s.cwnd(), before);
    assert!(s.repath_hint());
}

#[test]
fn smartt_loss_arms_quick_adapt_and_window_is_clamped() {
    let p = smartt::Params::from_net(&NET_10G);
    let base = 100_000u32;
    let mut s = smartt::Smartt::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: base });
    let bdp = NET_10G.rate_bytes_per_sec() * base as u64 / 1_000_000_000;
    assert!(s.cwnd() as u64 <= bdp * 3 / 2);
    let mut now = T0;
    s.on_ack(&p, &ack(now, now - base as u64, base, false));
    // 5 packets acked in the next target RTT, then a loss.
    for _ in 0..5 {
        now += 20_000;
        s.on_ack(&p, &ack(now, now - base as u64, base * 3, false));
    }
    s.on_event(&p, Event::Loss { bytes: 1500 }, now);
    now += 200_000;
    s.on_ack(&p, &ack(now, now - base as u64, base * 3, false));
    assert!(s.cwnd() <= 7 * 1500, "QuickAdapt to the acked bytes: {}", s.cwnd());
}

#[test]
fn smartt_window_cap_follows_the_ack_clock_until_the_port_marks() {
    // A host's ACK clock: per-ACK samples (the newest packet of each ACK)
    // of 40 µs, the sender's smoothed RTT 80 µs; base RTT 6 µs.
    let p = smartt::Params::from_net(&NET_1G);
    let mut s = smartt::Smartt::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: 6_000 });
    let bdp_at = |rtt_ns: u64| NET_1G.rate_bytes_per_sec() * rtt_ns / 1_000_000_000;
    let cap = |s: &smartt::Smartt| s.info()[2] as u64;
    let mut now = T0;
    let mut step = |s: &mut smartt::Smartt, srtt: u32, marked: bool| {
        for _ in 0..64 {
            now += 10_000;
            let mut a = ack(now, now - 6_000, if marked { 40_000 } else { 6_000 }, marked);
            a.rtt_ns = if marked { 40_000 } else { 6_000 + (now % 3) as u32 * 17_000 };
            a.srtt_ns = srtt;
            s.on_ack(&p, &a);
        }
    };
    step(&mut s, 80_000, false);
    assert!(cap(&s) >= bdp_at(80_000) * 3 / 2, "unmarked: cap {} from the 80 µs clock", cap(&s));
    step(&mut s, 80_000, true);
    assert!(cap(&s) < bdp_at(80_000), "marked: cap {} back on the pipe RTT", cap(&s));
    assert!(s.cwnd() as u64 <= cap(&s));
    let mut paper = p;
    paper.host_delay_gain_q16 = 0;
    let mut s = smartt::Smartt::new(&paper, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: 6_000 });
    let mut now = T0;
    for _ in 0..64 {
        now += 10_000;
        let mut a = ack(now, now - 6_000, 6_000, false);
        a.srtt_ns = 80_000;
        s.on_ack(&paper, &a);
    }
    assert_eq!(cap(&s), core::cmp::max(bdp_at(6_000) * 3 / 2, 1500), "host_delay_gain 0: the paper's cap");
}

// ------------------------------------------------------------------ AMRT --

fn amrt_flow(p: &amrt::Params, rtt: u32) -> amrt::Amrt {
    amrt::Amrt::new(p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: rtt })
}

#[test]
fn amrt_starts_at_line_rate() {
    // §6: new flows start at line rate: one BDP (10 Gbit/s × 200 µs = 250 kB).
    let p = amrt::Params::from_net(&NET_10G);
    assert_eq!(amrt_flow(&p, 200_000).cwnd(), 250_000);
    assert_eq!(amrt_flow(&p, 200_000).ssthresh(), 0, "no slow start");
    // Without a handshake RTT: the intra-DC RTT.
    assert_eq!(amrt_flow(&p, 0).cwnd(), 250_000);
}

#[test]
fn amrt_one_packet_per_unmarked_grant_two_per_marked() {
    let p = amrt::Params::from_net(&NET_10G);
    let rtt = 200_000;
    let mut a = amrt_flow(&p, rtt);
    let w0 = a.cwnd();
    // Unmarked grants release one packet each: the window never changes.
    let mut t = T0;
    for _ in 0..10_000 {
        t += 1_200;
        a.on_ack(&p, &ack(t, t - rtt as u64, rtt, false));
    }
    assert_eq!(a.cwnd(), w0, "no probing without spare-bandwidth marks");
    // Each marked grant releases two: the window grows by exactly the marked bytes.
    for i in 1..=40u32 {
        t += 1_200;
        a.on_ack(&p, &ack(t, t - rtt as u64, rtt, true));
        assert_eq!(a.cwnd(), w0 + i * 1500);
    }
    assert_eq!(a.info()[2], 40, "spare marks counted");
    // No decrease on marks, and never above max_wnd_bdp × BDP (2 × 250 kB).
    for _ in 0..1_000 {
        t += 1_200;
        a.on_ack(&p, &ack(t, t - rtt as u64, rtt, true));
    }
    assert_eq!(a.cwnd(), 500_000);
}

#[test]
fn amrt_marks_with_a_queue_behind_them_are_not_spare_bandwidth() {
    // 16 MTUs at 10 Gbit/s = 19.2 µs: a mark arriving with 100 µs of queueing
    // comes from a congestion-marking (classic ECN) switch and is ignored.
    let p = amrt::Params::from_net(&NET_10G);
    assert_eq!(p.mark_max_qdelay_ns, 19_200);
    let rtt = 200_000;
    let mut a = amrt_flow(&p, rtt);
    let w0 = a.cwnd();
    let mut t = T0;
    for _ in 0..100 {
        t += 1_200;
        a.on_ack(&p, &ack(t, t - 300_000, 300_000, true));
    }
    assert_eq!(a.cwnd(), w0, "marks with 100 µs of queueing must not grow the window");
    assert_eq!(a.info()[3], 100, "and are counted as ignored");
    // Within the guard they count.
    t += 1_200;
    a.on_ack(&p, &ack(t, t - 210_000, 210_000, true));
    assert_eq!(a.cwnd(), w0 + 1500);
    // The traditional receiver-driven baseline ignores every mark.
    let base = amrt::Params { spare_increase: 0, ..p };
    let mut b = amrt_flow(&base, rtt);
    for _ in 0..100 {
        t += 1_200;
        b.on_ack(&base, &ack(t, t - rtt as u64, rtt, true));
    }
    assert_eq!(b.cwnd(), w0);
}

#[test]
fn amrt_a_round_with_losses_leaves_what_it_delivered() {
    let p = amrt::Params::from_net(&NET_10G);
    let rtt = 200_000u32;
    let mut a = amrt_flow(&p, rtt);
    assert_eq!(a.cwnd(), 250_000);
    // The first ACK ends the (empty) start round.
    let mut t = T0 + rtt as u64;
    a.on_ack(&p, &ack(t, T0 + 1, rtt, false));
    // A round of 100 one-MTU ACKs (150 kB delivered of a 250 kB window) in
    // which a loss is reported (twice: one episode, one reaction).
    let round_start = t;
    for i in 0..100 {
        t += 2_000;
        a.on_ack(&p, &ack(t, round_start - 1, rtt, false));
        if i == 10 || i == 50 {
            a.on_event(&p, Event::Loss { bytes: 1500 }, t);
        }
    }
    assert_eq!(a.cwnd(), 250_000, "no cut before the round ends");
    // The ACK of a packet sent after the round began ends it.
    t += 2_000;
    a.on_ack(&p, &ack(t, round_start + 1, rtt, false));
    // (101 ACKs: the one that ends the round is part of it.)
    assert_eq!(a.cwnd(), 151_500, "the window falls to the bytes the round delivered");
    assert_eq!(a.ssthresh(), 151_500);
    // A loss-free round changes nothing.
    let round_start = t;
    for _ in 0..100 {
        t += 2_000;
        a.on_ack(&p, &ack(t, round_start - 1, rtt, false));
    }
    a.on_ack(&p, &ack(t + 1, round_start + 1, rtt, false));
    assert_eq!(a.cwnd(), 151_500);
    // The loss was spurious: undo restores the window.
    a.undo(&p);
    assert_eq!(a.cwnd(), 250_000);
    // RTO: one packet, slow start back to half.
    a.on_event(&p, Event::Rto, t + 1_000_000);
    assert_eq!((a.cwnd(), a.ssthresh()), (1500, 125_000));
}

// ------------------------------------------------------------ interface --

#[test]
fn per_flow_state_fits_the_kernel_private_area() {
    use core::mem::size_of;
    for (name, size) in [
        ("uno", size_of::<uno::Uno>()),
        ("gemini", size_of::<gemini::Gemini>()),
        ("oscar", size_of::<oscar::Oscar>()),
        ("smartt", size_of::<smartt::Smartt>()),
        ("amrt", size_of::<amrt::Amrt>()),
    ] {
        assert!(size <= xdcc_algo::ICSK_CA_PRIV_SIZE, "{name}: {size} bytes");
    }
}

#[test]
fn validate_names_the_bad_parameter_and_set_changes_nothing_on_error() {
    let mut p = gemini::Params::from_net(&NET_1G);
    let before = p;
    let e = p.set("beta_q16", 70_000).unwrap_err();
    assert_eq!(e.name, "beta_q16");
    assert_eq!(p, before, "a rejected value changes nothing");
    assert!(e.to_string().contains("beta_q16"));
    let e = p.set("no_such_knob", 1).unwrap_err();
    assert_eq!(e.reason, "unknown parameter name");
    p.set("t_ns", 2_000_000).unwrap();
    assert_eq!(p.get("t_ns"), Some(2_000_000));

    let mut u = uno::Params::from_net(&NET_10G);
    assert_eq!(u.set("epoch_ns", 10).unwrap_err().name, "epoch_ns");
    let mut o = oscar::Params::from_net(&NET_10G);
    assert_eq!(o.set("u_max_q16", 1).unwrap_err().name, "u_max_q16");
    let mut s = smartt::Params::from_net(&NET_10G);
    assert_eq!(s.set("mtu", 1 << 40).unwrap_err().name, "mtu");
    for n in [NET_1G, NET_10G, NetConfig::UNO_PAPER] {
        n.validate().unwrap();
        uno::Params::from_net(&n).validate().unwrap();
        gemini::Params::from_net(&n).validate().unwrap();
        oscar::Params::from_net(&n).validate().unwrap();
        smartt::Params::from_net(&n).validate().unwrap();
        amrt::Params::from_net(&n).validate().unwrap();
    }
    let mut a = amrt::Params::from_net(&NET_10G);
    assert_eq!(a.set("spare_increase", 2).unwrap_err().name, "spare_increase");
    assert_eq!(a, amrt::Params::from_net(&NET_10G));
    let bad = NetConfig { inter_rtt_ns: 1_000, ..NET_10G };
    assert_eq!(bad.validate().unwrap_err().name, "inter_rtt_ns");
}
