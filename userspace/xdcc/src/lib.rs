//! The xdcc library: everything the `xdcc` binary does, as modules a
//! program or a test can use without the command line. Layers, the lower
//! ones knowing nothing of the higher:
//! - **kernel** — sysctls, modules, network namespaces, CC selection
//!   ([`kernel`]); what went wrong as an exit status ([`failure`]).
//! - **bpf** — the BPF struct_ops CCs `bpf_<cc>` ([`bpfcc`], with
//!   libbpf-rs: aya cannot load struct_ops maps yet) and the telemetry,
//!   rerouting and marker programs ([`ebpf`], with aya).
//! - **tunables** — every CC's tunables and presets, whichever of the two
//!   backends runs it ([`tunables`]).
//! - **diag** — sock_diag and rtnetlink reads ([`sockdiag`], [`netlink`]);
//!   microsecond TCP timestamps on routes ([`usects`]).
//! - **flows** — one view of a flow joined from those sources ([`flows`]).
//! - **agent** — its configuration ([`config`], with the `[cc.<name>]`
//!   sections in [`ccconfig`]), the CLI protocol ([`proto`]), the agent
//!   itself ([`agent`]) and its metrics ([`metrics`]); `apply` and `check`
//!   beside it ([`apply`], [`check`]).
//! - **testbed tools** — the sampler and the sized-flow generator
//!   ([`sampler`], [`flowgen`]), which the testbed runs.

pub mod agent;
pub mod apply;
pub mod bpfcc;
pub mod ccconfig;
#[cfg(test)]
mod bpfcc_equivalence;
pub mod check;
pub mod config;
pub mod ebpf;
pub mod failure;
pub mod flowgen;
pub mod flows;
pub mod kernel;
pub mod metrics;
pub mod netlink;
pub mod proto;
pub mod sampler;
pub mod sockdiag;
pub mod tunables;
pub mod usects;
