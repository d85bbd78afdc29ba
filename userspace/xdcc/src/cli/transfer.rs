//! `xdcc send` and `xdcc recv`: bulk transfers over the UDP transport
//! (`xdcc-transport`: UnoCC's window, UnoRC's Reed-Solomon blocks), the
//! operator's key proven by both ends over a TCP control connection.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use xdcc::failure;
use xdcc_transport::transfer::{self, ReceiveOptions, SendOptions, Summary};
use xdcc_transport::session;
use xdcc_transport::Strategy;

#[derive(Args)]
pub struct SendArgs {
    /// The file to send.
    file: PathBuf,
    /// The receiver's control address (`xdcc recv --listen`), HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    to: String,
    /// A file holding the key both ends share (at least 16 bytes, e.g.
    /// `head -c 32 /dev/urandom > key`; keep it private).
    #[arg(long, value_name = "PATH")]
    key_file: PathBuf,
    /// The path's bottleneck rate in Mbit/s (UnoCC's parameters).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    rate_mbit: u64,
    /// Data bytes per packet (the datagram adds 38).
    #[arg(long, default_value_t = 1400, value_parser = clap::value_parser!(u64).range(1..=65_000))]
    payload: u64,
    /// How packets choose their paths: `unolb` sprays them round robin over
    /// --subflows source ports (ECMP paths) under one window and moves the
    /// ports that go silent (Uno's UnoLB); `ecmp` keeps one port.
    #[arg(long, default_value = "unolb", value_parser = ["unolb", "ecmp"])]
    lb: String,
    /// UnoLB's subflows (source ports) per transfer.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u8).range(1..=16))]
    subflows: u8,
    /// No progress bar.
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(Args)]
pub struct RecvArgs {
    /// Where to listen for the sender's control connection, ADDR:PORT (the
    /// data arrives over UDP on a port the receiver picks and tells it).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: SocketAddr,
    /// Where to write the file (put in place only once its SHA-256 matches
    /// the sender's).
    #[arg(long, value_name = "PATH")]
    out: PathBuf,
    /// The shared key file (as `xdcc send --key-file`).
    #[arg(long, value_name = "PATH")]
    key_file: PathBuf,
    /// Replace --out if it exists (refused otherwise, before any data flows).
    #[arg(long)]
    overwrite: bool,
    /// The largest transfer accepted, in bytes.
    #[arg(long, default_value_t = 1 << 40)]
    max_bytes: u64,
    /// No progress bar.
    #[arg(long, short = 'q')]
    quiet: bool,
}

fn read_key(path: &Path) -> Result<Vec<u8>> {
    let key = std::fs::read(path).map_err(|e| failure::bad_value(format!("the key file {}: {e}", path.display())))?;
    transfer::check_key(&key).map_err(|e| failure::bad_value(format!("{}: {e}", path.display())))?;
    Ok(key)
}

fn bar(quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(0);
    b.set_style(
        ProgressStyle::with_template("{bytes}/{total_bytes} [{bar:30}] {binary_bytes_per_sec} {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    b.enable_steady_tick(Duration::from_millis(200));
    b
}

fn report(ctx: &super::Ctx, s: &Summary) -> Result<()> {
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(s)?);
        return Ok(());
    }
    let head = format!("{} bytes in {:.2} s ({:.1} Mbit/s), sha256 {}", s.bytes, s.seconds, s.goodput_mbps, s.sha256);
    if let Some(t) = &s.sent {
        println!(
            "sent {head}; packets {} (parity {}, resent {}), ACKs echoing CE {}, lost {}, NACKs {}, timeouts {}, paths re-drawn {} ({} undone by late ACKs)",
            t.packets, t.parity_packets, t.resent, t.marked, t.lost, t.nacks, t.timeouts, t.redrawn, t.redraws_undone
        );
    }
    if let Some(r) = &s.received {
        println!(
            "received {head}; packets kept {} (CE-marked {}), blocks rebuilt from parity {} ({} packets), NACKs {}, datagrams refused {}",
            r.packets, r.marked, r.rebuilt_blocks, r.rebuilt_packets, r.nacks, r.refused
        );
    }
    Ok(())
}

pub fn send(a: SendArgs, ctx: &super::Ctx) -> Result<()> {
    let key = read_key(&a.key_file)?;
    let to = a
        .to
        .to_socket_addrs()
        .map_err(|e| failure::bad_value(format!("--to {}: {e}", a.to)))?
        .next()
        .ok_or_else(|| failure::bad_value(format!("--to {}: no address", a.to)))?;
    let lb = match a.lb.as_str() {
        "ecmp" => Strategy::Ecmp,
        _ => session::unolb(a.subflows),
    };
    let opts = SendOptions { payload: a.payload as usize, link_rate_bps: a.rate_mbit.saturating_mul(1_000_000), lb, ..SendOptions::default() };
    let b = bar(a.quiet || ctx.json);
    let summary = transfer::send_file(&a.file, to, &key, opts, &mut |done, total| {
        b.set_length(total);
        b.set_position(done);
    })
    .with_context(|| format!("sending {} to {to}", a.file.display()))?;
    b.finish_and_clear();
    report(ctx, &summary)
}

pub fn recv(a: RecvArgs, ctx: &super::Ctx) -> Result<()> {
    let key = read_key(&a.key_file)?;
    let listener = TcpListener::bind(a.listen).with_context(|| format!("listening on {}", a.listen))?;
    if !a.quiet && !ctx.json {
        eprintln!("xdcc: waiting for a sender on {}", listener.local_addr()?);
    }
    let opts = ReceiveOptions { overwrite: a.overwrite, max_bytes: a.max_bytes, ..ReceiveOptions::default() };
    let b = bar(a.quiet || ctx.json);
    let summary = transfer::receive_file(&listener, &a.out, &key, opts, &mut |done, total| {
        b.set_length(total);
        b.set_position(done);
    })
    .with_context(|| format!("receiving into {}", a.out.display()))?;
    b.finish_and_clear();
    report(ctx, &summary)
}
