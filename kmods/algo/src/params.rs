//! The user-facing network description every algorithm's defaults derive from,
//! and the error type `validate()` returns.

use super::fixed::{bdp_bytes, mul_div};

/// The few numbers a user knows about their network. Every algorithm derives
/// its paper defaults from these (`Params::from_net`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetConfig {
    /// Bottleneck (NIC / switch port) line rate in bits per second.
    pub link_rate_bps: u64,
    /// Base RTT of a flow inside one datacenter, ns.
    pub intra_rtt_ns: u32,
    /// Base RTT of a flow between datacenters, ns.
    pub inter_rtt_ns: u32,
    /// Maximum packet size on the wire in bytes (the papers' MTU; the
    /// algorithms use it as the unit of "one packet").
    pub mtu: u32,
}

impl NetConfig {
    /// The kernel CCs' defaults (modules and BPF) until the user sets the
    /// `net_*` tunables: 10 Gbit/s, 100 µs / 10 ms, 1500-byte MTU.
    pub const LINUX_DEFAULT: NetConfig =
        NetConfig { link_rate_bps: 10_000_000_000, intra_rtt_ns: 100_000, inter_rtt_ns: 10_000_000, mtu: 1500 };
    /// Uno's simulation setup (uno-sc25 Table 2): 100 Gbit/s, 14 µs / 2 ms, 4 KiB MTU.
    pub const UNO_PAPER: NetConfig =
        NetConfig { link_rate_bps: 100_000_000_000, intra_rtt_ns: 14_000, inter_rtt_ns: 2_000_000, mtu: 4096 };
    /// Gemini's testbed (gemini-ton §IV-A): 1 Gbit/s, ~200 µs / ~10 ms, 1.5 KB MTU.
    pub const GEMINI_TESTBED: NetConfig =
        NetConfig { link_rate_bps: 1_000_000_000, intra_rtt_ns: 200_000, inter_rtt_ns: 10_000_000, mtu: 1500 };

    /// The `net_*` tunables that describe a network to the modules and the
    /// BPF CCs (Mbit/s, µs, µs, bytes), in the order of [`Self::from_knobs`].
    pub const KNOBS: [&'static str; 4] = ["net_link_rate_mbps", "net_intra_rtt_us", "net_inter_rtt_us", "net_mtu"];

    /// The network the `net_*` values describe (in [`Self::KNOBS`] order);
    /// values beyond the fields' ranges saturate, and `validate()` refuses them.
    pub const fn from_knobs(v: [u64; 4]) -> NetConfig {
        const fn u32_sat(x: u64) -> u32 {
            if x > u32::MAX as u64 {
                u32::MAX
            } else {
                x as u32
            }
        }
        NetConfig {
            link_rate_bps: v[0].saturating_mul(1_000_000),
            intra_rtt_ns: u32_sat(v[1].saturating_mul(1000)),
            inter_rtt_ns: u32_sat(v[2].saturating_mul(1000)),
            mtu: u32_sat(v[3]),
        }
    }

    /// This network as `net_*` values ([`Self::KNOBS`] order).
    pub const fn knobs(&self) -> [u64; 4] {
        [self.link_rate_bps / 1_000_000, self.intra_rtt_ns as u64 / 1000, self.inter_rtt_ns as u64 / 1000, self.mtu as u64]
    }

    /// Line rate in bytes per second.
    pub const fn rate_bytes_per_sec(&self) -> u64 {
        self.link_rate_bps / 8
    }
    const_unless_bpf! {
        /// Intra-DC bandwidth-delay product in bytes.
        pub fn intra_bdp(&self) -> u64 {
            bdp_bytes(self.rate_bytes_per_sec(), self.intra_rtt_ns)
        }
    }
    const_unless_bpf! {
        /// Inter-DC bandwidth-delay product in bytes.
        pub fn inter_bdp(&self) -> u64 {
            bdp_bytes(self.rate_bytes_per_sec(), self.inter_rtt_ns)
        }
    }
    const_unless_bpf! {
        /// Line rate in Mbit/s (rounded down), used where a smaller unit keeps
        /// products in range.
        pub fn rate_mbps(&self) -> u64 {
            mul_div(self.link_rate_bps, 1, 1_000_000)
        }
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        check("link_rate_bps", self.link_rate_bps, 1_000_000, 3_200_000_000_000)?;
        check("intra_rtt_ns", self.intra_rtt_ns as u64, 1_000, 1_000_000_000)?;
        check("inter_rtt_ns", self.inter_rtt_ns as u64, 1_000, 4_000_000_000)?;
        check("mtu", self.mtu as u64, 256, 65_535)?;
        if self.inter_rtt_ns < self.intra_rtt_ns {
            return Err(ParamError {
                name: "inter_rtt_ns",
                value: self.inter_rtt_ns as u64,
                reason: "must not be smaller than intra_rtt_ns",
                range: None,
            });
        }
        Ok(())
    }
}

/// A rejected parameter: which one, the value given and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub name: &'static str,
    pub value: u64,
    pub reason: &'static str,
    /// The allowed range `[min, max]`, when the error is a range violation.
    pub range: Option<(u64, u64)>,
}

impl core::fmt::Display for ParamError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "invalid parameter {} = {}: {}", self.name, self.value, self.reason)?;
        if let Some((lo, hi)) = self.range {
            write!(f, " (allowed: {lo} ..= {hi})")?;
        }
        Ok(())
    }
}

/// Range check used by every `validate()`.
pub fn check(name: &'static str, value: u64, lo: u64, hi: u64) -> Result<(), ParamError> {
    if value < lo {
        Err(ParamError { name, value, reason: "below the allowed minimum", range: Some((lo, hi)) })
    } else if value > hi {
        Err(ParamError { name, value, reason: "above the allowed maximum", range: Some((lo, hi)) })
    } else {
        Ok(())
    }
}

