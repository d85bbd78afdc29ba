//! One run's record and everything computed from it (the definitions are in
//! the crate's documentation).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{convergence, jain, mean, percentile, size_class, Row, BIN_S, CONVERGED_JAIN, SIZE_CLASSES};

/// A run as measured: the testbed's raw JSON (`guest.py` writes it; fields
/// this crate does not use are ignored), or a simulated run translated to it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Run {
    pub run_id: String,
    /// The `ccs` entry the run used.
    pub cc: String,
    /// The sweep point ("" without a sweep).
    #[serde(default, deserialize_with = "null_is_empty")]
    pub label: String,
    pub duration_s: f64,
    /// The port whose utilization and queue are the run's headline numbers.
    pub bottleneck: String,
    /// Line rate per port (Mbit/s; None: unknown).
    pub port_rates_mbit: BTreeMap<String, Option<f64>>,
    /// The long flows.
    pub flows: Vec<Flow>,
    /// Per long flow (by id): [t s, bytes acked, cwnd, RTT µs, retransmits],
    /// cumulative counters.
    pub samples: BTreeMap<String, Vec<Row<5>>>,
    /// Per port: [t s, backlog bytes, backlog packets, bytes sent, drops],
    /// cumulative counters.
    pub queues: BTreeMap<String, Vec<Row<5>>>,
    /// One entry per sized flow (incast, workload).
    #[serde(default)]
    pub fct: Vec<Fct>,
    /// Sized flows still running when the run ended (with or without an
    /// `unfinished` entry in `fct`).
    #[serde(default)]
    pub fct_unfinished: u64,
    /// The ports as configured; only their emulated propagation delay is
    /// used here (see [`queues`]).
    #[serde(default)]
    pub ports: Vec<Port>,
    #[serde(default)]
    pub cpu: Option<Cpu>,
    #[serde(default)]
    pub sample_gaps_ms: Option<Gaps>,
    /// Changes to the network during the run (the scenario's `[[events]]`,
    /// e.g. a WAN link black-holed and healed): phases are cut at them.
    #[serde(default)]
    pub events: Vec<Event>,
}

/// A change to the network at `at_s`: `action` ("blackhole", "heal") on
/// `link` (a WAN path, "wan2").
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Event {
    pub at_s: f64,
    pub link: String,
    pub action: String,
}

fn null_is_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Flow {
    pub id: u64,
    /// "long" for the flows `samples` follows and the metrics count;
    /// "cross" for cross traffic (its start and stop cut phases, nothing
    /// else counts it).
    pub kind: String,
    /// "intra" or "inter" (DC).
    pub class: String,
    pub start_s: f64,
    pub stop_s: f64,
}

/// A sized flow: its completion time when `ok`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Fct {
    #[serde(default)]
    pub ok: bool,
    /// Still running when the run ended (also counted in
    /// [`Run::fct_unfinished`]; recorded so a phase can count it).
    #[serde(default)]
    pub unfinished: bool,
    /// When it started (s from the run's start), if known.
    #[serde(default)]
    pub at_s: Option<f64>,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub class: String,
    #[serde(default)]
    pub size: f64,
    #[serde(default)]
    pub fct_s: Option<f64>,
}

/// A port: `ns:dev` names its samples in [`Run::queues`]; `delay_us` is the
/// propagation delay emulated in its qdisc (netem on WAN border ports).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Port {
    pub ns: String,
    pub dev: String,
    #[serde(default)]
    pub delay_us: Option<f64>,
}

/// How busy the testbed's guest was during the run (fraction of its CPUs).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Cpu {
    pub busy: Option<f64>,
}

/// Time between consecutive samples (ms).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Gaps {
    pub max: Option<f64>,
}

/// Per path class ("intra", "inter") of long flows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassStats {
    pub n: usize,
    pub sum_mbps: Option<f64>,
    pub per_flow_mbps: Option<f64>,
    /// Mean over the class's flows of each flow's median RTT in the window.
    pub rtt_ms: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FctRow {
    pub kind: String,
    pub class: String,
    pub size: String,
    pub n: usize,
    pub mean_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PortPhase {
    pub util: f64,
    pub queue_mean_kb: Option<f64>,
    pub queue_p99_kb: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phase {
    pub from_s: f64,
    pub to_s: f64,
    /// Long flows running through the whole phase.
    pub flows: Vec<u64>,
    pub ports: BTreeMap<String, PortPhase>,
    /// Sum of those flows' throughput over the phase's second half (Mbit/s).
    pub long_mbps: Option<f64>,
    /// Those of them that carried less than [`STUCK_FRAC`] of the
    /// bottleneck's rate over the phase's second half: flows left on a
    /// black-holed path.
    pub stuck: Option<usize>,
    /// Sized flows that started in the phase (at any time in it): how
    /// many, their mean and p99 FCT (the completed ones), and how many
    /// failed or did not finish.
    pub fct_n: usize,
    pub fct_mean_ms: Option<f64>,
    pub fct_p99_ms: Option<f64>,
    pub fct_failed: usize,
}

/// A long flow below this fraction of the bottleneck port's rate in a phase
/// is stuck (1/400: a quarter of a percent, far below any fair share the
/// testbed's scenarios give a flow).
pub const STUCK_FRAC: f64 = 1.0 / 400.0;

/// Every metric of one run (the report's `summary.json` entry).
#[derive(Clone, Debug, Serialize)]
pub struct Metrics {
    pub run_id: String,
    pub cc: String,
    pub label: String,
    pub steady_from_s: f64,
    pub steady_to_s: f64,
    pub utilization: Option<f64>,
    pub jain: Option<f64>,
    pub convergence_s: Option<f64>,
    pub queue_mean_kb: Option<f64>,
    pub queue_p99_kb: Option<f64>,
    pub drops: u64,
    pub drops_by_port: BTreeMap<String, u64>,
    pub retransmits: u64,
    pub intra: ClassStats,
    pub inter: ClassStats,
    pub inter_intra_ratio: Option<f64>,
    pub flow_mbps: BTreeMap<String, f64>,
    pub phases: Vec<Phase>,
    pub flow_rtt_ms: BTreeMap<String, Option<f64>>,
    pub fct: Vec<FctRow>,
    pub fct_count: usize,
    pub fct_failed: u64,
    /// How loaded the emulation itself was: a saturated guest CPU or large
    /// sample gaps mean the numbers measure the VM, not only the CC.
    pub guest_cpu_busy: Option<f64>,
    pub sample_gap_max_ms: Option<f64>,
}

impl Metrics {
    /// The scalar metrics by name — `utilization`, `jain`, `convergence_s`,
    /// `inter_intra_ratio`, `intra_per_flow_mbps`, `queue_mean_kb`, `drops`,
    /// `fct_mean_ms workload intra <100KB`, ... — for tables that put runs
    /// (or a model and a measurement) side by side. Undefined ones are absent.
    pub fn scalars(&self) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: Option<f64>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        put("utilization", self.utilization);
        put("jain", self.jain);
        put("convergence_s", self.convergence_s);
        put("inter_intra_ratio", self.inter_intra_ratio);
        put("intra_per_flow_mbps", self.intra.per_flow_mbps);
        put("inter_per_flow_mbps", self.inter.per_flow_mbps);
        put("intra_rtt_ms", self.intra.rtt_ms);
        put("inter_rtt_ms", self.inter.rtt_ms);
        put("queue_mean_kb", self.queue_mean_kb);
        put("queue_p99_kb", self.queue_p99_kb);
        put("drops", Some(self.drops as f64));
        put("retransmits", Some(self.retransmits as f64));
        put("fct_failed", Some(self.fct_failed as f64));
        for p in &self.phases {
            // ("phase 6-14 s ...": the span as the report prints it.)
            let span = format!("phase {}-{} s", p.from_s, p.to_s);
            put(&format!("{span} long_mbps"), p.long_mbps);
            put(&format!("{span} stuck"), p.stuck.map(|n| n as f64));
            if p.fct_n > 0 {
                put(&format!("{span} fct_mean_ms"), p.fct_mean_ms);
                put(&format!("{span} fct_p99_ms"), p.fct_p99_ms);
                put(&format!("{span} fct_failed"), Some(p.fct_failed as f64));
            }
            for (port, v) in &p.ports {
                put(&format!("{span} util {port}"), Some(v.util));
            }
        }
        for r in &self.fct {
            let key = format!("{} {} {}", r.kind, r.class, r.size);
            put(&format!("fct_n {key}"), Some(r.n as f64));
            put(&format!("fct_mean_ms {key}"), r.mean_ms);
            put(&format!("fct_p99_ms {key}"), r.p99_ms);
        }
        m
    }
}

/// The series a report plots, per flow id: rate per [`BIN_S`] bin (bit/s),
/// RTT (ms) and cwnd per sample; Jain per bin; the bottleneck's samples.
#[derive(Clone, Debug, Serialize)]
pub struct TimeSeries {
    pub rates: BTreeMap<String, Vec<(f64, f64)>>,
    pub jain: Vec<(f64, Option<f64>)>,
    pub queue: Vec<Row<5>>,
    pub rtt: BTreeMap<String, Vec<(f64, f64)>>,
    pub cwnd: BTreeMap<String, Vec<(f64, f64)>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub metrics: Metrics,
    pub series: TimeSeries,
}

/// The steady window (from, to) in seconds: the second half of the period
/// when every long flow runs.
pub fn steady_window(flows: &[Flow], duration_s: f64) -> (f64, f64) {
    let longs: Vec<&Flow> = flows.iter().filter(|f| f.kind == "long").collect();
    if longs.is_empty() {
        return (duration_s / 2.0, duration_s);
    }
    let a = longs.iter().map(|f| f.start_s).fold(f64::NEG_INFINITY, f64::max);
    let b = longs.iter().map(|f| f.stop_s).fold(duration_s, f64::min);
    (a + (b - a) / 2.0, b)
}

/// A flow's samples up to where its cumulative byte counter falls: after the
/// connection closes, a late sample can match another socket on the same
/// ports (iperf3's control connection, a new one), whose counter starts
/// from 0 and would read as a negative rate.
fn flow_samples(run: &Run, id: u64) -> &[Row<5>] {
    let s = run.samples.get(&id.to_string()).map_or(&[][..], |v| &v[..]);
    let end = (1..s.len()).find(|&k| s[k].0[1] < s[k - 1].0[1]).unwrap_or(s.len());
    &s[..end]
}

/// A cumulative counter (column `col`) at time `t`, linear between samples:
/// 0 before the first sample, the last value after the last.
fn interp(s: &[Row<5>], col: usize, t: f64) -> f64 {
    let (Some(first), Some(last)) = (s.first(), s.last()) else { return 0.0 };
    if t < first.t() {
        return 0.0;
    }
    if t >= last.t() {
        return last.0[col];
    }
    // First sample after t (exists: t < last.t()), and the one before it.
    let hi = s.partition_point(|r| r.t() <= t);
    let (a, b) = (&s[hi - 1], &s[hi]);
    if b.t() > a.t() {
        a.0[col] + (b.0[col] - a.0[col]) * (t - a.t()) / (b.t() - a.t())
    } else {
        b.0[col]
    }
}

/// [(bin start, bit/s)] from cumulative bytes acked, bins of `bin_s` up to `t_end`.
fn rate_series(s: &[Row<5>], t_end: f64, bin_s: f64) -> Vec<(f64, f64)> {
    (0..)
        .map(|k| k as f64 * bin_s)
        .take_while(|t| t + bin_s <= t_end + 1e-9)
        .map(|t| (t, (interp(s, 1, t + bin_s) - interp(s, 1, t)) * 8.0 / bin_s))
        .collect()
}

/// Every port's samples with the backlog column holding the port's queue:
/// where the port emulates a propagation delay `d` (netem's delay line in
/// front of the rate limiter, on WAN border ports), its backlog also holds
/// the packets still in flight on the emulated wire. Those are the bytes
/// that arrived in the last `d`; the queue is what arrived before that and
/// is not sent yet, `A(t - d) - S(t)`, where arrivals `A` = sent `S` +
/// backlog (linear between samples; none before the first sample).
pub fn queues(run: &Run) -> BTreeMap<String, Vec<Row<5>>> {
    let delay_s = |name: &str| {
        run.ports.iter().find(|p| format!("{}:{}", p.ns, p.dev) == name).and_then(|p| p.delay_us).map_or(0.0, |d| d / 1e6)
    };
    run.queues
        .iter()
        .map(|(name, rows)| {
            let d = delay_s(name);
            if d <= 0.0 {
                return (name.clone(), rows.clone());
            }
            // Cumulative arrivals in column 1 so `interp` can read them.
            let arrivals: Vec<Row<5>> = rows.iter().map(|r| Row([r.t(), r.0[3] + r.0[1], 0.0, 0.0, 0.0])).collect();
            let waiting = rows
                .iter()
                .map(|r| {
                    let q = (interp(&arrivals, 1, r.t() - d) - r.0[3]).clamp(0.0, r.0[1]);
                    let pkts = if r.0[1] > 0.0 { (r.0[2] * q / r.0[1]).round() } else { 0.0 };
                    Row([r.t(), q, pkts, r.0[3], r.0[4]])
                })
                .collect();
            (name.clone(), waiting)
        })
        .collect()
}

/// A port's samples inside [from, to].
fn port_samples<'a>(queues: &'a BTreeMap<String, Vec<Row<5>>>, port: &str, from: f64, to: f64) -> Vec<&'a Row<5>> {
    queues.get(port).map_or(Vec::new(), |q| q.iter().filter(|r| from <= r.t() && r.t() <= to).collect())
}

/// Utilization of a port from its samples: None with fewer than two of
/// them or an unknown rate.
fn utilization(run: &Run, port: &str, qs: &[&Row<5>]) -> Option<f64> {
    let rate = run.port_rates_mbit.get(port).copied().flatten().filter(|r| *r > 0.0)?;
    let (first, last) = (qs.first()?, qs.last()?);
    (last.t() > first.t()).then(|| (last.0[3] - first.0[3]) * 8.0 / ((last.t() - first.t()) * rate * 1e6))
}

/// Mean and p99 backlog (kB) of a port's samples.
fn queue_kb(qs: &[&Row<5>]) -> (Option<f64>, Option<f64>) {
    let kb: Vec<f64> = qs.iter().map(|r| r.0[1] / 1000.0).collect();
    (mean(&kb), percentile(&kb, 99.0))
}

/// Per-port utilization and queue in each phase of the run: the periods
/// between consecutive long-flow (and cross-traffic) starts and stops and
/// the run's events (phases shorter than 1 s are skipped), each measured
/// over its second half like the steady window, with the long flows'
/// summed throughput and the stuck ones. For experiments whose claim is per
/// phase (flows joining or finishing, a link failing).
pub fn phases(run: &Run) -> Vec<Phase> {
    phases_of(run, &queues(run))
}

fn phases_of(run: &Run, queues: &BTreeMap<String, Vec<Row<5>>>) -> Vec<Phase> {
    let dur = run.duration_s;
    let longs: Vec<&Flow> = run.flows.iter().filter(|f| f.kind == "long").collect();
    let mut cuts = vec![0.0, dur];
    cuts.extend(
        run.flows
            .iter()
            .filter(|f| f.kind == "long" || f.kind == "cross")
            .flat_map(|f| [f.start_s, f.stop_s])
            .chain(run.events.iter().map(|e| e.at_s))
            .map(|x| x.clamp(0.0, dur.max(0.0))),
    );
    cuts.sort_by(|a, b| a.total_cmp(b));
    cuts.dedup();
    let bottleneck_bps = run.port_rates_mbit.get(&run.bottleneck).copied().flatten().map(|r| r * 1e6);
    cuts.windows(2)
        .filter(|w| w[1] - w[0] >= 1.0)
        .map(|w| {
            let (a, b) = (w[0], w[1]);
            let mid = a + (b - a) / 2.0;
            let through: Vec<&&Flow> = longs.iter().filter(|f| f.start_s <= a && f.stop_s >= b).collect();
            let rates: Vec<f64> = through
                .iter()
                .filter_map(|f| {
                    let s = flow_samples(run, f.id);
                    let end = b.min(s.last()?.t());
                    (end > mid).then(|| (interp(s, 1, end) - interp(s, 1, mid)) * 8.0 / (end - mid))
                })
                .collect();
            let sized: Vec<&Fct> = run.fct.iter().filter(|f| f.at_s.is_some_and(|t| a <= t && t < b)).collect();
            let done_ms: Vec<f64> = sized.iter().filter(|f| f.ok).filter_map(|f| f.fct_s).map(|s| s * 1000.0).collect();
            Phase {
                from_s: a,
                to_s: b,
                flows: through.iter().map(|f| f.id).collect(),
                ports: queues
                    .keys()
                    .filter_map(|p| {
                        let qs = port_samples(queues, p, mid, b);
                        let (queue_mean_kb, queue_p99_kb) = queue_kb(&qs);
                        Some((p.clone(), PortPhase { util: utilization(run, p, &qs)?, queue_mean_kb, queue_p99_kb }))
                    })
                    .collect(),
                fct_n: sized.len(),
                fct_mean_ms: mean(&done_ms),
                fct_p99_ms: percentile(&done_ms, 99.0),
                fct_failed: sized.iter().filter(|f| !f.ok).count(),
                long_mbps: (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / 1e6),
                stuck: bottleneck_bps.filter(|_| !rates.is_empty()).map(|r| rates.iter().filter(|&&x| x < STUCK_FRAC * r).count()),
            }
        })
        .collect()
}

/// Per traffic kind, path class and size class: count, mean and p99 FCT (ms)
/// of the completed flows, in the order kind, class, size.
fn fct_table(fct: &[Fct]) -> Vec<FctRow> {
    let order = |name: &str| SIZE_CLASSES.iter().position(|c| c.2 == name).unwrap_or(SIZE_CLASSES.len());
    let mut groups: BTreeMap<(String, String, usize), Vec<f64>> = BTreeMap::new();
    for f in fct.iter().filter(|f| f.ok) {
        let Some(s) = f.fct_s else { continue };
        groups.entry((f.kind.clone(), f.class.clone(), order(size_class(f.size)))).or_default().push(s * 1000.0);
    }
    groups
        .into_iter()
        .map(|((kind, class, sc), v)| FctRow {
            kind,
            class,
            size: SIZE_CLASSES[sc.min(SIZE_CLASSES.len() - 1)].2.to_string(),
            n: v.len(),
            mean_ms: mean(&v),
            p99_ms: percentile(&v, 99.0),
        })
        .collect()
}

/// Every metric of one run, plus the time series a report plots.
pub fn analyze(run: &Run) -> Analysis {
    let dur = run.duration_s;
    let (t_a, t_b) = steady_window(&run.flows, dur);
    let longs: Vec<&Flow> = run.flows.iter().filter(|f| f.kind == "long").collect();

    let mut rates = BTreeMap::new();
    let mut mean_rate: BTreeMap<u64, f64> = BTreeMap::new();
    let mut flow_rtt: BTreeMap<u64, Option<f64>> = BTreeMap::new();
    let (mut rtt_series, mut cwnd_series) = (BTreeMap::new(), BTreeMap::new());
    for f in &run.flows {
        let s = flow_samples(run, f.id);
        rates.insert(f.id.to_string(), rate_series(s, dur, BIN_S));
        if let Some(last) = s.last() {
            // (To the last sample if the flow's samples end early.)
            let t_end = t_b.min(last.t());
            if t_end > t_a {
                mean_rate.insert(f.id, (interp(s, 1, t_end) - interp(s, 1, t_a)) * 8.0 / (t_end - t_a));
            }
        }
        let rtts: Vec<f64> = s.iter().filter(|r| t_a <= r.t() && r.t() <= t_b && r.0[3] > 0.0).map(|r| r.0[3] / 1000.0).collect();
        flow_rtt.insert(f.id, percentile(&rtts, 50.0));
        rtt_series.insert(f.id.to_string(), s.iter().map(|r| (r.t(), r.0[3] / 1000.0)).collect());
        cwnd_series.insert(f.id.to_string(), s.iter().map(|r| (r.t(), r.0[2])).collect());
    }

    // Jain over time: per bin, the flows active for the whole bin.
    let n_bins = rates.values().map(Vec::len).max().unwrap_or(0);
    let jain_series: Vec<(f64, Option<f64>)> = (0..n_bins)
        .map(|k| {
            let t = k as f64 * BIN_S;
            let act: Vec<f64> = run
                .flows
                .iter()
                .filter(|f| f.start_s <= t && t + BIN_S <= f.stop_s)
                .filter_map(|f| rates[&f.id.to_string()].get(k).map(|r| r.1))
                .collect();
            (t, if act.len() >= 2 { jain(&act) } else { None })
        })
        .collect();
    let t_all = longs.iter().map(|f| f.start_s).fold(0.0, f64::max);

    let queues = queues(run);
    let qs = port_samples(&queues, &run.bottleneck, t_a, t_b);
    let (queue_mean_kb, queue_p99_kb) = queue_kb(&qs);
    let class = |c: &str| {
        let ids: Vec<u64> = longs.iter().filter(|f| f.class == c).map(|f| f.id).collect();
        let vals: Vec<f64> = ids.iter().filter_map(|i| mean_rate.get(i).copied()).collect();
        let rtts: Vec<f64> = ids.iter().filter_map(|i| flow_rtt.get(i).copied().flatten()).collect();
        ClassStats {
            n: ids.len(),
            sum_mbps: (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / 1e6),
            per_flow_mbps: mean(&vals).map(|v| v / 1e6),
            rtt_ms: mean(&rtts),
        }
    };
    let (intra, inter) = (class("intra"), class("inter"));
    let counter = |v: f64| v.max(0.0).round() as u64;
    let drops_by_port: BTreeMap<String, u64> = run
        .queues
        .iter()
        .map(|(p, v)| (p.clone(), match (v.first(), v.last()) {
            (Some(a), Some(b)) if v.len() >= 2 => counter(b.0[4] - a.0[4]),
            _ => 0,
        }))
        .collect();
    let retransmits = longs.iter().map(|f| counter(flow_samples(run, f.id).iter().map(|r| r.0[4]).fold(0.0, f64::max))).sum();
    let inter_intra_ratio = match (inter.per_flow_mbps, intra.per_flow_mbps) {
        (Some(i), Some(a)) if i != 0.0 && a != 0.0 => Some(i / a),
        _ => None,
    };
    let rates_of_all: Vec<f64> = longs.iter().filter_map(|f| mean_rate.get(&f.id).copied()).collect();
    let metrics = Metrics {
        run_id: run.run_id.clone(),
        cc: run.cc.clone(),
        label: run.label.clone(),
        steady_from_s: t_a,
        steady_to_s: t_b,
        utilization: utilization(run, &run.bottleneck, &qs),
        jain: if rates_of_all.len() >= 2 { jain(&rates_of_all) } else { None },
        convergence_s: if longs.len() >= 2 { convergence(&jain_series, t_all, CONVERGED_JAIN) } else { None },
        queue_mean_kb,
        queue_p99_kb,
        drops: drops_by_port.get(&run.bottleneck).copied().unwrap_or(0),
        drops_by_port,
        retransmits,
        intra,
        inter,
        inter_intra_ratio,
        flow_mbps: mean_rate.iter().map(|(i, v)| (i.to_string(), v / 1e6)).collect(),
        phases: phases_of(run, &queues),
        flow_rtt_ms: flow_rtt.iter().map(|(i, v)| (i.to_string(), *v)).collect(),
        fct: fct_table(&run.fct),
        fct_count: run.fct.len(),
        fct_failed: run.fct.iter().filter(|f| !f.ok && !f.unfinished).count() as u64 + run.fct_unfinished,
        guest_cpu_busy: run.cpu.as_ref().and_then(|c| c.busy),
        sample_gap_max_ms: run.sample_gaps_ms.as_ref().and_then(|g| g.max),
    };
    let series = TimeSeries {
        rates,
        jain: jain_series,
        queue: queues.get(&run.bottleneck).cloned().unwrap_or_default(),
        rtt: rtt_series,
        cwnd: cwnd_series,
    };
    Analysis { metrics, series }
}
