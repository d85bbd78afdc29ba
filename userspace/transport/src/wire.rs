//! The transport's packets on the wire (one UDP datagram each).
//!
//! Every packet starts with the same 12 bytes, big-endian:
//!
//! ```text
//!  0  magic "XU"          2 bytes
//!  2  version = 1         1
//!  3  kind                1   0 data, 1 parity, 2 block NACK, 3 ACK
//!  4  flow                8   the transfer's id, agreed on the control connection
//! ```
//!
//! Data and parity packets (UnoRC's coded blocks, uno-sc25 §4.3) go on:
//!
//! ```text
//! 12  seq                 8   the transmission's number (a resent packet gets a new one)
//! 20  block               8   the block's number in the flow
//! 28  index               1   the packet's place in its block: data 0..data, parity data..data+parity
//! 29  data                1   data packets in this block (the flow's last block may hold fewer)
//! 30  parity              1   parity packets in this block
//! 31  reserved = 0        1
//! 32  wait_us             4   how long the receiver should wait for the rest of the block (below)
//! 36  length              2   bytes that follow: a data packet's payload, or a parity shard
//! 38  the payload
//! ```
//!
//! The receiver arms a block's NACK timer with the wait its packet carries
//! (`ec::BlockRx`): only the sender knows how long the block's remaining
//! packets take to leave at its current rate (the artifact's 640 µs for
//! inter-DC data assumes a 100 Gbit/s sender).
//!
//! A block NACK (the receiver's timer expired with the block incomplete) is
//! the common 12 bytes and the block's number (8 bytes). The receiver ACKs
//! every packet (as the simulator's receivers do): the common 12 bytes, the
//! packet's `seq` (8), flags (1: bit 0, the packet arrived CE-marked; the
//! other bits 0) and `blocks_done` (8: the blocks from the flow's first that
//! the receiver has whole, so the sender stops resending them).
//!
//! [`Packet::parse`] checks every field against the others and the
//! datagram's length, and returns a [`WireError`] for anything else: it
//! never panics and never reads past the datagram, whatever arrives.

use thiserror::Error;
use xdcc_multipath::ec::MAX_BLOCK;

pub const MAGIC: [u8; 2] = *b"XU";
pub const VERSION: u8 = 1;
/// The common prefix: magic, version, kind, flow.
pub const COMMON_LEN: usize = 12;
/// A data or parity packet's header.
pub const BLOCK_HEADER_LEN: usize = 38;
pub const NACK_LEN: usize = COMMON_LEN + 8;
pub const ACK_LEN: usize = COMMON_LEN + 17;
/// The largest payload one packet carries (a data packet's payload, or a
/// parity shard: the block's longest payload plus its 2-byte length, see
/// `coding`). 65,507 bytes is what one UDP datagram over IPv4 can hold.
pub const MAX_PAYLOAD: usize = 65_507 - BLOCK_HEADER_LEN;

const KIND_DATA: u8 = 0;
const KIND_PARITY: u8 = 1;
const KIND_NACK: u8 = 2;
const KIND_ACK: u8 = 3;
const ACK_CE: u8 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// One packet of a coded block: data (`index < data`) or parity.
    Block(BlockPacket<'a>),
    /// "Block `block` of `flow` did not arrive whole: send what I lack."
    Nack { flow: u64, block: u64 },
    /// "Transmission `seq` arrived (CE-marked if `ce`); I have the first
    /// `blocks_done` blocks whole."
    Ack { flow: u64, seq: u64, ce: bool, blocks_done: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockPacket<'a> {
    pub flow: u64,
    pub seq: u64,
    pub block: u64,
    pub index: u8,
    pub data: u8,
    pub parity: u8,
    /// The receiver's wait for the rest of the block, µs.
    pub wait_us: u32,
    pub payload: &'a [u8],
}

impl BlockPacket<'_> {
    pub fn is_parity(&self) -> bool {
        self.index >= self.data
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum WireError {
    #[error("{0} bytes: shorter than the packet's header")]
    Truncated(usize),
    #[error("not an xdcc transport packet (magic {0:02x?})")]
    Magic([u8; 2]),
    #[error("version {0}, this side speaks {VERSION}")]
    Version(u8),
    #[error("unknown packet kind {0}")]
    Kind(u8),
    #[error("a block of {data} data and {parity} parity packets (data must be 1..=32 and data + parity at most {MAX_BLOCK})")]
    Geometry { data: u8, parity: u8 },
    #[error("packet {index} of a block of {width}, as a {kind}")]
    Index { index: u8, width: u16, kind: &'static str },
    #[error("reserved bits set: {0:#04x}")]
    Reserved(u8),
    #[error("the header says {said} payload bytes, the datagram holds {held}")]
    Length { said: usize, held: usize },
    #[error("a payload of {0} bytes (at most {MAX_PAYLOAD})")]
    TooLong(usize),
}

fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

impl<'a> Packet<'a> {
    /// The packet in `datagram`, or why it is not one.
    pub fn parse(datagram: &'a [u8]) -> Result<Self, WireError> {
        if datagram.len() < COMMON_LEN {
            return Err(WireError::Truncated(datagram.len()));
        }
        let magic = [datagram[0], datagram[1]];
        if magic != MAGIC {
            return Err(WireError::Magic(magic));
        }
        if datagram[2] != VERSION {
            return Err(WireError::Version(datagram[2]));
        }
        let kind = datagram[3];
        let flow = be_u64(&datagram[4..]);
        let exact = |len: usize| match datagram.len() {
            n if n < len => Err(WireError::Truncated(n)),
            n if n > len => Err(WireError::Length { said: 0, held: n - len }),
            _ => Ok(()),
        };
        match kind {
            KIND_NACK => {
                exact(NACK_LEN)?;
                Ok(Packet::Nack { flow, block: be_u64(&datagram[COMMON_LEN..]) })
            }
            KIND_ACK => {
                exact(ACK_LEN)?;
                let flags = datagram[20];
                if flags & !ACK_CE != 0 {
                    return Err(WireError::Reserved(flags & !ACK_CE));
                }
                Ok(Packet::Ack { flow, seq: be_u64(&datagram[12..]), ce: flags & ACK_CE != 0, blocks_done: be_u64(&datagram[21..]) })
            }
            KIND_DATA | KIND_PARITY => {
                if datagram.len() < BLOCK_HEADER_LEN {
                    return Err(WireError::Truncated(datagram.len()));
                }
                let seq = be_u64(&datagram[12..]);
                let block = be_u64(&datagram[20..]);
                let (index, data, parity) = (datagram[28], datagram[29], datagram[30]);
                check_geometry(data, parity)?;
                let width = u16::from(data) + u16::from(parity);
                let parity_kind = kind == KIND_PARITY;
                if u16::from(index) >= width || (index >= data) != parity_kind {
                    let kind = if parity_kind { "parity packet" } else { "data packet" };
                    return Err(WireError::Index { index, width, kind });
                }
                if datagram[31] != 0 {
                    return Err(WireError::Reserved(datagram[31]));
                }
                let wait_us = u32::from_be_bytes([datagram[32], datagram[33], datagram[34], datagram[35]]);
                let said = usize::from(u16::from_be_bytes([datagram[36], datagram[37]]));
                let payload = &datagram[BLOCK_HEADER_LEN..];
                if said != payload.len() {
                    return Err(WireError::Length { said, held: payload.len() });
                }
                if said > MAX_PAYLOAD {
                    return Err(WireError::TooLong(said));
                }
                Ok(Packet::Block(BlockPacket { flow, seq, block, index, data, parity, wait_us, payload }))
            }
            k => Err(WireError::Kind(k)),
        }
    }

    /// The packet's bytes, appended to `out` (a caller reuses one buffer).
    pub fn write(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let (kind, flow) = match *self {
            Packet::Block(p) => (if p.is_parity() { KIND_PARITY } else { KIND_DATA }, p.flow),
            Packet::Nack { flow, .. } => (KIND_NACK, flow),
            Packet::Ack { flow, .. } => (KIND_ACK, flow),
        };
        if let Packet::Block(p) = self {
            check_geometry(p.data, p.parity)?;
            let width = u16::from(p.data) + u16::from(p.parity);
            if u16::from(p.index) >= width {
                return Err(WireError::Index { index: p.index, width, kind: "packet" });
            }
            if p.payload.len() > MAX_PAYLOAD {
                return Err(WireError::TooLong(p.payload.len()));
            }
        }
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(kind);
        out.extend_from_slice(&flow.to_be_bytes());
        match *self {
            Packet::Block(p) => {
                out.extend_from_slice(&p.seq.to_be_bytes());
                out.extend_from_slice(&p.block.to_be_bytes());
                out.extend_from_slice(&[p.index, p.data, p.parity, 0]);
                out.extend_from_slice(&p.wait_us.to_be_bytes());
                // (At most MAX_PAYLOAD, checked above: fits 16 bits.)
                out.extend_from_slice(&(p.payload.len() as u16).to_be_bytes());
                out.extend_from_slice(p.payload);
            }
            Packet::Nack { block, .. } => out.extend_from_slice(&block.to_be_bytes()),
            Packet::Ack { seq, ce, blocks_done, .. } => {
                out.extend_from_slice(&seq.to_be_bytes());
                out.push(if ce { ACK_CE } else { 0 });
                out.extend_from_slice(&blocks_done.to_be_bytes());
            }
        }
        Ok(())
    }
}

fn check_geometry(data: u8, parity: u8) -> Result<(), WireError> {
    if data == 0 || u16::from(data) + u16::from(parity) > u16::from(MAX_BLOCK) {
        return Err(WireError::Geometry { data, parity });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(p: Packet) -> Vec<u8> {
        let mut v = Vec::new();
        p.write(&mut v).unwrap();
        v
    }

    fn sample() -> Vec<Packet<'static>> {
        vec![
            Packet::Block(BlockPacket { flow: 7, seq: 41, block: 3, index: 0, data: 8, parity: 2, wait_us: 640, payload: b"hello" }),
            Packet::Block(BlockPacket { flow: u64::MAX, seq: u64::MAX, block: 1 << 40, index: 9, data: 8, parity: 2, wait_us: u32::MAX, payload: &[0xa5; 1402] }),
            Packet::Block(BlockPacket { flow: 1, seq: 0, block: 0, index: 0, data: 1, parity: 0, wait_us: 0, payload: b"" }),
            Packet::Nack { flow: 9, block: 12 },
            Packet::Ack { flow: 9, seq: 77, ce: true, blocks_done: 5 },
            Packet::Ack { flow: 9, seq: 78, ce: false, blocks_done: 0 },
        ]
    }

    #[test]
    fn every_packet_reads_back_as_written() {
        for p in sample() {
            let b = bytes(p);
            assert_eq!(Packet::parse(&b), Ok(p));
        }
        assert_eq!(bytes(sample()[0]).len(), BLOCK_HEADER_LEN + 5);
        assert_eq!(bytes(sample()[3]).len(), NACK_LEN);
        assert_eq!(bytes(sample()[4]).len(), ACK_LEN);
    }

    #[test]
    fn every_truncation_and_extension_is_refused() {
        for p in sample() {
            let b = bytes(p);
            for n in 0..b.len() {
                assert!(Packet::parse(&b[..n]).is_err(), "{p:?} cut to {n} bytes");
            }
            let mut longer = b.clone();
            longer.push(0);
            assert!(matches!(Packet::parse(&longer), Err(WireError::Length { .. })), "{p:?} plus a byte");
        }
    }

    #[test]
    fn inconsistent_headers_are_refused() {
        let good = bytes(sample()[0]);
        let with = |at: usize, v: u8| {
            let mut b = good.clone();
            b[at] = v;
            Packet::parse(&b).map(|_| ())
        };
        assert_eq!(with(0, b'X'), Ok(()), "the unchanged packet parses");
        assert_eq!(with(0, b'Y'), Err(WireError::Magic(*b"YU")));
        assert_eq!(with(2, 2), Err(WireError::Version(2)));
        assert_eq!(with(3, 4), Err(WireError::Kind(4)));
        assert_eq!(with(3, KIND_PARITY), Err(WireError::Index { index: 0, width: 10, kind: "parity packet" }));
        assert_eq!(with(28, 10), Err(WireError::Index { index: 10, width: 10, kind: "data packet" }));
        assert_eq!(with(29, 0), Err(WireError::Geometry { data: 0, parity: 2 }));
        assert_eq!(with(30, 25), Err(WireError::Geometry { data: 8, parity: 25 }));
        assert_eq!(with(31, 1), Err(WireError::Reserved(1)));
        assert_eq!(with(37, 6), Err(WireError::Length { said: 6, held: 5 }));
        let mut ack = bytes(sample()[4]);
        ack[20] = 3;
        assert_eq!(Packet::parse(&ack), Err(WireError::Reserved(2)));
        // A data packet whose index says parity.
        let parity_index = {
            let mut b = good.clone();
            b[28] = 8;
            b
        };
        assert!(matches!(Packet::parse(&parity_index), Err(WireError::Index { .. })));
    }

    #[test]
    fn random_datagrams_never_panic() {
        // xorshift: deterministic, no dependency. Half the inputs start with
        // a valid prefix so that the deeper checks run too.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let prefix = bytes(sample()[1]);
        let mut accepted = 0;
        for i in 0..200_000 {
            let n = (next() % 80) as usize;
            let mut b: Vec<u8> = if i % 2 == 0 { prefix[..prefix.len().min(n)].to_vec() } else { Vec::new() };
            while b.len() < n {
                b.push(next() as u8);
            }
            if i % 3 == 0 && b.len() >= BLOCK_HEADER_LEN {
                // Make the length field agree, so that geometry and index
                // checks decide.
                let l = (b.len() - BLOCK_HEADER_LEN) as u16;
                b[36..38].copy_from_slice(&l.to_be_bytes());
                b[31] = 0;
            }
            if let Ok(p) = Packet::parse(&b) {
                accepted += 1;
                // Whatever is accepted is a packet this side would write.
                assert_eq!(bytes(p), b);
            }
        }
        assert!(accepted > 0, "the generator reaches valid packets too");
    }
}
