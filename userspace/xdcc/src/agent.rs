//! `xdcc agent`: loads and attaches the eBPF programs, keeps the flow table
//! (closed flows are retained for a while after the kernel side lets them
//! go, up to a cap), and serves the CLI over a root-only Unix socket and, opt-in,
//! Prometheus text over HTTP.
//!
//! One agent per socket path: a lock file next to the socket refuses a second
//! one. SIGINT/SIGTERM detach everything (the BPF links belong to the
//! process) and remove the socket.

use std::{
    collections::{BTreeMap, HashMap},
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
    closed: ClosedFlows,
    started: Instant,
    cgroup: PathBuf,
    interfaces: Vec<String>,
    /// The kernel flow table's size.
    max_open_flows: u32,
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
    /// Closed flows evicted by `max_closed_flows` before their time was up.
    pub closed_flows_evicted: u64,
    pub flows_opened: u64,
    pub flows_closed: u64,
    pub reroutes: u64,
    pub labels_rewritten: u64,
    pub untracked_packets: u64,
    pub insert_failures: u64,
    /// Closed flows whose final record found the ring buffer full (kept in
    /// the flow table for the harvest instead, where eviction may take it).
    pub closed_ring_full: u64,
    /// Open flows the kernel's flow table evicted (more open at once than
    /// `max_open_flows`): their records are lost.
    pub open_flows_evicted: u64,
    /// The kernel flow table's size (`max_open_flows`).
    pub max_open_flows: u32,
    pub destinations: Vec<DestHealth>,
    pub reroute: RerouteSettings,
}

#[derive(Serialize)]
pub struct DestHealth {
    pub destination: String,
    /// Path ids that ended an uncongested round within the healthy window.
    pub healthy_paths: Vec<u32>,
}

/// Closed flows' final records, by their 4-tuple and establishment time (a
/// connection that reuses a 4-tuple, common under churn, is another flow,
/// not an update of the first), kept for `retain` after they closed and at
/// most `cap` of them: beyond it the oldest by close time go first, in
/// O(log n) each. What leaves is handed back, for the per-CC totals.
struct ClosedFlows {
    /// Each record with its arrival number (its key in `by_close`).
    records: HashMap<(FlowKey, u64), (FlowStats, u64)>,
    /// The same flows by close time (kernel ns), then arrival: oldest first.
    by_close: BTreeMap<(u64, u64), (FlowKey, u64)>,
    arrivals: u64,
    cap: usize,
    retain_ns: u64,
    /// Records the cap evicted (`closed_flows_evicted`).
    evicted: u64,
}

impl ClosedFlows {
    fn new(cap: usize, retain: Duration) -> Self {
        let retain_ns = u64::try_from(retain.as_nanos()).unwrap_or(u64::MAX);
        ClosedFlows { records: HashMap::new(), by_close: BTreeMap::new(), arrivals: 0, cap, retain_ns, evicted: 0 }
    }

    fn len(&self) -> usize {
        self.records.len()
    }

    fn iter(&self) -> impl Iterator<Item = (FlowKey, FlowStats)> + '_ {
        self.records.iter().map(|((k, _), (st, _))| (*k, *st))
    }

    /// Keeps a closed flow's final record (a later record of the same flow
    /// replaces it); the oldest beyond the cap go to `gone`, counted.
    fn insert(&mut self, k: FlowKey, st: FlowStats, gone: &mut Vec<(FlowKey, FlowStats)>) {
        self.arrivals += 1;
        let id = (k, st.established_ns);
        if let Some((old, n)) = self.records.insert(id, (st, self.arrivals)) {
            self.by_close.remove(&(old.closed_ns, n));
        }
        self.by_close.insert((st.closed_ns, self.arrivals), id);
        while self.records.len() > self.cap {
            let Some(r) = self.pop_oldest() else { break };
            gone.push(r);
            self.evicted += 1;
        }
    }

    /// Moves the flows closed `retain` or longer before `now_ns` (the
    /// kernel's monotonic clock, as `closed_ns`) to `gone`.
    fn expire(&mut self, now_ns: u64, gone: &mut Vec<(FlowKey, FlowStats)>) {
        while let Some((&(closed_ns, _), _)) = self.by_close.first_key_value() {
            if now_ns.saturating_sub(closed_ns) < self.retain_ns {
                break;
            }
            gone.extend(self.pop_oldest());
        }
    }

    fn pop_oldest(&mut self) -> Option<(FlowKey, FlowStats)> {
        let (_, id) = self.by_close.pop_first()?;
        self.records.remove(&id).map(|(st, _)| (id.0, st))
    }
}

impl State {
    /// Takes closed flows' final records (from the CLOSED ring buffer).
    fn retain_closed(&mut self, records: impl IntoIterator<Item = (FlowKey, FlowStats)>) {
        let mut gone = Vec::new();
        for (k, st) in records {
            self.closed.insert(k, st, &mut gone);
        }
        self.totals.settle(&gone);
    }

    /// Moves closed flows left in the kernel map (when the ring buffer was
    /// full) into the agent and forgets those older than the retention time.
    fn harvest(&mut self) -> Result<()> {
        let entries = ebpf::read_flows(&mut self.bpf)?;
        let mut map = ebpf::flows_map(&mut self.bpf)?;
        let mut gone = Vec::new();
        for (k, st) in entries.into_iter().filter(|(_, st)| st.closed_ns != 0) {
            self.closed.insert(k, st, &mut gone);
            let _ = map.remove(&k);
        }
        self.closed.expire(ebpf::ktime_ns(), &mut gone);
        self.totals.settle(&gone);
        Ok(())
    }

    pub fn flows(&mut self, all: bool) -> Result<Vec<FlowView>> {
        self.harvest()?;
        let mut entries = ebpf::read_flows(&mut self.bpf)?;
        if all {
            entries.extend(self.closed.iter());
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
                let tunables = crate::tunables::TunableStore::open(&cc).and_then(|s| s.list()).unwrap_or_default();
                metrics::RegisteredCc { cc, backend, tunables }
            })
            .collect();
        Ok(metrics::Scrape { flows, counters, ccs, closed_flows_evicted: self.closed.evicted })
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
            flows_retained_closed: self.closed.len(),
            closed_flows_evicted: self.closed.evicted,
            flows_opened: c.flows_opened,
            flows_closed: c.flows_closed,
            reroutes: c.reroutes,
            labels_rewritten: c.labels_rewritten,
            untracked_packets: c.untracked_packets,
            insert_failures: c.insert_failures,
            closed_ring_full: c.closed_ring_full,
            open_flows_evicted: c.open_flows_evicted,
            max_open_flows: self.max_open_flows,
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

    let mut bpf = ebpf::load_with(Some(cfg.max_open_flows))?;
    let logger = aya_log::EbpfLogger::init(&mut bpf).context("initialising aya-log")?;
    ebpf::set_config(&mut bpf, &cfg.reroute.to_bpf())?;
    ebpf::policy_set(&mut bpf, &cfg.policy_entries().map_err(anyhow::Error::msg)?)?;
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
        closed: ClosedFlows::new(
            usize::try_from(cfg.max_closed_flows).unwrap_or(usize::MAX),
            Duration::from_secs(cfg.retain_closed_secs),
        ),
        started: Instant::now(),
        cgroup: cfg.cgroup.clone(),
        interfaces: cfg.interfaces.clone(),
        max_open_flows: cfg.max_open_flows,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A closed flow's final record: 10.0.0.1:`port` -> 10.0.0.2:5201, run
    /// by `cc`, established at `est` and closed at `closed` ns, `bytes`
    /// sent and acked.
    fn record(port: u16, est: u64, closed: u64, cc: &str, bytes: u64) -> (FlowKey, FlowStats) {
        let key = flows::key_from_addrs(([10, 0, 0, 1], port).into(), ([10, 0, 0, 2], 5201).into());
        let mut st = FlowStats::zeroed();
        st.cc[..cc.len()].copy_from_slice(cc.as_bytes());
        (st.established_ns, st.closed_ns, st.bytes_out, st.bytes_acked) = (est, closed, bytes, bytes);
        (key, st)
    }

    fn ports(gone: &[(FlowKey, FlowStats)]) -> Vec<u16> {
        gone.iter().map(|(k, _)| k.local_port).collect()
    }

    #[test]
    fn the_cap_evicts_the_oldest_closed_flows_first_and_counts_them() {
        let mut c = ClosedFlows::new(3, Duration::from_secs(300));
        let mut gone = Vec::new();
        // Arrival order is not close order (a harvested record comes late).
        for (i, (port, closed_ns)) in [(2, 20), (1, 10), (3, 30), (5, 50), (4, 40)].into_iter().enumerate() {
            let (k, st) = record(port, 1, closed_ns, "cubic", 1);
            c.insert(k, st, &mut gone);
            assert_eq!(c.len(), (i + 1).min(3));
        }
        assert_eq!(ports(&gone), [1, 2], "the two oldest closes, oldest first");
        let mut kept: Vec<u16> = c.iter().map(|(k, _)| k.local_port).collect();
        kept.sort();
        assert_eq!((kept, c.len(), c.evicted), (vec![3, 4, 5], 3, 2));
        // A second record of a kept flow replaces it: nothing evicted.
        let (k, mut st) = record(3, 1, 30, "cubic", 1);
        st.bytes_acked = 7;
        c.insert(k, st, &mut gone);
        assert_eq!((c.len(), c.evicted, gone.len()), (3, 2, 2));
        assert!(c.iter().any(|(k, st)| k.local_port == 3 && st.bytes_acked == 7));
        // The same 4-tuple established again is another flow.
        let (k, st) = record(3, 2, 60, "cubic", 1);
        c.insert(k, st, &mut gone);
        assert_eq!((ports(&gone), c.evicted), (vec![1, 2, 3], 3));
        assert!(c.iter().any(|(k, st)| k.local_port == 3 && st.established_ns == 2));
        assert_eq!(c.by_close.len(), c.len());
    }

    #[test]
    fn expiry_goes_by_close_time_and_is_no_eviction() {
        const S: u64 = 1_000_000_000;
        let mut c = ClosedFlows::new(10, Duration::from_secs(10));
        let mut gone = Vec::new();
        for (port, closed) in [(1, S), (3, 12 * S), (2, 5 * S)] {
            let (k, st) = record(port, 1, closed, "cubic", 1);
            c.insert(k, st, &mut gone);
        }
        c.expire(14 * S, &mut gone);
        assert_eq!(ports(&gone), [1]);
        c.expire(15 * S, &mut gone);
        assert_eq!(ports(&gone), [1, 2], "closed 10 s before: gone");
        assert_eq!((c.len(), c.evicted), (1, 0));
        c.expire(u64::MAX, &mut gone);
        assert_eq!((c.len(), c.by_close.len(), ports(&gone)), (0, 0, vec![1, 2, 3]));
    }

    /// The value of the sample `name` in OpenMetrics text, 0 if absent.
    fn sample(text: &str, name: &str) -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or(0)
    }

    /// What `State::render_metrics` shows with these closed flows retained
    /// and these open (kernel-side) ones.
    fn scrape(c: &ClosedFlows, totals: &mut metrics::Totals, open: &[(FlowKey, FlowStats)]) -> String {
        let mut entries = open.to_vec();
        entries.extend(c.iter());
        let flows = flows::join(&entries, &[], 0, 0);
        let s = metrics::Scrape { flows, counters: Default::default(), ccs: Vec::new(), closed_flows_evicted: c.evicted };
        metrics::render(&s, totals).expect("renders")
    }

    #[test]
    fn per_cc_totals_stay_exact_when_closed_flows_are_evicted_or_expire() {
        let (n, cap) = (1000u64, 50);
        let mut c = ClosedFlows::new(cap, Duration::from_secs(300));
        let mut totals = metrics::Totals::default();
        let mut want: BTreeMap<&str, u64> = BTreeMap::new();
        for i in 0..n {
            let cc = if i % 3 == 0 { "cubic" } else { "bpf_uno" };
            // 40 ports: 4-tuples are reused by later connections, some of
            // them while an earlier flow on the tuple is still retained.
            let (k, mut st) = record((i % 40) as u16, 1 + i, 0, cc, 1000 + i);
            *want.entry(cc).or_default() += 1000 + i;
            if i % 5 == 0 {
                // scraped while open, with part of its bytes
                let mut part = st;
                part.bytes_out /= 2;
                part.bytes_acked /= 3;
                scrape(&c, &mut totals, &[(k, part)]);
            }
            st.closed_ns = 2 + i;
            let mut gone = Vec::new();
            c.insert(k, st, &mut gone);
            totals.settle(&gone); // as State::retain_closed does
            if i % 97 == 0 {
                scrape(&c, &mut totals, &[]);
            }
        }
        assert_eq!((c.len(), c.evicted), (cap, n - cap as u64), "held at the cap; the overflow evicted");
        let check = |text: &str| {
            for (cc, bytes) in &want {
                for name in ["xdcc_cc_bytes_sent_total", "xdcc_cc_bytes_acked_total"] {
                    assert_eq!(sample(text, &format!("{name}{{cc=\"{cc}\"}}")), *bytes, "{name} {cc}");
                }
            }
            assert_eq!(sample(text, "xdcc_closed_flows_evicted_total"), n - cap as u64);
        };
        check(&scrape(&c, &mut totals, &[]));
        check(&scrape(&c, &mut totals, &[]));
        // Every retained one expires (as State::harvest does): still exact.
        let mut gone = Vec::new();
        c.expire(u64::MAX, &mut gone);
        totals.settle(&gone);
        assert_eq!((c.len(), gone.len()), (0, cap));
        check(&scrape(&c, &mut totals, &[]));
        // And without a scrape in between either.
        let mut totals = metrics::Totals::default();
        let mut c = ClosedFlows::new(cap, Duration::from_secs(1));
        let mut gone = Vec::new();
        for i in 0..n {
            let cc = if i % 3 == 0 { "cubic" } else { "bpf_uno" };
            let (k, st) = record((i % 40) as u16, 1 + i, 2 + i, cc, 1000 + i);
            c.insert(k, st, &mut gone);
        }
        c.expire(u64::MAX, &mut gone);
        totals.settle(&gone);
        assert_eq!(gone.len() as u64, n);
        check(&scrape(&c, &mut totals, &[]));
    }

    /// Not a check but a measurement: the agent's memory for closed flows
    /// under churn, with the default cap (RSS of this process, kB).
    /// `cargo test --release -p xdcc closed_flows_memory -- --ignored --nocapture`
    #[test]
    #[ignore = "a measurement: prints RSS"]
    fn closed_flows_memory() {
        let kb = |field: &str| -> u64 {
            let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
            status.lines().find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok()).unwrap_or(0)
        };
        let cap = crate::config::DEFAULT_MAX_CLOSED_FLOWS as usize;
        let mut c = ClosedFlows::new(cap, Duration::from_secs(300));
        let mut totals = metrics::Totals::default();
        let base = kb("VmRSS:");
        let mut closed = 0u64;
        for n in [cap as u64, 100_000, 1_000_000, 3_000_000] {
            while closed < n {
                let cc = if closed % 3 == 0 { "cubic" } else { "bpf_uno" };
                let (k, st) = record((closed % 60_000) as u16, 1 + closed, 2 + closed, cc, 1000);
                let mut gone = Vec::new();
                c.insert(k, st, &mut gone);
                totals.settle(&gone);
                closed += 1;
            }
            let rss = kb("VmRSS:");
            println!(
                "{n} closed flows: {} retained, {} evicted, RSS +{} kB ({} B per retained record)",
                c.len(),
                c.evicted,
                rss.saturating_sub(base),
                rss.saturating_sub(base) * 1024 / c.len() as u64
            );
        }
        scrape(&c, &mut totals, &[]);
        println!("after a scrape of them all: RSS +{} kB, peak +{} kB", kb("VmRSS:").saturating_sub(base), kb("VmHWM:").saturating_sub(base));
    }
}
