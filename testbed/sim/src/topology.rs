//! Routed networks: hosts and switches joined by links, each direction of a
//! link one queue, and ECMP routing over them.
//!
//! ```toml
//! [topology]
//! kind = "interdc"          # two k-ary fat trees joined by border links; or
//!                           # "fat_tree", or "two_dc" (the 2-DC testbed, below)
//! k = 4                     # fat-tree arity: k pods, k/2 ToRs and k/2 aggregation
//!                           # switches per pod, (k/2)^2 cores, k^3/4 hosts per DC
//! link_rate_gbps = 100
//! hop_latency_us = 1        # propagation of every intra-DC link
//! buffer_kb = 1000
//! marking = { kind = "red", min_frac = 0.1, max_frac = 0.8 }
//! border_links = 8          # parallel links between the two DCs' border switches
//! border_latency_us = 886.5 # one way, each
//! fail = [{ link = "border0", from_ms = 0 }]   # a black hole: drops all it gets
//! border_loss = { kind = "block", ... }        # see `LossModel`
//! ```
//!
//! ```toml
//! [topology]
//! kind = "two_dc"           # the testbed's network (testbed/runner/topology.py)
//! hosts_per_dc = 4          # a.0..a.3 and b.0..b.3, each linked to its DC switch
//! link_rate_gbps = 0.05     # the host links (tier: rate, latency, buffer, marking, phantom)
//! hop_latency_us = 1000
//! buffer_kb = 675
//! uplink_rate_gbps = 0.2    # DC switch <-> border (uplink_latency_us, _buffer_kb,
//!                           # _marking, _phantom: default the host links')
//! border_links = 4          # the WAN paths, border_* as for interdc
//! border_rate_gbps = 0.01
//! border_latency_us = 8000
//! fail = [{ link = "b.border->a.border#2", from_ms = 6000, until_ms = 14000 }]
//! ```
//!
//! Model:
//! - A DC is a 3-tier fat tree (Al-Fares et al.): host — ToR — aggregation —
//!   core; aggregation switch j of every pod links to cores j·k/2 ..
//!   (j+1)·k/2 − 1. With `interdc`, each DC has one border switch and every
//!   core has `core_border_links` parallel links to it (default k: no
//!   oversubscription inside the DC), and the two border switches are
//!   joined by `border_links` parallel links (the artifact: k = 8, 128
//!   hosts per DC, 8 links per core, 128 / `os_border` border links).
//!   Hosts are `a.<i>` and `b.<i>`, numbered ToR by ToR.
//! - `two_dc` is the testbed's network: per DC, hosts `a.0` .. `a.<n-1>`
//!   (and `b.*`) each linked to one DC switch `a.sw` (the host tier), the
//!   switch linked to the border router `a.border` (the uplink tier), and
//!   `border_links` parallel links between the two border routers (the
//!   border tier: the WAN paths). Its `border_loss` is on the border links
//!   only (the testbed's WAN ports).
//! - Every link is two queues (one per direction) with the rate, buffer and
//!   marking of its tier, and a propagation delay after the queue.
//! - Routing is shortest-path (hop count) with ECMP at every node: among the
//!   out-links that lead one hop closer to the destination, a hash of (flow,
//!   packet entropy, the node's salt) picks one. The flow's load balancer
//!   (`xdcc_multipath::lb`) chooses the entropy per packet.
//! - A failed link silently drops everything sent into it from `from_ms` on,
//!   until `until_ms` if given (then it forwards again); routing is updated
//!   neither way (the artifact's `-fail_one`).
//! - A flow group may also be pinned to links (`path = [link names]` with its
//!   `rtt_us`): it crosses those links' queues in order, whatever ECMP does
//!   (cross traffic that only one path carries); see `crate::scenario`.
//! - ACKs return over the reverse of the packet's path without queueing
//!   (their propagation only): a black hole does not eat ACKs.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::port::{check_marking, check_phantom, Marking, Phantom};
use crate::rng::Rng;

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TopologyKind {
    FatTree,
    Interdc,
    TwoDc,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    pub kind: TopologyKind,
    /// Fat-tree arity (even, 2..=16; `fat_tree` and `interdc` only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub k: u32,
    /// Hosts per DC (`two_dc` only, 1..=256).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts_per_dc: Option<u32>,
    pub link_rate_gbps: f64,
    /// Propagation delay of every intra-DC link, one way (`two_dc`: of the
    /// host links).
    pub hop_latency_us: f64,
    pub buffer_kb: f64,
    #[serde(default)]
    pub marking: Marking,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phantom: Option<Phantom>,
    /// `two_dc`: the DC switch's link to its border router, each defaulting
    /// to the host links' setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink_rate_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink_latency_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink_buffer_kb: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink_marking: Option<Marking>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink_phantom: Option<Phantom>,
    /// Parallel links between the two border switches (`interdc`, `two_dc`).
    #[serde(default = "default_border_links")]
    pub border_links: u32,
    /// Parallel links from each core switch to its DC's border switch
    /// (default: k).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_border_links: Option<u32>,
    /// Rate of each border link (default: `link_rate_gbps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub border_rate_gbps: Option<f64>,
    /// One-way propagation of each border link.
    #[serde(default)]
    pub border_latency_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub border_buffer_kb: Option<f64>,
    /// Marking on the border links (default: `marking`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub border_marking: Option<Marking>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub border_phantom: Option<Phantom>,
    /// Loss on every link of a border switch (the border links and the
    /// cores' links to it, both directions: the artifact's "BORDER" queues).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub border_loss: Option<LossModel>,
    /// Links that fail (black holes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail: Vec<Failure>,
    /// Links in the run's report and time series besides those always
    /// there (the border links, failed links and links flows are pinned to).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub report: Vec<String>,
}

fn default_border_links() -> u32 {
    8
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// A link that drops everything from `from_ms` on, up to `until_ms` if
/// given (then it forwards again: a black hole that heals). `link` is a
/// link name (`a.core0->a.border`, `b.border->a.border#2`) or `border<N>`:
/// the N-th border link, direction a→b. One link may fail several times
/// (one entry per failure).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    pub link: String,
    #[serde(default)]
    pub from_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<f64>,
}

/// Random loss on a link, drawn from the run's seed.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModel {
    /// Each packet independently with probability `p`.
    Bernoulli { p: f64 },
    /// Correlated loss per block of `block` consecutive packets (uno-sc25
    /// Table 1 as the artifact applies it on border queues): at the start
    /// of each block, `p[j]` is the probability that exactly j+1 of its
    /// packets are dropped (positions uniform, distinct).
    Block {
        #[serde(default = "default_block")]
        block: u32,
        p: Vec<f64>,
    },
    /// Gilbert–Elliott: a good and a bad state, each packet first moves the
    /// chain (good→bad with `p_gb`, bad→good with `p_bg`), then is lost
    /// with the state's loss probability.
    GilbertElliott { p_gb: f64, p_bg: f64, loss_good: f64, loss_bad: f64 },
}

fn default_block() -> u32 {
    10
}

impl LossModel {
    pub fn check(&self, what: &str) -> Result<()> {
        let frac = |n: &str, v: f64| -> Result<()> {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                bail!("{what}.{n} must be within [0, 1], got {v}");
            }
            Ok(())
        };
        match self {
            LossModel::Bernoulli { p } => frac("p", *p),
            LossModel::Block { block, p } => {
                if !(1..=64).contains(block) {
                    bail!("{what}.block must be within 1..=64");
                }
                if p.is_empty() || p.len() > *block as usize {
                    bail!("{what}.p: give 1..=block probabilities (of 1, 2, ... drops per block)");
                }
                for v in p {
                    frac("p[]", *v)?;
                }
                if p.iter().sum::<f64>() > 1.0 {
                    bail!("{what}.p must sum to at most 1");
                }
                Ok(())
            }
            LossModel::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } => {
                frac("p_gb", *p_gb)?;
                frac("p_bg", *p_bg)?;
                frac("loss_good", *loss_good)?;
                frac("loss_bad", *loss_bad)
            }
        }
    }
}

/// One direction of a link.
#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub rate_bps: f64,
    pub latency_ns: u64,
    pub buffer_bytes: u64,
    pub marking: Marking,
    pub phantom: Option<Phantom>,
    pub loss: Option<LossModel>,
    /// When the link is a black hole: [from, until) in ns (until None: to
    /// the end of the run).
    pub fail: Vec<(u64, Option<u64>)>,
    /// Shown in the run's report (the border links; all of a fat tree's
    /// core uplinks would be too many).
    pub report: bool,
}

/// A built network: nodes, and links by node.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub node_names: Vec<String>,
    pub links: Vec<LinkSpec>,
    /// Out-links of each node, in link order.
    pub out: Vec<Vec<u16>>,
    /// Host name → node.
    pub hosts: BTreeMap<String, u32>,
}

impl Graph {
    fn node(&mut self, name: String) -> u32 {
        self.node_names.push(name);
        self.out.push(Vec::new());
        (self.node_names.len() - 1) as u32
    }

    fn host(&mut self, name: String) -> u32 {
        let n = self.node(name.clone());
        self.hosts.insert(name, n);
        n
    }

    /// A link both ways.
    fn link(&mut self, a: u32, b: u32, tier: &Tier, label: &str) {
        for (from, to) in [(a, b), (b, a)] {
            let name = format!("{}->{}{label}", self.node_names[from as usize], self.node_names[to as usize]);
            self.out[from as usize].push(self.links.len() as u16);
            self.links.push(LinkSpec {
                name,
                from,
                to,
                rate_bps: tier.rate_bps,
                latency_ns: tier.latency_ns,
                buffer_bytes: tier.buffer_bytes,
                marking: tier.marking.clone(),
                phantom: tier.phantom.clone(),
                loss: tier.loss.clone(),
                fail: Vec::new(),
                report: tier.report,
            });
        }
    }

    /// Hop distance of every node to `dst` (u16::MAX: unreachable).
    pub fn distances_to(&self, dst: u32) -> Vec<u16> {
        let mut dist = vec![u16::MAX; self.node_names.len()];
        dist[dst as usize] = 0;
        let mut frontier = vec![dst];
        // Links are symmetric (every link exists both ways), so a BFS over
        // the out-links from `dst` gives the distances to it.
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for n in frontier {
                for &l in &self.out[n as usize] {
                    let m = self.links[l as usize].to;
                    if dist[m as usize] == u16::MAX {
                        dist[m as usize] = dist[n as usize] + 1;
                        next.push(m);
                    }
                }
            }
            frontier = next;
        }
        dist
    }
}

#[derive(Clone)]
struct Tier {
    rate_bps: f64,
    latency_ns: u64,
    buffer_bytes: u64,
    marking: Marking,
    phantom: Option<Phantom>,
    loss: Option<LossModel>,
    report: bool,
}

impl TopologySpec {
    pub fn validate(&self) -> Result<()> {
        let two_dc = self.kind == TopologyKind::TwoDc;
        if two_dc {
            if self.k != 0 {
                bail!("topology.k is a fat tree's arity: kind = \"two_dc\" has hosts_per_dc instead");
            }
            if self.core_border_links.is_some() {
                bail!("topology.core_border_links is a fat tree's: kind = \"two_dc\" has one uplink per DC");
            }
            match self.hosts_per_dc {
                Some(n) if (1..=256).contains(&n) => {}
                Some(n) => bail!("topology.hosts_per_dc must be within 1..=256, got {n}"),
                None => bail!("topology.hosts_per_dc: kind = \"two_dc\" needs it (1..=256)"),
            }
        } else {
            if self.k < 2 || self.k > 16 || self.k % 2 != 0 {
                bail!("topology.k must be even and within 2..=16, got {}", self.k);
            }
            let two_dc_only = [
                ("hosts_per_dc", self.hosts_per_dc.is_some()),
                ("uplink_rate_gbps", self.uplink_rate_gbps.is_some()),
                ("uplink_latency_us", self.uplink_latency_us.is_some()),
                ("uplink_buffer_kb", self.uplink_buffer_kb.is_some()),
                ("uplink_marking", self.uplink_marking.is_some()),
                ("uplink_phantom", self.uplink_phantom.is_some()),
            ];
            if let Some((name, _)) = two_dc_only.iter().find(|(_, set)| *set) {
                bail!("topology.{name} needs kind = \"two_dc\" (a fat tree's size is k)");
            }
        }
        let pos = |what: &str, v: f64| -> Result<()> {
            if !(v.is_finite() && v > 0.0) {
                bail!("topology.{what} must be a positive number, got {v}");
            }
            Ok(())
        };
        let non_negative = |what: &str, v: f64| -> Result<()> {
            if !(v.is_finite() && v >= 0.0) {
                bail!("topology.{what} must be >= 0");
            }
            Ok(())
        };
        pos("link_rate_gbps", self.link_rate_gbps)?;
        pos("buffer_kb", self.buffer_kb)?;
        non_negative("hop_latency_us", self.hop_latency_us)?;
        check_marking("topology", &self.marking)?;
        if let Some(p) = &self.phantom {
            check_phantom("topology", p)?;
        }
        if let Some(r) = self.uplink_rate_gbps {
            pos("uplink_rate_gbps", r)?;
        }
        if let Some(l) = self.uplink_latency_us {
            non_negative("uplink_latency_us", l)?;
        }
        if let Some(b) = self.uplink_buffer_kb {
            pos("uplink_buffer_kb", b)?;
        }
        if let Some(m) = &self.uplink_marking {
            check_marking("topology.uplink", m)?;
        }
        if let Some(p) = &self.uplink_phantom {
            check_phantom("topology.uplink", p)?;
        }
        if self.kind == TopologyKind::Interdc || two_dc {
            if !(1..=256).contains(&self.border_links) {
                bail!("topology.border_links must be within 1..=256");
            }
            if self.core_border_links.is_some_and(|n| !(1..=64).contains(&n)) {
                bail!("topology.core_border_links must be within 1..=64");
            }
            if let Some(r) = self.border_rate_gbps {
                pos("border_rate_gbps", r)?;
            }
            if let Some(b) = self.border_buffer_kb {
                pos("border_buffer_kb", b)?;
            }
            non_negative("border_latency_us", self.border_latency_us)?;
            if let Some(m) = &self.border_marking {
                check_marking("topology.border", m)?;
            }
            if let Some(p) = &self.border_phantom {
                check_phantom("topology.border", p)?;
            }
            if let Some(l) = &self.border_loss {
                l.check("topology.border_loss")?;
            }
        } else if self.border_loss.is_some() || self.border_marking.is_some() {
            bail!("topology: border_* settings need kind = \"interdc\" or \"two_dc\"");
        }
        let g = self.build_unchecked();
        for f in &self.fail {
            if !(f.from_ms.is_finite() && f.from_ms >= 0.0) {
                bail!("topology.fail: from_ms must be >= 0");
            }
            if let Some(u) = f.until_ms {
                if !(u.is_finite() && u > f.from_ms) {
                    bail!("topology.fail ({}): until_ms must be after from_ms ({} ms), got {u}", f.link, f.from_ms);
                }
            }
            if g.find_link(&f.link).is_none() {
                bail!("topology.fail: no link {:?} (a link name such as \"a.core0->a.border\", or border0..border{})", f.link, self.border_links.saturating_sub(1));
            }
        }
        if let Some(l) = self.report.iter().find(|l| g.find_link(l).is_none()) {
            bail!("topology.report: no link {l:?} (a link name such as \"a.sw->a.0\", or border0..border{})", self.border_links.saturating_sub(1));
        }
        Ok(())
    }

    /// Hosts per DC.
    pub fn hosts_per_dc(&self) -> u32 {
        match self.kind {
            TopologyKind::TwoDc => self.hosts_per_dc.unwrap_or(0),
            TopologyKind::FatTree | TopologyKind::Interdc => self.k * self.k * self.k / 4,
        }
    }

    /// The DCs' names: hosts are `<dc>.<i>`.
    fn dcs(&self) -> &'static [&'static str] {
        match self.kind {
            TopologyKind::FatTree => &["a"],
            TopologyKind::Interdc | TopologyKind::TwoDc => &["a", "b"],
        }
    }

    /// The network (call `validate` first).
    pub fn build(&self) -> Result<Graph> {
        self.validate()?;
        let mut g = self.build_unchecked();
        for f in &self.fail {
            let l = g.find_link(&f.link).expect("validated");
            g.links[l].fail.push(((f.from_ms * 1e6).round() as u64, f.until_ms.map(|u| (u * 1e6).round() as u64)));
            g.links[l].report = true;
        }
        for name in &self.report {
            let l = g.find_link(name).expect("validated");
            g.links[l].report = true;
        }
        Ok(g)
    }

    fn build_unchecked(&self) -> Graph {
        let mut g = Graph::default();
        let intra = Tier {
            rate_bps: self.link_rate_gbps * 1e9,
            latency_ns: (self.hop_latency_us * 1e3).round() as u64,
            buffer_bytes: (self.buffer_kb * 1e3).round() as u64,
            marking: self.marking.clone(),
            phantom: self.phantom.clone(),
            loss: None,
            report: false,
        };
        let mut borders = Vec::new();
        for dc in self.dcs() {
            match self.kind {
                TopologyKind::TwoDc => {
                    let sw = g.node(format!("{dc}.sw"));
                    for i in 0..self.hosts_per_dc() {
                        let h = g.host(format!("{dc}.{i}"));
                        g.link(h, sw, &intra, "");
                    }
                    let b = g.node(format!("{dc}.border"));
                    let uplink = Tier {
                        rate_bps: self.uplink_rate_gbps.map_or(intra.rate_bps, |r| r * 1e9),
                        latency_ns: self.uplink_latency_us.map_or(intra.latency_ns, |l| (l * 1e3).round() as u64),
                        buffer_bytes: self.uplink_buffer_kb.map_or(intra.buffer_bytes, |b| (b * 1e3).round() as u64),
                        marking: self.uplink_marking.clone().unwrap_or_else(|| self.marking.clone()),
                        phantom: self.uplink_phantom.clone().or_else(|| self.phantom.clone()),
                        loss: None,
                        report: false,
                    };
                    g.link(sw, b, &uplink, "");
                    borders.push(b);
                }
                TopologyKind::Interdc => {
                    let cores = self.fat_tree(&mut g, dc, &intra);
                    let b = g.node(format!("{dc}.border"));
                    let n = self.core_border_links.unwrap_or(self.k);
                    // (The border switch's links to its cores carry the border's
                    // loss model too, as the artifact's "BORDER" queues.)
                    let to_border = Tier { loss: self.border_loss.clone(), ..intra.clone() };
                    for c in cores {
                        for i in 0..n {
                            g.link(c, b, &to_border, &if n > 1 { format!("#{i}") } else { String::new() });
                        }
                    }
                    borders.push(b);
                }
                TopologyKind::FatTree => {
                    self.fat_tree(&mut g, dc, &intra);
                }
            }
        }
        if let [a, b] = borders[..] {
            let border = Tier {
                rate_bps: self.border_rate_gbps.unwrap_or(self.link_rate_gbps) * 1e9,
                latency_ns: (self.border_latency_us * 1e3).round() as u64,
                buffer_bytes: (self.border_buffer_kb.unwrap_or(self.buffer_kb) * 1e3).round() as u64,
                marking: self.border_marking.clone().unwrap_or_else(|| self.marking.clone()),
                phantom: self.border_phantom.clone().or_else(|| self.phantom.clone()),
                loss: self.border_loss.clone(),
                report: true,
            };
            for i in 0..self.border_links {
                g.link(a, b, &border, &format!("#{i}"));
            }
        }
        g
    }

    /// One DC's fat tree; returns its core switches.
    fn fat_tree(&self, g: &mut Graph, dc: &str, tier: &Tier) -> Vec<u32> {
        let k = self.k;
        let half = k / 2;
        let cores: Vec<u32> = (0..half * half).map(|c| g.node(format!("{dc}.core{c}"))).collect();
        let mut host = 0;
        for p in 0..k {
            let aggs: Vec<u32> = (0..half).map(|j| g.node(format!("{dc}.agg{p}.{j}"))).collect();
            for (j, &a) in aggs.iter().enumerate() {
                for c in 0..half {
                    g.link(a, cores[j * half as usize + c as usize], tier, "");
                }
            }
            for e in 0..half {
                let t = g.node(format!("{dc}.tor{p}.{e}"));
                for &a in &aggs {
                    g.link(t, a, tier, "");
                }
                for _ in 0..half {
                    let h = g.host(format!("{dc}.{host}"));
                    host += 1;
                    g.link(h, t, tier, "");
                }
            }
        }
        cores
    }
}

/// Checks a flow's `src` or `dst`: a DC of the topology or one of its hosts.
pub fn check_endpoint(t: &TopologySpec, e: &str) -> Result<()> {
    let dcs = t.dcs();
    let (dc, host) = e.split_once('.').map_or((e, None), |(d, h)| (d, Some(h)));
    if !dcs.contains(&dc) {
        bail!("{e:?}: no DC {dc:?} (this topology has {})", dcs.join(", "));
    }
    if let Some(h) = host {
        match h.parse::<u32>() {
            Ok(i) if i < t.hosts_per_dc() => {}
            _ => bail!("{e:?}: hosts of DC {dc} are {dc}.0 .. {dc}.{}", t.hosts_per_dc() - 1),
        }
    }
    Ok(())
}

impl Graph {
    /// A link by name, or `border<N>`: the N-th a→b border link.
    pub fn find_link(&self, name: &str) -> Option<usize> {
        if let Some(n) = name.strip_prefix("border").and_then(|n| n.parse::<u32>().ok()) {
            let want = format!("a.border->b.border#{n}");
            return self.links.iter().position(|l| l.name == want);
        }
        self.links.iter().position(|l| l.name == name)
    }
}

/// The (source, destination) hosts of a routed flow group's flows: a host
/// name gives that host to every flow; a DC gives the flows distinct hosts
/// of it in a random order drawn from `seed` (with both ends the same DC,
/// a permutation in which no flow sends to itself).
pub(crate) fn endpoints(g: &Graph, count: u32, src: Option<&str>, dst: Option<&str>, pairs: &[String], seed: u64) -> Result<Vec<(u32, u32)>> {
    let mut rng = Rng(seed ^ 0xE1D9_0175_0000_0001);
    let n = count as usize;
    let mut pick = |e: &str| -> Result<Vec<u32>> {
        if let Some(&h) = g.hosts.get(e) {
            return Ok(vec![h; n]);
        }
        let mut hosts: Vec<u32> = g.hosts.iter().filter(|(name, _)| name.split('.').next() == Some(e)).map(|(_, &h)| h).collect();
        hosts.sort_unstable();
        if n > hosts.len() {
            bail!("{n} flows need {n} distinct hosts of DC {e}, which has {}", hosts.len());
        }
        // Fisher–Yates.
        for i in (1..hosts.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            hosts.swap(i, j);
        }
        Ok(hosts)
    };
    if !pairs.is_empty() {
        return pairs
            .iter()
            .map(|p| {
                let (a, b) = p.split_once('>').unwrap_or_default();
                match (g.hosts.get(a), g.hosts.get(b)) {
                    (Some(&s), Some(&d)) if s != d => Ok((s, d)),
                    (Some(_), Some(_)) => bail!("pair {p:?} sends to itself"),
                    _ => bail!("pair {p:?}: no such host"),
                }
            })
            .collect();
    }
    let (src, dst) = (src.unwrap_or_default(), dst.unwrap_or_default());
    let mut s = pick(src)?;
    let mut d = pick(dst)?;
    s.truncate(n);
    d.truncate(n);
    if src == dst && !g.hosts.contains_key(src) {
        // Two random draws from one DC: a flow that drew itself swaps its
        // destination with the next flow's (both lists are distinct hosts,
        // so no swap makes a new self-pair).
        for i in 0..n {
            if s[i] == d[i] {
                d.swap(i, (i + 1) % n);
            }
        }
    }
    if let Some(i) = (0..n).find(|&i| s[i] == d[i]) {
        bail!("flow {i} would send from {} to itself", g.node_names[s[i] as usize]);
    }
    Ok(s.into_iter().zip(d).collect())
}

/// A link's loss model with its state.
#[derive(Clone, Debug)]
pub(crate) struct LossState {
    model: LossModel,
    /// Block model: position in the current block, and the positions to drop in it.
    pos: u32,
    drops: u64,
    /// Gilbert–Elliott: in the bad state.
    bad: bool,
}

impl LossState {
    pub(crate) fn new(model: LossModel) -> Self {
        Self { model, pos: 0, drops: 0, bad: false }
    }

    /// Whether the next packet is lost; `unit` draws uniformly from [0, 1).
    pub(crate) fn lose(&mut self, unit: &mut impl FnMut() -> f64) -> bool {
        match &self.model {
            LossModel::Bernoulli { p } => unit() < *p,
            LossModel::Block { block, p } => {
                if self.pos == 0 {
                    // How many of this block's packets go: j + 1 with p[j].
                    let u = unit();
                    let mut acc = 0.0;
                    let n = p.iter().position(|&pj| {
                        acc += pj;
                        u < acc
                    });
                    self.drops = 0;
                    if let Some(j) = n {
                        let mut left = j as u32 + 1;
                        while left > 0 {
                            let at = ((unit() * *block as f64) as u32).min(block - 1);
                            if self.drops & (1 << at) == 0 {
                                self.drops |= 1 << at;
                                left -= 1;
                            }
                        }
                    }
                }
                let lost = self.drops & (1 << self.pos) != 0;
                self.pos = (self.pos + 1) % block;
                lost
            }
            LossModel::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } => {
                let flip = if self.bad { *p_bg } else { *p_gb };
                if unit() < flip {
                    self.bad = !self.bad;
                }
                unit() < if self.bad { *loss_bad } else { *loss_good }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: TopologyKind, k: u32) -> TopologySpec {
        TopologySpec {
            kind,
            k,
            hosts_per_dc: None,
            link_rate_gbps: 100.0,
            hop_latency_us: 1.0,
            buffer_kb: 1000.0,
            marking: Marking::None,
            phantom: None,
            uplink_rate_gbps: None,
            uplink_latency_us: None,
            uplink_buffer_kb: None,
            uplink_marking: None,
            uplink_phantom: None,
            border_links: 8,
            core_border_links: None,
            border_rate_gbps: None,
            border_latency_us: 886.5,
            border_buffer_kb: None,
            border_marking: None,
            border_phantom: None,
            border_loss: None,
            fail: vec![],
            report: vec![],
        }
    }

    fn unit_from(seed: u64) -> impl FnMut() -> f64 {
        let mut r = Rng(seed);
        move || r.unit()
    }

    #[test]
    fn block_loss_drops_the_drawn_number_per_block() {
        // Always exactly two drops per block of 10.
        let mut l = LossState::new(LossModel::Block { block: 10, p: vec![0.0, 1.0] });
        let mut u = unit_from(7);
        for _ in 0..100 {
            let lost = (0..10).filter(|_| l.lose(&mut u)).count();
            assert_eq!(lost, 2);
        }
        // Table 1's rates: 3.0e-4 + 2 * 7.5e-5 + 3 * 1.6e-5 = 4.98e-4 drops per block of 10.
        let mut l = LossState::new(LossModel::Block { block: 10, p: vec![3.0e-4, 7.5e-5, 1.6e-5] });
        let n = 2_000_000;
        let lost = (0..n).filter(|_| l.lose(&mut u)).count() as f64 / n as f64;
        assert!((lost - 4.98e-5).abs() < 1.5e-5, "per-packet loss {lost}");
    }

    #[test]
    fn gilbert_elliott_loses_in_bursts() {
        let mut l = LossState::new(LossModel::GilbertElliott { p_gb: 0.01, p_bg: 0.2, loss_good: 0.0, loss_bad: 1.0 });
        let mut u = unit_from(3);
        let v: Vec<bool> = (0..200_000).map(|_| l.lose(&mut u)).collect();
        let rate = v.iter().filter(|&&x| x).count() as f64 / v.len() as f64;
        // Stationary bad share p_gb / (p_gb + p_bg) = 4.8 %; mean burst 1 / p_bg = 5.
        assert!((rate - 0.0476).abs() < 0.01, "loss rate {rate}");
        let bursts = v.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
        let mean_burst = v.iter().filter(|&&x| x).count() as f64 / bursts;
        assert!((mean_burst - 5.0).abs() < 1.0, "mean burst {mean_burst}");
    }

    #[test]
    fn fat_tree_sizes_and_distances() {
        let g = spec(TopologyKind::FatTree, 4).build().unwrap();
        // k = 4: 16 hosts, 8 ToRs, 8 aggregation, 4 core switches.
        assert_eq!(g.hosts.len(), 16);
        assert_eq!(g.node_names.len(), 16 + 8 + 8 + 4);
        // 16 host links + 16 ToR-agg + 16 agg-core, both ways.
        assert_eq!(g.links.len(), 2 * 48);
        let d = g.distances_to(g.hosts["a.0"]);
        assert_eq!(d[g.hosts["a.1"] as usize], 2, "same ToR");
        assert_eq!(d[g.hosts["a.2"] as usize], 4, "same pod");
        assert_eq!(d[g.hosts["a.15"] as usize], 6, "another pod");
    }

    #[test]
    fn interdc_has_border_links_and_failures_resolve() {
        let mut s = spec(TopologyKind::Interdc, 8);
        s.fail = vec![Failure { link: "border3".into(), from_ms: 1.0, until_ms: None }];
        let g = s.build().unwrap();
        assert_eq!(g.hosts.len(), 256);
        let borders: Vec<_> = g.links.iter().filter(|l| l.name.starts_with("a.border->b.border")).collect();
        assert_eq!(borders.len(), 8);
        assert_eq!(borders[3].fail, vec![(1_000_000, None)]);
        // 8 cores-to-border links per core, 16 cores, both ways, per DC.
        assert_eq!(g.links.iter().filter(|l| l.name.starts_with("a.core") && l.name.contains("->a.border")).count(), 128);
        let d = g.distances_to(g.hosts["b.0"]);
        // host, ToR, agg, core, border | border, core, agg, ToR, host.
        assert_eq!(d[g.hosts["a.0"] as usize], 9);
        s.fail[0].link = "border8".into();
        assert!(s.validate().is_err());
        s.fail.clear();
        s.k = 5;
        assert!(s.validate().is_err());
    }

    fn two_dc(hosts: u32, paths: u32) -> TopologySpec {
        TopologySpec {
            hosts_per_dc: Some(hosts),
            uplink_rate_gbps: Some(0.2),
            uplink_latency_us: Some(0.0),
            border_links: paths,
            border_rate_gbps: Some(0.01),
            border_latency_us: 8000.0,
            ..spec(TopologyKind::TwoDc, 0)
        }
    }

    #[test]
    fn two_dc_is_the_testbeds_network() {
        let mut s = two_dc(4, 4);
        s.fail = vec![
            Failure { link: "b.border->a.border#2".into(), from_ms: 6000.0, until_ms: Some(14000.0) },
            Failure { link: "b.border->a.border#2".into(), from_ms: 20000.0, until_ms: None },
        ];
        let g = s.build().unwrap();
        assert_eq!(s.hosts_per_dc(), 4);
        assert_eq!(g.hosts.keys().map(String::as_str).collect::<Vec<_>>(), ["a.0", "a.1", "a.2", "a.3", "b.0", "b.1", "b.2", "b.3"]);
        // Per DC 4 host links and an uplink, plus 4 border links; both ways.
        assert_eq!(g.links.len(), 2 * (2 * 5 + 4));
        let link = |name: &str| &g.links[g.find_link(name).unwrap_or_else(|| panic!("{name}"))];
        assert_eq!(link("a.0->a.sw").rate_bps, 100e9);
        assert_eq!(link("b.sw->b.border").rate_bps, 0.2e9);
        assert_eq!(link("b.sw->b.border").latency_ns, 0);
        assert_eq!(link("a.sw->a.3").latency_ns, 1_000);
        let wan = link("b.border->a.border#3");
        assert_eq!((wan.rate_bps, wan.latency_ns, wan.report), (0.01e9, 8_000_000, true));
        assert!(!link("a.sw->a.border").report);
        assert_eq!(link("b.border->a.border#2").fail, vec![(6_000_000_000, Some(14_000_000_000)), (20_000_000_000, None)]);
        assert!(link("a.border->b.border#2").fail.is_empty(), "one direction fails");
        // host, switch, border | border, switch, host.
        assert_eq!(g.distances_to(g.hosts["a.0"])[g.hosts["b.3"] as usize], 5);
        assert_eq!(g.distances_to(g.hosts["a.0"])[g.hosts["a.1"] as usize], 2);
        check_endpoint(&s, "b.3").unwrap();
        assert!(format!("{:#}", check_endpoint(&s, "b.4").unwrap_err()).contains("b.0 .. b.3"));
    }

    #[test]
    fn two_dc_refuses_what_it_does_not_have() {
        let err = |s: TopologySpec| format!("{:#}", s.validate().unwrap_err());
        let bad = |f: &dyn Fn(&mut TopologySpec)| {
            let mut s = two_dc(4, 4);
            f(&mut s);
            err(s)
        };
        assert!(bad(&|s| s.hosts_per_dc = None).contains("hosts_per_dc"));
        assert!(bad(&|s| s.hosts_per_dc = Some(0)).contains("hosts_per_dc must be within 1..=256"));
        assert!(bad(&|s| s.hosts_per_dc = Some(257)).contains("hosts_per_dc must be within 1..=256"));
        assert!(bad(&|s| s.k = 4).contains("topology.k"));
        assert!(bad(&|s| s.core_border_links = Some(2)).contains("core_border_links"));
        assert!(bad(&|s| s.uplink_rate_gbps = Some(0.0)).contains("uplink_rate_gbps"));
        assert!(bad(&|s| s.fail = vec![Failure { link: "b.border->a.border#4".into(), from_ms: 0.0, until_ms: None }]).contains("no link"));
        assert!(bad(&|s| s.fail = vec![Failure { link: "border1".into(), from_ms: 5.0, until_ms: Some(5.0) }]).contains("until_ms must be after from_ms"));
        assert!(bad(&|s| s.report = vec!["a.sw->a.9".into()]).contains("topology.report: no link"));
        let mut fat = spec(TopologyKind::FatTree, 4);
        fat.hosts_per_dc = Some(4);
        assert!(err(fat).contains("hosts_per_dc needs kind = \"two_dc\""));
        let mut fat = spec(TopologyKind::Interdc, 4);
        fat.uplink_marking = Some(Marking::None);
        assert!(err(fat).contains("uplink_marking needs kind = \"two_dc\""));
        // A fat tree without k (serde's default, 0) is told so.
        let fat = spec(TopologyKind::FatTree, 0);
        assert!(err(fat).contains("k must be even"));
    }
}
