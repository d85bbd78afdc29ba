//! `xdcc stats` and `xdcc metrics`: the agent's counters, as a table or as
//! the Prometheus text it serves.

use anyhow::Result;
use xdcc::proto::Request;

pub fn run(ctx: &super::Ctx) -> Result<()> {
    let data = super::need_agent(ctx.sock, &Request::Stats)?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&data)?);
    } else {
        print_stats(&data);
    }
    Ok(())
}

pub fn metrics(ctx: &super::Ctx) -> Result<()> {
    let data = super::need_agent(ctx.sock, &Request::Metrics)?;
    print!("{}", data.as_str().unwrap_or_default());
    Ok(())
}

fn print_stats(d: &serde_json::Value) {
    for k in [
        "uptime_s",
        "cgroup",
        "interfaces",
        "flows_tracked",
        "flows_retained_closed",
        "closed_flows_evicted",
        "flows_opened",
        "flows_closed",
        "reroutes",
        "labels_rewritten",
        "untracked_packets",
        "insert_failures",
        "closed_ring_full",
        "open_flows_evicted",
        "max_open_flows",
    ] {
        println!("{k:<22} {}", d[k]);
    }
    if let Some(dests) = d["destinations"].as_array() {
        for x in dests {
            println!("path health {:<26} healthy ids {}", x["destination"].as_str().unwrap_or("?"), x["healthy_paths"]);
        }
    }
}
