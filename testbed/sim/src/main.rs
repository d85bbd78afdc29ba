//! `xdcc-sim run <scenario.toml> [--cc uno,gemini] [--seeds N] [--out DIR]`:
//! simulate and print a table; writes JSON and CSV per algorithm (and seed)
//! when `--out` is given.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "xdcc-sim", version, about = "Packet-level simulator for the xdcc congestion controls")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario file and print a summary table.
    Run {
        scenario: PathBuf,
        /// Algorithms to run, overriding the file's `cc` list (comma separated).
        #[arg(long, value_delimiter = ',')]
        cc: Vec<String>,
        /// Directory for summary.json and timeseries.csv per algorithm.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the JSON summaries instead of the table.
        #[arg(long)]
        json: bool,
        /// Override a tunable: `--set amrt.spare_increase=0` (repeatable;
        /// the same as `[params.amrt] spare_increase = 0` in the file).
        #[arg(long, value_name = "CC.NAME=VALUE")]
        set: Vec<String>,
        /// Repeat with this many seeds (the file's `seed` and the ones after
        /// it) and print mean ± 95 % interval per metric.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
        seeds: u32,
    },
    /// Check a scenario file and print it back normalized.
    Check { scenario: PathBuf },
}

fn main() {
    // One line per error (its causes joined), whatever RUST_BACKTRACE says.
    if let Err(e) = run(Cli::parse()) {
        eprintln!("xdcc-sim: error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Run { scenario, cc, out, json, set, seeds } => {
            let mut sc = xdcc_sim::Scenario::from_file(&scenario)?;
            if !cc.is_empty() {
                sc.cc = cc;
            }
            for kv in &set {
                let (key, value) = kv.split_once('=').ok_or_else(|| anyhow::anyhow!("--set {kv}: expected CC.NAME=VALUE"))?;
                let (cc, name) = key.split_once('.').ok_or_else(|| anyhow::anyhow!("--set {kv}: expected CC.NAME=VALUE"))?;
                let value: u64 = value.parse().map_err(|_| anyhow::anyhow!("--set {kv}: {value:?} is not a non-negative integer"))?;
                sc.params.entry(cc.to_string()).or_default().insert(name.to_string(), value);
            }
            sc.validate()?;
            if seeds > 1 {
                let runs = xdcc_sim::run_seeds(&sc, seeds)?;
                if let Some(dir) = &out {
                    for (i, reports) in runs.iter().enumerate() {
                        for r in reports {
                            xdcc_sim::write_report(&dir.join(format!("seed-{}", sc.seed.wrapping_add(i as u64))), r)?;
                        }
                    }
                }
                if json {
                    println!("{}", serde_json::to_string_pretty(&runs)?);
                } else {
                    println!("scenario {} ({} ms simulated)", sc.name, sc.duration_ms);
                    print!("{}", xdcc_sim::table_seeds(&runs));
                    if let Some(dir) = &out {
                        println!("results: {}", dir.display());
                    }
                }
                return Ok(());
            }
            let reports = xdcc_sim::run_all(&sc)?;
            if let Some(dir) = &out {
                for r in &reports {
                    xdcc_sim::write_report(dir, r)?;
                }
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&reports)?);
            } else {
                println!("scenario {} ({} ms simulated)", sc.name, sc.duration_ms);
                print!("{}", xdcc_sim::table(&reports));
                for r in &reports {
                    eprintln!(
                        "  {}: {} packets in {:.2} s wall = {:.2} M simulated packets/s",
                        r.cc,
                        r.packets,
                        r.wall_s,
                        r.sim_packets_per_sec / 1e6
                    );
                }
                if let Some(dir) = &out {
                    println!("results: {}", dir.display());
                }
            }
        }
        Cmd::Check { scenario } => {
            let sc = xdcc_sim::Scenario::from_file(&scenario)?;
            print!("{}", toml::to_string_pretty(&sc)?);
        }
    }
    Ok(())
}
