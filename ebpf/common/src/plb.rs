//! PLB's round rule (Qureshi et al., "PLB: Congestion Signals are Simple
//! and Effective for Network Load Balancing", SIGCOMM 2022, §3): a round
//! trip is congested when at least a share of its ACKs carried ECE, and a
//! flow moves to another path after a number of congested rounds in a row.
//! Written once, for the agent's sock_ops rerouter and the simulator's PLB
//! (`kmods/multipath`). Integer-only and BPF-clean.

/// The share of a round's ACKs that carried ECE, in ppm (0 for a round
/// without ACKs).
#[inline(always)]
pub fn ecn_ppm(ece_acks: u64, acks: u64) -> u32 {
    if acks == 0 {
        return 0;
    }
    // ECE ACKs are at most the round's ACKs, far below 2^44: the
    // product fits in 64 bits.
    (ece_acks.min(acks).wrapping_mul(1_000_000) / acks) as u32
}

/// Whether a round of `acks` ACKs with that ECE share was congested.
#[inline(always)]
pub fn congested(ppm: u32, acks: u64, threshold_ppm: u32) -> bool {
    acks > 0 && ppm >= threshold_ppm
}

/// The run of consecutive congested rounds after this round.
#[inline(always)]
pub fn next_run(run: u32, congested: bool) -> u32 {
    if congested {
        run.saturating_add(1)
    } else {
        0
    }
}

/// Whether a run of `run` congested rounds asks for a move (`rounds`
/// 0: never).
#[inline(always)]
pub fn should_move(run: u32, rounds: u32) -> bool {
    rounds > 0 && run >= rounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plb_rounds_move_after_m_congested_rounds_in_a_row() {
        assert_eq!(ecn_ppm(0, 0), 0);
        assert_eq!(ecn_ppm(5, 10), 500_000);
        assert_eq!(ecn_ppm(12, 10), 1_000_000, "ECE ACKs count at most the ACKs");
        assert!(congested(500_000, 10, 500_000) && !congested(499_999, 10, 500_000));
        assert!(!congested(1_000_000, 0, 0), "a round without ACKs says nothing");
        let mut run = 0;
        for (c, want_move) in [(true, false), (true, false), (false, false), (true, false), (true, false), (true, true)] {
            run = next_run(run, c);
            assert_eq!(should_move(run, 3), want_move, "run {run}");
        }
        assert!(!should_move(100, 0), "0 rounds: never");
    }
}
