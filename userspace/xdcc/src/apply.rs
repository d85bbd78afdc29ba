//! `xdcc apply`: make the running system match the configuration file's
//! CCs (`[cc.<name>]` sections, [`crate::ccconfig`]) — registered with their
//! backend, their network and tunables written, the default CC set —
//! idempotently, writing only what differs; `--check` reports the drift and
//! changes nothing. Applying: register what is missing, write the network if
//! it differs (which re-derives every tunable, as a write of `net_*` does),
//! then every tunable that still differs, then the default; each change is
//! printed.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use xdcc_algo::{with_cc, NetConfig};

use crate::ccconfig::{Backend, Desired, NET_KNOBS, PACING};
use crate::failure::bad_value;

/// One difference between the system and the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Register { cc: String, backend: Backend },
    Set { cc: String, name: String, from: Option<u64>, to: u64 },
    Default { from: String, to: String },
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Register { cc, backend: Backend::Bpf } => write!(f, "register {cc} (BPF struct_ops)"),
            Change::Register { cc, backend: Backend::Module } => write!(f, "register {cc} (module tcp_{cc})"),
            Change::Set { cc, name, from: Some(a), to } => write!(f, "{cc}.{name} {a} -> {to}"),
            Change::Set { cc, name, from: None, to } => write!(f, "{cc}.{name} = {to}"),
            Change::Default { from, to } => write!(f, "default CC {from} -> {to}"),
        }
    }
}

/// The tunables that differ from `current` (all of them if the CC is not
/// registered). If the network differs, writing it re-derives the
/// algorithm's tunables from the papers' rules, so those are compared with
/// the re-derived values (`after_net`), not the current ones.
pub fn tunable_changes(d: &Desired, current: Option<&BTreeMap<String, u64>>, after_net: &BTreeMap<String, u64>) -> Vec<Change> {
    let set = |name: &str, from: Option<u64>, to: u64| Change::Set { cc: d.registered.clone(), name: name.into(), from, to };
    let Some(cur) = current else {
        return d.values.iter().map(|(k, v)| set(k, None, *v)).collect();
    };
    let net_differs = NET_KNOBS.iter().any(|k| cur.get(*k) != d.values.get(*k));
    let mut out: Vec<Change> =
        NET_KNOBS.iter().filter(|k| net_differs && cur.get(**k) != d.values.get(**k)).map(|k| set(k, cur.get(*k).copied(), d.values[*k])).collect();
    for (k, v) in &d.values {
        if NET_KNOBS.contains(&k.as_str()) {
            continue;
        }
        let now = if net_differs && !PACING.contains(&k.as_str()) { after_net.get(k) } else { cur.get(k) };
        if now != Some(v) {
            out.push(set(k, cur.get(k).copied(), *v));
        }
    }
    out
}

/// The algorithm's tunables right after its network is written: the papers'
/// rules for it.
fn rederived(d: &Desired) -> BTreeMap<String, u64> {
    let net = NetConfig::from_knobs(NET_KNOBS.map(|k| d.values[k]));
    with_cc!(d.algo, |C, P| {
        let p = P::from_net(&net);
        P::TUNABLES.iter().map(|t| (t.to_string(), p.get(t).unwrap_or(0))).collect()
    }, _ => BTreeMap::new())
}

fn is_registered(d: &Desired) -> bool {
    crate::kernel::read_sysctl("net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().any(|c| c == d.registered))
        .unwrap_or(false)
}

fn current_values(d: &Desired) -> Result<BTreeMap<String, u64>> {
    Ok(crate::tunables::tunable_list(&d.registered)?.into_iter().collect())
}

/// Applies the file (or with `check_only` only reports): returns the
/// changes made (or that would be made).
pub fn apply(default_cc: Option<&str>, desired: &[Desired], check_only: bool) -> Result<Vec<Change>> {
    let mut done = Vec::new();
    for d in desired {
        let registered = is_registered(d);
        if !registered {
            done.push(Change::Register { cc: d.registered.clone(), backend: d.backend });
            if check_only {
                continue; // (its every tunable would be written after)
            }
            match d.backend {
                Backend::Bpf => {
                    crate::bpfcc::load(d.algo, false).with_context(|| format!("registering {}", d.registered))?;
                }
                Backend::Module => {
                    crate::kernel::module_load(d.algo).with_context(|| format!("registering {}", d.registered))?;
                }
            }
            done.pop();
            done.push(Change::Register { cc: d.registered.clone(), backend: d.backend });
        }
        let cur = current_values(d)?;
        let changes = tunable_changes(d, Some(&cur), &rederived(d));
        if !check_only {
            write_net(d, &changes)?;
            for c in &changes {
                if let Change::Set { name, to, .. } = c {
                    if !NET_KNOBS.contains(&name.as_str()) {
                        crate::tunables::tunable_set(&d.registered, name, &to.to_string())
                            .with_context(|| format!("setting {}.{name} (the changes before it were made)", d.registered))?;
                    }
                }
            }
        }
        done.extend(changes);
    }
    if let Some(want) = default_cc {
        let now = crate::kernel::read_sysctl(crate::kernel::DEFAULT_CC)?;
        if now != want {
            let ch = Change::Default { from: now, to: want.to_string() };
            if !check_only {
                crate::kernel::cc_set(want).with_context(|| format!("setting the default CC to {want}"))?;
            }
            done.push(ch);
        }
    }
    Ok(done)
}

/// Writes the network knobs among `changes`: each write is validated as a
/// set (intra ≤ inter, ...), so a move across the old values may need the
/// other order; two passes find one.
fn write_net(d: &Desired, changes: &[Change]) -> Result<()> {
    let mut todo: Vec<(&str, u64)> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Set { name, to, .. } if NET_KNOBS.contains(&name.as_str()) => Some((name.as_str(), *to)),
            _ => None,
        })
        .collect();
    for pass in 0..2 {
        let mut left = Vec::new();
        for (k, v) in todo {
            if let Err(e) = crate::tunables::tunable_set(&d.registered, k, &v.to_string()) {
                if pass == 1 {
                    return Err(e.context(format!("writing {}.{k} = {v}", d.registered)));
                }
                left.push((k, v));
            }
        }
        todo = left;
        if todo.is_empty() {
            break;
        }
    }
    Ok(())
}

/// Reads the file for `apply`: the agent's, with its `[cc.*]` sections.
pub fn load(path: &std::path::Path) -> Result<crate::config::AgentConfig> {
    if !path.exists() {
        bail!(bad_value(format!("no configuration file {} (xdcc apply --config FILE)", path.display())));
    }
    crate::config::AgentConfig::load(path).map_err(|e| bad_value(format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ccconfig::{desired_all, tests::cfg};

    #[test]
    fn only_what_differs_is_written_and_a_new_network_rederives_first() {
        let d = desired_all(&cfg("[cc.uno.net]\nlink_rate_mbps = 1000\n[cc.uno.tunables]\nk_bytes = 30000\n")).unwrap().remove(0);
        let after = rederived(&d);
        // The system already as the file says: nothing.
        assert!(tunable_changes(&d, Some(&d.values), &after).is_empty());
        // One tunable changed by hand: that one, from its value.
        let mut cur = d.values.clone();
        cur.insert("ai_bdp_ppm".into(), 5);
        assert_eq!(
            tunable_changes(&d, Some(&cur), &after),
            [Change::Set { cc: "bpf_uno".into(), name: "ai_bdp_ppm".into(), from: Some(5), to: d.values["ai_bdp_ppm"] }]
        );
        // Another network: the network, then what the papers' rules for it
        // do not already give (k_bytes), not every tunable.
        cur = d.values.clone();
        cur.insert("net_link_rate_mbps".into(), 10_000);
        let ch = tunable_changes(&d, Some(&cur), &after);
        let names: Vec<&str> = ch.iter().map(|c| match c { Change::Set { name, .. } => name.as_str(), _ => "" }).collect();
        assert_eq!(names, ["net_link_rate_mbps", "k_bytes"]);
        // Not registered: everything.
        assert_eq!(tunable_changes(&d, None, &after).len(), d.values.len());
    }
}
