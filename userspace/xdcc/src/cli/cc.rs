//! `xdcc cc`: list, select, load, unload and trace congestion controls.

use std::time::Duration;

use anyhow::Result;
use clap::Subcommand;
use xdcc::{bpfcc, kernel};

#[derive(Subcommand)]
pub enum CcCmd {
    /// Available, allowed and default congestion controls.
    List,
    /// The congestion controls xdcc ships: name, module, whether they need
    /// ECN, paper (one per line: `name module ecn|no-ecn paper`); with
    /// --json also what marks mean to each, its tunables and presets.
    Known,
    /// Make NAME the default for new sockets (of a network namespace).
    Set {
        name: String,
    },
    /// Let network namespaces make each NAME their default (adds it to
    /// net.ipv4.tcp_allowed_congestion_control; root, initial namespace).
    /// xdcc's CCs, cubic and reno need nothing; bbr does.
    Allow {
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Make an xdcc CC available: its kernel module (tcp_<cc>), or with
    /// --bpf its BPF struct_ops version bpf_<cc> (stock kernels >= 6.4 with
    /// BTF; stays registered after the command exits).
    Load {
        /// A CC of `xdcc cc known` (uno, gemini, oscar, smartt, amrt).
        cc: String,
        #[arg(long)]
        bpf: bool,
        /// With --bpf: swap the programs of the registered bpf_<cc> for this
        /// binary's in place, keeping its tunables (new sockets get the new
        /// programs; existing ones finish on the old).
        #[arg(long, requires = "bpf")]
        replace: bool,
    },
    /// Remove an xdcc CC loaded with `cc load` (sockets using a BPF CC keep
    /// it until they close; a module in use is refused).
    Unload {
        cc: String,
        #[arg(long)]
        bpf: bool,
    },
    /// Every ACK a BPF CC (`bpf_<cc>`) handles, as JSON lines: the ACK's RTT
    /// sample and the smoothed RTT, acked packets, ECE, whether the window
    /// limited the sender, the window before and after the algorithm ran,
    /// ssthresh and the pacing rate after it. Tracing is on while
    /// this runs (each ACK then costs one ring-buffer record) and off after;
    /// the summary (records, records the kernel dropped) goes to stderr.
    Trace {
        /// A BPF CC loaded with `xdcc cc load <cc> --bpf`.
        cc: String,
        /// Stop after this many seconds (default: at SIGINT or SIGTERM).
        #[arg(long)]
        duration: Option<u64>,
        /// Only flows with this local or remote port (repeatable).
        #[arg(long = "port")]
        ports: Vec<u16>,
    },
}

pub fn run(c: CcCmd, ctx: &super::Ctx) -> Result<()> {
    let json = ctx.json;
    match c {
        CcCmd::Known => {
            if json {
                let v: Vec<_> = xdcc_algo::CCS
                    .iter()
                    .map(|c| {
                        let presets: Vec<&str> =
                            xdcc_algo::presets::PRESETS.iter().filter(|p| p.0 == c.name).map(|p| p.1).collect();
                        serde_json::json!({"name": c.name, "module": c.module, "needs_ecn": c.needs_ecn,
                            "marks": c.marks.as_str(), "rate_based": c.rate_based, "paper": c.paper, "tunables": c.tunables,
                            "presets": presets, "info_fields": c.info_fields})
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                for c in xdcc_algo::CCS.iter() {
                    println!("{c}");
                }
            }
        }
        CcCmd::List => {
            let l = kernel::cc_list()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&l)?);
            } else {
                println!("default:   {}", l.default);
                println!("available: {}", l.available.join(" "));
                println!("allowed:   {}", l.allowed.join(" "));
                if !l.xdcc_not_loaded.is_empty() {
                    println!("not loaded (xdcc module load tcp_<cc>): {}", l.xdcc_not_loaded.join(" "));
                }
            }
        }
        CcCmd::Set { name } => {
            kernel::cc_set(&name)?;
            let ns = ctx.netns.as_ref().map(|n| format!(" in netns {n}")).unwrap_or_default();
            println!("default congestion control{ns}: {name}");
        }
        CcCmd::Allow { names } => {
            let allowed = kernel::cc_allow(&names)?;
            println!("allowed congestion controls: {}", allowed.join(" "));
        }
        CcCmd::Load { cc, bpf: true, replace } => {
            let r = bpfcc::load(&cc, replace)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                println!("{} {} (pinned at {})", if replace { "replaced" } else { "loaded" }, r.name, r.pinned);
                let insns: Vec<String> = r.verified_insns.iter().map(|(p, n)| format!("{p} {n}")).collect();
                println!("verifier instructions processed (limit 1000000): {}", insns.join(", "));
            }
        }
        CcCmd::Load { cc, bpf: false, .. } => {
            let path = kernel::module_load(&cc)?;
            println!("loaded {path}");
        }
        CcCmd::Unload { cc, bpf: true } => {
            bpfcc::unload(&cc)?;
            println!("unloaded bpf_{}", bpfcc::algo_name(&cc)?);
        }
        CcCmd::Unload { cc, bpf: false } => {
            kernel::module_unload(&cc)?;
            println!("unloaded {cc}");
        }
        CcCmd::Trace { cc, duration, ports } => trace(cc, duration, ports)?,
    }
    Ok(())
}

/// `cc trace`: a reader thread prints the records until the duration or a
/// signal, or until it gives up (e.g. the CC is not loaded).
fn trace(cc: String, duration: Option<u64>, ports: Vec<u16>) -> Result<()> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tracer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            bpfcc::trace(&cc, &ports, &stop, |r| {
                // (A closed stdout, e.g. `| head`, ends nothing here:
                // the trace stops at the duration or the signal.)
                let _ = serde_json::to_writer(&mut stdout, r).map(|_| writeln!(stdout));
            })
        })
    };
    let waited = super::tokio_rt()?.block_on(async {
        tokio::select! {
            r = super::wait_stop(duration) => r,
            // The tracer gave up (e.g. the CC is not loaded): stop waiting.
            _ = async { while !tracer.is_finished() { tokio::time::sleep(Duration::from_millis(50)).await } } => Ok(()),
        }
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let summary = tracer.join().map_err(|_| anyhow::anyhow!("the trace reader panicked"))??;
    waited?;
    eprintln!("{}", serde_json::to_string(&summary)?);
    Ok(())
}
