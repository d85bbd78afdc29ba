//! The crate's one CC list (`CCS`) and its presets (`PRESETS`), one line
//! each, for the scripts that need them before the CLI is built (the BPF
//! build, the fuzzers, the docs generator, the testbed runner):
//!
//!   cargo run -p xdcc-algo --example ccs              name module ecn|no-ecn paper
//!   cargo run -p xdcc-algo --example ccs -- presets   cc preset
//!
//! The CC lines are `xdcc cc known`'s.

use xdcc_algo::{presets::PRESETS, CCS};

fn main() {
    match std::env::args().nth(1).as_deref() {
        None => CCS.iter().for_each(|c| println!("{c}")),
        Some("presets") => PRESETS.iter().for_each(|(cc, name, _)| println!("{cc} {name}")),
        Some(other) => {
            eprintln!("ccs: unknown argument '{other}' (none, or `presets`)");
            std::process::exit(2);
        }
    }
}
