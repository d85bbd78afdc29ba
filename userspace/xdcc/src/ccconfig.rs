//! The configuration file's `[cc.<name>]` sections and what each asks of the
//! kernel ([`Desired`]), which `xdcc apply` ([`crate::apply`]) makes true:
//!
//! ```toml
//! default_cc = "bpf_uno"            # net.ipv4.tcp_congestion_control (optional)
//! [cc.uno]
//! backend = "bpf"                   # "bpf" (bpf_uno, the default) or "module" (tcp_uno)
//! preset = "paper"                  # optional: xdcc tunable preset uno
//! [cc.uno.net]                      # the network (every key optional; the
//! link_rate_mbps = 100000           #  default is the modules' own: 10 Gbit/s,
//! intra_rtt_us = 14                 #  100 µs, 10 ms, 1500 bytes)
//! inter_rtt_us = 2000
//! mtu = 4096
//! [cc.uno.tunables]                 # optional: any tunable of xdcc tunable list
//! k_bytes = 30000
//! window_pacing_pct = 100
//! ```
//! The file is the agent's (`config.rs`): one file, one error naming its
//! line. The desired values of a CC are the papers' rules for its network
//! (`Params::from_net`), then the preset, then `tunables`, validated as one
//! set before anything is touched: a bad file changes nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use xdcc_algo::{with_cc, NetConfig};

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The BPF struct_ops CC `bpf_<cc>` (stock kernels).
    #[default]
    Bpf,
    /// The kernel module `tcp_<cc>`.
    Module,
}

/// The network a CC is told (`net_*` tunables).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NetSection {
    pub link_rate_mbps: Option<u64>,
    pub intra_rtt_us: Option<u64>,
    pub inter_rtt_us: Option<u64>,
    pub mtu: Option<u64>,
}

/// One `[cc.<name>]` section.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CcConfig {
    #[serde(default)]
    pub backend: Backend,
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub net: NetSection,
    #[serde(default)]
    pub tunables: BTreeMap<String, u64>,
}

pub(crate) const NET_KNOBS: [&str; 4] = NetConfig::KNOBS;
pub(crate) const PACING: [&str; 2] = xdcc_algo::linux::Pacing::KNOBS;

/// What one CC should look like in the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    /// `uno`: the algorithm.
    pub algo: &'static str,
    /// `bpf_uno` or `uno`: the registered name.
    pub registered: String,
    pub backend: Backend,
    /// Every tunable: `net_*`, window pacing and the algorithm's.
    pub values: BTreeMap<String, u64>,
}

impl CcConfig {
    /// The desired state of CC `name`, or why the section is wrong as
    /// (key, message) — the key for the error's line.
    pub fn desired(&self, name: &str) -> Result<Desired, (String, String)> {
        let spec = xdcc_algo::CCS.iter().find(|c| c.name == name).ok_or_else(|| {
            let known: Vec<&str> = xdcc_algo::CCS.iter().map(|c| c.name).collect();
            (String::new(), format!("[cc.{name}]: not an xdcc CC (known: {})", known.join(", ")))
        })?;
        let d = NetConfig::LINUX_DEFAULT.knobs();
        let n = &self.net;
        let net_values = [
            n.link_rate_mbps.unwrap_or(d[0]),
            n.intra_rtt_us.unwrap_or(d[1]),
            n.inter_rtt_us.unwrap_or(d[2]),
            n.mtu.unwrap_or(d[3]),
        ];
        let net = NetConfig::from_knobs(net_values);
        net.validate().map_err(|e| ("link_rate_mbps".to_string(), format!("[cc.{name}.net]: {e}")))?;
        let mut values: BTreeMap<String, u64> = NET_KNOBS.iter().map(|k| k.to_string()).zip(net_values).collect();
        let default_pacing = xdcc_algo::linux::Pacing::DEFAULT;
        for (k, v) in PACING.into_iter().zip([default_pacing.ca_pct, default_pacing.ss_pct]) {
            let v = self.tunables.get(k).copied().unwrap_or(v as u64);
            xdcc_algo::linux::validate_pacing_pct(k, v).map_err(|e| (k.to_string(), format!("[cc.{name}.tunables]: {e}")))?;
            values.insert(k.to_string(), v);
        }
        let algo = spec.name;
        let params: Vec<(String, u64)> = with_cc!(algo, |C, P| {
            let mut p = P::from_net(&net);
            if let Some(preset) = &self.preset {
                let mut err = None;
                let known = xdcc_algo::presets::for_each_preset_tunable(algo, preset, &net, |k, v| {
                    if let Err(e) = p.set_unchecked(k, v) {
                        err.get_or_insert(e);
                    }
                });
                if !known {
                    let names: Vec<&str> =
                        xdcc_algo::presets::PRESETS.iter().filter(|x| x.0 == algo).map(|x| x.1).collect();
                    return Err(("preset".into(), format!("[cc.{name}]: no preset `{preset}` for {name} (known: {})", if names.is_empty() { "none".into() } else { names.join(", ") })));
                }
                if let Some(e) = err {
                    return Err(("preset".into(), format!("[cc.{name}]: preset {preset}: {e}")));
                }
            }
            for (k, v) in &self.tunables {
                if PACING.contains(&k.as_str()) {
                    continue;
                }
                if NET_KNOBS.contains(&k.as_str()) {
                    return Err((k.clone(), format!("[cc.{name}.tunables]: {k} belongs in [cc.{name}.net] (without net_)")));
                }
                if !P::TUNABLES.contains(&k.as_str()) {
                    return Err((k.clone(), format!("[cc.{name}.tunables]: `{k}` is not a tunable of {name} (known: {})", P::TUNABLES.join(", "))));
                }
                p.set_unchecked(k, *v).map_err(|e| (k.clone(), format!("[cc.{name}.tunables]: {e}")))?;
            }
            p.validate().map_err(|e| (e.name.to_string(), format!("[cc.{name}]: {e}")))?;
            P::TUNABLES.iter().map(|t| (t.to_string(), p.get(t).unwrap_or(0))).collect()
        }, _ => unreachable!("a name of CCS"));
        values.extend(params);
        let registered = match self.backend {
            Backend::Bpf => format!("bpf_{algo}"),
            Backend::Module => algo.to_string(),
        };
        Ok(Desired { algo, registered, backend: self.backend, values })
    }
}

/// Every CC's desired state, from a parsed file (its errors already carry
/// lines: `AgentConfig::parse` calls this).
pub fn desired_all(ccs: &BTreeMap<String, CcConfig>) -> Result<Vec<Desired>, (String, String, String)> {
    ccs.iter().map(|(name, c)| c.desired(name).map_err(|(k, m)| (name.clone(), k, m))).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The `[cc.*]` sections of a TOML text.
    pub(crate) fn cfg(toml: &str) -> BTreeMap<String, CcConfig> {
        #[derive(Deserialize)]
        struct F {
            cc: BTreeMap<String, CcConfig>,
        }
        toml::from_str::<F>(toml).unwrap().cc
    }

    #[test]
    fn the_desired_set_is_the_papers_rules_then_preset_then_tunables() {
        let c = cfg("[cc.uno]\npreset = \"uno-artifact\"\n[cc.uno.net]\nlink_rate_mbps = 100000\nintra_rtt_us = 14\ninter_rtt_us = 2000\nmtu = 4096\n[cc.uno.tunables]\nk_bytes = 30000\nwindow_pacing_pct = 120\n");
        let d = desired_all(&c).unwrap().remove(0);
        assert_eq!((d.algo, d.registered.as_str(), d.backend), ("uno", "bpf_uno", Backend::Bpf));
        assert_eq!(d.values["net_link_rate_mbps"], 100_000);
        assert_eq!(d.values["k_bytes"], 30_000, "tunables last");
        assert_eq!(d.values["window_pacing_pct"], 120);
        assert_eq!(d.values["window_pacing_ss_pct"], 200, "the adapter's default");
        let mut p = xdcc_algo::uno::Params::from_net(&NetConfig::UNO_PAPER);
        xdcc_algo::presets::for_each_preset_tunable("uno", "uno-artifact", &NetConfig::UNO_PAPER, |k, v| {
            p.set_unchecked(k, v).unwrap();
        });
        assert_eq!(d.values["aimd_phantom"], p.get("aimd_phantom").unwrap(), "the preset");
        // A module backend registers the plain name.
        let m = desired_all(&cfg("[cc.gemini]\nbackend = \"module\"\n")).unwrap().remove(0);
        assert_eq!(m.registered, "gemini");
        assert_eq!(m.values["net_link_rate_mbps"], 10_000, "the modules' default network");
    }

    #[test]
    fn a_bad_section_is_refused_with_the_key() {
        for (toml, key, word) in [
            ("[cc.nosuch]\n", "", "not an xdcc CC"),
            ("[cc.uno]\npreset = \"fast\"\n", "preset", "no preset `fast`"),
            ("[cc.smartt]\npreset = \"paper\"\n", "preset", "known: none"),
            ("[cc.uno.tunables]\nbogus = 1\n", "bogus", "not a tunable of uno"),
            ("[cc.uno.tunables]\nqa_beta_q16 = 99999999\n", "qa_beta_q16", "qa_beta_q16"),
            ("[cc.uno.tunables]\nnet_mtu = 9000\n", "net_mtu", "belongs in [cc.uno.net]"),
            ("[cc.uno.tunables]\nwindow_pacing_pct = 5000\n", "window_pacing_pct", "window_pacing_pct"),
            ("[cc.uno.net]\nintra_rtt_us = 20000\ninter_rtt_us = 100\n", "link_rate_mbps", "intra"),
        ] {
            let (_, k, m) = desired_all(&cfg(toml)).unwrap_err();
            assert_eq!(k, key, "{toml}: {m}");
            assert!(m.contains(word), "{toml}: {m}");
        }
    }
}
