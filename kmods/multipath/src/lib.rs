//! Uno's other two mechanisms (uno-sc25 §4.2, §4.3), beside UnoCC in
//! `xdcc-algo`: how a flow spreads its packets over paths (UnoLB) and how it
//! recovers inter-DC losses with erasure-coded blocks (UnoRC), plus the
//! baselines the paper compares them with.
//!
//! - [`lb`]: per-packet path choice as an *entropy* (the value switches hash
//!   with the flow for ECMP): single-path ECMP, random packet spraying, PLB
//!   (move the flow after congested rounds or a timeout) and UnoLB (several
//!   subflows under one window, silent ones re-drawn on a timeout or NACK).
//! - [`ec`]: UnoRC's block bookkeeping: which block a packet is in, when the
//!   receiver has a block, when its NACK timer fires.
//! - [`sent`]: which subflow carried which bytes of a TCP stream, so a
//!   retransmission names the subflow that lost it.
//!
//! no_std, no allocation, integer arithmetic: randomness and time come from
//! the caller (a `FnMut() -> u32` draw and nanosecond clocks), so the same
//! inputs give the same decisions in the simulator and in the UDP transport
//! (`userspace/transport`, which codes UnoRC's blocks' bytes) and in the eBPF
//! programs that spray a TCP connection's packets (`ebpf/programs/src/unolb.rs`;
//! the eBPF rerouter, `reroute.rs`, is the PLB baseline for TCP).

#![no_std]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

pub mod ec;
pub mod lb;
pub mod sent;

pub use ec::{BlockCode, BlockRx, RxOutcome};
pub use lb::{Balancer, PlbConfig, Strategy, UnoLbConfig};
pub use sent::SentRing;
