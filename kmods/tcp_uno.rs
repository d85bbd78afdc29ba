// SPDX-License-Identifier: GPL-2.0

//! tcp_uno: UnoCC (Uno, SC'25) as a Linux TCP congestion control.
//!
//! The algorithm is `kmods/algo/src/uno.rs`, unchanged; `glue.rs` maps the
//! kernel callbacks onto it. Select with
//! `sysctl net.ipv4.tcp_congestion_control=uno`; tunables are under
//! `/proc/sys/net/xdcc/uno/` (docs/tunables.md lists units and defaults).

#[allow(dead_code, unused_imports, unreachable_pub, clippy::all)]
#[path = "algo/src/lib.rs"]
mod algo;
#[macro_use]
#[allow(dead_code, unreachable_pub)]
#[path = "glue.rs"]
mod glue;

xdcc_cc_module! {
    name: "tcp_uno",
    module: TcpUno,
    algo: uno::Uno,
    description: "UnoCC (Uno, SC'25) congestion control (xdcc)",
}
