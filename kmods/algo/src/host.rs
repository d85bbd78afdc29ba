//! Host delay: the part of a real host's RTT that is not the fabric's.
//!
//! The papers' transports run in NICs: an RTT sample is propagation plus
//! switch queueing. Linux TCP's samples also hold the end hosts' delay —
//! softirq scheduling, the backlog of packets the CPU has not processed yet,
//! GRO/ACK batching — tens to hundreds of µs under load, far above a rack's
//! few-µs base RTT. The flow's minimum RTT (taken when the host was idle)
//! has none of it. An algorithm that sizes a window, a measurement period or
//! a target from that minimum alone sees a pipe 10–30× shorter than its ACK
//! clock really is (issue 28: UnoCC's QuickAdapt measured over 6 µs while
//! the ACKs came back after ~150 µs, SMaRTT's window capped at 1.5 × a 6 µs
//! BDP, OSCAR's target delay 30 µs below every sample).
//!
//! Model. A switch queue delays *every* packet that passes it while it lasts;
//! host delay is bursty: packets that find the CPU free pass at once, others
//! wait behind a batch. So within one **round** of a few consecutive samples
//! (16: a fraction of an RTT at large windows, a few RTTs at a 2-packet
//! window; either way the fabric queue changes little across it):
//! - the round's **minimum** RTT is propagation plus the fabric's queue;
//! - its **mean** adds the host's mean delay.
//! The host delay is the EWMA, over rounds, of `mean − min`, taken only
//! from rounds whose minimum is near the base RTT (at most 2 × base + 5 µs):
//! rounds in which some packet found both the host and the fabric idle.
//! Without that guard a standing fabric queue whose delay varies within a
//! round (GSO bursts) was read as host delay, which raised SMaRTT's target
//! and let the queue grow further (bench/realspeed.sh: 320 kB of queue and
//! 1.7 ms RTT instead of 6 kB and 0.13 ms). In the
//! simulator (no host) and on a FIFO whose queue changes little within a
//! round it stays near 0, and the algorithms behave as in their papers; at
//! real speed it is what the ACK clock adds to the minimum RTT.
//! `base RTT + host delay` is the flow's **pipe RTT**: what one window takes
//! to come back when no switch queues it.
//!
//! Samples above 65 ms are not used (µs in 16 bits: host delay matters only
//! next to µs base RTTs; a WAN flow's estimate stays where it was).
//!
//! What each algorithm does with it is stated in its file (deviation lists).
//! The gain is a tunable of each (`host_delay_gain_q16`, 0 = off: the
//! estimate stays 0 and the algorithm is exactly its paper's).

use super::fixed::ewma_q16;

/// Samples per round.
pub const ROUND_SAMPLES: u32 = 16;
/// `round` packs the sample count above this many bits of the sum
/// (16 × 65,535 µs < 2^20).
const SUM_BITS: u32 = 24;
const SUM_MASK: u32 = (1 << SUM_BITS) - 1;

/// Per-flow host-delay estimator (8 bytes: it shares the kernel's private CC
/// area with the algorithm's state).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostDelay {
    /// Smallest RTT sample of the current round, µs (0: none yet).
    round_min_us: u16,
    /// The estimate, µs.
    host_us: u16,
    /// The current round: samples (bits 24–31) and their sum in µs (0–23).
    round: u32,
}

/// Default gain of the host-delay EWMA per round (1/4, Q16).
pub const DEFAULT_GAIN_Q16: u32 = super::fixed::ONE / 4;

impl HostDelay {
    pub const fn new() -> Self {
        HostDelay { round_min_us: 0, host_us: 0, round: 0 }
    }

    /// One RTT sample in ns (0: none) of a flow whose base (minimum) RTT is
    /// `base_ns`; `gain_q16` 0 keeps the estimate at 0.
    #[inline(always)]
    pub fn sample(&mut self, rtt_ns: u32, base_ns: u32, gain_q16: u32) {
        let us = rtt_ns / 1000;
        if us == 0 || us > u16::MAX as u32 {
            return;
        }
        let us16 = us as u16; // ≤ u16::MAX: checked above
        if us16 < self.round_min_us || self.round_min_us == 0 {
            self.round_min_us = us16;
        }
        let n = (self.round >> SUM_BITS).saturating_add(1);
        let sum = (self.round & SUM_MASK).saturating_add(us); // < 2^20: n ≤ 16
        if n < ROUND_SAMPLES {
            self.round = (n << SUM_BITS) | sum;
            return;
        }
        let min = self.round_min_us as u32;
        let spread = (sum / ROUND_SAMPLES).saturating_sub(min);
        if gain_q16 == 0 {
            self.host_us = 0;
        } else if min <= (base_ns / 1000).saturating_mul(2).saturating_add(5) {
            let h = ewma_q16(self.host_us as u32, spread, gain_q16);
            self.host_us = core::cmp::min(h, u16::MAX as u32) as u16;
        }
        self.restart_round();
    }

    /// The host delay estimate, ns.
    #[inline(always)]
    pub fn ns(&self) -> u32 {
        self.host_us as u32 * 1000
    }

    /// Forget the current round (after an RTO or idle period).
    pub fn restart_round(&mut self) {
        self.round_min_us = 0;
        self.round = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(h: &mut HostDelay, n: u32, round: &[u32], gain: u32) {
        for _ in 0..n {
            for &r in round {
                h.sample(r, 6_000, gain);
            }
        }
    }

    #[test]
    fn a_queue_that_delays_every_packet_is_not_host_delay() {
        let mut h = HostDelay::new();
        rounds(&mut h, 20, &[500_000; 16], DEFAULT_GAIN_Q16); // 500 µs of switch queue on every packet
        assert_eq!(h.ns(), 0);
        // a standing queue whose delay varies within the round is not either
        let mut r = [900_000u32; 16];
        r[0] = 500_000;
        rounds(&mut h, 20, &r, DEFAULT_GAIN_Q16);
        assert_eq!(h.ns(), 0);
    }

    #[test]
    fn bursty_delay_above_the_round_minimum_is_learned() {
        let mut h = HostDelay::new();
        // per 16 samples: two pass at the 6 µs base RTT, the rest wait ~160 µs
        let mut r = [160_000u32; 16];
        r[0] = 6_000;
        r[8] = 6_000;
        rounds(&mut h, 40, &r, DEFAULT_GAIN_Q16);
        let want = (14 * 160 + 2 * 6) / 16 - 6; // mean − min, µs
        // (the EWMA's integer steps stop up to 1/gain µs short)
        assert!((want - 4..=want).contains(&(h.ns() / 1000)), "{} vs {want}", h.ns());
    }

    #[test]
    fn gain_zero_is_off_and_wan_samples_are_skipped() {
        let mut h = HostDelay::new();
        rounds(&mut h, 4, &[6_000, 100_000, 6_000, 100_000], 0);
        assert_eq!(h.ns(), 0);
        rounds(&mut h, 8, &[80_000_000, 90_000_000], DEFAULT_GAIN_Q16);
        assert_eq!(h.ns(), 0);
    }
}
