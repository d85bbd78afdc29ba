//! Property tests: arbitrary sequences of ACKs, marks, RTT samples (0, tiny,
//! huge), send times (including out of order and far in the past or future),
//! losses, RTOs and idle restarts never panic (this test profile keeps
//! overflow checks on, like the kernel), keep the window within its clamps and
//! are deterministic.

use proptest::prelude::*;
use xdcc_algo::{amrt, dctcp, gemini, oscar, smartt, uno, AckSample, CongestionControl, Event, FlowInit, NetConfig, MAX_CWND_BYTES};

/// Cases per property: `PROPTEST_CASES` from the environment if set (for a
/// deep run: `PROPTEST_CASES=100000 cargo test --release -p xdcc-algo --test
/// props`), else the suite's default.
fn cases_or(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[derive(Clone, Debug)]
enum Step {
    Ack { dt: u64, acked: u32, marked: bool, rtt: u32, send_back: i64, infl: u32, app_limited: bool },
    Loss(u32),
    Rto,
    Idle(u64),
}

fn rtt() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), Just(1u32), 1_000u32..20_000_000, Just(u32::MAX), any::<u32>()]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0u64..5_000_000, prop_oneof![Just(0u32), 1u32..70_000, any::<u32>()], any::<bool>(), rtt(),
              prop_oneof![-1_000_000_000i64..1_000_000_000, Just(i64::MIN / 2), Just(i64::MAX / 2)],
              any::<u32>(), any::<bool>())
            .prop_map(|(dt, acked, marked, rtt, send_back, infl, app_limited)|
                Step::Ack { dt, acked, marked, rtt, send_back, infl, app_limited }),
        1 => any::<u32>().prop_map(Step::Loss),
        1 => Just(Step::Rto),
        1 => prop_oneof![0u64..10_000_000_000, Just(u64::MAX / 4)].prop_map(Step::Idle),
    ]
}

fn net() -> impl Strategy<Value = NetConfig> {
    (1_000_000u64..400_000_000_000, 1_000u32..10_000_000, 1u32..200, 256u32..9_001).prop_map(
        |(rate, intra, mult, mtu)| NetConfig {
            link_rate_bps: rate,
            intra_rtt_ns: intra,
            inter_rtt_ns: intra.saturating_mul(mult).min(4_000_000_000),
            mtu,
        },
    )
}


/// What one step does to a flow, at the clock `now` (advanced by the step).
enum Action {
    Ack(AckSample),
    Event(Event),
}

fn action(step: &Step, now: &mut u64) -> Action {
    match *step {
        Step::Ack { dt, acked, marked, rtt, send_back, infl, app_limited } => {
            *now = now.saturating_add(dt);
            let sent = (*now as i128 - send_back as i128).clamp(0, u64::MAX as i128) as u64;
            Action::Ack(AckSample {
                now_ns: *now,
                acked_bytes: acked,
                marked_bytes: if marked { acked } else { 0 },
                rtt_ns: rtt,
                srtt_ns: 0,
                send_time_ns: sent,
                inflight_at_send: infl,
                inflight: infl / 2,
                app_limited,
            })
        }
        Step::Loss(b) => Action::Event(Event::Loss { bytes: b }),
        Step::Rto => Action::Event(Event::Rto),
        Step::Idle(d) => {
            *now = now.saturating_add(d);
            Action::Event(Event::IdleRestart)
        }
    }
}

/// Runs `steps` and checks the window bounds after every step; returns the
/// final state and the outputs seen, for the determinism check.
fn drive<C: CongestionControl + Clone + PartialEq + core::fmt::Debug>(
    p: &C::Params,
    init: FlowInit,
    steps: &[Step],
    min_cwnd: u32,
) -> (C, Vec<(u32, Option<u64>, u32)>) {
    let mut c = C::new(p, &init);
    let mut now = init.now_ns;
    let mut outs = Vec::with_capacity(steps.len());
    for s in steps {
        match action(s, &mut now) {
            Action::Ack(a) => c.on_ack(p, &a),
            Action::Event(e) => c.on_event(p, e, now),
        }
        let w = c.cwnd();
        assert!(w >= min_cwnd, "cwnd {w} below the minimum {min_cwnd}");
        assert!(w <= MAX_CWND_BYTES, "cwnd {w} above MAX_CWND_BYTES");
        if let Some(r) = c.pacing_rate() {
            assert!(r > 0, "pacing rate must be positive");
        }
        outs.push((w, c.pacing_rate(), c.ssthresh()));
    }
    c.undo(p);
    (c, outs)
}

fn init(hint: u32, mss: u32) -> FlowInit {
    FlowInit { now_ns: 1_000_000_000, mss, rtt_hint_ns: hint }
}

fn check<C: CongestionControl + Clone + PartialEq + core::fmt::Debug>(
    p: &C::Params,
    hint: u32,
    mss: u32,
    steps: &[Step],
    min: u32,
) {
    let a = drive::<C>(p, init(hint, mss), steps, min);
    let b = drive::<C>(p, init(hint, mss), steps, min);
    assert_eq!(a.0, b.0, "same inputs, same state");
    assert_eq!(a.1, b.1, "same inputs, same outputs");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases_or(300)))]

    #[test]
    fn uno_never_panics_and_stays_in_bounds(n in net(), hint in rtt(), steps in prop::collection::vec(step(), 0..300)) {
        let p = uno::Params::from_net(&n);
        prop_assume!(p.validate().is_ok());
        check::<uno::Uno>(&p, hint, n.mtu, &steps, n.mtu);
    }

    #[test]
    fn gemini_never_panics_and_stays_in_bounds(n in net(), hint in rtt(), steps in prop::collection::vec(step(), 0..300)) {
        let p = gemini::Params::from_net(&n);
        prop_assume!(p.validate().is_ok());
        check::<gemini::Gemini>(&p, hint, n.mtu, &steps, n.mtu);
    }

    #[test]
    fn oscar_never_panics_and_stays_in_bounds(n in net(), hint in rtt(), steps in prop::collection::vec(step(), 0..300)) {
        let p = oscar::Params::from_net(&n);
        prop_assume!(p.validate().is_ok());
        check::<oscar::Oscar>(&p, hint, n.mtu, &steps, 2 * n.mtu);
    }

    #[test]
    fn smartt_never_panics_and_stays_in_bounds(n in net(), hint in rtt(), steps in prop::collection::vec(step(), 0..300)) {
        let p = smartt::Params::from_net(&n);
        prop_assume!(p.validate().is_ok());
        check::<smartt::Smartt>(&p, hint, n.mtu, &steps, n.mtu);
    }

    #[test]
    fn amrt_never_panics_and_stays_in_bounds(n in net(), hint in rtt(), steps in prop::collection::vec(step(), 0..300)) {
        let p = amrt::Params::from_net(&n);
        prop_assume!(p.validate().is_ok());
        check::<amrt::Amrt>(&p, hint, n.mtu, &steps, n.mtu);
    }

    #[test]
    fn dctcp_never_panics_and_stays_in_bounds(n in net(), hint in rtt(), shift_g in 0u32..=10, alpha in 0u32..=1024,
                                              steps in prop::collection::vec(step(), 0..300)) {
        let p = dctcp::Params { shift_g, alpha_on_init: alpha, ..dctcp::Params::from_net(&n) };
        prop_assume!(p.validate().is_ok());
        check::<dctcp::Dctcp>(&p, hint, n.mtu, &steps, n.mtu);
    }

    /// Dense, realistic ACK streams (one MTU, RTT near base, monotone send
    /// times) interleaved with marks and losses, for many more steps.
    #[test]
    fn long_realistic_streams(seed in any::<u64>(), marks in 0u32..100, losses in 0u32..5) {
        let n = NetConfig { link_rate_bps: 10_000_000_000, intra_rtt_ns: 100_000, inter_rtt_ns: 2_000_000, mtu: 1500 };
        let mut x = seed | 1;
        let mut steps = Vec::new();
        for _ in 0..3000 {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            let r = (x % 100) as u32;
            if r < losses {
                steps.push(Step::Loss(1500));
            } else {
                steps.push(Step::Ack {
                    dt: 1_200,
                    acked: 1500,
                    marked: r < marks,
                    rtt: 100_000 + (x % 200_000) as u32,
                    send_back: 100_000 + (x % 200_000) as i64,
                    infl: 100_000,
                    app_limited: false,
                });
            }
        }
        check::<uno::Uno>(&uno::Params::from_net(&n), 100_000, 1500, &steps, 1500);
        check::<gemini::Gemini>(&gemini::Params::from_net(&n), 100_000, 1500, &steps, 1500);
        check::<oscar::Oscar>(&oscar::Params::from_net(&n), 100_000, 1500, &steps, 3000);
        check::<smartt::Smartt>(&smartt::Params::from_net(&n), 100_000, 1500, &steps, 1500);
        check::<amrt::Amrt>(&amrt::Params::from_net(&n), 100_000, 1500, &steps, 1500);
        check::<dctcp::Dctcp>(&dctcp::Params::from_net(&n), 100_000, 1500, &steps, 1500);
    }
}

/// The per-ACK fast paths (`on_ack`) are shortcuts of the complete logic
/// (`on_ack_full`): same inputs, same state, always.
fn fast_equals_full<C, F>(p: &C::Params, steps: &[Step], full: F)
where
    C: CongestionControl + Clone + PartialEq + core::fmt::Debug,
    F: Fn(&mut C, &C::Params, &AckSample),
{
    let mut a = C::new(p, &init(100_000, 1500));
    let mut b = a.clone();
    let mut now = 1_000_000_000u64;
    for s in steps {
        match action(s, &mut now) {
            Action::Ack(sample) => {
                a.on_ack(p, &sample);
                full(&mut b, p, &sample);
            }
            Action::Event(e) => {
                a.on_event(p, e, now);
                b.on_event(p, e, now);
            }
        }
        assert_eq!(a, b, "fast path diverged from the full logic");
    }
}

fn realistic_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        20 => (0u64..3_000, 1u32..9_000, prop::bool::weighted(0.1), 90_000u32..400_000, 90_000i64..400_000, any::<u32>(), prop::bool::weighted(0.02))
            .prop_map(|(dt, acked, marked, rtt, send_back, infl, app_limited)|
                Step::Ack { dt, acked, marked, rtt, send_back, infl, app_limited }),
        1 => step(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases_or(200)))]

    #[test]
    fn uno_fast_path_is_the_full_logic(steps in prop::collection::vec(realistic_step(), 0..600)) {
        let n = NetConfig { link_rate_bps: 10_000_000_000, intra_rtt_ns: 100_000, inter_rtt_ns: 800_000, mtu: 1500 };
        fast_equals_full::<uno::Uno, _>(&uno::Params::from_net(&n), &steps, |c, p, s| c.on_ack_full(p, s));
    }

    #[test]
    fn gemini_fast_path_is_the_full_logic(steps in prop::collection::vec(realistic_step(), 0..600)) {
        let n = NetConfig { link_rate_bps: 10_000_000_000, intra_rtt_ns: 100_000, inter_rtt_ns: 800_000, mtu: 1500 };
        fast_equals_full::<gemini::Gemini, _>(&gemini::Params::from_net(&n), &steps, |c, p, s| c.on_ack_full(p, s));
    }
}

/// Found by the fuzzer (kmods/algo/fuzz, fast_path): a Gemini flow without a
/// handshake RTT that leaves slow start on a loss before its first RTT sample
/// took the fast path on that sample and kept no base RTT, while the full
/// logic sets it.
#[test]
fn gemini_fast_path_takes_the_first_rtt_sample_as_base_after_an_early_loss() {
    let n = NetConfig { link_rate_bps: 10_000_000_000, intra_rtt_ns: 100_000, inter_rtt_ns: 800_000, mtu: 1500 };
    let p = gemini::Params::from_net(&n);
    let mut fast = gemini::Gemini::new(&p, &init(0, 1500));
    let mut full = fast.clone();
    let now = 1_000_000_000;
    let sample = AckSample {
        now_ns: now + 50_000,
        acked_bytes: 1500,
        marked_bytes: 0,
        rtt_ns: 120_000,
        srtt_ns: 0,
        send_time_ns: now - 70_000, // sent before the round started: not a round end
        inflight_at_send: 15_000,
        inflight: 7_500,
        app_limited: false,
    };
    for c in [&mut fast, &mut full] {
        c.on_event(&p, Event::Loss { bytes: 1500 }, now);
    }
    fast.on_ack(&p, &sample);
    full.on_ack_full(&p, &sample);
    assert_eq!(fast.info()[0], 120, "base RTT (µs) from the first sample");
    assert_eq!(fast, full);
}
