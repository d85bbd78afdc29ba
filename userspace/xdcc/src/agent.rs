//! `xdcc agent`: loads and attaches the eBPF programs, keeps the flow table
//! (closed flows are retained for a while after the kernel side lets them
//! go), and serves the CLI over a root-only Unix socket and, opt-in,
//! Prometheus text over HTTP.
//!
//! One agent per socket path: a lock file next to the socket refuses a second
//! one. SIGINT/SIGTERM detach everything (the BPF links belong to the
//! process) and remove the socket.

use std::{
    collections::HashMap,
    fs::{self, File, OpenOptions},
    os::unix::fs::{OpenOptionsExt, PermissionsExt},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
use aya::{programs::TcAttachType, Ebpf};
use serde::Serialize;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::{UnixListener, UnixStream},
    signal::unix::{signal, SignalKind},
};
use xdcc_common::{Counters, FlowKey, FlowStats, PATHS};

use crate::{
    config::{AgentConfig, RerouteSettings},
    ebpf,
    flows::{self, FlowView},
    metrics,
    proto::{Request, Response},
};

pub struct State {
    bpf: Ebpf,
    pub settings: RerouteSettings,
    /// Closed flows, with when they were seen closed, by their 4-tuple and
    /// establishment time: a connection that reuses a 4-tuple (common under
    /// churn) is another flow, not an update of the first.
    retained: HashMap<(FlowKey, u64), (FlowStats, Instant)>,
    retain: Duration,
    started: Instant,
    cgroup: PathBuf,
    interfaces: Vec<String>,
    /// Per-CC counters for the Prometheus metrics.
    pub totals: crate::metrics::Totals,
}

#[derive(Serialize)]
pub struct Stats {
    pub uptime_s: u64,
    pub cgroup: String,
    pub interfaces: Vec<String>,
    pub flows_tracked: usize,
    pub flows_retained_closed: usize,
    pub flows_opened: u64,
    pub flows_closed: u64,
    pub reroutes: u64,
    pub labels_rewritten: u64,
    pub untracked_packets: u64,
    pub insert_failures: u64,
    /// Closed flows whose final record found the ring buffer full (kept in
    /// the flow table for the harvest instead, where eviction may take it).
    pub closed_ring_full: u64,
    pub destinations: Vec<DestHealth>,
    pub reroute: RerouteSettings,
}

#[derive(Serialize)]
pub struct DestHealth {
    pub destination: String,
    /// Path ids that ended an uncongested round within the healthy window.
    pub healthy_paths: Vec<u32>,
}

impl State {
    /// Takes closed flows' final records (from the CLOSED ring buffer).
    fn retain_closed(&mut self, records: impl IntoIterator<Item = (FlowKey, FlowStats)>) {
        let now = Instant::now();
        for (k, st) in records {
            self.retained.insert((k, st.established_ns), (st, now));
        }
    }

    /// Moves closed flows left in the kernel map (when the ring buffer was
    /// full) into the agent and forgets those older than the retention time.
    fn harvest(&mut self) -> Result<()> {
        let entries = ebpf::read_flows(&mut self.bpf)?;
        let now = Instant::now();
        let mut map = ebpf::flows_map(&mut self.bpf)?;
        for (k, st) in entries.into_iter().filter(|(_, st)| st.closed_ns != 0) {
            self.retained.insert((k, st.established_ns), (st, now));
            let _ = map.remove(&k);
        }
        let retain = self.retain;
        self.retained.retain(|_, (_, t)| now.duration_since(*t) < retain);
        Ok(())
    }

    pub fn flows(&mut self, all: bool) -> Result<Vec<FlowView>> {
        self.harvest()?;
        let mut entries = ebpf::read_flows(&mut self.bpf)?;
        if all {
            entries.extend(self.retained.iter().map(|((k, _), (st, _))| (*k, *st)));
        }
        let sockets = flows::tcp_sockets().unwrap_or_else(|e| {
            log::warn!("sock_diag unavailable: {e:#}");
            Vec::new()
        });
        Ok(flows::join(&entries, &sockets, ebpf::ktime_ns(), self.settings.to_bpf().label_salt))
    }

    pub fn counters(&mut self) -> Result<Counters> {
        ebpf::counters(&mut self.bpf)
    }

    /// What a metrics scrape shows, read from the eBPF maps, sock_diag and
    /// the kernel's CC list and tunables.
    pub fn scrape(&mut self) -> Result<metrics::Scrape> {
        let flows = self.flows(true)?;
        let counters = self.counters()?;
        let available = crate::kernel::read_sysctl("net/ipv4/tcp_available_congestion_control").unwrap_or_default();
        let ccs = metrics::registered(&available)
            .into_iter()
            .map(|(cc, backend)| {
                // (A CC whose store cannot be read here, e.g. Linux's own
                // dctcp module, has no tunables to show.)
                let tunables = crate::kernel::tunable_store(&cc).and_then(|s| s.list()).unwrap_or_default();
                metrics::RegisteredCc { cc, backend, tunables }
            })
            .collect();
        Ok(metrics::Scrape { flows, counters, ccs })
    }

    /// One scrape rendered as OpenMetrics text.
    pub fn render_metrics(&mut self) -> Result<String> {
        let scrape = self.scrape()?;
        metrics::render(&scrape, &mut self.totals)
    }

    fn stats(&mut self) -> Result<Stats> {
        self.harvest()?;
        let c = ebpf::counters(&mut self.bpf)?;
        let tracked = ebpf::read_flows(&mut self.bpf)?.len();
        let now = ebpf::ktime_ns();
        let window = self.settings.healthy_window_ms as u64 * 1_000_000;
        let destinations = ebpf::path_health(&mut self.bpf)?
            .into_iter()
            .map(|(addr, h)| {
                let key = FlowKey { remote_addr: addr, family: 6, ..Default::default() };
                let healthy_paths = (0..PATHS)
                    .filter(|&i| {
                        let t = h.last_good_ns[i as usize];
                        t != 0 && now.saturating_sub(t) <= window
                    })
                    .collect();
                let v4 = std::net::Ipv6Addr::from(addr).to_ipv4_mapped();
                let destination = match v4 {
                    Some(v4) => v4.to_string(),
                    None => flows::key_addrs(&key).1.ip().to_string(),
                };
                DestHealth { destination, healthy_paths }
            })
            .collect();
        Ok(Stats {
            uptime_s: self.started.elapsed().as_secs(),
            cgroup: self.cgroup.display().to_string(),
            interfaces: self.interfaces.clone(),
            flows_tracked: tracked,
            flows_retained_closed: self.retained.len(),
            flows_opened: c.flows_opened,
            flows_closed: c.flows_closed,
            reroutes: c.reroutes,
            labels_rewritten: c.labels_rewritten,
            untracked_packets: c.untracked_packets,
            insert_failures: c.insert_failures,
            closed_ring_full: c.closed_ring_full,
            destinations,
            reroute: self.settings,
        })
    }

    fn handle(&mut self, req: Request) -> Response {
        let r: Result<Response> = (|| {
            Ok(match req {
                Request::Ping => Response::ok("pong"),
                Request::Flows { all } => Response::ok(self.flows(all)?),
                Request::Stats => Response::ok(self.stats()?),
                Request::RerouteGet => Response::ok(self.settings),
                Request::RerouteSet { name, value } => {
                    let mut s = self.settings;
                    s.set(&name, value)?;
                    ebpf::set_config(&mut self.bpf, &s.to_bpf())?;
                    self.settings = s;
                    log::info!("reroute setting {name} = {value}");
                    Response::ok(self.settings)
                }
                Request::RerouteForce { local, remote } => {
                    let matches = |filter: &Option<String>, addr: std::net::SocketAddr| match filter {
                        None => true,
                        Some(f) => *f == addr.to_string() || *f == addr.ip().to_string(),
                    };
                    let keys: Vec<FlowKey> = ebpf::read_flows(&mut self.bpf)?
                        .into_iter()
                        .filter(|(k, st)| {
                            let (l, r) = flows::key_addrs(k);
                            st.closed_ns == 0 && k.family == 6 && matches(&local, l) && matches(&remote, r)
                        })
                        .map(|(k, _)| k)
                        .collect();
                    for k in &keys {
                        ebpf::force_reroute(&mut self.bpf, k)?;
                    }
                    log::info!("forced reroute of {} flow(s)", keys.len());
                    Response::ok(serde_json::json!({ "flows": keys.len() }))
                }
                Request::Metrics => Response::ok(self.render_metrics()?),
            })
        })();
        r.unwrap_or_else(|e| Response::err(format!("{e:#}")))
    }
}

/// Holds the agent lock (an flock on a file next to the socket) for the
/// process's lifetime; the kernel drops it if the agent dies.
struct Lock {
    _file: nix::fcntl::Flock<File>,
    path: PathBuf,
}

fn take_lock(socket: &Path) -> Result<Lock> {
    use std::io::Write;
    let path = socket.with_extension("lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("opening lock file {}", path.display()))?;
    match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(mut locked) => {
            locked.set_len(0)?;
            writeln!(&mut *locked, "{}", std::process::id())?;
            Ok(Lock { _file: locked, path })
        }
        Err(_) => {
            let pid = fs::read_to_string(&path).unwrap_or_default();
            bail!("another xdcc agent is running (lock {} held by pid {})", path.display(), pid.trim())
        }
    }
}

pub async fn run(cfg: AgentConfig) -> Result<()> {
    if !nix::unistd::Uid::effective().is_root() {
        bail!("xdcc agent must run as root (it loads eBPF programs)");
    }
    let dir = cfg.socket.parent().context("socket path has no directory")?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let lock = take_lock(&cfg.socket)?;

    let mut bpf = ebpf::load()?;
    let logger = aya_log::EbpfLogger::init(&mut bpf).context("initialising aya-log")?;
    ebpf::set_config(&mut bpf, &cfg.reroute.to_bpf())?;
    ebpf::policy_set(&mut bpf, &cfg.policy)?;
    if !cfg.policy.is_empty() {
        let avail = crate::kernel::read_sysctl("net/ipv4/tcp_available_congestion_control").unwrap_or_default();
        for (i, p) in cfg.policy.iter().enumerate() {
            if !avail.split_whitespace().any(|c| c == p.cc) {
                log::warn!("[[policy]] #{} ({} -> {}): {} is not registered yet; its connections keep their CC until it is", i + 1, p.prefix, p.cc, p.cc);
            }
        }
    }
    ebpf::attach_sockops(&mut bpf, &cfg.cgroup)?;
    for iface in &cfg.interfaces {
        check_interface(iface).await?;
        ebpf::attach_tc(&mut bpf, "xdcc_tc_egress", iface, TcAttachType::Egress)?;
        ebpf::attach_tc(&mut bpf, "xdcc_tc_ingress", iface, TcAttachType::Ingress)?;
    }

    let _ = fs::remove_file(&cfg.socket); // stale socket of a dead agent (we hold the lock)
    let listener = UnixListener::bind(&cfg.socket).with_context(|| format!("binding {}", cfg.socket.display()))?;
    fs::set_permissions(&cfg.socket, fs::Permissions::from_mode(0o600))?;

    let state = Arc::new(Mutex::new(State {
        bpf,
        settings: cfg.reroute,
        retained: HashMap::new(),
        retain: Duration::from_secs(cfg.retain_closed_secs),
        started: Instant::now(),
        cgroup: cfg.cgroup.clone(),
        interfaces: cfg.interfaces.clone(),
        totals: Default::default(),
    }));
    if let Some(addr) = &cfg.metrics {
        let state = state.clone();
        metrics::serve_with(addr, move || state.lock().unwrap().render_metrics())?;
        log::info!("Prometheus metrics on http://{addr}/metrics");
    }
    tokio::spawn(log_pump(logger));
    {
        // Closed flows' final records, read as they come.
        let ring = ebpf::take_closed_ring(&mut state.lock().unwrap().bpf)?;
        // SAFETY: the RingBuf owns its map's file descriptor, which stays
        // open and the same for as long as the RingBuf lives, i.e. as long
        // as the AsyncFd that owns it.
        let mut ring = unsafe { tokio::io::unix::AsyncFd::register_with_interest(ring, tokio::io::Interest::READABLE) }
            .map_err(|e| anyhow::anyhow!("polling the CLOSED ring buffer: {}", e.into_parts().1))?;
        let state = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok(mut guard) = ring.readable_mut().await else { break };
                let mut batch = Vec::new();
                while let Some(item) = guard.get_inner_mut().next() {
                    if let Some(r) = ebpf::parse_closed(&item) {
                        batch.push(r);
                    }
                }
                guard.clear_ready();
                state.lock().unwrap().retain_closed(batch);
            }
        });
    }
    {
        let state = state.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                if let Err(e) = state.lock().unwrap().harvest() {
                    log::warn!("harvesting closed flows: {e:#}");
                }
            }
        });
    }
    log::info!(
        "xdcc agent ready: cgroup {}, interfaces [{}], socket {}",
        cfg.cgroup.display(),
        cfg.interfaces.join(", "),
        cfg.socket.display()
    );
    println!("xdcc agent ready (socket {})", cfg.socket.display());

    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            conn = listener.accept() => {
                if let Ok((stream, _)) = conn {
                    tokio::spawn(serve_client(stream, state.clone()));
                }
            }
        }
    }
    log::info!("xdcc agent stopping: detaching programs");
    drop(state); // the BPF links close with the Ebpf object
    let _ = fs::remove_file(&cfg.socket);
    let _ = fs::remove_file(&lock.path);
    println!("xdcc agent stopped");
    Ok(())
}

async fn serve_client(stream: UnixStream, state: Arc<Mutex<State>>) {
    let (r, mut w) = stream.into_split();
    let mut lines = BufReader::new(r).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let resp = match serde_json::from_str::<Request>(&line) {
            Ok(req) => {
                let state = state.clone();
                tokio::task::spawn_blocking(move || state.lock().unwrap().handle(req))
                    .await
                    .unwrap_or_else(|e| Response::err(format!("agent task failed: {e}")))
            }
            Err(e) => Response::err(format!("bad request: {e}")),
        };
        let mut out = serde_json::to_string(&resp).unwrap_or_else(|_| "{\"ok\":false}".into());
        out.push('\n');
        if w.write_all(out.as_bytes()).await.is_err() {
            break;
        }
    }
}

/// Forwards the eBPF programs' aya-log records to the agent's log.
#[allow(deprecated)] // AsyncFd on a raw fd the logger owns and outlives
async fn log_pump(mut logger: aya_log::EbpfLogger<&'static dyn log::Log>) {
    let raw = std::os::fd::AsRawFd::as_raw_fd(&logger);
    let fd = match tokio::io::unix::AsyncFd::with_interest(raw, tokio::io::Interest::READABLE) {
        Ok(fd) => fd,
        Err(e) => {
            log::warn!("eBPF log pump unavailable: {e}");
            return;
        }
    };
    loop {
        match fd.readable().await {
            Ok(mut guard) => {
                logger.flush();
                guard.clear_ready();
            }
            Err(_) => return,
        }
    }
}

/// Fails clearly when an interface does not exist (rtnetlink lookup).
pub async fn check_interface(name: &str) -> Result<u32> {
    use futures::TryStreamExt;
    let (conn, handle, _) = rtnetlink::new_connection().context("opening rtnetlink")?;
    tokio::spawn(conn);
    let mut links = handle.link().get().match_name(name.to_string()).execute();
    match links.try_next().await {
        Ok(Some(msg)) => Ok(msg.header.index),
        Ok(None) | Err(_) => bail!("no such network interface: {name}"),
    }
}
