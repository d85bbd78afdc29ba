//! xdcc-sim: a seeded packet-level simulator of queues in series that runs
//! the xdcc algorithm files (`kmods/algo`) unchanged.
//!
//! ```no_run
//! let sc = xdcc_sim::Scenario::from_file("testbed/scenarios/rtt-fairness.toml".as_ref())?;
//! for report in xdcc_sim::run_all(&sc)? {
//!     println!("{}: Jain {:?}", report.cc, report.jain_final);
//! }
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod cc;
pub mod metrics;
pub mod plan;
pub mod port;
mod rng;
pub mod scenario;
pub mod sim;
pub mod testbed;
pub mod testbed_plan;
pub mod topology;

use std::path::Path;

use anyhow::{Context, Result};

pub use cc::CcKind;
pub use metrics::{FlowReport, QueueReport, RunReport};
pub use scenario::LbSpec;
pub use xdcc_metrics::{jain, mean_ci95};
pub use scenario::Scenario;
pub use sim::{Series, CLOCK_BASE_NS};

/// Runs the scenario once with `kind` as the default algorithm.
pub fn run(sc: &Scenario, kind: CcKind) -> Result<RunReport> {
    let t0 = std::time::Instant::now();
    let mut sim = sim::Sim::new(sc, kind)?;
    sim.run();
    let wall = t0.elapsed().as_secs_f64();
    let window = (sc.fairness_window_ms * 1e6).round() as u64;
    Ok(metrics::report(&sim, &sc.name, kind.name(), window, sc.jain_threshold, wall))
}

/// Runs the scenario once per algorithm listed in `cc`.
pub fn run_all(sc: &Scenario) -> Result<Vec<RunReport>> {
    sc.cc_kinds()?.into_iter().map(|k| run(sc, k)).collect()
}

/// Runs the scenario once per algorithm and per seed (`seed`, `seed + 1`,
/// ... `seed + seeds - 1`): one list of reports per seed.
pub fn run_seeds(sc: &Scenario, seeds: u32) -> Result<Vec<Vec<RunReport>>> {
    (0..seeds as u64)
        .map(|i| {
            let mut s = sc.clone();
            s.seed = sc.seed.wrapping_add(i);
            run_all(&s)
        })
        .collect()
}

/// The table of [`table`] over several seeds: per algorithm and metric, the
/// mean and the half-width of its 95 % confidence interval. `runs[s][c]` is
/// seed `s`'s report for algorithm `c`. Convergence counts only the seeds
/// that converged (`n/N` says how many).
pub fn table_seeds(runs: &[Vec<RunReport>]) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else { return out };
    let groups: Vec<String> = first.first().map(|r| r.group_mean_rate_mbps.keys().cloned().collect()).unwrap_or_default();
    let cell = |x: &[f64], prec: usize| {
        let (m, h) = mean_ci95(x);
        format!("{m:.prec$}±{h:.prec$}")
    };
    out.push_str(&format!(
        "{} seeds, mean ± 95 % interval\n{:<8} {:>12} {:>14} {:>16} {:>14} {:>14} {:>14}",
        runs.len(),
        "cc",
        "util%",
        "jain",
        "conv_ms",
        "qmean_kB",
        "q99_kB",
        "drops"
    ));
    for g in &groups {
        out.push_str(&format!(" {:>16}", format!("{g}_Mbps")));
    }
    out.push('\n');
    for c in 0..first.len() {
        let of = |f: &dyn Fn(&RunReport) -> Option<f64>| runs.iter().filter_map(|seed| seed.get(c).and_then(f)).collect::<Vec<f64>>();
        let conv = of(&|r| r.convergence_ms);
        out.push_str(&format!(
            "{:<8} {:>12} {:>14} {:>16} {:>14} {:>14} {:>14}",
            first[c].cc,
            cell(&of(&|r| r.queues.first().map(|q| q.utilization * 100.0)), 1),
            cell(&of(&|r| r.jain_final), 3),
            if conv.is_empty() { "never".to_string() } else { format!("{} {}/{}", cell(&conv, 0), conv.len(), runs.len()) },
            cell(&of(&|r| r.queues.first().map(|q| q.mean_qlen_kb)), 1),
            cell(&of(&|r| r.queues.first().map(|q| q.p99_qlen_kb)), 1),
            cell(&of(&|r| Some(r.queues.iter().map(|q| q.drops).sum::<u64>() as f64)), 0),
        ));
        for g in &groups {
            out.push_str(&format!(" {:>16}", cell(&of(&|r| r.group_mean_rate_mbps.get(g).copied()), 1)));
        }
        out.push('\n');
    }
    out
}

/// Writes `<dir>/<cc>/summary.json` and `<dir>/<cc>/timeseries.csv`.
pub fn write_report(dir: &Path, r: &RunReport) -> Result<()> {
    let d = dir.join(&r.cc);
    std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
    std::fs::write(d.join("summary.json"), serde_json::to_string_pretty(r)?)?;
    std::fs::write(d.join("timeseries.csv"), r.series_csv())?;
    Ok(())
}

/// A small human-readable table of runs.
pub fn table(reports: &[RunReport]) -> String {
    let mut out = String::new();
    let groups: Vec<String> = reports.first().map(|r| r.group_mean_rate_mbps.keys().cloned().collect()).unwrap_or_default();
    out.push_str(&format!("{:<8} {:>6} {:>9} {:>9} {:>10} {:>9} {:>7}", "cc", "util%", "jain", "conv_ms", "qmean_kB", "q99_kB", "drops"));
    for g in &groups {
        out.push_str(&format!(" {:>12}", format!("{g}_Mbps")));
    }
    out.push('\n');
    for r in reports {
        // (The first queue: the bottleneck of queues in series, the first
        // border link of a routed network; a fat tree reports none.)
        let q = |f: fn(&QueueReport) -> f64, prec: usize| r.queues.first().map_or("-".into(), |q| format!("{:.prec$}", f(q)));
        out.push_str(&format!(
            "{:<8} {:>6} {:>9} {:>9} {:>10} {:>9} {:>7}",
            r.cc,
            q(|q| q.utilization * 100.0, 1),
            r.jain_final.map_or("-".into(), |j| format!("{j:.3}")),
            r.convergence_ms.map_or("never".into(), |c| format!("{c:.0}")),
            q(|q| q.mean_qlen_kb, 1),
            q(|q| q.p99_qlen_kb, 1),
            r.queues.iter().map(|q| q.drops).sum::<u64>(),
        ));
        for g in &groups {
            out.push_str(&format!(" {:>12.1}", r.group_mean_rate_mbps.get(g).copied().unwrap_or(0.0)));
        }
        out.push('\n');
    }
    // Sized flows: completion times per group.
    for r in reports {
        for g in &groups {
            let sized: Vec<&FlowReport> = r.flows.iter().filter(|f| &f.group == g && f.size_kb.is_some()).collect();
            if sized.is_empty() {
                continue;
            }
            let fct: Vec<f64> = sized.iter().filter_map(|f| f.fct_ms).collect();
            let (mean, p99) = (xdcc_metrics::mean(&fct), xdcc_metrics::percentile(&fct, 99.0));
            out.push_str(&format!(
                "{:<8} fct {g}: {}/{} done, mean {} ms, p99 {} ms\n",
                r.cc,
                fct.len(),
                sized.len(),
                mean.map_or("-".into(), |m| format!("{m:.3}")),
                p99.map_or("-".into(), |m| format!("{m:.3}")),
            ));
        }
    }
    out
}
