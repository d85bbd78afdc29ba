//! What both fuzz targets share: which CC to fuzz, and the network and
//! tunables a run starts from.

use arbitrary::Arbitrary;
use xdcc_algo::{NetConfig, Tunables, CCS};

/// The CC to fuzz: `XDCC_FUZZ_CC=<name>` fuzzes only that one (run.sh runs
/// one fuzzer per CC, so each gets its own corpus and run count); unset, the
/// input's first byte picks one.
pub fn chosen_cc(pick: u8) -> &'static str {
    static FIXED: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    let fixed = FIXED.get_or_init(|| {
        let name = std::env::var("XDCC_FUZZ_CC").ok()?;
        let known: Vec<&str> = CCS.iter().map(|c| c.name).collect();
        match CCS.iter().find(|c| c.name == name) {
            Some(c) => Some(c.name),
            None => {
                eprintln!("XDCC_FUZZ_CC={name}: not an xdcc CC (known: {})", known.join(", "));
                std::process::exit(2)
            }
        }
    });
    fixed.unwrap_or(CCS[pick as usize % CCS.len()].name)
}

/// A network description anywhere in the range the tunables accept, and up
/// to a few tunables set to arbitrary values (those the set rejects are
/// skipped, as `xdcc tunable set` and the sysctl handler reject them).
#[derive(Arbitrary, Debug, Clone)]
pub struct Setup {
    pub cc: u8,
    rate_mbps: u32,
    intra_rtt_us: u32,
    inter_mult: u8,
    mtu: u16,
    tunables: Vec<(u8, u64)>,
}

impl Setup {
    pub fn net(&self) -> NetConfig {
        let intra = (self.intra_rtt_us % 10_000_000).max(1) as u64 * 1000;
        NetConfig {
            link_rate_bps: (self.rate_mbps as u64 % 400_000 + 1) * 1_000_000,
            intra_rtt_ns: intra.min(u32::MAX as u64) as u32,
            inter_rtt_ns: (intra * (self.inter_mult.max(1) as u64)).min(4_000_000_000) as u32,
            mtu: (self.mtu as u32).clamp(256, 9000),
        }
    }

    /// The parameters a run uses, or `None` if the network itself is one the
    /// tunables refuse.
    pub fn params<P: Tunables>(&self) -> Option<P> {
        // (`from_net` runs on any network; a run needs one the `net_*`
        // knobs accept, as every backend refuses the others.)
        let net = self.net();
        let mut p = P::from_net(&net);
        net.validate().ok()?;
        p.validate().ok()?;
        for &(i, v) in self.tunables.iter().take(4) {
            // (`set` validates the whole set and changes nothing on error.)
            let _ = p.set(P::TUNABLES[i as usize % P::TUNABLES.len()], v);
        }
        Some(p)
    }
}
