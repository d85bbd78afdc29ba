//! DCTCP — Alizadeh et al., SIGCOMM 2010, as Linux runs it
//! (`net/ipv4/tcp_dctcp.c` with `tcp_reno_cong_avoid` and the stack's CWR,
//! RFC 8257): the baseline every datacenter paper here compares against.
//!
//! Model. Switches mark CE on packets that find the queue above K. The
//! receiver echoes the CE state of every packet (the adapter's CE echo,
//! `linux.rs`). Once per window of data the sender updates
//!
//!   α ← (1 − g)·α + g·F,   F = marked / delivered in that window,
//!
//! with g = 1/16 (`shift_g` = 4), and on the first ECE of a window it cuts
//!
//!   cwnd ← cwnd − cwnd·α/2
//!
//! once; no growth until the data in flight at the cut is acknowledged
//! (the stack's CWR state). Otherwise Reno: slow start below ssthresh, then
//! one packet per window of acknowledged data. A loss halves the window
//! (`dctcp_react_to_loss`), an RTO restarts from one packet with ssthresh at
//! half the window, and undo restores the window before the last reduction
//! (`dctcp_cwnd_undo`).
//!
//! Linux's arithmetic is kept where it decides behaviour: α in units of
//! 1/1024 (`DCTCP_MAX_ALPHA`), its decay `α −= min_not_zero(α, α >> g)`
//! (a small α falls to 0), its gain `(marked << (10 − g)) / delivered`, its
//! initial value 1024 (`dctcp_alpha_on_init`: the first window with marks
//! halves), and the cut `cwnd − (cwnd·α >> 11)` in whole packets, floor 2.
//!
//! Deviations, each forced by running as an xdcc CC (`cong_control`, which
//! owns the window) rather than as a `cong_avoid` module under the stack:
//! - **Windows end by time, not by sequence.** Linux ends α's window when
//!   `snd_una` passes the `snd_nxt` of its start; the adapter has no sequence
//!   numbers, so a window ends with the ACK of a packet sent after it began
//!   (the send time every xdcc algorithm uses for rounds). The same for the
//!   end of a reduction (Linux: `high_seq`). As in Linux, the ACK that ends
//!   α's window counts in the next one (`in_ack_event` runs before the ACK's
//!   deliveries are counted).
//! - **The cut is applied at once**, where Linux's PRR spreads it over the
//!   round (`tcp_cwnd_reduction`). After one round both have sent the same
//!   data and hold the same window; with `cong_control` the kernel runs no
//!   PRR for the CC.
//! - **Idle restart** (the stack's `tcp_cwnd_restart`, which the kernel
//!   skips for `cong_control` CCs): ssthresh ≥ ¾ of the window and the window
//!   halved once, not below the initial window. Linux halves once per RTO of
//!   idle time; the event carries no duration, and an idle restart is
//!   signalled after one RTO, the common case.
//! - **Pacing: none by default** (`window_pacing_pct` and
//!   `window_pacing_ss_pct` 0, [`super::linux::Pacing::OFF`]), as Linux's
//!   DCTCP without the `fq` qdisc. Paced at its window over the smoothed
//!   RTT (the adapter's default for other window CCs), four flows on a host
//!   had Jain 0.72-0.85 at 1 Gbit/s (each sender's second flow 2.4x the
//!   other's RTT) and 0.73-0.87x cubic's goodput at 10 Gbit/s; unpaced
//!   0.99 and 0.95-0.98x (evidence:
//!   testbed/notes/2026-11-29-realspeed-uno-cpu.md#which-is-wrong-the-models-case-for-window-pacing-is-a-phase-effect).
//!   Linux sets a rate for its DCTCP (`tcp_update_pacing_rate`, 200 % and
//!   120 %), which sizes its TSO bursts and paces under `fq`;
//!   `window_pacing_pct = 120` with `window_pacing_ss_pct = 200` gives
//!   Linux's ratios, and testbed/vm/tests/dctcp.sh compares the two that
//!   way, both under `fq`. (A ratio of 0 leaves the
//!   rate unset, which also leaves TSO autosizing without a rate: 64 KB
//!   bursts, one ACK per ten packets — not Linux's unpaced sender.)
//! - Bytes instead of packets for α's F (the same ratio with full-sized
//!   segments) and for the window (Reno's `snd_cwnd_cnt` becomes the
//!   fractional bytes of [`Window`]).
//!
//! Not modelled: Linux's PLB rerouting inside `tcp_dctcp.c` (off unless
//! `net.ipv4.tcp_plb_enabled`; xdcc's rerouter is the eBPF `reroute`).
//! Without ECN negotiated no marks arrive and this is Reno, as Linux's
//! `dctcp_reno` fallback.

use super::fixed::{sat_u32, SHIFT};
use super::params::{check, NetConfig, ParamError};
use super::window::Window;
use super::{AckSample, CongestionControl, Event, FlowInit};

/// α's unit: Linux's `DCTCP_MAX_ALPHA` (α = 1).
pub const ALPHA_ONE: u32 = 1024;

/// DCTCP tunables (Linux's module parameters plus the initial window the
/// stack gives every CC). `repr(C)`: the BPF backend shares this layout with
/// userspace through a map.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// log2(1/g), α's EWMA gain (Linux `dctcp_shift_g`, 4: g = 1/16).
    pub shift_g: u32,
    /// α of a new flow in 1/1024 (Linux `dctcp_alpha_on_init`, 1024).
    pub alpha_on_init: u32,
    /// Initial window, packets (Linux `TCP_INIT_CWND`, 10).
    pub init_cwnd_pkts: u32,
}

impl Params {
    const_unless_bpf! {
        /// Linux's defaults; DCTCP needs nothing from the network (K lives
        /// in the switches).
        pub fn from_net(_n: &NetConfig) -> Self {
            Self { shift_g: 4, alpha_on_init: ALPHA_ONE, init_cwnd_pkts: 10 }
        }
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        // Linux accepts 0..=10 (`param_set_uint_minmax`).
        check("shift_g", self.shift_g as u64, 0, 10)?;
        check("alpha_on_init", self.alpha_on_init as u64, 0, ALPHA_ONE as u64)?;
        check("init_cwnd_pkts", self.init_cwnd_pkts as u64, 2, 1000)?;
        Ok(())
    }
}

/// Per-flow DCTCP state (fits `ICSK_CA_PRIV_SIZE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dctcp {
    w: Window,
    /// Send time that opened α's current window: it ends with the ACK of a
    /// packet sent at or after it.
    round_start_ns: u64,
    /// Start of the current reduction (CWR after ECE, or fast recovery);
    /// 0 = none. It ends with the ACK of a packet sent after it.
    reduction_start_ns: u64,
    /// Bytes delivered and CE-marked in α's current window.
    round_delivered: u32,
    round_marked: u32,
    /// α in 1/1024.
    alpha: u32,
    mss: u32,
    /// ssthresh before the last reduction, restored by undo.
    prior_ssthresh: u32,
    /// Reductions for marks and for losses. For stats.
    ecn_cuts: u32,
    loss_cuts: u32,
}
assert_fits_ca_priv!(Dctcp);

impl Dctcp {
    /// α in 1/1024. For stats and tests.
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// Reductions caused by ECE.
    pub fn ecn_cuts(&self) -> u32 {
        self.ecn_cuts
    }

    fn min_wnd(&self) -> u32 {
        self.mss.saturating_mul(2)
    }

    /// The window in whole packets, as Linux's `snd_cwnd`.
    fn cwnd_pkts(&self) -> u32 {
        self.w.bytes() / core::cmp::max(self.mss, 1)
    }

    /// Enters a reduction to `pkts` packets (at least 2), remembering the
    /// window and threshold for undo (Linux `loss_cwnd`, `prior_ssthresh`).
    fn reduce_to(&mut self, pkts: u32, now_ns: u64) {
        let prior_ssthresh = self.w.ssthresh;
        let target = sat_u32(core::cmp::max(pkts, 2) as u64 * self.mss as u64);
        self.w.prior_cwnd = self.w.bytes();
        self.prior_ssthresh = core::cmp::max(prior_ssthresh, self.w.bytes() / 4 * 3);
        self.w.set(target as u64, self.min_wnd());
        self.w.ssthresh = target;
        // 0 means "none": a reduction at time 0 (only in tests) starts at 1 ns.
        self.reduction_start_ns = core::cmp::max(now_ns, 1);
    }

    /// `dctcp_update_alpha` at the end of α's window.
    fn update_alpha(&mut self, shift_g: u32) {
        let g = core::cmp::min(shift_g, 10);
        let mut alpha = self.alpha;
        let decay = alpha >> g;
        // min_not_zero(alpha, alpha >> g)
        alpha = alpha.saturating_sub(if decay == 0 { alpha } else { decay });
        if self.round_marked != 0 {
            let delivered = core::cmp::max(self.round_delivered, 1) as u64;
            // marked < 2^32 and 10 − g ≤ 10: no overflow.
            let gain = (self.round_marked as u64).wrapping_shl(10u32.saturating_sub(g)) / delivered;
            alpha = core::cmp::min((alpha as u64).saturating_add(gain), ALPHA_ONE as u64) as u32;
        }
        self.alpha = alpha;
    }
}

impl CongestionControl for Dctcp {
    type Params = Params;
    const NAME: &'static str = "dctcp";

    fn new(p: &Params, init: &FlowInit) -> Self {
        let mss = core::cmp::max(init.mss, 1);
        let iw = sat_u32(p.init_cwnd_pkts as u64 * mss as u64);
        Self {
            w: Window::new(iw, u32::MAX),
            round_start_ns: init.now_ns,
            reduction_start_ns: 0,
            round_delivered: 0,
            round_marked: 0,
            alpha: core::cmp::min(p.alpha_on_init, ALPHA_ONE),
            mss,
            prior_ssthresh: u32::MAX,
            ecn_cuts: 0,
            loss_cuts: 0,
        }
    }

    fn on_ack(&mut self, p: &Params, s: &AckSample) {
        let ends = |start: u64| s.send_time_ns != 0 && s.send_time_ns >= start;
        // α's window: this ACK closes it but is counted in the next one.
        if ends(self.round_start_ns) {
            self.update_alpha(p.shift_g);
            self.round_delivered = 0;
            self.round_marked = 0;
            self.round_start_ns = s.now_ns;
        }
        self.round_delivered = self.round_delivered.saturating_add(s.acked_bytes);
        self.round_marked = self.round_marked.saturating_add(core::cmp::min(s.marked_bytes, s.acked_bytes));

        if self.reduction_start_ns != 0 && ends(self.reduction_start_ns.saturating_add(1)) {
            self.reduction_start_ns = 0; // CWR / Recovery over
        }
        if self.reduction_start_ns != 0 {
            return; // no growth while the window is being reduced
        }
        if s.marked_bytes != 0 {
            // tcp_enter_cwr() with dctcp_ssthresh(): once per window.
            let pkts = self.cwnd_pkts();
            let cut = ((pkts as u64 * self.alpha as u64) >> 11) as u32;
            self.reduce_to(pkts.saturating_sub(cut), s.now_ns);
            self.ecn_cuts = self.ecn_cuts.saturating_add(1);
            return;
        }
        // tcp_reno_cong_avoid (the adapters call it only when the window
        // limits the sender, as Linux).
        let mut acked = s.acked_bytes;
        if self.w.in_slow_start() {
            acked = self.w.slow_start(acked, super::MAX_CWND_BYTES);
            if acked == 0 {
                return;
            }
        }
        self.w.ai((self.mss as u64) << SHIFT, acked, super::MAX_CWND_BYTES);
    }

    fn on_event(&mut self, p: &Params, e: Event, now_ns: u64) {
        match e {
            Event::Loss { .. } => {
                // dctcp_react_to_loss: ssthresh = cwnd / 2, PRR down to it.
                let half = self.cwnd_pkts() >> 1;
                self.reduce_to(half, now_ns);
                self.loss_cuts = self.loss_cuts.saturating_add(1);
            }
            Event::Rto => {
                // CA_EVENT_LOSS → dctcp_react_to_loss; tcp_enter_loss: one
                // packet, slow start (the Loss state ends any CWR).
                self.prior_ssthresh = self.w.ssthresh;
                self.w.rto(self.mss);
                self.reduction_start_ns = 0;
                self.loss_cuts = self.loss_cuts.saturating_add(1);
            }
            Event::IdleRestart => {
                // tcp_cwnd_restart: ssthresh = tcp_current_ssthresh(), the
                // window halved, not below min(initial window, window).
                let cwnd = self.w.bytes();
                self.w.ssthresh = core::cmp::max(self.w.ssthresh, (cwnd >> 1).saturating_add(cwnd >> 2));
                let restart = core::cmp::min(sat_u32(p.init_cwnd_pkts as u64 * self.mss as u64), cwnd);
                self.w.set(core::cmp::max(cwnd >> 1, restart) as u64, self.min_wnd());
                self.round_start_ns = now_ns;
                self.round_delivered = 0;
                self.round_marked = 0;
            }
        }
    }

    fn cwnd(&self) -> u32 {
        self.w.bytes()
    }
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    fn ssthresh(&self) -> u32 {
        self.w.ssthresh
    }
    /// `dctcp_cwnd_undo` (`max(cwnd, loss_cwnd)`) with the stack's
    /// `tcp_undo_cwnd_reduction` (ssthresh back if it was higher).
    fn undo(&mut self, _p: &Params) {
        self.w.undo();
        self.w.ssthresh = core::cmp::max(self.w.ssthresh, self.prior_ssthresh);
        self.reduction_start_ns = 0;
    }
    fn hold_cwnd(&mut self, max_bytes: u32) {
        self.w.hold(max_bytes);
    }
    const INFO_FIELDS: [&'static str; 4] = ["alpha_q16", "ecn_cuts", "loss_cuts", "ssthresh_pkts"];
    fn info(&self) -> [u32; 4] {
        let ssthresh = if self.w.ssthresh == u32::MAX { u32::MAX } else { self.w.ssthresh / core::cmp::max(self.mss, 1) };
        // α in 1/1024 → Q16.
        [self.alpha << 6, self.ecn_cuts, self.loss_cuts, ssthresh]
    }
}

tunables!(Params { shift_g: u32, alpha_on_init: u32, init_cwnd_pkts: u32 }; window_pacing = super::linux::Pacing::OFF);
