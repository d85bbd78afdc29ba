//! `xdcc usec-ts`: microsecond TCP timestamps on the routes to datacenter
//! destinations (the library's `usects`).

use anyhow::Result;
use clap::Subcommand;
use xdcc::usects::{self, Prefix};

#[derive(Subcommand)]
pub enum UsecTsCmd {
    /// The unicast routes of the main table and whether each has µs TCP
    /// timestamps.
    Show,
    /// Give the routes to PREFIX... µs TCP timestamps (connections opened
    /// from now on). At datacenter RTTs a millisecond timestamp cannot
    /// show that a retransmission was spurious, so Linux never undoes the
    /// CC's reaction to reordering; with µs timestamps it does. Linux 6.7+.
    On {
        /// `default`, `default4`, `default6`, ADDR/LEN or an address; each
        /// must name a route of the main table (nothing changes otherwise).
        #[arg(required = true)]
        prefixes: Vec<Prefix>,
    },
    /// Take µs TCP timestamps off the routes to PREFIX...
    Off {
        #[arg(required = true)]
        prefixes: Vec<Prefix>,
    },
}

pub fn run(c: UsecTsCmd, ctx: &super::Ctx) -> Result<()> {
    let rt = super::tokio_rt()?;
    match c {
        UsecTsCmd::Show => {
            let routes = rt.block_on(usects::list())?;
            if ctx.json {
                println!("{}", serde_json::to_string_pretty(&routes)?);
            } else {
                for r in routes {
                    println!("{:<44} {}", r.destination, if r.usec_ts { "usec_ts" } else { "-" });
                }
            }
        }
        UsecTsCmd::On { prefixes } => report(rt.block_on(usects::set(&prefixes, true))?, true),
        UsecTsCmd::Off { prefixes } => report(rt.block_on(usects::set(&prefixes, false))?, false),
    }
    Ok(())
}

fn report(done: Vec<(String, bool)>, on: bool) {
    for (route, changed) in done {
        let what = match (changed, on) {
            (true, true) => "µs TCP timestamps on",
            (true, false) => "µs TCP timestamps off",
            (false, true) => "already on",
            (false, false) => "already off",
        };
        println!("{route}: {what}");
    }
}
