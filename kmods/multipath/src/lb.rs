//! Per-packet path choice: the sender labels every packet with an *entropy*
//! (a flow label, a UDP source port) and the switches' ECMP hash of (flow,
//! entropy) picks its path. A strategy decides the entropies:
//!
//! - [`Strategy::Ecmp`]: one entropy for the flow's life (single-path ECMP).
//! - [`Strategy::Spray`]: a fresh random entropy per packet (random packet
//!   spraying).
//! - [`Strategy::Plb`]: one entropy, re-drawn after `congested_rounds`
//!   consecutive rounds in which at least `congested_ppm` of the ACKs
//!   carried ECN, or after a retransmission timeout, or (`move_on_nack`)
//!   a block NACK — these two at most once per `min_move_interval_ns`
//!   (PLB, Qureshi et al., SIGCOMM '22: 50 %, 3 rounds, move on RTO — the
//!   rule of xdcc's eBPF rerouter for TCP; the Uno artifact's PLB: 25 %, 2
//!   rounds, timeouts and NACKs at most once per RTO).
//! - [`Strategy::UnoLb`] (uno-sc25 §4.2; artifact `LcpSrc::choose_route`,
//!   `SIMPLE_SUBFLOW`): `subflows` entropies drawn at random under the
//!   flow's one window, packets round-robin over them; on a timeout or a
//!   block NACK, every subflow that has not been re-drawn for a base RTT
//!   and has had no ACK for more than half a base RTT gets a new random
//!   entropy. Optionally (`prefer_recent`, the paper's text; commented out
//!   in the artifact) the round robin skips subflows silent that long
//!   while some other subflow is not. Optionally (`unanswered`, a
//!   deviation for senders whose window can hold fewer packets than there
//!   are subflows) a subflow counts as silent only when a packet sent on it
//!   has had no ACK on it for a base RTT: after a timeout the window holds
//!   one packet, every subflow it was not sent on has "no ACK for half a base
//!   RTT", and the artifact's rule re-draws the live subflows with the dead
//!   ones (on the host, two paths, one dead: a transfer stalled for over
//!   60 s; testbed/notes/2026-11-29-unolb-transport.md). With
//!   `unanswered` a re-draw is also undone when a late ACK proves the
//!   silence was delay: an ACK of a packet sent on the subflow's previous
//!   entropy, among those that went unanswered before the re-draw, puts
//!   that entropy back (an undo, as Linux undoes a window reduction that a
//!   DSACK or timestamp proves spurious). Without it, on two healthy paths
//!   of unequal queues, spurious timeouts re-draw the slower path's
//!   subflows until all sit on the faster one, where nothing reorders and
//!   nothing re-draws them back (the host's CI, 2026-11-29: 96 kB against
//!   32 MB; testbed/notes/2026-11-29-unolb-tcp.md).
//!
//! Rounds (for PLB) follow the usual rule: a round ends when a packet sent
//! after the round began is acknowledged; what a round says (its ECN share,
//! congested or not, when to move) is the agent's rerouter's own rule,
//! `xdcc_common::plb`.

use xdcc_common::plb;

/// Most subflows a UnoLB flow can have (a power of two: see [`slot`]).
pub const MAX_SUBFLOWS: usize = 16;
const _: () = assert!(MAX_SUBFLOWS.is_power_of_two());

/// Subflow `i`'s index in the per-subflow arrays, masked so that the BPF
/// verifier sees it in bounds (the eBPF programs run this code for TCP):
/// `black_box` keeps LLVM from dropping a mask it can prove redundant,
/// which the verifier cannot.
#[inline(always)]
fn slot(i: usize) -> usize {
    core::hint::black_box(i) & (MAX_SUBFLOWS - 1)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlbConfig {
    /// A round is congested when at least this share of its ACKs carried
    /// ECN, in parts per million (PLB: 50 %).
    pub congested_ppm: u32,
    /// Move after this many consecutive congested rounds (PLB: M = 3).
    pub congested_rounds: u32,
    /// Move on a retransmission timeout.
    pub move_on_timeout: bool,
    /// Move on a block NACK (UnoRC).
    pub move_on_nack: bool,
    /// Least time between two moves on timeouts or NACKs (the artifact: one RTO).
    pub min_move_interval_ns: u64,
}

impl Default for PlbConfig {
    /// PLB's paper.
    fn default() -> Self {
        Self { congested_ppm: 500_000, congested_rounds: 3, move_on_timeout: true, move_on_nack: false, min_move_interval_ns: 0 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnoLbConfig {
    /// Subflows (entropies) per flow (the artifact: 10).
    pub subflows: u8,
    /// Skip subflows silent for more than half a base RTT while another
    /// is not (the paper's "prefer subflows that recently received ACKs").
    pub prefer_recent: bool,
    /// A subflow is silent (re-drawn on a timeout or NACK) only when a
    /// packet sent on it has waited a base RTT with no ACK on it since;
    /// false: when it had no ACK for half a base RTT (the artifact).
    pub unanswered: bool,
}

impl Default for UnoLbConfig {
    /// The artifact's.
    fn default() -> Self {
        Self { subflows: 10, prefer_recent: false, unanswered: false }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    Ecmp,
    Spray,
    Plb(PlbConfig),
    UnoLb(UnoLbConfig),
}

impl Strategy {
    /// Checks the configuration (a strategy built from user input).
    pub fn check(&self) -> Result<(), &'static str> {
        match *self {
            Strategy::Plb(c) if c.congested_ppm > 1_000_000 => Err("plb: congested_ppm must be at most 1000000"),
            Strategy::UnoLb(c) if c.subflows == 0 || c.subflows as usize > MAX_SUBFLOWS => {
                Err("unolb: subflows must be within 1..=16")
            }
            _ => Ok(()),
        }
    }

    pub const fn name(&self) -> &'static str {
        match self {
            Strategy::Ecmp => "ecmp",
            Strategy::Spray => "spray",
            Strategy::Plb(_) => "plb",
            Strategy::UnoLb(_) => "unolb",
        }
    }
}

/// Why a balancer changed entropies (counted per flow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moves {
    /// PLB moves after congested rounds.
    pub congestion: u32,
    /// PLB moves on a timeout; UnoLB re-draws on a timeout.
    pub timeout: u32,
    /// UnoLB re-draws on a block NACK.
    pub nack: u32,
    /// UnoLB re-draws of a subflow that lost a packet (`on_subflow_loss`).
    pub loss: u32,
    /// UnoLB re-draws undone: a late ACK showed the old entropy delivered
    /// a packet that had made the subflow look silent (`unanswered`).
    pub undone: u32,
    /// Subflow entropies re-drawn (UnoLB) or flow moves (PLB), in all.
    pub entropies: u32,
}

/// One flow's load balancer.
#[derive(Clone, Debug)]
pub struct Balancer {
    strategy: Strategy,
    base_rtt_ns: u64,
    /// Entropy per subflow (Ecmp, Plb: only `[0]`).
    entropy: [u16; MAX_SUBFLOWS],
    /// When each subflow last had a packet acknowledged (or was drawn).
    last_ack_ns: [u64; MAX_SUBFLOWS],
    /// When each subflow's entropy was last drawn (UnoLB).
    drawn_ns: [u64; MAX_SUBFLOWS],
    /// Per subflow, the first send since its last ACK (UnoLB).
    unanswered_since_ns: [Option<u64>; MAX_SUBFLOWS],
    /// Per subflow re-drawn while silent (`unanswered`): the entropy it
    /// left and when its unanswered packets began; an ACK of a packet sent
    /// on that entropy from then until the re-draw undoes it.
    undo_entropy: [Option<u16>; MAX_SUBFLOWS],
    undo_since_ns: [u64; MAX_SUBFLOWS],
    /// The sender's smoothed RTT (0: none told; `unanswered` only).
    srtt_ns: u64,
    subflows: u8,
    next: u8,
    /// PLB's last move on a timeout or NACK.
    last_redraw_ns: Option<u64>,
    // PLB round state.
    round_start_ns: u64,
    round_acks: u32,
    round_marked: u32,
    congested_run: u32,
    pub moves: Moves,
}

fn draw16(draw: &mut impl FnMut() -> u32) -> u16 {
    (draw() >> 16) as u16
}

impl Balancer {
    /// A flow starting at `now_ns` over a path whose base RTT is
    /// `base_rtt_ns`; its first entropies come from `draw`.
    pub fn new(strategy: Strategy, base_rtt_ns: u64, now_ns: u64, draw: &mut impl FnMut() -> u32) -> Self {
        let mut b = Self::IDLE;
        b.start(strategy, base_rtt_ns, now_ns, draw);
        b
    }

    /// A balancer before its flow starts (one entropy, 0): a constant a BPF
    /// map entry is created from, then [`Balancer::start`]ed in place (it is
    /// larger than the BPF stack).
    pub const IDLE: Self = Self {
        strategy: Strategy::Ecmp,
        base_rtt_ns: 0,
        entropy: [0; MAX_SUBFLOWS],
        last_ack_ns: [0; MAX_SUBFLOWS],
        drawn_ns: [0; MAX_SUBFLOWS],
        unanswered_since_ns: [None; MAX_SUBFLOWS],
        undo_entropy: [None; MAX_SUBFLOWS],
        undo_since_ns: [0; MAX_SUBFLOWS],
        srtt_ns: 0,
        subflows: 1,
        next: 0,
        last_redraw_ns: None,
        round_start_ns: 0,
        round_acks: 0,
        round_marked: 0,
        congested_run: 0,
        moves: Moves { congestion: 0, timeout: 0, nack: 0, loss: 0, undone: 0, entropies: 0 },
    };

    /// (Re)starts the balancer in place for a flow starting at `now_ns`, as
    /// [`Balancer::new`].
    pub fn start(&mut self, strategy: Strategy, base_rtt_ns: u64, now_ns: u64, draw: &mut impl FnMut() -> u32) {
        let subflows = match strategy {
            Strategy::UnoLb(c) => c.subflows.clamp(1, MAX_SUBFLOWS as u8),
            _ => 1,
        };
        let distinct = matches!(strategy, Strategy::UnoLb(c) if c.unanswered);
        // (Field by field: a whole-struct store becomes a memcpy, which BPF
        // programs cannot call.)
        self.strategy = strategy;
        self.base_rtt_ns = base_rtt_ns;
        self.srtt_ns = 0;
        self.subflows = subflows;
        self.next = 0;
        self.last_redraw_ns = None;
        self.round_start_ns = now_ns;
        self.round_acks = 0;
        self.round_marked = 0;
        self.congested_run = 0;
        self.moves = Moves::default();
        for i in 0..MAX_SUBFLOWS {
            self.entropy[i] = 0;
            self.last_ack_ns[i] = now_ns;
            self.drawn_ns[i] = now_ns;
            self.unanswered_since_ns[i] = None;
            self.undo_entropy[i] = None;
            self.undo_since_ns[i] = 0;
        }
        for i in 0..MAX_SUBFLOWS {
            if i >= subflows as usize {
                break;
            }
            self.entropy[i] = draw16(draw);
            // (`unanswered`: distinct entropies, a few draws at most; the
            // artifact's draws stay as they were.)
            for _ in 0..4 {
                if !distinct || !self.entropy[..i].contains(&self.entropy[i]) {
                    break;
                }
                self.entropy[i] = draw16(draw);
            }
        }
    }

    /// The sender's smoothed RTT: with `unanswered`, a packet is silent
    /// only once it waited longer than 9/8 of it (queues included) and a
    /// base RTT.
    pub fn observe_rtt(&mut self, srtt_ns: u64) {
        self.srtt_ns = srtt_ns;
    }

    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The entropies in use (one per subflow).
    pub fn entropies(&self) -> &[u16] {
        &self.entropy[..self.len()]
    }

    /// Subflows in use, within the arrays by construction (code without
    /// panic paths: the eBPF programs run this file).
    fn len(&self) -> usize {
        (self.subflows as usize).min(MAX_SUBFLOWS)
    }

    /// The entropy of the next packet sent at `now_ns`.
    pub fn next_entropy(&mut self, now_ns: u64, draw: &mut impl FnMut() -> u32) -> u16 {
        self.next_subflow(now_ns, draw).1
    }

    /// The subflow (0 unless UnoLB) and entropy of the next packet sent at
    /// `now_ns`.
    pub fn next_subflow(&mut self, now_ns: u64, draw: &mut impl FnMut() -> u32) -> (u8, u16) {
        match self.strategy {
            Strategy::Ecmp | Strategy::Plb(_) => (0, self.entropy[0]),
            Strategy::Spray => (0, draw16(draw)),
            Strategy::UnoLb(c) => {
                let n = self.len().max(1);
                let mut i = self.next as usize % n;
                if c.prefer_recent {
                    // The first subflow from `next` on that is not silent;
                    // all silent: plain round robin.
                    let silent = |j: usize| now_ns.saturating_sub(self.last_ack_ns[slot(j)]) > self.base_rtt_ns / 2;
                    if let Some(j) = (0..n).map(|k| (i + k) % n).find(|&j| !silent(j)) {
                        i = j;
                    }
                }
                let i = slot(i);
                self.next = ((i + 1) % n) as u8;
                self.unanswered_since_ns[i].get_or_insert(now_ns);
                (i as u8, self.entropy[i])
            }
        }
    }

    /// The subflow and entropy of a retransmission sent at `now_ns` (TCP
    /// under UnoLB): the subflow answered most recently, not the round
    /// robin's next one, which the round robin's order leaves untried since
    /// a path failed. In RTO backoff (one packet per timeout, the timeout
    /// doubling) the round robin walked the subflows still on a dead path
    /// one timeout each; this one is re-drawn at each loss
    /// (`on_subflow_loss`) and so is a fresh draw per timeout. Other
    /// strategies: as `next_subflow`.
    pub fn retransmit_subflow(&mut self, now_ns: u64, draw: &mut impl FnMut() -> u32) -> (u8, u16) {
        if !matches!(self.strategy, Strategy::UnoLb(_)) {
            return self.next_subflow(now_ns, draw);
        }
        let (mut best, mut at) = (0usize, 0u64);
        for j in 0..MAX_SUBFLOWS {
            if j >= self.len() {
                break;
            }
            let j = slot(j);
            if self.last_ack_ns[j] > at {
                (best, at) = (j, self.last_ack_ns[j]);
            }
        }
        let best = slot(best);
        self.unanswered_since_ns[best].get_or_insert(now_ns);
        (best as u8, self.entropy[best])
    }

    /// A packet sent at `sent_ns` with `entropy` was acknowledged at
    /// `now_ns`; `marked`: its ACK carried ECN.
    pub fn on_ack(&mut self, now_ns: u64, sent_ns: u64, entropy: u16, marked: bool, draw: &mut impl FnMut() -> u32) {
        match self.strategy {
            Strategy::UnoLb(c) => {
                if let Some(i) = self.entropies().iter().position(|&e| e == entropy) {
                    self.last_ack_ns[i] = now_ns;
                    self.unanswered_since_ns[i] = None;
                } else if c.unanswered {
                    self.undo_redraw(now_ns, sent_ns, entropy);
                }
            }
            Strategy::Plb(c) => {
                self.round_acks = self.round_acks.saturating_add(1);
                self.round_marked = self.round_marked.saturating_add(marked as u32);
                if sent_ns < self.round_start_ns {
                    return;
                }
                // The round ends: was it congested?
                let ppm = plb::ecn_ppm(self.round_marked as u64, self.round_acks as u64);
                let congested = plb::congested(ppm, self.round_acks as u64, c.congested_ppm);
                self.congested_run = plb::next_run(self.congested_run, congested);
                self.round_start_ns = now_ns;
                self.round_acks = 0;
                self.round_marked = 0;
                if plb::should_move(self.congested_run, c.congested_rounds) {
                    self.congested_run = 0;
                    self.entropy[0] = self.fresh(self.entropy[0], draw);
                    self.moves.congestion = self.moves.congestion.saturating_add(1);
                    self.moves.entropies = self.moves.entropies.saturating_add(1);
                }
            }
            Strategy::Ecmp | Strategy::Spray => {}
        }
    }

    /// A retransmission timeout at `now_ns`.
    pub fn on_timeout(&mut self, now_ns: u64, draw: &mut impl FnMut() -> u32) {
        let acted = match self.strategy {
            Strategy::Plb(c) if c.move_on_timeout => self.plb_move(now_ns, c, draw),
            Strategy::UnoLb(c) => self.redraw_silent(now_ns, c, draw),
            _ => false,
        };
        if acted {
            self.moves.timeout = self.moves.timeout.saturating_add(1);
        }
    }

    /// The sender found a packet lost that it had sent on `subflow` with
    /// `entropy` (TCP: a retransmission by SACK/RACK loss detection, a tail
    /// loss probe or an RTO). UnoLB re-draws the subflow if the packet went
    /// on its current entropy and that was drawn a base RTT ago or more: a
    /// path that lost a packet is left at once, as the paper's sender does
    /// on a NACK or timeout, and the losses of packets sent before a re-draw
    /// (still in flight on the old path) do not move the subflow again.
    /// Whether it changed.
    pub fn on_subflow_loss(&mut self, subflow: u8, entropy: u16, now_ns: u64, draw: &mut impl FnMut() -> u32) -> bool {
        let Strategy::UnoLb(c) = self.strategy else {
            return false;
        };
        let i = subflow as usize;
        if i >= self.len() {
            return false;
        }
        let i = slot(i);
        if self.entropy[i] != entropy || now_ns.saturating_sub(self.drawn_ns[i]) < self.base_rtt_ns {
            return false;
        }
        // `unanswered`: only a subflow that stopped delivering (a loss
        // while its packets keep arriving is reordering or one drop).
        if c.unanswered && !self.silent(i, now_ns) {
            return false;
        }
        self.redraw(i, c, now_ns, draw);
        self.moves.loss = self.moves.loss.saturating_add(1);
        true
    }

    /// A packet sent on `subflow` with `entropy` was delivered (TCP: the
    /// cumulative ACK or a SACK block ended in its bytes): the subflow
    /// answers, if that is still its entropy.
    pub fn on_subflow_ack(&mut self, subflow: u8, entropy: u16, now_ns: u64) {
        let i = subflow as usize;
        if i >= self.len() {
            return;
        }
        let i = slot(i);
        if self.entropy[i] == entropy {
            self.last_ack_ns[i] = now_ns;
            self.unanswered_since_ns[i] = None;
        }
    }

    /// `unanswered`: a packet sent on subflow `i` has waited for an answer
    /// longer than a base RTT and 9/8 of the smoothed RTT.
    fn silent(&self, i: usize, now_ns: u64) -> bool {
        // (min + wrapping_mul: the same as saturating, without the 128-bit
        // multiply BPF lacks)
        let wait = self.base_rtt_ns.max(self.srtt_ns.min(u64::MAX / 9).wrapping_mul(9) / 8);
        self.unanswered_since_ns[slot(i)].is_some_and(|t| now_ns.saturating_sub(t) >= wait)
    }

    /// The receiver reported an incomplete block (UnoRC's NACK) at `now_ns`.
    pub fn on_nack(&mut self, now_ns: u64, draw: &mut impl FnMut() -> u32) {
        let acted = match self.strategy {
            Strategy::Plb(c) if c.move_on_nack => self.plb_move(now_ns, c, draw),
            Strategy::UnoLb(c) => self.redraw_silent(now_ns, c, draw),
            _ => false,
        };
        if acted {
            self.moves.nack = self.moves.nack.saturating_add(1);
        }
    }

    /// PLB on a timeout or NACK: a new path, at most once per interval.
    fn plb_move(&mut self, now_ns: u64, c: PlbConfig, draw: &mut impl FnMut() -> u32) -> bool {
        if self.last_redraw_ns.is_some_and(|t| now_ns.saturating_sub(t) < c.min_move_interval_ns) {
            return false;
        }
        self.last_redraw_ns = Some(now_ns);
        self.entropy[0] = self.fresh(self.entropy[0], draw);
        self.congested_run = 0;
        self.moves.entropies = self.moves.entropies.saturating_add(1);
        true
    }

    /// UnoLB: a new entropy for every subflow not re-drawn for a base RTT
    /// and silent (no ACK for more than half of one; `unanswered`: a packet
    /// unanswered for one). Whether any changed.
    fn redraw_silent(&mut self, now_ns: u64, c: UnoLbConfig, draw: &mut impl FnMut() -> u32) -> bool {
        let mut any = false;
        for i in 0..self.len() {
            let settled = now_ns.saturating_sub(self.drawn_ns[i]) >= self.base_rtt_ns;
            let silent = if c.unanswered {
                self.silent(i, now_ns)
            } else {
                now_ns.saturating_sub(self.last_ack_ns[i]) > self.base_rtt_ns / 2
            };
            if settled && silent {
                self.redraw(i, c, now_ns, draw);
                any = true;
            }
        }
        any
    }

    /// A late ACK at `now_ns` of a packet sent at `sent_ns` on `entropy`,
    /// which no subflow holds now: if a subflow left that entropy while the
    /// packet was among its unanswered ones, the path only delayed it and
    /// the subflow goes back to it (`unanswered`; module doc).
    fn undo_redraw(&mut self, now_ns: u64, sent_ns: u64, entropy: u16) {
        for i in 0..self.len() {
            let i = slot(i);
            if self.undo_entropy[i] == Some(entropy) && sent_ns >= self.undo_since_ns[i] && sent_ns < self.drawn_ns[i] {
                self.entropy[i] = entropy;
                self.undo_entropy[i] = None;
                self.last_ack_ns[i] = now_ns;
                self.unanswered_since_ns[i] = None;
                self.moves.undone = self.moves.undone.saturating_add(1);
                return;
            }
        }
    }

    /// A new entropy for subflow `i` (< MAX_SUBFLOWS).
    fn redraw(&mut self, i: usize, c: UnoLbConfig, now_ns: u64, draw: &mut impl FnMut() -> u32) {
        let i = slot(i);
        if c.unanswered {
            self.undo_entropy[i] = Some(self.entropy[i]);
            self.undo_since_ns[i] = self.unanswered_since_ns[i].unwrap_or(now_ns);
        }
        self.entropy[i] = self.fresh(self.entropy[i], draw);
        if c.unanswered {
            // Not one another subflow holds (it would share its path and its
            // ACKs would credit the other).
            for _ in 0..4 {
                if !self.entropies().iter().enumerate().any(|(j, &e)| j != i && e == self.entropy[i]) {
                    break;
                }
                self.entropy[i] = self.fresh(self.entropy[i], draw);
            }
        }
        self.drawn_ns[i] = now_ns;
        self.unanswered_since_ns[i] = None;
        self.moves.entropies = self.moves.entropies.saturating_add(1);
    }

    /// A random entropy other than `old`.
    fn fresh(&self, old: u16, draw: &mut impl FnMut() -> u32) -> u16 {
        let e = draw16(draw);
        if e == old {
            e.wrapping_add(1)
        } else {
            e
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> impl FnMut() -> u32 {
        let mut x = 0x1234_5678u32;
        move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        }
    }

    const RTT: u64 = 14_000;

    #[test]
    fn ecmp_keeps_one_entropy_and_spray_changes_it() {
        let mut d = counter();
        let mut e = Balancer::new(Strategy::Ecmp, RTT, 0, &mut d);
        let first = e.next_entropy(0, &mut d);
        e.on_timeout(50_000, &mut d);
        assert!((0..100).all(|t| e.next_entropy(t, &mut d) == first));
        let mut s = Balancer::new(Strategy::Spray, RTT, 0, &mut d);
        let v: std::vec::Vec<u16> = (0..100).map(|t| s.next_entropy(t, &mut d)).collect();
        let distinct: std::collections::BTreeSet<_> = v.iter().collect();
        assert!(distinct.len() > 90, "spraying drew {} distinct entropies of 100", distinct.len());
    }

    #[test]
    fn unolb_round_robins_over_its_subflows() {
        let mut d = counter();
        let mut b = Balancer::new(Strategy::UnoLb(UnoLbConfig::default()), RTT, 0, &mut d);
        let subs: std::vec::Vec<u16> = b.entropies().to_vec();
        assert_eq!(subs.len(), 10);
        let sent: std::vec::Vec<u16> = (0..20).map(|t| b.next_entropy(t, &mut d)).collect();
        assert_eq!(&sent[..10], &subs[..]);
        assert_eq!(&sent[10..], &subs[..]);
    }

    #[test]
    fn unolb_redraws_only_silent_subflows_and_once_per_base_rtt() {
        let mut d = counter();
        let mut b = Balancer::new(Strategy::UnoLb(UnoLbConfig::default()), RTT, 0, &mut d);
        let before: std::vec::Vec<u16> = b.entropies().to_vec();
        // Within the first base RTT nothing is re-drawn, however silent.
        b.on_timeout(RTT - 1, &mut d);
        assert_eq!(b.entropies(), &before[..]);
        assert_eq!(b.moves.timeout, 0);
        // Subflows 0..5 get ACKs at t = 20 µs; 5..10 stay silent.
        for &e in &before[..5] {
            b.on_ack(20_000, 10_000, e, false, &mut d);
        }
        b.on_timeout(22_000, &mut d);
        let after: std::vec::Vec<u16> = b.entropies().to_vec();
        assert_eq!(&after[..5], &before[..5], "subflows acked within half a base RTT keep their entropy");
        assert!(after[5..].iter().zip(&before[5..]).all(|(a, b)| a != b), "silent subflows get new entropies");
        assert_eq!(b.moves.timeout, 1);
        assert_eq!(b.moves.entropies, 5);
        // Within one base RTT of that, a NACK re-draws only the subflows
        // that have not just been re-drawn (0..5, now silent for > RTT/2).
        b.on_nack(22_000 + RTT - 1, &mut d);
        let later = b.entropies().to_vec();
        assert!(later[..5].iter().zip(&after[..5]).all(|(a, b)| a != b));
        assert_eq!(&later[5..], &after[5..], "re-drawn less than a base RTT ago");
        assert_eq!(b.moves.nack, 1);
        // A base RTT after their draw, they may go again.
        b.on_nack(22_000 + RTT, &mut d);
        assert!(b.entropies()[5..].iter().zip(&after[5..]).all(|(a, b)| a != b));
        assert_eq!(b.moves.nack, 2);
    }

    #[test]
    fn unolb_unanswered_redraws_only_the_subflows_that_failed_a_packet() {
        // A window of one packet after a timeout: one probe, on subflow 0,
        // and no ACK. The artifact's rule re-draws all four (none had an
        // ACK for half a base RTT); `unanswered` only the one probed.
        let mut d = counter();
        for (unanswered, redrawn) in [(false, 4), (true, 1)] {
            let cfg = UnoLbConfig { subflows: 4, unanswered, ..UnoLbConfig::default() };
            let mut b = Balancer::new(Strategy::UnoLb(cfg), RTT, 0, &mut d);
            let before = b.entropies().to_vec();
            let probe = b.next_entropy(2 * RTT, &mut d);
            assert_eq!(probe, before[0]);
            b.on_timeout(3 * RTT, &mut d);
            let changed = b.entropies().iter().zip(&before).filter(|(a, b)| a != b).count();
            assert_eq!(changed, redrawn, "unanswered: {unanswered}");
        }
        // An ACK on the subflow answers it: no re-draw then.
        let cfg = UnoLbConfig { subflows: 2, unanswered: true, ..UnoLbConfig::default() };
        let mut b = Balancer::new(Strategy::UnoLb(cfg), RTT, 0, &mut d);
        let e = b.next_entropy(RTT, &mut d);
        b.on_ack(RTT + 5_000, RTT, e, false, &mut d);
        let before = b.entropies().to_vec();
        b.on_nack(4 * RTT, &mut d);
        assert_eq!(b.entropies(), &before[..]);
    }

    #[test]
    fn unolb_unanswered_undoes_a_redraw_that_a_late_ack_proves_spurious() {
        let cfg = UnoLbConfig { subflows: 2, unanswered: true, ..UnoLbConfig::default() };
        let mut d = counter();
        // Subflow 0 sends at 2 RTT and 2.5 RTT, no answer; the timeout at
        // 4 RTT re-draws it.
        let mut b = Balancer::new(Strategy::UnoLb(cfg), RTT, 0, &mut d);
        let old = b.next_entropy(2 * RTT, &mut d);
        b.next_entropy(2 * RTT, &mut d);
        assert_eq!(b.next_entropy(2 * RTT + RTT / 2, &mut d), old);
        b.on_timeout(4 * RTT, &mut d);
        assert_ne!(b.entropies()[0], old);
        // An ACK of a packet sent on the old entropy before the subflow
        // went silent says nothing of the silence: no undo.
        b.on_ack(4 * RTT + 1, RTT, old, false, &mut d);
        assert_ne!(b.entropies()[0], old);
        assert_eq!(b.moves.undone, 0);
        // The ACK of the packet sent at 2.5 RTT, late: the path delivers.
        b.on_ack(5 * RTT, 2 * RTT + RTT / 2, old, false, &mut d);
        assert_eq!(b.entropies()[0], old);
        assert_eq!(b.moves.undone, 1);
        // Once: a second late ACK changes nothing more.
        b.on_ack(5 * RTT + 1, 2 * RTT, old, false, &mut d);
        assert_eq!((b.entropies()[0], b.moves.undone), (old, 1));
        // The artifact's rule (no `unanswered`) keeps its re-draws.
        let mut a = Balancer::new(Strategy::UnoLb(UnoLbConfig { unanswered: false, ..cfg }), RTT, 0, &mut d);
        let old = a.next_entropy(2 * RTT, &mut d);
        a.on_timeout(4 * RTT, &mut d);
        a.on_ack(5 * RTT, 2 * RTT, old, false, &mut d);
        assert_ne!(a.entropies()[0], old);
        assert_eq!(a.moves.undone, 0);
    }

    #[test]
    fn unolb_retransmissions_go_on_the_subflow_answered_last() {
        let cfg = UnoLbConfig { subflows: 10, unanswered: true, ..UnoLbConfig::default() };
        let mut d = counter();
        let mut b = Balancer::new(Strategy::UnoLb(cfg), RTT, 0, &mut d);
        let e = b.entropies().to_vec();
        b.on_subflow_ack(3, e[3], 2 * RTT);
        b.on_subflow_ack(7, e[7], 2 * RTT + 1);
        assert_eq!(b.retransmit_subflow(3 * RTT, &mut d), (7, e[7]));
        // The round robin goes on where it was.
        assert_eq!(b.next_subflow(3 * RTT, &mut d), (0, e[0]));
        assert_eq!(b.retransmit_subflow(3 * RTT, &mut d), (7, e[7]));
        assert_eq!(b.next_subflow(3 * RTT, &mut d), (1, e[1]));
    }

    #[test]
    fn unolb_rto_backoff_leaves_a_dead_path_in_a_few_timeouts() {
        // TCP in RTO backoff after a path died: 8 of 10 subflows on it (odd
        // entropies), answered last before it died; one copy of the head
        // per timeout, the timeout doubling. Each timeout re-draws the
        // silent subflows, the copy goes on the subflow answered last, and
        // the next copy's callback charges it. The round robin alone sent
        // copies to the dead subflows one timeout each (a 30-40 s stall).
        let cfg = UnoLbConfig { subflows: 10, unanswered: true, ..UnoLbConfig::default() };
        let dead = |e: u16| e % 2 == 1;
        let (mut worst, mut sum) = (0u32, 0u32);
        let seeds = 200u32;
        for seed in 0..seeds {
            let mut x = seed.wrapping_mul(2_654_435_761) | 1;
            let mut d = move || {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x
            };
            let mut b = Balancer::new(Strategy::UnoLb(cfg), RTT, 0, &mut d);
            for i in 0..10 {
                b.entropy[i] = if i < 8 { 2 * i as u16 + 1 } else { 2 * i as u16 };
            }
            for i in [8, 9, 0, 1, 2, 3, 4, 5, 6, 7] {
                b.on_subflow_ack(i, b.entropy[i as usize], 10 * RTT + u64::from(i));
            }
            // The window after the failure: one packet per subflow; the
            // live path's are answered.
            for _ in 0..10 {
                b.next_subflow(11 * RTT, &mut d);
            }
            b.on_subflow_ack(8, b.entropy[8], 12 * RTT);
            b.on_subflow_ack(9, b.entropy[9], 12 * RTT);
            let (mut now, mut rto, mut last) = (11 * RTT, 1_000_000u64, None);
            let mut timeouts = 0;
            loop {
                timeouts += 1;
                assert!(timeouts < 30, "seed {seed}: stuck on the dead path");
                now += rto;
                rto *= 2;
                b.on_timeout(now, &mut d);
                let (s, e) = b.retransmit_subflow(now, &mut d);
                if let Some((ls, le)) = last.replace((s, e)) {
                    b.on_subflow_loss(ls, le, now, &mut d);
                }
                if !dead(e) {
                    break;
                }
            }
            worst = worst.max(timeouts);
            sum += timeouts;
        }
        // A fair coin per timeout: 2 on average.
        assert!(sum <= 3 * seeds, "{sum} timeouts over {seeds} seeds: more than 3 on average");
        assert!(worst <= 12, "worst {worst} timeouts");
    }

    #[test]
    fn unolb_leaves_a_subflow_that_lost_a_packet_on_its_current_path() {
        let mut d = counter();
        let mut b = Balancer::new(Strategy::UnoLb(UnoLbConfig::default()), RTT, 0, &mut d);
        let before = b.entropies().to_vec();
        assert_eq!(b.next_subflow(1, &mut d), (0, before[0]));
        assert_eq!(b.next_subflow(2, &mut d), (1, before[1]));
        assert!(!b.on_subflow_loss(1, before[1], RTT - 1, &mut d), "drawn less than a base RTT ago");
        assert!(b.on_subflow_loss(1, before[1], RTT, &mut d));
        let after = b.entropies().to_vec();
        assert_ne!(after[1], before[1]);
        assert_eq!(after.iter().zip(&before).filter(|(a, b)| a != b).count(), 1, "only the subflow that lost");
        // A packet sent on the old entropy is lost later: the subflow has
        // already left that path.
        assert!(!b.on_subflow_loss(1, before[1], 5 * RTT, &mut d));
        assert!(!b.on_subflow_loss(1, after[1], 2 * RTT - 1, &mut d), "at most once per base RTT");
        assert!(b.on_subflow_loss(1, after[1], 2 * RTT, &mut d));
        assert!(!b.on_subflow_loss(10, 0, 3 * RTT, &mut d), "no such subflow");
        assert_eq!((b.moves.loss, b.moves.entropies), (2, 2));
        // Other strategies have no subflows to leave.
        let mut p = Balancer::new(Strategy::Plb(PlbConfig::default()), RTT, 0, &mut d);
        let e = p.entropies()[0];
        assert!(!p.on_subflow_loss(0, e, 5 * RTT, &mut d));
    }

    #[test]
    fn unolb_unanswered_leaves_only_a_subflow_that_stopped_delivering() {
        let mut d = counter();
        let cfg = UnoLbConfig { subflows: 2, unanswered: true, ..UnoLbConfig::default() };
        let mut b = Balancer::new(Strategy::UnoLb(cfg), RTT, 0, &mut d);
        b.observe_rtt(2 * RTT);
        let e = b.entropies().to_vec();
        // Both send at RTT; subflow 0's packets keep arriving, 1's do not.
        b.next_subflow(RTT, &mut d);
        b.next_subflow(RTT, &mut d);
        b.on_subflow_ack(0, e[0], 3 * RTT);
        b.next_subflow(3 * RTT, &mut d);
        // A loss on each at 4 RTT: subflow 0 answered a base RTT ago (and
        // sent since): reordering; subflow 1 silent for 3 RTT > 9/8 · 2 RTT.
        assert!(!b.on_subflow_loss(0, e[0], 4 * RTT, &mut d));
        assert!(b.on_subflow_loss(1, e[1], 4 * RTT, &mut d));
        // An answer on an old entropy does not count.
        let mut b = Balancer::new(Strategy::UnoLb(cfg), RTT, 0, &mut d);
        let e0 = b.entropies()[0];
        b.next_subflow(RTT, &mut d);
        b.on_subflow_ack(0, e0.wrapping_add(1), 2 * RTT);
        assert!(b.on_subflow_loss(0, e0, 4 * RTT, &mut d));
    }

    #[test]
    fn start_in_place_is_new() {
        let mut d1 = counter();
        let mut d2 = counter();
        let cfg = Strategy::UnoLb(UnoLbConfig { subflows: 6, unanswered: true, ..UnoLbConfig::default() });
        let a = Balancer::new(cfg, RTT, 7, &mut d1);
        let mut b = Balancer::IDLE;
        b.next_subflow(0, &mut d2);
        b.start(cfg, RTT, 7, &mut d2);
        assert_eq!(a.entropies(), b.entropies());
        assert_eq!(std::format!("{a:?}"), std::format!("{b:?}"));
    }

    #[test]
    fn unolb_prefer_recent_skips_silent_subflows() {
        let mut d = counter();
        let cfg = UnoLbConfig { subflows: 4, prefer_recent: true, ..UnoLbConfig::default() };
        let mut b = Balancer::new(Strategy::UnoLb(cfg), RTT, 0, &mut d);
        let subs = b.entropies().to_vec();
        b.on_ack(30_000, 20_000, subs[2], false, &mut d);
        // At 31 µs only subflow 2 has been heard from within RTT/2.
        assert!((0..8).all(|_| b.next_entropy(31_000, &mut d) == subs[2]));
    }

    #[test]
    fn plb_moves_after_three_congested_rounds_not_two() {
        let mut d = counter();
        let mut b = Balancer::new(Strategy::Plb(PlbConfig::default()), RTT, 0, &mut d);
        let first = b.entropies()[0];
        // One round from `start`: ten ACKs of packets sent before it (`marked`
        // of them with ECN), then the ACK of the packet sent at its start.
        fn round(b: &mut Balancer, t: &mut u64, first: u16, marked: u32, d: &mut impl FnMut() -> u32) {
            let start = *t;
            for i in 0..10 {
                b.on_ack(start + RTT - 10 + i as u64, start.saturating_sub(1), first, i < marked, d);
            }
            *t = start + RTT;
            b.on_ack(*t, start, first, marked > 5, d);
        }
        // (The first round ends at the first ACK: the rounds below start at 1 µs.)
        b.on_ack(1_000, 0, first, false, &mut d);
        let mut t = 1_000;
        let mut round = |b: &mut Balancer, marked: u32, d: &mut _| round(b, &mut t, first, marked, d);
        round(&mut b, 8, &mut d);
        round(&mut b, 8, &mut d);
        assert_eq!(b.entropies()[0], first, "two congested rounds keep the path");
        round(&mut b, 2, &mut d);
        round(&mut b, 8, &mut d);
        round(&mut b, 8, &mut d);
        assert_eq!(b.entropies()[0], first, "an uncongested round resets the count");
        round(&mut b, 8, &mut d);
        assert_ne!(b.entropies()[0], first, "the third congested round in a row moves the flow");
        assert_eq!(b.moves.congestion, 1);
    }

    #[test]
    fn plb_moves_on_timeout() {
        let mut d = counter();
        let mut b = Balancer::new(Strategy::Plb(PlbConfig::default()), RTT, 0, &mut d);
        let first = b.entropies()[0];
        b.on_nack(500_000, &mut d);
        assert_eq!(b.entropies()[0], first, "PLB's paper does not move on NACKs");
        b.on_timeout(1_000_000, &mut d);
        assert_ne!(b.entropies()[0], first);
        assert_eq!(b.moves.timeout, 1);
    }

    #[test]
    fn artifact_plb_moves_on_nacks_at_most_once_per_interval() {
        let mut d = counter();
        let cfg = PlbConfig { move_on_nack: true, min_move_interval_ns: 2_432_000, ..PlbConfig::default() };
        let mut b = Balancer::new(Strategy::Plb(cfg), RTT, 0, &mut d);
        b.on_nack(1_000_000, &mut d);
        let moved = b.entropies()[0];
        b.on_nack(2_000_000, &mut d);
        b.on_timeout(3_000_000, &mut d);
        assert_eq!(b.entropies()[0], moved, "within one RTO of the last move");
        b.on_timeout(3_432_000, &mut d);
        assert_ne!(b.entropies()[0], moved);
        assert_eq!((b.moves.nack, b.moves.timeout), (1, 1));
    }

    #[test]
    fn bad_configurations_are_refused() {
        assert!(Strategy::UnoLb(UnoLbConfig { subflows: 0, ..UnoLbConfig::default() }).check().is_err());
        assert!(Strategy::UnoLb(UnoLbConfig { subflows: 17, ..UnoLbConfig::default() }).check().is_err());
        assert!(Strategy::Plb(PlbConfig { congested_ppm: 1_000_001, ..Default::default() }).check().is_err());
        assert!(Strategy::UnoLb(UnoLbConfig::default()).check().is_ok());
    }
}
