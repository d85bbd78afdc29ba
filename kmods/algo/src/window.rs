//! The congestion window shared by the window-based algorithms.
//!
//! The window is kept in bytes with 16 fractional bits (`cwnd_q16`), so that
//! per-ACK additive increases far below one byte (UnoCC's α = 0.001·BDP spread
//! over a window of ACKs) accumulate exactly instead of truncating to zero.

use super::fixed::{mul_div, mul_q16, ONE, SHIFT};
use super::MAX_CWND_BYTES;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Congestion window, bytes in Q16.
    cwnd_q16: u64,
    /// Slow-start threshold in bytes; below it the window grows by the acked
    /// bytes (standard slow start), `u32::MAX` means "no slow start limit".
    pub ssthresh: u32,
    /// Window before the last loss reaction, for `undo`.
    pub prior_cwnd: u32,
}

impl Window {
    pub const fn new(cwnd_bytes: u32, ssthresh: u32) -> Self {
        let c = if cwnd_bytes > MAX_CWND_BYTES { MAX_CWND_BYTES } else { cwnd_bytes };
        Self { cwnd_q16: (c as u64) << SHIFT, ssthresh, prior_cwnd: c }
    }

    /// Window in whole bytes.
    #[inline]
    pub const fn bytes(&self) -> u32 {
        (self.cwnd_q16 >> SHIFT) as u32
    }

    #[inline]
    pub const fn in_slow_start(&self) -> bool {
        self.bytes() < self.ssthresh
    }

    /// Sets the window to `bytes`, clamped to `[min, MAX_CWND_BYTES]`.
    #[inline]
    pub fn set(&mut self, bytes: u64, min: u32) {
        let b = clamp(bytes, min as u64, MAX_CWND_BYTES as u64);
        self.cwnd_q16 = b << SHIFT;
    }

    /// Adds `inc_q16` (bytes, Q16), clamped to `max` bytes; a window already
    /// above `max` (the cap was lowered) does not grow but is not cut either.
    #[inline]
    pub fn add_q16(&mut self, inc_q16: u64, max: u32) {
        let max_q16 = (core::cmp::min(max, MAX_CWND_BYTES) as u64) << SHIFT;
        let v = self.cwnd_q16.saturating_add(inc_q16);
        self.cwnd_q16 = core::cmp::min(v, core::cmp::max(max_q16, self.cwnd_q16));
    }

    /// Additive increase of `per_rtt_q16` bytes per window's worth of ACKs:
    /// `cwnd += per_rtt · acked / cwnd` (the Reno/DCTCP `cong_avoid` shape).
    #[inline]
    pub fn ai(&mut self, per_rtt_q16: u64, acked: u32, max: u32) {
        // `| 1` keeps the divisor non-zero at the cost of one byte of window.
        let cwnd = (self.bytes() | 1) as u64;
        let inc = mul_div(per_rtt_q16, acked as u64, cwnd);
        self.add_q16(inc, max);
    }

    /// Standard slow start: grow by the acked bytes up to `ssthresh`.
    /// Returns the acked bytes left over once the threshold is reached.
    #[inline]
    pub fn slow_start(&mut self, acked: u32, max: u32) -> u32 {
        let cwnd = self.bytes();
        let room = self.ssthresh.saturating_sub(cwnd);
        let used = core::cmp::min(room, acked);
        self.add_q16((used as u64) << SHIFT, core::cmp::min(max, self.ssthresh));
        acked - used
    }

    /// Multiplicative decrease: `cwnd *= (1 − f)` with `f` in Q16 (clamped to
    /// [0, 1]), never below `min` bytes. Remembers the prior window for undo.
    #[inline]
    pub fn md(&mut self, f_q16: u32, min: u32) {
        self.prior_cwnd = self.bytes();
        let keep = ONE - core::cmp::min(f_q16, ONE);
        let v = mul_q16(self.cwnd_q16, keep);
        self.cwnd_q16 = core::cmp::max(v, (min as u64) << SHIFT);
    }

    /// Leaves slow start at the current window.
    #[inline]
    pub fn exit_slow_start(&mut self) {
        self.ssthresh = self.bytes();
    }

    /// Keeps the window within `[min, max]` bytes.
    #[inline]
    pub fn clamp(&mut self, min: u32, max: u32) {
        let hi = core::cmp::min(core::cmp::max(max, min), MAX_CWND_BYTES) as u64;
        let lo = core::cmp::min(min as u64, hi);
        let q = clamp(self.cwnd_q16, lo << SHIFT, hi << SHIFT);
        self.cwnd_q16 = q;
    }

    /// TCP's reaction to a retransmission timeout: one packet, slow start
    /// back to half the old window (at least two packets).
    pub fn rto(&mut self, mss: u32) {
        let cwnd = self.bytes();
        self.prior_cwnd = cwnd;
        self.ssthresh = core::cmp::max(cwnd / 2, super::fixed::sat_u32(2 * mss as u64));
        self.set(mss as u64, mss);
    }

    /// Takes back growth beyond `max` bytes (see `CongestionControl::hold_cwnd`).
    #[inline]
    pub fn hold(&mut self, max: u32) {
        let max_q16 = (max as u64) << SHIFT;
        if self.cwnd_q16 > max_q16 {
            self.cwnd_q16 = max_q16;
        }
    }

    pub fn undo(&mut self) {
        if self.prior_cwnd > self.bytes() {
            self.cwnd_q16 = (self.prior_cwnd as u64) << SHIFT;
        }
    }
}

#[inline]
pub(crate) const fn clamp(v: u64, lo: u64, hi: u64) -> u64 {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}
