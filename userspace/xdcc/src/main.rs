//! `xdcc`: the agent and command-line tool of xdcc, a thin binary over the
//! `xdcc` library (`lib.rs`): the command line is defined here, and each
//! subcommand lives in its own file under `cli/`.

mod cli;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use xdcc::{config::DEFAULT_SOCKET, failure, kernel};

#[derive(Parser)]
#[command(
    name = "xdcc",
    version,
    about = "xdcc: datacenter and cross-datacenter congestion controls for Linux",
    after_help = "Exit status: 0 success, 1 other failure, 2 usage, 3 no agent, 4 the kernel refused, 5 bad value."
)]
pub struct Cli {
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
    Agent(cli::agent::AgentArgs),
    /// Make the system match the configuration file: register its
    /// [cc.<name>] CCs (BPF or module), write their network and tunables
    /// where they differ, set default_cc; prints each change. Nothing
    /// changes on a bad file (the error names its line).
    Apply(cli::apply::ApplyArgs),
    /// Preflight of this host: kernel, BTF, struct_ops, bpffs, cgroup2,
    /// tcp_ecn, module policy, and which xdcc CCs can load here with which
    /// backend (bpf_<cc> or the tcp_<cc> module). Exit 0 when every CC has
    /// a backend, 1 when something is missing (said how to get it).
    Check,
    /// List or select congestion controls (net.ipv4.tcp_congestion_control).
    #[command(subcommand)]
    Cc(cli::cc::CcCmd),
    /// List, load or unload the xdcc kernel modules.
    #[command(subcommand)]
    Module(cli::module::ModuleCmd),
    /// Show or change a CC's tunables: a module's (/proc/sys/net/xdcc/<cc>/)
    /// or, for bpf_<cc>, the BPF CC's configuration map.
    #[command(subcommand)]
    Tunable(cli::tunable::TunableCmd),
    /// Per-flow telemetry: bytes, ECN marks, RTT, window, path.
    Flows(cli::flows::FlowsArgs),
    /// Agent counters, attachment points and path health.
    Stats,
    /// Show, tune or force flow-label rerouting.
    #[command(subcommand)]
    Reroute(cli::reroute::RerouteCmd),
    /// Print the agent's Prometheus metrics.
    Metrics,
    /// Microsecond TCP timestamps on the routes to datacenter destinations,
    /// so that Linux can undo a CC's reaction to a spurious retransmission
    /// at µs RTTs (route feature tcp_usec_ts, Linux 6.7+).
    #[command(subcommand)]
    UsecTs(cli::usects::UsecTsCmd),
    /// Uno's phantom-queue ECN marker on an interface acting as a switch
    /// port: a virtual queue draining at a fraction of the line rate, CE
    /// marks between kmin and kmax of its size. Foreground; prints counts.
    /// Parameters from the flags, or from a switch profile's [phantom].
    MarkPhantom(cli::mark::MarkPhantomArgs),
    /// AMRT's anti-ECN marker: CE on packets that follow at least one MTU's
    /// transmission time of idle link (spare bandwidth). Attach it where
    /// packets appear at their dequeue time: the ingress of the next hop.
    /// Parameters from the flags, or from a switch profile's [amrt].
    MarkAmrt(cli::mark::MarkAmrtArgs),
    /// Switch-port profiles (switch-config/): list, show, apply to or revert
    /// an interface acting as a DC switch or WAN border port.
    #[command(subcommand)]
    Switch(cli::switch::SwitchCmd),
    /// Mark CE on every Nth ECT packet leaving an interface (a test/demo
    /// router port); runs in the foreground and prints the counts at exit.
    MarkCe(cli::mark::MarkCeArgs),
    /// Drop packets leaving an interface as Uno's Table 1 describes a lossy
    /// WAN link: in blocks of consecutive packets, each losing exactly j of
    /// them with the given probabilities (the host has no netem); runs in
    /// the foreground and prints the counts at exit.
    InjectLoss(cli::mark::InjectLossArgs),
    /// Send a file over xdcc's UDP transport to an `xdcc recv`: UnoCC's
    /// window, every 8 packets with 2 Reed-Solomon parity packets (UnoRC),
    /// the shared key proven both ways, the SHA-256 checked at the end.
    Send(cli::transfer::SendArgs),
    /// Receive one file from an `xdcc send`; it is put in place only once
    /// its SHA-256 matches the sender's (an existing file only with
    /// --overwrite). Prints a summary.
    Recv(cli::transfer::RecvArgs),
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
    let default_level = if matches!(cli.cmd, Cmd::Agent(_) | Cmd::MarkCe(_) | Cmd::InjectLoss(_)) { "info,netlink_packet_route=error" } else { "warn,netlink_packet_route=error" };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default_level)).init();
    let ctx = cli::Ctx { sock: &cli.socket, json: cli.json, netns: cli.netns.clone() };
    let result = match cli.cmd {
        Cmd::Agent(a) => cli::agent::run(a, &ctx),
        Cmd::Apply(a) => cli::apply::run(a, &ctx),
        Cmd::Check => cli::check::run(&ctx),
        Cmd::Cc(c) => cli::cc::run(c, &ctx),
        Cmd::Module(c) => cli::module::run(c, &ctx),
        Cmd::Tunable(c) => cli::tunable::run(c, &ctx),
        Cmd::Flows(a) => cli::flows::run(a, &ctx),
        Cmd::Stats => cli::stats::run(&ctx),
        Cmd::Reroute(c) => cli::reroute::run(c, &ctx),
        Cmd::UsecTs(c) => cli::usects::run(c, &ctx),
        Cmd::Metrics => cli::stats::metrics(&ctx),
        Cmd::MarkPhantom(a) => cli::mark::run_phantom(a),
        Cmd::MarkAmrt(a) => cli::mark::run_amrt(a),
        Cmd::Switch(c) => cli::switch::run(c),
        Cmd::MarkCe(a) => cli::mark::run_ce(a),
        Cmd::InjectLoss(a) => cli::mark::run_loss(a),
        Cmd::Send(a) => cli::transfer::send(a, &ctx),
        Cmd::Recv(a) => cli::transfer::recv(a, &ctx),
        Cmd::Completions { shell } => cli::docs::completions(shell),
        Cmd::Man { out } => cli::docs::man(out),
    };
    if let Err(e) = result {
        eprintln!("xdcc: error: {e:#}");
        std::process::exit(failure::exit_code(&e).into());
    }
}
