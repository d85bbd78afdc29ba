//! The agent's configuration file (TOML) and the rerouter's settings.
//!
//! ```toml
//! cgroup = "/sys/fs/cgroup"          # cgroup2 whose sockets are tracked
//! interfaces = ["eth0"]              # TCX telemetry (+ flow labels) here
//! socket = "/run/xdcc/agent.sock"    # root-only control socket
//! metrics = "127.0.0.1:9877"         # Prometheus text; omit to disable
//! retain_closed_secs = 300           # closed flows stay visible this long
//! max_closed_flows = 25000           # ... but at most this many, the oldest go first
//! max_open_flows = 65536             # flows tracked at once (kernel flow table)
//! [reroute]
//! enabled = true
//! congested_ecn_pct = 50             # a round is congested at >= 50 % ECE
//! congested_rounds = 12              # PLB's M (Linux's tcp_plb_rehash_rounds)
//! lossy_rounds = 2                   # rounds with retransmissions
//! on_rto = true
//! paths = 8                          # path ids 0..paths
//! min_interval_base_rtts = 1         # at most one move per base RTT
//! healthy_window_ms = 1000
//! spread_subflows = true
//! ```
//! plus what `xdcc apply` makes of the system: `default_cc` and one
//! `[cc.<name>]` section per CC (`apply.rs`). Every error names the line of
//! the offending key.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use xdcc_common::{Config as BpfConfig, PATHS};

pub const DEFAULT_SOCKET: &str = "/run/xdcc/agent.sock";
pub const DEFAULT_CGROUP: &str = "/sys/fs/cgroup";
pub const DEFAULT_METRICS: &str = "127.0.0.1:9877";
/// How many closed flows' records the agent keeps at most (`max_closed_flows`).
/// A record costs ~1.8 kB of RSS (`agent::tests::closed_flows_memory`), so
/// 25,000 bound them at ~45 MB whatever the churn (a scrape of them all
/// raises the peak to ~85 MB), where 40,000 cost 79 MB before the
/// cap. It still holds twice the burst the CLOSED ring buffer absorbs
/// (~13,000 records) and the 20,000 connections in 2 s that
/// `userspace/tests/netns.sh churn` checks are all visible; at 300 s of
/// retention it keeps every closed flow of a host closing up to ~80
/// connections a second (beyond, the oldest go first and are counted).
pub const DEFAULT_MAX_CLOSED_FLOWS: u64 = 25_000;
/// The largest `max_closed_flows` accepted (~1.8 GB of records).
pub const MAX_CLOSED_FLOWS_LIMIT: u64 = 1_000_000;
/// How many open flows the kernel's flow table holds (`max_open_flows`): an
/// entry costs ~0.7 kB of kernel memory (a 40-byte key, a 584-byte
/// `FlowStats`, the LRU's node), so 65,536 take ~44 MB. A table that is too
/// small evicts open flows (LRU) and loses their records, counted as
/// `open_flows_evicted`: the 16,384 of the first agents lost 3,425 of 20,000
/// connections that a slowed host held open at once
/// (`userspace/tests/netns.sh churn`).
pub const DEFAULT_MAX_OPEN_FLOWS: u32 = 65_536;
/// The accepted range of `max_open_flows` (the top one ~700 MB).
pub const MAX_OPEN_FLOWS_RANGE: std::ops::RangeInclusive<u32> = 1024..=1_048_576;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    pub cgroup: PathBuf,
    pub interfaces: Vec<String>,
    pub socket: PathBuf,
    pub metrics: Option<String>,
    pub retain_closed_secs: u64,
    /// At most this many closed flows are retained; beyond it the oldest
    /// (by close time) are evicted first and counted.
    pub max_closed_flows: u64,
    /// The kernel flow table holds this many open flows; beyond, the least
    /// recently active are evicted and counted (`open_flows_evicted`).
    pub max_open_flows: u32,
    pub reroute: RerouteSettings,
    /// `xdcc apply`: the default CC (net.ipv4.tcp_congestion_control).
    pub default_cc: Option<String>,
    /// `xdcc apply`: the CCs to register and configure.
    pub cc: std::collections::BTreeMap<String, crate::ccconfig::CcConfig>,
    /// The agent: the CC of new connections per peer prefix (`[[policy]]`).
    pub policy: Vec<PolicyEntry>,
}

/// One `[[policy]]` entry: connections of the tracked cgroup to or from a
/// peer in `prefix` run `cc` (the longest matching prefix wins), over one
/// path each (`lb = "ecmp"`, the rerouter's path id) or sprayed over
/// `subflows` flow-label entropies under one window (`lb = "unolb"`, IPv6).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicyEntry {
    pub prefix: String,
    pub cc: String,
    #[serde(default)]
    pub lb: PolicyLb,
    /// UnoLB's subflows (default 10, as in the Uno paper).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subflows: Option<u8>,
}

/// How a `[[policy]]` entry's connections use the network's paths.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PolicyLb {
    /// One path per connection (its IPv6 flow label is the rerouter's path id).
    #[default]
    Ecmp,
    /// Uno's load balancer: each packet on the next of `subflows` entropies.
    Unolb,
}

/// UnoLB's subflows when the entry does not say (the Uno paper's 10).
pub const DEFAULT_SUBFLOWS: u8 = 10;

impl PolicyEntry {
    /// The LPM trie key: prefix length and the address as 16 bytes (IPv4
    /// v4-mapped: an IPv4 /p is /96+p), or why the prefix is not one.
    pub fn key(&self) -> Result<(u32, [u8; 16]), String> {
        let (addr, len) = self.prefix.split_once('/').ok_or_else(|| format!("prefix `{}` has no /length", self.prefix))?;
        let ip: std::net::IpAddr = addr.parse().map_err(|_| format!("prefix `{}`: `{addr}` is not an address", self.prefix))?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let len: u32 = len.parse().ok().filter(|l| *l <= max).ok_or_else(|| format!("prefix `{}`: length must be 0..={max}", self.prefix))?;
        let (bytes, len) = match ip {
            std::net::IpAddr::V4(v4) => (v4.to_ipv6_mapped().octets(), 96 + len),
            std::net::IpAddr::V6(v6) => (v6.octets(), len),
        };
        let host_bits = u128::from_be_bytes(bytes) & (u128::MAX.checked_shr(len).unwrap_or(0));
        if host_bits != 0 {
            return Err(format!("prefix `{}` has host bits set", self.prefix));
        }
        Ok((len, bytes))
    }

    /// The map value for entry number `index` (1-based).
    pub fn value(&self, index: u32) -> xdcc_common::CcPolicy {
        let mut cc = [0u8; 16];
        cc[..self.cc.len()].copy_from_slice(self.cc.as_bytes());
        let algo = self.cc.strip_prefix("bpf_").unwrap_or(&self.cc);
        let needs_ecn = xdcc_algo::CCS.iter().any(|c| c.name == algo && c.needs_ecn) || algo == "dctcp";
        let lb_subflows = match self.lb {
            PolicyLb::Ecmp => 0,
            PolicyLb::Unolb => self.subflows.unwrap_or(DEFAULT_SUBFLOWS) as u32,
        };
        xdcc_common::CcPolicy { index, needs_ecn: needs_ecn as u32, cc, lb_subflows }
    }

    /// Why the entry's load balancing cannot be done, if it cannot.
    fn check_lb(&self) -> Result<(), String> {
        let max = xdcc_multipath::lb::MAX_SUBFLOWS;
        match (self.lb, self.subflows) {
            (PolicyLb::Ecmp, Some(_)) => Err("subflows is UnoLB's: set lb = \"unolb\" too".into()),
            (PolicyLb::Unolb, Some(n)) if n == 0 || n as usize > max => Err(format!("subflows = {n} is out of range (1..={max})")),
            (PolicyLb::Unolb, _) if self.prefix.split('/').next().is_some_and(|a| a.parse::<std::net::Ipv4Addr>().is_ok()) => {
                Err(format!("lb = \"unolb\" needs an IPv6 prefix (`{}` is IPv4: its packets have no flow label to spray on)", self.prefix))
            }
            _ => Ok(()),
        }
    }
}

impl AgentConfig {
    /// The `[[policy]]` entries as the policy map holds them: LPM key
    /// (prefix length, address) and value, numbered from 1 in file order.
    pub fn policy_entries(&self) -> Result<Vec<(u32, [u8; 16], xdcc_common::CcPolicy)>, String> {
        self.policy
            .iter()
            .zip(1..)
            .map(|(e, n)| {
                let (len, addr) = e.key().map_err(|m| format!("[[policy]] #{n}: {m}"))?;
                Ok((len, addr, e.value(n)))
            })
            .collect()
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            cgroup: DEFAULT_CGROUP.into(),
            interfaces: Vec::new(),
            socket: DEFAULT_SOCKET.into(),
            metrics: None,
            retain_closed_secs: 300,
            max_closed_flows: DEFAULT_MAX_CLOSED_FLOWS,
            max_open_flows: DEFAULT_MAX_OPEN_FLOWS,
            reroute: RerouteSettings::default(),
            default_cc: None,
            cc: Default::default(),
            policy: Vec::new(),
        }
    }
}

/// The rerouter's tunables, by the names `xdcc reroute set` and the config
/// file use.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct RerouteSettings {
    pub enabled: bool,
    pub congested_ecn_pct: u32,
    pub congested_rounds: u32,
    pub lossy_rounds: u32,
    pub on_rto: bool,
    pub paths: u32,
    pub min_interval_base_rtts: u32,
    pub healthy_window_ms: u32,
    pub spread_subflows: bool,
}

impl Default for RerouteSettings {
    fn default() -> Self {
        Self::from_bpf(&BpfConfig::DEFAULT)
    }
}

/// (name, allowed range, meaning) of every reroute setting; booleans are 0..=1.
pub const REROUTE_KEYS: &[(&str, u32, u32, &str)] = &[
    ("enabled", 0, 1, "move flows between paths (labels stay pinned to the path id when off)"),
    ("congested_ecn_pct", 1, 100, "a round is congested when at least this % of its ACKs carry ECE"),
    ("congested_rounds", 0, 1000, "move after this many consecutive congested rounds (0 = never)"),
    ("lossy_rounds", 0, 1000, "move after this many consecutive rounds with retransmissions (0 = never)"),
    ("on_rto", 0, 1, "move on a retransmission timeout"),
    ("paths", 2, PATHS, "number of path ids"),
    ("min_interval_base_rtts", 0, 1000, "at most one move per this many base RTTs"),
    ("healthy_window_ms", 1, 3_600_000, "a path a flow left on an RTO or lossy rounds this recently is avoided; one ending an uncongested round this recently counts as healthy in stats"),
    ("spread_subflows", 0, 1, "give each new connection to a peer the next path id"),
];

impl RerouteSettings {
    pub fn from_bpf(c: &BpfConfig) -> Self {
        RerouteSettings {
            enabled: c.reroute_enabled != 0,
            congested_ecn_pct: c.congested_ecn_ppm / 10_000,
            congested_rounds: c.congested_rounds,
            lossy_rounds: c.lossy_rounds,
            on_rto: c.reroute_on_rto != 0,
            paths: c.paths,
            min_interval_base_rtts: c.min_interval_base_rtts,
            healthy_window_ms: c.healthy_window_us / 1000,
            spread_subflows: c.spread_subflows != 0,
        }
    }

    pub fn to_bpf(&self) -> BpfConfig {
        BpfConfig {
            reroute_enabled: self.enabled as u32,
            congested_ecn_ppm: self.congested_ecn_pct * 10_000,
            congested_rounds: self.congested_rounds,
            lossy_rounds: self.lossy_rounds,
            reroute_on_rto: self.on_rto as u32,
            paths: self.paths,
            min_interval_base_rtts: self.min_interval_base_rtts,
            healthy_window_us: self.healthy_window_ms.saturating_mul(1000),
            spread_subflows: self.spread_subflows as u32,
            label_salt: BpfConfig::DEFAULT.label_salt,
        }
    }

    pub fn get(&self, name: &str) -> Option<u32> {
        Some(match name {
            "enabled" => self.enabled as u32,
            "congested_ecn_pct" => self.congested_ecn_pct,
            "congested_rounds" => self.congested_rounds,
            "lossy_rounds" => self.lossy_rounds,
            "on_rto" => self.on_rto as u32,
            "paths" => self.paths,
            "min_interval_base_rtts" => self.min_interval_base_rtts,
            "healthy_window_ms" => self.healthy_window_ms,
            "spread_subflows" => self.spread_subflows as u32,
            _ => return None,
        })
    }

    /// Sets one value by name after checking name and range; on error
    /// nothing changes.
    pub fn set(&mut self, name: &str, value: u32) -> Result<()> {
        let Some(&(_, lo, hi, _)) = REROUTE_KEYS.iter().find(|k| k.0 == name) else {
            let known: Vec<_> = REROUTE_KEYS.iter().map(|k| k.0).collect();
            bail!("unknown reroute setting `{name}` (known: {})", known.join(", "));
        };
        if value < lo || value > hi {
            bail!("reroute setting {name} = {value} is out of range ({lo}..={hi})");
        }
        match name {
            "enabled" => self.enabled = value != 0,
            "congested_ecn_pct" => self.congested_ecn_pct = value,
            "congested_rounds" => self.congested_rounds = value,
            "lossy_rounds" => self.lossy_rounds = value,
            "on_rto" => self.on_rto = value != 0,
            "paths" => self.paths = value,
            "min_interval_base_rtts" => self.min_interval_base_rtts = value,
            "healthy_window_ms" => self.healthy_window_ms = value,
            "spread_subflows" => self.spread_subflows = value != 0,
            _ => unreachable!("every key in REROUTE_KEYS is handled"),
        }
        Ok(())
    }

    /// Range check of every value; the error names the key.
    pub fn validate(&self) -> Result<(), String> {
        for &(name, lo, hi, _) in REROUTE_KEYS {
            let v = self.get(name).expect("known key");
            if v < lo || v > hi {
                return Err(format!("reroute.{name} = {v} is out of range ({lo}..={hi})"));
            }
        }
        Ok(())
    }
}

impl AgentConfig {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading config file {}", path.display()))?;
        Self::parse(&text).map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))
    }

    /// Parses and validates; the error starts with the line number.
    pub fn parse(text: &str) -> Result<Self, String> {
        let cfg: AgentConfig = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
            format!("{line}: {}", e.message())
        })?;
        let at = |section: Option<&str>, key: &str, msg: String| format!("{}: {msg}", key_line(text, section, key));
        if let Err(msg) = cfg.reroute.validate() {
            let key = msg.split(' ').next().unwrap_or("").trim_start_matches("reroute.").to_string();
            return Err(at(Some("reroute"), &key, msg));
        }
        if !cfg.cgroup.is_absolute() {
            return Err(at(None, "cgroup", format!("cgroup must be an absolute path, got {}", cfg.cgroup.display())));
        }
        if !cfg.socket.is_absolute() {
            return Err(at(None, "socket", format!("socket must be an absolute path, got {}", cfg.socket.display())));
        }
        for i in &cfg.interfaces {
            if i.is_empty() || i.len() > 15 || i.contains('/') || i.contains(char::is_whitespace) {
                return Err(at(None, "interfaces", format!("`{i}` is not a valid interface name")));
            }
        }
        if let Some(m) = &cfg.metrics {
            m.parse::<std::net::SocketAddr>()
                .map_err(|_| at(None, "metrics", format!("metrics = \"{m}\" is not an address:port")))?;
        }
        if cfg.retain_closed_secs > 86_400 {
            return Err(at(None, "retain_closed_secs", "retain_closed_secs must be at most 86400".into()));
        }
        if !(1..=MAX_CLOSED_FLOWS_LIMIT).contains(&cfg.max_closed_flows) {
            // (0 is no "unlimited": the agent's memory is always bounded.)
            let m = format!("max_closed_flows = {} is out of range (1..={MAX_CLOSED_FLOWS_LIMIT})", cfg.max_closed_flows);
            return Err(at(None, "max_closed_flows", m));
        }
        if !MAX_OPEN_FLOWS_RANGE.contains(&cfg.max_open_flows) {
            let (lo, hi) = (MAX_OPEN_FLOWS_RANGE.start(), MAX_OPEN_FLOWS_RANGE.end());
            let m = format!("max_open_flows = {} is out of range ({lo}..={hi})", cfg.max_open_flows);
            return Err(at(None, "max_open_flows", m));
        }
        if let Err((cc, key, msg)) = crate::ccconfig::desired_all(&cfg.cc) {
            // The key in [cc.X.tunables], [cc.X.net] or [cc.X]; else the section.
            let line = ["tunables", "net", ""]
                .iter()
                .map(|sub| if sub.is_empty() { format!("cc.{cc}") } else { format!("cc.{cc}.{sub}") })
                .map(|sec| key_line(text, Some(&sec), &key))
                .find(|l| *l != 1 || key.is_empty())
                .filter(|_| !key.is_empty())
                .unwrap_or_else(|| section_line(text, &format!("cc.{cc}")));
            return Err(format!("{line}: {msg}"));
        }
        for (i, p) in cfg.policy.iter().enumerate() {
            let line = nth_header_line(text, "policy", i);
            p.key().map_err(|e| format!("{line}: [[policy]] #{}: {e}", i + 1))?;
            if p.cc.is_empty() || p.cc.len() > 15 || !p.cc.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(format!("{line}: [[policy]] #{}: cc = \"{}\" is not a congestion control name", i + 1, p.cc));
            }
            p.check_lb().map_err(|e| format!("{line}: [[policy]] #{}: {e}", i + 1))?;
            if xdcc_common::MAX_POLICIES as usize <= i {
                return Err(format!("{line}: at most {} [[policy]] entries", xdcc_common::MAX_POLICIES));
            }
            if let Some(j) = cfg.policy[..i].iter().position(|q| q.key() == p.key()) {
                return Err(format!("{line}: [[policy]] #{}: prefix {} is already entry #{}", i + 1, p.prefix, j + 1));
            }
        }
        if let Some(d) = &cfg.default_cc {
            if d.is_empty() || d.len() > 15 || !d.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(at(None, "default_cc", format!("default_cc = \"{d}\" is not a congestion control name")));
            }
        }
        Ok(cfg)
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Line of the n-th (0-based) `[[name]]` header, 1 if there is none.
fn nth_header_line(text: &str, name: &str, n: usize) -> usize {
    let h = format!("[[{name}]]");
    text.lines().enumerate().filter(|(_, l)| l.trim() == h).nth(n).map_or(1, |(i, _)| i + 1)
}

/// Line of the header `[section]` (or the first `[section.*]`), 1 if none.
fn section_line(text: &str, section: &str) -> usize {
    text.lines()
        .position(|l| {
            let h = l.trim().trim_start_matches('[').trim_end_matches(']').trim();
            l.trim().starts_with('[') && (h == section || h.starts_with(&format!("{section}.")))
        })
        .map_or(1, |i| i + 1)
}

/// Line of `key = ...` (inside `[section]` if given), 1 if not found.
fn key_line(text: &str, section: Option<&str>, key: &str) -> usize {
    let mut current: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.starts_with('[') {
            current = Some(l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
            continue;
        }
        let in_section = match section {
            None => current.is_none(),
            Some(s) => current.as_deref() == Some(s),
        };
        if in_section && l.split('=').next().map(str::trim) == Some(key) {
            return i + 1;
        }
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_full_file() {
        assert_eq!(AgentConfig::parse("").unwrap(), AgentConfig::default());
        let c = AgentConfig::parse(
            "cgroup = \"/sys/fs/cgroup/x\"\ninterfaces = [\"eth0\", \"eth1\"]\nmetrics = \"127.0.0.1:9100\"\n\
             [reroute]\npaths = 4\ncongested_rounds = 5\non_rto = false\n",
        )
        .unwrap();
        assert_eq!(c.interfaces, ["eth0", "eth1"]);
        assert_eq!(c.reroute.paths, 4);
        assert!(!c.reroute.on_rto);
        let b = c.reroute.to_bpf();
        assert_eq!((b.paths, b.congested_rounds, b.reroute_on_rto), (4, 5, 0));
        assert_eq!(RerouteSettings::from_bpf(&b), c.reroute);
        assert_eq!(c.max_closed_flows, DEFAULT_MAX_CLOSED_FLOWS);
        let c = AgentConfig::parse("max_closed_flows = 1\nretain_closed_secs = 60\n").unwrap();
        assert_eq!((c.max_closed_flows, c.retain_closed_secs), (1, 60));
        assert_eq!(AgentConfig::parse("max_closed_flows = 1000000\n").unwrap().max_closed_flows, 1_000_000);
        assert_eq!(c.max_open_flows, DEFAULT_MAX_OPEN_FLOWS);
        assert_eq!(AgentConfig::parse("max_open_flows = 1024\n").unwrap().max_open_flows, 1024);
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("interfaces = [\"eth0\"]\n\n[reroute]\npaths = 40\n", "4: ", "paths"),
            ("cgroup = \"/x\"\nbogus = 1\n", "2: ", "bogus"),
            ("socket = \"/run/s\"\nmetrics = \"nowhere\"\n", "2: ", "metrics"),
            ("[reroute]\nenabled = 3\n", "2: ", "boolean"),
            ("\n\ncgroup = \"relative\"\n", "3: ", "absolute"),
            ("interfaces = [\"a b\"]\n", "1: ", "interface"),
            ("[reroute]\ncongested_ecn_pct = 0\n", "2: ", "congested_ecn_pct"),
            ("x = [\n", "2: ", "array"),
            ("[cc.uno]\nbackend = \"bpf\"\n\n[cc.uno.tunables]\nk_bytes = 1\nqa_beta_q16 = 99999999\n", "6: ", "qa_beta_q16"),
            ("[cc.uno]\npreset = \"fast\"\n", "2: ", "no preset"),
            ("\n[cc.nosuch]\nbackend = \"bpf\"\n", "2: ", "not an xdcc CC"),
            ("[cc.uno]\nbackend = \"ebpf\"\n", "2: ", "expected `bpf` or `module`"),
            ("[cc.gemini.net]\nmtu = 10\n", "1: ", "mtu"),
            ("default_cc = \"a b\"\n", "1: ", "default_cc"),
            ("[[policy]]\nprefix = \"10.0.0.0/8\"\ncc = \"bpf_uno\"\n[[policy]]\nprefix = \"10.1.0.0/33\"\ncc = \"cubic\"\n", "4: ", "0..=32"),
            ("[[policy]]\nprefix = \"10.0.0.1/8\"\ncc = \"cubic\"\n", "1: ", "host bits"),
            ("[[policy]]\nprefix = \"fd00::/64\"\ncc = \"a-name-longer-than-15\"\n", "1: ", "not a congestion control"),
            ("[[policy]]\nprefix = \"fd00::/64\"\ncc = \"cubic\"\n[[policy]]\nprefix = \"fd00::/64\"\ncc = \"bbr\"\n", "4: ", "already entry #1"),
            ("[[policy]]\nprefix = \"10.0.0.0/8\"\ncc = \"cubic\"\nports = [80]\n", "4: ", "ports"),
            ("[[policy]]\nprefix = \"10.0.0.0/8\"\ncc = \"cubic\"\nlb = \"unolb\"\n", "1: ", "needs an IPv6 prefix"),
            ("[[policy]]\nprefix = \"fd00::/8\"\ncc = \"cubic\"\nlb = \"unolb\"\nsubflows = 17\n", "1: ", "subflows = 17 is out of range (1..=16)"),
            ("[[policy]]\nprefix = \"fd00::/8\"\ncc = \"cubic\"\nsubflows = 4\n", "1: ", "set lb = \"unolb\""),
            ("[[policy]]\nprefix = \"fd00::/8\"\ncc = \"cubic\"\nlb = \"spray\"\n", "4: ", "unknown variant"),
            ("metrics = \"127.0.0.1:9100\"\nmax_closed_flows = 0\n", "2: ", "max_closed_flows = 0 is out of range (1..=1000000)"),
            ("\nmax_closed_flows = 1000001\n", "2: ", "max_closed_flows = 1000001 is out of range"),
            ("max_open_flows = 100\n", "1: ", "max_open_flows = 100 is out of range (1024..=1048576)"),
            ("\nmax_open_flows = 2000000\n", "2: ", "max_open_flows = 2000000 is out of range"),
            ("max_open_flows = -1\n", "1: ", "expected u32"),
            ("max_closed_flows = -5\n", "1: ", "expected u64"),
            ("max_closed_flows = \"many\"\n", "1: ", "expected u64"),
        ];
        for (text, line, word) in cases {
            let e = AgentConfig::parse(text).unwrap_err();
            assert!(e.starts_with(line), "{text:?}: {e}");
            assert!(e.contains(word), "{text:?}: {e}");
        }
    }

    #[test]
    fn policy_prefixes_become_lpm_keys() {
        let e = |p: &str, cc: &str| PolicyEntry { prefix: p.into(), cc: cc.into(), lb: PolicyLb::Ecmp, subflows: None };
        let (len, b) = e("10.1.0.0/16", "bpf_uno").key().unwrap();
        assert_eq!(len, 96 + 16);
        assert_eq!(&b[10..14], &[0xff, 0xff, 10, 1]);
        assert_eq!(e("fd00::/8", "cubic").key().unwrap().0, 8);
        assert_eq!(e("0.0.0.0/0", "cubic").key().unwrap().0, 96);
        let v = e("10.1.0.0/16", "bpf_uno").value(3);
        assert_eq!((v.index, v.needs_ecn, &v.cc[..8]), (3, 1, &b"bpf_uno\0"[..]));
        assert_eq!(e("::/0", "cubic").value(1).needs_ecn, 0);
        assert_eq!(e("::/0", "dctcp").value(1).needs_ecn, 1);
        assert_eq!(e("::/0", "cubic").value(1).lb_subflows, 0);
        let sprayed = |n| PolicyEntry { lb: PolicyLb::Unolb, subflows: n, ..e("fd00::/8", "bpf_uno") };
        assert_eq!(sprayed(None).value(1).lb_subflows, 10);
        assert_eq!(sprayed(Some(4)).value(1).lb_subflows, 4);
        // The file's entries, numbered from 1 in its order; a bad prefix is named by its number.
        let mut cfg = AgentConfig { policy: vec![e("10.1.0.0/16", "bpf_uno"), e("::/0", "cubic")], ..Default::default() };
        let got = cfg.policy_entries().unwrap();
        assert_eq!(got.iter().map(|(len, _, v)| (*len, v.index)).collect::<Vec<_>>(), [(112, 1), (0, 2)]);
        cfg.policy.push(e("10.0.0.1/8", "cubic"));
        assert!(cfg.policy_entries().unwrap_err().starts_with("[[policy]] #3: "));
    }

    #[test]
    fn reroute_set_rejects_and_changes_nothing() {
        let mut r = RerouteSettings::default();
        let before = r;
        assert!(r.set("paths", 17).unwrap_err().to_string().contains("2..=16"));
        assert!(r.set("nope", 1).unwrap_err().to_string().contains("known:"));
        assert_eq!(r, before);
        r.set("paths", 2).unwrap();
        assert_eq!(r.paths, 2);
    }
}
