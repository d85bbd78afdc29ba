//! AMRT — amrt-icpp20 §4.3 (receiver-driven rate adjustment) and §6, the
//! sender half of anti-ECN marking on TCP.
//!
//! Model. AMRT is receiver-driven: every data packet that arrives triggers
//! one grant, and a grant releases one new data packet, so the sender never
//! puts more into the network than the network delivers. Switches set CE on a
//! packet when their egress link was idle for at least one MTU's transmission
//! time before it ("spare bandwidth", eq. 2), and the marks AND along the path
//! (eq. 3). The receiver echoes each packet's mark on its grant, and a marked
//! grant releases **two** packets (§4.3). There is no decrease on marks: an
//! unmarked grant only means "no room for more".
//!
//! On TCP the ACK is the grant and the window is the number of grants in
//! circulation:
//! - every ACK releases as many bytes as it acknowledges (ACK clocking, the
//!   window unchanged);
//! - the bytes of an ACK with ECE (CE at every hop: spare bandwidth) are added
//!   to the window — one extra packet per marked packet;
//! - a loss removes the lost packets' grants: the window falls to what the
//!   network delivered in the last round trip (at most once per round trip).
//!
//! Choices where TCP forces one the paper does not make (tunable where cheap):
//! - Start: "new flows start at line rate" (§6): the initial window is
//!   `init_bdp` × BDP (rate × handshake RTT, else the intra-DC RTT), no slow
//!   start. After an RTO, Linux's slow start from one packet back to half the
//!   old window (the paper's receiver re-grants a lost packet after one RTT;
//!   TCP's timeout is the closest it has).
//! - Loss: the paper keeps the queue at ≤ 8 packets and drops beyond; the
//!   receiver grants what arrives (and re-grants a lost packet), so after a
//!   loss the sender's rate is what the path delivered. TCP reports a
//!   recovery episode, not each lost packet: at the end of a round in which a
//!   loss was reported, the window is set to the bytes acknowledged in that
//!   round (never raised; at least two packets). A flow that starts at line
//!   rate into a shared link thus lands on its share after one round.
//! - Window cap: `max_wnd_bdp` × BDP (default 2) bounds what marks can add
//!   where the host's idea of the link rate is all it has.
//! - **Classic ECN switches.** Behind a switch that marks CE for *congestion*
//!   (DCTCP/RED), every mark would make AMRT grow into the queue. Anti-ECN
//!   marks only appear when every hop's queue is empty, so a mark that comes
//!   with a queueing delay above `mark_max_qdelay_ns` (default: 16 MTUs at
//!   line rate, twice the paper's 8-packet queue, at least 10 µs of kernel
//!   RTT noise) cannot be an anti-ECN mark: it is ignored and counted
//!   (`ignored_marks` in `xdcc flows`), so the flow degrades to the
//!   conservative receiver-driven sender instead of building a queue.
//!   `mark_max_qdelay_ns = 0` trusts every mark.
//! - Without ECN negotiated no marks arrive and AMRT is the conservative
//!   sender (window fixed by its start and its losses).
//! - `spare_increase = 0` ignores marks altogether: the paper's "traditional
//!   receiver-driven" baseline (pHost/Homa-style one grant per packet), for
//!   the motivating experiments (Figs. 1–2).

use super::fixed::{bdp_bytes, mul_div, mul_q16, sat_u32, ONE};
use super::params::{check, NetConfig, ParamError};
use super::window::Window;
use super::{update_min_rtt, AckSample, CongestionControl, Event, FlowInit};

/// AMRT tunables. `repr(C)`: the BPF backend shares this layout with
/// userspace through a map.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// The host's link rate in bytes/s (sizes the initial window and the cap).
    pub rate_bytes_per_sec: u64,
    /// Packet size in bytes (window floor is two of them).
    pub mtu: u32,
    /// Intra-DC RTT in ns: the BDP's RTT until the flow has measured one.
    pub intra_rtt_ns: u32,
    /// Initial window as a multiple of the BDP, Q16 (1.0: line rate, §6).
    pub init_bdp_q16: u32,
    /// Largest window as a multiple of the BDP, Q16 (2.0).
    pub max_wnd_bdp_q16: u32,
    /// Queueing delay above which a mark is not believed, ns (0 = believe all).
    pub mark_max_qdelay_ns: u32,
    /// 1: a marked ACK adds its bytes to the window (AMRT); 0: marks are
    /// ignored (the traditional receiver-driven baseline).
    pub spare_increase: u32,
}

impl Params {
    const_unless_bpf! {
        /// The paper's defaults for a network.
        pub fn from_net(n: &NetConfig) -> Self {
            // 16 MTUs at line rate, at least 10 µs.
            let guard = mul_div(16 * 8 * n.mtu as u64, 1_000_000_000, if n.link_rate_bps == 0 { 1 } else { n.link_rate_bps });
            Self {
                rate_bytes_per_sec: n.rate_bytes_per_sec(),
                mtu: n.mtu,
                intra_rtt_ns: n.intra_rtt_ns,
                init_bdp_q16: ONE,
                max_wnd_bdp_q16: 2 * ONE,
                mark_max_qdelay_ns: sat_u32(if guard < 10_000 { 10_000 } else { guard }),
                spare_increase: 1,
            }
        }
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        check("rate_bytes_per_sec", self.rate_bytes_per_sec, 125_000, 400_000_000_000)?;
        check("mtu", self.mtu as u64, 256, 65_535)?;
        check("intra_rtt_ns", self.intra_rtt_ns as u64, 1_000, 1_000_000_000)?;
        check("init_bdp_q16", self.init_bdp_q16 as u64, 1, 64 * ONE as u64)?;
        check("max_wnd_bdp_q16", self.max_wnd_bdp_q16 as u64, ONE as u64 / 4, 64 * ONE as u64)?;
        check("mark_max_qdelay_ns", self.mark_max_qdelay_ns as u64, 0, 1_000_000_000)?;
        check("spare_increase", self.spare_increase as u64, 0, 1)?;
        Ok(())
    }
}

/// Per-flow AMRT state (fits `ICSK_CA_PRIV_SIZE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Amrt {
    w: Window,
    base_rtt_ns: u32,
    last_rtt_ns: u32,
    /// Start of the current round (send time of its first packet).
    round_start_ns: u64,
    round_acked: u32,
    /// A loss was reported in this round: the window becomes what the round
    /// delivered when it ends.
    loss_in_round: u32,
    /// `max_wnd_bdp × BDP` for this flow, bytes (refreshed with the base RTT).
    max_wnd: u32,
    /// Marks that grew the window, and marks not believed (queue too deep).
    spare_marks: u32,
    ignored_marks: u32,
    /// Rounds completed, saturating at 2: the first window is paced.
    rounds: u32,
}
assert_fits_ca_priv!(Amrt);

impl Amrt {
    fn bdp(&self, p: &Params) -> u64 {
        let rtt = if self.base_rtt_ns != 0 { self.base_rtt_ns } else { p.intra_rtt_ns };
        bdp_bytes(p.rate_bytes_per_sec, rtt)
    }

    fn refresh_flow_constants(&mut self, p: &Params) {
        let floor = 2 * p.mtu as u64;
        self.max_wnd = sat_u32(core::cmp::max(mul_q16(self.bdp(p), p.max_wnd_bdp_q16), floor));
    }

    /// Does a mark that came with this RTT sample mean spare bandwidth?
    #[inline]
    fn believable(&self, p: &Params, rtt_ns: u32) -> bool {
        p.mark_max_qdelay_ns == 0
            || rtt_ns == 0
            || (rtt_ns as u64) <= (self.base_rtt_ns as u64).saturating_add(p.mark_max_qdelay_ns as u64)
    }

    /// Marks that grew the window. For stats.
    pub fn spare_marks(&self) -> u32 {
        self.spare_marks
    }
    /// Marks ignored because they came with a queue. For stats.
    pub fn ignored_marks(&self) -> u32 {
        self.ignored_marks
    }
}

impl CongestionControl for Amrt {
    type Params = Params;
    const NAME: &'static str = "amrt";

    fn new(p: &Params, init: &FlowInit) -> Self {
        let mut s = Self {
            w: Window::new(0, 0),
            base_rtt_ns: init.rtt_hint_ns,
            last_rtt_ns: init.rtt_hint_ns,
            round_start_ns: init.now_ns,
            round_acked: 0,
            loss_in_round: 0,
            max_wnd: 0,
            spare_marks: 0,
            ignored_marks: 0,
            rounds: 0,
        };
        let mss = core::cmp::max(init.mss, 1) as u64;
        let cwnd = core::cmp::max(mul_q16(s.bdp(p), p.init_bdp_q16), 2 * mss);
        s.w = Window::new(sat_u32(cwnd), 0);
        s.refresh_flow_constants(p);
        s
    }

    fn on_ack(&mut self, p: &Params, s: &AckSample) {
        if s.rtt_ns != 0 {
            self.last_rtt_ns = s.rtt_ns;
            if update_min_rtt(&mut self.base_rtt_ns, s.rtt_ns) {
                self.refresh_flow_constants(p);
            }
        }
        // Rounds: a round ends with the ACK of a packet sent after it began.
        self.round_acked = self.round_acked.saturating_add(s.acked_bytes);
        if s.send_time_ns != 0 && s.send_time_ns >= self.round_start_ns {
            if self.loss_in_round != 0 {
                // What the path delivered in a round with losses.
                let cwnd = self.w.bytes();
                self.w.prior_cwnd = cwnd;
                self.w.set(core::cmp::min(self.round_acked, cwnd) as u64, 2 * p.mtu);
                self.w.exit_slow_start();
                self.loss_in_round = 0;
            }
            self.round_acked = 0;
            self.round_start_ns = s.now_ns;
            self.rounds = core::cmp::min(self.rounds + 1, 2);
        }

        if self.w.in_slow_start() {
            // Only after an RTO (Linux's slow start back to ssthresh).
            if !s.app_limited {
                self.w.slow_start(s.acked_bytes, self.max_wnd);
            }
            return;
        }
        let marked = core::cmp::min(s.marked_bytes, s.acked_bytes);
        if marked == 0 || p.spare_increase == 0 || s.app_limited {
            return; // one packet per grant: the window stays
        }
        if self.believable(p, s.rtt_ns) {
            // Two packets per marked grant: the window grows by the marked bytes.
            self.w.add_q16((marked as u64) << super::fixed::SHIFT, self.max_wnd);
            self.spare_marks = self.spare_marks.saturating_add(1);
        } else {
            self.ignored_marks = self.ignored_marks.saturating_add(1);
        }
    }

    fn on_event(&mut self, p: &Params, e: Event, now: u64) {
        match e {
            Event::Loss { .. } => {
                // Applied when the round ends (see on_ack).
                self.loss_in_round = 1;
            }
            Event::Rto => {
                self.w.rto(p.mtu);
                self.round_start_ns = now;
                self.round_acked = 0;
                self.loss_in_round = 0;
            }
            Event::IdleRestart => {
                self.round_start_ns = now;
                self.round_acked = 0;
            }
        }
    }

    fn cwnd(&self) -> u32 {
        self.w.bytes()
    }
    /// The first two rounds are paced like every window-based xdcc CC (the
    /// Linux adapter's `window_pacing_*` ratios of cwnd/srtt, the
    /// simulator's `window_pacing_gain`), so flows that start together share
    /// the link instead of colliding as line-rate bursts in an 8-packet
    /// queue; after that the ACK clock alone, which keeps the idle slots the
    /// anti-ECN marks report (pacing at cwnd/srtt would smear them into
    /// sub-packet gaps that eq. 2 cannot see).
    ///
    /// (This replaced an own rate of cwnd / handshake RTT for the first
    /// window, which stalled tcp_amrt in the test kernel. The cause was not
    /// the rate but the adapter answering the SYN's ACK, which reaches
    /// `cong_control` before `init`: from the zeroed state it set 1 byte/s,
    /// and the 10th segment's EDT stamp went minutes ahead. The adapter now
    /// ignores callbacks before `init`, see `linux::Flow`.)
    fn pacing_rate(&self) -> Option<u64> {
        if self.rounds >= 2 {
            Some(super::UNPACED)
        } else {
            None
        }
    }
    fn undo(&mut self, _p: &Params) {
        self.w.undo();
    }
    fn hold_cwnd(&mut self, max_bytes: u32) {
        self.w.hold(max_bytes);
    }
    fn ssthresh(&self) -> u32 {
        self.w.ssthresh
    }
    const INFO_FIELDS: [&'static str; 4] = ["base_rtt_us", "last_rtt_us", "spare_marks", "ignored_marks"];
    fn info(&self) -> [u32; 4] {
        [self.base_rtt_ns / 1000, self.last_rtt_ns / 1000, self.spare_marks, self.ignored_marks]
    }
}

tunables!(Params {
    rate_bytes_per_sec: u64, mtu: u32, intra_rtt_ns: u32, init_bdp_q16: u32, max_wnd_bdp_q16: u32,
    mark_max_qdelay_ns: u32, spare_increase: u32,
});
