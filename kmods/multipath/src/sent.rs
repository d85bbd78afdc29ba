//! Which path carried which bytes of a byte stream (TCP under UnoLB): the
//! sender records each transmission's bytes, subflow and entropy; when a
//! sequence number is retransmitted, the transmission before names the
//! subflow and the entropy that lost it ([`crate::Balancer::on_subflow_loss`]).
//!
//! A ring of the last [`SENT_RING`] transmissions (sequence numbers wrap at
//! 2^32 and are compared as TCP does), searched newest first. Bytes older
//! than the ring are not attributed.

/// Transmissions remembered per flow. TCP sends up to 64 KiB per packet
/// with TSO (a 10 Gbit/s, 100 µs window is two or three of them); without
/// TSO, 256 packets of 1,448 bytes cover 370 kB.
pub const SENT_RING: usize = 256;

/// One transmission: its bytes, subflow and entropy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    pub start: u32,
    pub end: u32,
    pub subflow: u8,
    pub entropy: u16,
}

#[derive(Clone, Copy, Debug)]
pub struct SentRing {
    sent: [Sent; SENT_RING],
    /// Transmissions recorded in all (the next one goes to `len % SENT_RING`).
    len: u32,
    /// One past the highest byte sent (valid once `len != 0`).
    high: u32,
}

/// `a` is before `b` in sequence space.
#[inline(always)]
const fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

impl SentRing {
    pub const EMPTY: Self =
        Self { sent: [Sent { start: 0, end: 0, subflow: 0, entropy: 0 }; SENT_RING], len: 0, high: 0 };

    /// Bytes `seq..seq + bytes` left on `subflow` with `entropy` (a first
    /// transmission or a retransmission).
    pub fn record(&mut self, seq: u32, bytes: u32, subflow: u8, entropy: u16) {
        if bytes == 0 {
            return;
        }
        let end = seq.wrapping_add(bytes);
        if self.len == 0 || before(self.high, end) {
            self.high = end;
        }
        self.sent[self.len as usize % SENT_RING] = Sent { start: seq, end, subflow, entropy };
        self.len = self.len.wrapping_add(1);
        // (A ring that wrapped u32 keeps working: only `len % SENT_RING`
        // and `len != 0` are read, and 2^32 is a multiple of SENT_RING.)
        if self.len == 0 {
            self.len = SENT_RING as u32;
        }
    }

    /// The `skip + 1`-th newest transmission that carried byte `seq`, if it
    /// is still recorded. (TCP tells of a retransmission after sending it:
    /// the transmission that was lost is then the second newest, `skip` 1.)
    pub fn carrier(&self, seq: u32, skip: u32) -> Option<Sent> {
        let n = (self.len as usize).min(SENT_RING);
        let newest = (self.len as usize).wrapping_sub(1);
        let mut skip = skip;
        for k in 0..n {
            let t = self.sent[newest.wrapping_sub(k) % SENT_RING];
            if !before(seq, t.start) && before(seq, t.end) {
                if skip == 0 {
                    return Some(t);
                }
                skip -= 1;
            }
        }
        None
    }

    /// Byte `seq` was sent before: a transmission starting there is a
    /// retransmission.
    pub fn is_retransmission(&self, seq: u32) -> bool {
        self.len != 0 && before(seq, self.high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(r: &SentRing, seq: u32, skip: u32) -> Option<(u8, u16)> {
        r.carrier(seq, skip).map(|t| (t.subflow, t.entropy))
    }

    #[test]
    fn names_the_carrier_of_each_byte() {
        let mut r = SentRing::EMPTY;
        assert_eq!(sub(&r, 0, 0), None);
        r.record(1000, 100, 3, 33);
        r.record(1100, 50, 4, 44);
        r.record(1150, 0, 5, 55); // nothing sent
        assert_eq!(sub(&r, 999, 0), None, "before the first byte recorded");
        assert_eq!(sub(&r, 1000, 0), Some((3, 33)));
        assert_eq!(sub(&r, 1099, 0), Some((3, 33)));
        assert_eq!(sub(&r, 1100, 0), Some((4, 44)));
        assert_eq!(sub(&r, 1149, 0), Some((4, 44)));
        assert_eq!(sub(&r, 1150, 0), None, "not sent yet");
    }

    #[test]
    fn a_retransmission_names_the_transmission_before_it() {
        let mut r = SentRing::EMPTY;
        r.record(0, 100, 1, 11);
        r.record(100, 100, 2, 22);
        r.record(0, 50, 7, 77); // first retransmission, on subflow 7
        assert_eq!(sub(&r, 10, 0), Some((7, 77)), "the retransmission itself");
        assert_eq!(sub(&r, 10, 1), Some((1, 11)), "what it replaced");
        assert_eq!(sub(&r, 60, 1), None, "bytes 50.. were sent once");
        r.record(0, 50, 8, 88); // the retransmission was lost too
        assert_eq!(sub(&r, 10, 1), Some((7, 77)));
        assert_eq!(sub(&r, 150, 0), Some((2, 22)));
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut r = SentRing::EMPTY;
        r.record(u32::MAX - 99, 100, 1, 1);
        r.record(0, 100, 2, 2);
        assert_eq!(sub(&r, u32::MAX, 0), Some((1, 1)));
        assert_eq!(sub(&r, 5, 0), Some((2, 2)));
        assert_eq!(sub(&r, 100, 0), None);
        assert_eq!(sub(&r, u32::MAX - 100, 0), None);
    }

    #[test]
    fn tells_a_retransmission_from_new_data_across_the_wrap() {
        let mut r = SentRing::EMPTY;
        assert!(!r.is_retransmission(0), "nothing sent yet");
        r.record(u32::MAX - 99, 100, 1, 1);
        r.record(0, 100, 2, 2);
        assert!(r.is_retransmission(u32::MAX - 50));
        assert!(r.is_retransmission(50));
        assert!(!r.is_retransmission(100), "the next new byte");
        r.record(u32::MAX - 99, 100, 3, 3); // a retransmission moves nothing
        assert!(!r.is_retransmission(100));
    }

    #[test]
    fn forgets_what_left_the_ring() {
        let mut r = SentRing::EMPTY;
        for k in 0..(SENT_RING as u32 + 10) {
            r.record(k * 10, 10, (k % 10) as u8, k as u16);
        }
        assert_eq!(sub(&r, 0, 0), None, "overwritten");
        assert_eq!(sub(&r, 95, 0), None, "overwritten");
        assert_eq!(sub(&r, 100, 0), Some((0, 10)));
        let last = SENT_RING as u32 + 9;
        assert_eq!(sub(&r, last * 10 + 9, 0), Some(((last % 10) as u8, last as u16)));
    }
}
