//! xdcc's UDP bulk transport, built up from UnoRC (uno-sc25 §4.3), the part
//! of Uno that TCP cannot carry: inter-DC data in blocks of 8 packets plus
//! 2 Reed–Solomon parity packets, so that up to two losses per block cost
//! no retransmission, and a block NACK when more are lost.
//!
//! - [`wire`]: the packets (data, parity, block NACK) and their parser,
//!   which refuses anything malformed and never panics.
//! - [`coding`]: the bytes coded: a block's parity from its data, and the
//!   receiver's block rebuilt from any 8 of its 10 packets.
//!
//! What is here is the data plane's coding; the socket layer (ECN, entropy
//! per packet, pacing, GSO/GRO), the window (UnoCC from `xdcc-algo`), the
//! control connection and `xdcc send`/`xdcc recv` are not built yet
//! (issue 46; docs/transport.md).

#![forbid(unsafe_code)]

pub mod coding;
pub mod session;
pub mod wire;

pub use coding::{BlockAssembly, Coder, CodingError};
pub use wire::{BlockPacket, Packet, WireError};
