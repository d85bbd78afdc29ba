//! `xdcc reroute`: the agent's flow-label rerouter (PLB-style moves).

use anyhow::Result;
use clap::Subcommand;
use xdcc::{
    config::{RerouteSettings, REROUTE_KEYS},
    proto::Request,
};

#[derive(Subcommand)]
pub enum RerouteCmd {
    /// Current settings.
    Show,
    /// Change one setting (see `reroute show` for names and ranges).
    Set { name: String, value: String },
    /// Move matching IPv6 flows to another path at their next round.
    Force {
        /// Local "addr" or "addr:port" (IPv6 as [addr]:port).
        #[arg(long)]
        local: Option<String>,
        #[arg(long)]
        remote: Option<String>,
    },
}

pub fn run(c: RerouteCmd, ctx: &super::Ctx) -> Result<()> {
    let sock = ctx.sock;
    match c {
        RerouteCmd::Show => {
            let data = super::need_agent(sock, &Request::RerouteGet)?;
            let s: RerouteSettings = serde_json::from_value(data)?;
            if ctx.json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                for (name, lo, hi, what) in REROUTE_KEYS {
                    println!("{name:<24} {:<6} ({lo}..={hi}) {what}", s.get(name).unwrap_or(0));
                }
            }
        }
        RerouteCmd::Set { name, value } => {
            let v: u32 = match value.as_str() {
                "true" | "on" | "yes" => 1,
                "false" | "off" | "no" => 0,
                s => s.parse().map_err(|_| anyhow::anyhow!("`{s}` is not a non-negative integer or on/off"))?,
            };
            // validate locally first for a message even without an agent
            RerouteSettings::default().set(&name, v)?;
            let data = super::need_agent(sock, &Request::RerouteSet { name: name.clone(), value: v })?;
            let s: RerouteSettings = serde_json::from_value(data)?;
            println!("reroute.{name} = {}", s.get(&name).unwrap_or(v));
        }
        RerouteCmd::Force { local, remote } => {
            let data = super::need_agent(sock, &Request::RerouteForce { local, remote })?;
            println!("forced a move of {} flow(s) at their next round", data["flows"]);
        }
    }
    Ok(())
}
