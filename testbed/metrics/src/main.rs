//! The testbed report's numbers, computed by the `xdcc-metrics` crate (the
//! same code the simulator's predictions use), for `testbed/runner/report.py`:
//!
//! * `xdcc-metrics analyze RAW.json...`: every metric of testbed runs (the
//!   raw JSON files `guest.py` writes) as one JSON document on stdout,
//!   `{"definitions": {...}, "runs": [{"metrics": {...}, "series": {...}}]}`.
//! * `xdcc-metrics interval`: reads `{"name": [values...], ...}` on stdin and
//!   writes `{"name": {"mean", "ci95", "n"}, ...}`: the mean and the 95 %
//!   interval over repetitions (nulls skipped).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use serde::Serialize;

#[derive(Parser)]
#[command(version, about = "Metrics of testbed runs, one definition shared with xdcc-sim")]
enum Command {
    /// Every metric and time series of raw runs (OUT/raw/<run>.json from testbed/runner/guest.py).
    Analyze {
        /// Raw run files.
        #[arg(required = true)]
        raw: Vec<PathBuf>,
        /// Metrics only, without the time series.
        #[arg(long)]
        no_series: bool,
    },
    /// Mean and 95 % interval (Student's t) per named list of values: JSON object on stdin.
    Interval,
}

#[derive(Serialize)]
struct Interval {
    mean: Option<f64>,
    ci95: Option<f64>,
    n: usize,
}

#[derive(Serialize)]
struct Definitions {
    bin_s: f64,
    converged_jain: f64,
    size_classes: Vec<&'static str>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum RunOut {
    Full(xdcc_metrics::Analysis),
    Metrics { metrics: xdcc_metrics::Metrics },
}

#[derive(Serialize)]
struct Output {
    definitions: Definitions,
    runs: Vec<RunOut>,
}

fn main() -> Result<()> {
    let out = match Command::parse() {
        Command::Analyze { raw, no_series } => serde_json::to_value(analyze(&raw, no_series)?)?,
        Command::Interval => {
            let input: BTreeMap<String, Vec<Option<f64>>> = serde_json::from_reader(std::io::stdin().lock())
                .context("stdin: expected a JSON object of arrays of numbers")?;
            let out: BTreeMap<String, Interval> = input
                .into_iter()
                .map(|(k, v)| {
                    let x: Vec<f64> = v.into_iter().flatten().collect();
                    let (mean, hw) = xdcc_metrics::mean_ci95(&x);
                    (k, if x.is_empty() { Interval { mean: None, ci95: None, n: 0 } } else { Interval { mean: Some(mean), ci95: Some(hw), n: x.len() } })
                })
                .collect();
            serde_json::to_value(out)?
        }
    };
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &out)?;
    stdout.write_all(b"\n")?;
    Ok(())
}

fn analyze(paths: &[PathBuf], no_series: bool) -> Result<Output> {
    let mut runs = Vec::with_capacity(paths.len());
    for p in paths {
        let text = std::fs::read(p).with_context(|| format!("{}: cannot read", p.display()))?;
        let run: xdcc_metrics::Run =
            serde_json::from_slice(&text).with_context(|| format!("{}: not a testbed run record", p.display()))?;
        let a = xdcc_metrics::analyze(&run);
        runs.push(if no_series { RunOut::Metrics { metrics: a.metrics } } else { RunOut::Full(a) });
    }
    Ok(Output {
        definitions: Definitions {
            bin_s: xdcc_metrics::BIN_S,
            converged_jain: xdcc_metrics::CONVERGED_JAIN,
            size_classes: xdcc_metrics::SIZE_CLASSES.iter().map(|c| c.2).collect(),
        },
        runs,
    })
}
