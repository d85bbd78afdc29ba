//! The transport's packets on the wire (one UDP datagram each).
//!
//! Every packet starts with the same 12 bytes, big-endian:
//!
//! ```text
//!  0  magic "XU"          2 bytes
//!  2  version = 1         1
//!  3  kind                1   0 data, 1 parity, 2 block NACK
//!  4  flow                8   the transfer's id, agreed on the control connection
//! ```
//!
//! Data and parity packets (UnoRC's coded blocks, uno-sc25 §4.3) go on:
//!
//! ```text
//! 12  block               8   the block's number in the flow
//! 20  index               1   the packet's place in its block: data 0..data, parity data..data+parity
//! 21  data                1   data packets in this block (the flow's last block may hold fewer)
//! 22  parity              1   parity packets in this block
//! 23  reserved = 0        1
//! 24  length              2   bytes that follow: a data packet's payload, or a parity shard
//! 26  the payload
//! ```
//!
//! A block NACK (the receiver's timer expired with the block incomplete) is
//! the common 12 bytes and the block's number (8 bytes).
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
pub const BLOCK_HEADER_LEN: usize = 26;
pub const NACK_LEN: usize = COMMON_LEN + 8;
/// The largest payload one packet carries (a data packet's payload, or a
/// parity shard: the block's longest payload plus its 2-byte length, see
/// `coding`). 65,507 bytes is what one UDP datagram over IPv4 can hold.
pub const MAX_PAYLOAD: usize = 65_507 - BLOCK_HEADER_LEN;

const KIND_DATA: u8 = 0;
const KIND_PARITY: u8 = 1;
const KIND_NACK: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// One packet of a coded block: data (`index < data`) or parity.
    Block(BlockPacket<'a>),
    /// "Block `block` of `flow` did not arrive whole: send what I lack."
    Nack { flow: u64, block: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockPacket<'a> {
    pub flow: u64,
    pub block: u64,
    pub index: u8,
    pub data: u8,
    pub parity: u8,
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
    #[error("reserved byte is {0}, not 0")]
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
        match kind {
            KIND_NACK => {
                if datagram.len() != NACK_LEN {
                    return Err(if datagram.len() < NACK_LEN {
                        WireError::Truncated(datagram.len())
                    } else {
                        WireError::Length { said: 0, held: datagram.len() - NACK_LEN }
                    });
                }
                Ok(Packet::Nack { flow, block: be_u64(&datagram[COMMON_LEN..]) })
            }
            KIND_DATA | KIND_PARITY => {
                if datagram.len() < BLOCK_HEADER_LEN {
                    return Err(WireError::Truncated(datagram.len()));
                }
                let block = be_u64(&datagram[12..]);
                let (index, data, parity) = (datagram[20], datagram[21], datagram[22]);
                check_geometry(data, parity)?;
                let width = u16::from(data) + u16::from(parity);
                let parity_kind = kind == KIND_PARITY;
                if u16::from(index) >= width || (index >= data) != parity_kind {
                    let kind = if parity_kind { "parity packet" } else { "data packet" };
                    return Err(WireError::Index { index, width, kind });
                }
                if datagram[23] != 0 {
                    return Err(WireError::Reserved(datagram[23]));
                }
                let said = usize::from(u16::from_be_bytes([datagram[24], datagram[25]]));
                let payload = &datagram[BLOCK_HEADER_LEN..];
                if said != payload.len() {
                    return Err(WireError::Length { said, held: payload.len() });
                }
                if said > MAX_PAYLOAD {
                    return Err(WireError::TooLong(said));
                }
                Ok(Packet::Block(BlockPacket { flow, block, index, data, parity, payload }))
            }
            k => Err(WireError::Kind(k)),
        }
    }

    /// The packet's bytes, appended to `out` (a caller reuses one buffer).
    pub fn write(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let (kind, flow) = match *self {
            Packet::Block(p) => (if p.is_parity() { KIND_PARITY } else { KIND_DATA }, p.flow),
            Packet::Nack { flow, .. } => (KIND_NACK, flow),
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
                out.extend_from_slice(&p.block.to_be_bytes());
                out.extend_from_slice(&[p.index, p.data, p.parity, 0]);
                // (At most MAX_PAYLOAD, checked above: fits 16 bits.)
                out.extend_from_slice(&(p.payload.len() as u16).to_be_bytes());
                out.extend_from_slice(p.payload);
            }
            Packet::Nack { block, .. } => out.extend_from_slice(&block.to_be_bytes()),
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
            Packet::Block(BlockPacket { flow: 7, block: 3, index: 0, data: 8, parity: 2, payload: b"hello" }),
            Packet::Block(BlockPacket { flow: u64::MAX, block: 1 << 40, index: 9, data: 8, parity: 2, payload: &[0xa5; 1402] }),
            Packet::Block(BlockPacket { flow: 1, block: 0, index: 0, data: 1, parity: 0, payload: b"" }),
            Packet::Nack { flow: 9, block: 12 },
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
        assert_eq!(with(3, 3), Err(WireError::Kind(3)));
        assert_eq!(with(3, KIND_PARITY), Err(WireError::Index { index: 0, width: 10, kind: "parity packet" }));
        assert_eq!(with(20, 10), Err(WireError::Index { index: 10, width: 10, kind: "data packet" }));
        assert_eq!(with(21, 0), Err(WireError::Geometry { data: 0, parity: 2 }));
        assert_eq!(with(22, 25), Err(WireError::Geometry { data: 8, parity: 25 }));
        assert_eq!(with(23, 1), Err(WireError::Reserved(1)));
        assert_eq!(with(25, 6), Err(WireError::Length { said: 6, held: 5 }));
        // A data packet whose index says parity.
        let parity_index = {
            let mut b = good.clone();
            b[20] = 8;
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
            let n = (next() % 64) as usize;
            let mut b: Vec<u8> = if i % 2 == 0 { prefix[..prefix.len().min(n)].to_vec() } else { Vec::new() };
            while b.len() < n {
                b.push(next() as u8);
            }
            if i % 3 == 0 && b.len() > 25 {
                // Make the length field agree, so that geometry and index
                // checks decide.
                let l = (b.len() - BLOCK_HEADER_LEN) as u16;
                b[24..26].copy_from_slice(&l.to_be_bytes());
                b[23] = 0;
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
