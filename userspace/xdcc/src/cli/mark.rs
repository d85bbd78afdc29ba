//! `xdcc mark-phantom`, `mark-amrt`, `mark-ce`, `inject-loss`: the
//! switch-side eBPF markers and the loss injector, each a foreground process
//! on the switch or router host that prints its counts at exit and, with
//! `--metrics`, serves them.

use anyhow::{bail, Result};
use clap::Args;
use xdcc::{agent, ebpf, failure, metrics};

use super::{tokio_rt, wait_stop};

#[derive(Args)]
pub struct MarkPhantomArgs {
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
    /// The rate of every ingress link (the senders' NICs): the queue grows
    /// only by what the links deliver, so a burst a software router gets
    /// at once (a GSO packet, a CPU's batch) queues as it would behind
    /// such links. 0 (default): packets arrive at once.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=400_000))]
    ingress_rate_mbit: u64,
    /// Bytes the port sends ahead of its rate: a software shaper's bucket
    /// (HTB: its burst plus one GSO packet, as its tokens may go negative
    /// for one packet). The queue, a fluid draining at the rate, is judged
    /// less this, as such a port queues. 0 (default): a hardware port.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1 << 30))]
    port_burst_bytes: u64,
    #[arg(long)]
    duration: Option<u64>,
    /// Serve the marker's counters for Prometheus on ADDR (host:port).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
}

#[derive(Args)]
pub struct MarkAmrtArgs {
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
}

#[derive(Args)]
pub struct MarkCeArgs {
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
}

pub fn run_phantom(a: MarkPhantomArgs) -> Result<()> {
    let MarkPhantomArgs { iface, profile, rate_mbit, drain_pct, size_bytes, kmin_pct, kmax_pct, feed, ingress_rate_mbit, port_burst_bytes, duration, metrics } = a;
    let (cfg, rate_mbit, profile_feed) = if let Some(name) = profile {
        let mut p = xdcc_switch::Profile::load(&name)?;
        if let Some(r) = rate_mbit {
            p = p.with_rate(r)?;
        }
        let Some(ph) = &p.phantom else {
            bail!("switch profile {name} has no [phantom] section");
        };
        let size = p.phantom_size_bytes();
        let cfg = xdcc_common::markers::PhantomConfig::for_port(p.port.rate_mbit * 1_000_000, ph.drain_pct, size, ph.kmin_pct, ph.kmax_pct);
        (cfg, p.port.rate_mbit, ph.feed)
    } else {
        let Some(rate_mbit) = rate_mbit else {
            bail!("give --rate-mbit (the port's line rate) or --profile");
        };
        let size = size_bytes.unwrap_or((rate_mbit * 1_000_000 / 8 / 1000).max(30_000));
        if !(kmin_pct < kmax_pct && kmax_pct <= 100) {
            bail!("need --kmin-pct < --kmax-pct <= 100 (got {kmin_pct}, {kmax_pct})");
        }
        let cfg = xdcc_common::markers::PhantomConfig::for_port(rate_mbit * 1_000_000, drain_pct, size, kmin_pct, kmax_pct);
        (cfg, rate_mbit, xdcc_switch::PhantomFeed::Enqueue)
    };
    let cfg = match feed.unwrap_or(profile_feed) {
        xdcc_switch::PhantomFeed::Enqueue => cfg,
        xdcc_switch::PhantomFeed::Link => cfg.link_fed(rate_mbit * 1_000_000),
    };
    let cfg = cfg.behind_links(ingress_rate_mbit * 1_000_000).shaper_burst(port_burst_bytes);
    cfg.check().map_err(|e| anyhow::anyhow!("phantom queue: {e}"))?;
    tokio_rt()?.block_on(mark_phantom(&iface, cfg, duration, metrics))
}

pub fn run_amrt(a: MarkAmrtArgs) -> Result<()> {
    let MarkAmrtArgs { iface, profile, rate_mbit, mtu, hook, transit, duration, metrics } = a;
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

#[derive(Args)]
pub struct InjectLossArgs {
    #[arg(long)]
    iface: String,
    /// Packets per block (1..=64; Uno's Table 1: 10).
    #[arg(long, default_value_t = 10)]
    block: u32,
    /// The probabilities that a block loses exactly 1, 2, ... of its
    /// packets, comma-separated (Table 1: 3e-4,7.5e-5,1.6e-5). With --block 1
    /// and one value: independent loss at that rate.
    #[arg(long, value_delimiter = ',', required = true, num_args = 1..)]
    p: Vec<f64>,
    /// Stop after this many seconds (default: until SIGINT/SIGTERM).
    #[arg(long)]
    duration: Option<u64>,
    /// Serve the injector's counters for Prometheus on ADDR (host:port).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
}

/// The injector's configuration from the command line's probabilities.
fn loss_config(block: u32, p: &[f64]) -> Result<xdcc_common::markers::LossConfig> {
    let mut ppm = Vec::with_capacity(p.len());
    for &v in p {
        if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
            return Err(failure::bad_value(format!("--p {v}: a probability within [0, 1]")));
        }
        ppm.push((v * 1e6).round() as u32);
    }
    xdcc_common::markers::LossConfig::from_ppm(block, &ppm).map_err(|e| failure::bad_value(format!("--block {block} --p {p:?}: {e}")))
}

pub fn run_loss(a: InjectLossArgs) -> Result<()> {
    let cfg = loss_config(a.block, &a.p)?;
    tokio_rt()?.block_on(inject_loss(&a.iface, cfg, a.duration, a.metrics))
}

pub fn run_ce(a: MarkCeArgs) -> Result<()> {
    tokio_rt()?.block_on(mark_ce(&a.iface, a.every, a.duration, a.metrics))
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
        Gauge("marker_phantom_max_on_wires_bytes", "most bytes still on the ingress links' wires since the marker started (ingress model)", s.max_on_wires_bytes),
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

async fn mark_phantom(iface: &str, cfg: xdcc_common::markers::PhantomConfig, duration: Option<u64>, metrics: Option<String>) -> Result<()> {
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
    let arrivals = if cfg.ingress_bytes_per_sec == 0 {
        "at once".to_string()
    } else {
        format!("over ingress links of {} B/s", cfg.ingress_bytes_per_sec)
    };
    println!(
        "phantom queue on {iface}: drain {} B/s, size {} B, marking {}..{} B, fed {fed}, arrivals {arrivals}{}",
        cfg.drain_bytes_per_sec,
        cfg.size_bytes,
        cfg.kmin_bytes,
        cfg.kmax_bytes,
        if cfg.port_burst_bytes == 0 { String::new() } else { format!(", less the port's burst of {} B", cfg.port_burst_bytes) }
    );
    let bpf: SharedBpf = std::sync::Arc::new(std::sync::Mutex::new(bpf));
    serve_marker_metrics(metrics, "phantom", iface, &bpf, phantom_values)?;
    wait_stop(duration).await?;
    let s = ebpf::phantom_stats(&mut bpf.lock().unwrap())?;
    println!(
        "{}",
        serde_json::json!({ "iface": iface, "packets": s.packets, "ect_packets": s.ect_packets,
            "marked": s.marked, "max_queue_bytes": s.max_queue_bytes, "bytes": s.bytes, "max_mirror_bytes": s.max_mirror_bytes, "max_on_wires_bytes": s.max_on_wires_bytes })
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
    let cfg = xdcc_common::markers::AmrtConfig::for_port(rate_mbit * 1_000_000, mtu, transit).map_err(failure::bad_value)?;
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

fn loss_values(bpf: &mut aya::Ebpf) -> Result<Vec<metrics::MarkerValue>> {
    use metrics::MarkerValue::Counter;
    let s = ebpf::loss_stats(bpf)?;
    Ok(vec![
        Counter("marker_packets", "packets the injector saw", s.packets),
        Counter("marker_dropped_packets", "packets the injector dropped", s.dropped),
        Counter("marker_loss_blocks", "blocks of packets the injector began", s.blocks),
        Counter("marker_lossy_blocks", "blocks that lost at least one packet", s.lossy_blocks),
    ])
}

async fn inject_loss(iface: &str, cfg: xdcc_common::markers::LossConfig, duration: Option<u64>, metrics: Option<String>) -> Result<()> {
    agent::check_interface(iface).await?;
    let mut bpf = ebpf::load()?;
    ebpf::loss_set(&mut bpf, &cfg)?;
    ebpf::attach_tc(&mut bpf, "xdcc_loss", iface, aya::programs::TcAttachType::Egress)?;
    println!("dropping packets leaving {iface} in blocks of {}, cumulative ppm {:?}", cfg.block, cfg.cum_ppm);
    let bpf: SharedBpf = std::sync::Arc::new(std::sync::Mutex::new(bpf));
    serve_marker_metrics(metrics, "loss", iface, &bpf, loss_values)?;
    wait_stop(duration).await?;
    let s = ebpf::loss_stats(&mut bpf.lock().unwrap())?;
    println!(
        "{}",
        serde_json::json!({ "iface": iface, "block": cfg.block, "packets": s.packets, "dropped": s.dropped, "blocks": s.blocks, "lossy_blocks": s.lossy_blocks })
    );
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
