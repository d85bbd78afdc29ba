//! The `xdcc` binary's subcommands, one file each; what they share is here:
//! the tokio runtime, the agent's socket, waiting for a stop signal.
//! Each file parses its arguments (clap) and calls the library.

pub mod agent;
pub mod apply;
pub mod cc;
pub mod check;
pub mod docs;
pub mod flows;
pub mod mark;
pub mod module;
pub mod reroute;
pub mod stats;
pub mod switch;
pub mod transfer;
pub mod tunable;
pub mod usects;

use std::{path::Path, time::Duration};

use anyhow::{Context, Result};
use xdcc::{failure, proto, proto::Request};

/// Global options every subcommand may use.
pub struct Ctx<'a> {
    /// The agent's control socket.
    pub sock: &'a Path,
    /// Machine-readable output.
    pub json: bool,
    /// The network namespace the process entered (`-n`), for messages.
    pub netns: Option<String>,
}

pub fn tokio_rt() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().context("starting tokio")
}

/// The agent's answer to `req`, or the no-agent failure (exit status 3).
pub fn need_agent(sock: &Path, req: &Request) -> Result<serde_json::Value> {
    match proto::call(sock, req)? {
        Some(v) => Ok(v),
        None => Err(failure::no_agent(format!("no xdcc agent at {} (start one with `xdcc agent`)", sock.display()))),
    }
}

/// Until SIGINT/SIGTERM or `duration` seconds.
pub async fn wait_stop(duration: Option<u64>) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let sleep = tokio::time::sleep(Duration::from_secs(duration.unwrap_or(u64::MAX / 4)));
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = sleep => {}
    }
    Ok(())
}
