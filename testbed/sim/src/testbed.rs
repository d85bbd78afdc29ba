//! The testbed's scenario files (`testbed/scenarios/*.toml`) in the model:
//! one file, two backends. A testbed scenario names a topology
//! (`testbed/topologies/*.toml`), the switch profile of every port
//! (`switch-config/profiles`), the CCs, the traffic and a sweep; this module
//! builds, per `ccs` entry and sweep point, the simulator's [`Scenario`] of
//! exactly that network, the same way the runner builds the namespaces
//! (`testbed/runner/topology.py`, `guest.py`):
//!
//! ```text
//!   src eth0 (netem: DC rate, host buffer)
//!     intra-DC: ── dcNsw:hJ (switch profile, DC rate) ── dst
//!     inter-DC: ── dcSsw:uplink (switch profile) ── dcSbr:wan0 (WAN profile)
//!               ── dcDbr:dc (dc-fifo) ── dcDsw:hJ (switch profile) ── dst
//! ```
//!
//! Every queue a flow crosses is modelled with its port's profile (rate,
//! buffer, marking, phantom queue, AMRT marker, WAN loss) after the
//! topology's `time_scale` (per-Gbit/s buffers and K taken at the paper's
//! rate, as `derive_profile` does); propagation delay is the flow's base RTT
//! (intra or inter). The CC is told the network the module is told
//! (`net_*` tunables), plus the runner's time-scaled tunables and the
//! scenario's own. Not modelled, and said in [`Point::notes`]: netem jitter
//! and Gilbert–Elliott loss, the second WAN path (flows take `wan0`), delayed
//! ACKs, the ACK path's queues, the guest's scheduling stalls. Workload
//! flows are drawn from the same CDFs and Poisson process with the same
//! parameters, but from the simulator's random source: the same
//! distribution, not the same flows.
//!
//! What the runner validates (`testbed/runner/scenario.py`) is validated
//! here with the same rules where the model depends on it; the testbed's
//! own check runs before every VM run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use toml::Value;
use xdcc_switch::{Marking as SwMarking, Profile};

use crate::cc::CcKind;
use crate::scenario::{FlowSpec, Marking, NetSpec, Phantom, QueueSpec, Scenario};
use crate::RunReport;

/// Kernel CCs the testbed runs that have no model here.
pub const KERNEL_CCS: &[&str] = &["cubic", "bbr", "reno", "vegas"];

/// Linux's minimum RTO: the kernel's retransmission timer floor.
const LINUX_MIN_RTO_US: f64 = 200_000.0;
/// Linux's receive window with the default `tcp_rmem` (4096 131072 6291456):
/// ~64 KB at the start of every connection (the kernel logs of the testbed
/// show `rcv_ssthresh:64088`), growing as the receiver's buffer autotunes,
/// to about half of `tcp_rmem[2]`. It gates the first round trips of every
/// flow whose CC starts with a larger window (UnoCC, Gemini, AMRT start at
/// one BDP): without it the model sends a whole BDP in the first RTT.
const LINUX_RECEIVE_WINDOW: crate::scenario::ReceiveWindow = crate::scenario::ReceiveWindow { init_kb: 64.0, max_kb: 3072.0 };
const MTU: u64 = 1500;

/// A testbed scenario file, as `scenario.py` reads it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestbedScenario {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub paper: String,
    #[serde(default = "default_topology")]
    pub topology: String,
    #[serde(default = "default_ccs")]
    pub ccs: Vec<String>,
    #[serde(default = "default_duration_s")]
    pub duration_s: u64,
    #[serde(default = "default_sample_ms")]
    pub sample_ms: u64,
    #[serde(default)]
    pub ipv6: bool,
    #[serde(default)]
    pub net: Option<toml::Table>,
    pub bottleneck: String,
    #[serde(default)]
    pub monitor: Vec<String>,
    #[serde(default)]
    pub profiles: BTreeMap<String, String>,
    #[serde(default)]
    pub tunables: BTreeMap<String, BTreeMap<String, u64>>,
    /// A named tunable preset per CC (`xdcc_algo::presets`), applied after
    /// the runner's tunables and before `[tunables]`.
    #[serde(default)]
    pub presets: BTreeMap<String, String>,
    #[serde(default)]
    pub variants: BTreeMap<String, Variant>,
    #[serde(default)]
    pub sweep: Option<Sweep>,
    #[serde(default)]
    pub long: Vec<LongFlows>,
    #[serde(default)]
    pub incast: Vec<Incast>,
    #[serde(default)]
    pub workload: Option<toml::Table>,
}

fn default_topology() -> String {
    "two-dc".into()
}
fn default_ccs() -> Vec<String> {
    ["uno", "gemini", "cubic", "dctcp"].map(String::from).to_vec()
}
fn default_duration_s() -> u64 {
    20
}
fn default_sample_ms() -> u64 {
    100
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub cc: String,
    #[serde(default)]
    pub tunables: BTreeMap<String, u64>,
    #[serde(default)]
    pub profile: Option<String>,
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub description: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    pub key: String,
    pub values: Vec<Value>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongFlows {
    pub from: Vec<String>,
    pub to: String,
    #[serde(default)]
    pub start_s: f64,
    #[serde(default)]
    pub start_step_s: f64,
    #[serde(default)]
    pub stop_s: Option<f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Incast {
    pub from: Vec<String>,
    pub to: String,
    pub bytes: u64,
    pub at_s: Vec<f64>,
}

/// The poisson workload (`[workload]`), defaults as `guest.py`'s.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Workload {
    load: f64,
    #[serde(default)]
    hosts: Vec<String>,
    #[serde(default = "default_intra_cdf")]
    intra_cdf: String,
    #[serde(default = "default_inter_cdf")]
    inter_cdf: String,
    #[serde(default = "default_inter_fraction")]
    inter_fraction: f64,
    #[serde(default = "one")]
    intra_scale: f64,
    #[serde(default = "one")]
    inter_scale: f64,
    #[serde(default = "one_u64")]
    seed: u64,
    #[serde(default)]
    start_s: f64,
    #[serde(default)]
    stop_s: Option<f64>,
}

fn default_intra_cdf() -> String {
    "websearch_dctcp_hpcc.txt".into()
}
fn default_inter_cdf() -> String {
    "alibaba_interdc_wan_2021_uno.txt".into()
}
fn default_inter_fraction() -> f64 {
    0.2
}
fn one() -> f64 {
    1.0
}
fn one_u64() -> u64 {
    1
}

/// The topology after defaults and overrides (`topology.py`'s DEFAULTS).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Topology {
    #[serde(default)]
    #[allow(dead_code)]
    description: String,
    #[serde(default = "default_hosts")]
    hosts_per_dc: u32,
    #[serde(default = "one_u32")]
    wan_paths: u32,
    #[serde(default)]
    #[allow(dead_code)]
    gso: bool,
    /// Linux's delayed ACKs on the hosts (the testbed's default); the model's
    /// receivers ACK every segment, i.e. `delayed_acks = false`.
    #[serde(default = "yes")]
    delayed_acks: bool,
    #[serde(default = "default_time_scale")]
    time_scale: u64,
    dc: DcSpec,
    wan: WanSpec,
}

fn default_hosts() -> u32 {
    4
}
fn yes() -> bool {
    true
}
fn one_u32() -> u32 {
    1
}
fn default_time_scale() -> u64 {
    10
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DcSpec {
    #[serde(default = "default_dc_rate")]
    rate_mbit: u64,
    #[serde(default = "default_uplink_rate")]
    uplink_rate_mbit: u64,
    #[serde(default = "default_intra_rtt")]
    intra_rtt_us: u64,
    #[serde(default = "default_switch_profile")]
    switch_profile: String,
    #[serde(default = "default_host_buffer")]
    host_buffer_pkts: u64,
    #[serde(default)]
    k_pkts: u64,
}

fn default_dc_rate() -> u64 {
    100
}
fn default_uplink_rate() -> u64 {
    400
}
fn default_intra_rtt() -> u64 {
    2000
}
fn default_switch_profile() -> String {
    "dc-gemini".into()
}
fn default_host_buffer() -> u64 {
    1000
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WanSpec {
    #[serde(default = "default_wan_rate")]
    rate_mbit: u64,
    #[serde(default = "default_ratio")]
    inter_intra_ratio: u64,
    #[serde(default = "default_border_profile")]
    border_profile: String,
}

fn default_wan_rate() -> u64 {
    400
}
fn default_ratio() -> u64 {
    10
}
fn default_border_profile() -> String {
    "wan-border".into()
}

impl Topology {
    fn inter_rtt_us(&self) -> u64 {
        self.dc.intra_rtt_us * self.wan.inter_intra_ratio
    }
}

/// One run of the testbed scenario in the model: a `ccs` entry at a sweep
/// point. `scenario` is `None` (and `notes` says why) for CCs without a model.
#[derive(Clone, Debug)]
pub struct Point {
    /// The `ccs` entry (a CC or a variant's name).
    pub entry: String,
    /// The CC it runs.
    pub cc: String,
    /// `ratio=16`, or empty without a sweep (the testbed's run label).
    pub label: String,
    pub scenario: Option<Scenario>,
    /// What the model leaves out for this point.
    pub notes: Vec<String>,
}

impl TestbedScenario {
    /// Reads a testbed scenario file; its topology and workloads are found
    /// next to it (`../topologies`, `../workloads`).
    pub fn from_file(path: &Path) -> Result<(Self, PathBuf)> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let s: TestbedScenario = toml::from_str(&text).map_err(|e| anyhow!("{}: {}", path.display(), e.message()))?;
        let dir = path.canonicalize()?.parent().and_then(Path::parent).map(Path::to_path_buf).ok_or_else(|| anyhow!("{}: not inside testbed/scenarios", path.display()))?;
        Ok((s, dir))
    }

    /// Every (entry, sweep point) as a simulator scenario.
    pub fn points(&self, name: &str, testbed_dir: &Path) -> Result<Vec<Point>> {
        let topo_path = testbed_dir.join("topologies").join(format!("{}.toml", self.topology));
        let topo_text = std::fs::read_to_string(&topo_path).with_context(|| format!("no topology '{}' ({})", self.topology, topo_path.display()))?;
        let mut base: toml::Table = toml::from_str(&topo_text).map_err(|e| anyhow!("{}: {}", topo_path.display(), e.message()))?;
        // The sections the overrides merge into exist even when the file leaves them to the defaults.
        for sec in ["dc", "wan"] {
            base.entry(sec).or_insert_with(|| Value::Table(toml::Table::new()));
        }
        if let Some(net) = &self.net {
            merge(&mut base, net, "net.")?;
        }
        let sweep: Vec<(String, Option<(String, Value)>)> = match &self.sweep {
            None => vec![(String::new(), None)],
            Some(sw) => {
                if sw.values.is_empty() {
                    bail!("[sweep] needs a non-empty values list");
                }
                let last = sw.key.rsplit('.').next().unwrap_or(&sw.key);
                sw.values.iter().map(|v| (format!("{last}={}", value_label(v)), Some((sw.key.clone(), v.clone())))).collect()
            }
        };
        let mut out = Vec::new();
        for (label, over) in &sweep {
            for entry in &self.ccs {
                out.push(self.point(name, testbed_dir, &base, entry, label, over.as_ref()).with_context(|| {
                    format!("{entry}{}", if label.is_empty() { String::new() } else { format!(" at {label}") })
                })?);
            }
        }
        Ok(out)
    }

    /// (CC, switch profile, preset, tunables) of a `ccs` entry:
    /// `scenario.py`'s `resolve`.
    fn resolve(&self, entry: &str) -> Result<(String, Option<String>, Option<String>, BTreeMap<String, u64>)> {
        match self.variants.get(entry) {
            None => Ok((
                entry.to_string(),
                self.profiles.get(entry).cloned(),
                self.presets.get(entry).cloned(),
                self.tunables.get(entry).cloned().unwrap_or_default(),
            )),
            Some(v) => {
                let mut t = self.tunables.get(&v.cc).cloned().unwrap_or_default();
                t.extend(v.tunables.iter().map(|(k, x)| (k.clone(), *x)));
                Ok((
                    v.cc.clone(),
                    v.profile.clone().or_else(|| self.profiles.get(&v.cc).cloned()),
                    v.preset.clone().or_else(|| self.presets.get(&v.cc).cloned()),
                    t,
                ))
            }
        }
    }

    fn point(&self, name: &str, dir: &Path, base: &toml::Table, entry: &str, label: &str, over: Option<&(String, Value)>) -> Result<Point> {
        let (cc, profile, preset, tunables) = self.resolve(entry)?;
        let mut point = Point { entry: entry.to_string(), cc: cc.clone(), label: label.to_string(), scenario: None, notes: Vec::new() };
        if CcKind::parse(&cc).is_err() {
            if KERNEL_CCS.contains(&cc.as_str()) {
                point.notes.push(format!("{cc} is a kernel CC: no model in xdcc-sim"));
                return Ok(point);
            }
            bail!("unknown CC '{cc}'");
        }
        let mut topo = base.clone();
        let mut workload = self.workload.clone();
        if let Some((key, v)) = over {
            let (sec, k) = key.split_once('.').ok_or_else(|| anyhow!("[sweep] key '{key}' must be section.name"))?;
            if sec == "workload" {
                workload.as_mut().ok_or_else(|| anyhow!("[sweep] key '{key}': no [workload]"))?.insert(k.to_string(), v.clone());
            } else {
                let mut o = toml::Table::new();
                let mut inner = toml::Table::new();
                inner.insert(k.to_string(), v.clone());
                o.insert(sec.to_string(), Value::Table(inner));
                merge(&mut topo, &o, "")?;
            }
        }
        if let Some(p) = &profile {
            // A CC's own switch profile is used as shipped: no step-K override.
            let mut dc = toml::Table::new();
            dc.insert("switch_profile".into(), Value::String(p.clone()));
            dc.insert("k_pkts".into(), Value::Integer(0));
            let mut o = toml::Table::new();
            o.insert("dc".into(), Value::Table(dc));
            merge(&mut topo, &o, "")?;
        }
        let t: Topology = Value::Table(topo).try_into().map_err(|e: toml::de::Error| anyhow!("topology: {}", e.message()))?;
        if t.wan_paths > 1 {
            point.notes.push(format!("{} WAN paths: the model routes every inter-DC flow over wan0", t.wan_paths));
        }
        if t.delayed_acks {
            point.notes.push("delayed ACKs not modelled (the model ACKs every segment; `delayed_acks = false` in [net] makes the kernel do so too)".into());
        }
        let net = Net::new(&t, &mut point.notes)?;

        let dur = self.duration_s as f64;
        let mut flows = Vec::new();
        let mut used = std::collections::BTreeSet::new();
        let mut long_windows = Vec::new();
        for (i, g) in self.long.iter().enumerate() {
            for (k, src) in g.from.iter().enumerate() {
                let start = g.start_s + k as f64 * g.start_step_s;
                let stop = g.stop_s.unwrap_or(dur);
                if !(start >= 0.0 && start < stop && stop <= dur) {
                    bail!("[[long]] #{}: needs 0 <= start_s < stop_s <= duration_s for every flow", i + 1);
                }
                long_windows.push((start, stop));
                let mut f = net.flow("long", src, &g.to, &mut used)?;
                f.start_ms = start * 1e3;
                f.stop_ms = (stop < dur).then_some(stop * 1e3);
                flows.push(f);
            }
        }
        for g in &self.incast {
            for &at in &g.at_s {
                for src in &g.from {
                    let mut f = net.flow("incast", src, &g.to, &mut used)?;
                    f.start_ms = at * 1e3;
                    f.size_kb = Some(g.bytes as f64 / 1e3);
                    flows.push(f);
                }
            }
        }
        if let Some(w) = workload {
            let w: Workload = Value::Table(w).try_into().map_err(|e: toml::de::Error| anyhow!("[workload]: {}", e.message()))?;
            for (at, src, dst, size) in workload_flows(&w, &t, dur, dir)? {
                let mut f = net.flow("workload", &src, &dst, &mut used)?;
                f.start_ms = at * 1e3;
                f.size_kb = Some(size as f64 / 1e3);
                flows.push(f);
            }
        }
        if flows.is_empty() {
            bail!("no traffic: the scenario has no [[long]], [[incast]] or [workload]");
        }
        // The report's steady window (all long flows active, its second
        // half) for the simulator's own report; the prediction's metrics
        // come from `xdcc_metrics::analyze` of the whole run.
        let longs: Vec<xdcc_metrics::Flow> = long_windows
            .iter()
            .enumerate()
            .map(|(i, &(start_s, stop_s))| xdcc_metrics::Flow { id: i as u64, kind: "long".into(), class: String::new(), start_s, stop_s })
            .collect();
        let (a, b) = xdcc_metrics::steady_window(&longs, dur);

        let bottleneck = port_name(&self.bottleneck)?;
        let mut queues = net.queues_used(&used)?;
        if let Some(pos) = queues.iter().position(|q| q.name == bottleneck) {
            let q = queues.remove(pos);
            queues.insert(0, q);
        } else {
            bail!("bottleneck '{}': no flow crosses that port", self.bottleneck);
        }

        let net_spec = NetSpec {
            link_rate_gbps: t.dc.rate_mbit as f64 / 1e3,
            intra_rtt_us: t.dc.intra_rtt_us as f64,
            inter_rtt_us: t.inter_rtt_us() as f64,
            mtu: MTU as u32,
        };
        // The runner's order: the network, its time-scaled tunables, the
        // preset, the scenario's tunables.
        let mut params = BTreeMap::new();
        let mut p = time_scaled_tunables(&cc, &t, &net)?;
        if let Some(name) = &preset {
            p.extend(crate::cc::preset_tunables(CcKind::parse(&cc)?, name, &net_spec.config())?);
        }
        p.extend(tunables);
        params.insert(cc.clone(), p);
        let sc = Scenario {
            name: format!("{name}{}{}", if label.is_empty() { "" } else { "@" }, label),
            description: self.description.clone(),
            duration_ms: dur * 1e3,
            cc: vec![cc.clone()],
            net: net_spec,
            params,
            presets: BTreeMap::new(),
            queue_overrides: BTreeMap::new(),
            queues,
            topology: None,
            flows,
            sample_interval_us: self.sample_ms as f64 * 1e3,
            fairness_window_ms: xdcc_metrics::BIN_S * 1e3,
            jain_threshold: xdcc_metrics::CONVERGED_JAIN,
            measure_from_ms: a * 1e3,
            measure_to_ms: (b < dur).then_some(b * 1e3),
            min_rto_us: LINUX_MIN_RTO_US,
            seed: 0,
            jitter_us: None,
            host_delay_us: 0.0,
            host_delay_steady: 0.0,
            // The modules pace at cwnd/srtt (`sk_pacing_rate`) after slow start.
            window_pacing_gain: 1.0,
            receive_window: Some(LINUX_RECEIVE_WINDOW),
            loss_recovery: Default::default(),
            rto_us: None,
            rto_intra_us: None,
            rto_window_cut: true,
            stop_when_done: false,
        };
        sc.validate()?;
        point.scenario = Some(sc);
        Ok(point)
    }
}

/// `[sweep]` values as the runner labels them (`ratio=16`).
fn value_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Deep-merges `over` into `base`; a key `base` lacks is an error (as
/// `topology.merge`), except inside `dc`/`wan`, whose keys have defaults.
fn merge(base: &mut toml::Table, over: &toml::Table, at: &str) -> Result<()> {
    const KEYS: &[&str] = &["description", "hosts_per_dc", "wan_paths", "gso", "delayed_acks", "time_scale", "dc", "wan"];
    for (k, v) in over {
        if at.is_empty() || at == "net." {
            if !KEYS.contains(&k.as_str()) {
                bail!("unknown key '{at}{k}' (known: {})", KEYS.join(", "));
            }
            if matches!(k.as_str(), "gso" | "delayed_acks") && !v.is_bool() {
                bail!("'{at}{k}' must be a bool, not {v}");
            }
        }
        match (base.get_mut(k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => {
                for (kk, vv) in o {
                    b.insert(kk.clone(), vv.clone());
                }
            }
            (Some(Value::Table(_)), _) => bail!("'{at}{k}' must be a table"),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
    Ok(())
}

/// "dc1sw:h1" is the runner's port name and the model's queue name.
fn port_name(spec: &str) -> Result<String> {
    let (ns, dev) = spec.split_once(':').ok_or_else(|| anyhow!("port '{spec}': expected NAMESPACE:IFACE"))?;
    Ok(format!("{ns}:{dev}"))
}

/// "dc2h3" -> (2, 3).
fn parse_host(h: &str, t: &Topology) -> Result<(u32, u32)> {
    let bad = || anyhow!("no host '{h}' in the topology (hosts: dc1h1..dc2h{})", t.hosts_per_dc);
    let rest = h.strip_prefix("dc").ok_or_else(bad)?;
    let (d, i) = rest.split_once('h').ok_or_else(bad)?;
    let (d, i): (u32, u32) = (d.parse().map_err(|_| bad())?, i.parse().map_err(|_| bad())?);
    if !(1..=2).contains(&d) || !(1..=t.hosts_per_dc).contains(&i) {
        return Err(bad());
    }
    Ok((d, i))
}

/// The network of one point: every port's queue and the paths between hosts.
struct Net<'a> {
    t: &'a Topology,
    dc_profile: Profile,
    border_profile: Profile,
    amrt_first_hop: bool,
}

impl<'a> Net<'a> {
    fn new(t: &'a Topology, notes: &mut Vec<String>) -> Result<Self> {
        let dc_profile = Profile::load(&t.dc.switch_profile).map_err(|e| anyhow!("switch profile: {e}"))?;
        let border_profile = Profile::load(&t.wan.border_profile).map_err(|e| anyhow!("border profile: {e}"))?;
        if let Some(w) = &border_profile.wan {
            if w.jitter_us > 0 {
                notes.push(format!("WAN jitter ({} us) not modelled", w.jitter_us));
            }
            if w.gilbert_elliott.is_some() {
                notes.push("WAN Gilbert-Elliott loss not modelled (independent loss only)".into());
            }
        }
        let amrt_first_hop = dc_profile.amrt.is_some();
        Ok(Net { t, dc_profile, border_profile, amrt_first_hop })
    }

    /// The ports from `src` to `dst`, sender first.
    fn path(&self, src: &str, dst: &str) -> Result<Vec<String>> {
        let (sd, _) = parse_host(src, self.t)?;
        let (dd, di) = parse_host(dst, self.t)?;
        if src == dst {
            bail!("a flow from {src} to itself");
        }
        // The host NIC is a queue only where AMRT's first-hop marker watches
        // it; otherwise each flow is paced at the NIC rate (`host_rate_gbps`)
        // with nothing queued in the host: Linux's TCP small queues keep
        // about 1 ms of a socket's data in the qdisc, so the backlog of a
        // window stays in the socket, not in the NIC's netem queue.
        let mut p = if self.amrt_first_hop { vec![format!("{src}:eth0")] } else { Vec::new() };
        if sd != dd {
            p.push(format!("dc{sd}sw:uplink"));
            p.push(format!("dc{sd}br:wan0"));
            p.push(format!("dc{dd}br:dc"));
        }
        p.push(format!("dc{dd}sw:h{di}"));
        Ok(p)
    }

    fn flow(&self, kind: &str, src: &str, dst: &str, used: &mut std::collections::BTreeSet<String>) -> Result<FlowSpec> {
        let path = self.path(src, dst)?;
        let inter = path.iter().any(|q| q.ends_with(":uplink"));
        used.extend(path.iter().cloned());
        Ok(FlowSpec {
            name: format!("{}:{kind}:{src}>{dst}", if inter { "inter" } else { "intra" }),
            count: 1,
            rtt_us: if inter { self.t.inter_rtt_us() } else { self.t.dc.intra_rtt_us } as f64,
            path,
            start_ms: 0.0,
            start_spacing_us: 0.0,
            stop_ms: None,
            size_kb: None,
            host_rate_gbps: Some(self.t.dc.rate_mbit as f64 / 1e3),
            cc: None,
            params: BTreeMap::new(),
            src: None,
            dst: None,
            pairs: Vec::new(),
            tm: None,
            lb: None,
            ec: None,
        })
    }

    /// The queues of the ports that flows use.
    fn queues_used(&self, used: &std::collections::BTreeSet<String>) -> Result<Vec<QueueSpec>> {
        let t = self.t;
        let mut out = Vec::new();
        for name in used {
            let (ns, dev) = name.split_once(':').expect("built above");
            let q = if dev == "eth0" {
                // The host NIC: netem at the DC rate; AMRT's first-hop marker when the DC runs AMRT.
                QueueSpec {
                    name: name.clone(),
                    rate_gbps: t.dc.rate_mbit as f64 / 1e3,
                    buffer_kb: (t.dc.host_buffer_pkts * MTU) as f64 / 1e3,
                    marking: if self.amrt_first_hop { Marking::Amrt } else { Marking::None },
                    phantom: None,
                    loss_prob: 0.0,
                }
            } else if ns.ends_with("sw") {
                let rate = if dev == "uplink" { t.dc.uplink_rate_mbit } else { t.dc.rate_mbit };
                port_queue(name, &self.dc_profile, rate, t.time_scale, t.dc.k_pkts)?
            } else if dev == "dc" {
                port_queue(name, &Profile::load("dc-fifo").map_err(|e| anyhow!("{e}"))?, t.dc.uplink_rate_mbit, t.time_scale, 0)?
            } else {
                port_queue(name, &self.border_profile, t.wan.rate_mbit, t.time_scale, 0)?
            };
            out.push(q);
        }
        Ok(out)
    }
}

/// A switch profile at this port's rate, as `topology.derive_profile` writes
/// it for the testbed: per-Gbit/s buffer, K and phantom size evaluated at the
/// paper's rate (`rate × time_scale`); `k_pkts` > 0 replaces the marking by a
/// step at K packets.
fn port_queue(name: &str, p: &Profile, rate_mbit: u64, time_scale: u64, k_pkts: u64) -> Result<QueueSpec> {
    let mtu = p.port.mtu;
    let paper_gbps = (rate_mbit * time_scale) as f64 / 1e3;
    let per_gbps_pkts = |per: u64| ((per as f64 * paper_gbps).round() as u64).max(1);
    let buffer = match (p.port.buffer_bytes, p.port.buffer_pkts_per_gbps) {
        (_, Some(per)) => per_gbps_pkts(per) * mtu,
        (Some(b), None) => b,
        (None, None) => bail!("{name}: profile without a buffer"),
    };
    // tc applies K as k_pkts_per_gbps at the port's own rate (`red_thresholds`).
    let step_at = |per_gbps: u64| ((per_gbps * rate_mbit / 1000).max(1)) as f64;
    let marking = if k_pkts > 0 {
        Marking::Threshold { k_pkts: step_at(((k_pkts as f64 * 1000.0 / rate_mbit as f64).round() as u64).max(1)) }
    } else {
        match &p.marking {
            SwMarking::None {} => Marking::None,
            SwMarking::Step { k_pkts_per_gbps } => Marking::Threshold { k_pkts: step_at(k_pkts_per_gbps * time_scale) },
            SwMarking::Red { min_pct, max_pct, probability_pct } => Marking::Red {
                min_frac: *min_pct as f64 / 100.0,
                max_frac: *max_pct as f64 / 100.0,
                pmax: *probability_pct as f64 / 100.0,
            },
        }
    };
    let marking = if p.amrt.is_some() { Marking::Amrt } else { marking };
    let phantom = p.phantom.as_ref().map(|ph| {
        let size = match (ph.size_bytes, ph.size_pkts_per_gbps) {
            (_, Some(per)) => per_gbps_pkts(per) * mtu,
            (Some(b), None) => b,
            (None, None) => buffer,
        };
        Phantom {
            drain_frac: ph.drain_pct as f64 / 100.0,
            size_kb: Some(size as f64 / 1e3),
            min_frac: ph.kmin_pct as f64 / 100.0,
            max_frac: ph.kmax_pct as f64 / 100.0,
        }
    });
    let loss_prob = p.wan.as_ref().map_or(0.0, |w| w.loss_ppm as f64 / 1e6);
    Ok(QueueSpec { name: name.to_string(), rate_gbps: rate_mbit as f64 / 1e3, buffer_kb: buffer as f64 / 1e3, marking, phantom, loss_prob })
}

/// What the runner sets beyond the network (`guest.py`,
/// `time_scaled_tunables`): Gemini's K is the DC switch's step threshold
/// and its WAN delay threshold T (5 ms) stretches with the time scale.
fn time_scaled_tunables(cc: &str, t: &Topology, net: &Net) -> Result<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    if cc != "gemini" {
        return Ok(out);
    }
    out.insert("t_ns".into(), 5_000_000 * t.time_scale);
    let k = if t.dc.k_pkts > 0 {
        Some(t.dc.k_pkts)
    } else if let SwMarking::Step { k_pkts_per_gbps } = net.dc_profile.marking {
        Some(((k_pkts_per_gbps as f64 * (t.dc.rate_mbit * t.time_scale) as f64 / 1e3).round() as u64).max(1))
    } else {
        None
    };
    if let Some(k) = k {
        out.insert("k_bytes".into(), k * MTU);
    }
    Ok(out)
}

/// A flow-size CDF (`<bytes> <cdf>` per line, cdf in 0–100 or 0–1), as
/// `flowgen.load_cdf` reads it.
fn load_cdf(path: &Path) -> Result<Vec<(f64, f64)>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut pts = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim().replace(',', " ");
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut it = line.split_whitespace().map(str::parse::<f64>);
        match (it.next(), it.next()) {
            (Some(Ok(s)), Some(Ok(p))) => pts.push((s, p)),
            _ => bail!("{}:{}: expected '<bytes> <cdf>', got {line:?}", path.display(), n + 1),
        }
    }
    let Some(&(_, last)) = pts.last() else { bail!("{}: empty CDF", path.display()) };
    let scale = if last > 1.0 + 1e-9 { 100.0 } else { 1.0 };
    for p in &mut pts {
        p.1 /= scale;
    }
    if pts.len() < 2 || (pts[pts.len() - 1].1 - 1.0).abs() > 1e-6 || pts.windows(2).any(|w| w[1].1 < w[0].1 || w[1].0 < w[0].0) {
        bail!("{}: the CDF must rise to 1 (or 100) with non-decreasing sizes", path.display());
    }
    Ok(pts)
}

fn cdf_mean(pts: &[(f64, f64)]) -> f64 {
    pts.windows(2).map(|w| (w[0].0 + w[1].0) / 2.0 * (w[1].1 - w[0].1)).sum::<f64>() + pts[0].0 * pts[0].1
}

/// Inverse-CDF sample, linear between points.
fn cdf_sample(pts: &[(f64, f64)], u: f64) -> u64 {
    let i = pts.partition_point(|p| p.1 < u);
    if i == 0 {
        return (pts[0].0 as u64).max(1);
    }
    let ((s0, p0), (s1, p1)) = (pts[i - 1], pts[i.min(pts.len() - 1)]);
    let x = if p1 == p0 { s0 } else { s0 + (s1 - s0) * (u - p0) / (p1 - p0) };
    (x as u64).max(1)
}

/// `guest.workload_events`: Poisson arrivals at `load` of the hosts' NIC
/// capacity; `inter_fraction` of flows go to the other DC (inter CDF), the
/// rest stay inside (intra CDF). (time s, src, dst, bytes).
fn workload_flows(w: &Workload, t: &Topology, dur: f64, dir: &Path) -> Result<Vec<(f64, String, String, u64)>> {
    if !(w.load > 0.0 && w.load <= 1.0) {
        bail!("[workload].load must be in (0, 1]");
    }
    if !(0.0..=1.0).contains(&w.inter_fraction) {
        bail!("[workload].inter_fraction must be in [0, 1]");
    }
    let hosts: Vec<String> = if w.hosts.is_empty() {
        (1..=2).flat_map(|d| (1..=t.hosts_per_dc).map(move |i| format!("dc{d}h{i}"))).collect()
    } else {
        w.hosts.clone()
    };
    let dcs = hosts.iter().map(|h| parse_host(h, t).map(|x| x.0)).collect::<Result<Vec<_>>>()?;
    let cdf = |name: &str| load_cdf(&if Path::new(name).is_absolute() { PathBuf::from(name) } else { dir.join("workloads").join(name) });
    let (intra, inter) = (cdf(&w.intra_cdf)?, cdf(&w.inter_cdf)?);
    let mean = (1.0 - w.inter_fraction) * cdf_mean(&intra) * w.intra_scale + w.inter_fraction * cdf_mean(&inter) * w.inter_scale;
    let (start, stop) = (w.start_s, w.stop_s.unwrap_or(dur));
    let link_bps = (t.dc.rate_mbit as f64) * 1e6 * hosts.len() as f64;
    let lambda = w.load * link_bps / 8.0 / mean;
    let mut rng = crate::sim::Rng(w.seed ^ 0x3057_4B10_AD00_0001);
    let mut out = Vec::new();
    let mut at = 0.0;
    loop {
        at += -(1.0 - rng.unit()).ln() / lambda;
        if at >= stop - start {
            return Ok(out);
        }
        let si = (rng.next_u64() % hosts.len() as u64) as usize;
        let want_inter = rng.unit() < w.inter_fraction;
        let cands: Vec<usize> = (0..hosts.len()).filter(|&j| j != si && (dcs[j] != dcs[si]) == want_inter).collect();
        if cands.is_empty() {
            continue;
        }
        let dst = cands[(rng.next_u64() % cands.len() as u64) as usize];
        let (pts, scale) = if want_inter { (&inter, w.inter_scale) } else { (&intra, w.intra_scale) };
        let size = ((cdf_sample(pts, rng.unit()) as f64 * scale) as u64).max(1);
        out.push((start + at, hosts[si].clone(), hosts[dst].clone(), size));
    }
}

/// The model's numbers for one point, named as the testbed report's
/// (`xdcc_metrics::Metrics::scalars`): mean and 95 % half-width over seeds.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Prediction {
    pub entry: String,
    pub cc: String,
    pub label: String,
    pub notes: Vec<String>,
    pub seeds: u32,
    /// metric -> (mean, 95 % half-width); empty without a model.
    pub metrics: BTreeMap<String, (f64, f64)>,
}

/// A simulated run as the testbed's run record, so that the model's numbers
/// come from the same code as the kernel's (`xdcc_metrics::analyze`): the
/// long flows with their samples, every port's samples with the bottleneck
/// first, one FCT entry per sized flow. The testbed times a sized flow from
/// connect() to the receiver's one-byte answer, i.e. one handshake RTT and
/// half an RTT more than the model's first-byte-to-last-ACK time: the model
/// adds one base RTT (the remaining half RTT is the model's last ACK
/// travelling back).
fn run_record(sc: &Scenario, entry: &str, label: &str, r: &RunReport) -> Result<xdcc_metrics::Run> {
    use xdcc_metrics::{Fct, Flow, Row};
    if sc.flows.len() != r.flows.len() {
        bail!("{}: {} flows specified, {} simulated", sc.name, sc.flows.len(), r.flows.len());
    }
    let dur_s = sc.duration_ms / 1e3;
    let mtu = sc.net.mtu as f64;
    let s = &r.samples;
    let t_s = |k: usize| s.t_ns[k] as f64 / 1e9;
    let mut run = xdcc_metrics::Run {
        run_id: format!("{entry}{}{label}", if label.is_empty() { "" } else { "-" }),
        cc: entry.to_string(),
        label: label.to_string(),
        duration_s: dur_s,
        bottleneck: r.queues.first().map(|q| q.name.clone()).unwrap_or_default(),
        port_rates_mbit: r.queues.iter().map(|q| (q.name.clone(), Some(q.rate_mbit))).collect(),
        ..Default::default()
    };
    for (qi, q) in r.queues.iter().enumerate() {
        let rows = (0..s.t_ns.len())
            .map(|k| Row([t_s(k), s.qlen[k][qi] as f64, (s.qlen[k][qi] as f64 / mtu).ceil(), s.tx_bytes[k][qi] as f64, s.drops[k][qi] as f64]))
            .collect();
        run.queues.insert(q.name.clone(), rows);
    }
    for (i, (spec, f)) in sc.flows.iter().zip(&r.flows).enumerate() {
        let mut parts = spec.name.splitn(3, ':');
        let (Some(class), Some(kind)) = (parts.next(), parts.next()) else { bail!("flow '{}': not named class:kind:path", spec.name) };
        if kind != "long" {
            match f.fct_ms {
                Some(fct) => run.fct.push(Fct {
                    ok: true,
                    kind: kind.to_string(),
                    class: class.to_string(),
                    size: spec.size_kb.unwrap_or(0.0) * 1e3,
                    fct_s: Some((fct + f.rtt_us / 1e3) / 1e3),
                }),
                None => run.fct_unfinished += 1,
            }
            continue;
        }
        let id = run.flows.len() as u64;
        run.flows.push(Flow {
            id,
            kind: kind.to_string(),
            class: class.to_string(),
            start_s: spec.start_ms / 1e3,
            stop_s: spec.stop_ms.map_or(dur_s, |t| t / 1e3),
        });
        let rows = (0..s.t_ns.len())
            .map(|k| Row([t_s(k), s.delivered[k][i] as f64, (s.cwnd[k][i] as f64 / mtu).ceil(), s.rtt[k][i] as f64 / 1e3, s.losses[k][i] as f64]))
            .collect();
        run.samples.insert(id.to_string(), rows);
    }
    Ok(run)
}

/// Runs every point with `seeds` seeds (0, 1, ...).
pub fn predict(points: &[Point], seeds: u32) -> Result<Vec<Prediction>> {
    points
        .iter()
        .map(|p| {
            let mut pred = Prediction { entry: p.entry.clone(), cc: p.cc.clone(), label: p.label.clone(), notes: p.notes.clone(), seeds, metrics: BTreeMap::new() };
            let Some(sc) = &p.scenario else { return Ok(pred) };
            let kind = CcKind::parse(&p.cc)?;
            let mut per_metric: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for seed in 0..seeds as u64 {
                let mut s = sc.clone();
                s.seed = seed;
                let r = crate::run(&s, kind)?;
                let run = run_record(&s, &p.entry, &p.label, &r)?;
                for (k, v) in xdcc_metrics::analyze(&run).metrics.scalars() {
                    per_metric.entry(k).or_default().push(v);
                }
            }
            pred.metrics = per_metric.into_iter().map(|(k, v)| (k, crate::mean_ci95(&v))).collect();
            Ok(pred)
        })
        .collect()
}

/// A table of predictions, one line per point.
pub fn prediction_table(preds: &[Prediction]) -> String {
    let mut out = format!("{:<14} {:<10} {:>14} {:>14} {:>14} {:>14} {:>14} {:>12}\n", "run", "", "util%", "jain", "inter/intra", "q_mean_kB", "q_p99_kB", "drops");
    for p in preds {
        let cell = |k: &str, scale: f64, nd: usize| {
            p.metrics.get(k).map_or("-".to_string(), |(m, h)| if p.seeds > 1 { format!("{:.nd$}±{:.nd$}", m * scale, h * scale) } else { format!("{:.nd$}", m * scale) })
        };
        out.push_str(&format!(
            "{:<14} {:<10} {:>14} {:>14} {:>14} {:>14} {:>14} {:>12}\n",
            p.entry,
            p.label,
            cell("utilization", 100.0, 1),
            cell("jain", 1.0, 3),
            cell("inter_intra_ratio", 1.0, 2),
            cell("queue_mean_kb", 1.0, 1),
            cell("queue_p99_kb", 1.0, 1),
            cell("drops", 1.0, 0),
        ));
        for n in &p.notes {
            out.push_str(&format!("    ({n})\n"));
        }
    }
    out
}

/// Whether a scenario file is in the testbed's format (`duration_s`,
/// `ccs`, `[[long]]`...) rather than the simulator's (`duration_ms`, `cc`).
pub fn is_testbed_format(text: &str) -> bool {
    toml::from_str::<toml::Table>(text).map_or(false, |t| !t.contains_key("duration_ms") && !t.contains_key("queues"))
}
