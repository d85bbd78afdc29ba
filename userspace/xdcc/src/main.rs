//! `xdcc`: the agent and command-line tool of xdcc.
//!
//! Talks to the agent (Unix socket) for flows, stats and rerouting, and
//! directly to the kernel for congestion-control selection, the kernel
//! modules and their tunables. Without an agent, `flows` shows tcp_info alone.

mod agent;
mod apply;
mod bpfcc;
#[cfg(test)]
mod bpfcc_equivalence;
mod check;
mod config;
mod ebpf;
mod failure;
mod flowgen;
mod flows;
mod kernel;
mod metrics;
mod netlink;
mod proto;
mod sampler;
mod sockdiag;

use std::{
    io::Write,
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use config::{AgentConfig, RerouteSettings, DEFAULT_METRICS, DEFAULT_SOCKET, REROUTE_KEYS};
use flows::FlowView;
use proto::Request;

#[derive(Parser)]
#[command(
    name = "xdcc",
    version,
    about = "xdcc: datacenter and cross-datacenter congestion controls for Linux",
    after_help = "Exit status: 0 success, 1 other failure, 2 usage, 3 no agent, 4 the kernel refused, 5 bad value."
)]
struct Cli {
    /// The agent's control socket.
    #[arg(long, global = true, env = "XDCC_SOCKET", default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Machine-readable output: one pretty-printed JSON document (with
    /// `flows --watch`, one compact JSON document per line and refresh).
    #[arg(short = 'j', long, global = true)]
    json: bool,
    /// Run the command in network namespace NAME (/run/netns/NAME, as made
    /// by `ip netns add`) or at a namespace path, like `ip -n`.
    #[arg(short = 'n', long, global = true, value_name = "NAME")]
    netns: Option<String>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the agent: load and attach the eBPF programs, serve the CLI.
    Agent(AgentArgs),
    /// Make the system match the configuration file: register its
    /// [cc.<name>] CCs (BPF or module), write their network and tunables
    /// where they differ, set default_cc; prints each change. Nothing
    /// changes on a bad file (the error names its line).
    Apply {
        /// The configuration file (the agent's).
        #[arg(long, default_value = "/etc/xdcc/xdcc.toml")]
        config: std::path::PathBuf,
        /// Report the differences (drift) and change nothing; exit 1 if any.
        #[arg(long)]
        check: bool,
        /// Only read and validate the file (every key, every CC's values as
        /// one set), without looking at the system; exit 5 if it is bad.
        #[arg(long, conflicts_with = "check")]
        validate: bool,
    },
    /// Preflight of this host: kernel, BTF, struct_ops, bpffs, cgroup2,
    /// tcp_ecn, module policy, and which xdcc CCs can load here with which
    /// backend (bpf_<cc> or the tcp_<cc> module). Exit 0 when every CC has
    /// a backend, 1 when something is missing (said how to get it).
    Check,
    /// List or select congestion controls (net.ipv4.tcp_congestion_control).
    #[command(subcommand)]
    Cc(CcCmd),
    /// List, load or unload the xdcc kernel modules.
    #[command(subcommand)]
    Module(ModuleCmd),
    /// Show or change a CC's tunables: a module's (/proc/sys/net/xdcc/<cc>/)
    /// or, for bpf_<cc>, the BPF CC's configuration map.
    #[command(subcommand)]
    Tunable(TunableCmd),
    /// Per-flow telemetry: bytes, ECN marks, RTT, window, path.
    Flows {
        /// Refresh every SECS seconds (default 1) until interrupted.
        #[arg(long, num_args = 0..=1, default_missing_value = "1", value_name = "SECS")]
        watch: Option<f64>,
        /// Include closed flows the agent still retains.
        #[arg(long)]
        all: bool,
    },
    /// Agent counters, attachment points and path health.
    Stats,
    /// Show, tune or force flow-label rerouting.
    #[command(subcommand)]
    Reroute(RerouteCmd),
    /// Print the agent's Prometheus metrics.
    Metrics,
    /// Uno's phantom-queue ECN marker on an interface acting as a switch
    /// port: a virtual queue draining at a fraction of the line rate, CE
    /// marks between kmin and kmax of its size. Foreground; prints counts.
    /// Parameters from the flags, or from a switch profile's [phantom].
    MarkPhantom {
        #[arg(long)]
        iface: String,
        /// A switch profile (shipped name or .toml) with a [phantom] section.
        #[arg(long, conflicts_with_all = ["drain_pct", "size_bytes", "kmin_pct", "kmax_pct"])]
        profile: Option<String>,
        /// The port's line rate (required without --profile; with one, it
        /// replaces the profile's rate as in `switch apply --rate-mbit`).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=400_000))]
        rate_mbit: Option<u64>,
        /// Drain rate in % of the line rate (Uno: 90).
        #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u64).range(1..=100))]
        drain_pct: u64,
        /// Phantom queue size (default: 1 ms at line rate, at least 30 kB).
        #[arg(long)]
        size_bytes: Option<u64>,
        #[arg(long, default_value_t = 20)]
        kmin_pct: u64,
        #[arg(long, default_value_t = 80)]
        kmax_pct: u64,
        /// What the queue counts: `enqueue` (every packet entering the port,
        /// as Uno's simulator; the default) or `link` (what the port
        /// transmits, at most the line rate, as HULL places it: for software
        /// switches that forward in CPU-batched bursts). Replaces a profile's.
        #[arg(long)]
        feed: Option<xdcc_switch::PhantomFeed>,
        #[arg(long)]
        duration: Option<u64>,
        /// Serve the marker's counters for Prometheus on ADDR (host:port).
        #[arg(long, value_name = "ADDR")]
        metrics: Option<String>,
    },
    /// AMRT's anti-ECN marker: CE on packets that follow at least one MTU's
    /// transmission time of idle link (spare bandwidth). Attach it where
    /// packets appear at their dequeue time: the ingress of the next hop.
    /// Parameters from the flags, or from a switch profile's [amrt].
    MarkAmrt {
        #[arg(long)]
        iface: String,
        /// A switch profile (shipped name or .toml) with an [amrt] section:
        /// the port's rate, MTU and position (transit or first hop).
        #[arg(long, conflicts_with_all = ["mtu", "transit"])]
        profile: Option<String>,
        /// Line rate of the port whose dequeue times the hook sees (required
        /// without --profile; with one, it replaces the profile's rate).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=400_000))]
        rate_mbit: Option<u64>,
        #[arg(long, value_parser = clap::value_parser!(u64).range(576..=9216))]
        mtu: Option<u64>,
        /// ingress (default: the next hop of a shaped port) or egress.
        #[arg(long, default_value = "ingress", value_parser = ["ingress", "egress"])]
        hook: String,
        /// Transit switch: CE = CE AND spare (default: first hop, CE = spare).
        #[arg(long)]
        transit: bool,
        #[arg(long)]
        duration: Option<u64>,
        /// Serve the marker's counters for Prometheus on ADDR (host:port).
        #[arg(long, value_name = "ADDR")]
        metrics: Option<String>,
    },
    /// Switch-port profiles (switch-config/): list, show, apply to or revert
    /// an interface acting as a DC switch or WAN border port.
    #[command(subcommand)]
    Switch(SwitchCmd),
    /// Mark CE on every Nth ECT packet leaving an interface (a test/demo
    /// router port); runs in the foreground and prints the counts at exit.
    MarkCe {
        #[arg(long)]
        iface: String,
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        every: u64,
        /// Stop after this many seconds (default: until SIGINT/SIGTERM).
        #[arg(long)]
        duration: Option<u64>,
        /// Serve the marker's counters for Prometheus on ADDR (host:port).
        #[arg(long, value_name = "ADDR")]
        metrics: Option<String>,
    },
    /// Sample TCP sockets and port queues in network namespaces, one JSON
    /// object per line on stdout, until stdin closes (the testbed's sampler).
    Sample {
        /// NAMESPACE:PORT[,PORT...]: report, per destination port, the
        /// socket of that namespace with the most bytes acknowledged.
        #[arg(long = "sockets", value_name = "NS:PORTS", value_parser = sampler::parse_sockets)]
        sockets: Vec<(String, Vec<u16>)>,
        /// NAMESPACE:INTERFACE: the root qdisc's counters (repeatable).
        #[arg(long = "port", value_name = "NS:DEV", value_parser = sampler::parse_port)]
        ports: Vec<(String, String, String)>,
        /// Sampling period in milliseconds.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=60_000))]
        interval_ms: u64,
        /// Stop after this many seconds (without it: when stdin closes).
        #[arg(long)]
        duration: Option<f64>,
        /// Sample IPv6 sockets instead of IPv4.
        #[arg(long)]
        ipv6: bool,
    },
    /// Sized flows for the testbed (incasts, workloads) from a JSON plan:
    /// a server in each listed namespace, each flow sent from its namespace
    /// with its CC and timed to the receiver's answer; one JSON line per
    /// finished flow to --out. Prints {"ready":true} once the servers
    /// listen, then reads the plan's time zero (CLOCK_MONOTONIC seconds)
    /// from stdin (testbed/runner/guest.py drives it).
    Flowgen {
        #[arg(long)]
        plan: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Print a shell completion script (e.g. `xdcc completions bash >
    /// /etc/bash_completion.d/xdcc`).
    Completions {
        shell: clap_complete::Shell,
    },
    /// Print the xdcc(1) man page, generated from these definitions (roff:
    /// `xdcc man > /usr/local/share/man/man1/xdcc.1`), or with --out write
    /// one page per command and subcommand there (xdcc.1, xdcc-cc.1,
    /// xdcc-cc-load.1, ...).
    Man {
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

#[derive(Args)]
struct AgentArgs {
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
    /// Start with rerouting off (telemetry only).
    #[arg(long)]
    no_reroute: bool,
}

#[derive(Subcommand)]
enum CcCmd {
    /// Available, allowed and default congestion controls.
    List,
    /// The congestion controls xdcc ships: name, module, whether they need
    /// ECN, paper and tunables (one per line: `name module ecn|no-ecn paper`).
    Known,
    /// Make NAME the default for new sockets (of a network namespace).
    Set {
        name: String,
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

#[derive(Subcommand)]
enum ModuleCmd {
    /// The xdcc modules, whether loaded, and their files ($XDCC_MODULE_DIR or ./kmods).
    List,
    /// Load a module by name (tcp_uno or uno) or by path to a .ko file.
    Load { module: String },
    /// Unload a module (refused while a socket or namespace uses its CC).
    Unload { module: String },
}

#[derive(Subcommand)]
enum TunableCmd {
    /// Every tunable of a CC with its value.
    List {
        cc: String,
    },
    /// One tunable's value.
    Get { cc: String, name: String },
    /// Write one tunable, validated before writing: a bad name or value
    /// changes nothing.
    Set { cc: String, name: String, value: String },
    /// Apply a named preset (a set of tunables derived from the CC's current
    /// `net_*` network: `paper` = the paper's defaults, `uno-artifact` = as
    /// the public Uno simulator runs it); without NAME, list the presets.
    Preset { cc: String, name: Option<String> },
}

#[derive(Subcommand)]
enum SwitchCmd {
    /// The shipped profiles.
    List,
    /// A profile's values and the tc commands it renders to.
    Show {
        /// Shipped name or path to a .toml file.
        profile: String,
        #[arg(long, default_value = "IFACE")]
        iface: String,
        /// Line rate (per-Gbps buffers and thresholds scale with it).
        #[arg(long)]
        rate_mbit: Option<u64>,
    },
    /// Configure an interface (idempotent; nothing stays if a step fails).
    Apply {
        profile: String,
        iface: String,
        #[arg(long)]
        rate_mbit: Option<u64>,
    },
    /// Remove a profile from an interface (back to its default qdisc).
    Revert {
        iface: String,
    },
}

#[derive(Subcommand)]
enum RerouteCmd {
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

fn main() {
    let cli = Cli::parse();
    // Like `ip -n`: the whole process enters the namespace before it starts
    // any thread (threads inherit it), so every command acts there.
    if let Some(ns) = &cli.netns {
        if let Err(e) = kernel::enter_netns(ns) {
            eprintln!("xdcc: error: {e:#}");
            std::process::exit(failure::exit_code(&e).into());
        }
    }
    let default_level = if matches!(cli.cmd, Cmd::Agent(_) | Cmd::MarkCe { .. }) { "info,netlink_packet_route=error" } else { "warn,netlink_packet_route=error" };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default_level)).init();
    if let Err(e) = run(cli) {
        eprintln!("xdcc: error: {e:#}");
        std::process::exit(failure::exit_code(&e).into());
    }
}

fn run(cli: Cli) -> Result<()> {
    let sock = cli.socket.as_path();
    let (json, netns) = (cli.json, cli.netns.clone());
    match cli.cmd {
        Cmd::Agent(a) => {
            let mut cfg = match &a.config {
                Some(p) => AgentConfig::load(p)?,
                None => AgentConfig::default(),
            };
            cfg.socket = sock.to_path_buf();
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
            if a.no_reroute {
                cfg.reroute.enabled = false;
            }
            // the same checks as for the file
            let text = toml::to_string(&cfg).context("re-encoding the configuration")?;
            AgentConfig::parse(&text).map_err(|e| anyhow::anyhow!("invalid option: {}", e.split_once(": ").map(|x| x.1).unwrap_or(&e)))?;
            tokio_rt()?.block_on(agent::run(cfg))
        }
        Cmd::Apply { config, check, validate } => {
            let cfg = apply::load(&config)?;
            let desired = apply::desired_all(&cfg.cc).map_err(|(_, _, m)| failure::bad_value(m))?;
            if validate {
                println!("{}: valid ({} CCs, {} policy entries)", config.display(), desired.len(), cfg.policy.len());
                return Ok(());
            }
            let changes = apply::apply(cfg.default_cc.as_deref(), &desired, check)?;
            if json {
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
        Cmd::Check => {
            let r = check::evaluate(&check::gather(std::path::Path::new("/"), &kernel::module_dir()));
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                check::print(&r);
            }
            if !r.ready {
                bail!("this host cannot run every xdcc CC (see the report)");
            }
            Ok(())
        }
        Cmd::Cc(CcCmd::Known) => {
            if json {
                let v: Vec<_> = xdcc_algo::CCS
                    .iter()
                    .map(|c| {
                        serde_json::json!({"name": c.name, "module": c.module, "needs_ecn": c.needs_ecn,
                            "paper": c.paper, "tunables": c.tunables, "info_fields": c.info_fields})
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                for c in xdcc_algo::CCS.iter() {
                    println!("{} {} {} {}", c.name, c.module, if c.needs_ecn { "ecn" } else { "no-ecn" }, c.paper);
                }
            }
            Ok(())
        }
        Cmd::Cc(CcCmd::List) => {
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
            Ok(())
        }
        Cmd::Cc(CcCmd::Set { name }) => {
            kernel::cc_set(&name)?;
            println!("default congestion control{}: {name}", netns.map(|n| format!(" in netns {n}")).unwrap_or_default());
            Ok(())
        }
        Cmd::Cc(CcCmd::Load { cc, bpf: true, replace }) => {
            let r = bpfcc::load(&cc, replace)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                println!("{} {} (pinned at {})", if replace { "replaced" } else { "loaded" }, r.name, r.pinned);
                let insns: Vec<String> = r.verified_insns.iter().map(|(p, n)| format!("{p} {n}")).collect();
                println!("verifier instructions processed (limit 1000000): {}", insns.join(", "));
            }
            Ok(())
        }
        Cmd::Cc(CcCmd::Load { cc, bpf: false, .. }) => {
            let path = kernel::module_load(&cc)?;
            println!("loaded {path}");
            Ok(())
        }
        Cmd::Cc(CcCmd::Unload { cc, bpf: true }) => {
            bpfcc::unload(&cc)?;
            println!("unloaded bpf_{}", bpfcc::algo_name(&cc)?);
            Ok(())
        }
        Cmd::Cc(CcCmd::Trace { cc, duration, ports }) => {
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
            let waited = tokio_rt()?.block_on(async {
                tokio::select! {
                    r = wait_stop(duration) => r,
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
        Cmd::Cc(CcCmd::Unload { cc, bpf: false }) => {
            kernel::module_unload(&cc)?;
            println!("unloaded {cc}");
            Ok(())
        }
        Cmd::Module(ModuleCmd::List) => {
            let l = kernel::module_list();
            if json {
                println!("{}", serde_json::to_string_pretty(&l)?);
            } else {
                println!("{:<12} {:<8} {:<8} {:<5} FILE", "MODULE", "CC", "LOADED", "USERS");
                for m in l {
                    println!(
                        "{:<12} {:<8} {:<8} {:<5} {}",
                        m.name,
                        m.cc,
                        if m.loaded { "yes" } else { "no" },
                        m.refcount.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
                        m.file.unwrap_or_else(|| "-".into())
                    );
                }
            }
            Ok(())
        }
        Cmd::Module(ModuleCmd::Load { module }) => {
            let path = kernel::module_load(&module)?;
            println!("loaded {path}");
            Ok(())
        }
        Cmd::Module(ModuleCmd::Unload { module }) => {
            kernel::module_unload(&module)?;
            println!("unloaded {module}");
            Ok(())
        }
        Cmd::Tunable(TunableCmd::List { cc }) => {
            let l = kernel::tunable_list(&cc)?;
            if json {
                let m: serde_json::Map<String, serde_json::Value> = l.into_iter().map(|(k, v)| (k, v.into())).collect();
                println!("{}", serde_json::to_string_pretty(&m)?);
            } else {
                for (k, v) in l {
                    println!("{cc}.{k} = {v}");
                }
            }
            Ok(())
        }
        Cmd::Tunable(TunableCmd::Get { cc, name }) => {
            println!("{}", kernel::tunable_get(&cc, &name)?);
            Ok(())
        }
        Cmd::Tunable(TunableCmd::Preset { cc, name: None }) => {
            for (c, name, doc) in kernel::presets_of(&cc)? {
                println!("{c} {name:<14} {doc}");
            }
            Ok(())
        }
        Cmd::Tunable(TunableCmd::Preset { cc, name: Some(name) }) => {
            for (k, v) in kernel::tunable_preset(&cc, &name)? {
                println!("{cc}.{k} = {v}");
            }
            Ok(())
        }
        Cmd::Tunable(TunableCmd::Set { cc, name, value }) => {
            let v = kernel::tunable_set(&cc, &name, &value)?;
            println!("{cc}.{name} = {v}");
            Ok(())
        }
        Cmd::Flows { watch, all } => flows_cmd(sock, json, watch, all),
        Cmd::Stats => {
            let data = need_agent(sock, &Request::Stats)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&data)?);
            } else {
                print_stats(&data);
            }
            Ok(())
        }
        Cmd::Reroute(RerouteCmd::Show) => {
            let data = need_agent(sock, &Request::RerouteGet)?;
            let s: RerouteSettings = serde_json::from_value(data)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print_reroute(&s);
            }
            Ok(())
        }
        Cmd::Reroute(RerouteCmd::Set { name, value }) => {
            let v: u32 = match value.as_str() {
                "true" | "on" | "yes" => 1,
                "false" | "off" | "no" => 0,
                s => s.parse().map_err(|_| anyhow::anyhow!("`{s}` is not a non-negative integer or on/off"))?,
            };
            // validate locally first for a message even without an agent
            RerouteSettings::default().set(&name, v)?;
            let data = need_agent(sock, &Request::RerouteSet { name: name.clone(), value: v })?;
            let s: RerouteSettings = serde_json::from_value(data)?;
            println!("reroute.{name} = {}", s.get(&name).unwrap_or(v));
            Ok(())
        }
        Cmd::Reroute(RerouteCmd::Force { local, remote }) => {
            let data = need_agent(sock, &Request::RerouteForce { local, remote })?;
            println!("forced a move of {} flow(s) at their next round", data["flows"]);
            Ok(())
        }
        Cmd::Metrics => {
            let data = need_agent(sock, &Request::Metrics)?;
            print!("{}", data.as_str().unwrap_or_default());
            Ok(())
        }
        Cmd::Switch(c) => switch_cmd(c),
        Cmd::MarkAmrt { iface, profile, rate_mbit, mtu, hook, transit, duration, metrics } => {
            let (rate_mbit, mtu, transit) = if let Some(name) = profile {
                let mut p = xdcc_switch::Profile::load(&name)?;
                if let Some(r) = rate_mbit {
                    p = p.with_rate(r)?;
                }
                let Some(a) = &p.amrt else {
                    bail!("switch profile {name} has no [amrt] section");
                };
                (p.port.rate_mbit, p.port.mtu, a.transit)
            } else {
                let Some(rate_mbit) = rate_mbit else {
                    bail!("give --rate-mbit (the port's line rate) or --profile");
                };
                (rate_mbit, mtu.unwrap_or(1500), transit)
            };
            tokio_rt()?.block_on(mark_amrt(&iface, rate_mbit, mtu, &hook, transit, duration, metrics))
        }
        Cmd::MarkPhantom { iface, profile, rate_mbit, drain_pct, size_bytes, kmin_pct, kmax_pct, feed, duration, metrics } => {
            let (cfg, rate_mbit, profile_feed) = if let Some(name) = profile {
                let mut p = xdcc_switch::Profile::load(&name)?;
                if let Some(r) = rate_mbit {
                    p = p.with_rate(r)?;
                }
                let Some(ph) = &p.phantom else {
                    bail!("switch profile {name} has no [phantom] section");
                };
                let size = p.phantom_size_bytes();
                let cfg = xdcc_common::PhantomConfig::for_port(p.port.rate_mbit * 1_000_000, ph.drain_pct, size, ph.kmin_pct, ph.kmax_pct);
                (cfg, p.port.rate_mbit, ph.feed)
            } else {
                let Some(rate_mbit) = rate_mbit else {
                    bail!("give --rate-mbit (the port's line rate) or --profile");
                };
                let size = size_bytes.unwrap_or((rate_mbit * 1_000_000 / 8 / 1000).max(30_000));
                if !(kmin_pct < kmax_pct && kmax_pct <= 100) {
                    bail!("need --kmin-pct < --kmax-pct <= 100 (got {kmin_pct}, {kmax_pct})");
                }
                let cfg = xdcc_common::PhantomConfig::for_port(rate_mbit * 1_000_000, drain_pct, size, kmin_pct, kmax_pct);
                (cfg, rate_mbit, xdcc_switch::PhantomFeed::Enqueue)
            };
            let cfg = match feed.unwrap_or(profile_feed) {
                xdcc_switch::PhantomFeed::Enqueue => cfg,
                xdcc_switch::PhantomFeed::Link => cfg.link_fed(rate_mbit * 1_000_000),
            };
            cfg.check().map_err(|e| anyhow::anyhow!("phantom queue: {e}"))?;
            tokio_rt()?.block_on(mark_phantom(&iface, cfg, duration, metrics))
        }
        Cmd::MarkCe { iface, every, duration, metrics } => tokio_rt()?.block_on(mark_ce(&iface, every, duration, metrics)),
        Cmd::Sample { sockets, ports, interval_ms, duration, ipv6 } => {
            if let Some(d) = duration {
                if !(d.is_finite() && d > 0.0) {
                    bail!(failure::bad_value(format!("--duration {d}: must be a positive number of seconds")));
                }
            }
            let plan = sampler::Plan {
                sockets,
                ports,
                period: std::time::Duration::from_millis(interval_ms),
                duration: duration.map(std::time::Duration::from_secs_f64),
                ipv6,
            };
            sampler::run(&plan, &mut std::io::BufWriter::new(std::io::stdout().lock()))
        }
        Cmd::Flowgen { plan, out } => flowgen::run(&flowgen::Plan::load(&plan)?, &out),
        Cmd::Completions { shell } => {
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "xdcc", &mut std::io::stdout());
            Ok(())
        }
        Cmd::Man { out: None } => {
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
                .render(&mut std::io::stdout())
                .context("writing the man page")
        }
        Cmd::Man { out: Some(dir) } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(<Cli as clap::CommandFactory>::command(), &dir)
                .with_context(|| format!("writing the man pages to {}", dir.display()))
        }
    }
}

fn switch_cmd(c: SwitchCmd) -> Result<()> {
    use xdcc_switch::{Marking, Profile, BUILTIN};
    let load = |name: &str, rate: Option<u64>| -> Result<Profile> {
        let p = Profile::load(name)?;
        Ok(match rate {
            Some(r) => p.with_rate(r)?,
            None => p,
        })
    };
    match c {
        SwitchCmd::List => {
            for (name, _) in BUILTIN {
                println!("{name:<22} {}", Profile::load(name)?.description);
            }
        }
        SwitchCmd::Show { profile, iface, rate_mbit } => {
            let p = load(&profile, rate_mbit)?;
            println!("{}", p.description);
            println!("rate {} Mbit/s, buffer {} bytes, mtu {}", p.port.rate_mbit, p.buffer_bytes(), p.port.mtu);
            match &p.marking {
                Marking::None {} => println!("marking: none"),
                m => {
                    let (lo, hi) = p.red_thresholds();
                    println!("marking: {m:?} -> {lo}..{hi} bytes");
                }
            }
            if let Some(w) = &p.wan {
                println!("wan: {w:?}");
            }
            if let Some(ph) = &p.phantom {
                let size = p.phantom_size_bytes();
                let (lo, hi) = (size * ph.kmin_pct / 100, size * ph.kmax_pct / 100);
                println!(
                    "phantom queue: drain {} % of line rate, size {size} bytes, marking {lo}..{hi} bytes \
                     (eBPF: xdcc mark-phantom --profile {profile} --iface {iface})",
                    ph.drain_pct
                );
            }
            if let Some(a) = &p.amrt {
                println!(
                    "amrt: anti-ECN marking ({}; eBPF on the next hop's ingress: xdcc mark-amrt --profile {profile} --iface <next hop's interface>)",
                    if a.transit { "transit: CE = CE AND spare" } else { "first hop: CE = spare" }
                );
            }
            for cmd in p.render(&iface) {
                println!("tc {}", cmd.join(" "));
            }
        }
        SwitchCmd::Apply { profile, iface, rate_mbit } => {
            let p = load(&profile, rate_mbit)?;
            for line in xdcc_switch::apply(&p, &iface, None)? {
                println!("{line}");
            }
            if p.phantom.is_some() {
                println!("(its phantom queue is an eBPF marker: run `xdcc mark-phantom --profile {profile} --iface {iface}` beside it)");
            }
            if p.amrt.is_some() {
                println!(
                    "(its anti-ECN marking is an eBPF marker on the next hop: run `xdcc mark-amrt --profile {profile} --iface <next hop's interface>` there)"
                );
            }
        }
        SwitchCmd::Revert { iface } => {
            xdcc_switch::revert(&iface, None)?;
            println!("reverted {iface}");
        }
    }
    Ok(())
}

fn tokio_rt() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().context("starting tokio")
}

fn need_agent(sock: &Path, req: &Request) -> Result<serde_json::Value> {
    match proto::call(sock, req)? {
        Some(v) => Ok(v),
        None => Err(failure::no_agent(format!("no xdcc agent at {} (start one with `xdcc agent`)", sock.display()))),
    }
}

fn flows_cmd(sock: &Path, json: bool, watch: Option<f64>, all: bool) -> Result<()> {
    if let Some(s) = watch {
        if !(s.is_finite() && s >= 0.1) {
            bail!("--watch interval must be at least 0.1 s");
        }
    }
    loop {
        let (rows, note) = match proto::call(sock, &Request::Flows { all })? {
            Some(v) => (serde_json::from_value::<Vec<FlowView>>(v)?, None),
            None => {
                let rows: Vec<FlowView> = sockdiag::tcp_sockets()?
                    .iter()
                    .filter(|s| s.state != "time-wait")
                    .map(flows::from_socket)
                    .collect();
                (rows, Some("(no agent: tcp_info only; start `xdcc agent` for ECN, RTT histograms and paths)"))
            }
        };
        let mut out = std::io::stdout().lock();
        if watch.is_some() && !json {
            write!(out, "\x1b[H\x1b[2J")?; // clear the terminal
        }
        if json && watch.is_some() {
            writeln!(out, "{}", serde_json::to_string(&rows)?)?; // JSON Lines
        } else if json {
            writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        } else {
            write!(out, "{}", flows::render_table(&rows))?;
            if let Some(n) = note {
                writeln!(out, "{n}")?;
            }
        }
        out.flush()?;
        match watch {
            Some(s) => std::thread::sleep(Duration::from_secs_f64(s)),
            None => return Ok(()),
        }
    }
}

fn print_stats(d: &serde_json::Value) {
    for k in [
        "uptime_s",
        "cgroup",
        "interfaces",
        "flows_tracked",
        "flows_retained_closed",
        "flows_opened",
        "flows_closed",
        "reroutes",
        "labels_rewritten",
        "untracked_packets",
        "insert_failures",
        "closed_ring_full",
    ] {
        println!("{k:<22} {}", d[k]);
    }
    if let Some(dests) = d["destinations"].as_array() {
        for x in dests {
            println!("path health {:<26} healthy ids {}", x["destination"].as_str().unwrap_or("?"), x["healthy_paths"]);
        }
    }
}

fn print_reroute(s: &RerouteSettings) {
    for (name, lo, hi, what) in REROUTE_KEYS {
        println!("{name:<24} {:<6} ({lo}..={hi}) {what}", s.get(name).unwrap_or(0));
    }
}

/// A marker's BPF object, shared with its metrics server.
type SharedBpf = std::sync::Arc<std::sync::Mutex<aya::Ebpf>>;

/// Serves a marker's counters on `addr` (if given), read from its stats map
/// at every scrape by `values`.
fn serve_marker_metrics(
    addr: Option<String>,
    marker: &'static str,
    iface: &str,
    bpf: &SharedBpf,
    values: fn(&mut aya::Ebpf) -> Result<Vec<metrics::MarkerValue>>,
) -> Result<()> {
    let Some(addr) = addr else { return Ok(()) };
    let (bpf, iface) = (bpf.clone(), iface.to_string());
    metrics::serve_with(&addr, move || metrics::render_marker(marker, &iface, &values(&mut bpf.lock().unwrap())?))?;
    println!("{marker} marker's metrics on http://{addr}/metrics");
    Ok(())
}

fn phantom_values(bpf: &mut aya::Ebpf) -> Result<Vec<metrics::MarkerValue>> {
    use metrics::MarkerValue::{Counter, Gauge};
    let s = ebpf::phantom_stats(bpf)?;
    Ok(vec![
        Counter("marker_packets", "packets the marker saw", s.packets),
        Counter("marker_bytes", "bytes the marker saw", s.bytes),
        Counter("marker_ect_packets", "ECN-capable packets the marker saw", s.ect_packets),
        Counter("marker_marked_packets", "packets the marker set CE on", s.marked),
        Gauge("marker_phantom_max_queue_bytes", "the phantom queue's largest size since the marker started", s.max_queue_bytes),
        Gauge("marker_phantom_max_mirror_bytes", "the link mirror's largest backlog since the marker started (link feed)", s.max_mirror_bytes),
    ])
}

fn amrt_values(bpf: &mut aya::Ebpf) -> Result<Vec<metrics::MarkerValue>> {
    use metrics::MarkerValue::Counter;
    let s = ebpf::amrt_stats(bpf)?;
    Ok(vec![
        Counter("marker_ect_packets", "ECN-capable packets the marker saw", s.ect_packets),
        Counter("marker_marked_packets", "packets the marker set CE on (spare bandwidth)", s.marked),
        Counter("marker_cleared_packets", "packets the marker cleared CE on (transit: no spare bandwidth here)", s.cleared),
    ])
}

fn mark_ce_values(bpf: &mut aya::Ebpf) -> Result<Vec<metrics::MarkerValue>> {
    use metrics::MarkerValue::Counter;
    let s = ebpf::mark_ce_stats(bpf)?;
    Ok(vec![
        Counter("marker_ect_packets", "ECN-capable packets the marker saw", s.ect_seen),
        Counter("marker_marked_packets", "packets the marker set CE on", s.marked),
    ])
}

async fn mark_phantom(iface: &str, cfg: xdcc_common::PhantomConfig, duration: Option<u64>, metrics: Option<String>) -> Result<()> {
    agent::check_interface(iface).await?;
    let mut bpf = ebpf::load()?;
    let _logger = aya_log::EbpfLogger::init(&mut bpf).ok();
    ebpf::phantom_set(&mut bpf, &cfg)?;
    ebpf::attach_tc(&mut bpf, "xdcc_phantom", iface, aya::programs::TcAttachType::Egress)?;
    let fed = if cfg.line_bytes_per_sec == 0 {
        "at enqueue".to_string()
    } else {
        format!("by a link of {} B/s", cfg.line_bytes_per_sec)
    };
    println!(
        "phantom queue on {iface}: drain {} B/s, size {} B, marking {}..{} B, fed {fed}",
        cfg.drain_bytes_per_sec, cfg.size_bytes, cfg.kmin_bytes, cfg.kmax_bytes
    );
    let bpf: SharedBpf = std::sync::Arc::new(std::sync::Mutex::new(bpf));
    serve_marker_metrics(metrics, "phantom", iface, &bpf, phantom_values)?;
    wait_stop(duration).await?;
    let s = ebpf::phantom_stats(&mut bpf.lock().unwrap())?;
    println!(
        "{}",
        serde_json::json!({ "iface": iface, "packets": s.packets, "ect_packets": s.ect_packets,
            "marked": s.marked, "max_queue_bytes": s.max_queue_bytes, "bytes": s.bytes, "max_mirror_bytes": s.max_mirror_bytes })
    );
    Ok(())
}

async fn mark_amrt(
    iface: &str,
    rate_mbit: u64,
    mtu: u64,
    hook: &str,
    transit: bool,
    duration: Option<u64>,
    metrics: Option<String>,
) -> Result<()> {
    agent::check_interface(iface).await?;
    let cfg = xdcc_common::AmrtConfig::for_port(rate_mbit * 1_000_000, mtu, transit).map_err(failure::bad_value)?;
    let mut bpf = ebpf::load()?;
    let _logger = aya_log::EbpfLogger::init(&mut bpf).ok();
    ebpf::amrt_set(&mut bpf, &cfg)?;
    let h = if hook == "egress" { aya::programs::TcAttachType::Egress } else { aya::programs::TcAttachType::Ingress };
    ebpf::attach_tc(&mut bpf, "xdcc_amrt", iface, h)?;
    println!("AMRT anti-ECN marking on {iface} ({hook}, {rate_mbit} Mbit/s, {})", if transit { "transit" } else { "first hop" });
    let bpf: SharedBpf = std::sync::Arc::new(std::sync::Mutex::new(bpf));
    serve_marker_metrics(metrics, "amrt", iface, &bpf, amrt_values)?;
    wait_stop(duration).await?;
    let s = ebpf::amrt_stats(&mut bpf.lock().unwrap())?;
    println!("{}", serde_json::json!({ "iface": iface, "ecn_packets": s.ect_packets, "marked": s.marked, "cleared": s.cleared }));
    Ok(())
}

/// Until SIGINT/SIGTERM or `duration` seconds.
async fn wait_stop(duration: Option<u64>) -> Result<()> {
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

async fn mark_ce(iface: &str, every: u64, duration: Option<u64>, metrics: Option<String>) -> Result<()> {
    agent::check_interface(iface).await?;
    let mut bpf = ebpf::load()?;
    let _logger = aya_log::EbpfLogger::init(&mut bpf).ok();
    ebpf::mark_ce_set(&mut bpf, every)?;
    ebpf::attach_tc(&mut bpf, "xdcc_mark_ce", iface, aya::programs::TcAttachType::Egress)?;
    println!("marking CE on every {every}th ECT packet leaving {iface}");
    let bpf: SharedBpf = std::sync::Arc::new(std::sync::Mutex::new(bpf));
    serve_marker_metrics(metrics, "ce", iface, &bpf, mark_ce_values)?;
    wait_stop(duration).await?;
    let s = ebpf::mark_ce_stats(&mut bpf.lock().unwrap())?;
    println!("{}", serde_json::json!({ "iface": iface, "every": every, "ect_packets": s.ect_seen, "marked_segments": s.marked }));
    Ok(())
}
