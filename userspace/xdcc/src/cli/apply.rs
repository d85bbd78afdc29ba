//! `xdcc apply`: make the system match the configuration file (or report
//! the drift, or only validate the file).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use xdcc::{apply, ccconfig, failure};

#[derive(Args)]
pub struct ApplyArgs {
    /// The configuration file (the agent's).
    #[arg(long, default_value = "/etc/xdcc/xdcc.toml")]
    config: PathBuf,
    /// Report the differences (drift) and change nothing; exit 1 if any.
    #[arg(long)]
    check: bool,
    /// Only read and validate the file (every key, every CC's values as
    /// one set), without looking at the system; exit 5 if it is bad.
    #[arg(long, conflicts_with = "check")]
    validate: bool,
}

pub fn run(a: ApplyArgs, ctx: &super::Ctx) -> Result<()> {
    let ApplyArgs { config, check, validate } = a;
    let cfg = apply::load(&config)?;
    let desired = ccconfig::desired_all(&cfg.cc).map_err(|(_, _, m)| failure::bad_value(m))?;
    if validate {
        println!("{}: valid ({} CCs, {} policy entries)", config.display(), desired.len(), cfg.policy.len());
        return Ok(());
    }
    let changes = apply::apply(cfg.default_cc.as_deref(), &desired, check)?;
    if ctx.json {
        let v: Vec<String> = changes.iter().map(|c| c.to_string()).collect();
        println!("{}", serde_json::json!({"check": check, "changes": v}));
    } else if changes.is_empty() {
        println!("{}: nothing to change", config.display());
    } else {
        for c in &changes {
            println!("{}{c}", if check { "drift: " } else { "" });
        }
    }
    if check && !changes.is_empty() {
        bail!("{} differences between the system and {}", changes.len(), config.display());
    }
    Ok(())
}
