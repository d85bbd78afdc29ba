//! xdcc's UDP bulk transport, built up from UnoRC (uno-sc25 §4.3), the part
//! of Uno that TCP cannot carry: inter-DC data in blocks of 8 packets plus
//! 2 Reed–Solomon parity packets, so that up to two losses per block cost
//! no retransmission, and a block NACK when more are lost.
//!
//! - [`wire`]: the packets (data, parity, block NACK) and their parser,
//!   which refuses anything malformed and never panics.
//! - [`coding`]: the bytes coded: a block's parity from its data, and the
//!   receiver's block rebuilt from any 8 of its 10 packets.
//! - [`session`]: the sender and the receiver as state machines without I/O
//!   (UnoCC's window, ACKs, NACKs, timeouts, the receiver's memory bound).
//! - [`udp`]: the two ends over UDP sockets, one datagram per syscall; the
//!   sender's packets take their balancer's paths (UnoLB, §4.2: a socket,
//!   so a source port and an ECMP path, per entropy).
//! - [`control`] and [`transfer`]: the TCP control connection (the
//!   operator's key proven both ways, the flow id as the data's token, the
//!   whole transfer's SHA-256) and whole-file transfers, what `xdcc send`
//!   and `xdcc recv` run.
//!
//! What the transport does not do yet: docs/transport.md.

#![forbid(unsafe_code)]

pub mod coding;
pub mod control;
pub mod session;
pub mod transfer;
pub mod udp;
pub mod wire;

pub use coding::{BlockAssembly, Coder, CodingError};
pub use wire::{BlockPacket, Packet, WireError};
/// How a sender's packets choose their paths (the simulator's balancer).
pub use xdcc_multipath::lb::{Strategy, UnoLbConfig};
