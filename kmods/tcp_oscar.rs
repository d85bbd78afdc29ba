// SPDX-License-Identifier: GPL-2.0

//! tcp_oscar: OSCAR (NSDI'26) as a Linux TCP congestion control.
//!
//! The algorithm is `kmods/algo/src/oscar.rs`, unchanged; `glue.rs` maps the
//! kernel callbacks onto it. Select with
//! `sysctl net.ipv4.tcp_congestion_control=oscar`; tunables are under
//! `/proc/sys/net/xdcc/oscar/` (see README.md for units and defaults).

use kernel::prelude::*;
use kernel::c_str;

#[allow(dead_code, unused_imports, unreachable_pub, clippy::all)]
#[path = "algo/src/lib.rs"]
mod algo;
#[allow(dead_code, unreachable_pub)]
#[path = "glue.rs"]
mod glue;

module! {
    type: TcpOscar,
    name: "tcp_oscar",
    author: "xdcc developers",
    description: "OSCAR (NSDI'26) congestion control (xdcc)",
    license: "GPL",
}

/// Module defaults: a 10 Gbit/s network with 100 µs intra-DC and 10 ms
/// inter-DC base RTTs and a 1500-byte MTU; `net_*` sysctls re-derive them.
static PARAMS: glue::ParamCell<algo::oscar::Params> = glue::ParamCell::new(algo::oscar::Params::from_net(&algo::NetConfig {
    link_rate_bps: 10_000_000_000,
    intra_rtt_ns: 100_000,
    inter_rtt_ns: 10_000_000,
    mtu: 1500,
}));

struct Cc;

impl glue::KernelCc for Cc {
    type Algo = algo::oscar::Oscar;
    type Params = algo::oscar::Params;
    type Extra = ();
    const NAME: &'static kernel::str::CStr = c_str!("oscar");
    const SYSCTL_DIR: &'static kernel::str::CStr = c_str!("net/xdcc/oscar");
    fn params() -> &'static glue::ParamCell<Self::Params> {
        &PARAMS
    }
}

struct TcpOscar {
    _reg: glue::Registration<Cc>,
}

impl kernel::Module for TcpOscar {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let reg = glue::Registration::<Cc>::new(module)?;
        pr_info!("registered congestion control \"oscar\"\n");
        Ok(Self { _reg: reg })
    }
}
