//! `xdcc-testbed flowgen`: the testbed's sized flows from a JSON plan.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use xdcc::flowgen;

#[derive(Args)]
pub struct FlowgenArgs {
    #[arg(long)]
    plan: PathBuf,
    #[arg(long)]
    out: PathBuf,
}

pub fn run(a: FlowgenArgs) -> Result<()> {
    flowgen::run(&flowgen::Plan::load(&a.plan)?, &a.out)
}
