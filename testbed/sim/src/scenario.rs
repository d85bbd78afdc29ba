//! Scenario files (TOML): the network, the bottleneck queues, the flows.
//!
//! ```toml
//! name = "rtt-fairness"
//! duration_ms = 3000
//! cc = ["uno", "gemini"]            # one run per algorithm
//!
//! [net]                              # what the algorithms' defaults derive from
//! link_rate_gbps = 1.0
//! intra_rtt_us = 200
//! inter_rtt_us = 1600
//! mtu = 1500
//!
//! [params.gemini]                    # optional overrides, by tunable name
//! k_bytes = 75000
//!
//! [[queues]]
//! name = "dc"
//! rate_gbps = 1.0
//! buffer_kb = 300
//! marking = { kind = "threshold", k_pkts = 50 }
//!
//! [[flows]]
//! name = "intra"
//! count = 4
//! rtt_us = 200
//! path = ["dc"]
//! ```

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::cc::CcKind;
pub use crate::port::{Marking, Phantom};
use crate::port::{check_marking, check_phantom};
use crate::topology::TopologySpec;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Simulated time.
    pub duration_ms: f64,
    /// Algorithms to run (each gets its own run of the whole scenario).
    pub cc: Vec<String>,
    pub net: NetSpec,
    /// Per-algorithm tunable overrides: `[params.uno] k_bytes = 25000`.
    #[serde(default)]
    pub params: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per-algorithm named preset (`xdcc_algo::presets`), applied before
    /// `[params]`: `[presets] gemini = "uno-artifact"`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub presets: BTreeMap<String, String>,
    /// Per-algorithm queue overrides (e.g. each paper's marking):
    /// `[queue_overrides.uno.dc] phantom = {...}`.
    #[serde(default)]
    pub queue_overrides: BTreeMap<String, BTreeMap<String, QueueOverride>>,
    /// Queues in series (flows name their `path` through them); or none,
    /// with a routed `[topology]` instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<QueueSpec>,
    /// A routed network (fat trees, border links, ECMP): see
    /// `crate::topology`. Its flows name `src` and `dst` hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologySpec>,
    pub flows: Vec<FlowSpec>,
    /// Time series sampling period.
    #[serde(default = "default_sample_us")]
    pub sample_interval_us: f64,
    /// Rates for Jain's index are averaged over this window.
    #[serde(default = "default_fairness_window_ms")]
    pub fairness_window_ms: f64,
    /// Jain's index that counts as converged.
    #[serde(default = "default_jain_threshold")]
    pub jain_threshold: f64,
    /// Utilization and queue statistics are measured from this time on.
    #[serde(default)]
    pub measure_from_ms: f64,
    /// ... up to this time (default: the end of the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure_to_ms: Option<f64>,
    /// Lower bound of the retransmission timeout.
    #[serde(default = "default_min_rto_us")]
    pub min_rto_us: f64,
    /// Seed of the deterministic random source (RED marking, random loss,
    /// timing jitter).
    #[serde(default)]
    pub seed: u64,
    /// Per-packet timing jitter at the sender, in µs: each packet reaches its
    /// first queue a uniformly drawn 0..`jitter_us` later (seeded; a flow's
    /// packets stay in order). Real hosts never send in lockstep: without
    /// it, flows that start together meet every queue in the same order and
    /// one of them deterministically wins the start-up. Default: one MTU
    /// time at `net.link_rate_gbps`; 0 turns it off (exact event-order
    /// ties, for tests that check an equation packet by packet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_us: Option<f64>,
    /// End-host delay, in µs: each ACK reaches its sender an extra delay
    /// later, drawn from an exponential distribution with this mean (seeded;
    /// a flow's ACKs stay in order, as behind one softirq backlog). What a
    /// loaded Linux host adds to a µs fabric RTT (bench/realspeed.sh
    /// measured 120–170 µs of smoothed RTT over a 6 µs base at 1 Gbit/s):
    /// most ACKs wait little, a few wait several means. Not modelled: that
    /// the real host's delay grows with its packet rate (small windows cost
    /// more CPU). Default 0 (the papers' NIC transports).
    #[serde(default)]
    pub host_delay_us: f64,
    /// The part of `host_delay_us` that every ACK waits, 0–1 (default 0:
    /// all of it exponential). A host that is busy all the time delays
    /// every packet alike (a lone flow at real speed: samples 21–34 µs,
    /// p10–p90, over a 6 µs base RTT); then each ACK waits
    /// `steady × mean` plus an exponential remainder with the rest of the
    /// mean, and the handshake's RTT (a flow's first RTT sample) holds the
    /// steady part too.
    #[serde(default)]
    pub host_delay_steady: f64,
    /// Pacing for algorithms that only set a window, as Linux does when a CC
    /// asks for pacing: `rate = gain × cwnd / srtt` (the stack's
    /// `tcp_update_pacing_rate` uses 1.2 in congestion avoidance). 0 = off.
    /// Gemini recommends sender pacing (§III-C); Uno's reference code paces.
    #[serde(default)]
    pub window_pacing_gain: f64,
    /// Whether the host backend's namespaces keep TSO, GSO and GRO on
    /// (default true, as servers run): false turns them off on every device,
    /// so the port carries MTU-sized packets as the simulator's does. The
    /// vm backend always turns them off (its RED marks per skb); real
    /// servers keep their NICs' settings.
    #[serde(default = "yes")]
    pub host_offloads: bool,
    /// TCP's receive window: what the receiver lets the sender have in
    /// flight, whatever the CC's window. None (the default): unlimited, as
    /// in the papers' simulators. The testbed's model sets Linux's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_window: Option<ReceiveWindow>,
    /// How senders find lost packets (see [`LossRecovery`]).
    #[serde(default)]
    pub loss_recovery: LossRecovery,
    /// A fixed retransmission timeout instead of max(`min_rto_us`, 3 × the
    /// smoothed RTT) (the Uno artifact: base RTT + 5 intra-DC + 3 inter-DC
    /// queue delays, 2432 µs for its inter-DC flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_us: Option<f64>,
    /// With `rto_us`: the fixed timeout of routed flows whose two ends are
    /// in one DC (the artifact: base RTT + 5 queue delays, 414 µs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_intra_us: Option<f64>,
    /// Whether a retransmission timeout cuts the window (the artifact's
    /// `-noRto` runs: false; the packets are still resent).
    #[serde(default = "yes")]
    pub rto_window_cut: bool,
    /// How successive retransmission timeouts back off (see [`RtoBackoff`]).
    #[serde(default, skip_serializing_if = "RtoBackoff::is_default")]
    pub rto_backoff: RtoBackoff,
    /// End the run when every flow (all sized) has finished, rather than
    /// at `duration_ms` (then the limit): completion-time experiments.
    #[serde(default)]
    pub stop_when_done: bool,
}

fn yes() -> bool {
    true
}

/// How a sender decides a packet is lost.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LossRecovery {
    /// Linux's RACK (RFC 8985): a packet is lost once a packet sent after
    /// it has been acknowledged and a reordering window has passed; the
    /// window is 0 until the flow has seen reordering (a packet acknowledged
    /// after one declared lost before it was delivered), then a quarter of
    /// the minimum RTT, one quarter more per round trip with a spurious
    /// loss, up to the smoothed RTT (Linux's `reo_wnd_steps`). Plus the
    /// flow's retransmission timeout (no progress for one RTO: everything
    /// outstanding is resent). On in-order paths this is exactly "a gap at
    /// the first later ACK is a loss".
    #[default]
    Rack,
    /// The Uno artifact's transport: every packet has its own timer and is
    /// resent one RTO after it was sent if unacknowledged; nothing else
    /// (besides UnoRC's NACKs) declares a loss.
    Timeout,
}

/// How a flow's retransmission timeout backs off while timeouts repeat.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RtoBackoff {
    /// Each timeout doubles the flow's smoothed RTT, and with it the next
    /// timeout, the window pacing rate and the RTT its CC is told, until
    /// ACKs pull the average down again (an eighth per ACK).
    #[default]
    Srtt,
    /// Linux's (`icsk_backoff`, RFC 6298): each timeout doubles the timeout
    /// alone (up to 120 s, `TCP_RTO_MAX`); the RTT estimate stays, and the
    /// first ACK with an RTT sample ends the backoff. A flow whose path
    /// comes back (a healed black hole) sends at its old pace after one
    /// timeout, not a smoothed RTT of seconds.
    Timer,
}

impl RtoBackoff {
    fn is_default(&self) -> bool {
        *self == RtoBackoff::Srtt
    }
}

/// A receiver whose advertised window starts at `init_kb` and grows by
/// every byte it delivers (doubling per round trip, as Linux's receive-
/// buffer autotuning does for an application that reads at once) up to
/// `max_kb`. On Linux 6.12 with the default `tcp_rmem` (4096 131072
/// 6291456) the first window is ~64 KB (`rcv_ssthresh` in `ss -i`) and the
/// largest about half of 6 MB.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReceiveWindow {
    pub init_kb: f64,
    pub max_kb: f64,
}

fn default_sample_us() -> f64 {
    1000.0
}
fn default_fairness_window_ms() -> f64 {
    20.0
}
fn default_jain_threshold() -> f64 {
    0.95
}
fn default_min_rto_us() -> f64 {
    10_000.0
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NetSpec {
    pub link_rate_gbps: f64,
    pub intra_rtt_us: f64,
    pub inter_rtt_us: f64,
    pub mtu: u32,
}

impl NetSpec {
    /// The network as the algorithms see it (their defaults derive from it).
    pub fn config(&self) -> xdcc_algo::NetConfig {
        xdcc_algo::NetConfig {
            link_rate_bps: (self.link_rate_gbps * 1e9).round() as u64,
            intra_rtt_ns: (self.intra_rtt_us * 1e3).round().min(u32::MAX as f64) as u32,
            inter_rtt_ns: (self.inter_rtt_us * 1e3).round().min(u32::MAX as f64) as u32,
            mtu: self.mtu,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    pub name: String,
    pub rate_gbps: f64,
    pub buffer_kb: f64,
    #[serde(default)]
    pub marking: Marking,
    #[serde(default)]
    pub phantom: Option<Phantom>,
    /// Random loss probability per packet at enqueue.
    #[serde(default)]
    pub loss_prob: f64,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QueueOverride {
    pub marking: Option<Marking>,
    pub phantom: Option<Phantom>,
    pub buffer_kb: Option<f64>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: String,
    #[serde(default = "one_u32")]
    pub count: u32,
    /// Base (propagation) RTT of a flow through `path` (routed flows: none,
    /// their links' delays make it). A flow pinned to links gives at least
    /// twice their one-way delays: the links' delays are part of it.
    #[serde(default)]
    pub rtt_us: f64,
    /// Queue names in order from sender to receiver (queues in series); or,
    /// in a routed network, link names (`"b.border->a.border#3"`,
    /// `"border0"`) that the flow is pinned to: consecutive links, crossed in
    /// order whatever ECMP does (cross traffic between two switches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
    /// Routed flows: the sending and the receiving host, as a host (`a.3`)
    /// or a DC (`a`, `b`): a DC gives the group's flows distinct hosts of
    /// it drawn from the seed (with `src` and `dst` the same DC, no flow
    /// sends to itself: a random permutation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
    /// Routed flows, instead of `src` and `dst`: one "src>dst" host pair per
    /// flow (`count` must then be the number of pairs), e.g. a traffic
    /// matrix's `["a.15>b.119", "a.0>b.1"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<String>,
    /// Routed flows: the pairs, size and start of an htsim connection
    /// matrix (`src->dst id N start <µs> size <bytes>` lines; hosts
    /// 0..H-1 are DC a's, H.. DC b's), relative to the scenario file; read
    /// when the file is loaded (into `pairs`, `count`, `size_kb`,
    /// `start_ms`, which it must then not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tm: Option<String>,
    /// Routed flows: how packets choose their path (default: ECMP, one path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lb: Option<LbSpec>,
    /// Routed flows: UnoRC erasure-coded blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ec: Option<EcSpec>,
    #[serde(default)]
    pub start_ms: f64,
    /// Extra delay between the starts of this group's flows.
    #[serde(default)]
    pub start_spacing_us: f64,
    /// Stop sending new data at this time (long flows).
    #[serde(default)]
    pub stop_ms: Option<f64>,
    /// Flow size (finite flows get a completion time); none = long-lived.
    #[serde(default)]
    pub size_kb: Option<f64>,
    /// Sender NIC rate (default: the first queue's rate).
    #[serde(default)]
    pub host_rate_gbps: Option<f64>,
    /// The sending host, by name: every flow of the groups that name the
    /// same host shares one NIC at their `host_rate_gbps` (each sets it,
    /// alike), as Linux's TCP small queues share a host's qdisc between its
    /// sockets (`sim.rs`, `SharedNic`). None: each flow has a NIC of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Algorithm for this group, overriding the run's algorithm.
    #[serde(default)]
    pub cc: Option<String>,
    /// Tunables of this group's algorithm, on top of `[params.<cc>]`: e.g.
    /// `params = { init_bdp_q16 = 32768 }` to start a group at half a BDP.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, u64>,
    /// ECN-capable (default). `false`: a sender that does not negotiate
    /// ECN (e.g. cubic with Linux's default `tcp_ecn`): queues count its
    /// packets and never mark them, as the testbed's eBPF markers do (a RED
    /// qdisc would drop them early instead; not modelled).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub ect: bool,
}

fn is_true(v: &bool) -> bool {
    *v
}

fn one_u32() -> u32 {
    1
}

/// An htsim connection matrix (`Nodes N`, `Connections M`, then
/// `src->dst id N start <µs> size <bytes>`): host pairs as `a.i>b.j`
/// (hosts `per_dc` and up are DC b's), and the one size (bytes) and start
/// (µs) all its flows share.
pub fn read_connection_matrix(text: &str, per_dc: u32) -> Result<(Vec<String>, u64, f64)> {
    let host = |n: &str| -> Result<String> {
        let i: u32 = n.parse().map_err(|_| anyhow::anyhow!("{n:?} is not a host number"))?;
        if i >= 2 * per_dc {
            bail!("host {i}: the topology has {} hosts", 2 * per_dc);
        }
        Ok(if i < per_dc { format!("a.{i}") } else { format!("b.{}", i - per_dc) })
    };
    let (mut pairs, mut size, mut start) = (Vec::new(), None, None);
    for (n, line) in text.lines().enumerate() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() || w[0] == "Nodes" || w[0] == "Connections" {
            continue;
        }
        let at = || format!("line {}", n + 1);
        let (Some((a, b)), Some(i_start), Some(i_size)) =
            (w[0].split_once("->"), w.iter().position(|&x| x == "start"), w.iter().position(|&x| x == "size"))
        else {
            bail!("{}: expected \"src->dst id N start <us> size <bytes>\"", at());
        };
        let st: f64 = w.get(i_start + 1).and_then(|v| v.parse().ok()).ok_or_else(|| anyhow::anyhow!("{}: bad start", at()))?;
        let sz: u64 = w.get(i_size + 1).and_then(|v| v.parse().ok()).ok_or_else(|| anyhow::anyhow!("{}: bad size", at()))?;
        if *size.get_or_insert(sz) != sz || *start.get_or_insert(st) != st {
            bail!("{}: every flow of one group must have the same size and start (split the matrix)", at());
        }
        pairs.push(format!("{}>{}", host(a).with_context(at)?, host(b).with_context(at)?));
    }
    let (Some(size), Some(start)) = (size, start) else {
        bail!("no connections");
    };
    Ok((pairs, size, start))
}

/// A routed flow's load balancer (`xdcc_multipath::lb`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LbSpec {
    /// One path for the flow's life.
    Ecmp,
    /// A random path per packet.
    Spray,
    /// PLB: move after `congested_rounds` rounds with at least
    /// `congested_frac` of ACKs marked, and on a timeout; `move_on_nack`:
    /// on a block NACK too; timeouts and NACKs move it at most once per
    /// `min_move_interval_us`. Defaults: PLB's paper (0.5, 3, no NACKs, 0);
    /// the Uno artifact's: 0.25, 2, NACKs, one RTO. `congested_rounds = 0`
    /// never moves on congestion: a new path on every timeout only, as
    /// Linux's `net.core.txrehash` (a new flow label at each RTO).
    Plb {
        #[serde(default = "half")]
        congested_frac: f64,
        #[serde(default = "three")]
        congested_rounds: u32,
        #[serde(default)]
        move_on_nack: bool,
        #[serde(default)]
        min_move_interval_us: f64,
    },
    /// UnoLB: `subflows` entropies under one window, silent ones re-drawn on
    /// a timeout or NACK; `prefer_recent` skips silent subflows.
    Unolb {
        #[serde(default = "ten")]
        subflows: u8,
        #[serde(default)]
        prefer_recent: bool,
    },
}

fn half() -> f64 {
    0.5
}
fn three() -> u32 {
    3
}
fn ten() -> u8 {
    10
}

impl LbSpec {
    /// A balancer by name: ecmp, spray, plb (PLB's paper), plb-artifact
    /// (the Uno artifact's PLB; its NACK/timeout interval is the scenario's
    /// fixed RTO, or 2432 µs), unolb, or unolb-recent (UnoLB preferring
    /// subflows with recent ACKs, the paper's option).
    pub fn named(kind: &str, rto_us: Option<f64>) -> Result<Self> {
        Ok(match kind {
            "ecmp" => LbSpec::Ecmp,
            "spray" => LbSpec::Spray,
            "plb" => LbSpec::Plb { congested_frac: 0.5, congested_rounds: 3, move_on_nack: false, min_move_interval_us: 0.0 },
            "plb-artifact" => LbSpec::Plb {
                congested_frac: 0.25,
                congested_rounds: 2,
                move_on_nack: true,
                min_move_interval_us: rto_us.unwrap_or(2432.0),
            },
            "unolb" => LbSpec::Unolb { subflows: 10, prefer_recent: false },
            "unolb-recent" => LbSpec::Unolb { subflows: 10, prefer_recent: true },
            other => bail!("load balancer {other:?}: expected ecmp, spray, plb, plb-artifact, unolb or unolb-recent"),
        })
    }

    pub fn strategy(&self) -> Result<xdcc_multipath::Strategy> {
        use xdcc_multipath::{PlbConfig, Strategy, UnoLbConfig};
        let s = match *self {
            LbSpec::Ecmp => Strategy::Ecmp,
            LbSpec::Spray => Strategy::Spray,
            LbSpec::Plb { congested_frac, congested_rounds, move_on_nack, min_move_interval_us } => {
                if !(congested_frac.is_finite() && (0.0..=1.0).contains(&congested_frac)) {
                    bail!("lb.congested_frac must be within [0, 1]");
                }
                if !(min_move_interval_us.is_finite() && (0.0..=1e7).contains(&min_move_interval_us)) {
                    bail!("lb.min_move_interval_us must be within [0, 1e7]");
                }
                Strategy::Plb(PlbConfig {
                    congested_ppm: (congested_frac * 1e6).round() as u32,
                    congested_rounds,
                    move_on_timeout: true,
                    move_on_nack,
                    min_move_interval_ns: (min_move_interval_us * 1e3).round() as u64,
                })
            }
            LbSpec::Unolb { subflows, prefer_recent } => Strategy::UnoLb(UnoLbConfig { subflows, prefer_recent, ..UnoLbConfig::default() }),
        };
        s.check().map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(s)
    }
}

/// UnoRC (`xdcc_multipath::ec`): blocks of `data` + `parity` packets; the
/// receiver NACKs a block still incomplete `nack_timeout_us` after its
/// first packet (`retx_nack_timeout_us` when that packet was a
/// retransmission; default the same). The artifact: 640 µs and 1.05 ×
/// the base RTT for inter-DC flows.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EcSpec {
    #[serde(default = "eight")]
    pub data: u8,
    #[serde(default = "two")]
    pub parity: u8,
    pub nack_timeout_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retx_nack_timeout_us: Option<f64>,
}

fn eight() -> u8 {
    8
}
fn two() -> u8 {
    2
}

impl EcSpec {
    pub fn code(&self) -> Result<xdcc_multipath::BlockCode> {
        let c = xdcc_multipath::BlockCode { data: self.data, parity: self.parity };
        c.check().map_err(|e| anyhow::anyhow!("{e}"))?;
        for v in [self.nack_timeout_us, self.retx_nack_timeout_us()] {
            if !(v.is_finite() && v > 0.0 && v <= 1e7) {
                bail!("ec.nack_timeout_us and retx_nack_timeout_us must be within (0, 1e7]");
            }
        }
        Ok(c)
    }

    pub fn retx_nack_timeout_us(&self) -> f64 {
        self.retx_nack_timeout_us.unwrap_or(self.nack_timeout_us)
    }
}

/// One queue as a run of one CC sees it: the queue's settings with that
/// CC's `[queue_overrides]` applied. The simulator and the host backend's
/// plan (`crate::plan`) both take a queue from here.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ResolvedQueue {
    pub name: String,
    pub rate_bps: f64,
    pub buffer_bytes: u64,
    pub marking: Marking,
    pub phantom: Option<Phantom>,
    pub loss_prob: f64,
}

impl Scenario {
    /// The queues as the run of `cc` sees them (any name: a CC without
    /// overrides, such as the kernel's cubic, gets the queues as written).
    pub fn queues_for(&self, cc: &str) -> Vec<ResolvedQueue> {
        let overrides = self.queue_overrides.get(cc);
        self.queues
            .iter()
            .map(|q| {
                let o = overrides.and_then(|m| m.get(&q.name));
                ResolvedQueue {
                    name: q.name.clone(),
                    rate_bps: q.rate_gbps * 1e9,
                    buffer_bytes: (o.and_then(|o| o.buffer_kb).unwrap_or(q.buffer_kb) * 1000.0).round() as u64,
                    marking: o.and_then(|o| o.marking.clone()).unwrap_or_else(|| q.marking.clone()),
                    phantom: o.and_then(|o| o.phantom.clone()).or_else(|| q.phantom.clone()),
                    loss_prob: q.loss_prob,
                }
            })
            .collect()
    }

    pub fn from_toml(text: &str) -> Result<Self> {
        let s: Scenario = toml::from_str(text).map_err(|e| anyhow::anyhow!("scenario: {e}"))?;
        s.validate()?;
        Ok(s)
    }

    pub fn from_file(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut s: Scenario = toml::from_str(&text).map_err(|e| anyhow::anyhow!("scenario: {e}")).with_context(|| format!("in {}", path.display()))?;
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        let per_dc = s.topology.as_ref().map(|t| t.hosts_per_dc());
        for f in &mut s.flows {
            if let Some(tm) = f.tm.take() {
                let Some(per_dc) = per_dc else {
                    bail!("flows.{}.tm needs a [topology]", f.name);
                };
                if !f.pairs.is_empty() || f.src.is_some() || f.dst.is_some() || f.size_kb.is_some() || f.start_ms != 0.0 || f.count != 1 {
                    bail!("flows.{}: tm gives the pairs, count, size and start: set none of them", f.name);
                }
                let file = dir.join(&tm);
                let text = std::fs::read_to_string(&file).with_context(|| format!("flows.{}.tm: reading {}", f.name, file.display()))?;
                let (pairs, size, start) = read_connection_matrix(&text, per_dc).with_context(|| format!("flows.{}.tm: {}", f.name, file.display()))?;
                f.count = pairs.len() as u32;
                f.pairs = pairs;
                f.size_kb = Some(size as f64 / 1e3);
                f.start_ms = start / 1e3;
            }
        }
        s.validate().with_context(|| format!("in {}", path.display()))?;
        Ok(s)
    }

    /// What the algorithms derive their defaults from.
    pub fn net_config(&self) -> xdcc_algo::NetConfig {
        self.net.config()
    }

    /// The tunables of `kind` in this scenario: its preset's, then `[params]`.
    pub fn params_of(&self, kind: CcKind) -> Result<BTreeMap<String, u64>> {
        let mut out = match self.presets.get(kind.name()) {
            Some(name) => crate::cc::preset_tunables(kind, name, &self.net_config())?,
            None => BTreeMap::new(),
        };
        if let Some(p) = self.params.get(kind.name()) {
            out.extend(p.iter().map(|(k, v)| (k.clone(), *v)));
        }
        Ok(out)
    }

    /// The timing jitter in ns (see `jitter_us`).
    pub fn jitter_ns(&self) -> u64 {
        let us = self.jitter_us.unwrap_or(self.net.mtu as f64 * 8.0 / (self.net.link_rate_gbps * 1e3));
        (us * 1e3).round() as u64
    }

    pub fn cc_kinds(&self) -> Result<Vec<CcKind>> {
        self.cc.iter().map(|s| CcKind::parse(s)).collect()
    }

    /// Checks everything that serde cannot: ranges, names, references, in
    /// the order of the file's parts (the run, the CCs, the network, the
    /// flows); the first problem is the error.
    pub fn validate(&self) -> Result<()> {
        self.validate_run()?;
        self.validate_ccs()?;
        let (graph, names) = self.validate_network()?;
        if self.flows.is_empty() {
            bail!("define at least one [[flows]] group");
        }
        for f in &self.flows {
            self.validate_flow(f, graph.as_ref(), &names)?;
        }
        Ok(())
    }

    /// The run: duration, sampling, measurement window, timers, host model.
    fn validate_run(&self) -> Result<()> {
        pos("duration_ms", self.duration_ms)?;
        if self.duration_ms > 600_000.0 {
            bail!("duration_ms must be at most 600000 (10 simulated minutes)");
        }
        pos("sample_interval_us", self.sample_interval_us)?;
        pos("fairness_window_ms", self.fairness_window_ms)?;
        frac("jain_threshold", self.jain_threshold)?;
        pos("min_rto_us", self.min_rto_us)?;
        if let Some(j) = self.jitter_us {
            if !(j.is_finite() && (0.0..=10_000.0).contains(&j)) {
                bail!("jitter_us must be within [0, 10000], got {j}");
            }
        }
        if !(self.host_delay_us.is_finite() && (0.0..=100_000.0).contains(&self.host_delay_us)) {
            bail!("host_delay_us must be within [0, 100000], got {}", self.host_delay_us);
        }
        if !(self.host_delay_steady.is_finite() && (0.0..=1.0).contains(&self.host_delay_steady)) {
            bail!("host_delay_steady must be within [0, 1], got {}", self.host_delay_steady);
        }
        if !(self.window_pacing_gain.is_finite() && (self.window_pacing_gain == 0.0 || (0.5..=10.0).contains(&self.window_pacing_gain))) {
            bail!("window_pacing_gain must be 0 (off) or within [0.5, 10], got {}", self.window_pacing_gain);
        }
        if let Some(r) = self.rto_us {
            pos("rto_us", r)?;
        }
        if let Some(r) = self.rto_intra_us {
            pos("rto_intra_us", r)?;
            if self.rto_us.is_none() || self.topology.is_none() {
                bail!("rto_intra_us needs rto_us and a [topology]");
            }
        }
        if let Some(w) = self.receive_window {
            pos("receive_window.init_kb", w.init_kb)?;
            pos("receive_window.max_kb", w.max_kb)?;
            if w.init_kb * 1000.0 < self.net.mtu as f64 || w.max_kb < w.init_kb {
                bail!("receive_window: need one MTU <= init_kb <= max_kb (got init_kb {}, max_kb {})", w.init_kb, w.max_kb);
            }
        }
        if !(self.measure_from_ms >= 0.0 && self.measure_from_ms < self.duration_ms) {
            bail!("measure_from_ms must be within [0, duration_ms)");
        }
        if let Some(to) = self.measure_to_ms {
            if !(to > self.measure_from_ms && to <= self.duration_ms) {
                bail!("measure_to_ms must be within (measure_from_ms, duration_ms]");
            }
        }
        Ok(())
    }

    /// The CCs named, their tunables and presets.
    fn validate_ccs(&self) -> Result<()> {
        if self.cc.is_empty() {
            bail!("cc: name at least one algorithm");
        }
        self.cc_kinds()?;
        for k in self.params.keys().chain(self.queue_overrides.keys()).chain(self.presets.keys()) {
            CcKind::parse(k).with_context(|| format!("[params.{k}] / [queue_overrides.{k}] / [presets]"))?;
        }
        for (k, name) in &self.presets {
            crate::cc::preset_tunables(CcKind::parse(k)?, name, &self.net_config())?;
        }
        Ok(())
    }

    /// The network: a routed topology or queues in series, and the
    /// per-CC queue overrides. Returns the routed network's links when a
    /// flow is pinned to them, and the queues' names.
    fn validate_network(&self) -> Result<(Option<crate::topology::Graph>, std::collections::BTreeSet<&str>)> {
        pos("net.link_rate_gbps", self.net.link_rate_gbps)?;
        pos("net.intra_rtt_us", self.net.intra_rtt_us)?;
        pos("net.inter_rtt_us", self.net.inter_rtt_us)?;
        match &self.topology {
            None if self.queues.is_empty() => bail!("define at least one [[queues]] (or a [topology])"),
            Some(_) if !self.queues.is_empty() => bail!("[topology] and [[queues]] exclude each other: a routed network builds its own queues"),
            Some(t) => t.validate()?,
            None => {}
        }
        // The routed network's links, for flows pinned to them.
        let graph = match &self.topology {
            Some(t) if self.flows.iter().any(|f| !f.path.is_empty()) => Some(t.build()?),
            _ => None,
        };
        let mut names = std::collections::BTreeSet::new();
        for q in &self.queues {
            if !names.insert(q.name.as_str()) {
                bail!("queue name {:?} used twice", q.name);
            }
            pos(&format!("queues.{}.rate_gbps", q.name), q.rate_gbps)?;
            pos(&format!("queues.{}.buffer_kb", q.name), q.buffer_kb)?;
            frac(&format!("queues.{}.loss_prob", q.name), q.loss_prob)?;
            check_marking(&q.name, &q.marking)?;
            if let Some(p) = &q.phantom {
                check_phantom(&q.name, p)?;
            }
        }
        for (cc, m) in &self.queue_overrides {
            for (qn, o) in m {
                if !names.contains(qn.as_str()) {
                    bail!("queue_overrides.{cc}.{qn}: no such queue");
                }
                if let Some(mk) = &o.marking {
                    check_marking(qn, mk)?;
                }
                if let Some(p) = &o.phantom {
                    check_phantom(qn, p)?;
                }
                if let Some(b) = o.buffer_kb {
                    pos(&format!("queue_overrides.{cc}.{qn}.buffer_kb"), b)?;
                }
            }
        }
        Ok((graph, names))
    }

    /// One flow group: where it goes (pinned to links, routed, or through
    /// queues in series), then when it runs and what it sends.
    fn validate_flow(&self, f: &FlowSpec, graph: Option<&crate::topology::Graph>, names: &std::collections::BTreeSet<&str>) -> Result<()> {
        if let (Some(g), false) = (graph, f.path.is_empty()) {
            Self::validate_pinned(f, g)?;
        } else if let Some(t) = &self.topology {
            Self::validate_routed(f, t)?;
        } else {
            Self::validate_in_series(f, names)?;
        }
        if f.start_ms < 0.0 || f.start_spacing_us < 0.0 {
            bail!("flows.{}: start times must not be negative", f.name);
        }
        if let Some(s) = f.stop_ms {
            if s <= f.start_ms {
                bail!("flows.{}.stop_ms must be after start_ms", f.name);
            }
        }
        if let Some(sz) = f.size_kb {
            pos(&format!("flows.{}.size_kb", f.name), sz)?;
        }
        if let Some(r) = f.host_rate_gbps {
            pos(&format!("flows.{}.host_rate_gbps", f.name), r)?;
        }
        if let Some(h) = &f.host {
            // A shared NIC: of flows over queues in series, at one rate.
            if h.is_empty() || self.topology.is_some() || f.host_rate_gbps.is_none() {
                bail!("flows.{}.host: a non-empty name, for flows over [[queues]] (not a topology), with host_rate_gbps set", f.name);
            }
            if let Some(g) = self.flows.iter().find(|g| g.host.as_ref() == Some(h) && g.host_rate_gbps != f.host_rate_gbps) {
                bail!("flows.{}.host_rate_gbps: host {h}'s NIC runs at one rate, and flows.{} gives another", f.name, g.name);
            }
        }
        if let Some(c) = &f.cc {
            CcKind::parse(c).with_context(|| format!("flows.{}.cc", f.name))?;
        }
        Ok(())
    }

    /// A flow pinned to links: they must exist and follow each other, and
    /// its RTT must cover their delays.
    fn validate_pinned(f: &FlowSpec, g: &crate::topology::Graph) -> Result<()> {
        // Pinned to links: they must exist and follow each other,
        // and the RTT must cover their delays.
        if f.src.is_some() || f.dst.is_some() || !f.pairs.is_empty() || f.lb.is_some() || f.ec.is_some() {
            bail!("flows.{}: a flow pinned to links (path) has no src, dst, pairs, lb or ec", f.name);
        }
        let mut one_way_ns = 0;
        let mut at = None;
        for name in &f.path {
            let Some(l) = g.find_link(name) else {
                bail!("flows.{}.path: no link {name:?} in the topology (a link name such as \"b.border->a.border#0\", or border0..)", f.name);
            };
            let l = &g.links[l];
            if at.is_some_and(|n| n != l.from) {
                bail!("flows.{}.path: {name:?} does not start where the link before it ends", f.name);
            }
            at = Some(l.to);
            one_way_ns += l.latency_ns;
        }
        pos(&format!("flows.{}.rtt_us", f.name), f.rtt_us)?;
        if f.rtt_us * 1e3 < 2.0 * one_way_ns as f64 {
            bail!("flows.{}.rtt_us ({}) is less than twice its links' delays ({} us)", f.name, f.rtt_us, 2.0 * one_way_ns as f64 / 1e3);
        }
        Ok(())
    }

    /// A routed flow: its ends (src and dst, or pairs), load balancing and coding.
    fn validate_routed(f: &FlowSpec, t: &crate::topology::TopologySpec) -> Result<()> {
        if f.rtt_us != 0.0 {
            bail!("flows.{}: a routed flow has src and dst, not rtt_us (its links make its RTT; a flow pinned to links gives path and rtt_us)", f.name);
        }
        if !f.pairs.is_empty() {
            if f.src.is_some() || f.dst.is_some() || f.pairs.len() != f.count as usize {
                bail!("flows.{}: pairs replace src and dst, one per flow (count = {})", f.name, f.pairs.len());
            }
            for pair in &f.pairs {
                let Some((a, b)) = pair.split_once('>') else {
                    bail!("flows.{}.pairs: {pair:?} is not \"src>dst\"", f.name);
                };
                for h in [a, b] {
                    if !h.contains('.') {
                        bail!("flows.{}.pairs: {h:?} is not a host (such as \"a.3\")", f.name);
                    }
                    crate::topology::check_endpoint(t, h).with_context(|| format!("flows.{}.pairs", f.name))?;
                }
            }
        } else {
            let (Some(src), Some(dst)) = (&f.src, &f.dst) else {
                bail!("flows.{}: a routed flow needs src and dst (a host such as \"a.3\" or a DC such as \"b\"), or pairs", f.name);
            };
            for h in [src, dst] {
                crate::topology::check_endpoint(t, h).with_context(|| format!("flows.{}", f.name))?;
            }
        }
        if let Some(lb) = &f.lb {
            lb.strategy().with_context(|| format!("flows.{}", f.name))?;
        }
        if let Some(ec) = &f.ec {
            ec.code().with_context(|| format!("flows.{}", f.name))?;
            if f.size_kb.is_none() {
                bail!("flows.{}: ec needs a sized flow (size_kb)", f.name);
            }
        }
        Ok(())
    }

    /// A flow through queues in series, named by `path`.
    fn validate_in_series(f: &FlowSpec, names: &std::collections::BTreeSet<&str>) -> Result<()> {
        if f.src.is_some() || f.dst.is_some() || !f.pairs.is_empty() || f.lb.is_some() || f.ec.is_some() {
            bail!("flows.{}: src, dst, pairs, lb and ec need a [topology]", f.name);
        }
        pos(&format!("flows.{}.rtt_us", f.name), f.rtt_us)?;
        if f.path.is_empty() {
            bail!("flows.{}.path must name at least one queue", f.name);
        }
        for q in &f.path {
            if !names.contains(q.as_str()) {
                bail!("flows.{}.path: no queue named {q:?}", f.name);
            }
        }
        Ok(())
    }
}

/// `what` is a positive, finite number.
fn pos(what: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && v > 0.0) {
        bail!("{what} must be a positive number, got {v}");
    }
    Ok(())
}

/// `what` is within [0, 1].
fn frac(what: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
        bail!("{what} must be within [0, 1], got {v}");
    }
    Ok(())
}
