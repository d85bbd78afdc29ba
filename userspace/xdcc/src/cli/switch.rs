//! `xdcc switch`: switch-port profiles (switch-config/) on an interface.

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum SwitchCmd {
    /// The shipped profiles.
    List,
    /// A profile's values and the tc commands it renders to.
    Show {
        /// Shipped name or path to a .toml file.
        profile: String,
        #[arg(long, default_value = "IFACE")]
        iface: String,
        /// Line rate (per-Gbps buffers and thresholds scale with it).
        #[arg(long)]
        rate_mbit: Option<u64>,
    },
    /// Configure an interface (idempotent; nothing stays if a step fails).
    Apply {
        profile: String,
        iface: String,
        #[arg(long)]
        rate_mbit: Option<u64>,
    },
    /// Remove a profile from an interface (back to its default qdisc).
    Revert {
        iface: String,
    },
}

pub fn run(c: SwitchCmd) -> Result<()> {
    use xdcc_switch::{Marking, Profile, BUILTIN};
    let load = |name: &str, rate: Option<u64>| -> Result<Profile> {
        let p = Profile::load(name)?;
        Ok(match rate {
            Some(r) => p.with_rate(r)?,
            None => p,
        })
    };
    match c {
        SwitchCmd::List => {
            for (name, _) in BUILTIN {
                println!("{name:<22} {}", Profile::load(name)?.description);
            }
        }
        SwitchCmd::Show { profile, iface, rate_mbit } => {
            let p = load(&profile, rate_mbit)?;
            println!("{}", p.description);
            println!("rate {} Mbit/s, buffer {} bytes, mtu {}", p.port.rate_mbit, p.buffer_bytes(), p.port.mtu);
            match &p.marking {
                Marking::None {} => println!("marking: none"),
                m => {
                    let (lo, hi) = p.red_thresholds();
                    println!("marking: {m:?} -> {lo}..{hi} bytes");
                }
            }
            if let Some(w) = &p.wan {
                println!("wan: {w:?}");
            }
            if let Some(ph) = &p.phantom {
                let size = p.phantom_size_bytes();
                let (lo, hi) = (size * ph.kmin_pct / 100, size * ph.kmax_pct / 100);
                println!(
                    "phantom queue: drain {} % of line rate, size {size} bytes, marking {lo}..{hi} bytes \
                     (eBPF: xdcc mark-phantom --profile {profile} --iface {iface})",
                    ph.drain_pct
                );
            }
            if let Some(a) = &p.amrt {
                println!(
                    "amrt: anti-ECN marking ({}; eBPF on the next hop's ingress: xdcc mark-amrt --profile {profile} --iface <next hop's interface>)",
                    if a.transit { "transit: CE = CE AND spare" } else { "first hop: CE = spare" }
                );
            }
            for cmd in p.render(&iface) {
                println!("tc {}", cmd.join(" "));
            }
        }
        SwitchCmd::Apply { profile, iface, rate_mbit } => {
            let p = load(&profile, rate_mbit)?;
            for line in xdcc_switch::apply(&p, &iface, None)? {
                println!("{line}");
            }
            if p.phantom.is_some() {
                println!("(its phantom queue is an eBPF marker: run `xdcc mark-phantom --profile {profile} --iface {iface}` beside it)");
            }
            if p.amrt.is_some() {
                println!(
                    "(its anti-ECN marking is an eBPF marker on the next hop: run `xdcc mark-amrt --profile {profile} --iface <next hop's interface>` there)"
                );
            }
        }
        SwitchCmd::Revert { iface } => {
            xdcc_switch::revert(&iface, None)?;
            println!("reverted {iface}");
        }
    }
    Ok(())
}
