//! UnoRC's blocks with their bytes coded (uno-sc25 §4.3): each block of up
//! to `data` packets gets `parity` Reed–Solomon parity packets (the paper's
//! and the artifact's (8,2)), and the receiver rebuilds the block's data from
//! any `data` of its packets.
//!
//! Reed–Solomon codes equal-length shards, and a block's packets need not
//! be equally long (the flow's last packet is short). So each data packet is
//! coded as a shard of its length (2 bytes, big-endian), its payload and
//! zeros up to the block's shard length, which is the block's longest
//! payload plus 2; the parity packets carry shards of that length, so the
//! receiver learns it from any parity packet and a rebuilt shard says how
//! long its payload was. Data packets go on the wire unpadded.
//!
//! When a block is complete, and when its NACK is due, is `xdcc-multipath`'s
//! [`BlockRx`]: the same decisions the simulator makes.

use reed_solomon_erasure::galois_8::ReedSolomon;
use thiserror::Error;
use xdcc_multipath::ec::{BlockCode, BlockRx, RxOutcome};

use crate::wire::{BlockPacket, MAX_PAYLOAD};

/// The longest payload a coded data packet carries (its shard, with the
/// 2-byte length, must fit one packet).
pub const MAX_DATA_PAYLOAD: usize = MAX_PAYLOAD - 2;

#[derive(Debug, Error, PartialEq)]
pub enum CodingError {
    #[error("{0}")]
    Code(&'static str),
    #[error("a block of {0} data packets (1..={1})")]
    BlockSize(usize, u8),
    #[error("a payload of {0} bytes (at most {MAX_DATA_PAYLOAD})")]
    PayloadTooLong(usize),
    #[error("packet of a block of {got_data}+{got_parity} in a block of {data}+{parity}")]
    Geometry { data: u8, parity: u8, got_data: u8, got_parity: u8 },
    #[error("parity shard of {got} bytes in a block whose shards are {want}")]
    ShardLength { want: usize, got: usize },
    #[error("data packet of {payload} bytes in a block whose shards hold {room}")]
    DataTooLong { payload: usize, room: usize },
    #[error("the block has {have} of the {need} packets it needs")]
    Incomplete { have: u32, need: u8 },
    #[error("rebuilt packet {0} says it holds more than its shard: the block's packets do not belong together")]
    Corrupt(u8),
    #[error("Reed-Solomon: {0:?}")]
    Rs(reed_solomon_erasure::Error),
}

/// One Reed–Solomon code per block size, 1..=`data` data packets (a flow's
/// last block holds what is left), all with the same parity.
pub struct Coder {
    code: BlockCode,
    /// codecs[k - 1] codes a block of k data packets; none without parity.
    codecs: Vec<ReedSolomon>,
}

impl Coder {
    pub fn new(code: BlockCode) -> Result<Self, CodingError> {
        code.check().map_err(CodingError::Code)?;
        let codecs = if code.parity == 0 {
            Vec::new()
        } else {
            (1..=code.data)
                .map(|k| ReedSolomon::new(usize::from(k), usize::from(code.parity)).map_err(CodingError::Rs))
                .collect::<Result<_, _>>()?
        };
        Ok(Self { code, codecs })
    }

    pub fn code(&self) -> BlockCode {
        self.code
    }

    fn codec(&self, data: usize) -> Option<&ReedSolomon> {
        self.codecs.get(data.checked_sub(1)?)
    }

    /// The parity shards of a block whose data packets carry `payloads`
    /// (1..=`data` of them), each as long as the block's shards.
    pub fn encode(&self, payloads: &[&[u8]]) -> Result<Vec<Vec<u8>>, CodingError> {
        let k = payloads.len();
        if k == 0 || k > usize::from(self.code.data) {
            return Err(CodingError::BlockSize(k, self.code.data));
        }
        if let Some(p) = payloads.iter().find(|p| p.len() > MAX_DATA_PAYLOAD) {
            return Err(CodingError::PayloadTooLong(p.len()));
        }
        let Some(rs) = self.codec(k) else { return Ok(Vec::new()) };
        let shard_len = payloads.iter().map(|p| p.len()).max().unwrap_or(0) + 2;
        let data: Vec<Vec<u8>> = payloads.iter().map(|p| frame(p, shard_len)).collect();
        let mut parity = vec![vec![0u8; shard_len]; usize::from(self.code.parity)];
        rs.encode_sep(&data, &mut parity).map_err(CodingError::Rs)?;
        Ok(parity)
    }
}

/// A data packet's payload as a shard of `shard_len` bytes (module doc).
fn frame(payload: &[u8], shard_len: usize) -> Vec<u8> {
    let mut s = Vec::with_capacity(shard_len);
    // (payload.len() <= MAX_DATA_PAYLOAD < 2^16, checked by the callers.)
    s.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    s.extend_from_slice(payload);
    s.resize(shard_len, 0);
    s
}

/// The receiver's copy of one block: the packets that arrived, until any
/// `data` of them rebuild the block's data.
pub struct BlockAssembly {
    data: u8,
    parity: u8,
    rx: BlockRx,
    /// Data packets' payloads, then parity shards, by index.
    packets: Vec<Option<Vec<u8>>>,
    /// The block's shard length, from its first parity packet.
    shard_len: Option<usize>,
}

impl BlockAssembly {
    /// A block of `data` data and `parity` parity packets (as its packets'
    /// headers say; the wire format checked the geometry).
    pub fn new(data: u8, parity: u8) -> Result<Self, CodingError> {
        BlockCode { data, parity }.check().map_err(CodingError::Code)?;
        let width = usize::from(data) + usize::from(parity);
        Ok(Self { data, parity, rx: BlockRx::default(), packets: vec![None; width], shard_len: None })
    }

    /// Packet `p` of this block arrived at `now_ns`; `wait_ns` is how long
    /// the receiver waits for the rest before it NACKs the block. A packet
    /// that contradicts the ones before (another geometry, another shard
    /// length, a payload longer than the shards) is refused and changes
    /// nothing; a duplicate, or one after the block completed, is counted
    /// as such and not kept.
    pub fn add(&mut self, p: &BlockPacket, now_ns: u64, wait_ns: u64) -> Result<RxOutcome, CodingError> {
        if (p.data, p.parity) != (self.data, self.parity) {
            return Err(CodingError::Geometry {
                data: self.data,
                parity: self.parity,
                got_data: p.data,
                got_parity: p.parity,
            });
        }
        if p.is_parity() {
            let got = p.payload.len();
            match self.shard_len {
                Some(want) if want != got => return Err(CodingError::ShardLength { want, got }),
                None => {
                    // Every shard is at least the 2-byte length, and holds
                    // the data packets that came before it.
                    let longest = self.data_payloads().map(|d| d.len()).max().unwrap_or(0);
                    if got < 2 || got - 2 < longest {
                        return Err(CodingError::DataTooLong { payload: longest, room: got.saturating_sub(2) });
                    }
                }
                _ => {}
            }
        } else if p.payload.len() > MAX_DATA_PAYLOAD {
            return Err(CodingError::PayloadTooLong(p.payload.len()));
        } else if let Some(shard_len) = self.shard_len {
            if p.payload.len() > shard_len - 2 {
                return Err(CodingError::DataTooLong { payload: p.payload.len(), room: shard_len - 2 });
            }
        }
        let outcome = self.rx.on_packet(p.index, self.data, now_ns, wait_ns);
        if matches!(outcome, RxOutcome::Counted | RxOutcome::Completed) {
            if p.is_parity() {
                self.shard_len = Some(p.payload.len());
            }
            if let Some(slot) = self.packets.get_mut(usize::from(p.index)) {
                *slot = Some(p.payload.to_vec());
            }
        }
        Ok(outcome)
    }

    fn data_payloads(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.packets[..usize::from(self.data)].iter().flatten()
    }

    pub fn complete(&self) -> bool {
        self.rx.complete()
    }

    /// The block's receive state (packets counted, the NACK timer).
    pub fn rx(&mut self) -> &mut BlockRx {
        &mut self.rx
    }

    /// Data packets that did not arrive (what `rebuild` would recompute).
    pub fn missing_data(&self) -> usize {
        self.packets[..usize::from(self.data)].iter().filter(|p| p.is_none()).count()
    }

    /// The block's data payloads in order, rebuilt from its parity where
    /// packets are missing.
    pub fn rebuild(&self, coder: &Coder) -> Result<Vec<Vec<u8>>, CodingError> {
        if !self.complete() {
            return Err(CodingError::Incomplete { have: self.rx.received(), need: self.data });
        }
        let k = usize::from(self.data);
        if self.missing_data() == 0 {
            return Ok(self.packets[..k].iter().flatten().cloned().collect());
        }
        if coder.code().parity != self.parity {
            return Err(CodingError::Geometry {
                data: coder.code().data,
                parity: coder.code().parity,
                got_data: self.data,
                got_parity: self.parity,
            });
        }
        let rs = coder.codec(k).ok_or(CodingError::BlockSize(k, coder.code().data))?;
        // Complete with data missing: some parity arrived, so the shard
        // length is known.
        let shard_len = self.shard_len.ok_or(CodingError::Incomplete { have: self.rx.received(), need: self.data })?;
        let mut shards: Vec<Option<Vec<u8>>> = self
            .packets
            .iter()
            .enumerate()
            .map(|(i, p)| p.as_ref().map(|p| if i < k { frame(p, shard_len) } else { p.clone() }))
            .collect();
        rs.reconstruct_data(&mut shards).map_err(CodingError::Rs)?;
        shards
            .into_iter()
            .take(k)
            .enumerate()
            .map(|(i, s)| {
                let s = s.ok_or(CodingError::Corrupt(i as u8))?;
                let len = usize::from(u16::from_be_bytes([s[0], s[1]]));
                if len > shard_len - 2 {
                    return Err(CodingError::Corrupt(i as u8));
                }
                Ok(s[2..2 + len].to_vec())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payloads(k: usize, seed: u8) -> Vec<Vec<u8>> {
        // Unequal lengths: the framing must carry each one.
        (0..k).map(|i| (0..(1400 - 97 * i)).map(|j| (j as u8).wrapping_mul(seed).wrapping_add(i as u8)).collect()).collect()
    }

    /// A block of k data packets and the parity `coder` gives it.
    fn coded(coder: &Coder, k: usize, seed: u8) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let data = payloads(k, seed);
        let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
        let parity = coder.encode(&refs).unwrap();
        (data, parity)
    }

    fn packets<'a>(data: &'a [Vec<u8>], parity: &'a [Vec<u8>]) -> Vec<BlockPacket<'a>> {
        let (k, m) = (data.len() as u8, parity.len() as u8);
        data.iter()
            .chain(parity)
            .enumerate()
            .map(|(i, p)| BlockPacket { flow: 1, seq: i as u64, block: 0, index: i as u8, data: k, parity: m, wait_us: 640, payload: p })
            .collect()
    }

    #[test]
    fn any_eight_of_ten_rebuild_the_block_byte_exact() {
        let coder = Coder::new(BlockCode::default()).unwrap();
        let (data, parity) = coded(&coder, 8, 13);
        assert_eq!(parity.len(), 2);
        assert!(parity.iter().all(|p| p.len() == 1402), "shards are the longest payload plus its length");
        let all = packets(&data, &parity);
        let mut rebuilt_blocks = 0;
        for lost_a in 0..10 {
            for lost_b in lost_a + 1..10 {
                let mut b = BlockAssembly::new(8, 2).unwrap();
                for p in all.iter().filter(|p| p.index != lost_a && p.index != lost_b) {
                    b.add(p, 0, 640).unwrap();
                }
                assert!(b.complete());
                rebuilt_blocks += usize::from(b.missing_data() > 0);
                assert_eq!(b.rebuild(&coder).unwrap(), data, "lost {lost_a} and {lost_b}");
            }
        }
        assert_eq!(rebuilt_blocks, 44, "every pair but the two parity packets needs the code");
    }

    #[test]
    fn seven_of_ten_do_not_and_the_nack_comes_due() {
        let coder = Coder::new(BlockCode::default()).unwrap();
        let (data, parity) = coded(&coder, 8, 5);
        let all = packets(&data, &parity);
        let mut b = BlockAssembly::new(8, 2).unwrap();
        for p in &all[3..] {
            b.add(p, 1_000, 640_000).unwrap();
        }
        assert!(!b.complete());
        assert_eq!(b.rebuild(&coder), Err(CodingError::Incomplete { have: 7, need: 8 }));
        assert!(b.rx().on_timer(641_000), "the block is NACKed once its timer runs out");
        // The resent packet completes it.
        assert_eq!(b.add(&all[0], 700_000, 672_000), Ok(RxOutcome::Completed));
        assert_eq!(b.rebuild(&coder).unwrap(), data);
    }

    #[test]
    fn a_short_last_block_is_coded_with_its_own_size() {
        let coder = Coder::new(BlockCode::default()).unwrap();
        for k in 1..=8 {
            let (data, parity) = coded(&coder, k, 3);
            let all = packets(&data, &parity);
            let mut b = BlockAssembly::new(k as u8, 2).unwrap();
            // The first data packet and the first parity packet are lost (a
            // block of one data packet: its data only).
            for p in all.iter().filter(|p| p.index != 0 && (k < 2 || p.index != k as u8)) {
                b.add(p, 0, 1).unwrap();
            }
            assert_eq!(b.rebuild(&coder).unwrap(), data, "{k} data packets");
        }
    }

    #[test]
    fn packets_that_contradict_the_block_are_refused_and_change_nothing() {
        let coder = Coder::new(BlockCode::default()).unwrap();
        let (data, parity) = coded(&coder, 8, 7);
        let all = packets(&data, &parity);
        let mut b = BlockAssembly::new(8, 2).unwrap();
        b.add(&all[8], 0, 1).unwrap();
        let short = BlockPacket { payload: &parity[1][..100], ..all[9] };
        assert_eq!(b.add(&short, 0, 1), Err(CodingError::ShardLength { want: 1402, got: 100 }));
        let long = vec![0u8; 1401];
        let too_long = BlockPacket { payload: &long, ..all[3] };
        assert_eq!(b.add(&too_long, 0, 1), Err(CodingError::DataTooLong { payload: 1401, room: 1400 }));
        let other = BlockPacket { data: 4, ..all[2] };
        assert!(matches!(b.add(&other, 0, 1), Err(CodingError::Geometry { .. })));
        assert_eq!(b.rx().received(), 1, "only the first parity packet counted");
        assert_eq!(b.add(&all[8], 0, 1), Ok(RxOutcome::Duplicate));
        for p in &all[..7] {
            b.add(p, 0, 1).unwrap();
        }
        assert_eq!(b.rebuild(&coder).unwrap(), data);
        // A parity shard that does not belong (another block's) rebuilds
        // garbage; a length beyond the shard is caught.
        let mut b = BlockAssembly::new(8, 2).unwrap();
        let foreign = vec![0xffu8; 1402];
        for p in all.iter().filter(|p| p.index != 0 && p.index != 9) {
            let p = if p.index == 8 { BlockPacket { payload: &foreign, ..*p } } else { *p };
            b.add(&p, 0, 1).unwrap();
        }
        assert_eq!(b.rebuild(&coder), Err(CodingError::Corrupt(0)));
    }

    #[test]
    fn bad_blocks_are_refused() {
        let coder = Coder::new(BlockCode::default()).unwrap();
        assert_eq!(coder.encode(&[]), Err(CodingError::BlockSize(0, 8)));
        let nine = vec![b"x".as_slice(); 9];
        assert_eq!(coder.encode(&nine), Err(CodingError::BlockSize(9, 8)));
        let huge = vec![0u8; MAX_DATA_PAYLOAD + 1];
        assert_eq!(coder.encode(&[&huge]), Err(CodingError::PayloadTooLong(MAX_DATA_PAYLOAD + 1)));
        assert!(Coder::new(BlockCode { data: 0, parity: 2 }).is_err());
        assert!(BlockAssembly::new(30, 3).is_err());
        // Without parity there is nothing to code, and nothing to rebuild.
        let plain = Coder::new(BlockCode { data: 4, parity: 0 }).unwrap();
        assert_eq!(plain.encode(&[b"ab"]).unwrap(), Vec::<Vec<u8>>::new());
    }
}
