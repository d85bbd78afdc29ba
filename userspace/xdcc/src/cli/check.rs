//! `xdcc check`: the preflight of this host.

use anyhow::{bail, Result};
use xdcc::{check, kernel};

pub fn run(ctx: &super::Ctx) -> Result<()> {
    let r = check::evaluate(&check::gather(std::path::Path::new("/"), &kernel::module_dir()));
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        check::print(&r);
    }
    if !r.ready {
        bail!("this host cannot run every xdcc CC (see the report)");
    }
    Ok(())
}
