//! `xdcc flows`: per-flow telemetry from the agent, or tcp_info alone
//! without one.

use std::{io::Write, time::Duration};

use anyhow::{bail, Result};
use clap::Args;
use xdcc::{flows, flows::FlowView, proto, proto::Request};

#[derive(Args)]
pub struct FlowsArgs {
    /// Refresh every SECS seconds (default 1) until interrupted.
    #[arg(long, num_args = 0..=1, default_missing_value = "1", value_name = "SECS")]
    watch: Option<f64>,
    /// Include closed flows the agent still retains.
    #[arg(long)]
    all: bool,
}

pub fn run(a: FlowsArgs, ctx: &super::Ctx) -> Result<()> {
    let (json, watch, all) = (ctx.json, a.watch, a.all);
    if let Some(s) = watch {
        if !(s.is_finite() && s >= 0.1) {
            bail!("--watch interval must be at least 0.1 s");
        }
    }
    loop {
        let (rows, note) = match proto::call(ctx.sock, &Request::Flows { all })? {
            Some(v) => (serde_json::from_value::<Vec<FlowView>>(v)?, None),
            None => {
                let rows: Vec<FlowView> = flows::tcp_sockets()?
                    .iter()
                    .filter(|s| s.state != "time-wait")
                    .map(flows::from_socket)
                    .collect();
                (rows, Some("(no agent: tcp_info only; start `xdcc agent` for ECN, RTT histograms and paths)"))
            }
        };
        let mut out = std::io::stdout().lock();
        if watch.is_some() && !json {
            write!(out, "\x1b[H\x1b[2J")?; // clear the terminal
        }
        if json && watch.is_some() {
            writeln!(out, "{}", serde_json::to_string(&rows)?)?; // JSON Lines
        } else if json {
            writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        } else {
            write!(out, "{}", flows::render_table(&rows))?;
            if let Some(n) = note {
                writeln!(out, "{n}")?;
            }
        }
        out.flush()?;
        match watch {
            Some(s) => std::thread::sleep(Duration::from_secs_f64(s)),
            None => return Ok(()),
        }
    }
}
