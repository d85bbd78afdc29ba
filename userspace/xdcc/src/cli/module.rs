//! `xdcc module`: the xdcc kernel modules.

use anyhow::Result;
use clap::Subcommand;
use xdcc::kernel;

#[derive(Subcommand)]
pub enum ModuleCmd {
    /// The xdcc modules, whether loaded, and their files ($XDCC_MODULE_DIR or ./kmods).
    List,
    /// Load a module by name (tcp_uno or uno) or by path to a .ko file.
    Load { module: String },
    /// Unload a module (refused while a socket or namespace uses its CC).
    Unload { module: String },
}

pub fn run(c: ModuleCmd, ctx: &super::Ctx) -> Result<()> {
    match c {
        ModuleCmd::List => {
            let l = kernel::module_list();
            if ctx.json {
                println!("{}", serde_json::to_string_pretty(&l)?);
            } else {
                println!("{:<12} {:<8} {:<8} {:<5} FILE", "MODULE", "CC", "LOADED", "USERS");
                for m in l {
                    println!(
                        "{:<12} {:<8} {:<8} {:<5} {}",
                        m.name,
                        m.cc,
                        if m.loaded { "yes" } else { "no" },
                        m.refcount.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
                        m.file.unwrap_or_else(|| "-".into())
                    );
                }
            }
        }
        ModuleCmd::Load { module } => {
            let path = kernel::module_load(&module)?;
            println!("loaded {path}");
        }
        ModuleCmd::Unload { module } => {
            kernel::module_unload(&module)?;
            println!("unloaded {module}");
        }
    }
    Ok(())
}
