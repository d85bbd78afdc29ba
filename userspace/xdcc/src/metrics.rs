//! Prometheus text exposition of the agent's flows and counters
//! (prometheus-client), served on an opt-in address (`--metrics`, loopback
//! by default) and available through `xdcc metrics`. Counters end in
//! `_total`; the only label is the CC name (no per-flow series).

use std::{
    collections::{BTreeMap, HashMap},
    net::SocketAddr,
    sync::{atomic::AtomicU64, Arc, Mutex},
};

use anyhow::{bail, Context, Result};
use prometheus_client::{
    encoding::{text::encode, EncodeLabelSet},
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use crate::{agent::State, flows::FlowView};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CcLabel {
    cc: String,
}

/// The per-flow counters summed per CC: (name, help). Exported as counters
/// `xdcc_<name>_total{cc}`.
const FLOW_COUNTERS: [(&str, &str); 7] = [
    ("cc_bytes_sent", "payload bytes sent by the CC's flows, retransmissions included"),
    ("cc_bytes_acked", "bytes acknowledged by the peers of the CC's flows"),
    ("cc_bytes_received", "payload bytes received by the CC's flows"),
    ("cc_ce_received", "received data segments with CE"),
    ("cc_ece_received", "received segments with ECE"),
    ("cc_retransmits", "retransmitted segments"),
    ("cc_reroutes", "flow moves to another path"),
];

fn counter_values(f: &FlowView) -> [u64; 7] {
    [f.bytes_sent, f.bytes_acked, f.bytes_received, f.ce_in, f.ece_in, f.retrans as u64, f.reroutes as u64]
}

/// Per-CC totals accumulated over scrapes, so that they are counters
/// (never decrease) although flows come and go: each flow adds what its
/// counters grew since the previous scrape, its whole value when first
/// seen (a 4-tuple reused by a new connection shows smaller values and is
/// counted afresh). A closed flow adds its final values while the agent
/// retains it (`retain_closed_secs`, 300 s by default): scrape more often
/// than that and no byte is lost. Labels are the CC names only, a bounded
/// set, never per-flow addresses.
#[derive(Default)]
pub struct Totals {
    last: HashMap<(SocketAddr, SocketAddr), [u64; 7]>,
    by_cc: BTreeMap<String, [u64; 7]>,
}

impl Totals {
    fn update(&mut self, flows: &[FlowView]) {
        let mut seen = HashMap::with_capacity(flows.len());
        for f in flows {
            let now = counter_values(f);
            let key = (f.local, f.remote);
            let before = self.last.get(&key).copied().unwrap_or_default();
            let restarted = now.iter().zip(&before).any(|(n, b)| n < b);
            let total = self.by_cc.entry(f.cc.clone()).or_default();
            for i in 0..now.len() {
                total[i] += if restarted { now[i] } else { now[i] - before[i] };
            }
            seen.insert(key, now);
        }
        self.last = seen; // forgotten flows were counted up to their last values
    }
}

/// One scrape: per-CC flow counters and gauges, and the agent-wide counters.
pub fn render(state: &mut State) -> Result<String> {
    let flows = state.flows(true)?;
    let c = state.counters()?;
    state.totals.update(&flows);
    let mut reg = Registry::with_prefix("xdcc");
    for (i, (name, help)) in FLOW_COUNTERS.iter().enumerate() {
        let fam = Family::<CcLabel, Counter>::default();
        for (cc, v) in &state.totals.by_cc {
            fam.get_or_create(&CcLabel { cc: cc.clone() }).inc_by(v[i]);
        }
        reg.register(*name, *help, fam);
    }
    // Gauges over the open flows of each CC.
    let open_flows = Family::<CcLabel, Gauge>::default();
    let srtt = Family::<CcLabel, Gauge<f64, AtomicU64>>::default();
    let cwnd = Family::<CcLabel, Gauge<f64, AtomicU64>>::default();
    let mut per_cc: BTreeMap<&str, (u64, f64, f64)> = BTreeMap::new();
    for f in flows.iter().filter(|f| f.state != "closed") {
        let e = per_cc.entry(f.cc.as_str()).or_default();
        e.0 += 1;
        e.1 += f.rtt_srtt_us as f64 / 1e6;
        e.2 += f.cwnd as f64;
    }
    for (cc, (n, srtt_sum, cwnd_sum)) in per_cc {
        let l = CcLabel { cc: cc.to_string() };
        open_flows.get_or_create(&l).set(n as i64);
        srtt.get_or_create(&l).set(srtt_sum / n as f64);
        cwnd.get_or_create(&l).set(cwnd_sum / n as f64);
    }
    reg.register("cc_open_flows", "open flows tracked by the agent", open_flows);
    reg.register("cc_srtt_seconds_mean", "mean smoothed RTT of the open flows", srtt);
    reg.register("cc_cwnd_segments_mean", "mean congestion window of the open flows", cwnd);
    let counters: [(&str, &str, u64); 5] = [
        ("flows_opened", "flows the sock_ops program started tracking", c.flows_opened),
        ("flows_closed", "tracked flows that closed", c.flows_closed),
        ("reroutes", "flow moves to another path", c.reroutes),
        ("labels_rewritten", "IPv6 packets whose flow label was rewritten", c.labels_rewritten),
        ("untracked_packets", "TCP packets of flows not in the table", c.untracked_packets),
    ];
    for (name, help, v) in counters {
        let ctr: Counter = Counter::default();
        ctr.inc_by(v);
        reg.register(name, help, ctr);
    }
    let mut out = String::new();
    encode(&mut out, &reg).context("encoding metrics")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(port: u16, cc: &str, sent: u64) -> FlowView {
        let mut f: FlowView = serde_json::from_value(serde_json::json!({
            "local": format!("10.0.0.1:{port}"), "remote": "10.0.0.2:5201", "family": 2, "cc": cc,
            "state": "established", "source": "ebpf", "age_ms": 1,
            "bytes_sent": 0, "bytes_acked": 0, "bytes_received": 0, "segs_out": 0, "segs_in": 0,
            "tc_bytes_out": 0, "tc_bytes_in": 0, "ect_out": 0, "ce_in": 0, "ece_in": 0, "ece_out": 0,
            "ecn_round_pct": 0.0, "rtt_min_us": 0, "rtt_srtt_us": 0, "rtt_last_us": 0, "rtt_samples": 0,
            "cwnd": 10, "mss": 1448, "retrans": 0, "pacing_rate_bps": 0, "reroutes": 0, "last_reroute": "-"
        }))
        .expect("a valid FlowView");
        f.bytes_sent = sent;
        f
    }

    #[test]
    fn totals_never_decrease_when_flows_close_or_a_tuple_is_reused() {
        let mut t = Totals::default();
        t.update(&[flow(1, "bpf_uno", 100), flow(2, "bpf_uno", 50)]);
        assert_eq!(t.by_cc["bpf_uno"][0], 150);
        t.update(&[flow(1, "bpf_uno", 300)]); // flow 2 gone: its 50 stay counted
        assert_eq!(t.by_cc["bpf_uno"][0], 350);
        t.update(&[flow(1, "bpf_uno", 20)]); // a new connection on the same tuple
        assert_eq!(t.by_cc["bpf_uno"][0], 370);
        t.update(&[flow(3, "cubic", 5)]);
        assert_eq!((t.by_cc["bpf_uno"][0], t.by_cc["cubic"][0]), (370, 5));
    }
}

/// Serves `/metrics` on `addr` from a background thread.
pub fn serve(addr: &str, state: Arc<Mutex<State>>) -> Result<()> {
    let server = match tiny_http::Server::http(addr) {
        Ok(s) => s,
        Err(e) => bail!("cannot listen for metrics on {addr}: {e}"),
    };
    std::thread::spawn(move || {
        for req in server.incoming_requests() {
            let resp = if req.url() == "/metrics" {
                match render(&mut state.lock().unwrap()) {
                    Ok(text) => tiny_http::Response::from_string(text).with_header(
                        "Content-Type: text/plain; version=0.0.4".parse::<tiny_http::Header>().unwrap(),
                    ),
                    Err(e) => tiny_http::Response::from_string(format!("{e:#}\n")).with_status_code(500),
                }
            } else {
                tiny_http::Response::from_string("see /metrics\n").with_status_code(404)
            };
            let _ = req.respond(resp);
        }
    });
    Ok(())
}
