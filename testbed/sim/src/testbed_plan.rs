//! The 2-DC testbed's plan (`xdcc-sim plan` on a `testbed/scenarios/` file):
//! for every run (a `ccs` entry at a sweep point) the network the executor
//! builds in namespaces and the tunables it writes, every value already
//! derived, so that the executor (`testbed/runner/topology.py`, `guest.py`)
//! only transports them:
//!
//! ```text
//!   dc1h1..dc1hN ── dc1sw ── dc1br ══ WAN (1 to 4 links) ══ dc2br ── dc2sw ── dc2h1..dc2hN
//! ```
//!
//! Hosts are namespaces with one NIC (eth0); a DC switch routes, with one
//! port per host (h1..hN) and an uplink; a border router has a DC-facing
//! port (dc) and one port per WAN path (wan0, wan1, ...). Every port that can
//! queue gets a switch profile with absolute values (`xdcc switch apply`):
//!
//! ```text
//!   host NIC eth0            netem: half the intra-DC base RTT, at the DC rate
//!   switch port hI, uplink   the DC switch profile, DC / uplink rate; dc.k_pkts > 0
//!                            replaces its marking by a step at K packets
//!   border port dc           dc-fifo at the uplink rate
//!   border port wanK         the WAN profile with delay (ratio - 1) / 2 x intra RTT;
//!                            netem cannot mark, so its step or RED marking runs as
//!                            an eBPF marker on a virtual queue that mirrors the port
//! ```
//!
//! so that the intra-DC RTT is `intra_rtt_us` and the inter-DC RTT `ratio`
//! times it. The topology emulates the paper's network slowed `time_scale`
//! times (rates / s, delays × s), which keeps every BDP, queue and
//! threshold in packets: a profile's per-Gbit/s buffer, K and phantom size
//! are evaluated at the paper's rate (rate × s).
//!
//! Markers run as `xdcc` eBPF processes: a `[phantom]` section marks on the
//! port itself; an `[amrt]` section (amrt-icpp20's anti-ECN marks) on the
//! ingress of the port's peer, where packets arrive at the port's dequeue
//! times (eq. 2). When the DC switch profile has `[amrt]` the host NICs are
//! AMRT's first hop too: a first-hop marker (CE = spare) on each switch
//! port's ingress from its host, at the DC rate (eq. 3).
//!
//! Addresses: host I of DC D is 10.D.I.2/24 and fd00:D:I::2/64 (switch side
//! .1); switch–border 10.D.250.0/24; WAN path K 10.200.K.0/24 (dc1br .1,
//! dc2br .2), the same in fd00::/8. Several WAN paths form an ECMP route
//! that hashes the IPv6 flow label.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};
use xdcc_switch::{Marking, Profile, Wan};

use crate::cc::CcKind;

/// The DC-facing border port's profile: a byte FIFO.
pub(crate) const BORDER_DC_PROFILE: &str = "dc-fifo";
/// Gemini's WAN-congestion delay threshold T (gemini-ton: 5 ms), before
/// the time scale.
const GEMINI_T_NS: u64 = 5_000_000;
const MTU: u64 = 1500;

/// The 2-DC topology after defaults and overrides (`testbed/topologies/*.toml`,
/// a scenario's `[net]`, a sweep point).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Topology {
    #[serde(default)]
    #[allow(dead_code)]
    pub(crate) description: String,
    #[serde(default = "default_hosts")]
    pub(crate) hosts_per_dc: u32,
    #[serde(default = "one_u32")]
    pub(crate) wan_paths: u32,
    #[serde(default)]
    pub(crate) gso: bool,
    /// Linux's delayed ACKs on the hosts (the testbed's default); the model's
    /// receivers ACK every segment, i.e. `delayed_acks = false`.
    #[serde(default = "yes")]
    pub(crate) delayed_acks: bool,
    #[serde(default = "default_time_scale")]
    pub(crate) time_scale: u64,
    pub(crate) dc: DcSpec,
    pub(crate) wan: WanSpec,
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
pub(crate) struct DcSpec {
    #[serde(default = "default_dc_rate")]
    pub(crate) rate_mbit: u64,
    #[serde(default = "default_uplink_rate")]
    pub(crate) uplink_rate_mbit: u64,
    #[serde(default = "default_intra_rtt")]
    pub(crate) intra_rtt_us: u64,
    #[serde(default = "default_switch_profile")]
    pub(crate) switch_profile: String,
    #[serde(default = "default_host_buffer")]
    pub(crate) host_buffer_pkts: u64,
    #[serde(default)]
    pub(crate) k_pkts: u64,
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
pub(crate) struct WanSpec {
    #[serde(default = "default_wan_rate")]
    pub(crate) rate_mbit: u64,
    #[serde(default = "default_ratio")]
    pub(crate) inter_intra_ratio: u64,
    #[serde(default = "default_border_profile")]
    pub(crate) border_profile: String,
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
    pub(crate) fn inter_rtt_us(&self) -> u64 {
        self.dc.intra_rtt_us * self.wan.inter_intra_ratio
    }

    /// Every value within what the namespaces can build, and both
    /// profiles shipped.
    pub(crate) fn validate(&self) -> Result<()> {
        let ranges: [(&str, u64, u64, u64); 10] = [
            ("hosts_per_dc", self.hosts_per_dc.into(), 1, 32),
            ("time_scale", self.time_scale, 1, 1000),
            ("wan_paths", self.wan_paths.into(), 1, 4),
            ("dc.rate_mbit", self.dc.rate_mbit, 1, 100_000),
            ("dc.uplink_rate_mbit", self.dc.uplink_rate_mbit, 1, 100_000),
            ("dc.intra_rtt_us", self.dc.intra_rtt_us, 20, 1_000_000),
            ("dc.host_buffer_pkts", self.dc.host_buffer_pkts, 10, 100_000),
            ("dc.k_pkts", self.dc.k_pkts, 0, 100_000),
            ("wan.rate_mbit", self.wan.rate_mbit, 1, 100_000),
            ("wan.inter_intra_ratio", self.wan.inter_intra_ratio, 1, 1000),
        ];
        for (name, v, lo, hi) in ranges {
            if !(lo..=hi).contains(&v) {
                bail!("{name} = {v} is out of range [{lo}, {hi}]");
            }
        }
        for (key, name) in [("dc.switch_profile", &self.dc.switch_profile), ("wan.border_profile", &self.wan.border_profile)] {
            Profile::load(name).map_err(|e| anyhow!("{key}: {e}"))?;
        }
        Ok(())
    }
}

/// A testbed scenario's plan (`xdcc-sim plan`): what the report says the
/// scenario is, and every run an executor carries out, in order.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioPlan {
    pub scenario: ScenarioInfo,
    pub runs: Vec<RunPlan>,
}

/// The scenario as its report names it.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioInfo {
    /// The file's stem.
    pub name: String,
    pub description: String,
    /// The paper's claim the scenario checks (empty: none).
    pub paper: String,
    /// The entries run at each point (after `--cc`), in order.
    pub ccs: Vec<String>,
    /// The sweep's labels in order (`[""]` without a sweep).
    pub points: Vec<String>,
}

/// One run of a testbed scenario on a kernel.
#[derive(Clone, Debug, Serialize)]
pub struct RunPlan {
    /// The `ccs` entry (a CC or a variant's name), its CC and the sweep
    /// label (`k_pkts=20`, empty without a sweep).
    pub entry: String,
    pub cc: String,
    pub label: String,
    /// Whether `xdcc-sim run` predicts this run (an xdcc CC; a kernel CC
    /// such as cubic has no model).
    pub modelled: bool,
    #[serde(flatten)]
    pub settings: RunSettings,
    pub network: NetworkPlan,
    pub traffic: Traffic,
    /// Every CC the run sets up, its own first, then its cross traffic's;
    /// each xdcc CC is told, in this order, `net`, its `derived` tunables,
    /// its preset, then its own tunables.
    pub setup: Vec<CcSetup>,
    /// The network every xdcc CC of the run is told (`net_*` tunables).
    pub net: BTreeMap<String, u64>,
    /// Per xdcc CC of the run, what it cannot derive from `net` (Gemini's K
    /// and T: [`time_scaled_tunables`]).
    pub derived: BTreeMap<String, BTreeMap<String, u64>>,
}

/// What the scenario sets for the run as a whole.
#[derive(Clone, Debug, Serialize)]
pub struct RunSettings {
    pub duration_s: u64,
    pub sample_ms: u64,
    pub ipv6: bool,
    /// The ports sampled: the bottleneck ("ns:dev") and the monitored ones.
    pub bottleneck: String,
    pub monitor: Vec<String>,
    /// How senders choose a WAN path (`single`, `rto`, `agent`).
    pub reroute: String,
}

/// A CC the run loads: its preset and the scenario's tunables for it (a
/// variant's over its CC's).
#[derive(Clone, Debug, Serialize)]
pub struct CcSetup {
    pub cc: String,
    /// The kernel module an xdcc CC comes in (`tcp_<cc>`); none for a
    /// kernel CC (cubic), which has no tunables either.
    pub module: Option<String>,
    pub preset: Option<String>,
    pub tunables: BTreeMap<String, u64>,
}

impl CcSetup {
    pub fn new(cc: &str, preset: Option<String>, tunables: BTreeMap<String, u64>) -> Self {
        let module = CcKind::parse(cc).is_ok().then(|| format!("tcp_{cc}"));
        CcSetup { cc: cc.into(), module, preset, tunables }
    }
}

/// What the run sends: the model's flows too (`testbed.rs`), so that the
/// model and the kernel run the same sized flows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Traffic {
    /// Long flows, one entry per (group, sender): `connections` parallel
    /// connections from `start_s` to `stop_s`.
    pub long: Vec<LongFlow>,
    /// Cross traffic from dc2br to dc1br's address on WAN path `path`,
    /// which only that path reaches.
    pub cross: Vec<CrossFlow>,
    /// WAN paths black-holed and healed, in time order.
    pub events: Vec<PathEvent>,
    /// Sized flows (incasts, a workload's Poisson arrivals), in the order
    /// generated; the executor runs them in time order.
    pub sized: Vec<SizedFlow>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LongFlow {
    pub src: String,
    pub dst: String,
    pub connections: u32,
    pub start_s: f64,
    pub stop_s: f64,
    /// `intra` or `inter`-DC.
    pub class: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CrossFlow {
    pub path: u32,
    pub streams: u32,
    pub cc: String,
    pub start_s: f64,
    pub stop_s: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathEvent {
    pub at_s: f64,
    /// `blackhole` or `heal`.
    pub action: String,
    pub path: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizedFlow {
    pub at_s: f64,
    pub src: String,
    pub dst: String,
    pub bytes: u64,
    /// `incast` or `workload`.
    pub kind: String,
    /// `intra` or `inter`-DC.
    pub class: String,
}

/// Everything the executor builds, in the order it builds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NetworkPlan {
    pub hosts: Vec<String>,
    /// The DC switches and border routers (IP forwarding on, ECMP hashing
    /// the IPv6 flow label).
    pub routers: Vec<String>,
    pub wan_paths: u32,
    /// Every host's ACK policy: `false` is the route's `quickack 1` (an ACK
    /// per segment, as the model's receivers).
    pub delayed_acks: bool,
    /// TSO, GSO and GRO on every device; off, queues count real packets, as
    /// on a switch.
    pub offloads: bool,
    pub intra_rtt_us: u64,
    pub inter_rtt_us: u64,
    pub dc_rate_mbit: u64,
    pub wan_rate_mbit: u64,
    /// `ip -batch` lines run in the root namespace (the veth pairs), then
    /// per namespace (addresses, links up, routes).
    pub veths: Vec<String>,
    pub ip: BTreeMap<String, Vec<String>>,
    /// Every host's address (`dc2h3`) and every border router's on each WAN
    /// path (`dc1br:wan0`, which only that path reaches), as `ip` sets them.
    pub addresses: BTreeMap<String, Address>,
    /// Every host's eth0: netem delay and rate, its limit in packets.
    pub host_nic: HostNic,
    pub ports: Vec<PortPlan>,
    pub markers: Vec<MarkerPlan>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Address {
    pub ipv4: String,
    pub ipv6: String,
}

impl Address {
    /// Host I of DC D: 10.D.I.2, fd00:D:I::2 (its switch port is .1).
    fn host(d: u32, i: u32) -> Self {
        Address { ipv4: format!("10.{d}.{i}.2"), ipv6: format!("fd00:{d}:{i}::2") }
    }

    /// DC D's border router on WAN path K: 10.200.K.D, fd00:200:K::D.
    fn wan(k: u32, d: u32) -> Self {
        Address { ipv4: format!("10.200.{k}.{d}"), ipv6: format!("fd00:200:{k}::{d}") }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostNic {
    pub delay_us: u64,
    pub rate_mbit: u64,
    pub limit_pkts: u64,
}

/// A queueing port and the profile it gets, with absolute values.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PortPlan {
    pub ns: String,
    pub dev: String,
    /// The shipped profile it derives from.
    pub profile: String,
    pub rate_mbit: u64,
    pub delay_us: Option<u64>,
    /// The file the executor writes the profile to (in the run's directory)
    /// and its text.
    pub file: String,
    pub text: String,
    pub phantom: bool,
    pub amrt: bool,
    /// A WAN port's marking as a virtual queue (`xdcc mark-phantom`).
    pub wan_marker: Option<WanMarker>,
}

/// A WAN port's step or RED marking as an eBPF marker: netem (its delay
/// line) cannot mark, so the marking leaves the profile (`xdcc switch
/// apply` refuses marking beside `[wan]`) and runs on a virtual queue
/// draining at the line rate that marks as the port would, as the host
/// backend's plans mark ([`crate::plan`]): a step at K is a queue of 10 K
/// marking from 10 to 11 % of it, RED its buffer marking from min to max.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WanMarker {
    pub rate_mbit: u64,
    pub drain_pct: u64,
    pub size_bytes: u64,
    pub kmin_pct: u64,
    pub kmax_pct: u64,
}

/// A marker process: `xdcc ARGS` in `ns` on `dev` (with `--profile` the
/// run directory's copy of that port's profile file when `profile` is set),
/// attached once it prints `ready`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MarkerPlan {
    pub ns: String,
    pub dev: String,
    pub args: Vec<String>,
    pub profile: Option<String>,
    pub ready: String,
}

/// The run's plan: its network from the topology, its traffic, and the
/// tunables of each xdcc CC it runs (its own and its cross traffic's).
pub(crate) fn plan(entry: &str, label: &str, settings: RunSettings, setup: Vec<CcSetup>, t: &Topology, traffic: Traffic) -> Result<RunPlan> {
    let network = network(t)?;
    let dc_profile = load(&t.dc.switch_profile)?;
    let cc = setup.first().map(|s| s.cc.clone()).ok_or_else(|| anyhow!("a run needs its CC"))?;
    let xdcc: Vec<&String> = setup.iter().map(|s| &s.cc).filter(|c| CcKind::parse(c).is_ok()).collect();
    let net = if xdcc.is_empty() {
        BTreeMap::new()
    } else {
        BTreeMap::from([
            ("net_link_rate_mbps".to_string(), t.dc.rate_mbit),
            ("net_intra_rtt_us".to_string(), t.dc.intra_rtt_us),
            ("net_inter_rtt_us".to_string(), t.inter_rtt_us()),
            ("net_mtu".to_string(), MTU),
        ])
    };
    let derived = xdcc.into_iter().map(|c| (c.clone(), time_scaled_tunables(c, t, &dc_profile))).filter(|(_, m)| !m.is_empty()).collect();
    let modelled = CcKind::parse(&cc).is_ok();
    Ok(RunPlan { entry: entry.into(), cc, label: label.into(), modelled, settings, network, traffic, setup, net, derived })
}

/// What a CC cannot derive from the network it is told: BDPs in bytes are
/// the paper's (rate / s × RTT × s), but a threshold in packets per Gbit/s
/// or in absolute time is not. Gemini's K is the DC switch's step
/// threshold and its WAN delay threshold T stretches with the time scale.
pub(crate) fn time_scaled_tunables(cc: &str, t: &Topology, dc_profile: &Profile) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    if cc != "gemini" {
        return out;
    }
    out.insert("t_ns".into(), GEMINI_T_NS * t.time_scale);
    if let Some(k) = step_k_pkts(t, dc_profile) {
        out.insert("k_bytes".into(), k * MTU);
    }
    out
}

/// The DC switch ports' step threshold K in packets, None for RED or no
/// marking: `dc.k_pkts`, or the profile's K per Gbit/s at the paper's rate.
fn step_k_pkts(t: &Topology, dc_profile: &Profile) -> Option<u64> {
    if t.dc.k_pkts > 0 {
        return Some(t.dc.k_pkts);
    }
    match dc_profile.marking {
        Marking::Step { k_pkts_per_gbps } => Some(round_pkts(k_pkts_per_gbps as f64 * (t.dc.rate_mbit * t.time_scale) as f64 / 1e3)),
        _ => None,
    }
}

/// A count of packets from a real number: nearest, halves to even (the
/// runner's rounding, kept so that its recorded runs stand), at least 1.
fn round_pkts(x: f64) -> u64 {
    (x.round_ties_even() as u64).max(1)
}

fn load(name: &str) -> Result<Profile> {
    Profile::load(name).map_err(|e| anyhow!("switch profile: {e}"))
}

fn host_name(dc: u32, i: u32) -> String {
    format!("dc{dc}h{i}")
}

/// The network of a topology.
fn network(t: &Topology) -> Result<NetworkPlan> {
    let n = t.hosts_per_dc;
    let hosts: Vec<String> = (1..=2).flat_map(|d| (1..=n).map(move |i| host_name(d, i))).collect();
    let routers: Vec<String> = ["dc1sw", "dc2sw", "dc1br", "dc2br"].map(String::from).into();
    let (veths, ip) = links(t, &hosts, &routers);
    let mut addresses: BTreeMap<String, Address> = (1..=2).flat_map(|d| (1..=n).map(move |i| (host_name(d, i), Address::host(d, i)))).collect();
    for k in 0..t.wan_paths {
        for d in 1..=2 {
            addresses.insert(format!("dc{d}br:wan{k}"), Address::wan(k, d));
        }
    }
    let ports = ports(t)?;
    let markers = markers(t, &ports)?;
    Ok(NetworkPlan {
        hosts,
        routers,
        wan_paths: t.wan_paths,
        delayed_acks: t.delayed_acks,
        offloads: t.gso,
        intra_rtt_us: t.dc.intra_rtt_us,
        inter_rtt_us: t.inter_rtt_us(),
        dc_rate_mbit: t.dc.rate_mbit,
        wan_rate_mbit: t.wan.rate_mbit,
        veths,
        ip,
        addresses,
        host_nic: HostNic { delay_us: t.dc.intra_rtt_us / 2, rate_mbit: t.dc.rate_mbit, limit_pkts: t.dc.host_buffer_pkts },
        ports,
        markers,
    })
}

/// The veth pairs (created from the root namespace) and every namespace's
/// addresses, links and routes, as `ip -batch` lines.
fn links(t: &Topology, hosts: &[String], routers: &[String]) -> (Vec<String>, BTreeMap<String, Vec<String>>) {
    let n = t.hosts_per_dc;
    // delayed_acks = false: the hosts ACK every segment (the route's
    // quickack), as the simulator's receivers (and htsim's) do.
    let quickack = if t.delayed_acks { "" } else { " quickack 1" };
    let mut ip: BTreeMap<String, Vec<String>> = hosts.iter().chain(routers).map(|ns| (ns.clone(), Vec::new())).collect();
    let mut veths = Vec::new();
    let mut veth = |ns_a: &str, a: &str, ns_b: &str, b: &str| veths.push(format!("link add {a} netns {ns_a} type veth peer name {b} netns {ns_b}"));
    let mut add = |ns: &str, lines: Vec<String>| ip.get_mut(ns).expect("every namespace has an entry").extend(lines);
    for d in 1..=2u32 {
        let (sw, br) = (format!("dc{d}sw"), format!("dc{d}br"));
        for i in 1..=n {
            let h = host_name(d, i);
            let a = Address::host(d, i);
            veth(&h, "eth0", &sw, &format!("h{i}"));
            add(
                &h,
                vec![
                    format!("addr add {}/24 dev eth0", a.ipv4),
                    format!("addr add {}/64 dev eth0 nodad", a.ipv6),
                    "link set lo up".into(),
                    "link set eth0 up".into(),
                    format!("route add default via 10.{d}.{i}.1{quickack}"),
                    format!("route add ::/0 via fd00:{d}:{i}::1{quickack}"),
                ],
            );
            add(&sw, vec![format!("addr add 10.{d}.{i}.1/24 dev h{i}"), format!("addr add fd00:{d}:{i}::1/64 dev h{i} nodad"), format!("link set h{i} up")]);
        }
        veth(&sw, "uplink", &br, "dc");
        add(
            &sw,
            vec![
                format!("addr add 10.{d}.250.1/24 dev uplink"),
                format!("addr add fd00:{d}:250::1/64 dev uplink nodad"),
                "link set uplink up".into(),
                "link set lo up".into(),
                format!("route add default via 10.{d}.250.2"),
                format!("route add ::/0 via fd00:{d}:250::2"),
            ],
        );
        add(
            &br,
            vec![
                format!("addr add 10.{d}.250.2/24 dev dc"),
                format!("addr add fd00:{d}:250::2/64 dev dc nodad"),
                "link set dc up".into(),
                "link set lo up".into(),
                format!("route add 10.{d}.0.0/16 via 10.{d}.250.1"),
                format!("route add fd00:{d}::/32 via fd00:{d}:250::1"),
            ],
        );
    }
    for k in 0..t.wan_paths {
        veth("dc1br", &format!("wan{k}"), "dc2br", &format!("wan{k}"));
        for d in 1..=2u32 {
            let a = Address::wan(k, d);
            add(&format!("dc{d}br"), vec![format!("addr add {}/24 dev wan{k}", a.ipv4), format!("addr add {}/64 dev wan{k} nodad", a.ipv6), format!("link set wan{k} up")]);
        }
    }
    for (d, other) in [(1u32, 2u32), (2, 1)] {
        let hops4: Vec<String> = (0..t.wan_paths).map(|k| Address::wan(k, other).ipv4).collect();
        let hops6: Vec<String> = (0..t.wan_paths).map(|k| Address::wan(k, other).ipv6).collect();
        let via = |hops: &[String]| {
            if hops.len() == 1 {
                format!("via {}", hops[0])
            } else {
                hops.iter().map(|h| format!("nexthop via {h}")).collect::<Vec<_>>().join(" ")
            }
        };
        add(&format!("dc{d}br"), vec![format!("route add 10.{other}.0.0/16 {}", via(&hops4)), format!("route add fd00:{other}::/32 {}", via(&hops6))]);
    }
    (veths, ip)
}

/// Every queueing port with its derived profile.
fn ports(t: &Topology) -> Result<Vec<PortPlan>> {
    let wan_delay = t.inter_rtt_us().saturating_sub(t.dc.intra_rtt_us) / 2;
    let sw = &t.dc.switch_profile;
    let mut out = Vec::new();
    for d in 1..=2u32 {
        let (swn, brn) = (format!("dc{d}sw"), format!("dc{d}br"));
        for i in 1..=t.hosts_per_dc {
            out.push(port(t, &swn, &format!("h{i}"), sw, t.dc.rate_mbit, None)?);
        }
        out.push(port(t, &swn, "uplink", sw, t.dc.uplink_rate_mbit, None)?);
        out.push(port(t, &brn, "dc", BORDER_DC_PROFILE, t.dc.uplink_rate_mbit, None)?);
        for k in 0..t.wan_paths {
            out.push(port(t, &brn, &format!("wan{k}"), &t.wan.border_profile, t.wan.rate_mbit, Some(wan_delay))?);
        }
    }
    Ok(out)
}

/// A shipped profile at a port's rate with its per-Gbit/s values (buffer,
/// K, phantom size) evaluated at the paper's rate (`rate × time_scale`) as
/// absolute ones; on every port with the DC switch profile, `dc.k_pkts > 0`
/// replaces the marking by a step at K packets. The model's queue of the
/// port is this profile too (`testbed.rs`).
pub(crate) fn derived_profile(t: &Topology, name: &str, rate_mbit: u64) -> Result<Profile> {
    let mut p = load(name)?;
    let k_pkts = if name == t.dc.switch_profile { t.dc.k_pkts } else { 0 };
    let paper_gbps = (rate_mbit * t.time_scale) as f64 / 1e3;
    let mtu = p.port.mtu;
    p.port.rate_mbit = rate_mbit;
    if let Some(per) = p.port.buffer_pkts_per_gbps.take() {
        p.port.buffer_bytes = Some(round_pkts(per as f64 * paper_gbps) * mtu);
    }
    if k_pkts > 0 {
        // An absolute step threshold (gemini-ton sweeps K in packets), as
        // K per Gbit/s at the port's own rate, which tc applies.
        p.marking = Marking::Step { k_pkts_per_gbps: round_pkts(k_pkts as f64 * 1e3 / rate_mbit as f64) };
    } else if let Marking::Step { k_pkts_per_gbps } = &mut p.marking {
        *k_pkts_per_gbps *= t.time_scale;
    }
    if let Some(ph) = &mut p.phantom {
        if let Some(per) = ph.size_pkts_per_gbps.take() {
            ph.size_bytes = Some(round_pkts(per as f64 * paper_gbps) * mtu);
        }
    }
    Ok(p)
}

/// One port: its derived profile, and on a WAN port the WAN delay and the
/// marking moved to a marker ([`WanMarker`]).
fn port(t: &Topology, ns: &str, dev: &str, name: &str, rate_mbit: u64, delay_us: Option<u64>) -> Result<PortPlan> {
    let mut p = derived_profile(t, name, rate_mbit)?;
    let mtu = p.port.mtu;
    let mut wan_marker = None;
    if let Some(delay_us) = delay_us {
        p.wan.get_or_insert(Wan { delay_us, jitter_us: 0, loss_ppm: 0, gilbert_elliott: None }).delay_us = delay_us;
        wan_marker = match std::mem::replace(&mut p.marking, Marking::None {}) {
            Marking::None {} => None,
            Marking::Step { k_pkts_per_gbps } => {
                let k = (k_pkts_per_gbps * rate_mbit / 1000).max(1) * mtu;
                Some(WanMarker { rate_mbit, drain_pct: 100, size_bytes: 10 * k, kmin_pct: 10, kmax_pct: 11 })
            }
            Marking::Red { min_pct, max_pct, .. } => {
                Some(WanMarker { rate_mbit, drain_pct: 100, size_bytes: p.buffer_bytes(), kmin_pct: min_pct, kmax_pct: max_pct })
            }
        };
    }
    let text = toml::to_string(&p)?;
    // What the executor applies parses back to this profile.
    Profile::parse(&text).map_err(|e| anyhow!("{ns}:{dev}: the derived profile of {name} is invalid: {e}"))?;
    Ok(PortPlan {
        ns: ns.into(),
        dev: dev.into(),
        profile: name.into(),
        rate_mbit,
        delay_us,
        file: format!("profile-{ns}-{dev}.toml"),
        text,
        phantom: p.phantom.is_some(),
        amrt: p.amrt.is_some(),
        wan_marker,
    })
}

/// The (namespace, interface) at the other end of a port's veth.
fn peer(ns: &str, dev: &str) -> (String, String) {
    let d: u32 = ns[2..3].parse().unwrap_or(1);
    if ns.ends_with("sw") {
        match dev.strip_prefix('h') {
            Some(i) => (format!("dc{d}h{i}"), "eth0".into()),
            None => (format!("dc{d}br"), "dc".into()),
        }
    } else if dev == "dc" {
        (format!("dc{d}sw"), "uplink".into())
    } else {
        (format!("dc{}br", 3 - d), dev.into())
    }
}

/// The marker processes the ports' profiles ask for.
fn markers(t: &Topology, ports: &[PortPlan]) -> Result<Vec<MarkerPlan>> {
    const PHANTOM_ON: &str = "phantom queue on";
    const AMRT_ON: &str = "AMRT anti-ECN marking on";
    let mut out = Vec::new();
    for p in ports {
        if let Some(m) = &p.wan_marker {
            let mut args = vec!["mark-phantom".to_string(), "--iface".into(), p.dev.clone()];
            for (k, v) in [("rate-mbit", m.rate_mbit), ("drain-pct", m.drain_pct), ("size-bytes", m.size_bytes), ("kmin-pct", m.kmin_pct), ("kmax-pct", m.kmax_pct)] {
                args.extend([format!("--{k}"), v.to_string()]);
            }
            out.push(MarkerPlan { ns: p.ns.clone(), dev: p.dev.clone(), args, profile: None, ready: PHANTOM_ON.into() });
        }
    }
    for p in ports {
        if p.phantom {
            // Uno's phantom queue counts the port's own departures.
            let args = vec!["mark-phantom".into(), "--iface".into(), p.dev.clone()];
            out.push(MarkerPlan { ns: p.ns.clone(), dev: p.dev.clone(), args, profile: Some(p.file.clone()), ready: PHANTOM_ON.into() });
        }
        if p.amrt {
            let (pns, pdev) = peer(&p.ns, &p.dev);
            let args = vec!["mark-amrt".into(), "--iface".into(), pdev.clone()];
            out.push(MarkerPlan { ns: pns, dev: pdev, args, profile: Some(p.file.clone()), ready: AMRT_ON.into() });
        }
    }
    if load(&t.dc.switch_profile)?.amrt.is_some() {
        for d in 1..=2u32 {
            for i in 1..=t.hosts_per_dc {
                let args = vec!["mark-amrt".into(), "--iface".into(), format!("h{i}"), "--rate-mbit".into(), t.dc.rate_mbit.to_string()];
                out.push(MarkerPlan { ns: format!("dc{d}sw"), dev: format!("h{i}"), args, profile: None, ready: AMRT_ON.into() });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A topology from its TOML keys, the rest defaults.
    fn topo(keys: &str) -> Topology {
        let mut t: toml::Table = toml::from_str(keys).unwrap();
        for sec in ["dc", "wan"] {
            t.entry(sec).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        }
        toml::Value::Table(t).try_into().unwrap()
    }

    fn net(keys: &str) -> NetworkPlan {
        network(&topo(keys)).unwrap()
    }

    fn port_at<'a>(n: &'a NetworkPlan, ns: &str, dev: &str) -> &'a PortPlan {
        n.ports.iter().find(|p| p.ns == ns && p.dev == dev).unwrap()
    }

    fn markers_at<'a>(n: &'a NetworkPlan, ns: &str, dev: &str) -> Vec<&'a MarkerPlan> {
        n.markers.iter().filter(|m| m.ns == ns && m.dev == dev).collect()
    }

    #[test]
    fn ports_and_routes_give_the_topologys_rtts() {
        let n = net("wan_paths = 2");
        let wan: Vec<&PortPlan> = n.ports.iter().filter(|p| p.dev.starts_with("wan")).collect();
        assert_eq!(wan.len(), 4, "2 paths x 2 borders");
        // inter RTT = 2 x host delay + 2 x WAN delay = ratio x intra RTT
        assert_eq!(2 * n.host_nic.delay_us + 2 * wan[0].delay_us.unwrap(), n.inter_rtt_us);
        assert_eq!(n.inter_rtt_us, 10 * n.intra_rtt_us);
        assert!(n.ip["dc1br"].contains(&"route add 10.2.0.0/16 nexthop via 10.200.0.2 nexthop via 10.200.1.2".to_string()));
        // Every port of the topology has a profile, DC switch ports first.
        assert_eq!(n.ports.len(), 2 * (4 + 1 + 1 + 2));
        assert_eq!((n.ports[0].ns.as_str(), n.ports[0].dev.as_str(), n.ports[0].profile.as_str()), ("dc1sw", "h1", "dc-gemini"));
        assert_eq!(port_at(&n, "dc2br", "dc").profile, BORDER_DC_PROFILE);
    }

    #[test]
    fn four_wan_paths_are_one_ecmp_route_with_an_address_per_path() {
        let n = net("wan_paths = 4");
        let hops: Vec<String> = (0..4).map(|k| format!("nexthop via fd00:200:{k}::1")).collect();
        assert!(n.ip["dc2br"].contains(&format!("route add fd00:1::/32 {}", hops.join(" "))));
        assert!(n.ip["dc1br"].contains(&"addr add fd00:200:3::1/64 dev wan3 nodad".to_string()));
        assert_eq!(n.ports.iter().filter(|p| p.dev.starts_with("wan")).count(), 8);
        assert_eq!(n.veths.iter().filter(|l| l.starts_with("link add wan")).count(), 4);
    }

    #[test]
    fn a_marking_wan_port_is_marked_by_a_virtual_queue() {
        // netem cannot mark: the WAN profile loses its marking and a
        // virtual queue at the line rate marks instead (a step at K: 10 K
        // marking from 10 to 11 %).
        let n = net("wan_paths = 2\ntime_scale = 20\n[wan]\nrate_mbit = 10\nborder_profile = \"dc-gemini\"");
        let w = port_at(&n, "dc2br", "wan1");
        // dc-gemini: K = 50 packets/Gbit/s at the paper's 0.2 Gbit/s = 10 packets
        assert_eq!(w.wan_marker, Some(WanMarker { rate_mbit: 10, drain_pct: 100, size_bytes: 150_000, kmin_pct: 10, kmax_pct: 11 }));
        let p = Profile::parse(&w.text).unwrap();
        assert_eq!(p.marking, Marking::None {});
        assert_eq!(p.wan.unwrap().delay_us, w.delay_us.unwrap());
        let m = markers_at(&n, "dc1br", "wan0");
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].args.join(" "), "mark-phantom --iface wan0 --rate-mbit 10 --drain-pct 100 --size-bytes 150000 --kmin-pct 10 --kmax-pct 11");
        assert!(markers_at(&n, "dc1sw", "h1").is_empty(), "DC ports mark in their qdisc");
        // The default WAN profile does not mark.
        assert!(net("").ports.iter().all(|p| p.wan_marker.is_none()));
    }

    #[test]
    fn delayed_acks_or_quickack_on_every_host_route() {
        assert!(!net("").ip["dc1h1"].iter().any(|l| l.contains("quickack")));
        let n = net("delayed_acks = false");
        let routes: Vec<&String> = n.ip["dc2h3"].iter().filter(|l| l.starts_with("route add")).collect();
        assert_eq!(routes.len(), 2);
        assert!(routes.iter().all(|l| l.ends_with(" quickack 1")), "{routes:?}");
        assert!(!n.ip["dc1sw"].iter().chain(&n.ip["dc1br"]).any(|l| l.contains("quickack")), "switches forward, they do not ACK");
    }

    #[test]
    fn gemini_is_told_the_switchs_k_and_a_time_scaled_t() {
        let tun = |keys: &str| {
            let t = topo(keys);
            time_scaled_tunables("gemini", &t, &load(&t.dc.switch_profile).unwrap())
        };
        // dc-gemini: 50 packets/Gbit/s at the paper's 1 Gbit/s
        let base = "time_scale = 20\n[dc]\nrate_mbit = 50\n";
        assert_eq!(tun(base), BTreeMap::from([("k_bytes".into(), 50 * MTU), ("t_ns".into(), 100_000_000)]));
        assert_eq!(tun(&format!("{base}k_pkts = 300"))["k_bytes"], 300 * MTU);
        assert!(!tun(&format!("{base}switch_profile = \"dc-uno\"")).contains_key("k_bytes"), "RED has no K");
        assert!(time_scaled_tunables("uno", &topo(base), &load("dc-gemini").unwrap()).is_empty());
    }

    #[test]
    fn profiles_get_absolute_values_at_the_papers_rate() {
        let n = net("time_scale = 20\n[dc]\nrate_mbit = 50\nuplink_rate_mbit = 50\n");
        let p = Profile::parse(&port_at(&n, "dc1sw", "h1").text).unwrap();
        // 450 packets/Gbit/s at the paper's 1 Gbit/s; K per Gbit/s at the
        // port's own 0.05 Gbit/s: 1000 x 0.05 = 50 packets.
        assert_eq!((p.port.buffer_bytes, p.port.buffer_pkts_per_gbps), (Some(675_000), None));
        assert_eq!(p.marking, Marking::Step { k_pkts_per_gbps: 1000 });
        let n = net("time_scale = 20\n[dc]\nrate_mbit = 50\nk_pkts = 320\n");
        assert_eq!(Profile::parse(&port_at(&n, "dc1sw", "h1").text).unwrap().marking, Marking::Step { k_pkts_per_gbps: 6400 });
        let n = net("time_scale = 20\n[wan]\nborder_profile = \"wan-uno-loss-setup1\"");
        let w = Profile::parse(&port_at(&n, "dc1br", "wan0").text).unwrap().wan.unwrap();
        assert_eq!(w.delay_us, port_at(&n, "dc1br", "wan0").delay_us.unwrap());
        assert!(w.gilbert_elliott.is_some());
        // Uno's phantom queue: as large as the buffer at the paper's rate.
        let n = net("time_scale = 20\n[dc]\nrate_mbit = 50\nswitch_profile = \"dc-uno-phantom\"");
        let h1 = port_at(&n, "dc1sw", "h1");
        let ph = Profile::parse(&h1.text).unwrap().phantom.unwrap();
        assert_eq!((ph.size_bytes, ph.size_pkts_per_gbps), (Some(675_000), None));
        assert!(h1.phantom);
        let m = markers_at(&n, "dc1sw", "h1");
        assert_eq!((m.len(), m[0].profile.as_deref()), (1, Some("profile-dc1sw-h1.toml")));
        assert!(!port_at(&net("[dc]\nswitch_profile = \"dc-uno\""), "dc1sw", "h1").phantom);
    }

    #[test]
    fn amrt_marks_on_the_ingress_after_every_amrt_port_and_host_nic() {
        // Every link direction whose sending queue is an AMRT port (or a
        // host NIC) has one marker on the receiving interface's ingress, at
        // that queue's rate; other ports have none.
        let n = net("hosts_per_dc = 2\n[dc]\nswitch_profile = \"dc-amrt\"");
        for m in &n.markers {
            assert_eq!(markers_at(&n, &m.ns, &m.dev).len(), 1, "two markers on {}:{}", m.ns, m.dev);
        }
        let rate_of = |m: &MarkerPlan| {
            let file = m.profile.as_deref().unwrap();
            Profile::parse(&n.ports.iter().find(|p| p.file == file).unwrap().text).unwrap().port.rate_mbit
        };
        for d in 1..=2 {
            for i in 1..=2 {
                // host NIC -> switch: the first hop (CE = spare), at the DC rate
                let first = markers_at(&n, &format!("dc{d}sw"), &format!("h{i}"));
                assert_eq!(first[0].args[first[0].args.len() - 2..], ["--rate-mbit".to_string(), "100".into()]);
                // switch port hI -> host: transit, with the port's profile
                assert_eq!(rate_of(markers_at(&n, &format!("dc{d}h{i}"), "eth0")[0]), 100);
            }
            assert_eq!(rate_of(markers_at(&n, &format!("dc{d}br"), "dc")[0]), 400, "from the uplink");
            assert!(markers_at(&n, &format!("dc{d}sw"), "uplink").is_empty(), "fed by the border's dc-fifo");
            assert!(markers_at(&n, &format!("dc{d}br"), "wan0").is_empty());
        }
        assert!(net("hosts_per_dc = 2").markers.is_empty());
    }
}

