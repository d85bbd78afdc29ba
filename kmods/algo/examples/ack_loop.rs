//! Runs N ACKs through one algorithm: the workload `bench/run.sh` measures
//! with callgrind (instructions per ACK = difference of two N, divided).
//!
//! `cargo run --release -p xdcc-algo --example ack_loop -- <cc|noop> <N>` (cc: any of `xdcc_algo::CCS`)

use std::hint::black_box;

use xdcc_algo::{AckSample, CongestionControl, FlowInit, NetConfig};

/// A realistic stream: one MTU per ACK at 10 Gbit/s (a packet every 1.2 µs),
/// base RTT 100 µs plus a queueing delay doing a random walk in [0, 40 µs],
/// 5 % of ACKs marked. ACKs arrive in send order, as on a FIFO path.
/// Precomputed so the loop measures the algorithm, not the generator.
pub fn samples(n: usize) -> Vec<AckSample> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut v = Vec::with_capacity(n);
    let t0 = 1_000_000_000u64;
    let mut queue = 20_000i64;
    let mut now = 0u64;
    for i in 0..n as u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        queue = (queue + (x % 201) as i64 - 100).clamp(0, 40_000);
        let rtt = 100_000 + queue as u32;
        let sent = t0 + i * 1_200;
        now = now.max(sent + rtt as u64);
        v.push(AckSample {
            now_ns: now,
            acked_bytes: 1500,
            marked_bytes: if x % 20 == 0 { 1500 } else { 0 },
            rtt_ns: rtt,
            srtt_ns: 0,
            send_time_ns: sent,
            inflight_at_send: 150_000,
            inflight: 148_500,
            app_limited: false,
        });
    }
    v
}

/// Does nothing: the harness's own cost per ACK, subtracted by bench/run.sh.
pub struct Noop(u32);
impl CongestionControl for Noop {
    type Params = ();
    const NAME: &'static str = "noop";
    fn new(_: &(), _: &FlowInit) -> Self {
        Noop(0)
    }
    #[inline(never)]
    fn on_ack(&mut self, _: &(), s: &AckSample) {
        self.0 = black_box(s.acked_bytes);
    }
    fn on_event(&mut self, _: &(), _: xdcc_algo::Event, _: u64) {}
    fn cwnd(&self) -> u32 {
        self.0
    }
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    const INFO_FIELDS: [&'static str; 4] = ["", "", "", ""];
    fn info(&self) -> [u32; 4] {
        [0; 4]
    }
    fn ssthresh(&self) -> u32 {
        0
    }
    fn undo(&mut self, _p: &Self::Params) {}
    fn hold_cwnd(&mut self, _: u32) {}
}

#[inline(never)]
fn run<C: CongestionControl>(p: &C::Params, s: &[AckSample], n: usize) -> u32 {
    let mut c = C::new(p, &FlowInit { now_ns: 1_000_000_000, mss: 1500, rtt_hint_ns: 100_000 });
    for a in &s[..n] {
        c.on_ack(black_box(p), black_box(a));
    }
    black_box(c.cwnd())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (cc, n) = match (args.get(1), args.get(2).and_then(|s| s.parse::<usize>().ok())) {
        (Some(cc), Some(n)) => (cc.clone(), n),
        _ => {
            let names: Vec<&str> = xdcc_algo::CCS.iter().map(|c| c.name).collect();
            eprintln!("usage: ack_loop <{}|noop> <N>", names.join("|"));
            std::process::exit(2);
        }
    };
    let net = NetConfig { link_rate_bps: 10_000_000_000, intra_rtt_ns: 100_000, inter_rtt_ns: 2_000_000, mtu: 1500 };
    let s = samples(n);
    let w = if cc == "noop" {
        run::<Noop>(&(), &s, n)
    } else {
        xdcc_algo::with_cc!(cc.as_str(), |C, P| run::<C>(&P::from_net(&net), &s, n), _ => {
            eprintln!("unknown algorithm {cc:?}");
            std::process::exit(2);
        })
    };
    println!("{cc}: {n} ACKs, final cwnd {w}");
}
