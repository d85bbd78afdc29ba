//! The testbed's scenario files (`testbed/scenarios/*.toml`) in the model:
//! one file, two backends. A testbed scenario names a topology
//! (`testbed/topologies/*.toml`), the switch profile of every port
//! (`switch-config/profiles`), the CCs, the traffic and a sweep; this module
//! builds, per `ccs` entry and sweep point, the simulator's [`Scenario`] of
//! exactly that network, and the plan the VM's executor builds it from
//! ([`crate::testbed_plan`]):
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
//! topology's `time_scale`: the profile the plan applies to that port
//! (`testbed_plan::derived_profile`); propagation delay is the flow's base RTT
//! (intra or inter). The CC is told the network the module is told
//! (`net_*` tunables), plus the plan's time-scaled tunables and the
//! scenario's own.
//!
//! With several WAN paths (`wan_paths`), a path failing (`[[events]]`) or
//! cross traffic on one (`[[cross]]`) the model is routed instead
//! (`crate::topology`, kind `two_dc`): DC 1's hosts are `a.0`.., DC 2's
//! `b.0`.., each linked to its DC switch, the switch to its border router,
//! the border routers by one link per WAN path, every tier with its ports'
//! profile and propagation that gives the testbed's RTTs. Flows are routed
//! by ECMP at the border routers on (flow, entropy), the entropy chosen as
//! `reroute` says ([`Reroute`]); a black hole is a failure of `dc2br`'s
//! port on the path from `at_s` until its heal; cross traffic is flows
//! pinned to that port with the border routers' RTT over it; timeouts back
//! off as Linux's do. Not modelled, and said in [`Point::notes`]: netem
//! jitter and Gilbert–Elliott loss, delayed ACKs, the ACK path's queues, the
//! guest's scheduling stalls, and of the agent's rerouter what PLB does not
//! do (moves after lossy rounds, avoiding paths recently left, spreading
//! new connections over path ids). The sized flows (incasts, the workload
//! drawn once from its CDFs and seed) are the plan's: the kernel and the
//! model run the same flows.
//!
//! Every check of a scenario is here ([`TestbedScenario::validate`] and the
//! plan's per-point checks): `testbed/run.sh` plans a scenario on the host
//! before anything is booted, and the VM's executor only carries it out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use toml::Value;
use xdcc_switch::{Marking as SwMarking, Profile};

use crate::cc::CcKind;
use crate::scenario::{FlowSpec, LbSpec, Marking, NetSpec, Phantom, QueueSpec, RtoBackoff, Scenario};
use crate::testbed_plan::{CcSetup, CrossFlow, LongFlow, PathEvent, RunPlan, RunSettings, ScenarioInfo, ScenarioPlan, SizedFlow, Topology, Traffic};
use crate::topology::{Failure, LossModel, TopologyKind, TopologySpec};
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

/// A testbed scenario file (`testbed/scenarios/`).
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
    /// How the senders choose a WAN path (a sweep key too).
    #[serde(default)]
    pub reroute: Reroute,
    /// WAN paths black-holed and healed during the run.
    #[serde(default)]
    pub events: Vec<WanEvent>,
    /// Cross traffic on one WAN path.
    #[serde(default)]
    pub cross: Vec<Cross>,
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
    /// Parallel connections from each sender (1..=64).
    #[serde(default = "one_u32")]
    pub flows: u32,
}

/// How senders choose among the WAN paths (`reroute`), as the runner sets
/// the hosts up: the IPv6 flow label that the border routers' ECMP hashes
/// never changes (`single`: `net.core.txrehash = 0`), changes at every RTO
/// (`rto`: `txrehash = 1`, Linux's default, hence the runner's), or the
/// xdcc agent's rerouter moves flows as well (`agent`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Reroute {
    Single,
    #[default]
    Rto,
    Agent,
}

impl Reroute {
    /// As the scenario writes it.
    pub fn name(self) -> &'static str {
        match self {
            Reroute::Single => "single",
            Reroute::Rto => "rto",
            Reroute::Agent => "agent",
        }
    }

    /// A `[sweep]` value.
    fn parse(v: &Value) -> Result<Self> {
        match v.as_str() {
            Some("single") => Ok(Reroute::Single),
            Some("rto") => Ok(Reroute::Rto),
            Some("agent") => Ok(Reroute::Agent),
            _ => bail!("[sweep] reroute: {v} is not one of single, rto, agent"),
        }
    }

    /// The load balancer that moves a flow as the hosts do, for a flow
    /// whose base RTT is `rtt_us`: ECMP alone; PLB that never moves on
    /// congestion (`congested_rounds = 0`), i.e. a new path at every RTO;
    /// or PLB with the agent's defaults (`xdcc_common::Config::DEFAULT`: a
    /// round with half its ACKs marked is congested, a move after 12 such
    /// rounds or an RTO, RTO moves at most once per base RTT — the agent
    /// spaces every move so; 12 rounds are 12 base RTTs anyway).
    fn lb(self, rtt_us: f64) -> LbSpec {
        let agent = xdcc_common::Config::DEFAULT;
        match self {
            Reroute::Single => LbSpec::Ecmp,
            Reroute::Rto => LbSpec::Plb { congested_frac: 0.5, congested_rounds: 0, move_on_nack: false, min_move_interval_us: 0.0 },
            Reroute::Agent => LbSpec::Plb {
                congested_frac: agent.congested_ecn_ppm as f64 / 1e6,
                congested_rounds: agent.congested_rounds,
                move_on_nack: false,
                min_move_interval_us: rtt_us * agent.min_interval_base_rtts as f64,
            },
        }
    }
}

/// `[[events]]`: at `at_s`, `dc2br` starts dropping everything it sends on
/// WAN path `link` (`blackhole`; routes stay) or stops (`heal`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WanEvent {
    pub at_s: f64,
    pub link: String,
    pub action: WanAction,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WanAction {
    Blackhole,
    Heal,
}

/// `[[cross]]`: `flows` long flows from `dc2br` itself to `dc1br`'s address
/// on WAN path `link`, which only that path reaches: they cross `dc2br`'s
/// port on it alone. `cc`: the run's CC unless given.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cross {
    pub link: String,
    #[serde(default)]
    pub start_s: f64,
    #[serde(default)]
    pub stop_s: Option<f64>,
    #[serde(default = "one_u32")]
    pub flows: u32,
    #[serde(default)]
    pub cc: Option<String>,
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
fn one_u32() -> u32 {
    1
}
fn one_u64() -> u64 {
    1
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
    /// The ports in the run record: (the model's queue, the testbed's port
    /// name), the scenario's bottleneck first.
    pub ports: Vec<(String, String)>,
    /// The scenario's `[[events]]`, for the run record.
    pub events: Vec<xdcc_metrics::Event>,
}

impl TestbedScenario {
    /// Reads a testbed scenario file; its topology and workloads are found
    /// next to it (`../topologies`, `../workloads`).
    pub fn from_file(path: &Path) -> Result<(Self, PathBuf)> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let s = TestbedScenario::parse(&text, &path.display().to_string())?;
        let dir = path.canonicalize()?.parent().and_then(Path::parent).map(Path::to_path_buf).ok_or_else(|| anyhow!("{}: not inside testbed/scenarios", path.display()))?;
        Ok((s, dir))
    }

    /// Parses a testbed scenario's text (`origin` names it in errors).
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        toml::from_str(text).map_err(|e| anyhow!("{origin}: {}", e.message()))
    }

    /// What the file must hold beyond its keys' types, before any run is
    /// planned: ranges, known CCs, variants, profiles and presets, and the
    /// traffic's shape (the topology-dependent checks run per sweep point).
    pub fn validate(&self) -> Result<()> {
        if !(1..=3600).contains(&self.duration_s) {
            bail!("duration_s = {} is out of range [1, 3600]", self.duration_s);
        }
        if !(20..=10_000).contains(&self.sample_ms) {
            bail!("sample_ms = {} is out of range [20, 10000]", self.sample_ms);
        }
        let xdcc: Vec<&str> = CcKind::ALL.iter().map(|k| k.name()).collect();
        let is_xdcc = |c: &str| CcKind::parse(c).is_ok();
        let known = |c: &str| is_xdcc(c) || KERNEL_CCS.contains(&c);
        let profile = |where_: &str, name: &str| Profile::load(name).map(|_| ()).map_err(|e| anyhow!("{where_}: {e}"));
        let preset = |where_: &str, cc: &str, name: &str| -> Result<()> {
            if xdcc_algo::presets::PRESETS.iter().any(|p| p.0 == cc && p.1 == name) {
                return Ok(());
            }
            let have: Vec<&str> = xdcc_algo::presets::PRESETS.iter().filter(|p| p.0 == cc).map(|p| p.1).collect();
            bail!("{where_}: {cc}: unknown preset {name:?} (known: {})", if have.is_empty() { "none".to_string() } else { have.join(", ") })
        };
        for (name, v) in &self.variants {
            let at = format!("[variants.{name}]");
            if known(name) {
                bail!("{at}: a variant needs its own name, not a CC's");
            }
            if !is_xdcc(&v.cc) {
                bail!("{at}: cc = '{}' is not an xdcc CC ({})", v.cc, xdcc.join(", "));
            }
            if let Some(p) = &v.profile {
                profile(&at, p)?;
            }
            if let Some(p) = &v.preset {
                preset(&at, &v.cc, p)?;
            }
        }
        for cc in &self.ccs {
            if !known(cc) && !self.variants.contains_key(cc) {
                let variants: Vec<&str> = self.variants.keys().map(String::as_str).collect();
                bail!(
                    "unknown CC '{cc}' (xdcc: {}; kernel: {}{})",
                    xdcc.join(", "),
                    KERNEL_CCS.join(", "),
                    if variants.is_empty() { String::new() } else { format!("; variants: {}", variants.join(", ")) }
                );
            }
        }
        for (cc, p) in &self.profiles {
            profile(&format!("[profiles] {cc}"), p)?;
        }
        for (cc, p) in &self.presets {
            preset("[presets]", cc, p)?;
        }
        for cc in self.tunables.keys() {
            if !is_xdcc(cc) {
                bail!("[tunables.{cc}]: tunables exist for {} only", xdcc.join(", "));
            }
        }
        if let Some(sw) = &self.sweep {
            if sw.key == "reroute" {
                for v in &sw.values {
                    Reroute::parse(v)?;
                }
            } else if let Some(k) = sw.key.strip_prefix("workload.") {
                const KEYS: &[&str] = &["load", "hosts", "intra_cdf", "inter_cdf", "inter_fraction", "intra_scale", "inter_scale", "seed", "start_s", "stop_s"];
                if self.workload.is_none() || !KEYS.contains(&k) {
                    bail!("[sweep] key '{}': no such [workload] setting", sw.key);
                }
            }
        }
        let dur = self.duration_s as f64;
        for (i, g) in self.incast.iter().enumerate() {
            if g.from.is_empty() || !(1..=1 << 32).contains(&g.bytes) || g.at_s.is_empty() {
                bail!("[[incast]] #{}: needs from, to, bytes (1..4 GiB) and at_s = [times]", i + 1);
            }
            if g.at_s.iter().any(|a| !(0.0..dur).contains(a)) {
                bail!("[[incast]] #{}: at_s must lie within [0, duration_s)", i + 1);
            }
        }
        for (i, c) in self.cross.iter().enumerate() {
            let at = format!("[[cross]] #{}", i + 1);
            let stop = c.stop_s.unwrap_or(dur);
            if !(0.0 <= c.start_s && c.start_s < stop && stop <= dur) {
                bail!("{at}: needs 0 <= start_s < stop_s <= duration_s");
            }
            if !(1..=64).contains(&c.flows) {
                bail!("{at}: flows must be within 1..=64");
            }
            if c.cc != self.cross[0].cc {
                bail!("{at}: all cross traffic runs one CC (its receiver's default, for ECN)");
            }
            if let Some(cc) = c.cc.as_deref().filter(|c| !known(c)) {
                bail!("{at}: unknown CC '{cc}' (xdcc: {}; kernel: {})", xdcc.join(", "), KERNEL_CCS.join(", "));
            }
        }
        Ok(())
    }

    /// Every (entry, sweep point) as a simulator scenario.
    pub fn points(&self, name: &str, testbed_dir: &Path) -> Result<Vec<Point>> {
        self.each_run(testbed_dir, |base, entry, label, over| self.point(name, testbed_dir, base, entry, label, over))
    }

    /// Every (entry, sweep point) as the network and tunables a kernel run
    /// builds (`xdcc-sim plan`; [`crate::testbed_plan`]).
    /// The bottleneck and every monitored port: ports of the network.
    fn check_ports(&self, t: &Topology) -> Result<()> {
        for p in std::iter::once(&self.bottleneck).chain(&self.monitor) {
            link_of_port(&port_name(p)?, t)?;
        }
        Ok(())
    }

    fn bottleneck_uncrossed(&self) -> anyhow::Error {
        anyhow!("bottleneck '{}': no flow crosses that port", self.bottleneck)
    }

    /// The scenario's plan: its name, description and entries, and
    /// [`Self::plans`].
    pub fn plan(&self, name: &str, testbed_dir: &Path) -> Result<ScenarioPlan> {
        let runs = self.plans(testbed_dir)?;
        let mut points: Vec<String> = Vec::new();
        for r in &runs {
            if !points.contains(&r.label) {
                points.push(r.label.clone());
            }
        }
        let scenario = ScenarioInfo { name: name.into(), description: self.description.clone(), paper: self.paper.clone(), ccs: self.ccs.clone(), points };
        Ok(ScenarioPlan { scenario, runs })
    }

    pub fn plans(&self, testbed_dir: &Path) -> Result<Vec<RunPlan>> {
        self.each_run(testbed_dir, |base, entry, label, over| {
            let (cc, profile, preset, tunables) = self.resolve(entry)?;
            let (t, workload, reroute) = self.topology_at(base, profile.as_deref(), over)?;
            // (The WAN events' order and the border profile's loss.)
            self.wan_failures(&t, self.duration_s as f64)?;
            let traffic = self.traffic(&t, workload, &cc, self.duration_s as f64, testbed_dir)?;
            self.check_ports(&t)?;
            // Over ports in series (one WAN path, no events or cross
            // traffic), some flow must cross the port the run measures, as
            // the model requires.
            let routed = t.wan_paths > 1 || !self.events.is_empty() || !self.cross.is_empty();
            if !routed {
                let net = Net::new(&t, None, &mut Vec::new())?;
                let bottleneck = port_name(&self.bottleneck)?;
                let ends = traffic.long.iter().map(|l| (&l.src, &l.dst)).chain(traffic.sized.iter().map(|z| (&z.src, &z.dst)));
                let mut crossed = false;
                for (src, dst) in ends {
                    crossed |= net.path(src, dst)?.contains(&bottleneck);
                }
                if !crossed {
                    return Err(self.bottleneck_uncrossed());
                }
            }
            if reroute == Reroute::Agent {
                // One agent per sending host, and the flow generator is one
                // process: its flows can join one host's agent only.
                let from: std::collections::BTreeSet<&str> = traffic.sized.iter().map(|f| f.src.as_str()).collect();
                if from.len() > 1 {
                    bail!("reroute = agent: sized flows come from {} hosts ({}); one flow generator joins one host's agent", from.len(), from.into_iter().collect::<Vec<_>>().join(", "));
                }
            }
            // The run's CC with its entry's preset and tunables, then the
            // cross traffic's with the scenario's for that CC.
            let mut setup = vec![CcSetup::new(&cc, preset, tunables)];
            for c in &traffic.cross {
                if setup.iter().all(|s| s.cc != c.cc) {
                    setup.push(CcSetup::new(&c.cc, self.presets.get(&c.cc).cloned(), self.tunables.get(&c.cc).cloned().unwrap_or_default()));
                }
            }
            let settings = RunSettings {
                duration_s: self.duration_s,
                sample_ms: self.sample_ms,
                ipv6: self.ipv6,
                bottleneck: self.bottleneck.clone(),
                monitor: self.monitor.clone(),
                reroute: reroute.name().into(),
            };
            crate::testbed_plan::plan(entry, label, settings, setup, &t, traffic)
        })
    }

    /// `f(topology table, entry, sweep label, sweep override)` for every
    /// sweep point and `ccs` entry, in the runner's order.
    fn each_run<T>(&self, testbed_dir: &Path, mut f: impl FnMut(&toml::Table, &str, &str, Option<&(String, Value)>) -> Result<T>) -> Result<Vec<T>> {
        self.validate()?;
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
                out.push(f(&base, entry, label, over.as_ref()).with_context(|| {
                    format!("{entry}{}", if label.is_empty() { String::new() } else { format!(" at {label}") })
                })?);
            }
        }
        Ok(out)
    }

    /// The topology, workload and WAN path rule at a sweep point, with a
    /// variant's own switch profile (`profile`) on the DC switches.
    fn topology_at(&self, base: &toml::Table, profile: Option<&str>, over: Option<&(String, Value)>) -> Result<(Topology, Option<toml::Table>, Reroute)> {
        let mut topo = base.clone();
        let mut workload = self.workload.clone();
        let mut reroute = self.reroute;
        if let Some((key, v)) = over.filter(|(key, _)| key == "reroute") {
            reroute = Reroute::parse(v).with_context(|| format!("[sweep] key '{key}'"))?;
        } else if let Some((key, v)) = over {
            let (sec, k) = key.split_once('.').ok_or_else(|| anyhow!("[sweep] key '{key}' must be section.name or reroute"))?;
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
        if let Some(p) = profile {
            // A CC's own switch profile is used as shipped: no step-K override.
            let mut dc = toml::Table::new();
            dc.insert("switch_profile".into(), Value::String(p.to_string()));
            dc.insert("k_pkts".into(), Value::Integer(0));
            let mut o = toml::Table::new();
            o.insert("dc".into(), Value::Table(dc));
            merge(&mut topo, &o, "")?;
        }
        let t: Topology = Value::Table(topo).try_into().map_err(|e: toml::de::Error| anyhow!("topology: {}", e.message()))?;
        t.validate().context("topology")?;
        Ok((t, workload, reroute))
    }

    /// (CC, switch profile, preset, tunables) of a `ccs` entry (a CC or a
    /// `[variants]` name).
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
        let events = self.events.iter().map(|e| xdcc_metrics::Event { at_s: e.at_s, link: e.link.clone(), action: e.action.name().to_string() }).collect();
        let mut point =
            Point { entry: entry.to_string(), cc: cc.clone(), label: label.to_string(), scenario: None, notes: Vec::new(), ports: Vec::new(), events };
        if CcKind::parse(&cc).is_err() {
            if KERNEL_CCS.contains(&cc.as_str()) {
                point.notes.push(format!("{cc} is a kernel CC: no model in xdcc-sim"));
                return Ok(point);
            }
            bail!("unknown CC '{cc}'");
        }
        let (t, workload, reroute) = self.topology_at(base, profile.as_deref(), over)?;
        if t.delayed_acks {
            point.notes.push("delayed ACKs not modelled (the model ACKs every segment; `delayed_acks = false` in [net] makes the kernel do so too)".into());
        }
        let dur = self.duration_s as f64;
        // Several WAN paths, a path failing or cross traffic on one: the
        // routed model (`two_dc`); otherwise queues in series.
        let failures = self.wan_failures(&t, dur)?;
        self.check_ports(&t)?;
        let routed = t.wan_paths > 1 || !self.events.is_empty() || !self.cross.is_empty();
        let net = Net::new(&t, routed.then_some(reroute), &mut point.notes)?;

        let traffic = self.traffic(&t, workload, &cc, dur, dir)?;
        let mut flows = Vec::new();
        let mut used = std::collections::BTreeSet::new();
        let mut long_windows = Vec::new();
        for l in &traffic.long {
            long_windows.extend(std::iter::repeat_n((l.start_s, l.stop_s), l.connections as usize));
            let mut f = net.flow("long", &l.src, &l.dst, l.connections, &mut used)?;
            f.start_ms = l.start_s * 1e3;
            f.stop_ms = (l.stop_s < dur).then_some(l.stop_s * 1e3);
            flows.push(f);
        }
        for z in &traffic.sized {
            let mut f = net.flow(&z.kind, &z.src, &z.dst, 1, &mut used)?;
            f.start_ms = z.at_s * 1e3;
            f.size_kb = Some(z.bytes as f64 / 1e3);
            flows.push(f);
        }
        if flows.is_empty() {
            bail!("no traffic: the scenario has no [[long]], [[incast]] or [workload]");
        }
        for (i, c) in self.cross.iter().enumerate() {
            flows.push(self.cross_flows(i, c, &t, &cc, &mut point.notes)?);
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
        let (queues, topology) = if routed {
            // The testbed samples the bottleneck and the monitored ports.
            let mut ports: Vec<String> = vec![bottleneck];
            for m in &self.monitor {
                let m = port_name(m)?;
                if !ports.contains(&m) {
                    ports.push(m);
                }
            }
            point.ports = ports.into_iter().map(|p| Ok((link_of_port(&p, &t)?, p))).collect::<Result<_>>()?;
            (Vec::new(), Some(net.two_dc(failures, point.ports.iter().map(|(l, _)| l.clone()).collect())?))
        } else {
            let mut queues = net.queues_used(&used)?;
            if let Some(pos) = queues.iter().position(|q| q.name == bottleneck) {
                let q = queues.remove(pos);
                queues.insert(0, q);
            } else {
                return Err(self.bottleneck_uncrossed());
            }
            point.ports = queues.iter().map(|q| (q.name.clone(), q.name.clone())).collect();
            (queues, None)
        };

        let net_spec = NetSpec {
            link_rate_gbps: t.dc.rate_mbit as f64 / 1e3,
            intra_rtt_us: t.dc.intra_rtt_us as f64,
            inter_rtt_us: t.inter_rtt_us() as f64,
            mtu: MTU as u32,
        };
        // The runner's order: the network, its time-scaled tunables, the
        // preset, the scenario's tunables.
        let mut params = BTreeMap::new();
        let mut p = crate::testbed_plan::time_scaled_tunables(&cc, &t, &net.dc_profile);
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
            topology,
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
            host_offloads: true,
            receive_window: Some(LINUX_RECEIVE_WINDOW),
            loss_recovery: Default::default(),
            rto_us: None,
            rto_intra_us: None,
            rto_window_cut: true,
            // Linux's backoff where a path can die and come back; the model
            // of queues in series keeps the simulator's default, with which
            // its numbers in RESULTS.md were taken.
            rto_backoff: if routed { RtoBackoff::Timer } else { RtoBackoff::Srtt },
            stop_when_done: false,
        };
        sc.validate()?;
        point.scenario = Some(sc);
        Ok(point)
    }
}

impl TestbedScenario {
    /// `[[events]]` as the model's failures of `dc2br`'s WAN ports (the
    /// link `b.border->a.border#K`, see [`link_of_port`]), checked as the
    /// runner checks them: in time order, a path is black-holed only while
    /// it forwards and healed only while it is black-holed.
    /// The run's traffic as the kernel runs it and the model models it:
    /// long flows per (group, sender), cross traffic, WAN events, and the
    /// sized flows (incasts, then the workload's Poisson arrivals drawn
    /// from its seed) in the order they were generated.
    fn traffic(&self, t: &Topology, workload: Option<toml::Table>, run_cc: &str, dur: f64, dir: &Path) -> Result<Traffic> {
        let class = |a: &str, b: &str| -> Result<&'static str> { Ok(if parse_host(a, t)?.0 == parse_host(b, t)?.0 { "intra" } else { "inter" }) };
        let mut long = Vec::new();
        for (i, g) in self.long.iter().enumerate() {
            if !(1..=64).contains(&g.flows) {
                bail!("[[long]] #{}: flows (connections from each sender) must be within 1..=64", i + 1);
            }
            for (k, src) in g.from.iter().enumerate() {
                let start = g.start_s + k as f64 * g.start_step_s;
                let stop = g.stop_s.unwrap_or(dur);
                if !(start >= 0.0 && start < stop && stop <= dur) {
                    bail!("[[long]] #{}: needs 0 <= start_s < stop_s <= duration_s for every flow", i + 1);
                }
                let class = class(src, &g.to).with_context(|| format!("[[long]] #{}", i + 1))?;
                long.push(LongFlow { src: src.clone(), dst: g.to.clone(), connections: g.flows, start_s: start, stop_s: stop, class: class.into() });
            }
        }
        let mut sized = Vec::new();
        for (i, g) in self.incast.iter().enumerate() {
            for h in g.from.iter().chain([&g.to]) {
                parse_host(h, t).with_context(|| format!("[[incast]] #{}", i + 1))?;
            }
            for &at in &g.at_s {
                for src in &g.from {
                    sized.push(SizedFlow { at_s: at, src: src.clone(), dst: g.to.clone(), bytes: g.bytes, kind: "incast".into(), class: class(src, &g.to)?.into() });
                }
            }
        }
        if let Some(w) = workload {
            let w: Workload = Value::Table(w).try_into().map_err(|e: toml::de::Error| anyhow!("[workload]: {}", e.message()))?;
            for h in &w.hosts {
                parse_host(h, t).context("[workload]")?;
            }
            for (at, src, dst, bytes) in workload_flows(&w, t, dur, dir)? {
                let class = class(&src, &dst)?.into();
                sized.push(SizedFlow { at_s: at, src, dst, bytes, kind: "workload".into(), class });
            }
        }
        let cross = self
            .cross
            .iter()
            .map(|c| {
                Ok(CrossFlow {
                    path: wan_path(&c.link, t).context("[[cross]]")?,
                    streams: c.flows,
                    cc: c.cc.clone().unwrap_or_else(|| run_cc.to_string()),
                    start_s: c.start_s,
                    stop_s: c.stop_s.unwrap_or(dur),
                })
            })
            .collect::<Result<_>>()?;
        let mut events: Vec<PathEvent> = self
            .events
            .iter()
            .map(|e| Ok(PathEvent { at_s: e.at_s, action: e.action.name().into(), path: wan_path(&e.link, t).context("[[events]]")? }))
            .collect::<Result<_>>()?;
        events.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        if long.is_empty() && sized.is_empty() {
            bail!("no traffic: the scenario has no [[long]], [[incast]] or [workload]");
        }
        Ok(Traffic { long, cross, events, sized })
    }

    fn wan_failures(&self, t: &Topology, dur: f64) -> Result<Vec<Failure>> {
        let mut events: Vec<&WanEvent> = self.events.iter().collect();
        events.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        let mut out: Vec<Failure> = Vec::new();
        // Per path: its open failure (an index into `out`).
        let mut dead: BTreeMap<u32, usize> = BTreeMap::new();
        for e in events {
            let at = format!("[[events]] at_s = {}", e.at_s);
            if !(e.at_s.is_finite() && (0.0..dur).contains(&e.at_s)) {
                bail!("{at}: at_s must lie within [0, duration_s)");
            }
            let k = wan_path(&e.link, t).with_context(|| at.clone())?;
            match (e.action, dead.remove(&k)) {
                (WanAction::Blackhole, None) => {
                    dead.insert(k, out.len());
                    out.push(Failure { link: link_of_port(&format!("dc2br:wan{k}"), t)?, from_ms: e.at_s * 1e3, until_ms: None });
                }
                (WanAction::Heal, Some(i)) => out[i].until_ms = Some(e.at_s * 1e3),
                (WanAction::Blackhole, Some(_)) => bail!("{at}: {} is already black-holed", e.link),
                (WanAction::Heal, None) => bail!("{at}: {} is not black-holed", e.link),
            }
        }
        if !out.is_empty() {
            let p = Profile::load(&t.wan.border_profile).map_err(|e| anyhow!("border profile: {e}"))?;
            if p.wan.as_ref().is_some_and(|w| w.loss_ppm > 0 || w.gilbert_elliott.is_some()) {
                bail!("[[events]]: a black hole replaces the WAN port's netem loss; profile {} has its own loss", t.wan.border_profile);
            }
        }
        Ok(out)
    }

    /// `[[cross]]` #`i`: long flows pinned to `dc2br`'s port on the path, with
    /// the base RTT between the two border routers over it. A kernel CC
    /// (no model) is modelled as DCTCP, and the notes say so.
    fn cross_flows(&self, i: usize, c: &Cross, t: &Topology, run_cc: &str, notes: &mut Vec<String>) -> Result<FlowSpec> {
        let at = format!("[[cross]] #{}", i + 1);
        let k = wan_path(&c.link, t).with_context(|| at.clone())?;
        let dur = self.duration_s as f64;
        let stop = c.stop_s.unwrap_or(dur);
        if !(c.start_s >= 0.0 && c.start_s < stop && stop <= dur) {
            bail!("{at}: needs 0 <= start_s < stop_s <= duration_s");
        }
        if !(1..=64).contains(&c.flows) {
            bail!("{at}: flows must be within 1..=64");
        }
        // A kernel CC does not negotiate ECN (the routers keep Linux's
        // `tcp_ecn = 2`), so its packets are never marked: without marks
        // DCTCP halves its window once per loss, as Reno does.
        let (cc, ect) = match c.cc.as_deref() {
            None => (None, true),
            Some(x) if x == run_cc => (None, true),
            Some(x) if CcKind::parse(x).is_ok() => (Some(x.to_string()), true),
            Some(x) if KERNEL_CCS.contains(&x) => {
                notes.push(format!(
                    "cross traffic on {}: {x} is a kernel CC without a model, modelled as dctcp without ECN (Reno on loss)",
                    c.link
                ));
                (Some("dctcp".to_string()).filter(|d| d != run_cc), false)
            }
            Some(x) => bail!("{at}: unknown CC '{x}'"),
        };
        Ok(FlowSpec {
            name: format!("inter:cross:dc2br>dc1br:wan{k}"),
            count: c.flows,
            rtt_us: 2.0 * wan_delay_us(t),
            path: vec![link_of_port(&format!("dc2br:wan{k}"), t)?],
            start_ms: c.start_s * 1e3,
            start_spacing_us: 0.0,
            stop_ms: (stop < dur).then_some(stop * 1e3),
            size_kb: None,
            host_rate_gbps: None,
            host: None,
            cc,
            params: BTreeMap::new(),
            src: None,
            dst: None,
            pairs: Vec::new(),
            tm: None,
            lb: None,
            ec: None,
            ect,
        })
    }
}

impl WanAction {
    fn name(self) -> &'static str {
        match self {
            WanAction::Blackhole => "blackhole",
            WanAction::Heal => "heal",
        }
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

/// "wan2" -> 2, a WAN path of the topology.
fn wan_path(name: &str, t: &Topology) -> Result<u32> {
    match name.strip_prefix("wan").and_then(|k| k.parse::<u32>().ok()) {
        Some(k) if k < t.wan_paths => Ok(k),
        _ => bail!("link '{name}' is not a WAN path (wan0..wan{})", t.wan_paths - 1),
    }
}

/// The one-way delay of a WAN path (`topology.py`: its netem delay on both
/// border routers' ports).
fn wan_delay_us(t: &Topology) -> f64 {
    (t.inter_rtt_us().saturating_sub(t.dc.intra_rtt_us) / 2) as f64
}

/// The routed model's link that is the testbed's port `port` ("ns:dev"):
/// DC 1 is `a`, DC 2 `b`, host `dcDhI` is `<a|b>.<I-1>`, a DC switch
/// `<a|b>.sw`, a border router `<a|b>.border`; a port is the link leaving
/// its namespace through that interface (`dc2br:wan3` is
/// `b.border->a.border#3`).
fn link_of_port(port: &str, t: &Topology) -> Result<String> {
    let bad = || anyhow!("port '{port}': not a port of the testbed's network (dcDhI:eth0, dcDsw:hI, dcDsw:uplink, dcDbr:dc, dcDbr:wanK)");
    let (ns, dev) = port.split_once(':').ok_or_else(bad)?;
    let dc = |d: &str| match d {
        "1" => Ok(("a", "b")),
        "2" => Ok(("b", "a")),
        _ => Err(bad()),
    };
    if let Some(d) = ns.strip_suffix("sw").and_then(|n| n.strip_prefix("dc")) {
        let (x, _) = dc(d)?;
        if dev == "uplink" {
            return Ok(format!("{x}.sw->{x}.border"));
        }
        let (_, i) = parse_host(&format!("dc{d}{dev}"), t).map_err(|_| bad())?;
        return Ok(format!("{x}.sw->{x}.{}", i - 1));
    }
    if let Some(d) = ns.strip_suffix("br").and_then(|n| n.strip_prefix("dc")) {
        let (x, y) = dc(d)?;
        if dev == "dc" {
            return Ok(format!("{x}.border->{x}.sw"));
        }
        let k = wan_path(dev, t).with_context(|| format!("port '{port}'"))?;
        return Ok(format!("{x}.border->{y}.border#{k}"));
    }
    let (d, i) = parse_host(ns, t).map_err(|_| bad())?;
    if dev != "eth0" {
        return Err(bad());
    }
    Ok(format!("{}.{}->{0}.sw", if d == 1 { "a" } else { "b" }, i - 1))
}

/// The routed model's host: "dc1h1" -> "a.0", "dc2h3" -> "b.2".
fn host_node(h: &str, t: &Topology) -> Result<String> {
    let (d, i) = parse_host(h, t)?;
    Ok(format!("{}.{}", if d == 1 { "a" } else { "b" }, i - 1))
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
    amrt_first_hop: bool,
    /// The routed model (`two_dc`) and how its senders choose a WAN path;
    /// None: queues in series.
    routed: Option<Reroute>,
}

impl<'a> Net<'a> {
    fn new(t: &'a Topology, routed: Option<Reroute>, notes: &mut Vec<String>) -> Result<Self> {
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
        if let Some(r) = routed {
            notes.push(format!(
                "{} WAN path(s), routed: dc2br and dc1br spread flows over them by ECMP on (flow, label); ACKs return without queueing; \
                 each host link's two directions are queues with the DC switch port's profile",
                t.wan_paths
            ));
            match r {
                Reroute::Single => {}
                Reroute::Rto => notes.push("reroute = rto: a new path at every RTO (PLB with congested_rounds = 0)".into()),
                Reroute::Agent => notes.push(
                    "reroute = agent: PLB with the agent's defaults (12 rounds of >= 50 % ECN, RTOs, once per base RTT); not modelled: its moves \
                     after lossy rounds, its avoidance of paths recently left, its spreading of new connections over path ids"
                        .into(),
                ),
            }
        }
        Ok(Net { t, dc_profile, amrt_first_hop, routed })
    }

    /// The ports from `src` to `dst`, sender first.
    fn path(&self, src: &str, dst: &str) -> Result<Vec<String>> {
        let (sd, _) = parse_host(src, self.t)?;
        let (dd, di) = parse_host(dst, self.t)?;
        if src == dst {
            bail!("a flow from {src} to itself");
        }
        // The host NIC is a port of the path only where AMRT's first-hop
        // marker watches it; otherwise it is the host's shared NIC (`host`
        // of the flow group, at `host_rate_gbps`): Linux's TCP small queues
        // keep about 1 ms of each socket's pacing rate in the netem FIFO, so
        // the backlog of a window stays in its socket, and the host's flows
        // share the NIC by those budgets (sim.rs, `SharedNic`).
        let mut p = if self.amrt_first_hop { vec![format!("{src}:eth0")] } else { Vec::new() };
        if sd != dd {
            p.push(format!("dc{sd}sw:uplink"));
            p.push(format!("dc{sd}br:wan0"));
            p.push(format!("dc{dd}br:dc"));
        }
        p.push(format!("dc{dd}sw:h{di}"));
        Ok(p)
    }

    /// `count` flows from `src` to `dst`: over the ports in series (their
    /// names go into `used`), or routed between the hosts.
    fn flow(&self, kind: &str, src: &str, dst: &str, count: u32, used: &mut std::collections::BTreeSet<String>) -> Result<FlowSpec> {
        let path = self.path(src, dst)?;
        let inter = path.iter().any(|q| q.ends_with(":uplink"));
        let rtt_us = if inter { self.t.inter_rtt_us() } else { self.t.dc.intra_rtt_us } as f64;
        let path_model = self.routed.is_none();
        let (path, rtt_us, pairs, lb) = match self.routed {
            None => {
                used.extend(path.iter().cloned());
                (path, rtt_us, Vec::new(), None)
            }
            Some(r) => {
                let pair = format!("{}>{}", host_node(src, self.t)?, host_node(dst, self.t)?);
                (Vec::new(), 0.0, vec![pair; count as usize], Some(r.lb(rtt_us)))
            }
        };
        Ok(FlowSpec {
            name: format!("{}:{kind}:{src}>{dst}", if inter { "inter" } else { "intra" }),
            count,
            rtt_us,
            path,
            start_ms: 0.0,
            start_spacing_us: 0.0,
            stop_ms: None,
            size_kb: None,
            host_rate_gbps: Some(self.t.dc.rate_mbit as f64 / 1e3),
            // Over ports in series the host's flows share its NIC (above). (As
            // AMRT's first hop, or routed, where the host's link is a link of
            // the graph, they share that port's queue instead.)
            host: (path_model && !self.amrt_first_hop).then(|| src.to_string()),
            cc: None,
            params: BTreeMap::new(),
            src: None,
            dst: None,
            pairs,
            tm: None,
            lb,
            ec: None,
            ect: true,
        })
    }

    /// The routed model: the testbed's network as `two_dc`, every tier from
    /// the profile the runner gives its ports: host links at the DC rate
    /// and the uplinks at theirs with the DC switch's profile, the WAN paths
    /// with the border profile; propagation so that the RTTs are the
    /// testbed's (a host link a quarter of the intra-DC RTT, as each host's
    /// netem holds half of it one way; a WAN path the rest of the
    /// inter-DC RTT's half, as its netem on either border router; the
    /// uplinks none). `report`: links sampled besides the WAN paths.
    fn two_dc(&self, fail: Vec<Failure>, report: Vec<String>) -> Result<TopologySpec> {
        let t = self.t;
        let host = port_queue("dcDsw:hI", t, &t.dc.switch_profile, t.dc.rate_mbit)?;
        let uplink = port_queue("dcDsw:uplink", t, &t.dc.switch_profile, t.dc.uplink_rate_mbit)?;
        let wan = port_queue("dcDbr:wanK", t, &t.wan.border_profile, t.wan.rate_mbit)?;
        Ok(TopologySpec {
            kind: TopologyKind::TwoDc,
            k: 0,
            hosts_per_dc: Some(t.hosts_per_dc),
            link_rate_gbps: host.rate_gbps,
            hop_latency_us: t.dc.intra_rtt_us as f64 / 4.0,
            buffer_kb: host.buffer_kb,
            marking: host.marking,
            phantom: host.phantom,
            uplink_rate_gbps: Some(uplink.rate_gbps),
            uplink_latency_us: Some(0.0),
            uplink_buffer_kb: Some(uplink.buffer_kb),
            uplink_marking: Some(uplink.marking),
            uplink_phantom: uplink.phantom,
            border_links: t.wan_paths,
            core_border_links: None,
            border_rate_gbps: Some(wan.rate_gbps),
            border_latency_us: wan_delay_us(t),
            border_buffer_kb: Some(wan.buffer_kb),
            border_marking: Some(wan.marking),
            border_phantom: wan.phantom,
            border_loss: (wan.loss_prob > 0.0).then_some(LossModel::Bernoulli { p: wan.loss_prob }),
            fail,
            report,
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
                port_queue(name, t, &t.dc.switch_profile, rate)?
            } else if dev == "dc" {
                port_queue(name, t, crate::testbed_plan::BORDER_DC_PROFILE, t.dc.uplink_rate_mbit)?
            } else {
                port_queue(name, t, &t.wan.border_profile, t.wan.rate_mbit)?
            };
            out.push(q);
        }
        Ok(out)
    }
}

/// The model's queue of a testbed port: its derived profile
/// ([`crate::testbed_plan::derived_profile`], the one the executor applies),
/// with K applied at the port's own rate as tc does (`red_thresholds`).
fn port_queue(name: &str, t: &Topology, profile: &str, rate_mbit: u64) -> Result<QueueSpec> {
    let p = crate::testbed_plan::derived_profile(t, profile, rate_mbit)?;
    let buffer = p.port.buffer_bytes.ok_or_else(|| anyhow!("{name}: profile without a buffer"))?;
    let marking = match &p.marking {
        _ if p.amrt.is_some() => Marking::Amrt,
        SwMarking::None {} => Marking::None,
        SwMarking::Step { k_pkts_per_gbps } => Marking::Threshold { k_pkts: (k_pkts_per_gbps * rate_mbit / 1000).max(1) as f64 },
        SwMarking::Red { min_pct, max_pct, probability_pct } => Marking::Red {
            min_frac: *min_pct as f64 / 100.0,
            max_frac: *max_pct as f64 / 100.0,
            pmax: *probability_pct as f64 / 100.0,
        },
    };
    let phantom = p.phantom.as_ref().map(|ph| Phantom {
        drain_frac: ph.drain_pct as f64 / 100.0,
        size_kb: Some(ph.size_bytes.unwrap_or(buffer) as f64 / 1e3),
        min_frac: ph.kmin_pct as f64 / 100.0,
        max_frac: ph.kmax_pct as f64 / 100.0,
    });
    let loss_prob = p.wan.as_ref().map_or(0.0, |w| w.loss_ppm as f64 / 1e6);
    Ok(QueueSpec { name: name.to_string(), rate_gbps: rate_mbit as f64 / 1e3, buffer_kb: buffer as f64 / 1e3, marking, phantom, loss_prob })
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
    let mut rng = crate::rng::Rng(w.seed ^ 0x3057_4B10_AD00_0001);
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
/// long flows with their samples, the cross traffic (one flow per
/// `[[cross]]`, as the runner records it: start and stop), the ports'
/// samples under the testbed's names with the bottleneck first, one FCT
/// entry per sized flow (with its start; unfinished ones marked so), the
/// scenario's events. The testbed times a sized
/// flow from connect() to the receiver's one-byte answer, i.e. one
/// handshake RTT and half an RTT more than the model's first-byte-to-last-ACK
/// time: the model adds one base RTT (the remaining half RTT is the
/// model's last ACK travelling back).
fn run_record(sc: &Scenario, p: &Point, r: &RunReport) -> Result<xdcc_metrics::Run> {
    use xdcc_metrics::{Fct, Flow, Row};
    let specified: usize = sc.flows.iter().map(|f| f.count as usize).sum();
    if specified != r.flows.len() {
        bail!("{}: {specified} flows specified, {} simulated", sc.name, r.flows.len());
    }
    let dur_s = sc.duration_ms / 1e3;
    let mtu = sc.net.mtu as f64;
    let s = &r.samples;
    let t_s = |k: usize| s.t_ns[k] as f64 / 1e9;
    let mut run = xdcc_metrics::Run {
        run_id: format!("{}{}{}", p.entry, if p.label.is_empty() { "" } else { "-" }, p.label),
        cc: p.entry.clone(),
        label: p.label.clone(),
        duration_s: dur_s,
        bottleneck: p.ports.first().map(|(_, port)| port.clone()).unwrap_or_default(),
        events: p.events.clone(),
        ..Default::default()
    };
    for (queue, port) in &p.ports {
        let qi = r.queues.iter().position(|q| &q.name == queue).ok_or_else(|| anyhow!("{}: port {port} ({queue}) is not in the run's report", sc.name))?;
        let rows = (0..s.t_ns.len())
            .map(|k| Row([t_s(k), s.qlen[k][qi] as f64, (s.qlen[k][qi] as f64 / mtu).ceil(), s.tx_bytes[k][qi] as f64, s.drops[k][qi] as f64]))
            .collect();
        run.port_rates_mbit.insert(port.clone(), Some(r.queues[qi].rate_mbit));
        run.queues.insert(port.clone(), rows);
    }
    // The simulated flows in spec order (a group of `count` flows takes
    // `count` places).
    let mut i = 0;
    for spec in &sc.flows {
        let mut parts = spec.name.splitn(3, ':');
        let (Some(class), Some(kind)) = (parts.next(), parts.next()) else { bail!("flow '{}': not named class:kind:path", spec.name) };
        let record = |run: &mut xdcc_metrics::Run| {
            let id = run.flows.len() as u64;
            let (start_s, stop_s) = (spec.start_ms / 1e3, spec.stop_ms.map_or(dur_s, |t| t / 1e3));
            run.flows.push(Flow { id, kind: kind.to_string(), class: class.to_string(), start_s, stop_s });
            id
        };
        match kind {
            "cross" => {
                record(&mut run);
                i += spec.count as usize;
            }
            "long" => {
                for _ in 0..spec.count {
                    let id = record(&mut run);
                    let rows = (0..s.t_ns.len())
                        .map(|k| Row([t_s(k), s.delivered[k][i] as f64, (s.cwnd[k][i] as f64 / mtu).ceil(), s.rtt[k][i] as f64 / 1e3, s.losses[k][i] as f64]))
                        .collect();
                    run.samples.insert(id.to_string(), rows);
                    i += 1;
                }
            }
            _ => {
                for f in &r.flows[i..i + spec.count as usize] {
                    run.fct_unfinished += f.fct_ms.is_none() as u64;
                    run.fct.push(Fct {
                        ok: f.fct_ms.is_some(),
                        unfinished: f.fct_ms.is_none(),
                        at_s: Some(f.start_ms / 1e3),
                        kind: kind.to_string(),
                        class: class.to_string(),
                        size: spec.size_kb.unwrap_or(0.0) * 1e3,
                        fct_s: f.fct_ms.map(|fct| (fct + f.rtt_us / 1e3) / 1e3),
                    });
                }
                i += spec.count as usize;
            }
        }
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
                let run = run_record(&s, p, &r)?;
                for (k, v) in xdcc_metrics::analyze(&run).metrics.scalars() {
                    per_metric.entry(k).or_default().push(v);
                }
            }
            pred.metrics = per_metric.into_iter().map(|(k, v)| (k, crate::mean_ci95(&v))).collect();
            Ok(pred)
        })
        .collect()
}

/// A table of predictions, one line per point, then one per phase when
/// the run has several (the long flows' throughput, the stuck ones, FCTs,
/// each port's utilization in %).
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
        let phases = phase_metrics(p);
        if phases.len() > 1 {
            for (span, metrics) in phases {
                let cells: Vec<String> = metrics
                    .iter()
                    .map(|(name, (m, h))| {
                        let (name, scale, nd) = match name.strip_prefix("util ") {
                            Some(port) => (format!("util% {port}"), 100.0, 1),
                            None => (name.to_string(), 1.0, if name.ends_with("_ms") { 0 } else { 1 }),
                        };
                        if p.seeds > 1 {
                            format!("{name} {:.nd$}±{:.nd$}", m * scale, h * scale)
                        } else {
                            format!("{name} {:.nd$}", m * scale)
                        }
                    })
                    .collect();
                out.push_str(&format!("    phase {span} s: {}\n", cells.join(", ")));
            }
        }
        for n in &p.notes {
            out.push_str(&format!("    ({n})\n"));
        }
    }
    out
}

/// Per phase span ("6-14"), its metrics by name: (mean, 95 % half-width).
type PhaseMetrics<'a> = Vec<(&'a str, Vec<(&'a str, (f64, f64))>)>;

/// A prediction's per-phase metrics (`phase 6-14 s long_mbps`, ...), the
/// phases in time order.
fn phase_metrics(p: &Prediction) -> PhaseMetrics<'_> {
    let mut out: PhaseMetrics = Vec::new();
    for (key, &v) in &p.metrics {
        let Some((span, name)) = key.strip_prefix("phase ").and_then(|k| k.split_once(" s ")) else { continue };
        match out.iter_mut().find(|(s, _)| *s == span) {
            Some((_, m)) => m.push((name, v)),
            None => out.push((span, vec![(name, v)])),
        }
    }
    let start = |span: &str| span.split('-').next().and_then(|a| a.parse::<f64>().ok()).unwrap_or(f64::INFINITY);
    out.sort_by(|a, b| start(a.0).total_cmp(&start(b.0)));
    out
}

/// Whether a scenario file is in the testbed's format (`duration_s`,
/// `ccs`, `[[long]]`...) rather than the simulator's (`duration_ms`, `cc`).
pub fn is_testbed_format(text: &str) -> bool {
    toml::from_str::<toml::Table>(text).map_or(false, |t| !t.contains_key("duration_ms") && !t.contains_key("queues"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testbed_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    fn cdf(name: &str) -> Vec<(f64, f64)> {
        load_cdf(&testbed_dir().join("workloads").join(name)).unwrap()
    }

    /// The error a scenario text gets from planning its runs.
    /// The planner's error for a scenario's text, after checking that the
    /// model refuses it with the same words (the executor and the model
    /// read one meaning of a file).
    fn plan_error(text: &str) -> String {
        let plan = match TestbedScenario::parse(text, "t.toml").and_then(|s| s.plans(&testbed_dir())) {
            Ok(_) => "(planned)".into(),
            Err(e) => format!("{e:#}"),
        };
        let model = match TestbedScenario::parse(text, "t.toml").and_then(|s| s.points("t", &testbed_dir())) {
            Ok(_) => "(planned)".into(),
            Err(e) => format!("{e:#}"),
        };
        assert_eq!(plan, model, "the planner and the model differ on\n{text}");
        plan
    }

    /// `base` with `extra`'s top-level keys before its first table and
    /// `extra`'s tables after it.
    fn compose(base: &str, extra: &str) -> String {
        let split = extra.find("\n[").map_or(if extra.starts_with('[') { 0 } else { extra.len() }, |i| if extra.starts_with('[') { 0 } else { i + 1 });
        let (top, tables) = extra.split_at(split);
        let (base_top, base_tables) = base.split_at(base.find("\n[").map_or(base.len(), |i| i + 1));
        format!("{top}{base_top}{base_tables}{tables}")
    }

    #[test]
    fn every_shipped_scenario_plans() {
        for f in std::fs::read_dir(testbed_dir().join("scenarios")).unwrap() {
            let path = f.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("toml") || !is_testbed_format(&std::fs::read_to_string(&path).unwrap()) {
                continue;
            }
            let (s, dir) = TestbedScenario::from_file(&path).unwrap();
            assert!(!s.plans(&dir).unwrap().is_empty(), "{}", path.display());
        }
    }

    #[test]
    fn a_bad_scenario_is_one_error_naming_its_key() {
        let base = "bottleneck = \"dc1sw:h1\"\n[[long]]\nfrom = [\"dc1h2\"]\nto = \"dc1h1\"\n";
        let cases: &[(&str, &str)] = &[
            ("bogus = 1\n", "unknown field `bogus`"),
            ("ccs = [\"nope\"]\n", "unknown CC 'nope'"),
            ("[[long]]\nfrom = [\"dc9h1\"]\nto = \"dc1h1\"\n", "no host 'dc9h1'"),
            ("[[long]]\nfrom = [\"dc1h2\"]\nto = \"dc1h1\"\nstop_s = 99\n", "stop_s"),
            ("[net]\nhosts_per_dc = 0\n", "hosts_per_dc = 0 is out of range"),
            ("[net.dc]\nswitch_profile = \"nope\"\n", "unknown profile `nope`"),
            ("[net.dc]\nrate = 5\n", "unknown field `rate`"),
            ("[workload]\nload = 2.0\n", "load must be in"),
            ("[sweep]\nkey = \"workload.load\"\nvalues = [0.4]\n", "no such [workload]"),
            ("duration_s = 0\n", "duration_s = 0"),
            ("sample_ms = 5\n", "sample_ms = 5"),
            ("ccs = [\n", "t.toml"),
            ("ccs = [\"v\"]\n[variants.v]\ncc = \"cubic\"\n", "not an xdcc CC"),
            ("ccs = [\"v\"]\n[variants.v]\ntunables = {}\n", "missing field `cc`"),
            ("ccs = [\"v\"]\n[variants.v]\ncc = \"amrt\"\nprofile = \"nope\"\n", "unknown profile `nope`"),
            ("[variants.uno]\ncc = \"uno\"\n", "its own name"),
            ("ccs = [\"w\"]\n[variants.v]\ncc = \"amrt\"\n", "variants: v"),
            ("[presets]\ngemini = \"nope\"\n", "gemini: unknown preset \"nope\" (known: "),
            ("[presets]\namrt = \"uno-artifact\"\n", "amrt: unknown preset \"uno-artifact\" (known: none)"),
            ("ccs = [\"v\"]\n[variants.v]\ncc = \"uno\"\npreset = \"x\"\n", "[variants.v]: uno: unknown preset \"x\""),
            ("[tunables.cubic]\nx = 1\n", "[tunables.cubic]"),
            ("[[incast]]\nfrom = [\"dc1h3\"]\nto = \"dc1h1\"\nbytes = 0\nat_s = [1.0]\n", "bytes (1..4 GiB)"),
            ("[[incast]]\nfrom = [\"dc7h3\"]\nto = \"dc1h1\"\nbytes = 10\nat_s = [1.0]\n", "no host 'dc7h3'"),
            ("[net]\nspeed = 1\n", "unknown key 'net.speed'"),
            ("[net]\ndelayed_acks = 1\n", "'net.delayed_acks' must be a bool, not 1"),
        ];
        for (extra, want) in cases {
            let text = compose(base, extra);
            let e = plan_error(&text);
            assert!(e.contains(want), "{extra:?}: {e}");
        }
        assert!(plan_error("bottleneck = \"dc1sw:h1\"\n").contains("no traffic"));
        assert!(plan_error("bottleneck = \"dc2sw:h1\"\n[[long]]\nfrom = [\"dc1h2\"]\nto = \"dc1h1\"\n").contains("no flow crosses"));
        let multi = "bottleneck = \"dc2br:wan0\"\nipv6 = true\n[[long]]\nfrom = [\"dc2h1\"]\nto = \"dc1h1\"\n[net]\nwan_paths = 4\n";
        let cases: &[(&str, &str)] = &[
            ("reroute = \"ecmp\"\n", "unknown variant `ecmp`"),
            ("[sweep]\nkey = \"reroute\"\nvalues = [\"single\", \"spray\"]\n", "\"spray\" is not one of"),
            ("[[events]]\nat_s = 2\nlink = \"wan4\"\naction = \"blackhole\"\n", "'wan4' is not a WAN path (wan0..wan3)"),
            ("[[events]]\nat_s = 2\nlink = \"wan1\"\naction = \"cut\"\n", "unknown variant `cut`"),
            ("[[events]]\nat_s = 2\nlink = \"wan1\"\naction = \"heal\"\n", "wan1 is not black-holed"),
            ("[[events]]\nat_s = 2\nlink = \"wan1\"\naction = \"blackhole\"\n[[events]]\nat_s = 3\nlink = \"wan1\"\naction = \"blackhole\"\n", "wan1 is already black-holed"),
            ("[[events]]\nat_s = 99\nlink = \"wan1\"\naction = \"blackhole\"\n", "at_s must lie within [0, duration_s)"),
            ("[[events]]\nat_s = 1\nlink = \"wan1\"\n", "missing field `action`"),
            ("[[cross]]\nlink = \"wan1\"\nstart_s = 5.0\nstop_s = 4.0\n", "0 <= start_s < stop_s <= duration_s"),
            ("[[cross]]\nlink = \"wan1\"\nrate = 5\n", "unknown field `rate`"),
            ("[[cross]]\nlink = \"wan1\"\ncc = \"nope\"\n", "unknown CC 'nope'"),
            ("[[cross]]\nlink = \"wan1\"\ncc = \"cubic\"\n[[cross]]\nlink = \"wan2\"\n", "one CC"),
            ("[[long]]\nfrom = [\"dc2h1\"]\nto = \"dc1h1\"\nflows = 0\n", "within 1..=64"),
            ("[[cross]]\nlink = \"wan1\"\nflows = 0\n", "[[cross]] #1: flows must be within 1..=64"),
            ("monitor = [\"dc2br:wan7\"]\n", "port 'dc2br:wan7': link 'wan7' is not a WAN path (wan0..wan3)"),
            ("monitor = [\"dc3sw:h1\"]\n", "port 'dc3sw:h1': not a port of the testbed's network"),
        ];
        for (extra, want) in cases {
            let text = compose(multi, extra);
            let e = plan_error(&text);
            assert!(e.contains(want), "{extra:?}: {e}");
        }
        // The executor's own limit (one flow generator per run), the planner's alone.
        let agent = compose(multi, "reroute = \"agent\"\n[[incast]]\nfrom = [\"dc2h2\", \"dc2h3\"]\nto = \"dc1h1\"\nbytes = 10000\nat_s = [1.0]\n");
        let e = TestbedScenario::parse(&agent, "t.toml").and_then(|s| s.plans(&testbed_dir())).map(|_| ()).unwrap_err();
        assert!(format!("{e:#}").contains("reroute = agent: sized flows come from 2 hosts (dc2h2, dc2h3)"), "{e:#}");
        let one = "bottleneck = \"dc2br:wan0\"\n[[long]]\nfrom = [\"dc2h1\"]\nto = \"dc1h1\"\n";
        assert!(plan_error(&format!("{one}[[events]]\nat_s = 2.0\nlink = \"wan1\"\naction = \"blackhole\"\n")).contains("(wan0..wan0)"));
        assert!(plan_error(&format!("{one}[net]\nwan_paths = 5\n")).contains("wan_paths = 5 is out of range [1, 4]"));
        let lossy = format!("{one}[net.wan]\nborder_profile = \"wan-uno-loss-setup1\"\n[[events]]\nat_s = 2.0\nlink = \"wan0\"\naction = \"blackhole\"\n");
        assert!(plan_error(&lossy).contains("has its own loss"), "{}", plan_error(&lossy));
    }

    #[test]
    fn shipped_cdfs_have_their_papers_means() {
        let ws = cdf("websearch_dctcp_hpcc.txt");
        assert!((cdf_mean(&ws) / 1e6 - 1.71).abs() < 0.05, "{}", cdf_mean(&ws)); // its README: 1.71 MB
        let wan = cdf("alibaba_interdc_wan_2021_uno.txt");
        assert!((cdf_mean(&wan) / 1e6 - 64.0).abs() < 3.0, "{}", cdf_mean(&wan));
        let mut rng = crate::rng::Rng(1);
        let xs: Vec<u64> = (0..20_000).map(|_| cdf_sample(&ws, rng.unit())).collect();
        let mean = xs.iter().sum::<u64>() as f64 / xs.len() as f64;
        assert!((mean / 1e6 - 1.71).abs() < 0.25, "{mean}");
        assert!(xs.iter().all(|&x| (1..=30_000_000).contains(&x)));
    }

    #[test]
    fn a_bad_cdf_names_its_fault() {
        let dir = std::env::temp_dir().join(format!("xdcc-cdf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("bad.txt");
        std::fs::write(&f, "100 0\n50 50\n200 100\n").unwrap();
        assert!(load_cdf(&f).unwrap_err().to_string().contains("non-decreasing"));
        std::fs::write(&f, "100 0\nabc 100\n").unwrap();
        assert!(load_cdf(&f).unwrap_err().to_string().contains(":2:"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_workload_offers_its_load() {
        // 40 % of eight 100 Mbit/s NICs: flows arrive at load x capacity /
        // mean size, from and to the topology's hosts, inside the window.
        let t: Topology = toml::from_str("[dc]\n[wan]\n").unwrap();
        let w: Workload = toml::from_str("load = 0.4\ninter_fraction = 0.5\nstart_s = 10.0").unwrap();
        let dur = 2000.0;
        let flows = workload_flows(&w, &t, dur, &testbed_dir()).unwrap();
        let mean = 0.5 * cdf_mean(&cdf(&w.intra_cdf)) + 0.5 * cdf_mean(&cdf(&w.inter_cdf));
        let want = 0.4 * 800e6 / 8.0 / mean * (dur - 10.0);
        assert!((flows.len() as f64 / want - 1.0).abs() < 0.05, "{} flows, {want:.0} expected", flows.len());
        assert!(flows.iter().all(|(at, src, dst, _)| (10.0..dur).contains(at) && src != dst && parse_host(dst, &t).is_ok()));
        let inter = flows.iter().filter(|(_, s, d, _)| s[..3] != d[..3]).count() as f64 / flows.len() as f64;
        assert!((inter - 0.5).abs() < 0.03, "{inter}");
        assert_eq!(flows, workload_flows(&w, &t, dur, &testbed_dir()).unwrap(), "the seed draws the same flows");
    }
}

#[cfg(test)]
mod plan_tests {
    use std::path::Path;

    use super::{RunPlan, TestbedScenario};

    fn plans(name: &str) -> Vec<RunPlan> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(format!("{name}.toml"));
        let (tb, dir) = TestbedScenario::from_file(&path).unwrap();
        tb.plans(&dir).unwrap()
    }

    #[test]
    fn a_reroute_sweep_changes_the_runs_path_choice_not_the_network() {
        let runs: Vec<_> = plans("h-wan-multipath").into_iter().filter(|r| r.entry == "dctcp").collect();
        let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["reroute=single", "reroute=rto", "reroute=agent"]);
        let reroutes: Vec<&str> = runs.iter().map(|r| r.settings.reroute.as_str()).collect();
        assert_eq!(reroutes, ["single", "rto", "agent"]);
        assert!(runs.iter().all(|r| r.network == runs[0].network));
        // Its cross traffic's CC is set up after the run's own.
        assert_eq!(runs[0].setup.iter().map(|s| s.cc.as_str()).collect::<Vec<_>>(), ["dctcp", "cubic"]);
    }

    #[test]
    fn a_variant_brings_its_own_profile_preset_and_tunables() {
        let runs = plans("a-rtt-fairness");
        let uno = runs.iter().find(|r| r.entry == "uno").unwrap();
        let gemini = runs.iter().find(|r| r.entry == "gemini").unwrap();
        // [profiles] uno = "dc-uno-phantom": its ports mark by phantom queue, K override dropped.
        assert!(uno.network.ports.iter().any(|p| p.phantom));
        assert!(!gemini.network.ports.iter().any(|p| p.phantom));
        assert_eq!(gemini.derived["gemini"]["k_bytes"], 300 * 1500, "the scenario's K of 300 packets");
        assert_eq!(uno.net["net_inter_rtt_us"], 4 * uno.net["net_intra_rtt_us"], "the first sweep point's ratio");
    }
}
