//! Dispatch over the algorithm files of `xdcc-algo`, unchanged: the simulator
//! drives exactly the code the kernel modules run. The enums are generated
//! from the algorithm crate's one list (`xdcc_algo::for_each_cc!`): a new CC
//! there is a new variant here. Enum dispatch, not trait objects: the ACK
//! path stays a direct, inlinable call.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use xdcc_algo::{AckSample, CongestionControl, Event, FlowInit, NetConfig, Tunables};

macro_rules! dispatch_enums {
    ($($m:ident :: $state:ident),* $(,)?) => {
        /// Which algorithm a flow runs.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum CcKind {
            $($state),*
        }

        impl CcKind {
            pub const ALL: &'static [CcKind] = &[$(CcKind::$state),*];

            pub fn name(self) -> &'static str {
                match self {
                    $(CcKind::$state => <xdcc_algo::$m::$state as CongestionControl>::NAME),*
                }
            }
        }

        /// Tunables of one algorithm, derived from the network and overridden by name.
        #[derive(Clone, Copy, Debug)]
        pub enum AnyParams {
            $($state(xdcc_algo::$m::Params)),*
        }

        impl AnyParams {
            fn from_net(kind: CcKind, net: &NetConfig) -> Self {
                match kind {
                    $(CcKind::$state => AnyParams::$state(xdcc_algo::$m::Params::from_net(net))),*
                }
            }

            fn set(&mut self, name: &str, value: u64) -> Result<(), xdcc_algo::ParamError> {
                match self {
                    $(AnyParams::$state(p) => p.set(name, value)),*
                }
            }

            pub fn names(&self) -> &'static [&'static str] {
                match self {
                    $(AnyParams::$state(_) => <xdcc_algo::$m::Params as Tunables>::TUNABLES),*
                }
            }

            pub fn get(&self, name: &str) -> Option<u64> {
                match self {
                    $(AnyParams::$state(p) => p.get(name)),*
                }
            }
        }

        /// One flow's algorithm state.
        #[derive(Clone, Copy, Debug)]
        pub enum AnyCc {
            $($state(xdcc_algo::$m::$state)),*
        }

        impl AnyCc {
            pub fn new(p: &AnyParams, init: &FlowInit) -> Self {
                match p {
                    $(AnyParams::$state(p) => AnyCc::$state(xdcc_algo::$m::$state::new(p, init))),*
                }
            }

            #[inline]
            pub fn on_ack(&mut self, p: &AnyParams, s: &AckSample) {
                match (self, p) {
                    $((AnyCc::$state(c), AnyParams::$state(q)) => c.on_ack(q, s),)*
                    _ => unreachable!("flow state and parameters of different algorithms"),
                }
            }

            pub fn on_event(&mut self, p: &AnyParams, e: Event, now: u64) {
                match (self, p) {
                    $((AnyCc::$state(c), AnyParams::$state(q)) => c.on_event(q, e, now),)*
                    _ => unreachable!("flow state and parameters of different algorithms"),
                }
            }

            #[inline]
            pub fn cwnd(&self) -> u32 {
                match self {
                    $(AnyCc::$state(c) => c.cwnd()),*
                }
            }

            #[inline]
            pub fn pacing_rate(&self) -> Option<u64> {
                match self {
                    $(AnyCc::$state(c) => c.pacing_rate()),*
                }
            }

            pub fn rate_limited(&self) -> bool {
                match self {
                    $(AnyCc::$state(c) => c.rate_limited()),*
                }
            }

            pub fn ssthresh(&self) -> u32 {
                match self {
                    $(AnyCc::$state(c) => c.ssthresh()),*
                }
            }

            pub fn hold_cwnd(&mut self, max_bytes: u32) {
                match self {
                    $(AnyCc::$state(c) => c.hold_cwnd(max_bytes)),*
                }
            }
        }
    };
}

xdcc_algo::for_each_cc!([dispatch_enums] ());

impl CcKind {
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL.iter().copied().find(|k| k.name() == s).ok_or_else(|| {
            let known: Vec<&str> = Self::ALL.iter().map(|k| k.name()).collect();
            anyhow::anyhow!("unknown congestion control {s:?} (known: {})", known.join(", "))
        })
    }
}

/// The tunables of preset `name` of `kind` on `net`
/// (`xdcc_algo::presets`); an unknown preset is an error listing the known.
pub fn preset_tunables(kind: CcKind, name: &str, net: &NetConfig) -> Result<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    if !xdcc_algo::presets::for_each_preset_tunable(kind.name(), name, net, |k, v| {
        out.insert(k.to_string(), v);
    }) {
        let known: Vec<&str> = xdcc_algo::presets::PRESETS.iter().filter(|p| p.0 == kind.name()).map(|p| p.1).collect();
        bail!("{}: unknown preset {name:?} (known: {})", kind.name(), if known.is_empty() { "none".to_string() } else { known.join(", ") });
    }
    Ok(out)
}

impl AnyParams {
    /// Paper defaults for `net`, then `overrides` (name → value) applied one
    /// by one; an unknown name or an out-of-range value is an error naming it.
    pub fn build(kind: CcKind, net: &NetConfig, overrides: &BTreeMap<String, u64>) -> Result<Self> {
        net.validate().map_err(|e| anyhow::anyhow!("network: {e}"))?;
        let mut p = AnyParams::from_net(kind, net);
        for (name, &value) in overrides {
            if let Err(e) = p.set(name, value) {
                if e.name == "(unknown)" {
                    bail!("{}: unknown parameter {name:?} (known: {})", kind.name(), p.names().join(", "));
                }
                bail!("{}: {e}", kind.name());
            }
        }
        Ok(p)
    }
}
