//! Prometheus text exposition of the agent's flows and counters
//! (prometheus-client), served on an opt-in address (`--metrics`, loopback
//! by default) and available through `xdcc metrics`.

use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use prometheus_client::{
    encoding::{text::encode, EncodeLabelSet},
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use crate::agent::State;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FlowLabels {
    local: String,
    remote: String,
    cc: String,
}

/// One scrape: every open flow's gauges and the agent-wide counters.
pub fn render(state: &mut State) -> Result<String> {
    let flows = state.flows(false)?;
    let c = state.counters()?;
    let mut reg = Registry::with_prefix("xdcc");
    let gauges: [(&str, &str); 10] = [
        ("flow_bytes_sent", "payload bytes sent, retransmissions included"),
        ("flow_bytes_acked", "bytes acknowledged by the peer"),
        ("flow_bytes_received", "payload bytes received"),
        ("flow_ce_received", "received data segments with CE"),
        ("flow_ece_received", "received segments with ECE"),
        ("flow_ecn_round_ratio", "ECE fraction of the last round"),
        ("flow_srtt_seconds", "smoothed RTT"),
        ("flow_min_rtt_seconds", "minimum RTT"),
        ("flow_cwnd_segments", "congestion window"),
        ("flow_reroutes", "moves to another path"),
    ];
    let families: Vec<Family<FlowLabels, Gauge<f64, std::sync::atomic::AtomicU64>>> =
        gauges.iter().map(|_| Family::default()).collect();
    for f in &flows {
        let l = FlowLabels { local: f.local.to_string(), remote: f.remote.to_string(), cc: f.cc.clone() };
        let values = [
            f.bytes_sent as f64,
            f.bytes_acked as f64,
            f.bytes_received as f64,
            f.ce_in as f64,
            f.ece_in as f64,
            f.ecn_round_pct / 100.0,
            f.rtt_srtt_us as f64 / 1e6,
            f.rtt_min_us as f64 / 1e6,
            f.cwnd as f64,
            f.reroutes as f64,
        ];
        for (fam, v) in families.iter().zip(values) {
            fam.get_or_create(&l).set(v);
        }
    }
    for ((name, help), fam) in gauges.iter().zip(families) {
        reg.register(*name, *help, fam);
    }
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
