// SPDX-License-Identifier: GPL-2.0

//! tcp_dctcp: DCTCP (SIGCOMM 2010, RFC 8257) as Linux's own `tcp_dctcp.c`
//! runs it, as an xdcc congestion control: the baseline of the papers.
//!
//! The algorithm is `kmods/algo/src/dctcp.rs`, unchanged; `glue.rs` maps the
//! kernel callbacks onto it. It registers `dctcp`, the name of Linux's
//! module, so it is for kernels built without `CONFIG_TCP_CONG_DCTCP` (and
//! for the comparison with Linux's, testbed/vm/tests/dctcp.sh): the two
//! cannot be loaded at once. Tunables (Linux's module parameters
//! `dctcp_shift_g`, `dctcp_alpha_on_init` and the initial window) are under
//! `/proc/sys/net/xdcc/dctcp/`.

#[allow(dead_code, unused_imports, unreachable_pub, clippy::all)]
#[path = "algo/src/lib.rs"]
mod algo;
#[macro_use]
#[allow(dead_code, unreachable_pub)]
#[path = "glue.rs"]
mod glue;

xdcc_cc_module! {
    name: "tcp_dctcp",
    module: TcpDctcp,
    algo: dctcp::Dctcp,
    description: "DCTCP (SIGCOMM'10, Linux tcp_dctcp behaviour) congestion control (xdcc)",
}
