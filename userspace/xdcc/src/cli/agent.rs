//! `xdcc agent`: the agent in the foreground, configured from its file and
//! these options (which override it).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use xdcc::config::{AgentConfig, DEFAULT_METRICS};

#[derive(Args)]
pub struct AgentArgs {
    /// TOML configuration file (command-line options override it).
    #[arg(long)]
    config: Option<PathBuf>,
    /// cgroup2 directory whose sockets are tracked.
    #[arg(long)]
    cgroup: Option<PathBuf>,
    /// Interface for packet telemetry and flow labels (repeatable).
    #[arg(long = "iface")]
    interfaces: Vec<String>,
    /// Serve Prometheus metrics (default address 127.0.0.1:9877).
    #[arg(long, num_args = 0..=1, default_missing_value = DEFAULT_METRICS, value_name = "ADDR")]
    metrics: Option<String>,
    /// Keep closed flows visible this long.
    #[arg(long)]
    retain_closed_secs: Option<u64>,
    /// Keep at most this many closed flows, the oldest going first (default: 25000).
    #[arg(long, value_name = "N")]
    max_closed_flows: Option<u64>,
    /// Track at most this many open flows in the kernel's flow table; beyond, the least recently active are evicted and counted (default: 65536).
    #[arg(long, value_name = "N")]
    max_open_flows: Option<u32>,
    /// Start with rerouting off (telemetry only).
    #[arg(long)]
    no_reroute: bool,
}

pub fn run(a: AgentArgs, ctx: &super::Ctx) -> Result<()> {
    let mut cfg = match &a.config {
        Some(p) => AgentConfig::load(p)?,
        None => AgentConfig::default(),
    };
    cfg.socket = ctx.sock.to_path_buf();
    if let Some(c) = a.cgroup {
        cfg.cgroup = c;
    }
    if !a.interfaces.is_empty() {
        cfg.interfaces = a.interfaces;
    }
    if a.metrics.is_some() {
        cfg.metrics = a.metrics;
    }
    if let Some(r) = a.retain_closed_secs {
        cfg.retain_closed_secs = r;
    }
    if let Some(n) = a.max_closed_flows {
        cfg.max_closed_flows = n;
    }
    if let Some(n) = a.max_open_flows {
        cfg.max_open_flows = n;
    }
    if a.no_reroute {
        cfg.reroute.enabled = false;
    }
    // the same checks as for the file
    let text = toml::to_string(&cfg).context("re-encoding the configuration")?;
    AgentConfig::parse(&text).map_err(|e| anyhow::anyhow!("invalid option: {}", e.split_once(": ").map(|x| x.1).unwrap_or(&e)))?;
    super::tokio_rt()?.block_on(xdcc::agent::run(cfg))
}
