//! OSCAR — oscar-nsdi26 §4, Algorithm 1 (batched estimator) and Algorithm 2
//! (main algorithm).
//!
//! Model. A MIMD controller on a *unified ratio* `u` (the flow's share of the
//! bottleneck, 1.0 = line rate), driven by two loops that each converge in one
//! step when their signal is precise (§3.2–3.3):
//! - ⟨delay, window⟩: when flows are window-bound, delay reflects the total
//!   window: `u_w = inflight / (delay · μ)`.
//! - ⟨gradient, rate⟩: when flows are rate-bound, the delay gradient reflects
//!   the total rate: `u_r = rate / ((1 + gradient) · μ)`.
//! - Coordination (§4.2): below the target delay take the larger of the two
//!   (accelerate), above it the smaller (decelerate); if the delay equals the
//!   base RTT (within ε) the queue is empty and both signals are blind: hyper
//!   increase `u += U_HAI`. After every update `u += U_AI` for fairness (§4.3).
//! - Outputs: `w = max(u · D_target · μ, BDP_base)`, `r = u · μ`: OSCAR sets both
//!   a window and a pacing rate.
//!
//! The batched estimator (Algorithm 1) accumulates, per ACK, Σx, Σy, Σx², Σxy,
//! n and Σinflight, with x = send time and y = packet delay, and every τ (with
//! at least 3 samples) produces the mean delay, the least-squares slope, the
//! mean inflight and the send rate, using the state *synchronized with* those
//! packets as the reference (§4.1.2). Here x is measured **relative to the
//! batch start** and y **relative to the batch's first delay**, so for any
//! realistic batch (x ≤ 2^32 ns, |y| ≤ 2^31 ns) the sums stay within 64 bits;
//! the slope's two cross products are formed once per batch in 128 bits and
//! reduced by shifting before a single 64-bit division (no 128-bit division
//! exists in the kernel).
//!
//! Deviations and choices (the evidence is in testbed/notes/2026-11-27-oscar-deviations.md):
//! - Time unit: ns throughout (the paper's 4-byte ns timestamps; the kernel has
//!   `tcp_clock_ns()` and the skb's ns send time).
//! - Send rate uses the bytes acked by the batch's samples instead of
//!   `counts · MTU` (identical with one ACK per packet; right with delayed or
//!   stretched ACKs).
//! - **The base BDP caps the window** (`min`), as §4.2's text says ("does not set the window
//!   above the base BDP"); Algorithm 2 line 12 prints a floor (`max`, `bdp_floor = 1`), with
//!   which rate-bound flows keep windows ≥ BDP, the delay loop cannot pull the queue down and
//!   U_AI walks it up without bound (evidence: testbed/notes/2026-11-27-oscar-deviations.md#window-cap-not-floor).
//! - Losses (the paper's Appendix A.1 treats full queues via delay): a loss
//!   halves `u` at most once per RTT; an RTO quarters it. The estimator restarts
//!   after an RTO or idle period, and a batch whose span exceeds 4τ (a stall)
//!   is discarded rather than used.
//! - **Undo.** When Linux finds a recovery or an RTO spurious (DSACKs or timestamps show the
//!   "lost" packet arrived: reordering), `undo` puts `u` back to at least its value before the
//!   cut, as `tcp_reno_undo_cwnd` does for a window. The paper has no spurious losses (NIC
//!   transport, no reordering); on a real host the veth path and multi-queue NICs reorder, and
//!   without undo each such recovery halved the flow's rate for good. No tunable
//!   (evidence: testbed/notes/2026-11-27-oscar-deviations.md#undo).
//! - D_target per flow is `RTT_base + target_qdelay` (§3.3's definition via
//!   the target queue) with one network-wide target queueing delay; `1.5 ×
//!   RTT_base` per flow would give inter-DC flows an 8–64× deeper target.
//! - ε (delay equal to base RTT): `eps_q16 × RTT_base`, default 1/16, with a
//!   1 µs floor (kernel RTT resolution).
//! - **Host delay (real hosts; issue 28).** Where the paper says RTT_base — the target delay
//!   `D_target = RTT_base + target_qdelay`, the window cap `BDP_base`, the "delay = base" test
//!   of hyper increase, the estimator period τ and the loss holdoff — this uses the flow's
//!   *pipe* RTT, base RTT + the learned host delay ([`super::host`]). OSCAR's samples are whole
//!   RTTs; on a real host they hold the end hosts' delay, which the paper's NIC timestamps
//!   exclude, and from the idle base RTT the estimator never completed a batch. The pipe RTT
//!   alone was not enough: hence also the window floor below. `host_delay_gain_q16 = 0` gives
//!   the paper's sizing (evidence: testbed/notes/2026-11-27-oscar-deviations.md#host-delay).
//! - **Window floor of 10 packets** (`min_wnd_pkts`, Linux's initial window; the paper's floor
//!   is one MTU, the kernel's 2 packets: `min_wnd_pkts = 2` with `host_delay_gain_q16 = 0` gives
//!   the paper's sizing). The window only caps OSCAR's paced rate, and a 2-packet cap makes the
//!   host, not the port, the bottleneck (every packet its own skb, the CPU saturated)
//!   (evidence: testbed/notes/2026-11-27-oscar-deviations.md#window-floor).
//! - **A stall is a batch older than 4τ or than 8 MTUs at the flow's own rate**
//!   (`max(4τ, 8 MTU / pacing rate)`), so that a slow flow's batches still reach 3 samples with
//!   ACKs of up to 2 MTUs; with 4τ alone a flow whose ACKs came more than 4τ apart had every
//!   batch discarded and u could not rise again (the paper's per-packet ACKs at line rate never
//!   meet this). τ itself is unchanged. No tunable
//!   (evidence: testbed/notes/2026-11-27-oscar-deviations.md#stale-batches).

use super::fixed::{bdp_bytes, div_i64, mul_div, mul_sat, mul_sat_i64, mul_q16, ratio_q16, sat_u32, slope_q16, ONE, NSEC_PER_SEC};
use super::host::HostDelay;
use super::params::{check, NetConfig, ParamError};
use super::{update_min_rtt, AckSample, CongestionControl, Event, FlowInit};

/// Fewest samples a batch needs before it is evaluated (Algorithm 1, line 7).
pub const MIN_SAMPLES: u32 = 3;

/// OSCAR tunables (its four parameters plus the link description).
/// `repr(C)`: the BPF backend shares this layout with userspace through a map.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// μ, the bottleneck line rate in bytes/s.
    pub rate_bytes_per_sec: u64,
    /// Packet size in bytes (window floor).
    pub mtu: u32,
    /// Target queueing delay in ns: `D_target = RTT_base + target_qdelay`
    /// (§3.3: `D_target = RTT_base + Q_target/μ`); default 0.5 × intra-DC RTT,
    /// the paper's `D_target = 1.5 × RTT_base`.
    pub target_qdelay_ns: u32,
    /// τ, the estimator period, as a multiple of the base RTT, Q16 (0.5).
    pub tau_q16: u32,
    /// U_HAI, hyper increase step, Q16 (0.01).
    pub u_hai_q16: u32,
    /// U_AI, fairness step after each update, Q16 (0.001).
    pub u_ai_q16: u32,
    /// ε as a fraction of the base RTT, Q16 (1/16).
    pub eps_q16: u32,
    /// Smallest u, Q16 (1/1024 of the line rate).
    pub u_min_q16: u32,
    /// Largest u, Q16 (2: twice the configured line rate).
    pub u_max_q16: u32,
    /// 0 (default): the base BDP *caps* the window (§4.2's text: "OSCAR does
    /// not set the window above the base BDP"); 1: it is a *floor*
    /// (Algorithm 2 line 12 as printed, `max(u·D_target·μ, BDP_base)`).
    pub bdp_floor: u32,
    /// Gain of the host-delay estimate (0.25; 0: off, the paper's RTT_base
    /// everywhere). See [`super::host`].
    pub host_delay_gain_q16: u32,
    /// Smallest window in packets (10, Linux's initial window; the paper's
    /// is 1 MTU, the kernel's 2). See the module doc, "Host delay".
    pub min_wnd_pkts: u32,
}

impl Params {
    const_unless_bpf! {
        /// The paper's defaults (oscar-nsdi26 §4.4, Table 3).
        pub fn from_net(n: &NetConfig) -> Self {
            Self {
                rate_bytes_per_sec: n.rate_bytes_per_sec(),
                mtu: n.mtu,
                target_qdelay_ns: n.intra_rtt_ns / 2,
                tau_q16: ONE / 2,
                u_hai_q16: ONE / 100,
                u_ai_q16: ONE / 1000,
                eps_q16: ONE / 16,
                u_min_q16: ONE / 1024,
                u_max_q16: 2 * ONE,
                bdp_floor: 0,
                host_delay_gain_q16: super::host::DEFAULT_GAIN_Q16,
                min_wnd_pkts: 10,
            }
        }
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        check("rate_bytes_per_sec", self.rate_bytes_per_sec, 125_000, 400_000_000_000)?;
        check("mtu", self.mtu as u64, 256, 65_535)?;
        check("target_qdelay_ns", self.target_qdelay_ns as u64, 1_000, 1_000_000_000)?;
        check("tau_q16", self.tau_q16 as u64, ONE as u64 / 16, 4 * ONE as u64)?;
        check("u_hai_q16", self.u_hai_q16 as u64, 1, ONE as u64)?;
        check("u_ai_q16", self.u_ai_q16 as u64, 1, ONE as u64 / 4)?;
        check("eps_q16", self.eps_q16 as u64, 0, ONE as u64)?;
        check("u_min_q16", self.u_min_q16 as u64, 1, ONE as u64)?;
        check("u_max_q16", self.u_max_q16 as u64, self.u_min_q16 as u64, 16 * ONE as u64)?;
        check("bdp_floor", self.bdp_floor as u64, 0, 1)?;
        check("host_delay_gain_q16", self.host_delay_gain_q16 as u64, 0, ONE as u64)?;
        check("min_wnd_pkts", self.min_wnd_pkts as u64, 2, 1000)?;
        Ok(())
    }
}

/// One batch's result (Algorithm 1, lines 8–10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// Mean packet delay (RTT) in ns.
    pub delay_ns: u32,
    /// Least-squares slope of delay over send time, Q16 (dimensionless:
    /// ns of delay per ns of time).
    pub gradient_q16: i32,
    /// Mean bytes in flight when the batch's packets were sent.
    pub inflight_bytes: u32,
    /// Send rate over the batch, bytes/s.
    pub rate_bytes_per_sec: u64,
}

/// One packet's feedback for the estimator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Send time, ns.
    pub send_ns: u64,
    /// Its delay (RTT), ns.
    pub delay_ns: u32,
    /// Bytes in flight when it was sent.
    pub inflight: u32,
    /// Bytes it acknowledged.
    pub acked: u32,
}

/// Batched least squares (Algorithm 1) with constant state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Estimator {
    /// Send time that opened this batch (x = send time − start).
    start_ns: u64,
    /// `start_ns` is set (false: the next sample opens the batch).
    started: bool,
    /// x is kept in units of 2^shift ns so that x ≤ 4τ fits 20 bits and
    /// every sum below fits 64 bits for any realistic batch (chosen from τ
    /// when the batch starts; 0 for τ ≤ 262 µs, i.e. exact nanoseconds).
    shift: u8,
    /// First delay of the batch (y = delay − y0).
    y0_ns: u32,
    n: u32,
    /// Σx (x < 2^22 after scaling: < 2^54 for n < 2^32).
    sum_x: u64,
    /// Σx² (< 2^44 per sample: exact for n < 2^20 samples per batch).
    sum_xx: u64,
    /// Σy with y = delay − y0 (|y| < 2^32).
    sum_y: i64,
    /// Σxy (saturating: the only sum that could exceed 64 bits, with
    /// delay swings of seconds inside one batch).
    sum_xy: i64,
    /// Σ in-flight bytes.
    sum_infl: u64,
    /// Σ acked bytes, saturating (one batch lasts τ ≈ RTT/2: 4 GB would take
    /// 16 Tbit/s over 2 ms). 32 bits keep the state within the kernel's
    /// private CC area next to the Linux adapter's.
    sum_acked: u32,
}

impl Estimator {
    /// Starts a batch at send time `start_ns` for period `tau_ns`.
    pub fn restart(&mut self, start_ns: u64, tau_ns: u64) {
        let bits = 64 - mul_sat(tau_ns, 4).leading_zeros();
        *self = Self { start_ns, started: true, shift: bits.saturating_sub(20) as u8, ..Self::default() };
    }

    /// Forgets everything; the next sample opens a new batch.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Adds one sample; returns the estimate when the batch spans at least
    /// `tau_ns` and holds at least three samples, then starts the next batch
    /// at this sample's send time. A batch spanning more than `4·tau_ns` is
    /// stale (idle, stall) and is discarded.
    #[inline]
    pub fn add(&mut self, s: &Sample, tau_ns: u64) -> Option<Estimate> {
        self.add_within(s, tau_ns, || mul_sat(tau_ns, 4))
    }

    /// [`Estimator::add`] with the stale bound given: a batch spanning more
    /// than `stale_ns` is discarded (asked for only when the sample does
    /// not simply extend the batch: it costs a division).
    #[inline]
    pub fn add_within(&mut self, s: &Sample, tau_ns: u64, stale_ns: impl FnOnce() -> u64) -> Option<Estimate> {
        if self.try_extend(s, tau_ns) {
            return None;
        }
        self.add_slow(s, tau_ns, stale_ns())
    }

    /// The common case of [`Estimator::add_within`]: a sample inside a
    /// started batch, in order, not ending it, is accumulated (true);
    /// anything else is left to `add_within` (false).
    #[inline(always)]
    pub fn try_extend(&mut self, s: &Sample, tau_ns: u64) -> bool {
        // (`x < tau_ns` also says the sample is not older than the batch:
        // one sent before `start_ns` wraps x above 2^63, send times being
        // ns since boot, far above any τ.)
        let x = s.send_ns.wrapping_sub(self.start_ns);
        if self.started && x < tau_ns {
            self.accumulate(x, s);
            return true;
        }
        false
    }

    #[inline]
    fn accumulate(&mut self, x: u64, s: &Sample) {
        // x ≤ 4τ here, so x >> shift < 2^22 (see `shift`): the products below
        // cannot overflow and the sums only with absurd sample counts, so
        // wrapping adds are exact in practice and never panic.
        // (If τ grew since the batch started, x may exceed 4τ_old: the
        // saturating products keep that harmless.)
        let xs = x.wrapping_shr(self.shift as u32);
        let y = s.delay_ns as i64 - self.y0_ns as i64;
        self.sum_x = self.sum_x.wrapping_add(xs);
        self.sum_xx = self.sum_xx.wrapping_add(mul_sat(xs, xs));
        self.sum_y = self.sum_y.wrapping_add(y);
        self.sum_xy = self.sum_xy.saturating_add(mul_sat_i64(xs.min(i64::MAX as u64) as i64, y));
        self.sum_infl = self.sum_infl.wrapping_add(s.inflight as u64);
        self.sum_acked = self.sum_acked.saturating_add(s.acked);
        self.n = self.n.wrapping_add(1);
    }

    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn add_slow(&mut self, s: &Sample, tau_ns: u64, stale_ns: u64) -> Option<Estimate> {
        let send_ns = s.send_ns;
        if !self.started {
            self.restart(send_ns, tau_ns);
        }
        // Out-of-order send times count as the batch start.
        let mut x = send_ns.saturating_sub(self.start_ns);
        if x > stale_ns {
            self.restart(send_ns, tau_ns);
            x = 0;
        }
        if self.n == 0 {
            self.y0_ns = s.delay_ns;
        }
        self.accumulate(x, s);
        if x >= tau_ns && self.n >= MIN_SAMPLES {
            let e = self.estimate(x);
            self.restart(send_ns, tau_ns);
            self.y0_ns = s.delay_ns; // the next batch's offset (any delay will do)
            e
        } else {
            None
        }
    }

    /// Evaluates the batch (needs ≥ 3 samples and a non-degenerate spread of
    /// send times; `span_ns` is the batch duration).
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    pub fn estimate(&self, span_ns: u64) -> Option<Estimate> {
        if self.n < MIN_SAMPLES || span_ns == 0 {
            return None;
        }
        let n = self.n as i64;
        // Means. sum_x ≤ n·2^32 fits i64 for n < 2^31.
        let sum_x = core::cmp::min(self.sum_x, i64::MAX as u64) as i64;
        let sum_xx = core::cmp::min(self.sum_xx, i64::MAX as u64) as i64;
        let delay = (self.y0_ns as i64).saturating_add(div_i64(self.sum_y, n));
        // g = (n·Σxy − Σx·Σy) / (n·Σx² − (Σx)²)  (eq. 7)
        // The slope is per 2^shift ns of x: scale back to per ns.
        let gradient = slope_q16(n, sum_x, self.sum_y, sum_xx, self.sum_xy)?.checked_shr(self.shift as u32).unwrap_or(0);
        Some(Estimate {
            delay_ns: delay.clamp(0, u32::MAX as i64) as u32,
            gradient_q16: gradient,
            inflight_bytes: sat_u32(self.sum_infl / core::cmp::max(self.n, 1) as u64), // n ≥ 3 here
            rate_bytes_per_sec: mul_div(self.sum_acked as u64, NSEC_PER_SEC, span_ns),
        })
    }

    /// Samples in the current batch.
    pub fn samples(&self) -> u32 {
        self.n
    }
}

/// Per-flow OSCAR state (fits `ICSK_CA_PRIV_SIZE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Oscar {
    est: Estimator,
    base_rtt_ns: u32,
    /// Unified ratio u, Q16.
    u_q16: u32,
    /// Window in bytes (output).
    cwnd: u32,
    /// The host delay (module doc).
    host: HostDelay,
    /// Pacing rate `u·μ` in bytes/s (output).
    rate_bytes_per_sec: u64,
    /// No second loss reaction before this time, µs wrapping like jiffies
    /// (0: none).
    loss_holdoff_until_us: u32,
    /// u before the last loss or RTO cut, Q12 (u ≤ 16.0: `u_max_q16`'s
    /// bound; saturating), for [`CongestionControl::undo`]; 0: none.
    loss_u_q12: u16,
}
assert_fits_ca_priv!(Oscar);

impl Oscar {
    /// Current unified ratio u, Q16. For stats and tests.
    pub fn u_q16(&self) -> u32 {
        self.u_q16
    }
    pub fn base_rtt_ns(&self) -> u32 {
        self.base_rtt_ns
    }

    fn d_target_ns(&self, p: &Params) -> u64 {
        (self.pipe_rtt_ns() as u64).saturating_add(p.target_qdelay_ns as u64)
    }

    /// The pipe RTT: base RTT + the learned host delay (module doc).
    #[inline]
    fn pipe_rtt_ns(&self) -> u32 {
        self.base_rtt_ns.saturating_add(self.host.ns())
    }

    /// The host delay estimate in ns (module doc).
    pub fn host_delay_ns(&self) -> u32 {
        self.host.ns()
    }

    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn set_outputs(&mut self, p: &Params) {
        // (max/min, not `clamp`: `clamp` panics if the bounds were inverted.)
        self.u_q16 = core::cmp::max(core::cmp::min(self.u_q16, p.u_max_q16), p.u_min_q16);
        let target_window = bdp_bytes(p.rate_bytes_per_sec, sat_u32(self.d_target_ns(p)));
        let w = mul_q16(target_window, self.u_q16);
        let bdp = bdp_bytes(p.rate_bytes_per_sec, self.pipe_rtt_ns());
        let w = if p.bdp_floor != 0 { core::cmp::max(w, bdp) } else { core::cmp::min(w, bdp) };
        let w = core::cmp::max(w, mul_sat(p.min_wnd_pkts as u64, p.mtu as u64));
        self.cwnd = sat_u32(core::cmp::min(w, super::MAX_CWND_BYTES as u64));
        self.rate_bytes_per_sec = core::cmp::max(mul_q16(p.rate_bytes_per_sec, self.u_q16), 1);
    }

    /// Algorithm 2, lines 4–13, on one estimate.
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn control(&mut self, p: &Params, e: &Estimate) {
        let base = self.pipe_rtt_ns() as u64;
        let eps = core::cmp::max(mul_q16(base, p.eps_q16), 1_000);
        if (e.delay_ns as u64) <= base.saturating_add(eps) {
            self.u_q16 = self.u_q16.saturating_add(p.u_hai_q16); // hyper increase
        } else {
            let mu = p.rate_bytes_per_sec;
            // ⟨delay, window⟩: u_w = inflight / (delay·μ)
            let u_w = ratio_q16(e.inflight_bytes as u64, bdp_bytes(mu, e.delay_ns));
            // ⟨gradient, rate⟩: u_r = rate / ((1 + g)·μ). Physically g ≥ −1;
            // keep the divisor ≥ 1/64 so a draining queue gives a bounded jump.
            let one_plus_g = (ONE as i64 + e.gradient_q16 as i64).max(ONE as i64 / 64) as u64;
            let rate_ratio = ratio_q16(e.rate_bytes_per_sec, mu) as u64;
            let u_r = sat_u32(mul_div(rate_ratio, ONE as u64, one_plus_g));
            self.u_q16 = if (e.delay_ns as u64) < self.d_target_ns(p) {
                core::cmp::max(u_w, u_r)
            } else {
                core::cmp::min(u_w, u_r)
            };
            self.u_q16 = self.u_q16.saturating_add(p.u_ai_q16);
        }
        self.set_outputs(p);
    }

    /// Keeps u for [`Oscar::undo`] before a loss or RTO cut.
    fn remember_u_for_undo(&mut self) {
        self.loss_u_q12 = core::cmp::min(self.u_q16 >> 4, u16::MAX as u32) as u16;
    }

    fn tau_ns(&self, p: &Params) -> u64 {
        core::cmp::max(mul_q16(self.pipe_rtt_ns() as u64, p.tau_q16), 1)
    }

    /// Every ACK with an RTT sample, after the base RTT: the host-delay
    /// estimate, then the sample into the estimator (Algorithm 2 when a
    /// batch ends).
    #[inline(always)]
    fn ack_body(&mut self, p: &Params, s: &AckSample) {
        self.host.sample(s.rtt_ns, p.host_delay_gain_q16);
        let send = if s.send_time_ns != 0 { s.send_time_ns } else { s.now_ns.saturating_sub(s.rtt_ns as u64) };
        let tau = self.tau_ns(p);
        if s.inflight_at_send == 0 {
            return; // unknown in-flight-at-send: the ⟨delay, window⟩ loop cannot use it
        }
        let sample = Sample { send_ns: send, delay_ns: s.rtt_ns, inflight: s.inflight_at_send, acked: s.acked_bytes };
        if !self.est.try_extend(&sample, tau) {
            self.batch_boundary(p, s, send, tau);
        }
    }

    /// A sample that does not simply extend the estimator's batch: it may
    /// end the batch (an estimate, then Algorithm 2 on it), start one, or
    /// find it stale. Off the ACK fast path.
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn batch_boundary(&mut self, p: &Params, s: &AckSample, send: u64, tau: u64) {
        let sample = Sample { send_ns: send, delay_ns: s.rtt_ns, inflight: s.inflight_at_send, acked: s.acked_bytes };
        let rate = self.rate_bytes_per_sec;
        if let Some(e) = self.est.add_within(&sample, tau, || Self::stale_ns(p, rate, tau)) {
            if !s.app_limited || e.delay_ns as u64 > self.base_rtt_ns as u64 {
                self.control(p, &e);
            }
        }
    }

    /// A batch is stale (a stall) beyond 4τ, or beyond the time the flow's
    /// own pacing rate takes to send 8 MTUs (four delayed-ACK pairs), so
    /// that a sparse flow's batches still reach 3 samples (module doc).
    fn stale_ns(p: &Params, rate_bytes_per_sec: u64, tau_ns: u64) -> u64 {
        let spacing = mul_div(8 * p.mtu as u64, NSEC_PER_SEC, core::cmp::max(rate_bytes_per_sec, 1));
        core::cmp::max(mul_sat(tau_ns, 4), spacing)
    }
}

impl CongestionControl for Oscar {
    type Params = Params;
    const NAME: &'static str = "oscar";

    fn new(p: &Params, init: &FlowInit) -> Self {
        let mut s = Self {
            est: Estimator::default(),
            base_rtt_ns: init.rtt_hint_ns,
            u_q16: ONE, // "OSCAR starts at line rate (u = 1)"
            cwnd: 0,
            host: HostDelay::new(),
            rate_bytes_per_sec: 0,
            loss_holdoff_until_us: 0,
            loss_u_q12: 0,
        };
        s.set_outputs(p);
        s
    }

    fn on_ack(&mut self, p: &Params, s: &AckSample) {
        if s.rtt_ns == 0 {
            return;
        }
        if update_min_rtt(&mut self.base_rtt_ns, s.rtt_ns) {
            self.set_outputs(p);
        }
        self.ack_body(p, s);
    }

    fn on_event(&mut self, p: &Params, e: Event, now: u64) {
        match e {
            Event::Loss { .. } => {
                // µs since boot, wrapping at 2^32 (71 min); a holdoff is one
                // RTT, far shorter than half the wrap.
                let now_us = (now / 1000) as u32;
                let until = self.loss_holdoff_until_us;
                if until == 0 || (now_us.wrapping_sub(until) as i32) >= 0 {
                    self.remember_u_for_undo();
                    self.u_q16 /= 2;
                    self.set_outputs(p);
                    let rtt_us = core::cmp::max(self.pipe_rtt_ns() / 1000, 1);
                    self.loss_holdoff_until_us = core::cmp::max(now_us.wrapping_add(rtt_us), 1);
                }
            }
            Event::Rto => {
                self.remember_u_for_undo();
                self.u_q16 /= 4;
                self.set_outputs(p);
                self.est.reset();
                self.host.restart_round();
            }
            Event::IdleRestart => {
                self.est.reset();
                self.host.restart_round();
            }
        }
    }

    fn cwnd(&self) -> u32 {
        self.cwnd
    }
    fn pacing_rate(&self) -> Option<u64> {
        Some(self.rate_bytes_per_sec)
    }
    fn ssthresh(&self) -> u32 {
        self.cwnd
    }
    /// The last loss or RTO cut was spurious (Linux undoes a recovery that
    /// DSACKs or timestamps show was reordering): u goes back to at least
    /// what it was before the cut, as `tcp_reno_undo_cwnd` does for the
    /// window (module doc, "Undo").
    fn undo(&mut self, p: &Params) {
        if self.loss_u_q12 != 0 {
            self.u_q16 = core::cmp::max(self.u_q16, (self.loss_u_q12 as u32) << 4);
            self.loss_u_q12 = 0;
            self.set_outputs(p);
        }
    }
    /// OSCAR's window is a cap; its pacing rate is what limits it.
    fn hold_cwnd(&mut self, _max_bytes: u32) {}
    const INFO_FIELDS: [&'static str; 4] = ["base_rtt_us", "u_q16", "rate_mbps", "host_delay_us"];
    fn info(&self) -> [u32; 4] {
        let mbps = sat_u32(self.rate_bytes_per_sec / 125_000);
        [self.base_rtt_ns / 1000, self.u_q16, mbps, self.host.ns() / 1000]
    }
}

tunables!(Params {
    rate_bytes_per_sec: u64, mtu: u32, target_qdelay_ns: u32, tau_q16: u32, u_hai_q16: u32,
    u_ai_q16: u32, eps_q16: u32, u_min_q16: u32, u_max_q16: u32, bdp_floor: u32,
    host_delay_gain_q16: u32, min_wnd_pkts: u32,
});
