//! The per-ACK fast paths of UnoCC and Gemini (`on_ack`) against their
//! complete logic (`on_ack_full`): after every ACK or event of an arbitrary
//! sequence, on an arbitrary network and tunables, the two states are equal.
//! (props.rs checks the same on 200 sequences per run.)

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use xdcc_algo::{gemini, uno, AckSample, CongestionControl, Event, FlowInit};

#[allow(dead_code)]
#[path = "common.rs"]
mod common;

#[derive(Arbitrary, Debug, Clone)]
enum Step {
    Ack { gap_ns: u32, acked: u16, marked: bool, rtt_ns: u32, srtt_ns: u32, send_back_ns: i32, inflight: u32, app_limited: bool },
    /// `n` in-order ACKs `gap_ns` apart, each of `acked` bytes with RTT
    /// `rtt_ns`, marked on every `mark_every`-th (0: none).
    Train { n: u16, gap_ns: u16, rtt_ns: u32, acked: u16, mark_every: u8 },
    Loss(u16),
    Rto,
    Idle(u32),
}

#[derive(Arbitrary, Debug)]
struct Input {
    setup: common::Setup,
    hint_ns: u32,
    steps: Vec<Step>,
}

fn run<C: CongestionControl + Clone + PartialEq + core::fmt::Debug>(
    p: &C::Params,
    input: &Input,
    full: impl Fn(&mut C, &C::Params, &AckSample),
) {
    let init = FlowInit { now_ns: 1_000_000_000, mss: input.setup.net().mtu, rtt_hint_ns: input.hint_ns };
    let mut fast = C::new(p, &init);
    let mut slow = fast.clone();
    let mut now = init.now_ns;
    let mut budget = 3_000u32;
    for step in input.steps.iter().take(2000) {
        match *step {
            Step::Train { n, gap_ns, rtt_ns, acked, mark_every } => {
                let n = (n as u32).min(budget);
                budget -= n;
                for i in 0..n {
                    now = now.saturating_add(gap_ns as u64);
                    let marked = mark_every != 0 && i % mark_every as u32 == 0;
                    let s = AckSample {
                        now_ns: now,
                        acked_bytes: acked as u32,
                        marked_bytes: if marked { acked as u32 } else { 0 },
                        rtt_ns,
                        srtt_ns: rtt_ns.saturating_add(rtt_ns / 2),
                        send_time_ns: now.saturating_sub(rtt_ns as u64),
                        inflight_at_send: fast.cwnd(),
                        inflight: fast.cwnd(),
                        app_limited: false,
                    };
                    fast.on_ack(p, &s);
                    full(&mut slow, p, &s);
                    assert_eq!(fast, slow, "fast path diverged from the full logic at ACK {i} of {step:?}");
                }
            }
            Step::Ack { gap_ns, acked, marked, rtt_ns, srtt_ns, send_back_ns, inflight, app_limited } => {
                now = now.saturating_add(gap_ns as u64);
                let s = AckSample {
                    now_ns: now,
                    acked_bytes: acked as u32,
                    marked_bytes: if marked { acked as u32 } else { 0 },
                    rtt_ns,
                    srtt_ns,
                    send_time_ns: (now as i64).saturating_sub(send_back_ns as i64).max(0) as u64,
                    inflight_at_send: inflight,
                    inflight: inflight / 2,
                    app_limited,
                };
                fast.on_ack(p, &s);
                full(&mut slow, p, &s);
            }
            Step::Loss(b) => {
                fast.on_event(p, Event::Loss { bytes: b as u32 }, now);
                slow.on_event(p, Event::Loss { bytes: b as u32 }, now);
            }
            Step::Rto => {
                fast.on_event(p, Event::Rto, now);
                slow.on_event(p, Event::Rto, now);
            }
            Step::Idle(d) => {
                now = now.saturating_add(d as u64);
                fast.on_event(p, Event::IdleRestart, now);
                slow.on_event(p, Event::IdleRestart, now);
            }
        }
        assert_eq!(fast, slow, "fast path diverged from the full logic after {step:?}");
    }
}

fuzz_target!(|input: Input| {
    if input.setup.cc % 2 == 0 {
        if let Some(p) = input.setup.params::<uno::Params>() {
            run::<uno::Uno>(&p, &input, |c, p, s| c.on_ack_full(p, s));
        }
    } else if let Some(p) = input.setup.params::<gemini::Params>() {
        run::<gemini::Gemini>(&p, &input, |c, p, s| c.on_ack_full(p, s));
    }
});
