//! Prometheus text exposition of the agent's flows and counters
//! (prometheus-client), served on an opt-in address (`--metrics`, loopback
//! by default) and available through `xdcc metrics`. Counters end in
//! `_total`; the only label is the CC name (no per-flow series).

use std::{
    collections::{BTreeMap, HashMap},
    net::SocketAddr,
    sync::atomic::{AtomicI64, AtomicU64},
};

use anyhow::{bail, Context, Result};
use prometheus_client::{
    encoding::{text::encode, EncodeLabelSet, EncodeMetric, MetricEncoder},
    metrics::{counter::Counter, family::Family, gauge::Gauge, info::Info},
    metrics::MetricType,
    registry::Registry,
};

use xdcc_common::{Counters, FlowKey, FlowStats};

use crate::flows::{FlowView, RTT_LE_US};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CcLabel {
    cc: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CcTunableLabel {
    cc: String,
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CcBackendLabel {
    cc: String,
    backend: String,
}

/// `xdcc_cc_info{cc,backend} 1` for every xdcc CC registered in the kernel
/// (`bpf_<cc>`: BPF struct_ops; `<cc>`: the module), from the list of
/// available congestion controls.
fn registered_ccs(available: &str) -> Vec<CcBackendLabel> {
    available
        .split_whitespace()
        .filter_map(|name| {
            let algo = name.strip_prefix("bpf_");
            let known = |a: &str| xdcc_algo::CCS.iter().any(|c| c.name == a);
            match algo {
                Some(a) if known(a) => Some(CcBackendLabel { cc: name.into(), backend: "bpf".into() }),
                None if known(name) => Some(CcBackendLabel { cc: name.into(), backend: "module".into() }),
                _ => None,
            }
        })
        .collect()
}

/// The per-flow counters summed per CC: (name, help). Exported as counters
/// `xdcc_<name>_total{cc}`.
const FLOW_COUNTERS: [(&str, &str); 9] = [
    ("cc_bytes_sent", "payload bytes sent by the CC's flows, retransmissions included"),
    ("cc_bytes_acked", "bytes acknowledged by the peers of the CC's flows"),
    ("cc_bytes_received", "payload bytes received by the CC's flows"),
    ("cc_ce_received", "received data segments with CE"),
    ("cc_ece_received", "received segments with ECE"),
    ("cc_retransmits", "retransmitted segments"),
    ("cc_reroutes", "flow moves to another path"),
    ("cc_loss_recoveries", "loss recoveries an xdcc CC reacted to (per flow, counted up to 255)"),
    ("cc_rtos", "retransmission timeouts an xdcc CC reacted to (per flow, counted up to 255)"),
];

/// What a flow adds to its CC's totals: the [`FLOW_COUNTERS`], then its RTT
/// samples per histogram bucket ([`RTT_LE_US`], then +Inf), then their sum
/// in µs. All only grow while the flow lives.
const TOTALS: usize = FLOW_COUNTERS.len() + RTT_LE_US.len() + 2;
const RTT_FIRST: usize = FLOW_COUNTERS.len();
const RTT_SUM: usize = TOTALS - 1;

fn counter_values(f: &FlowView) -> [u64; TOTALS] {
    let (recoveries, rtos) = f.cc_state.as_ref().map_or((0, 0), |c| (c.recoveries as u64, c.rtos as u64));
    let mut v = [0u64; TOTALS];
    v[..RTT_FIRST].copy_from_slice(&[
        f.bytes_sent,
        f.bytes_acked,
        f.bytes_received,
        f.ce_in,
        f.ece_in,
        f.retrans as u64,
        f.reroutes as u64,
        recoveries,
        rtos,
    ]);
    for (d, &n) in v[RTT_FIRST..RTT_SUM].iter_mut().zip(&f.rtt_le_counts) {
        *d = n as u64;
    }
    v[RTT_SUM] = f.rtt_sum_us;
    v
}

/// The per-CC RTT histograms, from totals already bucketed (prometheus-client's
/// `Histogram` only observes single values).
#[derive(Debug)]
struct RttHistograms(Vec<(CcLabel, [u64; TOTALS])>);

impl EncodeMetric for RttHistograms {
    fn encode(&self, mut encoder: MetricEncoder) -> std::fmt::Result {
        for (label, t) in &self.0 {
            let counts = &t[RTT_FIRST..RTT_SUM];
            let buckets: Vec<(f64, u64)> = RTT_LE_US
                .iter()
                .map(|&us| us as f64 / 1e6)
                .chain([f64::MAX]) // +Inf
                .zip(counts.iter().copied())
                .collect();
            let count = counts.iter().sum();
            encoder.encode_family(label)?.encode_histogram::<()>(t[RTT_SUM] as f64 / 1e6, count, &buckets, None)?;
        }
        Ok(())
    }
    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// Per-CC totals accumulated over scrapes, so that they are counters
/// (never decrease) although flows come and go: each flow adds what its
/// counters grew since the previous scrape, its whole value when first
/// seen. A flow is its 4-tuple and establishment time (a new connection on
/// a reused 4-tuple is another flow); a socket seen in tcp_info alone has
/// no establishment time, and one whose counters went down is taken for a
/// new connection on its tuple. A closed flow adds its final values while
/// the agent retains it, and when the agent forgets it (expired after
/// `retain_closed_secs` or evicted by `max_closed_flows`) it adds what it
/// had not yet counted first ([`Totals::settle`]): no byte is lost whether
/// or how often anyone scrapes. Labels are the CC names only, a bounded
/// set, never per-flow addresses.
#[derive(Default)]
pub struct Totals {
    /// What each flow had counted at the last scrape that saw it.
    last: HashMap<FlowId, [u64; TOTALS]>,
    by_cc: BTreeMap<String, [u64; TOTALS]>,
}

/// A flow in [`Totals`]: local and remote address, establishment time (ns;
/// 0 for a socket seen in tcp_info only).
type FlowId = (SocketAddr, SocketAddr, u64);

impl Totals {
    /// Adds to `f`'s CC what `f` grew beyond what it counted before;
    /// returns its id and what it has now counted. (An eBPF flow's counter
    /// can read lower than before, e.g. its bytes sent and CC state come
    /// from tcp_info while the socket lives and not once it closed: only
    /// growth beyond the highest reading counts.)
    fn count(&mut self, f: &FlowView) -> (FlowId, [u64; TOTALS]) {
        let now = counter_values(f);
        let id = (f.local, f.remote, f.established_ns);
        let before = self.last.get(&id).copied().unwrap_or_default();
        let restarted = f.established_ns == 0 && now.iter().zip(&before).any(|(n, b)| n < b);
        let total = self.by_cc.entry(f.cc.clone()).or_default();
        let mut counted = now;
        for i in 0..TOTALS {
            if restarted {
                total[i] = total[i].saturating_add(now[i]);
            } else {
                total[i] = total[i].saturating_add(now[i].saturating_sub(before[i]));
                counted[i] = now[i].max(before[i]);
            }
        }
        (id, counted)
    }

    fn update(&mut self, flows: &[FlowView]) {
        let mut seen = HashMap::with_capacity(flows.len());
        for f in flows {
            let (id, counted) = self.count(f);
            seen.insert(id, counted);
        }
        self.last = seen; // forgotten flows were counted up to their last values
    }

    /// Closed flows the agent forgets (expired or evicted): each adds what it
    /// grew since the last scrape that saw it (all of it if none did), so
    /// that the totals keep it after it is gone.
    pub fn settle(&mut self, gone: &[(FlowKey, FlowStats)]) {
        for (k, st) in gone {
            let (id, _) = self.count(&crate::flows::from_ebpf(k, st, None, 0, 0));
            self.last.remove(&id);
        }
    }
}

/// What one scrape reads from the system; the agent gathers it
/// (`agent::State::scrape`), [`render`] turns it into text.
pub struct Scrape {
    /// Every flow the agent knows, the retained closed ones included.
    pub flows: Vec<FlowView>,
    /// The agent's eBPF counters.
    pub counters: Counters,
    /// Each xdcc CC registered in the kernel: name, backend, tunables.
    pub ccs: Vec<RegisteredCc>,
    /// Closed flows' records the agent's `max_closed_flows` cap evicted.
    pub closed_flows_evicted: u64,
}

/// An xdcc CC registered in the kernel (`xdcc_cc_info`, `xdcc_cc_tunable`).
pub struct RegisteredCc {
    pub cc: String,
    /// `bpf` (struct_ops) or `module`.
    pub backend: String,
    /// As `xdcc tunable list` shows them (none where the store cannot be
    /// read, e.g. Linux's own dctcp module).
    pub tunables: Vec<(String, u64)>,
}

/// The xdcc CCs among the kernel's available ones, with their backend:
/// what [`Scrape::ccs`] lists (the tunables are read by the caller).
pub fn registered(available: &str) -> Vec<(String, String)> {
    registered_ccs(available).into_iter().map(|l| (l.cc, l.backend)).collect()
}

/// One scrape as OpenMetrics text: per-CC flow counters (accumulated in
/// `totals` across scrapes) and gauges, the registered CCs and their
/// tunables, the agent-wide counters. No I/O: everything comes in `scrape`.
pub fn render(scrape: &Scrape, totals: &mut Totals) -> Result<String> {
    let (flows, c) = (&scrape.flows, &scrape.counters);
    totals.update(flows);
    let mut reg = Registry::with_prefix("xdcc");
    reg.register("build", "the agent's version", Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]));
    let cc_info = Family::<CcBackendLabel, Gauge>::default();
    let tunables = Family::<CcTunableLabel, Gauge>::default();
    for r in &scrape.ccs {
        cc_info.get_or_create(&CcBackendLabel { cc: r.cc.clone(), backend: r.backend.clone() }).set(1);
        for (name, v) in &r.tunables {
            tunables.get_or_create(&CcTunableLabel { cc: r.cc.clone(), name: name.clone() }).set(i64::try_from(*v).unwrap_or(i64::MAX));
        }
    }
    reg.register("cc_info", "xdcc congestion controls registered in the kernel, by backend", cc_info);
    reg.register(
        "cc_tunable",
        "tunables of the registered xdcc CCs, as `xdcc tunable list` shows them (Q16 fractions x 65536, _ns, _ppm as named)",
        tunables,
    );
    for (i, (name, help)) in FLOW_COUNTERS.iter().enumerate() {
        let fam = Family::<CcLabel, Counter>::default();
        for (cc, v) in &totals.by_cc {
            fam.get_or_create(&CcLabel { cc: cc.clone() }).inc_by(v[i]);
        }
        reg.register(*name, *help, fam);
    }
    let rtt = RttHistograms(totals.by_cc.iter().map(|(cc, t)| (CcLabel { cc: cc.clone() }, *t)).collect());
    reg.register(
        "cc_rtt_seconds",
        "RTT samples of the CC's flows (the agent's per-ACK samples; each counts under the first bound at or above its eBPF bucket's upper edge, the sum at the buckets' midpoints)",
        rtt,
    );
    // Gauges over the open flows of each CC.
    let open_flows = Family::<CcLabel, Gauge>::default();
    let cwnd = Family::<CcLabel, Gauge<f64, AtomicU64>>::default();
    let mut per_cc: BTreeMap<&str, (u64, f64)> = BTreeMap::new();
    for f in flows.iter().filter(|f| f.state != "closed") {
        let e = per_cc.entry(f.cc.as_str()).or_default();
        e.0 += 1;
        e.1 += f.cwnd as f64;
    }
    for (cc, (n, cwnd_sum)) in per_cc {
        let l = CcLabel { cc: cc.to_string() };
        open_flows.get_or_create(&l).set(n as i64);
        cwnd.get_or_create(&l).set(cwnd_sum / n as f64);
    }
    reg.register("cc_open_flows", "open flows tracked by the agent", open_flows);
    reg.register("cc_cwnd_segments_mean", "mean congestion window of the open flows", cwnd);
    let counters: [(&str, &str, u64); 9] = [
        ("flows_opened", "flows the sock_ops program started tracking", c.flows_opened),
        ("flows_closed", "tracked flows that closed", c.flows_closed),
        ("reroutes", "flow moves to another path", c.reroutes),
        ("labels_rewritten", "IPv6 packets whose flow label was rewritten", c.labels_rewritten),
        ("untracked_packets", "TCP packets of flows not in the table", c.untracked_packets),
        ("flow_insert_failures", "flows the flow table could not take", c.insert_failures),
        ("closed_ring_full", "closed flows whose final record found the ring buffer full", c.closed_ring_full),
        ("open_flows_evicted", "open flows the kernel flow table evicted because more than max_open_flows were open (their records are lost)", c.open_flows_evicted),
        (
            "closed_flows_evicted",
            "closed flows the agent forgot before retain_closed_secs because it held max_closed_flows (their counts stay in the per-CC totals)",
            scrape.closed_flows_evicted,
        ),
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
    #[test]
    fn prometheus_text_names_the_counter_samples_and_negotiation_picks_the_format() {
        let om = "# HELP xdcc_flows_opened flows the sock_ops program started tracking.\n\
                  # TYPE xdcc_flows_opened counter\n\
                  xdcc_flows_opened_total 3\n\
                  # HELP xdcc_cc_open_flows open flows.\n\
                  # TYPE xdcc_cc_open_flows gauge\n\
                  xdcc_cc_open_flows{cc=\"bpf_uno\"} 2\n\
                  # HELP xdcc_build the agent's version.\n\
                  # TYPE xdcc_build info\n\
                  xdcc_build_info{version=\"0.1.0\"} 1\n\
                  # EOF\n";
        let t = super::to_prometheus_text(om);
        assert_eq!(
            t,
            "# HELP xdcc_flows_opened_total flows the sock_ops program started tracking.\n\
             # TYPE xdcc_flows_opened_total counter\n\
             xdcc_flows_opened_total 3\n\
             # HELP xdcc_cc_open_flows open flows.\n\
             # TYPE xdcc_cc_open_flows gauge\n\
             xdcc_cc_open_flows{cc=\"bpf_uno\"} 2\n\
             # HELP xdcc_build_info the agent's version.\n\
             # TYPE xdcc_build_info gauge\n\
             xdcc_build_info{version=\"0.1.0\"} 1\n",
            "the text format has no info type: a gauge named as its sample"
        );
        assert!(super::wants_openmetrics(Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")));
        assert!(!super::wants_openmetrics(Some("text/plain;version=0.0.4")));
        assert!(!super::wants_openmetrics(None));
    }

    use super::*;

    #[test]
    fn a_markers_counters_carry_its_name_and_interface_and_stay_typed_in_both_formats() {
        use MarkerValue::{Counter, Gauge};
        let om = render_marker(
            "phantom",
            "p0",
            &[Counter("marker_marked_packets", "packets the marker set CE on", 5), Gauge("marker_phantom_max_queue_bytes", "largest", 70_000)],
        )
        .unwrap();
        assert!(om.contains("# TYPE xdcc_marker_marked_packets counter\n"), "{om}");
        assert!(om.contains("xdcc_marker_marked_packets_total{marker=\"phantom\",iface=\"p0\"} 5\n"), "{om}");
        assert!(om.contains("xdcc_marker_phantom_max_queue_bytes{marker=\"phantom\",iface=\"p0\"} 70000\n"), "{om}");
        assert!(om.contains("xdcc_build_info{version="), "{om}");
        assert!(om.ends_with("# EOF\n"), "{om}");
        let text = to_prometheus_text(&om);
        assert!(text.contains("# TYPE xdcc_marker_marked_packets_total counter\n"), "{text}");
    }

    #[test]
    fn a_scrape_renders_without_the_agent_counters_growing_across_scrapes() {
        let counters = Counters { flows_opened: 3, flows_closed: 1, reroutes: 2, ..Default::default() };
        let ccs = vec![RegisteredCc { cc: "bpf_uno".into(), backend: "bpf".into(), tunables: vec![("k_bytes".into(), 31_000)] }];
        let mut scrape = Scrape { flows: vec![flow(1, "bpf_uno", 100), flow(2, "cubic", 7)], counters, ccs, closed_flows_evicted: 4 };
        let mut totals = Totals::default();
        render(&scrape, &mut totals).unwrap();
        scrape.flows[0].bytes_sent = 250;
        let om = render(&scrape, &mut totals).unwrap();
        let line = |prefix: &str| om.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix} in {om}")).to_string();
        assert_eq!(line("xdcc_cc_bytes_sent_total{cc=\"bpf_uno\"}"), "xdcc_cc_bytes_sent_total{cc=\"bpf_uno\"} 250");
        assert_eq!(line("xdcc_cc_bytes_sent_total{cc=\"cubic\"}"), "xdcc_cc_bytes_sent_total{cc=\"cubic\"} 7");
        assert_eq!(line("xdcc_cc_info{"), "xdcc_cc_info{cc=\"bpf_uno\",backend=\"bpf\"} 1");
        assert_eq!(line("xdcc_cc_tunable{"), "xdcc_cc_tunable{cc=\"bpf_uno\",name=\"k_bytes\"} 31000");
        assert_eq!(line("xdcc_cc_open_flows{cc=\"bpf_uno\"}"), "xdcc_cc_open_flows{cc=\"bpf_uno\"} 1");
        assert_eq!(line("xdcc_flows_opened_total"), "xdcc_flows_opened_total 3");
        assert_eq!(line("xdcc_reroutes_total"), "xdcc_reroutes_total 2");
        assert_eq!(line("xdcc_closed_flows_evicted_total"), "xdcc_closed_flows_evicted_total 4");
        assert!(om.ends_with("# EOF\n"));
    }

    #[test]
    fn registered_ccs_name_their_backend() {
        let v = registered_ccs("reno cubic bpf_uno gemini bpf_nosuch dctcp");
        let got: Vec<(&str, &str)> = v.iter().map(|l| (l.cc.as_str(), l.backend.as_str())).collect();
        assert_eq!(got, [("bpf_uno", "bpf"), ("gemini", "module"), ("dctcp", "module")]);
    }

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
    fn the_rtt_histogram_buckets_accumulate_per_cc_and_encode_cumulatively() {
        let mut hist = [0u32; xdcc_common::RTT_BUCKETS];
        for us in [5, 15, 150, 150, 3_000, 2_000_000] {
            hist[xdcc_common::rtt_bucket(us)] += 1;
        }
        let (counts, sum_us) = crate::flows::rtt_le_counts(&hist);
        // le 10 µs, 20, 50, 100, 200, ..., 5 ms, ..., 1 s, +Inf
        assert_eq!(counts[..7], [1, 1, 0, 0, 2, 0, 0]);
        assert_eq!(counts[8], 1, "3 ms under le 5 ms");
        assert_eq!(counts[16], 1, "2 s under +Inf");
        assert_eq!(counts.iter().sum::<u32>(), 6);
        let want = 5 + 15 + 300 + 3_000 + 2_000_000u64;
        assert!(sum_us.abs_diff(want) * 4 <= want, "sum {sum_us} µs near {want}");
        let mut f = flow(1, "bpf_uno", 0);
        (f.rtt_le_counts, f.rtt_sum_us) = (counts, sum_us);
        let mut t = Totals::default();
        t.update(&[f.clone()]);
        f.rtt_le_counts[4] += 3; // three more samples under 200 µs
        t.update(&[f]);
        let mut reg = Registry::with_prefix("xdcc");
        reg.register("cc_rtt_seconds", "rtt", RttHistograms(t.by_cc.iter().map(|(cc, t)| (CcLabel { cc: cc.clone() }, *t)).collect()));
        let mut out = String::new();
        encode(&mut out, &reg).unwrap();
        assert!(out.contains("# TYPE xdcc_cc_rtt_seconds histogram"), "{out}");
        assert!(out.contains("xdcc_cc_rtt_seconds_count{cc=\"bpf_uno\"} 9"), "{out}");
        let bucket = |le: &str| {
            let l = out.lines().find(|l| l.starts_with("xdcc_cc_rtt_seconds_bucket") && l.contains(&format!("le=\"{le}\""))).unwrap();
            l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()
        };
        assert_eq!((bucket("0.0002"), bucket("0.005"), bucket("+Inf")), (7, 8, 9), "cumulative: {out}");
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

    #[test]
    fn a_flow_counts_once_though_its_counters_read_lower_once_closed() {
        // Open: tcp_info's bytes sent and the CC's own recoveries. Closed:
        // the eBPF record, whose bytes sent are tc's (0 without interfaces)
        // and which has no CC state. Before flows had an identity this read
        // as a new connection on the tuple and counted everything twice.
        let mut open = flow(1, "bpf_uno", 1000);
        open.established_ns = 5;
        open.bytes_acked = 900;
        open.cc_state = Some(crate::sockdiag::CcState {
            ecn_ok: true,
            ce_state: false,
            rtos: 1,
            recoveries: 2,
            idle_restarts: 0,
            values: Vec::new(),
        });
        let mut closed = flow(1, "bpf_uno", 0);
        (closed.established_ns, closed.bytes_acked, closed.state) = (5, 1500, "closed".into());
        let mut t = Totals::default();
        t.update(&[open]);
        t.update(&[closed.clone()]);
        t.update(&[closed]);
        let v = t.by_cc["bpf_uno"];
        let at = |name: &str| v[FLOW_COUNTERS.iter().position(|c| c.0 == name).unwrap()];
        assert_eq!((at("cc_bytes_sent"), at("cc_bytes_acked"), at("cc_loss_recoveries"), at("cc_rtos")), (1000, 1500, 2, 1));
        // A new connection on the same tuple is another flow.
        let mut next = flow(1, "bpf_uno", 30);
        next.established_ns = 9;
        t.update(&[next]);
        assert_eq!(t.by_cc["bpf_uno"][0], 1030);
    }
}

/// OpenMetrics' content type: what `prometheus_client` encodes.
pub const OPENMETRICS_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The Prometheus text format's, for scrapers that do not ask for OpenMetrics.
pub const PROMETHEUS_TEXT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether a scraper's `Accept` header asks for OpenMetrics (Prometheus
/// sends `application/openmetrics-text;version=1.0.0,...` first since 2.5).
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| a.split(',').any(|t| t.trim().starts_with("application/openmetrics-text")))
}

/// OpenMetrics text as the Prometheus text format 0.0.4. The two differ in
/// what matters here: an OpenMetrics counter family `x` has its samples
/// named `x_total`, while in 0.0.4 `# TYPE`/`# HELP` must name the samples
/// (served as OpenMetrics under `text/plain; version=0.0.4`, Prometheus
/// stored no type or help for the counters: prometheus/client_rust #51);
/// 0.0.4 has no `# UNIT` and no `# EOF`.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    let of_type = |kind: &str| -> std::collections::HashSet<&str> {
        let suffix = format!(" {kind}");
        openmetrics.lines().filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(suffix.as_str())).collect()
    };
    let (counters, infos) = (of_type("counter"), of_type("info"));
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# TYPE ", "# HELP "].iter().find_map(|p| line.strip_prefix(p).map(|rest| (*p, rest)));
        match meta {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                if counters.contains(name) {
                    out.push_str(&format!("{prefix}{name}_total {tail}"));
                } else if infos.contains(name) {
                    // The text format has no info type: a gauge of 1 named
                    // as its sample is (`name_info`).
                    let tail = if prefix == "# TYPE " { "gauge" } else { tail };
                    out.push_str(&format!("{prefix}{name}_info {tail}"));
                } else {
                    out.push_str(line);
                }
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Serves `/metrics` on `addr` from a background thread, rendered by
/// `render` at every scrape (the agent's, a marker's): OpenMetrics to
/// scrapers that ask for it, the Prometheus text format to the others.
pub fn serve_with(addr: &str, render: impl Fn() -> Result<String> + Send + 'static) -> Result<()> {
    let server = match tiny_http::Server::http(addr) {
        Ok(s) => s,
        Err(e) => bail!("cannot listen for metrics on {addr}: {e}"),
    };
    std::thread::spawn(move || {
        for req in server.incoming_requests() {
            let resp = if req.url() == "/metrics" {
                let accept = req.headers().iter().find(|h| h.field.equiv("Accept")).map(|h| h.value.as_str().to_string());
                match render() {
                    Ok(text) => {
                        let (body, ctype) = if wants_openmetrics(accept.as_deref()) {
                            (text, OPENMETRICS_TYPE)
                        } else {
                            (to_prometheus_text(&text), PROMETHEUS_TEXT_TYPE)
                        };
                        let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], ctype.as_bytes()).expect("a valid header");
                        tiny_http::Response::from_string(body).with_header(header)
                    }
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

/// One value a switch-side marker (`xdcc mark-*`) counts.
pub enum MarkerValue {
    /// Only grows while the marker runs (`<name>_total`).
    Counter(&'static str, &'static str, u64),
    /// A level, e.g. the largest queue seen.
    Gauge(&'static str, &'static str, u64),
}

/// A marker's counters as OpenMetrics text, every series labelled with the
/// marker (`phantom`, `amrt`, `ce`) and its interface, plus
/// `xdcc_build_info`: what `xdcc mark-* --metrics ADDR` serves.
pub fn render_marker(marker: &str, iface: &str, values: &[MarkerValue]) -> Result<String> {
    let labels = [("marker".into(), marker.to_string().into()), ("iface".into(), iface.to_string().into())];
    let mut registry = Registry::with_prefix("xdcc");
    registry.register("build", "xdcc's version", Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]));
    let marker_registry = registry.sub_registry_with_labels(labels.into_iter());
    for v in values {
        match *v {
            MarkerValue::Counter(name, help, n) => {
                marker_registry.register(name, help, prometheus_client::metrics::counter::ConstCounter::new(n))
            }
            MarkerValue::Gauge(name, help, n) => {
                let g: Gauge<i64, AtomicI64> = Gauge::default();
                g.set(i64::try_from(n).unwrap_or(i64::MAX));
                marker_registry.register(name, help, g)
            }
        }
    }
    let mut text = String::new();
    encode(&mut text, &registry).context("encoding the marker's metrics")?;
    Ok(text)
}
