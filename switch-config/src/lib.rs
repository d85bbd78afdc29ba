//! Switch-port profiles for Linux interfaces acting as DC switch or WAN border
//! ports, and their rendering to `tc` commands.
//!
//! A profile (TOML, `profiles/*.toml` are shipped and embedded) describes one
//! port: line rate, buffer, ECN marking (RED between two fractions of the
//! buffer, or DCTCP-style step marking at K packets per Gbit/s) and, for WAN
//! ports, netem delay, jitter and loss (independent or Gilbert–Elliott).
//! Rendering gives a fixed tree: HTB at the line rate (root `1:`, class
//! `1:1`) with one leaf (`10:`): bfifo, red or netem. Applying uses
//! `tc ... replace` (idempotent) and, if any step fails, removes what it
//! added; reverting deletes the root qdisc. Buffers and thresholds can be
//! given per Gbit/s so a profile scales with `--rate-mbit`.

use std::{fmt, process::Command};

use serde::{Deserialize, Serialize};

/// The shipped profiles: (name, TOML).
pub const BUILTIN: &[(&str, &str)] = &[
    ("dc-gemini", include_str!("../profiles/dc-gemini.toml")),
    ("dc-uno", include_str!("../profiles/dc-uno.toml")),
    ("dc-uno-phantom", include_str!("../profiles/dc-uno-phantom.toml")),
    ("dc-amrt", include_str!("../profiles/dc-amrt.toml")),
    ("dc-amrt-deep", include_str!("../profiles/dc-amrt-deep.toml")),
    ("dc-smartt", include_str!("../profiles/dc-smartt.toml")),
    ("dc-fifo", include_str!("../profiles/dc-fifo.toml")),
    ("wan-border", include_str!("../profiles/wan-border.toml")),
    ("wan-uno-loss-setup1", include_str!("../profiles/wan-uno-loss-setup1.toml")),
    ("wan-uno-loss-setup2", include_str!("../profiles/wan-uno-loss-setup2.toml")),
];

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub description: String,
    pub port: Port,
    pub marking: Marking,
    #[serde(default)]
    pub wan: Option<Wan>,
    /// Uno's phantom queue on this port: an eBPF marker at the port's egress
    /// (`xdcc mark-phantom --profile`), beside the tc tree.
    #[serde(default)]
    pub phantom: Option<Phantom>,
    /// AMRT's anti-ECN marker for this port (`xdcc mark-amrt --profile`).
    #[serde(default)]
    pub amrt: Option<AmrtMarker>,
}

/// AMRT's anti-ECN marking on this port (amrt-icpp20 §4.2, eqs. 2–3): a
/// packet that follows at least one MTU's transmission time of idle link
/// (spare bandwidth) keeps CE, any other loses it. The marker is an eBPF
/// program on the ingress of the port's next hop, where packets appear at
/// their dequeue times; the line rate and MTU are the port's.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AmrtMarker {
    /// `true` (default): CE = CE AND spare (eq. 3), a switch inside the path.
    /// `false`: CE = spare, for the first port of every path (the marks
    /// start "spare" at the sender, eq. 3's initial value).
    #[serde(default = "default_transit")]
    pub transit: bool,
}

fn default_transit() -> bool {
    true
}

/// A virtual queue that grows by every packet entering the port and drains at
/// `drain_pct` of the line rate; ECT packets are CE-marked with a probability
/// rising linearly from `kmin_pct` to `kmax_pct` of its size (uno-sc25 §4.1.3,
/// Uno's htsim defaults: drain 90 %, marking 20 %..80 %).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Phantom {
    #[serde(default = "default_drain_pct")]
    pub drain_pct: u64,
    /// Size in packets per Gbit/s of line rate, or `size_bytes`; exactly one.
    #[serde(default)]
    pub size_pkts_per_gbps: Option<u64>,
    #[serde(default)]
    pub size_bytes: Option<u64>,
    #[serde(default = "default_kmin_pct")]
    pub kmin_pct: u64,
    #[serde(default = "default_kmax_pct")]
    pub kmax_pct: u64,
    /// What the queue counts: `enqueue`, every packet entering the port
    /// (uno-sc25 §4.1.3, htsim; the default), or `link`, the bytes the port
    /// transmits (HULL's placement on the egress link; the choice for a
    /// software switch whose CPUs forward in bursts: `xdcc_common::markers::PhantomConfig`).
    #[serde(default)]
    pub feed: PhantomFeed,
}

/// Where a phantom queue counts its bytes (see [`Phantom::feed`]).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PhantomFeed {
    #[default]
    Enqueue,
    Link,
}

impl std::str::FromStr for PhantomFeed {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "enqueue" => Ok(PhantomFeed::Enqueue),
            "link" => Ok(PhantomFeed::Link),
            _ => Err(format!("'{s}' is not a phantom feed (enqueue or link)")),
        }
    }
}

fn default_drain_pct() -> u64 {
    90
}
fn default_kmin_pct() -> u64 {
    20
}
fn default_kmax_pct() -> u64 {
    80
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Port {
    pub rate_mbit: u64,
    /// Buffer in packets per Gbit/s of line rate (scales with the rate), or
    /// `buffer_bytes` (absolute); exactly one.
    #[serde(default)]
    pub buffer_pkts_per_gbps: Option<u64>,
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
    #[serde(default = "default_mtu")]
    pub mtu: u64,
}

fn default_mtu() -> u64 {
    1500
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Marking {
    /// Drop-tail byte FIFO.
    None {},
    /// RED with ECN: marking probability rises from 0 at `min_pct` to
    /// `probability_pct` at `max_pct` of the buffer (Uno 25/75, SMaRTT 20/80).
    Red { min_pct: u64, max_pct: u64, probability_pct: u64 },
    /// DCTCP-style step marking at K packets per Gbit/s (Gemini: K = 50):
    /// RED one packet wide with probability 1 and the smallest averaging
    /// window tc allows.
    Step { k_pkts_per_gbps: u64 },
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Wan {
    pub delay_us: u64,
    #[serde(default)]
    pub jitter_us: u64,
    /// Independent loss in parts per million.
    #[serde(default)]
    pub loss_ppm: u64,
    #[serde(default)]
    pub gilbert_elliott: Option<GilbertElliott>,
}

/// netem's Gilbert–Elliott model with loss only in the bad state.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliott {
    /// Probability of good → bad per packet, ppm.
    pub p_ppm: u64,
    /// Probability of bad → good per packet, percent.
    pub r_pct: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn err<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error(msg.into()))
}

/// Line of `key =` in a TOML text (for error messages), 1 if not found.
fn key_line(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().split('=').next().map(str::trim) == Some(key))
        .map(|i| i + 1)
        .unwrap_or(1)
}

impl Profile {
    /// Parses and validates; errors start with the line number.
    pub fn parse(text: &str) -> Result<Profile, Error> {
        let p: Profile = toml::from_str(text).map_err(|e| {
            let msg = e.message().trim();
            let mut line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1).unwrap_or(1);
            // errors inside a tagged table point at its header: find the key
            // or value the message names instead
            if let Some(name) = msg.split('`').nth(1) {
                let quoted = format!("\"{name}\"");
                if let Some(i) = text.lines().position(|l| {
                    l.trim_start().split('=').next().map(str::trim) == Some(name) || l.contains(&quoted)
                }) {
                    line = i + 1;
                }
            }
            Error(format!("{line}: {msg}"))
        })?;
        p.validate().map_err(|(key, msg)| Error(format!("{}: {key}: {msg}", key_line(text, key))))?;
        Ok(p)
    }

    /// A shipped profile by name, or a file path.
    pub fn load(name_or_path: &str) -> Result<Profile, Error> {
        if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Profile::parse(text).map_err(|e| Error(format!("profile {name_or_path}:{e}")));
        }
        if name_or_path.contains('/') || name_or_path.ends_with(".toml") {
            let text = std::fs::read_to_string(name_or_path).map_err(|e| Error(format!("{name_or_path}: {e}")))?;
            return Profile::parse(&text).map_err(|e| Error(format!("{name_or_path}:{e}")));
        }
        let names: Vec<_> = BUILTIN.iter().map(|(n, _)| *n).collect();
        err(format!("unknown profile `{name_or_path}` (shipped: {}; or give a path to a .toml file)", names.join(", ")))
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        let p = &self.port;
        if !(1..=400_000).contains(&p.rate_mbit) {
            return Err(("rate_mbit", format!("{} is out of range (1..=400000 Mbit/s)", p.rate_mbit)));
        }
        if !(576..=9216).contains(&p.mtu) {
            return Err(("mtu", format!("{} is out of range (576..=9216)", p.mtu)));
        }
        match (p.buffer_pkts_per_gbps, p.buffer_bytes) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(("buffer_bytes", "give exactly one of buffer_pkts_per_gbps and buffer_bytes".into()))
            }
            _ => {}
        }
        let buf = self.buffer_bytes();
        if buf < 2 * p.mtu || buf > 4_000_000_000 {
            let key = if p.buffer_bytes.is_some() { "buffer_bytes" } else { "buffer_pkts_per_gbps" };
            return Err((key, format!("buffer of {buf} bytes is out of range (2 packets ..= 4 GB)")));
        }
        match &self.marking {
            Marking::None {} => {}
            Marking::Red { min_pct, max_pct, probability_pct } => {
                if !(1..=99).contains(min_pct) {
                    return Err(("min_pct", format!("{min_pct} is out of range (1..=99)")));
                }
                if !(*min_pct < *max_pct && *max_pct <= 100) {
                    return Err(("max_pct", format!("{max_pct} must be above min_pct ({min_pct}) and at most 100")));
                }
                if !(1..=100).contains(probability_pct) {
                    return Err(("probability_pct", format!("{probability_pct} is out of range (1..=100)")));
                }
                let (min, max) = self.red_thresholds();
                if max - min < p.mtu {
                    return Err(("max_pct", format!("RED thresholds {min}..{max} bytes are less than one packet apart")));
                }
            }
            Marking::Step { k_pkts_per_gbps } => {
                if *k_pkts_per_gbps == 0 {
                    return Err(("k_pkts_per_gbps", "must be at least 1".into()));
                }
                let (_, max) = self.red_thresholds();
                if max > buf {
                    return Err(("k_pkts_per_gbps", format!("K + 1 packet ({max} bytes) exceeds the buffer ({buf} bytes)")));
                }
            }
        }
        if self.amrt.is_some() && self.marking != (Marking::None {}) {
            return Err((
                "amrt",
                "AMRT's anti-ECN marks and congestion marks share the CE bit: a port with [amrt] needs marking kind = \"none\"".into(),
            ));
        }
        if let Some(w) = &self.wan {
            if w.delay_us > 10_000_000 {
                return Err(("delay_us", format!("{} is out of range (0..=10000000 µs)", w.delay_us)));
            }
            if w.jitter_us > w.delay_us {
                return Err(("jitter_us", format!("{} exceeds delay_us ({})", w.jitter_us, w.delay_us)));
            }
            if w.loss_ppm > 1_000_000 {
                return Err(("loss_ppm", format!("{} is out of range (0..=1000000)", w.loss_ppm)));
            }
            if self.marking != (Marking::None {}) {
                return Err((
                    "marking",
                    "a WAN port's qdisc is netem, which cannot mark: give it marking kind = \"none\" and mark with an \
                     eBPF marker on the port (`xdcc mark-phantom --drain-pct 100`, as the testbed does)"
                        .into(),
                ));
            }
            if self.phantom.is_some() {
                return Err(("phantom", "a phantom queue belongs on a DC switch port, not a WAN port".into()));
            }
            if self.amrt.is_some() {
                return Err(("amrt", "AMRT's anti-ECN marking belongs on a DC switch port, not a WAN port".into()));
            }
            if let Some(ge) = &w.gilbert_elliott {
                if w.loss_ppm != 0 {
                    return Err(("loss_ppm", "give either loss_ppm or gilbert_elliott, not both".into()));
                }
                if !(1..=1_000_000).contains(&ge.p_ppm) {
                    return Err(("p_ppm", format!("{} is out of range (1..=1000000)", ge.p_ppm)));
                }
                if !(1..=100).contains(&ge.r_pct) {
                    return Err(("r_pct", format!("{} is out of range (1..=100)", ge.r_pct)));
                }
            }
        }
        if let Some(ph) = &self.phantom {
            if !(1..=100).contains(&ph.drain_pct) {
                return Err(("drain_pct", format!("{} is out of range (1..=100)", ph.drain_pct)));
            }
            if ph.size_pkts_per_gbps.is_some() == ph.size_bytes.is_some() {
                return Err(("size_bytes", "give exactly one of size_pkts_per_gbps and size_bytes".into()));
            }
            let size = self.phantom_size_bytes();
            if !(3000..=1 << 31).contains(&size) {
                let key = if ph.size_bytes.is_some() { "size_bytes" } else { "size_pkts_per_gbps" };
                return Err((key, format!("phantom size of {size} bytes is out of range (3000 ..= 2 GiB)")));
            }
            if ph.kmin_pct >= 100 {
                return Err(("kmin_pct", format!("{} is out of range (0..=99)", ph.kmin_pct)));
            }
            if !(ph.kmin_pct < ph.kmax_pct && ph.kmax_pct <= 100) {
                return Err(("kmax_pct", format!("{} must be above kmin_pct ({}) and at most 100", ph.kmax_pct, ph.kmin_pct)));
            }
        }
        Ok(())
    }

    /// Phantom queue size in bytes at this port's rate (0 without one).
    pub fn phantom_size_bytes(&self) -> u64 {
        match &self.phantom {
            Some(Phantom { size_bytes: Some(b), .. }) => *b,
            Some(Phantom { size_pkts_per_gbps: Some(per_gbps), .. }) => {
                (per_gbps.saturating_mul(self.port.rate_mbit) / 1000).max(1).saturating_mul(self.port.mtu)
            }
            _ => 0,
        }
    }

    /// The same profile at another line rate (per-Gbps values scale).
    pub fn with_rate(mut self, rate_mbit: u64) -> Result<Profile, Error> {
        self.port.rate_mbit = rate_mbit;
        self.validate().map_err(|(k, m)| Error(format!("{k}: {m}")))?;
        Ok(self)
    }

    /// Buffer in bytes at this port's rate.
    pub fn buffer_bytes(&self) -> u64 {
        let p = &self.port;
        match (p.buffer_bytes, p.buffer_pkts_per_gbps) {
            (Some(b), _) => b,
            (None, Some(per_gbps)) => (per_gbps.saturating_mul(p.rate_mbit) / 1000).max(1).saturating_mul(p.mtu),
            (None, None) => 0,
        }
    }

    /// RED (min, max) thresholds in bytes; for step marking (K, K + 1 packet).
    pub fn red_thresholds(&self) -> (u64, u64) {
        let buf = self.buffer_bytes();
        match &self.marking {
            Marking::Red { min_pct, max_pct, .. } => (buf * min_pct / 100, buf * max_pct / 100),
            Marking::Step { k_pkts_per_gbps } => {
                let k = (k_pkts_per_gbps.saturating_mul(self.port.rate_mbit) / 1000).max(1) * self.port.mtu;
                (k, k + self.port.mtu)
            }
            Marking::None {} => (0, 0),
        }
    }

    /// The tc commands (arguments after `tc`) that configure `iface`.
    pub fn render(&self, iface: &str) -> Vec<Vec<String>> {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let rate = format!("{}mbit", self.port.rate_mbit);
        let mtu = self.port.mtu;
        let buf = self.buffer_bytes();
        // HTB's per-class burst: at least one MTU and ~1 ms at line rate, so
        // high rates are not limited by the timer resolution.
        let burst = (self.port.rate_mbit * 1000 / 8).max(2 * mtu);
        let mut cmds = vec![
            s(&["qdisc", "replace", "dev", iface, "root", "handle", "1:", "htb", "default", "1"]),
            s(&["class", "replace", "dev", iface, "parent", "1:", "classid", "1:1", "htb", "rate", &rate, "ceil", &rate,
                "burst", &burst.to_string(), "cburst", &burst.to_string()]),
        ];
        let leaf = s(&["qdisc", "replace", "dev", iface, "parent", "1:1", "handle", "10:"]);
        let mut cmd = leaf.clone();
        if let Some(w) = &self.wan {
            cmd.extend(s(&["netem", "delay", &format!("{}us", w.delay_us)]));
            if w.jitter_us > 0 {
                cmd.push(format!("{}us", w.jitter_us));
            }
            cmd.extend(s(&["limit", &(buf / mtu).max(1).to_string()]));
            if let Some(ge) = &w.gilbert_elliott {
                // netem gemodel p r 1-h 1-k, in percent: loss only in "bad"
                cmd.extend(s(&["loss", "gemodel", &ppm_pct(ge.p_ppm), &format!("{}%", ge.r_pct), "100%", "0%"]));
            } else if w.loss_ppm > 0 {
                cmd.extend(s(&["loss", "random", &ppm_pct(w.loss_ppm)]));
            }
            cmds.push(cmd);
            return cmds;
        }
        match &self.marking {
            Marking::None {} => cmd.extend(s(&["bfifo", "limit", &buf.to_string()])),
            Marking::Red { probability_pct, .. } => {
                let (min, max) = self.red_thresholds();
                cmd.extend(self.red_args(min, max, *probability_pct, red_burst(min, max, mtu)));
            }
            Marking::Step { .. } => {
                let (min, max) = self.red_thresholds();
                // the smallest burst tc accepts: average ≈ instantaneous queue
                cmd.extend(self.red_args(min, max, 100, min.div_ceil(mtu)));
            }
        }
        cmds.push(cmd);
        cmds
    }

    fn red_args(&self, min: u64, max: u64, prob_pct: u64, burst: u64) -> Vec<String> {
        let prob = format!("{}.{:02}", prob_pct / 100, prob_pct % 100);
        [
            "red", "limit", &self.buffer_bytes().max(max).to_string(), "min", &min.to_string(), "max", &max.to_string(),
            "avpkt", &self.port.mtu.to_string(), "burst", &burst.to_string(), "bandwidth",
            &format!("{}mbit", self.port.rate_mbit), "probability", &prob, "ecn",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect()
    }
}

/// RED's `burst` for thresholds `min`..`max` bytes: tc's default, `(2·min +
/// max) / (3·avpkt) + 1`, lowered until the EWMA weight tc derives from it
/// (2^-Wlog, `tc_red_eval_ewma`) fits the kernel's fixed point, which
/// refuses `fls(max) + Wlog ≥ 32` (`red_check_params`): the default gave a
/// 10 Gbit/s port's 6.75 MB buffer at 25-75 % Wlog 10 where at most 8 fits,
/// and tc failed. Never below `min / avpkt + 1`, the smallest tc accepts.
fn red_burst(min: u64, max: u64, avpkt: u64) -> u64 {
    let most = 31u32.saturating_sub(fls(max.max(min)));
    let least = min / avpkt.max(1) + 1;
    let mut burst = (2 * min + max) / (3 * avpkt.max(1)) + 1;
    while burst > least && tc_red_wlog(burst, min, avpkt) > most {
        burst -= 1;
    }
    burst
}

/// The EWMA weight's log tc derives for RED's `burst` (`tc_red_eval_ewma`):
/// the smallest Wlog whose weight lets `burst` packets arriving at once into
/// an empty queue leave the average below `min`; 32 where none does.
fn tc_red_wlog(burst: u64, min: u64, avpkt: u64) -> u32 {
    let a = burst as f64 + 1.0 - min as f64 / avpkt.max(1) as f64;
    let mut w = 0.5f64;
    for wlog in 1..32 {
        if a <= (1.0 - (1.0 - w).powi(burst.min(i32::MAX as u64) as i32)) / w {
            return wlog;
        }
        w /= 2.0;
    }
    32
}

/// The kernel's `fls`: the position of the highest set bit (0 for 0).
fn fls(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// ppm as a netem percentage with enough digits ("0.0039%").
fn ppm_pct(ppm: u64) -> String {
    let s = format!("{:.6}", ppm as f64 / 10_000.0);
    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Runs `tc` (optionally in a network namespace).
fn tc(netns: Option<&str>, args: &[String]) -> Result<(), Error> {
    let mut c = Command::new("tc");
    if let Some(ns) = netns {
        c.args(["-n", ns]);
    }
    let out = c.args(args).output().map_err(|e| Error(format!("running tc: {e} (install iproute2)")))?;
    if !out.status.success() {
        return err(format!("tc {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

/// Configures `iface` (idempotent). On failure nothing of the profile stays:
/// the root qdisc is removed (the interface is back to its default qdisc).
pub fn apply(p: &Profile, iface: &str, netns: Option<&str>) -> Result<Vec<String>, Error> {
    let mut cmds = p.render(iface);
    // HTB cannot "change" its root parameters: when our root is already
    // there, only the class and the leaf are replaced.
    if has_our_root(iface, netns) {
        cmds.remove(0);
        // nor can a qdisc change its kind: a leaf of another kind goes first
        let kind = cmds.last().and_then(|c| c.get(8)).cloned().unwrap_or_default();
        if leaf_kind(iface, netns).is_some_and(|k| k != kind) {
            let del: Vec<String> = ["qdisc", "del", "dev", iface, "parent", "1:1", "handle", "10:"].map(String::from).into();
            cmds.insert(1, del);
        }
    }
    for c in &cmds {
        if let Err(e) = tc(netns, c) {
            let _ = revert(iface, netns);
            return err(format!("{e}\nnothing applied (the root qdisc of {iface} was removed)"));
        }
    }
    Ok(cmds.iter().map(|c| format!("tc {}", c.join(" "))).collect())
}

/// `tc qdisc show dev IFACE` (empty if it fails).
fn qdiscs(iface: &str, netns: Option<&str>) -> String {
    let mut c = Command::new("tc");
    if let Some(ns) = netns {
        c.args(["-n", ns]);
    }
    c.args(["qdisc", "show", "dev", iface]).output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default()
}

/// Whether `iface` already has the root this crate installs (htb 1:).
fn has_our_root(iface: &str, netns: Option<&str>) -> bool {
    qdiscs(iface, netns).lines().any(|l| l.starts_with("qdisc htb 1: root"))
}

/// The kind of our leaf (`10:` under `1:1`), if present.
fn leaf_kind(iface: &str, netns: Option<&str>) -> Option<String> {
    qdiscs(iface, netns).lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 4 && f[2] == "10:" && f[3] == "parent" && f[4] == "1:1").then(|| f[1].to_string())
    })
}

/// Removes the profile (the root qdisc); succeeds if there was none.
pub fn revert(iface: &str, netns: Option<&str>) -> Result<(), Error> {
    match tc(netns, &["qdisc".into(), "del".into(), "dev".into(), iface.into(), "root".into()]) {
        Ok(()) => Ok(()),
        // no root qdisc of ours: already reverted
        Err(e)
            if ["Cannot find", "Invalid handle", "No such file", "handle of zero"].iter().any(|m| e.0.contains(m)) =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_profile_parses() {
        for (name, _) in BUILTIN {
            let p = Profile::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!p.render("eth0").is_empty());
        }
    }

    #[test]
    fn paper_thresholds() {
        // Gemini: K = 50 packets per Gbit/s at 1 Gbit/s = 75 kB; scales with the rate
        let g = Profile::load("dc-gemini").unwrap();
        assert_eq!(g.red_thresholds(), (75_000, 76_500));
        assert_eq!(g.clone().with_rate(100).unwrap().red_thresholds(), (7_500, 9_000));
        // Uno: 25 % / 75 % of a 450-packet buffer
        let u = Profile::load("dc-uno").unwrap();
        assert_eq!(u.buffer_bytes(), 675_000);
        assert_eq!(u.red_thresholds(), (168_750, 506_250));
        let s = Profile::load("dc-smartt").unwrap();
        assert_eq!(s.red_thresholds(), (135_000, 540_000));
    }

    #[test]
    fn amrt_section() {
        let p = Profile::load("dc-amrt").unwrap();
        assert_eq!(p.amrt, Some(AmrtMarker { transit: true }));
        assert_eq!(p.marking, Marking::None {});
        assert_eq!(p.buffer_bytes(), 8 * 1500, "the paper's 8-packet queue");
        let base = include_str!("../profiles/dc-amrt.toml");
        let first = base.replace("transit = true", "transit = false");
        assert_eq!(Profile::parse(&first).unwrap().amrt, Some(AmrtMarker { transit: false }));
        // classic ECN marking on the same port is refused
        let red = base.replace("kind = \"none\"", "kind = \"red\"\nmin_pct = 25\nmax_pct = 75\nprobability_pct = 100");
        assert!(Profile::parse(&red).unwrap_err().0.contains("amrt"), "{:?}", Profile::parse(&red));
        let wan = include_str!("../profiles/wan-border.toml").to_string() + "[amrt]\n";
        assert!(Profile::parse(&wan).unwrap_err().0.contains("amrt"));
        assert!(Profile::parse(&(base.to_string() + "spare_mtus = 2\n")).is_err(), "unknown key accepted");
    }

    #[test]
    fn phantom_section() {
        let p = Profile::load("dc-uno-phantom").unwrap();
        let ph = p.phantom.clone().unwrap();
        assert_eq!((ph.drain_pct, ph.kmin_pct, ph.kmax_pct), (90, 20, 80));
        assert_eq!(ph.feed, PhantomFeed::Enqueue, "Uno's simulator feeds it at enqueue");
        assert_eq!(p.phantom_size_bytes(), 675_000);
        assert_eq!(p.clone().with_rate(50).unwrap().phantom_size_bytes(), 22 * 1500);
        // the tc tree is the same as without it: the marker is eBPF
        assert_eq!(p.render("p1"), Profile::load("dc-uno").unwrap().render("p1"));
        let base = include_str!("../profiles/dc-uno-phantom.toml");
        for (from, to, key) in [
            ("drain_pct = 90", "drain_pct = 0", "drain_pct"),
            ("kmax_pct = 80", "kmax_pct = 10", "kmax_pct"),
            ("size_pkts_per_gbps = 450", "size_pkts_per_gbps = 1", "size_pkts_per_gbps"),
            ("size_pkts_per_gbps = 450", "size_pkts_per_gbps = 450\nsize_bytes = 9000", "size_bytes"),
            ("kmin_pct = 20", "kmin_pct = 20\nqueue = 3", "queue"),
            ("kmin_pct = 20", "kmin_pct = 20\nfeed = \"dequeue\"", "dequeue"),
        ] {
            let e = Profile::parse(&base.replace(from, to)).unwrap_err().0;
            assert!(e.contains(key), "{to}: {e}");
        }
        let link = Profile::parse(&base.replace("kmin_pct = 20", "kmin_pct = 20\nfeed = \"link\"")).unwrap();
        assert_eq!(link.phantom.unwrap().feed, PhantomFeed::Link);
        assert_eq!("link".parse::<PhantomFeed>(), Ok(PhantomFeed::Link));
        assert!("Link".parse::<PhantomFeed>().unwrap_err().contains("enqueue or link"));
        let wan = include_str!("../profiles/wan-border.toml").to_string() + "[phantom]\nsize_bytes = 9000\n";
        assert!(Profile::parse(&wan).unwrap_err().0.contains("phantom"));
        // netem cannot mark: a marking beside [wan] would be silently lost.
        let marked = include_str!("../profiles/wan-border.toml").replace("kind = \"none\"", "kind = \"step\"\nk_pkts_per_gbps = 65");
        assert!(Profile::parse(&marked).unwrap_err().0.contains("netem"));
    }

    #[test]
    fn rendering() {
        let g = Profile::load("dc-gemini").unwrap().render("p1");
        assert_eq!(g[0].join(" "), "qdisc replace dev p1 root handle 1: htb default 1");
        assert!(g[1].join(" ").contains("rate 1000mbit ceil 1000mbit"));
        assert_eq!(
            g[2].join(" "),
            "qdisc replace dev p1 parent 1:1 handle 10: red limit 675000 min 75000 max 76500 avpkt 1500 burst 50 \
             bandwidth 1000mbit probability 1.00 ecn"
        );
        let w = Profile::load("wan-uno-loss-setup1").unwrap().render("w0");
        assert_eq!(
            w[2].join(" "),
            "qdisc replace dev w0 parent 1:1 handle 10: netem delay 32500us limit 10000 loss gemodel 0.0039% 77% 100% 0%"
        );
        // A 10 Gbit/s port's 6.75 MB buffer at 25-75 %: tc's default burst
        // (1876) needs Wlog 10, the kernel takes at most 31 - fls(max) = 8.
        let big = Profile::parse(
            "description = \"x\"\n[port]\nrate_mbit = 10000\nbuffer_bytes = 6750000\n[marking]\nkind = \"red\"\n\
             min_pct = 25\nmax_pct = 75\nprobability_pct = 100\n",
        )
        .unwrap();
        let (min, max) = big.red_thresholds();
        assert_eq!(tc_red_wlog(1876, min, 1500), 10, "tc's default burst needs Wlog 10");
        let b = red_burst(min, max, 1500);
        assert!(b > min / 1500 && b < 1876, "{b}");
        assert!(fls(max) + tc_red_wlog(b, min, 1500) <= 31, "the kernel's red_check_params takes it");
        assert_eq!(red_burst(75000, 76500, 1500), 51, "tc's default where it fits");
        let f = Profile::load("dc-fifo").unwrap().with_rate(20).unwrap().render("x");
        assert_eq!(f[2].join(" "), "qdisc replace dev x parent 1:1 handle 10: bfifo limit 13500");
    }

    #[test]
    fn bad_profiles_name_the_line() {
        let base = "description = \"x\"\n[port]\nrate_mbit = 1000\nbuffer_pkts_per_gbps = 450\n[marking]\n";
        let cases = [
            (format!("{base}kind = \"red\"\nmin_pct = 80\nmax_pct = 20\nprobability_pct = 100\n"), "8: max_pct"),
            (format!("{base}kind = \"red\"\nmin_pct = 0\nmax_pct = 20\nprobability_pct = 100\n"), "7: min_pct"),
            (format!("{base}kind = \"step\"\nk_pkts_per_gbps = 0\n"), "7: k_pkts_per_gbps"),
            (format!("{base}kind = \"step\"\nk_pkts_per_gbps = 500\n"), "exceeds the buffer"),
            (format!("{base}kind = \"bogus\"\n"), "6: unknown variant"),
            (format!("{base}kind = \"none\"\n[wan]\ndelay_us = 10\njitter_us = 20\n"), "9: jitter_us"),
            (format!("{base}kind = \"none\"\n[wan]\ndelay_us = 1\n[wan.gilbert_elliott]\np_ppm = 0\nr_pct = 5\n"), "10: p_ppm"),
            ("description = \"x\"\n[port]\nrate_mbit = 0\nbuffer_bytes = 9000\n[marking]\nkind = \"none\"\n".into(), "3: rate_mbit"),
            ("description = \"x\"\n[port]\nrate_mbit = 10\n[marking]\nkind = \"none\"\n".into(), "exactly one"),
            (format!("{base}kind = \"none\"\nextra = 1\n"), "7: unknown field"),
        ];
        for (text, want) in cases {
            let e = Profile::parse(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}\n -> {e}");
        }
        assert!(Profile::load("nope").unwrap_err().to_string().contains("dc-gemini"));
    }
}
