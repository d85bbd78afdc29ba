//! `xdcc tunable`: a CC's tunables, through the kernel (module sysctls or
//! the BPF CC's configuration map).

use anyhow::Result;
use clap::Subcommand;
use xdcc::tunables;

#[derive(Subcommand)]
pub enum TunableCmd {
    /// Every tunable of a CC with its value.
    List {
        cc: String,
    },
    /// One tunable's value.
    Get { cc: String, name: String },
    /// Write one tunable, validated before writing: a bad name or value
    /// changes nothing.
    Set { cc: String, name: String, value: String },
    /// Apply a named preset (a set of tunables derived from the CC's current
    /// `net_*` network: `defaults` = undo the other presets, `paper` = the
    /// paper's algorithm, `uno-artifact` = as the public Uno simulator runs
    /// it, `real-host` = UnoCC on a real host at real speed); without NAME,
    /// list the presets.
    Preset { cc: String, name: Option<String> },
}

pub fn run(c: TunableCmd, ctx: &super::Ctx) -> Result<()> {
    match c {
        TunableCmd::List { cc } => {
            let l = tunables::tunable_list(&cc)?;
            if ctx.json {
                let m: serde_json::Map<String, serde_json::Value> = l.into_iter().map(|(k, v)| (k, v.into())).collect();
                println!("{}", serde_json::to_string_pretty(&m)?);
            } else {
                for (k, v) in l {
                    println!("{cc}.{k} = {v}");
                }
            }
        }
        TunableCmd::Get { cc, name } => println!("{}", tunables::tunable_get(&cc, &name)?),
        TunableCmd::Preset { cc, name: None } => {
            for (c, name, doc) in tunables::presets_of(&cc)? {
                println!("{c} {name:<14} {doc}");
            }
        }
        TunableCmd::Preset { cc, name: Some(name) } => {
            for (k, v) in tunables::tunable_preset(&cc, &name)? {
                println!("{cc}.{k} = {v}");
            }
        }
        TunableCmd::Set { cc, name, value } => {
            let v = tunables::tunable_set(&cc, &name, &value)?;
            println!("{cc}.{name} = {v}");
        }
    }
    Ok(())
}
