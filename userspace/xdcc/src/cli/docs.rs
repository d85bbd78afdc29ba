//! `xdcc completions` and `xdcc man`: generated from the CLI's own
//! definitions.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::Cli;

pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    clap_complete::generate(shell, &mut Cli::command(), "xdcc", &mut std::io::stdout());
    Ok(())
}

pub fn man(out: Option<PathBuf>) -> Result<()> {
    match out {
        None => clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()).context("writing the man page"),
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), &dir).with_context(|| format!("writing the man pages to {}", dir.display()))
        }
    }
}
