//! Tunable presets (`xdcc_algo::presets`): each names real tunables, fits
//! every network, "paper" undoes it, and the behaviours it switches on do
//! what the reference code does.

use xdcc_algo::fixed::ONE;
use xdcc_algo::presets::{for_each_preset_tunable, PRESETS};
use xdcc_algo::{gemini, oscar, uno, AckSample, CongestionControl, FlowInit, NetConfig, Tunables};

const NETS: [NetConfig; 3] = [NetConfig::LINUX_DEFAULT, NetConfig::UNO_PAPER, NetConfig::GEMINI_TESTBED];
const T0: u64 = 1_000_000_000;

fn ack(now: u64, rtt: u32, marked: bool) -> AckSample {
    AckSample {
        now_ns: now,
        acked_bytes: 1500,
        marked_bytes: if marked { 1500 } else { 0 },
        rtt_ns: rtt,
        srtt_ns: 0,
        send_time_ns: now - rtt as u64,
        inflight_at_send: 0,
        inflight: 0,
        app_limited: false,
    }
}

fn with_preset<P: Tunables>(cc: &str, name: &str, n: &NetConfig) -> P {
    let mut p = P::from_net(n);
    assert!(for_each_preset_tunable(cc, name, n, |k, v| {
        p.set_unchecked(k, v).unwrap_or_else(|e| panic!("{cc}/{name}: {e}"));
    }));
    p.validate().unwrap_or_else(|e| panic!("{cc}/{name} on {n:?}: {e}"));
    p
}

#[test]
fn every_preset_names_real_tunables_and_fits_every_network() {
    for n in &NETS {
        for &(cc, name, _) in PRESETS {
            match cc {
                "uno" => {
                    with_preset::<uno::Params>(cc, name, n);
                }
                "gemini" => {
                    with_preset::<gemini::Params>(cc, name, n);
                }
                "oscar" => {
                    with_preset::<oscar::Params>(cc, name, n);
                }
                other => panic!("a preset for {other}: add it here"),
            }
        }
    }
    assert!(!for_each_preset_tunable("uno", "nope", &NETS[0], |_, _| panic!("nothing is set for an unknown preset")));
}

#[test]
fn defaults_and_paper_undo_the_other_presets() {
    let n = NetConfig::GEMINI_TESTBED;
    let mut p: gemini::Params = with_preset("gemini", "uno-artifact", &n);
    assert_ne!(p, gemini::Params::from_net(&n));
    for_each_preset_tunable("gemini", "paper", &n, |k, v| p.set_unchecked(k, v).unwrap());
    assert_eq!(p, gemini::Params::from_net(&n));
    for name in ["uno-artifact", "real-host"] {
        let mut u: uno::Params = with_preset("uno", name, &n);
        assert_ne!(u, uno::Params::from_net(&n), "{name} changes something");
        for_each_preset_tunable("uno", "defaults", &n, |k, v| u.set_unchecked(k, v).unwrap());
        assert_eq!(u, uno::Params::from_net(&n), "defaults undoes {name}");
        let mut u: uno::Params = with_preset("uno", name, &n);
        for_each_preset_tunable("uno", "paper", &n, |k, v| u.set_unchecked(k, v).unwrap());
        // (and QuickAdapt judges every period and every flow is paced, as in the paper)
        let paper = uno::Params { qa_needs_mark: 0, unpaced_at_line_rate: 0, ..uno::Params::from_net(&n) };
        assert_eq!(u, paper, "paper undoes {name}");
    }
}

/// OSCAR's `real-host`: a target queue of 1.5 intra-DC RTTs instead of
/// half of one (D_target 2.5 RTTs instead of 1.5), and `paper` undoes it.
#[test]
fn oscar_real_host_targets_a_queue_above_the_hosts_delay_noise() {
    let n = NetConfig { link_rate_bps: 3_000_000_000, intra_rtt_ns: 71_000, inter_rtt_ns: 4_000_000, mtu: 1500 };
    let paper = oscar::Params::from_net(&n);
    let mut host: oscar::Params = with_preset("oscar", "real-host", &n);
    assert_eq!(paper.target_qdelay_ns, 35_500);
    assert_eq!(host.target_qdelay_ns, 106_500);
    assert_eq!(oscar::Params { target_qdelay_ns: paper.target_qdelay_ns, ..host }, paper, "nothing else changes");
    for_each_preset_tunable("oscar", "paper", &n, |k, v| host.set_unchecked(k, v).unwrap());
    assert_eq!(host, paper);
}

/// `real-host`: on a pipe of a few packets (1 Gbit/s, 40 µs) the paper's α
/// adds 5 bytes per RTT; with the reference code's fast increase, a run of
/// unmarked epochs multiplies it, so a window regrows within tens of round
/// trips instead of hundreds.
#[test]
fn uno_real_host_regrows_a_few_packet_window_fast() {
    let n = NetConfig { link_rate_bps: 1_000_000_000, intra_rtt_ns: 40_000, inter_rtt_ns: 4_000_000, mtu: 1500 };
    let rtt = n.intra_rtt_ns;
    let grow = |p: &uno::Params| {
        let mut u = uno::Uno::new(p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: rtt });
        let start = u.cwnd();
        let mut now = T0;
        // 100 round trips of unmarked ACKs, one window's worth per RTT.
        for _ in 0..100 {
            let per_rtt = (u.cwnd() / 1500).max(1);
            for _ in 0..per_rtt {
                now += rtt as u64 / per_rtt as u64;
                u.on_ack(p, &ack(now, rtt, false));
            }
        }
        u.cwnd() - start
    };
    let paper = grow(&uno::Params::from_net(&n));
    let host = grow(&with_preset::<uno::Params>("uno", "real-host", &n));
    eprintln!("100 RTTs: paper +{paper} bytes, real-host +{host}");
    assert!(paper < 1500, "the paper's α: {paper} bytes in 100 RTTs");
    assert!(host >= 10 * paper.max(1) && host >= 1500, "fast increase: {host} bytes in 100 RTTs (paper {paper})");
}

/// The reference code's Gemini starts at one BDP without slow start, never
/// grows past one BDP, adds the same bytes per RTT on every path, and only
/// inter-DC flows react to the delay threshold.
#[test]
fn gemini_artifact_starts_at_one_bdp_and_stays_capped() {
    let n = NetConfig::GEMINI_TESTBED; // 1 Gbit/s, 200 us / 10 ms
    let p: gemini::Params = with_preset("gemini", "uno-artifact", &n);
    let rtt = n.intra_rtt_ns;
    let bdp = 1_000_000_000u64 / 8 * rtt as u64 / 1_000_000_000; // 25 000 bytes
    let mut g = gemini::Gemini::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: rtt });
    assert_eq!(g.cwnd() as u64, bdp, "starts at one BDP");
    assert!(g.cwnd() >= g.ssthresh(), "no slow start");
    let mut now = T0;
    for _ in 0..20_000 {
        now += 10_000;
        g.on_ack(&p, &ack(now, rtt, false));
    }
    assert_eq!(g.cwnd() as u64, bdp, "never past one BDP");
    // The paper's Gemini from the same start grows without bound.
    let d = gemini::Params::from_net(&n);
    let mut free = gemini::Gemini::new(&d, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: rtt });
    let mut now = T0;
    for _ in 0..20_000 {
        now += 10_000;
        free.on_ack(&d, &ack(now, rtt, false));
    }
    assert!(free.cwnd() as u64 > 4 * bdp);

    // Same bytes per RTT: h from the inter-DC RTT for the intra-DC flow too.
    let intra = gemini::Gemini::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: n.intra_rtt_ns });
    let inter = gemini::Gemini::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: n.inter_rtt_ns });
    assert_eq!(intra.ai_per_rtt_q16(), inter.ai_per_rtt_q16());
    let di = gemini::Gemini::new(&d, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: n.intra_rtt_ns });
    let de = gemini::Gemini::new(&d, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: n.inter_rtt_ns });
    assert!(di.ai_per_rtt_q16() < de.ai_per_rtt_q16(), "the paper's h grows with the RTT");
    assert!(p.init_bdp_q16 == ONE && p.max_wnd_bdp_q16 == ONE);
}

/// T applies to inter-DC flows only: an intra-DC flow whose RTT rises by
/// more than T above its base does not cut (no ECN marks either).
#[test]
fn gemini_artifact_applies_the_delay_threshold_to_inter_dc_flows_only() {
    let n = NetConfig::GEMINI_TESTBED;
    for (preset, want_cut) in [("paper", true), ("uno-artifact", false)] {
        let mut p: gemini::Params = with_preset("gemini", preset, &n);
        p.t_ns = 100_000; // 0.1 ms, below the RTT rise
        p.max_wnd_bdp_q16 = 0;
        let rtt = n.intra_rtt_ns;
        let mut g = gemini::Gemini::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: rtt });
        let mut now = T0;
        for _ in 0..2000 {
            now += 10_000;
            g.on_ack(&p, &ack(now, rtt, false));
        }
        let before = g.cwnd();
        let mut cut = false;
        for _ in 0..2000 {
            now += 10_000;
            let last = g.cwnd();
            g.on_ack(&p, &ack(now, rtt + 500_000, false));
            cut |= g.cwnd() < last;
        }
        assert_eq!(cut, want_cut, "{preset}: window {before} -> {}", g.cwnd());
    }
}

/// The reference code's runs cap every window at one BDP; the paper's UnoCC
/// grows without a cap while nothing is marked.
#[test]
fn uno_artifact_caps_the_window_at_one_bdp() {
    let n = NetConfig::GEMINI_TESTBED;
    let p: uno::Params = with_preset("uno", "uno-artifact", &n);
    assert_eq!(p.qa_vs_current, 1);
    assert_eq!(p.queue_tol_own_rtt, 1);
    let rtt = n.intra_rtt_ns;
    let bdp = 1_000_000_000u64 / 8 * rtt as u64 / 1_000_000_000;
    let mut u = uno::Uno::new(&p, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: rtt });
    let mut now = T0;
    for _ in 0..20_000 {
        now += 12_000; // one window of 1500-byte ACKs per RTT: no QA
        u.on_ack(&p, &ack(now, rtt, false));
    }
    assert!(u.cwnd() as u64 <= bdp, "window {} > one BDP {bdp}", u.cwnd());
    let d = uno::Params::from_net(&n);
    let mut free = uno::Uno::new(&d, &FlowInit { now_ns: T0, mss: 1500, rtt_hint_ns: rtt });
    let mut now = T0;
    for _ in 0..20_000 {
        now += 12_000;
        free.on_ack(&d, &ack(now, rtt, false));
    }
    assert!(free.cwnd() as u64 > bdp, "the paper's UnoCC has no cap: {}", free.cwnd());
}
