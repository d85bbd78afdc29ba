//! Gemini — gemini-ton §III, Algorithm 1 ("GEMINI Congestion Control Algorithm").
//!
//! Model. AIMD on two signals (§III-B):
//! - **DCN congestion** = the ACK carries ECE (DCTCP marking at DC switches).
//!   `α` is DCTCP's EWMA (gain g = 1/16) of the marked fraction per window.
//! - **WAN congestion** = `RTT_min > RTT_base + T`, where `RTT_min` is the
//!   minimum RTT of the *previous* window and `RTT_base` the minimum ever seen.
//! - When congested, at most once per RTT: `cwnd *= 1 − max(f_dcn, f_wan)` with
//!   `f_dcn = α·F`, `F = 4K/(C·RTT_base + K)` (Theorem 1: keeps the DC buffer
//!   from underflowing for any RTT) and `f_wan = β`.
//! - Otherwise, per ACK: `cwnd += h/cwnd` with `h = H·C·RTT_base` MSS per RTT,
//!   clamped to [0.1, 5] MSS (§III-C), which makes the AIMD RTT-fair (App. B).
//!
//! Choices (documented, tunable where cheap):
//! - "Once per RTT" is measured with send times: a new cut is allowed once an
//!   ACK arrives for a packet sent after the previous cut, i.e. after exactly
//!   one (real) RTT of feedback — the condition DCTCP expresses with sequence
//!   numbers.
//! - `F` exceeds 1 when K > C·RTT/3 (intra-DC flows on slow links, e.g. K = 50
//!   packets at 1 Gbit/s with RTT 200 µs); the whole cut is clamped to
//!   `max_md` (default 1/2, DCTCP's largest cut) so the window stays positive.
//! - Start and losses follow Linux, as the paper's kernel implementation
//!   does ("we keep the same fast recovery and fast retransmission"):
//!   slow start from 10 packets until the first congestion signal; a loss
//!   halves the window (once per RTT); an RTO restarts from one packet with
//!   ssthresh at half the window.
//! - Uno's htsim port of Gemini applies the cut once per *base* RTT; we use the
//!   real RTT (above), which is what the kernel implementation can observe.
//! - **Not paced by default** (`window_pacing_pct` and `window_pacing_ss_pct`
//!   0, [`super::linux::Pacing::OFF`]; the paper recommends sender pacing,
//!   §III-C: set `window_pacing_pct = 100`, `window_pacing_ss_pct = 200`). On
//!   a host, paced at its window over the smoothed RTT, four flows had Jain
//!   0.74-0.85 at 1 Gbit/s and 0.90-0.94x cubic at 10 Gbit/s; unpaced 0.95-0.98
//!   and 0.98-1.02x. The simulator's case for pacing (rtt-fairness, Jain 0.92
//!   paced against 0.75) was a phase effect of its deterministic host delay:
//!   with a random one, 0.76 and 0.79 (evidence:
//!   testbed/notes/2026-11-29-realspeed-uno-cpu.md#which-is-wrong-the-models-case-for-window-pacing-is-a-phase-effect).

use super::fixed::{bdp_bytes, mul_div, mul_sat, mul_q16, ratio_q16, sat_u32, ONE};
use super::params::{check, NetConfig, ParamError};
use super::window::Window;
use super::{update_min_rtt, AckSample, CongestionControl, Event, FlowInit};

/// Gemini tunables. Fractions are Q16 (`ONE` = 1.0).
/// `repr(C)`: the BPF backend shares this layout with userspace through a map.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Bottleneck capacity C in bytes/s (a configured constant, §III-B).
    pub rate_bytes_per_sec: u64,
    /// MSS in bytes.
    pub mss: u32,
    /// ECN marking threshold K in bytes (paper: 50 packets per Gbit/s).
    pub k_bytes: u32,
    /// Delay threshold T in ns (5 ms).
    pub t_ns: u32,
    /// β, the WAN cut (0.2).
    pub beta_q16: u32,
    /// H in units of 1e-9 per (bit/s · s): paper 1.2e-7 = 120.
    pub h_ppb: u32,
    /// Lower clamp of h in MSS per RTT (0.1).
    pub h_min_q16: u32,
    /// Upper clamp of h in MSS per RTT (5).
    pub h_max_q16: u32,
    /// DCTCP's α gain g (1/16).
    pub alpha_gain_q16: u32,
    /// Largest single cut (1/2).
    pub max_md_q16: u32,
    /// Initial window in packets (Linux: 10).
    pub init_cwnd_pkts: u32,
    /// 0 (default): start as Linux, `init_cwnd_pkts` and slow start. >0:
    /// start at this multiple of the handshake BDP, Q16, without slow start
    /// (the reference code starts every flow at one BDP).
    pub init_bdp_q16: u32,
    /// Window cap as a multiple of the flow's BDP (base RTT), Q16; 0
    /// (default): none (the reference code caps at one BDP).
    pub max_wnd_bdp_q16: u32,
    /// RTT in ns that `h = H·C·RTT` uses; 0 (default): the flow's own base
    /// RTT (the paper). The reference code uses the inter-DC RTT for every
    /// flow, so that all flows add the same bytes per RTT.
    pub h_rtt_ns: u32,
    /// Only flows whose base RTT is at least this (ns) test the WAN delay
    /// threshold T; 0 (default): every flow (the paper). The reference code
    /// applies T to inter-DC flows only.
    pub wan_min_base_rtt_ns: u32,
}

impl Params {
    const_unless_bpf! {
        /// The paper's defaults (gemini-ton Table IV) for a network.
        pub fn from_net(n: &NetConfig) -> Self {
            // K = 50 packets per Gbit/s of capacity.
            let k = mul_div(50 * n.mtu as u64, n.link_rate_bps, 1_000_000_000);
            Self {
                rate_bytes_per_sec: n.rate_bytes_per_sec(),
                mss: n.mtu,
                k_bytes: sat_u32(if k < n.mtu as u64 { n.mtu as u64 } else { k }),
                t_ns: 5_000_000,
                beta_q16: ONE / 5,
                h_ppb: 120,
                h_min_q16: ONE / 10,
                h_max_q16: 5 * ONE,
                alpha_gain_q16: ONE / 16,
                max_md_q16: ONE / 2,
                init_cwnd_pkts: 10,
                init_bdp_q16: 0,
                max_wnd_bdp_q16: 0,
                h_rtt_ns: 0,
                wan_min_base_rtt_ns: 0,
            }
        }
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        check("rate_bytes_per_sec", self.rate_bytes_per_sec, 125_000, 400_000_000_000)?;
        check("mss", self.mss as u64, 256, 65_535)?;
        check("k_bytes", self.k_bytes as u64, 1, 1 << 30)?;
        check("t_ns", self.t_ns as u64, 1_000, 2_000_000_000)?;
        check("beta_q16", self.beta_q16 as u64, 0, ONE as u64 * 15 / 16)?;
        check("h_ppb", self.h_ppb as u64, 1, 1_000_000)?;
        check("h_min_q16", self.h_min_q16 as u64, 1, 100 * ONE as u64)?;
        check("h_max_q16", self.h_max_q16 as u64, self.h_min_q16 as u64, 100 * ONE as u64)?;
        check("alpha_gain_q16", self.alpha_gain_q16 as u64, 1, ONE as u64)?;
        check("max_md_q16", self.max_md_q16 as u64, 1, ONE as u64 * 15 / 16)?;
        check("init_cwnd_pkts", self.init_cwnd_pkts as u64, 1, 1000)?;
        check("init_bdp_q16", self.init_bdp_q16 as u64, 0, 4 * ONE as u64)?;
        check("max_wnd_bdp_q16", self.max_wnd_bdp_q16 as u64, 0, 64 * ONE as u64)?;
        check("h_rtt_ns", self.h_rtt_ns as u64, 0, 2_000_000_000)?;
        check("wan_min_base_rtt_ns", self.wan_min_base_rtt_ns as u64, 0, 2_000_000_000)?;
        Ok(())
    }

    /// `F = 4K / (C·RTT_base + K)`, Q16 (§III-B, Theorem 1).
    pub fn scale_factor_q16(&self, base_rtt_ns: u32) -> u32 {
        let k = self.k_bytes as u64;
        ratio_q16(4 * k, bdp_bytes(self.rate_bytes_per_sec, base_rtt_ns).saturating_add(k))
    }

    /// `h = H·C·RTT_base` in MSS per RTT, clamped to [h_min, h_max], Q16.
    pub fn h_q16(&self, base_rtt_ns: u32) -> u32 {
        // H·C·RTT = h_ppb·1e-9 × (C·RTT in bits).
        let bdp_bits = mul_sat(bdp_bytes(self.rate_bytes_per_sec, base_rtt_ns), 8);
        let h = mul_div(mul_sat(self.h_ppb as u64, bdp_bits), ONE as u64, 1_000_000_000);
        sat_u32(core::cmp::max(core::cmp::min(h, self.h_max_q16 as u64), self.h_min_q16 as u64))
    }
}

/// Per-flow Gemini state (fits `ICSK_CA_PRIV_SIZE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gemini {
    w: Window,
    base_rtt_ns: u32,
    /// Minimum RTT of the current window and of the previous one (`RTT_min`).
    rtt_min_round_ns: u32,
    rtt_min_last_ns: u32,
    /// DCTCP α, Q16.
    alpha_q16: u32,
    /// Start of the current window (a window ends with the ACK of a packet sent
    /// after it started).
    round_start_ns: u64,
    round_acked: u32,
    round_marked: u32,
    /// Time of the last cut; 0 = none yet.
    last_cut_ns: u64,
    /// Cached `h·MSS` in bytes per RTT, Q16, and `F`, Q16 (depend on RTT_base).
    ai_per_rtt_q16: u64,
    f_q16: u32,
    /// Largest window in bytes (`max_wnd_bdp` × BDP, cached likewise).
    max_cwnd: u32,
    /// The last full-path ACK found WAN congestion (its inputs, the
    /// previous window's RTT_min and RTT_base, change only on that path:
    /// the fast path reads the verdict instead of recomputing it).
    wan_congested: bool,
}
assert_fits_ca_priv!(Gemini);

impl Gemini {
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn refresh_flow_constants(&mut self, p: &Params) {
        self.f_q16 = p.scale_factor_q16(self.base_rtt_ns);
        let h_rtt = if p.h_rtt_ns != 0 { p.h_rtt_ns } else { self.base_rtt_ns };
        self.ai_per_rtt_q16 = mul_sat(p.h_q16(h_rtt) as u64, p.mss as u64);
        self.max_cwnd = if p.max_wnd_bdp_q16 == 0 {
            super::MAX_CWND_BYTES
        } else {
            let bdp = bdp_bytes(p.rate_bytes_per_sec, self.base_rtt_ns);
            sat_u32(core::cmp::max(mul_q16(bdp, p.max_wnd_bdp_q16), 2 * p.mss as u64))
        };
    }

    /// The complete ACK processing (Algorithm 1); [`CongestionControl::on_ack`]
    /// takes a shortcut for the common case and comes here otherwise.
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    pub fn on_ack_full(&mut self, p: &Params, s: &AckSample) {
        let now = s.now_ns;
        // update_transport_state(α, rtt_base, rtt_min)
        if s.rtt_ns != 0 {
            if update_min_rtt(&mut self.base_rtt_ns, s.rtt_ns) {
                self.refresh_flow_constants(p);
            }
            update_min_rtt(&mut self.rtt_min_round_ns, s.rtt_ns);
        }
        let marked = core::cmp::min(s.marked_bytes, s.acked_bytes);
        self.round_acked = self.round_acked.saturating_add(s.acked_bytes);
        self.round_marked = self.round_marked.saturating_add(marked);
        if s.send_time_ns >= self.round_start_ns && s.send_time_ns != 0 {
            self.end_round(p, now);
        }

        let congested_dcn = marked > 0;
        let congested_wan = self.rtt_min_last_ns != 0
            && self.base_rtt_ns != 0
            && self.base_rtt_ns >= p.wan_min_base_rtt_ns
            && self.rtt_min_last_ns as u64 > (self.base_rtt_ns as u64).saturating_add(p.t_ns as u64);
        self.wan_congested = congested_wan;

        if congested_dcn || congested_wan {
            // "time since last cwnd reduction > 1 RTT": the acked packet left
            // after the last cut, so it carries feedback on the reduced rate.
            if self.last_cut_ns == 0 || s.send_time_ns > self.last_cut_ns {
                let f_dcn = if congested_dcn { sat_u32(mul_q16(self.alpha_q16 as u64, self.f_q16)) } else { 0 };
                let f_wan = if congested_wan { p.beta_q16 } else { 0 };
                let f = core::cmp::min(core::cmp::max(f_dcn, f_wan), p.max_md_q16);
                self.w.md(f, p.mss);
                self.w.exit_slow_start();
                self.last_cut_ns = core::cmp::max(now, 1);
            }
        } else if !s.app_limited {
            let left = if self.w.in_slow_start() {
                self.w.slow_start(s.acked_bytes, self.max_cwnd)
            } else {
                s.acked_bytes
            };
            if left > 0 {
                // cwnd += h/cwnd per MSS acked, i.e. h·MSS bytes per RTT.
                self.w.ai(self.ai_per_rtt_q16, left, self.max_cwnd);
            }
        }
    }

    /// DCTCP α, Q16. For stats.
    pub fn alpha_q16(&self) -> u32 {
        self.alpha_q16
    }
    /// F for this flow, Q16. For stats.
    pub fn f_q16(&self) -> u32 {
        self.f_q16
    }
    /// h·MSS in bytes per RTT, Q16. For stats.
    pub fn ai_per_rtt_q16(&self) -> u64 {
        self.ai_per_rtt_q16
    }

    #[cfg_attr(not(xdcc_bpf), inline(never))]

    #[cfg_attr(xdcc_bpf, inline(always))]
    fn end_round(&mut self, p: &Params, now: u64) {
        let frac = core::cmp::min(
            ratio_q16(self.round_marked as u64, core::cmp::max(self.round_acked, 1) as u64),
            ONE,
        );
        if self.round_acked > 0 {
            self.alpha_q16 = super::fixed::ewma_q16(self.alpha_q16, frac, p.alpha_gain_q16);
        }
        self.rtt_min_last_ns = self.rtt_min_round_ns;
        self.rtt_min_round_ns = 0;
        self.round_acked = 0;
        self.round_marked = 0;
        self.round_start_ns = now;
    }
}

impl CongestionControl for Gemini {
    type Params = Params;
    const NAME: &'static str = "gemini";

    fn new(p: &Params, init: &FlowInit) -> Self {
        let mss = core::cmp::max(init.mss, 1);
        // Linux's start (initial window, slow start), or the reference
        // code's: one BDP of the handshake RTT, in congestion avoidance.
        let w = if p.init_bdp_q16 != 0 && init.rtt_hint_ns != 0 {
            let bdp = bdp_bytes(p.rate_bytes_per_sec, init.rtt_hint_ns);
            let cwnd = sat_u32(core::cmp::max(mul_q16(bdp, p.init_bdp_q16), 2 * mss as u64));
            Window::new(cwnd, cwnd)
        } else {
            Window::new(sat_u32(mul_sat(p.init_cwnd_pkts as u64, mss as u64)), u32::MAX)
        };
        let mut s = Self {
            w,
            base_rtt_ns: init.rtt_hint_ns,
            rtt_min_round_ns: 0,
            rtt_min_last_ns: 0,
            wan_congested: false,
            // DCTCP starts α at 1 (`dctcp_alpha_on_init`): the first marks
            // after slow start cut by the full F, so the overshoot is undone.
            alpha_q16: ONE,
            round_start_ns: init.now_ns,
            round_acked: 0,
            round_marked: 0,
            last_cut_ns: 0,
            ai_per_rtt_q16: 0,
            f_q16: 0,
            max_cwnd: super::MAX_CWND_BYTES,
        };
        s.refresh_flow_constants(p);
        s
    }

    fn on_ack(&mut self, p: &Params, s: &AckSample) {
        // Fast path, the same logic as `on_ack_full` restricted to the common
        // case: an unmarked, cwnd-limited ACK with a valid RTT that does not
        // lower the base RTT, with a base RTT measured (a flow without a
        // handshake RTT can leave slow start on a loss before its first
        // sample), in congestion avoidance, not ending the window, and no WAN
        // congestion in the last window.
        let base = self.base_rtt_ns;
        let slow = (s.marked_bytes != 0) | s.app_limited | (s.rtt_ns == 0) | (s.rtt_ns < base) | (base == 0);
        if slow
            || self.w.in_slow_start()
            || s.send_time_ns >= self.round_start_ns
            || self.wan_congested
        {
            return self.on_ack_full(p, s);
        }
        update_min_rtt(&mut self.rtt_min_round_ns, s.rtt_ns);
        self.round_acked = self.round_acked.saturating_add(s.acked_bytes);
        self.w.ai(self.ai_per_rtt_q16, s.acked_bytes, self.max_cwnd);
    }

    fn on_event(&mut self, p: &Params, e: Event, now: u64) {
        match e {
            Event::Loss { .. } => {
                // Reno-style halving, at most once per RTT (as for ECN/delay).
                let rtt = core::cmp::max(self.rtt_min_last_ns, self.base_rtt_ns) as u64;
                if self.last_cut_ns == 0 || now >= self.last_cut_ns.saturating_add(rtt) {
                    self.w.md(ONE / 2, p.mss);
                    self.w.exit_slow_start();
                    self.last_cut_ns = core::cmp::max(now, 1);
                }
            }
            Event::Rto => {
                self.w.rto(p.mss);
                self.round_start_ns = now;
            }
            Event::IdleRestart => {
                self.round_start_ns = now;
                self.round_acked = 0;
                self.round_marked = 0;
                self.rtt_min_round_ns = 0;
            }
        }
    }

    fn cwnd(&self) -> u32 {
        self.w.bytes()
    }
    fn pacing_rate(&self) -> Option<u64> {
        None
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
    const INFO_FIELDS: [&'static str; 4] = ["base_rtt_us", "rtt_min_us", "alpha_q16", "f_q16"];
    fn info(&self) -> [u32; 4] {
        [self.base_rtt_ns / 1000, self.rtt_min_last_ns / 1000, self.alpha_q16, self.f_q16]
    }
}

tunables!(Params {
    rate_bytes_per_sec: u64, mss: u32, k_bytes: u32, t_ns: u32, beta_q16: u32, h_ppb: u32,
    h_min_q16: u32, h_max_q16: u32, alpha_gain_q16: u32, max_md_q16: u32, init_cwnd_pkts: u32,
    init_bdp_q16: u32, max_wnd_bdp_q16: u32, h_rtt_ns: u32, wan_min_base_rtt_ns: u32,
}; window_pacing = super::linux::Pacing::OFF);
