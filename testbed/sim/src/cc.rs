//! Dispatch over the algorithm files of `xdcc-algo`, unchanged: the simulator
//! drives exactly the code the kernel modules run.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use xdcc_algo::{amrt, gemini, oscar, smartt, uno, AckSample, CongestionControl, Event, FlowInit, NetConfig};

/// Which algorithm a flow runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CcKind {
    Uno,
    Gemini,
    Oscar,
    Smartt,
    Amrt,
}

impl CcKind {
    pub const ALL: [CcKind; 5] = [CcKind::Uno, CcKind::Gemini, CcKind::Oscar, CcKind::Smartt, CcKind::Amrt];

    pub fn name(self) -> &'static str {
        match self {
            CcKind::Uno => uno::Uno::NAME,
            CcKind::Gemini => gemini::Gemini::NAME,
            CcKind::Oscar => oscar::Oscar::NAME,
            CcKind::Smartt => smartt::Smartt::NAME,
            CcKind::Amrt => amrt::Amrt::NAME,
        }
    }

    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| anyhow::anyhow!("unknown congestion control {s:?} (known: uno, gemini, oscar, smartt, amrt)"))
    }
}

/// Tunables of one algorithm, derived from the network and overridden by name.
#[derive(Clone, Copy, Debug)]
pub enum AnyParams {
    Uno(uno::Params),
    Gemini(gemini::Params),
    Oscar(oscar::Params),
    Smartt(smartt::Params),
    Amrt(amrt::Params),
}

impl AnyParams {
    /// Paper defaults for `net`, then `overrides` (name → value) applied one
    /// by one; an unknown name or an out-of-range value is an error naming it.
    pub fn build(kind: CcKind, net: &NetConfig, overrides: &BTreeMap<String, u64>) -> Result<Self> {
        net.validate().map_err(|e| anyhow::anyhow!("network: {e}"))?;
        let mut p = match kind {
            CcKind::Uno => AnyParams::Uno(uno::Params::from_net(net)),
            CcKind::Gemini => AnyParams::Gemini(gemini::Params::from_net(net)),
            CcKind::Oscar => AnyParams::Oscar(oscar::Params::from_net(net)),
            CcKind::Smartt => AnyParams::Smartt(smartt::Params::from_net(net)),
            CcKind::Amrt => AnyParams::Amrt(amrt::Params::from_net(net)),
        };
        for (name, &value) in overrides {
            let r = match &mut p {
                AnyParams::Uno(p) => p.set(name, value),
                AnyParams::Gemini(p) => p.set(name, value),
                AnyParams::Oscar(p) => p.set(name, value),
                AnyParams::Smartt(p) => p.set(name, value),
                AnyParams::Amrt(p) => p.set(name, value),
            };
            if let Err(e) = r {
                if e.name == "(unknown)" {
                    bail!("{}: unknown parameter {name:?} (known: {})", kind.name(), p.names().join(", "));
                }
                bail!("{}: {e}", kind.name());
            }
        }
        Ok(p)
    }

    pub fn names(&self) -> &'static [&'static str] {
        match self {
            AnyParams::Uno(_) => uno::Params::TUNABLES,
            AnyParams::Gemini(_) => gemini::Params::TUNABLES,
            AnyParams::Oscar(_) => oscar::Params::TUNABLES,
            AnyParams::Smartt(_) => smartt::Params::TUNABLES,
            AnyParams::Amrt(_) => amrt::Params::TUNABLES,
        }
    }

    pub fn get(&self, name: &str) -> Option<u64> {
        match self {
            AnyParams::Uno(p) => p.get(name),
            AnyParams::Gemini(p) => p.get(name),
            AnyParams::Oscar(p) => p.get(name),
            AnyParams::Smartt(p) => p.get(name),
            AnyParams::Amrt(p) => p.get(name),
        }
    }
}

/// One flow's algorithm state.
#[derive(Clone, Copy, Debug)]
pub enum AnyCc {
    Uno(uno::Uno),
    Gemini(gemini::Gemini),
    Oscar(oscar::Oscar),
    Smartt(smartt::Smartt),
    Amrt(amrt::Amrt),
}

macro_rules! each {
    ($self:expr, $p:expr, |$s:ident, $q:ident| $body:expr) => {
        match ($self, $p) {
            (AnyCc::Uno($s), AnyParams::Uno($q)) => $body,
            (AnyCc::Gemini($s), AnyParams::Gemini($q)) => $body,
            (AnyCc::Oscar($s), AnyParams::Oscar($q)) => $body,
            (AnyCc::Smartt($s), AnyParams::Smartt($q)) => $body,
            (AnyCc::Amrt($s), AnyParams::Amrt($q)) => $body,
            _ => unreachable!("flow state and parameters of different algorithms"),
        }
    };
}

impl AnyCc {
    pub fn new(p: &AnyParams, init: &FlowInit) -> Self {
        match p {
            AnyParams::Uno(p) => AnyCc::Uno(uno::Uno::new(p, init)),
            AnyParams::Gemini(p) => AnyCc::Gemini(gemini::Gemini::new(p, init)),
            AnyParams::Oscar(p) => AnyCc::Oscar(oscar::Oscar::new(p, init)),
            AnyParams::Smartt(p) => AnyCc::Smartt(smartt::Smartt::new(p, init)),
            AnyParams::Amrt(p) => AnyCc::Amrt(amrt::Amrt::new(p, init)),
        }
    }

    #[inline]
    pub fn on_ack(&mut self, p: &AnyParams, s: &AckSample) {
        each!(self, p, |c, q| c.on_ack(q, s))
    }

    pub fn on_event(&mut self, p: &AnyParams, e: Event, now: u64) {
        each!(self, p, |c, q| c.on_event(q, e, now))
    }

    #[inline]
    pub fn cwnd(&self) -> u32 {
        match self {
            AnyCc::Uno(c) => c.cwnd(),
            AnyCc::Gemini(c) => c.cwnd(),
            AnyCc::Oscar(c) => c.cwnd(),
            AnyCc::Smartt(c) => c.cwnd(),
            AnyCc::Amrt(c) => c.cwnd(),
        }
    }

    #[inline]
    pub fn pacing_rate(&self) -> Option<u64> {
        match self {
            AnyCc::Uno(c) => c.pacing_rate(),
            AnyCc::Gemini(c) => c.pacing_rate(),
            AnyCc::Oscar(c) => c.pacing_rate(),
            AnyCc::Smartt(c) => c.pacing_rate(),
            AnyCc::Amrt(c) => c.pacing_rate(),
        }
    }
}
