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
//!
//! One plan, three executors ([`Executor`]): the host and servers backends
//! run xdcc's CCs as BPF struct_ops (`bpf_<cc>`) at the scenario's own
//! speed, with the port's marking from an eBPF marker as above; the vm
//! backend runs them as the test kernel's modules (`tcp_<cc>`, registered
//! as `<cc>`) and, as that kernel has `sch_red`, marks on the port's own
//! queue as a switch does: the plan gives the port as a switch profile
//! (`port.profile`, applied with `xdcc switch apply`: HTB over a byte FIFO,
//! RED or a step at K, as `switch-config` renders it), and the eBPF markers
//! only for what no qdisc does (a phantom queue, AMRT's marks). The vm
//! backend runs in the qemu guest, which runs `time_scale` times
//! slower than real time (TCG), so the plan is the scenario slowed by that
//! factor: every time (durations, starts, RTTs, the `net_*` RTTs, tunables
//! in `_ns`/`_us`/`_ms`) times it, every rate (the port, `net_link_rate_mbps`,
//! tunables in `_per_sec`) divided by it, and every size in bytes (buffers,
//! markers, K, flow sizes) as it is: a queue of B bytes then holds the same
//! packets for `time_scale` times as long, as it does at the scenario's rate
//! in its time. The executor divides what it measures in time back.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::cc::{AnyParams, CcKind};
use crate::scenario::{Marking, Scenario};
use crate::testbed::KERNEL_CCS;

/// Where a plan runs: the kernel form of xdcc's CCs and the time scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Executor {
    /// xdcc's CCs as kernel modules (`tcp_<cc>`, registered as `<cc>`)
    /// rather than BPF struct_ops CCs (`bpf_<cc>`).
    pub modules: bool,
    /// How many times slower than the scenario the executor runs (module doc).
    pub time_scale: u64,
    /// The kernel has `sch_red`: physical marking by the port's qdisc.
    pub qdisc_marking: bool,
}

impl Executor {
    /// This machine's kernel or real servers: BPF CCs, real time, eBPF markers.
    pub const HOST: Executor = Executor { modules: false, time_scale: 1, qdisc_marking: false };
    /// The qemu guest: modules, 20× slowed (the 2-DC testbed's `time_scale`),
    /// RED and step marking by the qdisc.
    pub const VM: Executor = Executor { modules: true, time_scale: 20, qdisc_marking: true };
}

#[derive(Clone, Debug, Serialize)]
pub struct HostPlan {
    pub scenario: String,
    /// The executor's time scale (1 at real speed): the executor divides the
    /// times it measures by it, so that they read in the scenario's time.
    pub time_scale: u64,
    /// The run's CC as the scenario names it, and as the kernel registers
    /// it (`bpf_<cc>` for xdcc's, the name itself for the kernel's own).
    pub cc: String,
    pub registered: String,
    /// Whether `cc` is one of xdcc's (told the network, tunable) rather
    /// than the kernel's own.
    pub xdcc: bool,
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
    /// TSO, GSO and GRO on the executor's namespaces (the scenario's
    /// `host_offloads`; always off where the port's qdisc marks, per skb).
    pub offloads: bool,
    /// What the host backend does differently from the model, in words.
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Port {
    pub name: String,
    pub rate_mbit: u64,
    pub buffer_bytes: u64,
    pub marker: Option<Marker>,
    /// With qdisc marking: the port as a switch profile (TOML for `xdcc
    /// switch apply`): rate, buffer and the physical queue's RED or step
    /// marking; `marker` is then only a phantom queue or AMRT's.
    pub profile: Option<String>,
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
    /// Whether the group's CC is one of xdcc's.
    pub xdcc: bool,
    /// The tunables the scenario sets for the group's CC (its preset's, then
    /// `[params]`, then the group's), on top of the defaults both the model
    /// and the kernel derive from `net`; plus `window_pacing_pct` when the
    /// scenario sets `window_pacing_gain`. xdcc CCs only. A slowed plan
    /// (`time_scale` > 1) lists every tunable, derived at the scenario's
    /// network and slowed (module doc).
    pub tunables: BTreeMap<String, u64>,
}

/// The plan of `sc` for a run of `cc` (an xdcc CC or one of the kernel's)
/// on this machine's kernel or real servers.
pub fn host_plan(sc: &Scenario, cc: &str) -> Result<HostPlan> {
    plan(sc, cc, Executor::HOST)
}

/// The plan of `sc` for a run of `cc` on executor `ex`.
pub fn plan(sc: &Scenario, cc: &str, ex: Executor) -> Result<HostPlan> {
    if ex.time_scale == 0 {
        bail!("the time scale must be at least 1");
    }
    let ts = ex.time_scale as f64;
    let kernel_name = |c: &str| if KERNEL_CCS.contains(&c) || ex.modules { c.to_string() } else { format!("bpf_{c}") };
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
    // The executors' senders are veths or real NICs, not rate-limited: a
    // model whose NIC is no faster than the port (the simulator's default)
    // makes a flow that runs alone its own bottleneck, with no queue at the
    // port, where the executor's flow queues at the port.
    for f in sc.flows.iter().filter(|f| f.host_rate_gbps.map_or(true, |r| r * 1e9 <= q.rate_bps)) {
        notes.push(format!(
            "flows.{}: the model's sender NIC runs at {} Gbit/s, no faster than the port; the executor's senders are not rate-limited (set host_rate_gbps above the port's rate to model them)",
            f.name,
            f.host_rate_gbps.unwrap_or(q.rate_bps / 1e9)
        ));
    }
    // Each group is a sender namespace of its own in the executors.
    for f in sc.flows.iter().filter(|f| f.host.is_some()) {
        let h = f.host.as_deref().unwrap_or_default();
        if sc.flows.iter().filter(|g| g.host.as_deref() == Some(h)).count() > 1 {
            notes.push(format!("flows.{}: shares host {h}'s NIC in the model; the executor gives each group a sender of its own", f.name));
        }
    }
    let rate_mbit = slower_rate((q.rate_bps / 1e6).round() as u64, ex.time_scale, &format!("queues.{}.rate_gbps", q.name))?;
    let profile = if ex.qdisc_marking { Some(port_profile(sc, q, rate_mbit)?) } else { None };
    let marker = match (&q.phantom, &q.marking) {
        (Some(p), m) => {
            if *m != Marking::None && profile.is_none() {
                notes.push(format!("queues.{}: the phantom queue marks; its physical {m:?} marking is not emulated (one marker per port)", q.name));
            }
            let size = p.size_kb.map_or(q.buffer_bytes, |kb| (kb * 1000.0).round() as u64);
            Some(Marker::Phantom { drain_pct: pct(p.drain_frac)?, size_bytes: size, kmin_pct: pct(p.min_frac)?, kmax_pct: pct(p.max_frac)? })
        }
        (None, Marking::None) => None,
        (None, Marking::Threshold { .. } | Marking::Red { .. }) if profile.is_some() => None,
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
        ("net_link_rate_mbps".to_string(), slower_rate(n.link_rate_bps / 1_000_000, ex.time_scale, "net.link_rate_gbps")?),
        ("net_intra_rtt_us".to_string(), (n.intra_rtt_ns as u64 / 1000).saturating_mul(ex.time_scale)),
        ("net_inter_rtt_us".to_string(), (n.inter_rtt_ns as u64 / 1000).saturating_mul(ex.time_scale)),
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
                // Validated as the model builds it. In real time the kernel
                // derives the rest from the `net_*` values with the same crate.
                let all = AnyParams::build(kind, &n, &t).map_err(|e| anyhow::anyhow!("flows.{}: {e}", g.name))?;
                if ex.time_scale > 1 {
                    // Slowed, it would derive them from the slowed network,
                    // and a rule per Gbit/s or in absolute time does not
                    // scale (Gemini's K = 50 packets per Gbit/s would fall
                    // to 2.5 packets at 50 Mbit/s; its T = 5 ms would not
                    // stretch): every tunable at the scenario's network,
                    // then slowed below.
                    t = all.names().iter().filter_map(|k| Some((k.to_string(), all.get(k)?))).collect();
                }
                if sc.window_pacing_gain > 0.0 {
                    t.insert("window_pacing_pct".into(), (sc.window_pacing_gain * 100.0).round() as u64);
                }
                for (k, v) in t.iter_mut() {
                    *v = slower_tunable(k, *v, ex.time_scale).map_err(|e| anyhow::anyhow!("flows.{}: {e}", g.name))?;
                }
                t
            };
            let registered = kernel_name(&gcc);
            Ok(Group {
                name: g.name.clone(),
                count: g.count,
                rtt_us: g.rtt_us * ts,
                start_s: g.start_ms / 1e3 * ts,
                start_spacing_s: g.start_spacing_us / 1e6 * ts,
                stop_s: g.stop_ms.map(|s| s / 1e3 * ts),
                size_bytes: g.size_kb.map(|kb| (kb * 1000.0).round() as u64),
                xdcc: !KERNEL_CCS.contains(&gcc.as_str()),
                cc: gcc,
                registered,
                tunables,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(HostPlan {
        scenario: sc.name.clone(),
        time_scale: ex.time_scale,
        cc: cc.to_string(),
        registered: kernel_name(cc),
        xdcc: !is_kernel,
        duration_s: sc.duration_ms / 1e3 * ts,
        measure_from_s: sc.measure_from_ms / 1e3 * ts,
        measure_to_s: sc.measure_to_ms.unwrap_or(sc.duration_ms) / 1e3 * ts,
        net,
        port: Port { name: q.name.clone(), rate_mbit, buffer_bytes: q.buffer_bytes, marker, profile },
        groups,
        model_host_delay_us: sc.host_delay_us,
        offloads: sc.host_offloads && !ex.qdisc_marking,
        notes,
    })
}

/// The port's physical queue as a switch profile at `rate_mbit` (the
/// executor's rate): its buffer in bytes, RED between the same fractions
/// of it, or a step at the same K packets.
fn port_profile(sc: &Scenario, q: &crate::scenario::ResolvedQueue, rate_mbit: u64) -> Result<String> {
    use xdcc_switch::{Marking as Sw, Port as SwPort, Profile};
    let marking = match q.marking {
        Marking::None | Marking::Amrt => Sw::None {},
        Marking::Red { min_frac, max_frac, pmax } => {
            Sw::Red { min_pct: pct(min_frac)?, max_pct: pct(max_frac)?, probability_pct: pct(pmax)? }
        }
        Marking::Threshold { k_pkts } => {
            // switch-config's step is K per Gbit/s of the port's rate.
            let k = k_pkts.round() as u64;
            let per_gbps = k * 1000 / rate_mbit.max(1);
            if (k_pkts - k as f64).abs() > 1e-9 || per_gbps * rate_mbit / 1000 != k {
                bail!("queues.{}: a step at K = {k_pkts} packets is not a whole number of packets per Gbit/s at {rate_mbit} Mbit/s", q.name);
            }
            Sw::Step { k_pkts_per_gbps: per_gbps }
        }
    };
    let p = Profile {
        description: format!("{} queues.{} (xdcc-sim plan)", sc.name, q.name),
        port: SwPort { rate_mbit, buffer_pkts_per_gbps: None, buffer_bytes: Some(q.buffer_bytes), mtu: sc.net.mtu as u64 },
        marking,
        wan: None,
        phantom: None,
        amrt: None,
    };
    let text = toml::to_string(&p)?;
    // What `xdcc switch apply` will read back, checked here.
    Profile::parse(&text).map_err(|e| anyhow::anyhow!("queues.{}: its switch profile: {e}", q.name))?;
    Ok(text)
}

/// A rate in Mbit/s, `time_scale` times slower: whole Mbit/s (HTB and the
/// markers take them), so it must divide.
fn slower_rate(mbit: u64, time_scale: u64, what: &str) -> Result<u64> {
    if mbit % time_scale != 0 {
        bail!("{what}: {mbit} Mbit/s is not a whole number of Mbit/s at a time scale of {time_scale}");
    }
    Ok(mbit / time_scale)
}

/// A tunable's value `time_scale` times slower, read from its unit (the
/// tunables' naming rule): a time (`_ns`, `_us`, `_ms`) grows, a rate
/// (`_per_sec`) shrinks; anything else (bytes, packets, gains) stays.
fn slower_tunable(name: &str, v: u64, time_scale: u64) -> Result<u64> {
    if ["_ns", "_us", "_ms"].iter().any(|u| name.ends_with(u)) {
        return v.checked_mul(time_scale).ok_or_else(|| anyhow::anyhow!("{name} = {v} overflows at a time scale of {time_scale}"));
    }
    if name.ends_with("_per_sec") {
        return Ok(v / time_scale);
    }
    Ok(v)
}

/// A fraction as whole percent (the markers' unit).
fn pct(f: f64) -> Result<u64> {
    let p = (f * 100.0).round();
    if (f * 100.0 - p).abs() > 1e-6 {
        bail!("{f} is not a whole percent: the eBPF markers take whole percents");
    }
    Ok(p as u64)
}
