// SPDX-License-Identifier: GPL-2.0

//! tcp_oscar: OSCAR (NSDI'26) as a Linux TCP congestion control.
//!
//! The algorithm is `kmods/algo/src/oscar.rs`, unchanged; `glue.rs` maps the
//! kernel callbacks onto it. Select with
//! `sysctl net.ipv4.tcp_congestion_control=oscar`; tunables are under
//! `/proc/sys/net/xdcc/oscar/` (docs/tunables.md lists units and defaults).

#[allow(dead_code, unused_imports, unreachable_pub, clippy::all)]
#[path = "algo/src/lib.rs"]
mod algo;
#[macro_use]
#[allow(dead_code, unreachable_pub)]
#[path = "glue.rs"]
mod glue;

xdcc_cc_module! {
    name: "tcp_oscar",
    module: TcpOscar,
    algo: oscar::Oscar,
    description: "OSCAR (NSDI'26) congestion control (xdcc)",
}
