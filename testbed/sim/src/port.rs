//! A switch port's signals as a scenario describes them: ECN marking on the
//! physical queue ([`Marking`]) and Uno's phantom queue ([`Phantom`]), with
//! their checks. A single-bottleneck scenario's queues and a routed
//! topology's links both use them.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// ECN marking on the physical queue: decided at enqueue on the instantaneous
/// queue length (DCTCP-style), or AMRT's anti-ECN marking at dequeue.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Marking {
    #[default]
    None,
    /// Mark every packet that finds at least `k_pkts` MTU-sized packets queued.
    Threshold { k_pkts: f64 },
    /// Linear RED between `min_frac` and `max_frac` of the buffer, marking
    /// probability rising to `pmax` at `max_frac` and 1 above it.
    Red {
        min_frac: f64,
        max_frac: f64,
        #[serde(default = "one")]
        pmax: f64,
    },
    /// AMRT anti-ECN (amrt-icpp20 §4.1): at dequeue, CE = "the link was idle
    /// for one MTU's transmission time before this packet" (eq. 2); the first
    /// AMRT queue on a path sets the mark, later ones AND it (eq. 3). The
    /// same decision as the eBPF marker (`xdcc_common::markers::amrt_step`).
    Amrt,
}

fn one() -> f64 {
    1.0
}

/// A phantom (virtual) queue (uno-sc25 §4.1.3): a counter that grows with
/// every enqueued packet (capped at its size) and drains at `drain_frac` of
/// the line rate; packets are CE-marked with linear RED between `min_frac`
/// and `max_frac` of its size.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Phantom {
    #[serde(default = "default_drain")]
    pub drain_frac: f64,
    /// Size in kB (default: the physical buffer).
    #[serde(default)]
    pub size_kb: Option<f64>,
    #[serde(default = "default_pq_min")]
    pub min_frac: f64,
    #[serde(default = "default_pq_max")]
    pub max_frac: f64,
}

fn default_drain() -> f64 {
    0.9
}
fn default_pq_min() -> f64 {
    0.25
}
fn default_pq_max() -> f64 {
    0.75
}

pub(crate) fn check_marking(q: &str, m: &Marking) -> Result<()> {
    match *m {
        Marking::None | Marking::Amrt => Ok(()),
        Marking::Threshold { k_pkts } => {
            if !(k_pkts.is_finite() && k_pkts >= 0.0) {
                bail!("queues.{q}.marking.k_pkts must be >= 0");
            }
            Ok(())
        }
        Marking::Red { min_frac, max_frac, pmax } => {
            if !(0.0..=1.0).contains(&min_frac) || !(0.0..=1.0).contains(&max_frac) || min_frac >= max_frac {
                bail!("queues.{q}.marking: need 0 <= min_frac < max_frac <= 1");
            }
            if !(0.0..=1.0).contains(&pmax) {
                bail!("queues.{q}.marking.pmax must be within [0, 1]");
            }
            Ok(())
        }
    }
}

pub(crate) fn check_phantom(q: &str, p: &Phantom) -> Result<()> {
    if !(p.drain_frac > 0.0 && p.drain_frac <= 1.0) {
        bail!("queues.{q}.phantom.drain_frac must be within (0, 1]");
    }
    if !(0.0..=1.0).contains(&p.min_frac) || !(0.0..=1.0).contains(&p.max_frac) || p.min_frac >= p.max_frac {
        bail!("queues.{q}.phantom: need 0 <= min_frac < max_frac <= 1");
    }
    if let Some(s) = p.size_kb {
        if !(s.is_finite() && s > 0.0) {
            bail!("queues.{q}.phantom.size_kb must be positive");
        }
    }
    Ok(())
}
