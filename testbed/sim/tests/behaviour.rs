//! Behaviour of the algorithms in the simulator, each against a stated
//! threshold taken from its paper. The scenarios are the files shipped in
//! `testbed/scenarios/` in the simulator's format (so anyone can rerun them
//! with the CLI), varied
//! here where a test sweeps a parameter.
//!
//! Claims that do not hold in this simulator are kept as `#[ignore]`d tests
//! with the measured value and the reason (run them with
//! `cargo test --release -p xdcc-sim -- --ignored`).

use xdcc_sim::{run, CcKind, RunReport, Scenario};

fn scenario(name: &str) -> Scenario {
    let path = format!("{}/../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    Scenario::from_file(path.as_ref()).unwrap()
}

fn with_inter_ratio(mut sc: Scenario, ratio: f64, duration_ms: f64) -> Scenario {
    let intra = sc.net.intra_rtt_us;
    sc.net.inter_rtt_us = intra * ratio;
    for f in &mut sc.flows {
        if f.name == "inter" {
            f.rtt_us = intra * ratio;
        }
    }
    sc.duration_ms = duration_ms;
    sc.measure_from_ms = duration_ms / 2.0;
    sc
}

fn show(r: &RunReport) -> String {
    format!(
        "{} {}: util {:.3}, jain {:?}, convergence {:?} ms, groups {:?}, queue mean {:.1} kB",
        r.scenario, r.cc, r.queues[0].utilization, r.jain_final, r.convergence_ms, r.group_mean_rate_mbps, r.queues[0].mean_qlen_kb
    )
}

/// The sending rate OSCAR sets for flow `i` at sample `k`, in bit/s, capped
/// at the line rate (a lone flow's u may exceed 1: its window, capped at the
/// base BDP, is then what limits it).
fn oscar_rate_bps(r: &RunReport, i: usize, k: usize, line_bps: f64) -> f64 {
    (r.samples.pacing[k][i] as f64 * 8.0).min(line_bps)
}

// ------------------------------------------------------------ utilization --

#[test]
fn an_uncongested_flow_fills_the_link() {
    // ≥ 95 % for every algorithm when nothing competes and no phantom queue
    // reserves headroom.
    let mut sc = scenario("single-flow");
    sc.queue_overrides.remove("uno");
    for &kind in CcKind::ALL {
        let r = run(&sc, kind).unwrap();
        eprintln!("{}", show(&r));
        assert!(r.queues[0].utilization >= 0.95, "{}", show(&r));
        assert_eq!(r.queues[0].drops, 0, "{}", show(&r));
    }
}

#[test]
fn uno_phantom_queue_keeps_ten_percent_headroom_and_an_empty_queue() {
    // uno-sc25 §4.1.3: a phantom queue draining at 0.9 × line rate marks
    // before the physical queue builds, so the link runs at ~90 % with
    // (practically) no queue.
    let r = run(&scenario("single-flow"), CcKind::Uno).unwrap();
    eprintln!("{}", show(&r));
    let u = r.queues[0].utilization;
    assert!((0.85..=0.93).contains(&u), "{}", show(&r));
    assert!(r.queues[0].p99_qlen_kb <= 3.0, "{}", show(&r));
}

// ------------------------------------------------------------- DCTCP --

#[test]
fn dctcp_holds_the_queue_at_k_with_the_port_full() {
    // Alizadeh et al. SIGCOMM 2010, Fig. 1 and §3.3: with step marking at K
    // the queue oscillates just around K (amplitude O(sqrt(C·RTT)) packets),
    // the port stays full (K > C·RTT / 7) and the flows share it equally.
    let r = run(&scenario("dctcp-2to1"), CcKind::Dctcp).unwrap();
    eprintln!("{}", show(&r));
    let q = &r.queues[0];
    let k_kb = 65.0 * 1.5;
    assert!(q.utilization >= 0.99, "{}", show(&r));
    assert!((0.6 * k_kb..=1.2 * k_kb).contains(&q.mean_qlen_kb), "queue mean near K: {}", show(&r));
    assert!(q.p99_qlen_kb <= k_kb + 15.0, "queue p99 within 10 packets of K: {}", show(&r));
    assert_eq!(q.drops, 0, "{}", show(&r));
    assert!(r.jain_final.unwrap_or(0.0) >= 0.99, "{}", show(&r));
}

// --------------------------------------------------------- RTT fairness --

#[test]
fn uno_rtt_fairness_4_intra_4_inter_8x_to_64x() {
    // uno-sc25 Fig. 3/8: intra- and inter-DC flows converge to the fair share.
    for ratio in [8.0, 16.0, 32.0, 64.0] {
        let sc = with_inter_ratio(scenario("rtt-fairness"), ratio, 8000.0);
        let r = run(&sc, CcKind::Uno).unwrap();
        eprintln!("ratio {ratio}: {}", show(&r));
        assert!(r.jain_final.unwrap() >= 0.95, "ratio {ratio}: {}", show(&r));
        assert!(r.convergence_ms.is_some(), "ratio {ratio}: {}", show(&r));
    }
}

#[test]
fn gemini_rtt_fairness_on_its_1g_testbed_8x_to_32x() {
    // gemini-ton Fig. 11 (1 Gbit/s testbed, K = 50 packets).
    for ratio in [8.0, 16.0, 32.0] {
        let sc = with_inter_ratio(scenario("rtt-fairness-1g"), ratio, 8000.0);
        let r = run(&sc, CcKind::Gemini).unwrap();
        eprintln!("ratio {ratio}: {}", show(&r));
        assert!(r.jain_final.unwrap() >= 0.95, "ratio {ratio}: {}", show(&r));
    }
}

#[test]
#[ignore = "does not hold in the simulator: Jain 0.93 (inter-DC flows get ~1.7x the intra-DC rate); see closing note"]
fn gemini_rtt_fairness_on_its_1g_testbed_64x() {
    let sc = with_inter_ratio(scenario("rtt-fairness-1g"), 64.0, 20000.0);
    let r = run(&sc, CcKind::Gemini).unwrap();
    eprintln!("{}", show(&r));
    assert!(r.jain_final.unwrap() >= 0.95, "{}", show(&r));
}

#[test]
#[ignore = "does not hold in the simulator: at 10 Gbit/s with K = 500 packets Gemini gives intra-DC flows ~2x (Jain ~0.90)"]
fn gemini_rtt_fairness_at_10g() {
    let r = run(&scenario("rtt-fairness"), CcKind::Gemini).unwrap();
    eprintln!("{}", show(&r));
    assert!(r.jain_final.unwrap() >= 0.95, "{}", show(&r));
}

#[test]
fn uno_converges_faster_than_gemini() {
    // uno-sc25 §4.1.1/§5: same AI/MD factors as Gemini, but reacting at
    // intra-DC granularity makes UnoCC converge much faster. Compared on the
    // same 10 Gbit/s network (each with its paper's marking); a run that
    // never converges counts as infinitely slow.
    let sc = scenario("rtt-fairness");
    let uno = run(&sc, CcKind::Uno).unwrap();
    let gem = run(&sc, CcKind::Gemini).unwrap();
    eprintln!("{}\n{}", show(&uno), show(&gem));
    let u = uno.convergence_ms.expect("uno converges");
    let g = gem.convergence_ms.unwrap_or(f64::INFINITY);
    assert!(u < g, "uno {u} ms, gemini {g} ms");
}

// ---------------------------------------------------------------- OSCAR --

/// Periods of τ from the event at `t_event_ms` until flow 0's rate first
/// comes within ±10 % of `fair_bps` (and holds there for `hold` samples).
fn oscar_periods_to_fair_share(r: &RunReport, t_event_ms: f64, fair_bps: f64, tau_ms: f64, hold: usize) -> Option<f64> {
    let t = &r.samples.t_ns;
    let k0 = t.iter().position(|&x| x as f64 / 1e6 >= t_event_ms)?;
    let ok = |k: usize| (oscar_rate_bps(r, 0, k, 10e9) - fair_bps).abs() <= 0.1 * fair_bps;
    (k0..t.len().saturating_sub(hold))
        .find(|&k| (k..k + hold).all(ok))
        .map(|k| (t[k] as f64 / 1e6 - t_event_ms) / tau_ms)
}

#[test]
fn oscar_reaches_the_new_fair_share_in_a_bounded_number_of_periods() {
    // oscar-nsdi26 §3–4: MIMD on delay and gradient converges in O(1) steps.
    // τ = RTT_base / 2 = 50 µs here; "reached" = within ±10 % for 4 periods.
    // Measured: 10→1 in 24 periods (one MIMD step to u ≈ 0.7 while the
    // 0.5-BDP target queue drains within about one τ, then hyper increase of
    // 0.01 per τ); 1→10 in 12 periods, almost all of it feedback delay: the
    // nine line-rate starters fill the 1 MB buffer (RTT grows to 0.5 ms =
    // 10 τ) before the first estimate reaches anyone, then one step.
    // Without timing jitter: the model's exact sequence of steps.
    let tau_ms = 0.05;
    let mut sc = scenario("oscar-10to1");
    sc.jitter_us = Some(0.0);
    let r = run(&sc, CcKind::Oscar).unwrap();
    let down = oscar_periods_to_fair_share(&r, 30.0, 10e9, tau_ms, 4);
    let mut sc2 = scenario("oscar-1to10");
    sc2.jitter_us = Some(0.0);
    let r2 = run(&sc2, CcKind::Oscar).unwrap();
    let up = oscar_periods_to_fair_share(&r2, 30.0, 1e9, tau_ms, 4);
    eprintln!("10->1: {down:?} periods of tau; 1->10: {up:?} periods of tau");
    assert!(down.expect("10->1 converges") <= 30.0, "10->1 took {down:?} periods");
    assert!(up.expect("1->10 converges") <= 30.0, "1->10 took {up:?} periods");
}

#[test]
#[ignore = "does not hold with the default timing jitter (one MTU time, 1.2 us): 10->1 takes 35-70 periods for seeds 0-2 (4-79 with 0.1 us of jitter), 1->10 16-25 periods or never. Traced (XDCC_SIM_TRACE): the 0.5-BDP queue drains within one tau; when one estimation batch spans the drain, its gradient gives u = 1.0 in one step; when the drain is split over two batches, the first moves u only 0.10 -> 0.21 and the next finds the queue empty (delay within eps of the base, both signals blind): only the hyper increase, U_HAI = 0.01 per tau, is left - ~70 tau. Without jitter the batch phase happened to be the lucky one."]
fn oscar_reaches_the_new_fair_share_in_a_bounded_number_of_periods_with_jitter() {
    for seed in 0..3 {
        let mut sc = scenario("oscar-10to1");
        sc.seed = seed;
        let down = oscar_periods_to_fair_share(&run(&sc, CcKind::Oscar).unwrap(), 30.0, 10e9, 0.05, 4);
        let mut sc2 = scenario("oscar-1to10");
        sc2.seed = seed;
        let up = oscar_periods_to_fair_share(&run(&sc2, CcKind::Oscar).unwrap(), 30.0, 1e9, 0.05, 4);
        eprintln!("seed {seed}: 10->1: {down:?} periods of tau; 1->10: {up:?} periods of tau");
        assert!(down.is_some_and(|p| p <= 30.0) && up.is_some_and(|p| p <= 30.0), "seed {seed}: {down:?} / {up:?}");
    }
}

#[test]
#[ignore = "does not hold in the simulator: the 9 latecomers measure their base RTT on a standing queue, aim at a later D_target and squeeze the first flow to ~0.7 of their rate"]
fn oscar_stays_fair_after_flows_join() {
    let r = run(&scenario("oscar-1to10"), CcKind::Oscar).unwrap();
    eprintln!("{}", show(&r));
    assert!(r.jain_final.unwrap() >= 0.99, "{}", show(&r));
    let long = r.flows[0].mean_rate_mbps;
    assert!((900.0..=1100.0).contains(&long), "{}", show(&r));
}

#[test]
fn oscar_holds_the_queue_at_its_target() {
    // D_target = 1.5 × RTT_base: a queue of 0.5 × BDP = 62.5 kB with 10 flows.
    let mut sc = scenario("oscar-10to1");
    sc.flows[1].stop_ms = None;
    sc.measure_from_ms = 10.0;
    let r = run(&sc, CcKind::Oscar).unwrap();
    eprintln!("{}", show(&r));
    let q = r.queues[0].mean_qlen_kb;
    assert!((62.5 * 0.75..=62.5 * 1.25).contains(&q), "{}", show(&r));
    // (0.998 without timing jitter; 0.973-0.993 with 0.1-1.2 us of it.)
    assert!(r.jain_final.unwrap() >= 0.97, "{}", show(&r));
    assert!(r.queues[0].utilization >= 0.98, "{}", show(&r));
}

// --------------------------------------------------------------- SMaRTT --

#[test]
fn smartt_quick_adapt_drops_an_incast_to_the_fair_share_within_one_target_rtt() {
    // smartt-uec-nscc §III-E: in a 16:1 incast the window drops to ~1/16 one
    // target RTT after the first packet is acknowledged.
    // Without timing jitter: the deadline below is exact to a packet time.
    let mut sc = scenario("incast-16to1");
    sc.jitter_us = Some(0.0);
    let r = run(&sc, CcKind::Smartt).unwrap();
    let base_us = 100.0 + 2.0 * 1.2; // propagation + two serializations
    let trtt_us = base_us + 50.0; // + target queueing delay (0.5 × 100 µs)
    // The 16 first packets leave the port one after the other.
    let last_first_ack_us = base_us + 16.0 * 1.2;
    let deadline_us = last_first_ack_us + trtt_us + 10.0; // one sample of slack
    let k = r.samples.t_ns.iter().position(|&t| t as f64 / 1e3 >= deadline_us).unwrap();
    let fair = 10e9 / 8.0 * trtt_us * 1e-6 / 16.0; // bytes one share acks in a trtt
    let initial = 10e9 / 8.0 * base_us * 1e-6;
    for (i, name) in r.flow_names.iter().enumerate() {
        let w = r.samples.cwnd[k][i] as f64;
        eprintln!("{name}: cwnd {w:.0} B at {deadline_us:.0} us (fair {fair:.0}, initial {initial:.0})");
        assert!((0.5 * fair..=2.0 * fair).contains(&w), "{name}: cwnd {w}");
    }
    // And it keeps the incast fair and the link busy afterwards.
    assert!(r.jain_final.unwrap() >= 0.9, "{}", show(&r));
    assert!(r.queues[0].utilization >= 0.95, "{}", show(&r));
}

#[test]
fn smartt_incast_queue_settles_near_the_target() {
    // trtt = base + 50 µs: a target queue of 62.5 kB at 10 Gbit/s; RED marks
    // between 25 and 100 kB.
    let r = run(&scenario("incast-16to1"), CcKind::Smartt).unwrap();
    let q = r.queues[0].mean_qlen_kb;
    eprintln!("{}", show(&r));
    assert!((25.0..=125.0).contains(&q), "{}", show(&r));
}

#[test]
#[ignore = "does not hold in the simulator: with BDP-scaled increase, inter-DC flows get ~5x the intra-DC rate (Jain ~0.69)"]
fn smartt_rtt_fairness() {
    let r = run(&scenario("rtt-fairness"), CcKind::Smartt).unwrap();
    eprintln!("{}", show(&r));
    assert!(r.jain_final.unwrap() >= 0.95, "{}", show(&r));
}

// ---------------------------------------------------------------- queues --

#[test]
fn gemini_holds_the_dc_queue_near_k() {
    // DCTCP-style marking at K: the queue oscillates around K (75 kB at 1 Gbit/s).
    let r = run(&scenario("rtt-fairness-1g"), CcKind::Gemini).unwrap();
    let q = r.queues[0].mean_qlen_kb;
    eprintln!("{}", show(&r));
    assert!((0.5 * 75.0..=1.1 * 75.0).contains(&q), "{}", show(&r));
    assert!(r.queues[0].utilization >= 0.99, "{}", show(&r));
    assert_eq!(r.queues[0].drops, 0, "{}", show(&r));
}

#[test]
fn uno_keeps_the_physical_queue_near_empty() {
    let r = run(&scenario("rtt-fairness"), CcKind::Uno).unwrap();
    eprintln!("{}", show(&r));
    assert!(r.queues[0].mean_qlen_kb < 10.0, "{}", show(&r));
}

// ------------------------------------------------------------ simulator --

#[test]
fn flows_that_start_together_share_the_start_up_overload() {
    // uno-sc25 Fig. 3 starts 4 intra- and 4 inter-DC flows at once. With
    // the hosts in lockstep (no jitter) the queue always served the same
    // inter-DC flow first: it lost 84 packets where the other three lost
    // ~1295 each and delivered 515 MB to their ~377. With the default
    // timing jitter no flow of a group wins, for any seed.
    for seed in 0..3 {
        let mut sc = scenario("rtt-fairness");
        sc.seed = seed;
        let r = run(&sc, CcKind::Uno).unwrap();
        for group in ["intra", "inter"] {
            let mb: Vec<f64> = r.flows.iter().filter(|f| f.group == group).map(|f| f.delivered_mb).collect();
            let (lo, hi) = mb.iter().fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
            eprintln!("seed {seed} {group}: delivered {mb:.0?} MB");
            assert!(hi <= 1.1 * lo, "seed {seed}: one {group} flow won the start-up: {mb:?} MB; {}", show(&r));
        }
        assert!(r.jain_final.unwrap() >= 0.95, "seed {seed}: {}", show(&r));
    }
}

#[test]
fn same_seed_same_result_bit_for_bit() {
    let sc = scenario("rtt-fairness");
    let a = run(&sc, CcKind::Uno).unwrap();
    let b = run(&sc, CcKind::Uno).unwrap();
    assert_eq!(a.series_csv(), b.series_csv());
    let mut sc2 = sc.clone();
    sc2.seed = 99;
    let c = run(&sc2, CcKind::Uno).unwrap();
    assert_ne!(a.series_csv(), c.series_csv(), "RED marking draws from the seed");
}

/// Two long flows from one host to two ports, each port marking at the
/// DCTCP paper's K: with a NIC each (no `host`) both fill their ports; when
/// they name the same host they share its one NIC, as a Linux host's
/// sockets share its qdisc, neither starved.
#[test]
fn flows_of_one_host_share_its_nic() {
    let text = |host: &str| {
        let q = |n: &str| format!("[[queues]]\nname = \"{n}\"\nrate_gbps = 10.0\nbuffer_kb = 1000\nmarking = {{ kind = \"threshold\", k_pkts = 65 }}\n");
        let f = |n: &str| format!("[[flows]]\nname = \"to-{n}\"\ncount = 1\nrtt_us = 100\npath = [\"{n}\"]\nhost_rate_gbps = 10.0\n{host}\n");
        format!(
            "name = \"nic\"\ncc = [\"dctcp\"]\nduration_ms = 100\nmeasure_from_ms = 50\n[net]\nlink_rate_gbps = 10.0\nintra_rtt_us = 100\ninter_rtt_us = 100\nmtu = 1500\n{}{}{}{}",
            q("a"),
            q("b"),
            f("a"),
            f("b")
        )
    };
    for kind in [CcKind::Dctcp, CcKind::Gemini] {
        let own = run(&Scenario::from_toml(&text("")).unwrap(), kind).unwrap();
        let shared = run(&Scenario::from_toml(&text("host = \"h1\"")).unwrap(), kind).unwrap();
        let (a, b) = (shared.group_mean_rate_mbps["to-a"], shared.group_mean_rate_mbps["to-b"]);
        eprintln!("{kind:?}: own NICs {:?}, shared {a:.0} + {b:.0} Mbit/s", own.group_mean_rate_mbps);
        assert!(own.group_mean_rate_mbps.values().all(|&r| r > 9000.0), "{:?}", own.group_mean_rate_mbps);
        assert!((9000.0..=10_100.0).contains(&(a + b)), "{a} + {b}: not the NIC's 10 Gbit/s (1 % for the window's edges)");
        assert!(a.min(b) > 0.3 * (a + b), "{a} + {b}: one starved");
    }
}

#[test]
fn sized_flows_report_completion_times() {
    let mut sc = scenario("single-flow");
    sc.flows[0].size_kb = Some(10_000.0);
    let r = run(&sc, CcKind::Gemini).unwrap();
    let fct = r.flows[0].fct_ms.expect("finished");
    // 10 MB at 10 Gbit/s is 8 ms plus slow start from 10 packets.
    assert!((8.0..20.0).contains(&fct), "fct {fct}");
    assert!((r.flows[0].delivered_mb - 10.0).abs() < 0.01);
}

#[test]
fn bad_scenarios_are_rejected_with_the_field_named() {
    let good = std::fs::read_to_string(format!("{}/../scenarios/single-flow.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let cases = [
        (good.replace("duration_ms = 200", "duration_ms = -1"), "duration_ms"),
        (good.replace("duration_ms = 200", "duration_ms = 200\njitter_us = -0.5"), "jitter_us"),
        (good.replace("cc = [\"uno\", \"gemini\", \"smartt\", \"oscar\"]", "cc = [\"reno\"]"), "reno"),
        (good.replace("path = [\"tor\"]", "path = [\"nowhere\"]"), "nowhere"),
        (good.replace("buffer_kb = 1000", "buffer_kb = 0"), "buffer_kb"),
        (good.replace("min_frac = 0.2, max_frac = 0.8", "min_frac = 0.9, max_frac = 0.8"), "min_frac"),
        (good.replace("mtu = 1500", "mtu = 1500\ncolour = 3"), "colour"),
        (format!("{good}\n[params.gemini]\nbeta_q16 = 99999999\n"), "beta_q16"),
        (format!("{good}\n[params.gemini]\nno_such_knob = 1\n"), "no_such_knob"),
        (good.replace("path = [\"tor\"]", "path = [\"tor\"]\nhost = \"h1\""), "flows.flow.host: a non-empty name"),
        (
            good.replace("path = [\"tor\"]", "path = [\"tor\"]\nhost = \"h1\"\nhost_rate_gbps = 10.0")
                + "[[flows]]\nname = \"two\"\nrtt_us = 100\npath = [\"tor\"]\nhost = \"h1\"\nhost_rate_gbps = 25.0\n",
            "host h1's NIC runs at one rate",
        ),
    ];
    for (text, needle) in cases {
        let err = match Scenario::from_toml(&text) {
            Err(e) => format!("{e:#}"),
            Ok(sc) => match run(&sc, CcKind::Gemini) {
                Err(e) => format!("{e:#}"),
                Ok(_) => panic!("accepted a scenario with a bad {needle}"),
            },
        };
        assert!(err.contains(needle), "error for {needle} does not name it: {err}");
    }
}

// ------------------------------------------------------------------ AMRT --

/// Utilization of a link of `rate_gbps` between `a_ms` and `b_ms`: the bytes
/// the flows crossing it delivered, over what the link could carry.
fn link_utilization(r: &RunReport, flows: &[&str], a_ms: f64, b_ms: f64, rate_gbps: f64) -> f64 {
    let at = |ms: f64| r.samples.t_ns.iter().position(|&t| t as f64 >= ms * 1e6).expect("sampled");
    let (ka, kb) = (at(a_ms), at(b_ms));
    let bytes: u64 = flows
        .iter()
        .map(|name| {
            let i = r.flow_names.iter().position(|n| n == name).expect("flow");
            r.samples.delivered[kb][i] - r.samples.delivered[ka][i]
        })
        .sum();
    let secs = (r.samples.t_ns[kb] - r.samples.t_ns[ka]) as f64 / 1e9;
    bytes as f64 * 8.0 / (rate_gbps * 1e9 * secs)
}

/// The same scenario with AMRT's anti-ECN reaction and without it (the
/// paper's traditional receiver-driven baseline).
fn amrt_and_baseline(name: &str) -> (RunReport, RunReport) {
    let sc = scenario(name);
    let mut base = sc.clone();
    base.params.entry("amrt".into()).or_default().insert("spare_increase".into(), 0);
    (run(&sc, CcKind::Amrt).unwrap(), run(&base, CcKind::Amrt).unwrap())
}

/// The comparison sender the issue asks for: DCTCP, on the same links with
/// DCTCP's own switch setting (step marking at K = 65 packets, DCTCP's value
/// for 10 Gbit/s, and a 300 kB buffer instead of AMRT's 8 packets). The
/// simulator has no separate DCTCP; Gemini is DCTCP once its two Gemini-only
/// terms are pinned to DCTCP's: the cut α·F with F = 4K'/(BDP + K') is α/2
/// when its K' = BDP/7, and the increase h is 1 MSS per RTT when
/// h_min = h_max = 1. Its WAN signal (RTT above base + 5 ms) cannot fire
/// here, and its α gain (1/16), once-per-RTT cut and slow start are DCTCP's.
fn dctcp_like(name: &str) -> RunReport {
    let mut sc = scenario(name);
    for q in &mut sc.queues {
        q.marking = xdcc_sim::scenario::Marking::Threshold { k_pkts: 65.0 };
        q.buffer_kb = 300.0;
    }
    for f in &mut sc.flows {
        f.params.clear(); // (AMRT's start windows; DCTCP slow-starts from 10)
    }
    let bdp = (sc.net.link_rate_gbps * 1e9 / 8.0 * sc.net.intra_rtt_us * 1e-6) as u64;
    let g = sc.params.entry("gemini".into()).or_default();
    g.insert("k_bytes".into(), bdp / 7);
    g.insert("h_min_q16".into(), 65536);
    g.insert("h_max_q16".into(), 65536);
    run(&sc, CcKind::Gemini).unwrap()
}

#[test]
fn amrt_fig1_keeps_the_first_bottleneck_full_where_the_baseline_loses_a_third() {
    // amrt-icpp20 Fig. 1: link1 carries f0 (also on link2) and f1; cross
    // flows join link2 at 1 and 3.5 ms. Paper (pHost): link1 falls to 83 %,
    // then 66 %; AMRT keeps it full.
    let (amrt, base) = amrt_and_baseline("amrt-fig1-multi-bottleneck");
    let phases = [(0.5, 1.0), (2.0, 3.5), (4.5, 6.0)];
    let link1 = |r: &RunReport| phases.map(|(a, b)| link_utilization(r, &["f0", "f1"], a, b, 10.0));
    let (ua, ub) = (link1(&amrt), link1(&base));
    eprintln!("link1 utilization per phase: AMRT {ua:.3?}, baseline {ub:.3?} (paper baseline ~1.0, 0.83, 0.66)");
    eprintln!("AMRT queues: {:?}", amrt.queues.iter().map(|q| (q.name.clone(), q.mean_qlen_kb, q.drops)).collect::<Vec<_>>());
    for (k, u) in ua.iter().enumerate().skip(1) {
        assert!(*u >= 0.95, "AMRT: link1 at {u:.3} in phase {k}");
    }
    assert!(ub[1] <= 0.9 && ub[2] <= 0.8, "baseline: link1 {ub:.3?} should lose what f0 leaves");
    // Near-empty queues while full: mean below 2 packets.
    assert!(amrt.queues.iter().all(|q| q.mean_qlen_kb <= 3.0), "{:?}", amrt.queues.iter().map(|q| q.mean_qlen_kb).collect::<Vec<_>>());
    // Against DCTCP (see dctcp_like): it keeps link1 about as busy, but holds
    // its standing queue (the reservoir that keeps a link busy) where AMRT
    // holds about one packet.
    let d = dctcp_like("amrt-fig1-multi-bottleneck");
    let ud = link1(&d);
    eprintln!("DCTCP (K = 65 packets): link1 per phase {ud:.3?}, queues {:?}",
        d.queues.iter().map(|q| (q.name.clone(), q.mean_qlen_kb, q.drops)).collect::<Vec<_>>());
    for (qa, qd) in amrt.queues.iter().zip(&d.queues) {
        assert!(qd.mean_qlen_kb > 10.0 * qa.mean_qlen_kb, "{}: DCTCP {:.1} kB vs AMRT {:.1} kB", qa.name, qd.mean_qlen_kb, qa.mean_qlen_kb);
    }
}

#[test]
fn amrt_fig2_refills_the_link_as_flows_finish() {
    // amrt-icpp20 Fig. 2: four flows share a link and finish one after the
    // other; the baseline's survivors keep their shares (75 %, 50 %, 25 %),
    // AMRT's refill it.
    let (amrt, base) = amrt_and_baseline("amrt-fig2-dynamic");
    let all = ["f0", "f1", "f2", "f3"];
    let fct = |r: &RunReport, i: usize| r.flows[i].fct_ms.expect("finished") + r.flows[i].start_ms;
    for r in [&amrt, &base] {
        let ends = [fct(r, 0), fct(r, 1), fct(r, 2)];
        // From one RTT after each finish to the next one (the last: to the end).
        let u: Vec<f64> = (0..3)
            .map(|k| {
                let a = ends[k] + 0.5;
                let b = if k < 2 { ends[k + 1] } else { r.duration_ms };
                if b - a < 0.3 { f64::NAN } else { link_utilization(r, &all, a, b, 10.0) }
            })
            .collect();
        eprintln!("{}: finishes {ends:.2?} ms, utilization after each {u:.3?}", if std::ptr::eq(r, &amrt) { "AMRT" } else { "baseline" });
    }
    // The last 10 ms, f3 alone (AMRT's f3 may spend 10 ms in an RTO after
    // the refill overshoots the 8-packet queue: printed above, as `rtos`).
    eprintln!("f3 losses {} rtos {} (AMRT), {} {} (baseline)", amrt.flows[3].losses, amrt.flows[3].rtos, base.flows[3].losses, base.flows[3].rtos);
    let last = |r: &RunReport| link_utilization(r, &all, r.duration_ms - 10.0, r.duration_ms - 0.1, 10.0);
    let after_first = |r: &RunReport| link_utilization(r, &all, fct(r, 0) + 0.5, fct(r, 1), 10.0);
    assert!(last(&amrt) >= 0.95, "AMRT alone on the link: {:.3}", last(&amrt));
    assert!(last(&base) <= 0.3, "baseline with one flow left: {:.3}", last(&base));
    assert!(after_first(&base) <= 0.8, "baseline with three flows left: {:.3}", after_first(&base));
    assert!(after_first(&amrt) > after_first(&base), "AMRT refills after the first finish");
    let mean_fct = |r: &RunReport| (0..3).map(|i| fct(r, i)).sum::<f64>() / 3.0;
    assert!(mean_fct(&amrt) < mean_fct(&base), "and finishes the flows sooner on average");
    let d = dctcp_like("amrt-fig2-dynamic");
    eprintln!("DCTCP (K = 65 packets): finishes {:.2?} ms, last 10 ms at {:.3}, queue mean {:.1} kB (AMRT {:.1} kB)",
        [fct(&d, 0), fct(&d, 1), fct(&d, 2)], last(&d), d.queues[0].mean_qlen_kb, amrt.queues[0].mean_qlen_kb);
}

#[test]
fn every_shipped_scenario_loads_and_runs() {
    let dir = format!("{}/../scenarios", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        // (The 2-DC testbed's files: tests/testbed_scenarios.rs.)
        if path.extension().and_then(|e| e.to_str()) != Some("toml") || xdcc_sim::testbed::is_testbed_format(&std::fs::read_to_string(&path).unwrap()) {
            continue;
        }
        let mut sc = Scenario::from_file(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
        // A short piece of each, for every listed algorithm: the file's
        // references (queues, overrides, tunables) all resolve.
        sc.duration_ms = sc.duration_ms.min(20.0);
        sc.measure_from_ms = 0.0;
        sc.sample_interval_us = sc.sample_interval_us.min(1000.0);
        sc.fairness_window_ms = sc.fairness_window_ms.min(5.0);
        xdcc_sim::run_all(&sc).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
        n += 1;
    }
    assert!(n >= 8, "only {n} scenarios under {dir}");
}

// ------------------------------------------------------------ host delay --

/// A busy host delays every ACK alike, the handshake's too (the model's
/// steady host delay). Every CC then reads it as part of the path, not as a
/// queue, and fills a lone flow's pipe: realspeed-10g-lone at a 70 µs
/// steady delay, as the host backend measures there. While the model's
/// handshake missed the delay, SMaRTT and OSCAR, which read delay above
/// their minimum RTT, carried 9 % and 19 % (the host: 88 % and 84 %);
/// UnoCC's floor reading learned it (90 %).
#[test]
fn a_steady_host_delay_is_part_of_every_rtt_and_each_cc_fills_a_lone_pipe() {
    let mut sc = scenario("realspeed-10g-lone");
    sc.host_delay_us = 70.0;
    sc.host_delay_steady = 1.0;
    for (kind, least) in [(CcKind::Uno, 0.85), (CcKind::Smartt, 0.9), (CcKind::Oscar, 0.9)] {
        let r = run(&sc, kind).unwrap();
        eprintln!("{}", show(&r));
        assert!(r.queues[0].utilization >= least, "{kind:?}: {}", show(&r));
    }
}

/// Real hosts add delay to every RTT (softirq backlog, batching); the
/// papers' NICs do not. With end-host delay (scenario realspeed-4to1: a 6 µs
/// base RTT, each ACK delayed by a mean of 150 µs), the learned host delay
/// (`host.rs`) must raise the utilization over the papers' base-RTT sizing
/// (`host_delay_gain_q16 = 0`, OSCAR also `min_wnd_pkts = 2`, UnoCC also the
/// paper's QuickAdapt, `qa_needs_mark = 0`: with the estimate off alone
/// UnoCC's QuickAdapt waits for marks and the flows carry 80 %). Measured
/// (seed 0, senders' NICs at 10 Gbit/s as the file sets): UnoCC 36.4 → 90.0 %,
/// SMaRTT 34.9 → 70.5 %, OSCAR 15.2 → 67.5 %.
/// The host reaches 80–100 % (testbed/RESULTS.md, "Real speed"): the model's ACK delays
/// do not shrink with larger windows as a real host's do, so it predicts the
/// direction, not the level.
#[test]
fn learned_host_delay_raises_utilization_under_end_host_delay() {
    // (The first 400 ms, as the test was measured; the file runs 4 s for
    // the host backend.)
    let mut sc = scenario("realspeed-4to1");
    sc.duration_ms = 400.0;
    sc.measure_from_ms = 200.0;
    // Bursty (exponential) host delay, the spread reading's case; the file
    // now models a steady one, which only UnoCC's floor reading learns.
    sc.host_delay_steady = 0.0;
    let mut off = sc.clone();
    for cc in ["uno", "smartt", "oscar"] {
        off.params.entry(cc.into()).or_default().insert("host_delay_gain_q16".into(), 0);
    }
    off.params.entry("oscar".into()).or_default().insert("min_wnd_pkts".into(), 2);
    off.params.entry("uno".into()).or_default().insert("qa_needs_mark".into(), 0);
    for (kind, gain) in [(CcKind::Uno, 1.15), (CcKind::Smartt, 1.4), (CcKind::Oscar, 2.5)] {
        let on = run(&sc, kind).unwrap();
        let paper = run(&off, kind).unwrap();
        eprintln!("{}\n{}", show(&on), show(&paper));
        let (u_on, u_off) = (on.queues[0].utilization, paper.queues[0].utilization);
        assert!(u_on >= gain * u_off, "{kind:?}: {u_on:.3} with the host delay vs {u_off:.3} without (want x{gain})");
    }
}

#[test]
fn a_sender_without_ecn_is_never_marked_and_fills_the_buffer() {
    // `ect = false` (a cubic sender that never negotiated ECN, as the
    // testbed's cross traffic): the marking port counts its packets but
    // marks none, so DCTCP without marks backs off on loss only and the
    // queue reaches the buffer, far above K.
    let mut sc = scenario("dctcp-2to1");
    let (ect, not) = (run(&sc, CcKind::Dctcp).unwrap(), {
        sc.flows[0].ect = false;
        run(&sc, CcKind::Dctcp).unwrap()
    });
    let k_kb = 65.0 * 1.5;
    assert!(ect.queues[0].marks > 0 && ect.queues[0].p99_qlen_kb <= k_kb + 15.0, "{}", show(&ect));
    assert_eq!(not.queues[0].marks, 0, "{}", show(&not));
    assert!(not.queues[0].drops > 0 && not.queues[0].p99_qlen_kb >= 5.0 * k_kb, "{}", show(&not));
}
