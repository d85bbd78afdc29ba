// SPDX-License-Identifier: GPL-2.0

//! tcp_smartt: SMaRTT / UEC NSCC as a Linux TCP congestion control.
//!
//! The algorithm is `kmods/algo/src/smartt.rs`, unchanged; `glue.rs` maps the
//! kernel callbacks onto it. Select with
//! `sysctl net.ipv4.tcp_congestion_control=smartt`; tunables are under
//! `/proc/sys/net/xdcc/smartt/` (docs/tunables.md lists units and defaults).

#[allow(dead_code, unused_imports, unreachable_pub, clippy::all)]
#[path = "algo/src/lib.rs"]
mod algo;
#[macro_use]
#[allow(dead_code, unreachable_pub)]
#[path = "glue.rs"]
mod glue;

xdcc_cc_module! {
    name: "tcp_smartt",
    module: TcpSmartt,
    algo: smartt::Smartt,
    description: "SMaRTT / UEC NSCC congestion control (xdcc)",
}
