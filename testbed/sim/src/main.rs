//! `xdcc-sim run <scenario.toml> [--cc uno,gemini] [--seeds N] [--out DIR]`:
//! simulate and print a table; writes JSON and CSV per algorithm (and seed)
//! when `--out` is given. The scenario (`testbed/scenarios/`) is in the
//! simulator's format (queues and flow groups) or a 2-DC testbed file: the
//! latter runs every `ccs` entry at every sweep point on the model of the
//! testbed's network and prints the numbers the testbed report shows.

use std::path::PathBuf;

use anyhow::{Context, Result};
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
        /// Start a CC from a named tunable preset, before `--set`:
        /// `--preset gemini=uno-artifact` (the same as `[presets]` in the file).
        #[arg(long, value_name = "CC=PRESET")]
        preset: Vec<String>,
        /// Repeat with this many seeds (the file's `seed` and the ones after
        /// it) and print mean ± 95 % interval per metric.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
        seeds: u32,
        /// Run time in seconds, overriding a testbed scenario's `duration_s`
        /// or a simulator scenario's `duration_ms` (its measured interval
        /// then ends at the new end, unless the file sets `measure_to_ms`;
        /// as `testbed/run.sh --duration`).
        #[arg(long, value_name = "S", value_parser = clap::value_parser!(u64).range(1..=3600))]
        duration: Option<u64>,
        /// End hosts' mean ACK delay in µs, overriding a simulator
        /// scenario's `host_delay_us` (testbed/host/run.py gives the model
        /// what it measured on the real hosts).
        #[arg(long, value_name = "US")]
        host_delay_us: Option<f64>,
        /// Load balancer of every routed flow group, overriding the file's:
        /// ecmp, spray, plb (PLB's paper: 50 %, 3 rounds, timeouts),
        /// plb-artifact (the Uno artifact's: 25 %, 2 rounds, timeouts and
        /// NACKs at most once per RTO), unolb, or unolb-recent (UnoLB
        /// skipping subflows silent for half a base RTT: the paper's option,
        /// commented out in the artifact).
        #[arg(long, value_name = "KIND")]
        lb: Option<String>,
        /// Turn UnoRC erasure coding off in every flow group that has it.
        #[arg(long)]
        no_ec: bool,
        /// Border links of an inter-DC topology, overriding the file's (Uno
        /// Fig. 9: 8 = 16:1 oversubscribed, 128 = fully provisioned).
        #[arg(long, value_name = "N")]
        border_links: Option<u32>,
    },
    /// Check a scenario file and print it back normalized.
    Check { scenario: PathBuf },
    /// Print the real-kernel plan of a scenario as JSON, every value
    /// derived. A simulator scenario, for one CC (testbed/host/run.py runs
    /// it on this host's kernel, real servers or the qemu VM): the port,
    /// its eBPF marker and every group's tunables. A 2-DC testbed scenario
    /// (testbed/scenarios/), for each run (CC entry and sweep point):
    /// namespaces, links, routes, every port's profile, markers and
    /// tunables (testbed/runner/guest.py builds it in the VM).
    Plan {
        scenario: PathBuf,
        /// An xdcc CC (run as bpf_<cc>, or as the module tcp_<cc> with
        /// --backend vm) or a kernel CC (cubic, bbr, ...); required for a
        /// simulator scenario. For a testbed scenario: the `ccs` entries to
        /// plan, comma-separated (default: the file's).
        #[arg(long)]
        cc: Option<String>,
        /// Where the plan runs: host and servers run BPF CCs in real time;
        /// vm runs the modules, slowed by --time-scale.
        /// (default: host; a testbed scenario's is vm.)
        #[arg(long, value_parser = ["host", "servers", "vm"])]
        backend: Option<String>,
        /// How many times slower than the scenario the executor runs: every
        /// time times it, every rate divided by it, bytes as they are
        /// (default: 1, and 20 for vm, the qemu guest's).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000))]
        time_scale: Option<u64>,
        /// Override a tunable, as for `run`.
        #[arg(long, value_name = "CC.NAME=VALUE")]
        set: Vec<String>,
        /// Run time in seconds, overriding the scenario's `duration_ms`, as
        /// for `run`.
        #[arg(long, value_name = "S", value_parser = clap::value_parser!(u64).range(1..=3600))]
        duration: Option<u64>,
        /// A testbed scenario's topology key, over its [net] (e.g.
        /// `wan_paths=4`, `dc.rate_mbit=10000`); repeatable.
        #[arg(long, value_name = "KEY=VALUE")]
        net: Vec<String>,
    },
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
        Cmd::Run { scenario, cc, out, json, set, seeds, duration, preset, host_delay_us, lb, no_ec, border_links } => {
            let text = std::fs::read_to_string(&scenario).map_err(|e| anyhow::anyhow!("reading {}: {e}", scenario.display()))?;
            if xdcc_sim::testbed::is_testbed_format(&text) {
                if !preset.is_empty() {
                    anyhow::bail!("--preset is for simulator scenarios; a testbed scenario sets [presets] or a variant's preset");
                }
                if host_delay_us.is_some() {
                    anyhow::bail!("--host-delay-us is for simulator scenarios (a testbed scenario's hosts are the VM's)");
                }
                if lb.is_some() || no_ec || border_links.is_some() {
                    anyhow::bail!("--lb, --no-ec and --border-links are for simulator scenarios with a [topology]");
                }
                return run_testbed(&scenario, &cc, out.as_deref(), json, &set, seeds, duration);
            }
            let mut sc = xdcc_sim::Scenario::from_file(&scenario)?;
            set_duration(&mut sc, duration)?;
            if !cc.is_empty() {
                sc.cc = cc;
            }
            for cp in &preset {
                let (c, name) = cp.split_once('=').ok_or_else(|| anyhow::anyhow!("--preset {cp}: expected CC=PRESET"))?;
                sc.presets.insert(c.to_string(), name.to_string());
            }
            if let Some(h) = host_delay_us {
                sc.host_delay_us = h;
            }
            if lb.is_some() || no_ec || border_links.is_some() {
                let Some(t) = &mut sc.topology else {
                    anyhow::bail!("--lb, --no-ec and --border-links need a scenario with a [topology] (routed flows)");
                };
                if let Some(n) = border_links {
                    t.border_links = n;
                }
                let spec = lb.as_deref().map(|k| xdcc_sim::scenario::LbSpec::named(k, sc.rto_us)).transpose()?;
                for f in &mut sc.flows {
                    if let Some(s) = &spec {
                        f.lb = Some(s.clone());
                    }
                    if no_ec {
                        f.ec = None;
                    }
                }
            }
            apply_sets(&mut sc, &set)?;
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
        Cmd::Plan { scenario, cc, set, backend, time_scale, duration, net } => {
            let text = std::fs::read_to_string(&scenario).map_err(|e| anyhow::anyhow!("reading {}: {e}", scenario.display()))?;
            if xdcc_sim::testbed::is_testbed_format(&text) {
                if !set.is_empty() || time_scale.is_some() || backend.as_deref().is_some_and(|b| b != "vm") {
                    anyhow::bail!("{}: a 2-DC testbed scenario runs in the VM (--backend vm; its topology sets the time scale, its [tunables] the tunables)", scenario.display());
                }
                let ccs: Vec<String> = cc.iter().flat_map(|c| c.split(',')).map(str::to_string).collect();
                let (mut tb, dir) = testbed_with(&scenario, &ccs, duration)?;
                for kv in &net {
                    net_override(&mut tb, kv).with_context(|| format!("--net {kv}"))?;
                }
                println!("{}", serde_json::to_string_pretty(&tb.plan(&stem(&scenario), &dir)?)?);
                return Ok(());
            }
            if !net.is_empty() {
                anyhow::bail!("--net is for a 2-DC testbed scenario (testbed/scenarios/)");
            }
            let cc = cc.ok_or_else(|| anyhow::anyhow!("--cc is required for a simulator scenario"))?;
            let mut sc = xdcc_sim::Scenario::from_file(&scenario)?;
            set_duration(&mut sc, duration)?;
            apply_sets(&mut sc, &set)?;
            let mut ex = if backend.as_deref() == Some("vm") { xdcc_sim::plan::Executor::VM } else { xdcc_sim::plan::Executor::HOST };
            if let Some(t) = time_scale {
                ex.time_scale = t;
            }
            println!("{}", serde_json::to_string_pretty(&xdcc_sim::plan::plan(&sc, &cc, ex)?)?);
        }
        Cmd::Check { scenario } => {
            let text = std::fs::read_to_string(&scenario).map_err(|e| anyhow::anyhow!("reading {}: {e}", scenario.display()))?;
            if xdcc_sim::testbed::is_testbed_format(&text) {
                let (tb, dir) = xdcc_sim::testbed::TestbedScenario::from_file(&scenario)?;
                for p in tb.points(&stem(&scenario), &dir)? {
                    println!("# {} {}{}", p.entry, p.label, p.notes.iter().map(|n| format!(" ({n})")).collect::<String>());
                    if let Some(sc) = &p.scenario {
                        print!("{}", toml::to_string_pretty(sc)?);
                    }
                }
                return Ok(());
            }
            let sc = xdcc_sim::Scenario::from_file(&scenario)?;
            print!("{}", toml::to_string_pretty(&sc)?);
        }
    }
    Ok(())
}

/// `--duration S` of a simulator scenario: its `duration_ms`, re-validated
/// (the measured interval must still end after it starts).
fn set_duration(sc: &mut xdcc_sim::Scenario, duration: Option<u64>) -> Result<()> {
    if let Some(d) = duration {
        sc.duration_ms = d as f64 * 1e3;
        sc.validate().map_err(|e| anyhow::anyhow!("--duration {d}: {e:#}"))?;
    }
    Ok(())
}

/// `--set CC.NAME=VALUE` into the scenario's tunables, then re-validated.
fn apply_sets(sc: &mut xdcc_sim::Scenario, set: &[String]) -> Result<()> {
    for kv in set {
        let (key, value) = kv.split_once('=').ok_or_else(|| anyhow::anyhow!("--set {kv}: expected CC.NAME=VALUE"))?;
        let (cc, name) = key.split_once('.').ok_or_else(|| anyhow::anyhow!("--set {kv}: expected CC.NAME=VALUE"))?;
        let value: u64 = value.parse().map_err(|_| anyhow::anyhow!("--set {kv}: {value:?} is not a non-negative integer"))?;
        sc.params.entry(cc.to_string()).or_default().insert(name.to_string(), value);
    }
    sc.validate()
}

fn stem(p: &std::path::Path) -> String {
    p.file_stem().map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned())
}

/// A testbed scenario: every `ccs` entry (or those of `--cc`) at every sweep
/// point, `seeds` seeds each, as the testbed report's metrics.
/// A testbed scenario with `--duration` and `--cc` applied: the runs'
/// entries, each a CC of `ccs`, a [variants] entry (which `ccs` need not
/// list) or any xdcc CC, as the testbed runner takes them.
fn testbed_with(path: &std::path::Path, cc: &[String], duration: Option<u64>) -> Result<(xdcc_sim::testbed::TestbedScenario, PathBuf)> {
    let (mut tb, dir) = xdcc_sim::testbed::TestbedScenario::from_file(path)?;
    if let Some(d) = duration {
        tb.duration_s = d;
    }
    if !cc.is_empty() {
        // A CC of `ccs`, a [variants] entry (which `ccs` need not list), any
        // xdcc CC or a kernel CC.
        for c in cc {
            if !tb.ccs.contains(c) && !tb.variants.contains_key(c) && xdcc_sim::CcKind::parse(c).is_err() && !xdcc_sim::testbed::KERNEL_CCS.contains(&c.as_str()) {
                let variants: Vec<&str> = tb.variants.keys().map(String::as_str).collect();
                anyhow::bail!("--cc {c}: not in the scenario's ccs ({}) or variants ({})", tb.ccs.join(", "), if variants.is_empty() { "none".into() } else { variants.join(", ") });
            }
        }
        tb.ccs = cc.to_vec();
    }
    Ok((tb, dir))
}

/// `--net KEY=VALUE` on a testbed scenario: KEY (`wan_paths`, `dc.rate_mbit`)
/// set in its [net], VALUE read as TOML (a bare word is a string); the
/// topology checks both when the runs are planned.
fn net_override(tb: &mut xdcc_sim::testbed::TestbedScenario, kv: &str) -> Result<()> {
    let (key, value) = kv.split_once('=').ok_or_else(|| anyhow::anyhow!("expected KEY=VALUE"))?;
    let value = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| toml::Value::String(value.to_string())),
        Err(_) => toml::Value::String(value.to_string()),
    };
    let net = tb.net.get_or_insert_with(toml::Table::new);
    match key.split_once('.') {
        None => {
            net.insert(key.to_string(), value);
        }
        Some((sec, k)) => {
            let t = net.entry(sec).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            t.as_table_mut().ok_or_else(|| anyhow::anyhow!("'{sec}' is not a table"))?.insert(k.to_string(), value);
        }
    }
    Ok(())
}

fn run_testbed(path: &std::path::Path, cc: &[String], out: Option<&std::path::Path>, json: bool, set: &[String], seeds: u32, duration: Option<u64>) -> Result<()> {
    let (tb, dir) = testbed_with(path, cc, duration)?;
    let mut points = tb.points(&stem(path), &dir)?;
    for p in &mut points {
        if let Some(sc) = &mut p.scenario {
            // Only this point's CC's tunables apply.
            let mine: Vec<String> = set.iter().filter(|kv| kv.split('.').next() == Some(p.cc.as_str())).cloned().collect();
            apply_sets(sc, &mine)?;
            if let Some(dir) = out {
                let r = xdcc_sim::run(sc, xdcc_sim::CcKind::parse(&p.cc)?)?;
                let sub = dir.join(if p.label.is_empty() { p.entry.clone() } else { format!("{}-{}", p.entry, p.label) });
                std::fs::create_dir_all(&sub)?;
                std::fs::write(sub.join("summary.json"), serde_json::to_string_pretty(&r)?)?;
                std::fs::write(sub.join("timeseries.csv"), r.series_csv())?;
            }
        }
    }
    let preds = xdcc_sim::testbed::predict(&points, seeds)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&preds)?);
    } else {
        println!("testbed scenario {} in the model ({} s simulated, {} seed(s){})", stem(path), tb.duration_s, seeds, if seeds > 1 { ", mean ± 95 % interval" } else { "" });
        print!("{}", xdcc_sim::testbed::prediction_table(&preds));
    }
    Ok(())
}
