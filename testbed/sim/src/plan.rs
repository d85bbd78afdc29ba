//! The host backend's plan: a simulator scenario resolved, for one CC, into
//! the absolute values a real network needs (`xdcc-sim plan`), so that the
//! executor (`testbed/host/run.py`) only transports them and the model and
//! the real run read one meaning of the file.
//!
//! What the host backend can build is one bottleneck port: every flow's
//! path is the scenario's one queue. The port is HTB at the queue's rate over
//! a byte FIFO of its buffer; ECN marking comes from an xdcc eBPF marker on
//! the port, because a host kernel may lack `sch_red` (this one does): a
//! threshold or RED marking on the physical queue becomes the marker on a
//! virtual queue that drains at the port's rate (a mirror of the port's
//! queue), a phantom queue is the phantom marker, AMRT's marking is its
//! anti-ECN marker. One marker per port: a queue with both a phantom queue
//! and physical marking gets the phantom queue, and the plan says so.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::cc::{AnyParams, CcKind};
use crate::scenario::{Marking, Scenario};
use crate::testbed::KERNEL_CCS;

#[derive(Clone, Debug, Serialize)]
pub struct HostPlan {
    pub scenario: String,
    /// The run's CC as the scenario names it, and as the kernel registers
    /// it (`bpf_<cc>` for xdcc's, the name itself for the kernel's own).
    pub cc: String,
    pub registered: String,
    pub duration_s: f64,
    pub measure_from_s: f64,
    pub measure_to_s: f64,
    /// The `net_*` tunables of every xdcc CC of the run.
    pub net: BTreeMap<String, u64>,
    pub port: Port,
    pub groups: Vec<Group>,
    /// The model's end-host delay (`host_delay_us`): what the scenario
    /// assumes the real hosts add; the executor reports what it measured.
    pub model_host_delay_us: f64,
    /// What the host backend does differently from the model, in words.
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Port {
    pub name: String,
    pub rate_mbit: u64,
    pub buffer_bytes: u64,
    pub marker: Option<Marker>,
}

/// An `xdcc mark-phantom` or `xdcc mark-amrt` on the port.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Marker {
    /// A virtual queue draining at `drain_pct` of the port's rate, marking
    /// CE with a probability rising from 0 at `kmin_pct` to 1 at `kmax_pct`
    /// of its `size_bytes`.
    Phantom { drain_pct: u64, size_bytes: u64, kmin_pct: u64, kmax_pct: u64 },
    /// AMRT's anti-ECN marker at the port's dequeue (the receiver's ingress).
    Amrt,
}

#[derive(Clone, Debug, Serialize)]
pub struct Group {
    pub name: String,
    pub count: u32,
    /// The scenario's base RTT of the group's path (the host's own path has
    /// whatever its namespaces give; the executor measures it).
    pub rtt_us: f64,
    pub start_s: f64,
    pub start_spacing_s: f64,
    pub stop_s: Option<f64>,
    /// Sized flows (a completion time each); None: long-lived.
    pub size_bytes: Option<u64>,
    pub cc: String,
    pub registered: String,
    /// The tunables the scenario sets for the group's CC (its preset's, then
    /// `[params]`, then the group's), on top of the defaults both the model
    /// and the kernel derive from `net`; plus `window_pacing_pct` when the
    /// scenario sets `window_pacing_gain`. xdcc CCs only.
    pub tunables: BTreeMap<String, u64>,
}

/// The plan of `sc` for a run of `cc` (an xdcc CC or one of the kernel's).
pub fn host_plan(sc: &Scenario, cc: &str) -> Result<HostPlan> {
    let is_kernel = KERNEL_CCS.contains(&cc);
    if !is_kernel {
        CcKind::parse(cc)?;
    }
    if sc.topology.is_some() {
        bail!("scenario {} is a routed network ([topology]): it runs in the simulator only; the host backend runs one bottleneck port", sc.name);
    }
    let queues = sc.queues_for(cc);
    if queues.len() != 1 || sc.flows.iter().any(|f| f.path.len() != 1) {
        bail!(
            "the host backend runs one bottleneck port: scenario {} has {} queue(s) and paths of {} hops",
            sc.name,
            queues.len(),
            sc.flows.iter().map(|f| f.path.len()).max().unwrap_or(0)
        );
    }
    let q = &queues[0];
    if q.loss_prob > 0.0 {
        bail!("queues.{}: random loss needs netem, which the host backend does not use", q.name);
    }
    let mut notes = Vec::new();
    let marker = match (&q.phantom, &q.marking) {
        (Some(p), m) => {
            if *m != Marking::None {
                notes.push(format!("queues.{}: the phantom queue marks; its physical {m:?} marking is not emulated (one marker per port)", q.name));
            }
            let size = p.size_kb.map_or(q.buffer_bytes, |kb| (kb * 1000.0).round() as u64);
            Some(Marker::Phantom { drain_pct: pct(p.drain_frac)?, size_bytes: size, kmin_pct: pct(p.min_frac)?, kmax_pct: pct(p.max_frac)? })
        }
        (None, Marking::None) => None,
        (None, Marking::Threshold { k_pkts }) => {
            // Marking from K, certain at 1.1 K, on a mirror of the port.
            let k = (k_pkts * sc.net.mtu as f64).round() as u64;
            Some(Marker::Phantom { drain_pct: 100, size_bytes: k.saturating_mul(10).max(1), kmin_pct: 10, kmax_pct: 11 })
        }
        (None, Marking::Red { min_frac, max_frac, pmax }) => {
            if *pmax < 1.0 {
                bail!("queues.{}: RED with pmax {pmax} < 1: the eBPF marker's probability rises to 1 at max_frac", q.name);
            }
            Some(Marker::Phantom { drain_pct: 100, size_bytes: q.buffer_bytes, kmin_pct: pct(*min_frac)?, kmax_pct: pct(*max_frac)? })
        }
        (None, Marking::Amrt) => Some(Marker::Amrt),
    };
    let n = sc.net_config();
    let net = BTreeMap::from([
        ("net_link_rate_mbps".to_string(), n.link_rate_bps / 1_000_000),
        ("net_intra_rtt_us".to_string(), n.intra_rtt_ns as u64 / 1000),
        ("net_inter_rtt_us".to_string(), n.inter_rtt_ns as u64 / 1000),
        ("net_mtu".to_string(), n.mtu as u64),
    ]);
    let groups = sc
        .flows
        .iter()
        .map(|g| {
            let gcc = g.cc.clone().unwrap_or_else(|| cc.to_string());
            let tunables = if KERNEL_CCS.contains(&gcc.as_str()) {
                if !g.params.is_empty() {
                    bail!("flows.{}: params for the kernel's {gcc}, which has no xdcc tunables", g.name);
                }
                BTreeMap::new()
            } else {
                let kind = CcKind::parse(&gcc)?;
                let mut t = sc.params_of(kind)?;
                t.extend(g.params.iter().map(|(k, v)| (k.clone(), *v)));
                // Validated as the model builds it. The kernel derives the
                // rest from the `net_*` values with the same crate.
                AnyParams::build(kind, &n, &t).map_err(|e| anyhow::anyhow!("flows.{}: {e}", g.name))?;
                if sc.window_pacing_gain > 0.0 {
                    t.insert("window_pacing_pct".into(), (sc.window_pacing_gain * 100.0).round() as u64);
                }
                t
            };
            let registered = if KERNEL_CCS.contains(&gcc.as_str()) { gcc.clone() } else { format!("bpf_{gcc}") };
            Ok(Group {
                name: g.name.clone(),
                count: g.count,
                rtt_us: g.rtt_us,
                start_s: g.start_ms / 1e3,
                start_spacing_s: g.start_spacing_us / 1e6,
                stop_s: g.stop_ms.map(|s| s / 1e3),
                size_bytes: g.size_kb.map(|kb| (kb * 1000.0).round() as u64),
                cc: gcc,
                registered,
                tunables,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(HostPlan {
        scenario: sc.name.clone(),
        cc: cc.to_string(),
        registered: if is_kernel { cc.to_string() } else { format!("bpf_{cc}") },
        duration_s: sc.duration_ms / 1e3,
        measure_from_s: sc.measure_from_ms / 1e3,
        measure_to_s: sc.measure_to_ms.unwrap_or(sc.duration_ms) / 1e3,
        net,
        port: Port { name: q.name.clone(), rate_mbit: (q.rate_bps / 1e6).round() as u64, buffer_bytes: q.buffer_bytes, marker },
        groups,
        model_host_delay_us: sc.host_delay_us,
        notes,
    })
}

/// A fraction as whole percent (the markers' unit).
fn pct(f: f64) -> Result<u64> {
    let p = (f * 100.0).round();
    if (f * 100.0 - p).abs() > 1e-6 {
        bail!("{f} is not a whole percent: the eBPF markers take whole percents");
    }
    Ok(p as u64)
}
