//! Host delay: the part of a real host's RTT that is not the fabric's.
//!
//! The papers' transports run in NICs: an RTT sample is propagation plus
//! switch queueing. Linux TCP's samples also hold the end hosts' delay —
//! softirq scheduling, the backlog of packets the CPU has not processed yet,
//! GRO/ACK batching — tens to hundreds of µs under load, far above a rack's
//! few-µs base RTT. The flow's minimum RTT (taken when the host was idle)
//! has none of it. An algorithm that sizes a window, a measurement period or
//! a target from that minimum alone sees a pipe 10–30× shorter than its ACK
//! clock really is (evidence: testbed/notes/2026-11-27-host-delay.md#why-a-host-delay).
//!
//! Model. A switch queue delays *every* packet that passes it while it lasts;
//! host delay is bursty: packets that find the CPU free pass at once, others
//! wait behind a batch. So within one **round** of 16 consecutive samples (a
//! fraction of an RTT at large windows, a few RTTs at a 2-packet window;
//! either way the fabric queue changes little across it):
//! - the round's **minimum** RTT is propagation plus the fabric's queue;
//! - its **mean** adds the host's mean delay.
//!
//! The estimate is the EWMA of every round's `mean − min`. The mean, not a
//! low percentile, is what a window needs: the ACK clock runs at the mean
//! RTT, and host delay is heavy-tailed
//! (evidence, and the readings compared: testbed/notes/2026-11-27-host-delay.md#the-round-mean).
//! `base RTT + host delay` is the flow's **pipe RTT**: what one window takes to come back when
//! no switch queues it. In the simulator (no host) the estimate reads only a queue's variation
//! within a round: small, but not 0 (evidence: testbed/notes/2026-11-27-host-delay.md#in-the-simulator).
//!
//! Known limit: a queue that changes within a round (a queue building) adds to the spread.
//! UnoCC and SMaRTT therefore use the estimate only to size periods and window caps (SMaRTT's
//! target RTT stays on the base RTT); OSCAR, whose samples are whole RTTs, also moves its
//! target delay by it (evidence: testbed/notes/2026-11-27-host-delay.md#known-limit).
//!
//! **Two readings of a round.** The *spread* reading above (`mean − min`) is for algorithms
//! that cannot tell a switch queue from host delay (SMaRTT, OSCAR); it misses a host that is
//! busy all the time. The *floor* reading ([`HostDelay::sample_above`]) takes the round's mean
//! above the flow's base RTT; it is for an algorithm whose fabric signals a queue — UnoCC,
//! whose ports mark (phantom queues at 90 % of the line rate) before a physical queue forms —
//! and which therefore discards every round that holds a mark: what is left above the base RTT
//! in an unmarked round is the host
//! (evidence: testbed/notes/2026-11-27-host-delay.md#two-readings-of-a-round).
//!
//! **The ACK clock.** On Linux the per-ACK sample (`rs->rtt_us`) times the *newest* byte an
//! ACK covers, the smoothed RTT (`tp->srtt_us`) the *oldest*. Under delayed and stretch ACKs
//! (GRO on the receiver, TSO on the sender) one ACK covers packets sent over a stretch of time,
//! so a window comes back after the oldest byte's RTT, not the newest's: at 10 Gbit/s the
//! floor reading of the per-ACK samples sees about half of it. [`AckClock`] keeps, at the end
//! of each round the caller keeps (an unmarked one), the EWMA of the larger of the smoothed RTT
//! above the same floor and the host-delay estimate: what a window takes to come back when no
//! switch queues it. In the simulator, which ACKs every packet, the smoothed RTT is the EWMA of
//! the samples and the two readings nearly agree
//! (evidence: testbed/notes/2026-11-27-datacenter-rates.md#4d-the-ack-clock).
//!
//! Samples of 4 ms or more are not used: host delay matters next to µs
//! base RTTs, and 12-bit µs keep the estimator in 8 bytes of the kernel's
//! private CC area (it shares them with the algorithm's state).
//!
//! What each algorithm does with it is stated in its file (deviation lists).
//! The gain is a tunable of each (`host_delay_gain_q16`, 0 = off: the
//! estimate stays 0 and the algorithm is exactly its paper's).

use super::fixed::ewma_q16;

/// Samples per round.
pub const ROUND_SAMPLES: u16 = 16;
/// Largest sample used, µs (12 bits: 16 of them sum within 16 bits).
pub const MAX_SAMPLE_US: u32 = 4095;
const VALUE: u16 = 0x0fff;
const COUNT_SHIFT: u32 = 12;

/// Per-flow host-delay estimator: 12-bit µs values in 16-bit words; the
/// top 4 bits of `round_min` count the round's samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostDelay {
    /// Round: smallest sample (bits 0–11, 0: none yet), samples (12–15).
    round_min: u16,
    /// Round: sum of its samples, µs (≤ 16 × 4095).
    round_sum: u16,
    /// The estimate, µs.
    host_us: u16,
}

/// Default gain of the host-delay EWMA per round (1/4, Q16).
pub const DEFAULT_GAIN_Q16: u32 = super::fixed::ONE / 4;

impl HostDelay {
    pub const fn new() -> Self {
        HostDelay { round_min: 0, round_sum: 0, host_us: 0 }
    }

    /// One RTT sample in ns (0: none); `gain_q16` 0 keeps the estimate at 0.
    /// The round's delay is measured above its own minimum (module doc:
    /// the "spread" reading, for algorithms that cannot tell a switch
    /// queue from host delay). Returns whether a round ended (the estimate
    /// may have changed): what an algorithm that caches a value derived
    /// from it refreshes on.
    #[inline(always)]
    pub fn sample(&mut self, rtt_ns: u32, gain_q16: u32) -> bool {
        self.sample_above(rtt_ns, 0, gain_q16)
    }

    /// One RTT sample, the round's delay measured above `floor_ns` (the
    /// flow's base RTT; 0: the round's own minimum) — the "floor" reading of
    /// the module doc, for an algorithm that discards every round in which
    /// the fabric signalled a queue ([`Self::restart_round`] on a mark).
    #[inline(always)]
    pub fn sample_above(&mut self, rtt_ns: u32, floor_ns: u32, gain_q16: u32) -> bool {
        let us = rtt_ns / 1000;
        if us.wrapping_sub(1) >= MAX_SAMPLE_US {
            return false; // 0 or above 4095 µs
        }
        let us = us as u16; // 1..=4095: checked above
        let packed = self.round_min;
        // (0 is "no sample yet": `min - 1` wraps above every sample)
        let min = packed & VALUE;
        let min = if us <= min.wrapping_sub(1) { us } else { min };
        // ≤ 16 × 4095 < 2^16: the round ends at 16 samples
        let sum = self.round_sum.wrapping_add(us);
        if packed < (ROUND_SAMPLES - 1) << COUNT_SHIFT {
            self.round_min = ((packed & !VALUE) + (1 << COUNT_SHIFT)) | min;
            self.round_sum = sum;
            return false;
        }
        self.end_round(sum, min, floor_ns, gain_q16);
        true
    }

    /// The 16th sample's work: the round's mean above its minimum, or above
    /// the floor where one is given, into the EWMA.
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn end_round(&mut self, sum: u16, min: u16, floor_ns: u32, gain_q16: u32) {
        self.restart_round();
        if gain_q16 == 0 {
            self.host_us = 0;
            return;
        }
        let floor_us = floor_ns / 1000;
        // (a floor above the round's minimum is stale: the minimum is newer)
        let low = if floor_ns != 0 && floor_us < min as u32 { floor_us as u16 } else { min };
        let spread = (sum / ROUND_SAMPLES).saturating_sub(low);
        let h = ewma_q16(self.host_us as u32, spread as u32, gain_q16);
        self.host_us = core::cmp::min(h, MAX_SAMPLE_US) as u16;
    }

    /// The host delay estimate, ns.
    #[inline(always)]
    pub fn ns(&self) -> u32 {
        self.host_us as u32 * 1000
    }

    /// Forget the current round (after an RTO or idle period).
    pub fn restart_round(&mut self) {
        self.round_min = 0;
        self.round_sum = 0;
    }
}

/// The ACK clock above the floor (module doc), µs in 16 bits: 2 bytes of
/// the private CC area, for the algorithm that needs it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckClock {
    above_us: u16,
}

impl AckClock {
    pub const fn new() -> Self {
        AckClock { above_us: 0 }
    }

    /// A round of [`HostDelay`] ended ([`HostDelay::sample_above`] returned
    /// true): the larger of the smoothed RTT `srtt_ns` (0: none, nothing
    /// changes) above `floor_ns` (the base RTT) and the updated host delay
    /// `host_ns` into the EWMA; `gain_q16` 0 clears it. (The larger is taken
    /// here, once per round, and not where the period is read: a `max` on
    /// the read side cost UnoCC's BPF program 130k verified instructions.)
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    pub fn round_end(&mut self, srtt_ns: u32, floor_ns: u32, host_ns: u32, gain_q16: u32) {
        if gain_q16 == 0 {
            self.above_us = 0;
            return;
        }
        let srtt_us = core::cmp::min(srtt_ns / 1000, MAX_SAMPLE_US);
        if srtt_us == 0 {
            return;
        }
        let above = core::cmp::max(srtt_us.saturating_sub(floor_ns / 1000), host_ns / 1000);
        let c = ewma_q16(self.above_us as u32, above, gain_q16);
        self.above_us = core::cmp::min(c, MAX_SAMPLE_US) as u16;
    }

    /// The ACK clock above the floor, ns: the host delay as a window's
    /// return sees it, never below the host-delay estimate of the last round
    /// (0 until a round ended with a smoothed RTT).
    #[inline(always)]
    pub fn ns(&self) -> u32 {
        self.above_us as u32 * 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(h: &mut HostDelay, n: u32, round: &[u32], gain: u32) {
        for _ in 0..n {
            for &r in round {
                h.sample(r, gain);
            }
        }
    }

    #[test]
    fn a_queue_that_delays_every_packet_is_not_host_delay() {
        let mut h = HostDelay::new();
        rounds(&mut h, 20, &[500_000; 16], DEFAULT_GAIN_Q16); // 500 µs of switch queue on every packet
        assert_eq!(h.ns(), 0);
    }

    #[test]
    fn bursty_delay_above_the_round_minimum_is_learned() {
        let mut h = HostDelay::new();
        // per 16 samples: two pass at the 6 µs base RTT, the rest wait ~160 µs
        let mut r = [160_000u32; 16];
        r[0] = 6_000;
        r[8] = 6_000;
        rounds(&mut h, 200, &r, DEFAULT_GAIN_Q16);
        let want = (14 * 160 + 2 * 6) / 16 - 6; // mean − min, µs
        // (the EWMA's integer steps stop up to 1/gain µs short)
        assert!((want - 4..=want).contains(&(h.ns() / 1000)), "{} vs {want}", h.ns());
    }

    #[test]
    fn steady_delay_is_read_above_the_floor_not_above_the_round_minimum() {
        // A busy host: every sample 46 µs, the idle minimum 6 µs.
        let (mut spread, mut floor) = (HostDelay::new(), HostDelay::new());
        for _ in 0..200 * 16 {
            spread.sample(46_000, DEFAULT_GAIN_Q16);
            floor.sample_above(46_000, 6_000, DEFAULT_GAIN_Q16);
        }
        assert_eq!(spread.ns(), 0, "no spread within a round");
        assert!((36_000..=40_000).contains(&floor.ns()), "{}", floor.ns());
        // A floor above the round's minimum is stale: the minimum is used.
        let mut h = HostDelay::new();
        rounds(&mut h, 200, &[20_000, 40_000], DEFAULT_GAIN_Q16);
        let mut g = HostDelay::new();
        for _ in 0..200 * 8 {
            g.sample_above(20_000, 30_000, DEFAULT_GAIN_Q16);
            g.sample_above(40_000, 30_000, DEFAULT_GAIN_Q16);
        }
        assert_eq!(g.ns(), h.ns());
    }

    #[test]
    fn the_ack_clock_reads_the_smoothed_rtt_of_kept_rounds_above_the_floor() {
        // Stretch ACKs: the newest byte comes back after 30 µs, the window
        // (the smoothed RTT, the oldest byte's) after 60; base RTT 8 µs.
        let (mut h, mut c) = (HostDelay::new(), AckClock::new());
        let sample = |h: &mut HostDelay, c: &mut AckClock, rtt: u32, srtt: u32, gain: u32| {
            if h.sample_above(rtt, 8_000, gain) {
                c.round_end(srtt, 8_000, h.ns(), gain);
            }
        };
        for _ in 0..200 * 16 {
            sample(&mut h, &mut c, 30_000, 60_000, DEFAULT_GAIN_Q16);
        }
        assert!((18_000..=22_000).contains(&h.ns()), "{}", h.ns());
        assert!((48_000..=52_000).contains(&c.ns()), "{}", c.ns());
        // Rounds cut short (a mark: restart_round) take neither reading.
        let before = (h.ns(), c.ns());
        for _ in 0..200 {
            for _ in 0..ROUND_SAMPLES - 1 {
                sample(&mut h, &mut c, 30_000, 900_000, DEFAULT_GAIN_Q16);
            }
            h.restart_round();
        }
        assert_eq!((h.ns(), c.ns()), before);
        // No smoothed RTT: no change; above 4 ms: capped; gain 0 clears.
        c.round_end(0, 8_000, 20_000, DEFAULT_GAIN_Q16);
        assert_eq!(c.ns(), before.1);
        let mut w = AckClock::new();
        for _ in 0..200 {
            w.round_end(50_000_000, 8_000, 0, DEFAULT_GAIN_Q16);
        }
        assert!(w.ns() <= MAX_SAMPLE_US * 1000);
        c.round_end(60_000, 8_000, 20_000, 0);
        assert_eq!(c.ns(), 0);
        // A smoothed RTT below the newest byte's (the simulator's per-packet
        // ACKs as a queue drains): never below the host-delay estimate.
        let mut l = AckClock::new();
        for _ in 0..200 {
            l.round_end(10_000, 8_000, 20_000, DEFAULT_GAIN_Q16);
        }
        assert!((16_000..=20_000).contains(&l.ns()), "{}", l.ns()); // (the integer EWMA stops within 1/gain µs)
    }

    #[test]
    fn gain_zero_is_off_and_wan_samples_are_skipped() {
        let mut h = HostDelay::new();
        rounds(&mut h, 4, &[6_000, 100_000, 6_000, 100_000], 0);
        assert_eq!(h.ns(), 0);
        rounds(&mut h, 64, &[6_000, 8_000_000], DEFAULT_GAIN_Q16);
        assert_eq!(h.ns(), 0);
    }
}
