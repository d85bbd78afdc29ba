//! What a run produced: utilization, queues, per-flow rates and completion
//! times, Jain's fairness index over time and convergence time.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use xdcc_metrics::{convergence, jain, percentile};

use crate::sim::{Series, Sim};

#[derive(Clone, Debug, Serialize)]
pub struct QueueReport {
    pub name: String,
    pub rate_mbit: f64,
    /// Bytes transmitted / (line rate × measured time).
    pub utilization: f64,
    pub mean_qlen_kb: f64,
    pub p99_qlen_kb: f64,
    pub max_qlen_kb: f64,
    pub drops: u64,
    /// Packets a failed link swallowed (part of `drops`).
    #[serde(skip_serializing_if = "is_zero")]
    pub blackholed: u64,
    pub marks: u64,
    /// Fraction of enqueued packets that got a CE mark here.
    pub mark_frac: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct FlowReport {
    pub name: String,
    pub group: String,
    pub cc: String,
    pub rtt_us: f64,
    pub start_ms: f64,
    /// Size of a sized flow (its data; UnoRC's parity not counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_kb: Option<f64>,
    /// Completion time for sized flows.
    pub fct_ms: Option<f64>,
    pub delivered_mb: f64,
    /// Mean goodput over the measured interval.
    pub mean_rate_mbps: f64,
    pub final_cwnd_kb: f64,
    pub losses: u64,
    pub rtos: u64,
    pub marked_ack_frac: f64,
    /// Packets declared lost and delivered after all (reordering).
    #[serde(skip_serializing_if = "is_zero")]
    pub spurious: u64,
    /// Routed flows: the hosts, the load balancer's moves, UnoRC's NACKs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lb_entropy_changes: Option<u32>,
    #[serde(skip_serializing_if = "is_zero")]
    pub nacks: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub scenario: String,
    pub cc: String,
    pub duration_ms: f64,
    pub measure_from_ms: f64,
    pub queues: Vec<QueueReport>,
    pub flows: Vec<FlowReport>,
    /// Mean goodput per flow group over the measured interval.
    pub group_mean_rate_mbps: BTreeMap<String, f64>,
    /// Mean Jain index over the last fifth of the run.
    pub jain_final: Option<f64>,
    /// Jain's index of the flows' mean rates over the measured interval
    /// (from `measure_from_ms`): the testbed report's `jain` (its steady
    /// state is the second half), so model and kernel compare like for like.
    /// Only flows that ran for the whole interval count.
    pub jain_of_means: Option<f64>,
    /// Time from the last change of the set of active flows until Jain's index
    /// reached the threshold and stayed there to the end of the run.
    pub convergence_ms: Option<f64>,
    pub jain_threshold: f64,
    pub fairness_window_ms: f64,
    /// Simulator cost: events, packets, wall time and simulated packets/s.
    pub events: u64,
    pub packets: u64,
    pub wall_s: f64,
    pub sim_packets_per_sec: f64,
    /// Sampling period of `samples` (ns), and the fairness window in samples.
    #[serde(skip)]
    pub sample_ns: u64,
    #[serde(skip)]
    pub window_samples: usize,
    #[serde(skip)]
    pub jain_series: Vec<(f64, Option<f64>)>,
    /// The raw samples (per sample, per flow / per queue).
    #[serde(skip)]
    pub samples: Series,
    /// Flow names in the order of `samples`' inner vectors.
    #[serde(skip)]
    pub flow_names: Vec<String>,
}

pub(crate) fn report(
    sim: &Sim,
    scenario: &str,
    cc: &str,
    fairness_window_ns: u64,
    jain_threshold: f64,
    wall_s: f64,
) -> RunReport {
    let s = &sim.series;
    let n = s.t_ns.len();
    let end = sim.measure_to_ns();
    let from = sim.measure_from_ns();
    let measured_ns = end.saturating_sub(from).max(1) as f64;
    let w = ((fairness_window_ns / sim.sample_ns()).max(1)) as usize;

    // Jain's index per sample, over flows active through the whole window.
    let mut jain_series = Vec::with_capacity(n);
    for k in 0..n {
        let v = if k >= w {
            let rates: Vec<f64> = (0..sim.flows.len())
                .filter(|&i| s.active[k][i] && s.active[k - w][i])
                .map(|i| (s.delivered[k][i] - s.delivered[k - w][i]) as f64)
                .collect();
            if rates.len() >= 2 {
                jain(&rates)
            } else {
                None
            }
        } else {
            None
        };
        jain_series.push((s.t_ns[k] as f64 / 1e6, v));
    }

    // Convergence (`xdcc_metrics::convergence`, the testbed's definition):
    // from the last change in the active set to the start of the first
    // window after the last one below the threshold; windows are labelled
    // by their start here, and only those starting after the change count.
    let last_change = (1..n).rev().find(|&k| s.active[k] != s.active[k - 1]).unwrap_or(0);
    let window_ms = (w as u64 * sim.sample_ns()) as f64 / 1e6;
    let by_start: Vec<(f64, Option<f64>)> = jain_series.iter().skip(w).map(|&(t, j)| (t - window_ms, j)).collect();
    let conv = if n > 0 { convergence(&by_start, s.t_ns[last_change] as f64 / 1e6, jain_threshold) } else { None };
    let tail: Vec<f64> = jain_series[n - n / 5..].iter().filter_map(|(_, j)| *j).collect();
    let jain_final = if tail.is_empty() { None } else { Some(tail.iter().sum::<f64>() / tail.len() as f64) };

    let k_from = s.t_ns.iter().position(|&t| t >= from).unwrap_or(0);
    // Samples inside the measured interval: [k_from, k_to).
    let k_to = s.t_ns.iter().position(|&t| t > end).unwrap_or(n).max(k_from);
    let queues = sim
        .reported_queues()
        .enumerate()
        .map(|(ri, (qi, q))| {
            let lens: Vec<f64> = s.qlen[k_from..k_to].iter().map(|v| v[ri] as f64 / 1000.0).collect();
            let mean = lens.iter().sum::<f64>() / lens.len().max(1) as f64;
            let max = lens.iter().cloned().fold(0.0, f64::max);
            QueueReport {
                name: q.name.clone(),
                rate_mbit: sim.link_rate_bps(qi) / 1e6,
                utilization: q.tx_bytes_measured as f64 * 8.0 / (sim.link_rate_bps(qi) * measured_ns / 1e9),
                mean_qlen_kb: mean,
                p99_qlen_kb: percentile(&lens, 99.0).unwrap_or(0.0),
                max_qlen_kb: max,
                drops: q.drops,
                blackholed: q.blackholed,
                marks: q.marks,
                mark_frac: q.marks as f64 / q.enqueued.max(1) as f64,
            }
        })
        .collect();

    let flows: Vec<FlowReport> = sim
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let d_from = if n > 0 { s.delivered[k_from][i] } else { 0 };
            // Delivered at the end of the measured interval: the last sample
            // inside it when the interval ends before the run does.
            let d_to = if end < sim.end_ns && k_to > 0 { s.delivered[k_to - 1][i] } else { f.delivered };
            FlowReport {
                name: f.name.clone(),
                group: f.group.clone(),
                cc: f.kind.name().to_string(),
                rtt_us: f.rtt_ns as f64 / 1e3,
                start_ms: f.start_ns as f64 / 1e6,
                size_kb: f.data_bytes.map(|b| b as f64 / 1e3),
                fct_ms: f.finish_ns.map(|t| (t - f.start_ns) as f64 / 1e6),
                delivered_mb: f.delivered as f64 / 1e6,
                mean_rate_mbps: d_to.saturating_sub(d_from) as f64 * 8.0 / measured_ns * 1e3,
                final_cwnd_kb: f.cwnd() as f64 / 1000.0,
                losses: f.losses,
                rtos: f.rtos,
                marked_ack_frac: f.marked_acks as f64 / f.acks.max(1) as f64,
                spurious: f.spurious,
                hosts: sim.hosts_of(i),
                lb_entropy_changes: f.lb_moves().map(|m| m.entropies),
                nacks: f.nacks(),
            }
        })
        .collect();
    let mut group_mean_rate_mbps = BTreeMap::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for f in &flows {
        *group_mean_rate_mbps.entry(f.group.clone()).or_insert(0.0) += f.mean_rate_mbps;
        *counts.entry(f.group.clone()).or_insert(0) += 1;
    }
    for (g, v) in group_mean_rate_mbps.iter_mut() {
        *v /= counts[g] as f64;
    }

    let whole: Vec<f64> = sim
        .flows
        .iter()
        .zip(&flows)
        .filter(|(f, _)| f.start_ns <= from && f.stop_ns.map_or(true, |t| t >= end) && f.finish_ns.map_or(true, |t| t >= end))
        .map(|(_, r)| r.mean_rate_mbps)
        .collect();
    let jain_of_means = jain(&whole);

    RunReport {
        scenario: scenario.to_string(),
        cc: cc.to_string(),
        duration_ms: end as f64 / 1e6,
        measure_from_ms: from as f64 / 1e6,
        queues,
        flows,
        group_mean_rate_mbps,
        jain_final,
        jain_of_means,
        convergence_ms: conv,
        jain_threshold,
        fairness_window_ms: fairness_window_ns as f64 / 1e6,
        events: sim.events,
        packets: sim.packets_sent,
        wall_s,
        sim_packets_per_sec: sim.packets_sent as f64 / wall_s.max(1e-9),
        sample_ns: sim.sample_ns(),
        window_samples: w,
        jain_series,
        samples: sim.series.clone(),
        flow_names: sim.flows.iter().map(|f| f.name.clone()).collect(),
    }
}

impl RunReport {
    /// The time series as CSV (`timeseries.csv`): per sample, Jain's index,
    /// every reported queue's length and every flow's rate, window, RTT and
    /// pacing rate. Built on demand: it is most of a big run's report cost.
    pub fn series_csv(&self) -> String {
        series_csv(self)
    }
}

fn series_csv(r: &RunReport) -> String {
    let (s, jain, w) = (&r.samples, &r.jain_series, r.window_samples);
    let mut out = String::from("t_ms,jain");
    for q in &r.queues {
        let _ = write!(out, ",qlen_kb_{}", q.name);
    }
    for f in &r.flow_names {
        let _ = write!(out, ",rate_mbps_{0},cwnd_kb_{0},rtt_us_{0},pacing_mbps_{0}", f);
    }
    out.push('\n');
    let dt = r.sample_ns as f64;
    for k in 0..s.t_ns.len() {
        let _ = write!(out, "{:.3},{}", s.t_ns[k] as f64 / 1e6, jain[k].1.map_or(String::new(), |j| format!("{j:.4}")));
        for v in &s.qlen[k] {
            let _ = write!(out, ",{:.1}", *v as f64 / 1000.0);
        }
        for i in 0..r.flow_names.len() {
            let back = k.min(w.min(k));
            let rate = if k > 0 {
                (s.delivered[k][i] - s.delivered[k - back.max(1)][i]) as f64 * 8.0 / (dt * back.max(1) as f64) * 1e3
            } else {
                0.0
            };
            let _ = write!(
                out,
                ",{:.2},{:.1},{:.1},{:.2}",
                rate,
                s.cwnd[k][i] as f64 / 1000.0,
                s.rtt[k][i] as f64 / 1000.0,
                s.pacing[k][i] as f64 * 8.0 / 1e6
            );
        }
        out.push('\n');
    }
    out
}
