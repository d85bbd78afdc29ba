//! Per-ACK cost of each algorithm in nanoseconds (criterion). Instruction
//! counts come from `bench/run.sh` (callgrind on examples/ack_loop.rs).
//!
//! Each iteration feeds the next 4096 ACKs of a realistic stream (see
//! `ack_loop::samples`) to one flow; the flow restarts when the stream wraps.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xdcc_algo::{with_cc, AckSample, CongestionControl, FlowInit, NetConfig, CCS};

#[path = "../examples/ack_loop.rs"]
#[allow(dead_code)]
mod ack_loop;

const BATCH: usize = 4096;

fn bench_cc<C: CongestionControl>(c: &mut Criterion, p: &C::Params, samples: &[AckSample]) {
    let init = FlowInit { now_ns: 1_000_000_000, mss: 1500, rtt_hint_ns: 100_000 };
    let mut g = c.benchmark_group("per_ack");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function(C::NAME, |b| {
        let mut cc = C::new(p, &init);
        let mut at = 0usize;
        b.iter(|| {
            if at + BATCH > samples.len() {
                at = 0;
                cc = C::new(p, &init);
            }
            for s in &samples[at..at + BATCH] {
                cc.on_ack(black_box(p), black_box(s));
            }
            at += BATCH;
            black_box(cc.cwnd())
        })
    });
    g.finish();
}

fn per_ack(c: &mut Criterion) {
    let net = NetConfig { link_rate_bps: 10_000_000_000, intra_rtt_ns: 100_000, inter_rtt_ns: 2_000_000, mtu: 1500 };
    let s = ack_loop::samples(1 << 20);
    for cc in CCS.iter() {
        // (Every CCS entry has its arm: tests/linux.rs, cc_list_and_type_dispatch_agree.)
        with_cc!(cc.name, |C, P| bench_cc::<C>(c, &P::from_net(&net), &s), _ => {});
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .measurement_time(std::time::Duration::from_secs(2))
        .warm_up_time(std::time::Duration::from_millis(500));
    targets = per_ack
}
criterion_main!(benches);
