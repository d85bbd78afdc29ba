//! UnoRC's erasure-coded blocks (uno-sc25 §4.3): inter-DC data is sent in
//! blocks of `data` packets plus `parity` packets; the receiver has a block
//! once any `data` of its packets arrived (a systematic MDS code, e.g.
//! Reed–Solomon, recovers the rest), so up to `parity` losses per block cost
//! no retransmission. The receiver starts a timer at a block's first packet
//! (each packet carries the wait: the artifact's 640 µs for inter-DC data,
//! 1.05 base RTTs for a retransmission); if it expires with the block
//! incomplete it sends one NACK for the block and disarms it, until the
//! block's next packet arms it again. The sender resends the block's
//! packets it has no ACK for. Parity packets are real packets: they take
//! window and bandwidth.
//!
//! As in the artifact (`-erasureDst -parityGroup 10 -parityCorrect 2`), no
//! bytes are coded here: a block counts as delivered when enough of its
//! packets arrived, and the flow carries `parity` extra packets per block.
//! The last block of a flow holds what is left of its data (fewer than
//! `data` packets) plus the full `parity`.

/// Most packets in one block (the receiver's bitmap).
pub const MAX_BLOCK: u8 = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockCode {
    /// Data packets per block (the artifact: 8).
    pub data: u8,
    /// Parity packets per block (the artifact: 2).
    pub parity: u8,
}

impl Default for BlockCode {
    fn default() -> Self {
        Self { data: 8, parity: 2 }
    }
}

impl BlockCode {
    pub fn check(&self) -> Result<(), &'static str> {
        if self.data == 0 {
            return Err("ec: data must be at least 1");
        }
        if (self.data as u16 + self.parity as u16) > MAX_BLOCK as u16 {
            return Err("ec: data + parity must be at most 32");
        }
        Ok(())
    }

    fn width(&self) -> u64 {
        self.data as u64 + self.parity as u64
    }

    /// Blocks that carry `data_packets` packets of data.
    pub fn blocks(&self, data_packets: u64) -> u64 {
        data_packets.div_ceil(self.data.max(1) as u64)
    }

    /// Packets sent for `data_packets` packets of data, parity included.
    pub fn packets(&self, data_packets: u64) -> u64 {
        self.blocks(data_packets).saturating_mul(self.parity as u64).saturating_add(data_packets)
    }

    /// Block of the packet with this index (0-based, parity included) and
    /// its position in the block.
    pub fn locate(&self, index: u64) -> (u64, u8) {
        let w = self.width().max(1);
        (index / w, (index % w) as u8)
    }

    /// Data packets in `block` (all but the last block: `data`).
    pub fn data_in(&self, block: u64, data_packets: u64) -> u8 {
        let d = self.data.max(1) as u64;
        data_packets.saturating_sub(block.saturating_mul(d)).min(d) as u8
    }

    /// Packets in `block`, parity included.
    pub fn size_of(&self, block: u64, data_packets: u64) -> u8 {
        self.data_in(block, data_packets).saturating_add(self.parity)
    }

    /// Index of the first packet of `block`.
    pub fn first_index(&self, block: u64) -> u64 {
        block.saturating_mul(self.width())
    }
}

/// What a packet did to its block at the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxOutcome {
    /// Seen before (a retransmission of something that arrived).
    Duplicate,
    /// Counted; the block is still short.
    Counted,
    /// This packet completed the block.
    Completed,
    /// The block was complete already.
    AlreadyComplete,
}

/// The receiver's state of one block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockRx {
    seen: u32,
    /// When the NACK timer fires (None: not armed).
    due_ns: Option<u64>,
    complete: bool,
    pub nacks: u8,
}

impl BlockRx {
    /// Packet `pos` of a block that needs `needed` packets arrived at
    /// `now_ns`, carrying the NACK wait `wait_ns` (arms the timer if it is
    /// not armed).
    pub fn on_packet(&mut self, pos: u8, needed: u8, now_ns: u64, wait_ns: u64) -> RxOutcome {
        if self.complete {
            return RxOutcome::AlreadyComplete;
        }
        if self.due_ns.is_none() {
            self.due_ns = Some(now_ns.saturating_add(wait_ns));
        }
        let bit = 1u32.checked_shl(pos as u32).unwrap_or(0);
        if bit == 0 || self.seen & bit != 0 {
            return RxOutcome::Duplicate;
        }
        self.seen |= bit;
        if self.seen.count_ones() >= needed as u32 {
            self.complete = true;
            RxOutcome::Completed
        } else {
            RxOutcome::Counted
        }
    }

    pub fn complete(&self) -> bool {
        self.complete
    }

    /// Packets of the block seen so far.
    pub fn received(&self) -> u32 {
        self.seen.count_ones()
    }

    /// When the block's NACK is due (None: complete, or not armed).
    pub fn nack_due_ns(&self) -> Option<u64> {
        if self.complete {
            return None;
        }
        self.due_ns
    }

    /// A timer check at `now_ns`: whether to send a NACK now (the block is
    /// incomplete and its timer expired); the timer is then disarmed until
    /// the block's next packet.
    pub fn on_timer(&mut self, now_ns: u64) -> bool {
        match self.nack_due_ns() {
            Some(due) if now_ns >= due => {
                self.due_ns = None;
                self.nacks = self.nacks.saturating_add(1);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_parity_counts() {
        let c = BlockCode::default();
        assert_eq!(c.blocks(16), 2);
        assert_eq!(c.packets(16), 20, "two full blocks of 8 + 2");
        assert_eq!(c.packets(17), 23, "a last block of one data packet still gets two parity packets");
        assert_eq!(c.locate(0), (0, 0));
        assert_eq!(c.locate(9), (0, 9));
        assert_eq!(c.locate(10), (1, 0));
        assert_eq!(c.data_in(2, 17), 1);
        assert_eq!(c.size_of(2, 17), 3);
        assert_eq!(c.first_index(2), 20);
    }

    #[test]
    fn a_block_completes_at_any_data_of_its_packets() {
        let mut b = BlockRx::default();
        // Packets 0 and 5 are lost: the other 8 complete the block.
        let arrivals = [1u8, 2, 3, 4, 6, 7, 8, 9];
        for (k, &p) in arrivals.iter().enumerate() {
            let o = b.on_packet(p, 8, 100 + k as u64, 640);
            assert_eq!(o, if k == 7 { RxOutcome::Completed } else { RxOutcome::Counted });
        }
        assert_eq!(b.on_packet(0, 8, 200, 640), RxOutcome::AlreadyComplete);
        assert_eq!(b.nack_due_ns(), None);
    }

    #[test]
    fn three_losses_need_a_nack_and_duplicates_do_not_count() {
        let mut b = BlockRx::default();
        for p in [0u8, 1, 2, 3, 4, 5] {
            b.on_packet(p, 8, 1_000 + p as u64, 500);
        }
        assert_eq!(b.on_packet(5, 8, 1_010, 500), RxOutcome::Duplicate);
        assert_eq!(b.received(), 6);
        assert_eq!(b.nack_due_ns(), Some(1_500), "the timer runs from the block's first packet");
        assert!(!b.on_timer(1_499));
        assert!(b.on_timer(1_500));
        assert_eq!(b.nack_due_ns(), None, "one NACK, then disarmed");
        assert!(!b.on_timer(5_000));
        // A retransmission re-arms it with its own (longer) wait.
        assert_eq!(b.on_packet(6, 8, 1_700, 1_900), RxOutcome::Counted);
        assert_eq!(b.nack_due_ns(), Some(3_600));
        assert_eq!(b.on_packet(9, 8, 1_800, 1_900), RxOutcome::Completed);
        assert!(!b.on_timer(3_600));
        assert_eq!(b.nacks, 1);
    }

    #[test]
    fn bad_codes_are_refused() {
        assert!(BlockCode { data: 0, parity: 2 }.check().is_err());
        assert!(BlockCode { data: 30, parity: 3 }.check().is_err());
        assert!(BlockCode::default().check().is_ok());
    }
}
