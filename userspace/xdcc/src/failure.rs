//! What went wrong, as the exit status tells a script (docs/cli.md, "Exit status"):
//!
//! | status | meaning |
//! |--------|---------|
//! | 0 | success |
//! | 1 | any other failure (I/O, an unexpected kernel or agent answer) |
//! | 2 | usage: unknown command or option, malformed argument (clap) |
//! | 3 | no agent: the command needs `xdcc agent` and none answers on the socket |
//! | 4 | the kernel refused: permission, module or BPF load, a busy module, an in-use CC |
//! | 5 | bad value: unknown CC, module or tunable, a value out of range, an invalid file |
//!
//! Errors carry their class as a [`Failure`] anywhere in the `anyhow` chain;
//! the message is unchanged.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    NoAgent,
    KernelRefused,
    BadValue,
}

impl Kind {
    pub fn exit_code(self) -> u8 {
        match self {
            Kind::NoAgent => 3,
            Kind::KernelRefused => 4,
            Kind::BadValue => 5,
        }
    }
}

/// An error message with its class.
#[derive(Debug)]
pub struct Failure {
    pub kind: Kind,
    msg: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for Failure {}

pub fn bad_value(msg: impl fmt::Display) -> anyhow::Error {
    Failure { kind: Kind::BadValue, msg: msg.to_string() }.into()
}

pub fn kernel_refused(msg: impl fmt::Display) -> anyhow::Error {
    Failure { kind: Kind::KernelRefused, msg: msg.to_string() }.into()
}

pub fn no_agent(msg: impl fmt::Display) -> anyhow::Error {
    Failure { kind: Kind::NoAgent, msg: msg.to_string() }.into()
}

/// The exit status for an error: its class if it has one, else 1.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    e.chain().find_map(|c| c.downcast_ref::<Failure>()).map_or(1, |f| f.kind.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn the_class_survives_added_context_and_unclassified_errors_exit_1() {
        let e = Err::<(), _>(bad_value("`x` is not a tunable")).context("setting x").unwrap_err();
        assert_eq!(exit_code(&e), 5);
        assert_eq!(format!("{e:#}"), "setting x: `x` is not a tunable");
        assert_eq!(exit_code(&no_agent("none")), 3);
        assert_eq!(exit_code(&kernel_refused("EPERM")), 4);
        assert_eq!(exit_code(&anyhow::anyhow!("disk full")), 1);
    }
}
