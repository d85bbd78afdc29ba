//! Every xdcc CC's tunables, whichever backend runs it: a module's sysctl
//! files under /proc/sys/net/xdcc/<cc>/ or a BPF CC's configuration map,
//! both validated with the algorithm crate's own `Params` (`linux::Config`)
//! before anything is written; and the presets, written through the same
//! path. The layer above [`crate::kernel`] and [`crate::bpfcc`].

use std::{fs, path::PathBuf};

use crate::bpfcc::ConfigMap;
use crate::failure::{bad_value, kernel_refused};
use crate::kernel::{sysctl_root, xdcc_ccs};
use anyhow::{anyhow, bail, Context, Result};
use xdcc_algo::{linux, with_cc, NetConfig, Tunables};

fn cc_dir(cc: &str) -> Result<PathBuf> {
    let Some((_, m)) = xdcc_ccs().find(|(c, _)| *c == cc) else {
        return Err(bad_value(format!(
            "unknown congestion control `{cc}` (xdcc CCs with tunables: {}, and bpf_<cc> for the BPF versions)",
            xdcc_ccs().map(|(c, _)| c).collect::<Vec<_>>().join(", ")
        )));
    };
    let dir = sysctl_root().join("net/xdcc").join(cc);
    if !dir.is_dir() {
        bail!("{} does not exist: module {m} is not loaded (xdcc module load {m})", dir.display());
    }
    Ok(dir)
}

/// A module's sysctl files (`linux::Config::knob_names`, as glue.rs makes them).
fn tunable_names(cc: &str) -> Vec<&'static str> {
    with_cc!(cc, |C, P| linux::Config::<P>::knob_names().collect(), _ => Vec::new())
}

/// Where a CC's knobs live: a module's sysctl files or a BPF CC's
/// configuration map. Both hold a `linux::Config` and change it by
/// `linux::Config::set`; a store only reads and writes values.
pub enum TunableStore {
    Module(SysctlFiles),
    Bpf(ConfigMap),
}

impl TunableStore {
    /// The store of `cc`: `bpf_<cc>`'s map or module `tcp_<cc>`'s sysctl
    /// files (the one place that tells the two backends apart).
    pub fn open(cc: &str) -> Result<Self> {
        if cc.starts_with("bpf_") {
            return Ok(TunableStore::Bpf(ConfigMap::open(cc)?));
        }
        Ok(TunableStore::Module(SysctlFiles { cc: cc.to_string(), dir: cc_dir(cc)? }))
    }

    /// Every knob with its current value (`linux::Config::knob_names` order).
    pub fn list(&self) -> Result<Vec<(String, u64)>> {
        match self {
            TunableStore::Module(s) => s.list(),
            TunableStore::Bpf(m) => m.list(),
        }
    }

    /// `name = value`, validated against the current set first; on any
    /// error nothing changes.
    pub fn set(&self, name: &str, value: u64) -> Result<()> {
        match self {
            TunableStore::Module(s) => s.set(name, value),
            TunableStore::Bpf(m) => m.set(name, value),
        }
    }
}

/// A loaded module's `/proc/sys/net/xdcc/<cc>/`.
pub struct SysctlFiles {
    cc: String,
    dir: PathBuf,
}

impl SysctlFiles {
    pub fn list(&self) -> Result<Vec<(String, u64)>> {
        tunable_names(&self.cc)
            .into_iter()
            .map(|n| {
                let p = self.dir.join(n);
                let v = fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
                let v = v.trim().parse().with_context(|| format!("{}: not a number", p.display()))?;
                Ok((n.to_string(), v))
            })
            .collect()
    }

    pub fn set(&self, name: &str, value: u64) -> Result<()> {
        let (cc, current) = (self.cc.as_str(), self.list()?);
        if !current.iter().any(|(n, _)| n == name) {
            return Err(unknown_tunable(cc, name, &current));
        }
        with_cc!(cc, |C, P| check::<P>(&current, name, value)?, _ => unreachable!("cc_dir accepted it"));
        let p = self.dir.join(name);
        fs::write(&p, value.to_string()).map_err(|e| match e.raw_os_error() {
            Some(22) => kernel_refused(format!("the kernel rejected {cc}.{name} = {value} (EINVAL); nothing changed")),
            _ => anyhow!("writing {}: {e}", p.display()),
        })
    }
}

/// Every tunable of a loaded CC (module or `bpf_<cc>`) with its current value.
pub fn tunable_list(cc: &str) -> Result<Vec<(String, u64)>> {
    TunableStore::open(cc)?.list()
}

pub fn tunable_get(cc: &str, name: &str) -> Result<u64> {
    let all = tunable_list(cc)?;
    all.iter().find(|(n, _)| n == name).map(|(_, v)| *v).ok_or_else(|| unknown_tunable(cc, name, &all))
}

fn unknown_tunable(cc: &str, name: &str, known: &[(String, u64)]) -> anyhow::Error {
    let names: Vec<&str> = known.iter().map(|(n, _)| n.as_str()).collect();
    bad_value(format!("`{name}` is not a tunable of {cc} (known: {})", names.join(", ")))
}

/// The module's configuration from its files' values (missing network or
/// pacing values: the defaults).
fn config_of<P: Tunables>(current: &[(String, u64)]) -> linux::Config<P> {
    let get = |n: &str| current.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
    let mut c = linux::Config::<P>::for_net(&NetConfig::LINUX_DEFAULT);
    if let [Some(r), Some(a), Some(e), Some(m)] = NetConfig::KNOBS.map(get) {
        c = linux::Config::for_net(&NetConfig::from_knobs([r, a, e, m]));
    }
    for (k, v) in current {
        if P::TUNABLES.contains(&k.as_str()) {
            // a copy of the module's set; unchecked because it is consistent
            // as a whole, not after each single value
            let _ = c.params.set_unchecked(k, *v);
        }
    }
    let pacing = linux::Pacing::KNOBS.map(get);
    c.pacing.ca_pct = pacing[0].map_or(c.pacing.ca_pct, |v| v as u32);
    c.pacing.ss_pct = pacing[1].map_or(c.pacing.ss_pct, |v| v as u32);
    c
}

/// Checks a new value against the module's current set by the rule the
/// module applies (`linux::Config::set`).
fn check<P: Tunables>(current: &[(String, u64)], name: &str, value: u64) -> Result<()> {
    config_of::<P>(current).set(name, value).map(|_| ()).map_err(|e| bad_value(format!("{name} = {value} rejected: {e}")))
}

/// Validates, then writes. On a validation error nothing is written; if the
/// kernel still refuses (EINVAL), its value is unchanged too.
pub fn tunable_set(cc: &str, name: &str, value: &str) -> Result<u64> {
    let value: u64 = value
        .trim()
        .parse()
        .map_err(|_| bad_value(format!("`{value}` is not a non-negative integer (units are in the name: _ns, _bytes, _q16, ...)")))?;
    TunableStore::open(cc)?.set(name, value)?;
    Ok(value)
}

/// The presets of a CC (`uno`, `bpf_uno`): (CC, name, description).
pub fn presets_of(cc: &str) -> Result<Vec<(&'static str, &'static str, &'static str)>> {
    let algo = cc.strip_prefix("bpf_").unwrap_or(cc);
    let v: Vec<_> = xdcc_algo::presets::PRESETS.iter().copied().filter(|p| p.0 == algo).collect();
    if v.is_empty() {
        let ccs: Vec<&str> = xdcc_algo::presets::PRESETS.iter().map(|p| p.0).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
        return Err(bad_value(format!("{cc} has no presets (presets exist for {})", ccs.join(", "))));
    }
    Ok(v)
}

/// The preset's tunables for this CC's current network (its `net_*`
/// tunables; the CC's defaults when it has none), checked together against
/// the current set before anything is written: a bad name, or a preset that
/// does not fit the network, changes nothing. "paper" puts what the other
/// presets change back to the paper's defaults. Returns what changed.
pub fn tunable_preset(cc: &str, name: &str) -> Result<Vec<(String, u64)>> {
    let algo = cc.strip_prefix("bpf_").unwrap_or(cc);
    let known = presets_of(cc)?;
    if !known.iter().any(|p| p.1 == name) {
        return Err(bad_value(format!(
            "{cc} has no preset `{name}` (known: {})",
            known.iter().map(|p| p.1).collect::<Vec<_>>().join(", ")
        )));
    }
    let current = tunable_list(cc)?;
    let get = |n: &str| current.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
    let values: Vec<(String, u64)> = with_cc!(algo, |C, P| {
        // The current set with the preset's values on top, validated whole.
        let current = config_of::<P>(&current);
        let (net, mut p) = (current.net, current.params);
        let mut err = None;
        xdcc_algo::presets::for_each_preset_tunable(algo, name, &net, |k, v| {
            if let Err(e) = p.set_unchecked(k, v) {
                err.get_or_insert(e);
            }
        });
        if let Some(e) = err {
            return Err(bad_value(e));
        }
        p.validate().map_err(|e| bad_value(format!("preset {name} does not fit this network: {e}")))?;
        P::TUNABLES.iter().map(|n| (n.to_string(), p.get(n).unwrap_or(0))).collect()
    }, _ => return Err(bad_value(format!("{cc}: not an xdcc CC"))));
    // Only what differs is written (the rest already holds those values).
    let changes: Vec<(String, u64)> = values.into_iter().filter(|(k, v)| get(k) != Some(*v)).collect();
    for (k, v) in &changes {
        tunable_set(cc, k, &v.to_string()).with_context(|| format!("preset {name}: setting {k} (the values before it were written)"))?;
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdcc_algo::uno;

    fn current_uno() -> Vec<(String, u64)> {
        let p = uno::Params::from_net(&NetConfig::GEMINI_TESTBED);
        let mut v: Vec<(String, u64)> =
            uno::Params::TUNABLES.iter().map(|n| (n.to_string(), p.get(n).unwrap())).collect();
        v.extend([("net_link_rate_mbps", 1000), ("net_intra_rtt_us", 200), ("net_inter_rtt_us", 10000), ("net_mtu", 1500)]
            .map(|(k, v)| (k.to_string(), v)));
        v
    }

    #[test]
    fn validation_matches_the_algorithm_crate() {
        let cur = current_uno();
        assert!(check::<uno::Params>(&cur, "k_bytes", 30_000).is_ok());
        let e = check::<uno::Params>(&cur, "qa_beta_q16", 10_000_000).unwrap_err().to_string();
        assert!(e.contains("qa_beta_q16"), "{e}");
        assert!(check::<uno::Params>(&cur, "net_mtu", 10).unwrap_err().to_string().contains("mtu"));
        assert!(check::<uno::Params>(&cur, "net_inter_rtt_us", 100).is_err(), "inter < intra");
        assert!(check::<uno::Params>(&cur, "window_pacing_pct", 1001).is_err());
        assert!(check::<uno::Params>(&cur, "window_pacing_pct", 120).is_ok());
    }

    #[test]
    fn every_cc_lists_its_params_and_the_net_knobs() {
        for (cc, _) in xdcc_ccs() {
            let names = tunable_names(cc);
            assert!(names.contains(&"net_mtu") && names.contains(&"window_pacing_pct"));
            assert!(names.len() > 6, "{cc}");
        }
    }
}
