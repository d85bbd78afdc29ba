//! `xdcc-testbed`: the testbed's own tools, apart from the operator's
//! `xdcc`: the sampler and the sized-flow generator the testbed runs on
//! each machine (`testbed/runner/guest.py`, `testbed/host/run.py`).

mod flowgen;
mod sample;

use clap::{Parser, Subcommand};
use xdcc::failure;

#[derive(Parser)]
#[command(name = "xdcc-testbed", version, about = "xdcc's testbed tools: the sampler and the sized-flow generator")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Sample TCP sockets and port queues in network namespaces, one JSON
    /// object per line on stdout, until stdin closes (the testbed's sampler).
    Sample(sample::SampleArgs),
    /// Sized flows for the testbed (incasts, workloads) from a JSON plan:
    /// a server in each listed namespace, each flow sent from its namespace
    /// with its CC and timed to the receiver's answer; one JSON line per
    /// finished flow to --out. Prints {"ready":true} once the servers
    /// listen, then reads the plan's time zero (CLOCK_MONOTONIC seconds)
    /// from stdin (testbed/runner/guest.py drives it).
    Flowgen(flowgen::FlowgenArgs),
}

fn main() {
    let cli = Cli::parse();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let result = match cli.cmd {
        Cmd::Sample(a) => sample::run(a),
        Cmd::Flowgen(a) => flowgen::run(a),
    };
    if let Err(e) = result {
        eprintln!("xdcc-testbed: error: {e:#}");
        std::process::exit(failure::exit_code(&e).into());
    }
}
