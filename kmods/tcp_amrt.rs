// SPDX-License-Identifier: GPL-2.0

//! tcp_amrt: AMRT's sender (anti-ECN marking, ICPP'20) as a Linux TCP
//! congestion control.
//!
//! The algorithm is `kmods/algo/src/amrt.rs`, unchanged; `glue.rs` maps the
//! kernel callbacks onto it. Select with
//! `sysctl net.ipv4.tcp_congestion_control=amrt`; tunables are under
//! `/proc/sys/net/xdcc/amrt/` (docs/tunables.md lists units and defaults).
//!
//! AMRT needs ECN negotiated and the anti-ECN marker on every switch port of
//! the path (`xdcc mark-amrt`, or a switch profile's `[amrt]` section). A
//! mark that arrives with a queue (a classic ECN/RED switch marking for
//! congestion) is not believed and is counted as `ignored_marks`
//! (`xdcc flows`): see `mark_max_qdelay_ns` in the algorithm file.

#[allow(dead_code, unused_imports, unreachable_pub, clippy::all)]
#[path = "algo/src/lib.rs"]
mod algo;
#[macro_use]
#[allow(dead_code, unreachable_pub)]
#[path = "glue.rs"]
mod glue;

xdcc_cc_module! {
    name: "tcp_amrt",
    module: TcpAmrt,
    algo: amrt::Amrt,
    description: "AMRT anti-ECN sender (ICPP'20) congestion control (xdcc)",
}
