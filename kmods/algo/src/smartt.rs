//! SMaRTT / UEC NSCC — smartt-uec-nscc §III, Algorithms 1–4.
//!
//! Model. A per-ACK window controller on ECN × delay (Algorithm 1):
//!
//! | ECN | RTT vs target | action                                            |
//! |-----|---------------|---------------------------------------------------|
//! | yes | above         | MD, once per base RTT: `cwnd *= max(0.5, 1 − γ·(avg_rtt − trtt)/avg_rtt)` (eq. 1) |
//! | yes | below         | no change (a load balancer may repath: see [`Smartt::repath_hint`]) |
//! | no  | above         | fair increase: `cwnd += size/cwnd · mtu · fi` (eq. 2) |
//! | no  | below         | proportional increase (eq. 3), then fair increase |
//!
//! plus QuickAdapt (Algorithm 2: on heavy congestion, once per target RTT, set
//! the window to the bytes acked in the last target RTT and ignore the
//! congestion signals of the bytes then in flight), FastIncrease (Algorithm 3:
//! after a window of clean ACKs near the base RTT, `+k·mtu` per ACK) and the
//! clamp `mtu ≤ cwnd ≤ 1.5·BDP` (§III-J). Increase constants are scaled by the
//! path BDP relative to a reference BDP, so flows with different base RTTs ramp
//! up in the same wall-clock time (§III-J "Scaling").
//!
//! **TCP has no packet trimming**: a detected loss ([`Event::Loss`]) stands in
//! for a trimmed packet (window shrinks by its size, QuickAdapt is armed), and
//! an RTO is treated the same way. Without trimming the paper's rule for
//! arming QuickAdapt (§III-E a) is also used: at the end of a target-RTT
//! measurement, if the RTT is above the QA delay threshold and fewer than
//! `β·cwnd` bytes were acked.
//!
//! Deviations and choices (each tunable; the evidence is in
//! testbed/notes/2026-11-27-smartt-deviations.md):
//! - **One network-wide target queueing delay**: `trtt = the flow's base RTT + target_qdelay`,
//!   default half the intra-DC base RTT (the paper's `trtt = 1.5 × brtt` for intra-DC flows; the
//!   UEC code also keeps a `target_Qdelay`). A per-flow `1.5 × base` lets inter-DC flows sit on
//!   a queue 8× deeper and starves the intra-DC ones
//!   (evidence: testbed/notes/2026-11-27-smartt-deviations.md#target-rtt-per-flow).
//! - `fi` = 5 MTU per RTT at the reference BDP and `ref_bdp` = 100 Gbit/s ×
//!   12 µs = 150 kB, the public UEC code's reference (`initNsccParams`); `pi`
//!   = base/(trtt − base) = 2 as derived in §III-I4.
//! - `avg_rtt` is an EWMA with gain 0.0125 per ACK (UEC code); "RTT ≈ base" for
//!   FastIncrease means within 5 % (1 µs floor).
//! - The increases (eqs. 2 and 3) are accumulated per ACK and applied every
//!   `increase_batch_pkts` MTUs of acked bytes (default 8; at most a quarter
//!   window), as §III-G allows
//!   ("accumulate values per packet but update the cwnd less frequently to
//!   avoid executing divisions per-packet") and the UEC code does; 1 gives the
//!   exact per-ACK form. QuickAdapt and an idle restart drop the increase
//!   still pending; MD and losses leave it pending
//!   (evidence for the quarter-window bound: testbed/notes/2026-11-27-smartt-deviations.md#increase-batches).
//! - **Host delay (real hosts; issue 28).** The window cap `1.5 × BDP`, the increase scaling
//!   `a = BDP / ref_BDP` and QuickAdapt (its period, one target RTT, and its delay threshold) use
//!   the flow's *pipe* RTT, base RTT + the learned host delay ([`super::host`]): from the idle
//!   base RTT the cap held every flow at the kernel's 2-packet floor, and QuickAdapt (in the
//!   simulator with end-host delay) fired every period. The target RTT of the ECN × delay
//!   cases, FastIncrease's "RTT ≈ base" and the MD spacing stay on the base RTT, as in the
//!   paper: a target moved with the estimate ratchets up with the queue.
//!   `host_delay_gain_q16 = 0` gives the paper's base-RTT sizing
//!   (evidence: testbed/notes/2026-11-27-smartt-deviations.md#host-delay).
//! - **The window cap follows the ACK clock while the port reports no queue (real hosts;
//!   issue 28).** The cap is `max_wnd_bdp × rate × max(pipe RTT, clock)`, the clock being the
//!   sender's smoothed RTT ([`AckSample::srtt_ns`]: Linux's `srtt`, whose samples time the
//!   oldest newly acked byte) taken at the end of a QuickAdapt measurement period in which no
//!   ACK was ECN-marked (0 after a marked one): a lone flow's ACK clock runs slower than the
//!   pipe estimate, and a mark withdraws it so that the cap still guards against incast. Where
//!   the adapter gives no smoothed RTT, or `host_delay_gain_q16 = 0`, the cap is the paper's
//!   (evidence: testbed/notes/2026-11-27-smartt-deviations.md#window-cap-follows-the-ack-clock).

use super::fixed::{bdp_bytes, mul_div, mul_q16, mul_sat, ratio_q16, sat_u32, ONE, SHIFT};
use super::host::HostDelay;
use super::params::{check, NetConfig, ParamError};
use super::window::Window;
use super::{update_min_rtt, AckSample, CongestionControl, Event, FlowInit};

/// SMaRTT tunables. Fractions are Q16 (`ONE` = 1.0).
/// `repr(C)`: the BPF backend shares this layout with userspace through a map.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Line rate in bytes/s (BDP = rate × base RTT).
    pub rate_bytes_per_sec: u64,
    /// MTU in bytes.
    pub mtu: u32,
    /// Target queueing delay in ns: `trtt = base RTT + target_qdelay`
    /// (0.5 × the intra-DC base RTT, i.e. the paper's `trtt = 1.5 × brtt`).
    pub target_qdelay_ns: u32,
    /// γ in eq. 1 (0.8).
    pub gamma_q16: u32,
    /// Largest MD cut (0.5).
    pub max_md_q16: u32,
    /// fi: fair increase in MTU per RTT at the reference BDP (5).
    pub fi_q16: u32,
    /// pi: proportional increase constant (2 = base/(trtt − base)).
    pub pi_q16: u32,
    /// BDP the increase constants are scaled against, bytes (150 000).
    pub ref_bdp_bytes: u32,
    /// Gain of the avg_rtt EWMA per ACK (0.0125).
    pub avg_rtt_gain_q16: u32,
    /// FastIncrease step k in MTUs per ACK (2).
    pub fast_increase_k: u32,
    /// "RTT ≈ base RTT" tolerance for FastIncrease (0.05).
    pub fast_increase_tol_q16: u32,
    /// Without trimming, QA is armed when RTT > base + qa_qdelay (the target
    /// queueing delay) ...
    pub qa_qdelay_ns: u32,
    /// ... and fewer than qa_beta × cwnd bytes were acked in a target RTT (0.5).
    pub qa_beta_q16: u32,
    /// QuickAdapt window = acked × qa_scaling (1.0).
    pub qa_scaling_q16: u32,
    /// Window cap as a multiple of the flow's BDP (1.5).
    pub max_wnd_bdp_q16: u32,
    /// Initial window as a multiple of the handshake BDP (1.0: line rate).
    pub init_bdp_q16: u32,
    /// Increases are applied once per this many MTUs of acked bytes, at most
    /// once per quarter window (8, §III-G; 1 = per ACK).
    pub increase_batch_pkts: u32,
    /// Gain per round of the host-delay estimate (0.25; 0:
    /// off, sizes from the base RTT as the paper). See [`super::host`].
    pub host_delay_gain_q16: u32,
}

impl Params {
    const_unless_bpf! {
        /// The paper's defaults (§III-J) and the UEC reference code's constants.
        pub fn from_net(n: &NetConfig) -> Self {
            Self {
                rate_bytes_per_sec: n.rate_bytes_per_sec(),
                mtu: n.mtu,
                target_qdelay_ns: n.intra_rtt_ns / 2,
                gamma_q16: ONE * 8 / 10,
                max_md_q16: ONE / 2,
                fi_q16: 5 * ONE,
                pi_q16: 2 * ONE,
                ref_bdp_bytes: 150_000,
                avg_rtt_gain_q16: ONE / 80,
                fast_increase_k: 2,
                fast_increase_tol_q16: ONE / 20,
                qa_qdelay_ns: n.intra_rtt_ns / 2,
                qa_beta_q16: ONE / 2,
                qa_scaling_q16: ONE,
                max_wnd_bdp_q16: ONE * 3 / 2,
                init_bdp_q16: ONE,
                increase_batch_pkts: 8,
                host_delay_gain_q16: super::host::DEFAULT_GAIN_Q16,
            }
        }
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        check("rate_bytes_per_sec", self.rate_bytes_per_sec, 125_000, 400_000_000_000)?;
        check("mtu", self.mtu as u64, 256, 65_535)?;
        check("target_qdelay_ns", self.target_qdelay_ns as u64, 1_000, 1_000_000_000)?;
        check("gamma_q16", self.gamma_q16 as u64, 0, ONE as u64)?;
        check("max_md_q16", self.max_md_q16 as u64, 1, ONE as u64 * 15 / 16)?;
        check("fi_q16", self.fi_q16 as u64, 0, 100 * ONE as u64)?;
        check("pi_q16", self.pi_q16 as u64, 0, 100 * ONE as u64)?;
        check("ref_bdp_bytes", self.ref_bdp_bytes as u64, 1_000, 1 << 30)?;
        check("avg_rtt_gain_q16", self.avg_rtt_gain_q16 as u64, 1, ONE as u64)?;
        check("fast_increase_k", self.fast_increase_k as u64, 0, 64)?;
        check("fast_increase_tol_q16", self.fast_increase_tol_q16 as u64, 0, ONE as u64)?;
        check("qa_qdelay_ns", self.qa_qdelay_ns as u64, 0, 1_000_000_000)?;
        check("qa_beta_q16", self.qa_beta_q16 as u64, 0, ONE as u64)?;
        check("qa_scaling_q16", self.qa_scaling_q16 as u64, ONE as u64 / 8, 4 * ONE as u64)?;
        check("max_wnd_bdp_q16", self.max_wnd_bdp_q16 as u64, ONE as u64 / 2, 64 * ONE as u64)?;
        check("init_bdp_q16", self.init_bdp_q16 as u64, 0, 4 * ONE as u64)?;
        check("increase_batch_pkts", self.increase_batch_pkts as u64, 1, 64)?;
        check("host_delay_gain_q16", self.host_delay_gain_q16 as u64, 0, ONE as u64)?;
        Ok(())
    }
}

/// One ACK (or loss) as Algorithms 1–3 see it.
#[derive(Clone, Copy)]
struct Step {
    now: u64,
    /// This ACK's RTT sample, or the average when it has none (0 for a loss).
    rtt: u32,
    acked: u32,
    marked: bool,
    inflight: u32,
    app_limited: bool,
}

/// Per-flow SMaRTT state (fits `ICSK_CA_PRIV_SIZE`; the paper's hardware
/// version needs 19 bytes, ours keeps wider counters and cached constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Smartt {
    w: Window,
    base_rtt_ns: u32,
    avg_rtt_ns: u32,
    /// Host delay (module doc).
    host: HostDelay,
    /// The sender's smoothed RTT, µs, at the end of the last measurement
    /// period if no ACK in it was ECN-marked (the ACK clock,
    /// [`AckSample::srtt_ns`]; 0: none): the window cap's RTT (module doc).
    clock_rtt_us: u16,
    /// QuickAdapt: end of the current measurement (0: not started), bytes
    /// acked in it, and whether a loss armed it.
    qa_end_ns: u64,
    qa_acked: u32,
    /// Window at the start of the measurement (what could be in flight).
    qa_cwnd: u32,
    trigger_qa: bool,
    /// An ACK of the current measurement period was ECN-marked.
    period_marked: bool,
    /// The last ACK fell in the "ECN, RTT below target" case.
    repath: bool,
    /// FastIncrease active.
    fast_increase: bool,
    /// Ignore phase after QuickAdapt: bytes still to be acked before the
    /// congestion signals count again (the bytes in flight when it fired).
    ignore_left: u32,
    /// Contiguous clean bytes (FastIncrease).
    clean_bytes: u32,
    /// Pending increase (§III-G): bytes acked in the increase cases, and
    /// Σ (trtt − rtt) · acked over them (eq. 3's numerator, ns · bytes).
    inc_acked: u32,
    inc_gap_bytes: u64,
    last_md_ns: u64,
    /// Cached per-flow constants, refreshed at the end of every QuickAdapt
    /// measurement (once per target RTT, so a new base RTT or a tunable
    /// written at run time reaches running flows within one): target RTT
    /// (ns), window cap (bytes), and `mtu · a` in bytes (Q16), which fi and
    /// pi multiply into the increases per RTT. (FastIncrease's "RTT ≈ base"
    /// bound is computed per ACK.)
    target_rtt_ns: u32,
    max_wnd: u32,
    mtu_a_q16: u64,
}
assert_fits_ca_priv!(Smartt);

impl Smartt {
    /// Recomputes the cached constants from the base RTT and the tunables,
    /// and keeps the window under the (possibly lower) cap.
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn refresh_flow_constants(&mut self, p: &Params) {
        let base = self.base_rtt(p) as u64;
        self.target_rtt_ns = sat_u32(base + p.target_qdelay_ns as u64);
        // The window needs the pipe the ACK clock runs at (module doc).
        let bdp = bdp_bytes(p.rate_bytes_per_sec, self.pipe_rtt(p));
        let clock_bdp = bdp_bytes(p.rate_bytes_per_sec, core::cmp::max(self.pipe_rtt(p), self.clock_rtt_us as u32 * 1000));
        self.max_wnd = sat_u32(core::cmp::max(mul_q16(clock_bdp, p.max_wnd_bdp_q16), p.mtu as u64));
        // Scaling a = BDP / ref_BDP; constants in bytes per RTT = k · mtu · a.
        self.mtu_a_q16 = mul_div((p.mtu as u64) << SHIFT, bdp, p.ref_bdp_bytes as u64);
        self.w.clamp(p.mtu, self.max_wnd);
    }

    /// The base RTT, or until the first RTT sample the intra-DC RTT implied
    /// by the target queueing delay (trtt = 1.5 × brtt). The minimum itself is
    /// seeded by the first real sample, never by this guess.
    #[inline]
    fn base_rtt(&self, p: &Params) -> u32 {
        if self.base_rtt_ns != 0 {
            self.base_rtt_ns
        } else {
            sat_u32(2 * p.target_qdelay_ns as u64)
        }
    }

    /// The pipe RTT: base RTT + the learned host delay (module doc).
    #[inline]
    fn pipe_rtt(&self, p: &Params) -> u32 {
        self.base_rtt(p).saturating_add(self.host.ns())
    }

    /// The host delay estimate in ns (module doc).
    pub fn host_delay_ns(&self) -> u32 {
        self.host.ns()
    }

    /// True when the last ACK was ECN-marked with an RTT below target: the
    /// congestion may be a path collision, and a load balancer (UnoLB/REPS)
    /// should try another path. The window is left untouched.
    pub fn repath_hint(&self) -> bool {
        self.repath
    }
    pub fn base_rtt_ns(&self) -> u32 {
        self.base_rtt_ns
    }
    pub fn avg_rtt_ns(&self) -> u32 {
        self.avg_rtt_ns
    }

    /// Algorithm 2, at the end of each target-RTT measurement. Returns
    /// whether the window was adapted. The caller then refreshes the cached
    /// constants (after the rest of the ACK's processing: in the BPF build
    /// that keeps the verifier's path count down).
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn quick_adapt_epoch_end(&mut self, p: &Params, q: &Step) -> bool {
        let Step { now, rtt, inflight, app_limited, .. } = *q;
        // QuickAdapt judges one unqueued round trip of the real pipe.
        let base_rtt = self.pipe_rtt(p) as u64;
        let mut adapted = false;
        // Without trimming: arm QA on high delay and few acked bytes.
        let cwnd = core::cmp::min(self.w.bytes(), self.qa_cwnd) as u64;
        if !app_limited
            && rtt as u64 > base_rtt + p.qa_qdelay_ns as u64
            && (self.qa_acked as u64).saturating_add(p.mtu as u64) < mul_q16(cwnd, p.qa_beta_q16)
        {
            self.trigger_qa = true;
        }
        if self.trigger_qa && self.qa_end_ns != 0 {
            self.trigger_qa = false;
            adapted = true;
            self.w.prior_cwnd = self.w.bytes();
            self.w.set(mul_q16(self.qa_acked as u64, p.qa_scaling_q16), p.mtu);
            self.drop_pending_increase();
            self.ignore_left = inflight;
        }
        let period = base_rtt.saturating_add(p.target_qdelay_ns as u64);
        self.qa_end_ns = now.saturating_add(core::cmp::max(period, 1));
        self.qa_acked = 0;
        self.qa_cwnd = self.w.bytes();
        adapted
    }

    /// Algorithm 3. Returns whether FastIncrease is active.
    #[inline(always)]
    fn fast_increase(&mut self, p: &Params, q: &Step) -> bool {
        let Step { rtt, marked, acked, .. } = *q;
        let base = self.base_rtt(p) as u64;
        let near_base = base.saturating_add(core::cmp::max(mul_q16(base, p.fast_increase_tol_q16), 1_000));
        if !marked && rtt as u64 <= near_base {
            self.clean_bytes = self.clean_bytes.saturating_add(acked);
            if self.clean_bytes > self.w.bytes() || self.fast_increase {
                let inc = mul_sat(p.fast_increase_k as u64, p.mtu as u64) << SHIFT;
                self.w.add_q16(inc, self.max_wnd);
                self.fast_increase = true;
                return true;
            }
        } else {
            self.clean_bytes = 0;
            self.fast_increase = false;
        }
        false
    }

    /// Algorithm 1 (with eqs. 1–3).
    #[inline(always)]
    fn core_cases(&mut self, p: &Params, q: &Step) {
        let Step { now, rtt, marked, acked, .. } = *q;
        let trtt = self.target_rtt_ns as u64;
        let above = rtt as u64 > trtt;
        self.repath = marked && !above;
        match (marked, above) {
            (true, true) => {
                // Multiplicative decrease, once per base RTT (eq. 1).
                if self.last_md_ns == 0 || now >= self.last_md_ns.saturating_add(self.base_rtt(p) as u64) {
                    let avg = core::cmp::max(self.avg_rtt_ns as u64, 1);
                    let excess = avg.saturating_sub(trtt);
                    let cut = mul_q16(ratio_q16(excess, avg) as u64, p.gamma_q16);
                    let cut = core::cmp::min(cut, p.max_md_q16 as u64) as u32;
                    if cut > 0 {
                        self.w.md(cut, p.mtu);
                        self.last_md_ns = core::cmp::max(now, 1);
                    }
                }
            }
            (true, false) => {} // load-balancer path change; window unchanged
            // Fair increase only (eq. 2).
            (false, true) => self.accumulate_increase(p, acked, 0, rtt),
            // Proportional increase (eq. 3), then fair increase.
            (false, false) => self.accumulate_increase(p, acked, trtt.saturating_sub(rtt as u64), rtt),
        }
    }

    /// Eqs. 2 and 3 for one ACK of `acked` bytes, `gap_ns` = trtt − rtt
    /// below the target (0 above it), applied once a batch is complete.
    #[inline]
    fn accumulate_increase(&mut self, p: &Params, acked: u32, gap_ns: u64, rtt: u32) {
        self.inc_acked = self.inc_acked.saturating_add(acked);
        self.inc_gap_bytes = self.inc_gap_bytes.saturating_add(mul_sat(gap_ns, acked as u64));
        // A batch is `increase_batch_pkts` MTUs but at most a quarter window:
        // window-sized batches made the simulator's incast unfair
        // (evidence: testbed/notes/2026-11-27-smartt-deviations.md#increase-batches).
        let batch = core::cmp::min(p.increase_batch_pkts as u64 * p.mtu as u64, (self.w.bytes() / 4) as u64);
        if self.inc_acked as u64 >= batch {
            self.apply_increase(p, rtt);
        }
    }

    /// The pending increase. Both increases are amounts per RTT spread over a
    /// window of ACKs (size/cwnd per ACK): fair `fi·mtu·a · Σ size / cwnd`
    /// (eq. 2) and proportional `pi·mtu·a · Σ (trtt − rtt)·size / (rtt · cwnd)`
    /// (eq. 3; `rtt` is the batch's last sample), the latter at most `Σ size`
    /// (one window per RTT).
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn apply_increase(&mut self, p: &Params, rtt: u32) {
        let acked = self.inc_acked as u64;
        let cwnd = (self.w.bytes() | 1) as u64;
        let rtt_cwnd = mul_sat(core::cmp::max(rtt, 1) as u64, cwnd);
        let pi = core::cmp::min(mul_div(mul_q16(self.mtu_a_q16, p.pi_q16), self.inc_gap_bytes, rtt_cwnd), acked << SHIFT);
        let fi = mul_div(mul_q16(self.mtu_a_q16, p.fi_q16), acked, cwnd);
        self.w.add_q16(pi.saturating_add(fi), self.max_wnd);
        self.drop_pending_increase();
    }

    fn drop_pending_increase(&mut self) {
        self.inc_acked = 0;
        self.inc_gap_bytes = 0;
    }

    /// A trimmed packet in the paper; a detected loss or RTO here.
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn on_trim(&mut self, p: &Params, now: u64, bytes: u32) {
        if self.ignore_left > 0 {
            return; // still in QuickAdapt's ignore phase
        }
        self.w.prior_cwnd = self.w.bytes();
        let c = self.w.bytes().saturating_sub(bytes);
        self.w.set(c as u64, p.mtu);
        self.trigger_qa = true;
        // The in-flight bytes are unknown here; the window bounds them.
        let inflight = self.w.bytes();
        if now >= self.qa_end_ns {
            self.quick_adapt_epoch_end(p, &Step { now, rtt: 0, acked: 0, marked: false, inflight, app_limited: true });
            self.refresh_flow_constants(p);
        }
    }
}

impl CongestionControl for Smartt {
    type Params = Params;
    const NAME: &'static str = "smartt";

    fn new(p: &Params, init: &FlowInit) -> Self {
        let base = if init.rtt_hint_ns != 0 { init.rtt_hint_ns } else { sat_u32(2 * p.target_qdelay_ns as u64) };
        let bdp = bdp_bytes(p.rate_bytes_per_sec, base);
        let cwnd = core::cmp::max(mul_q16(bdp, p.init_bdp_q16), p.mtu as u64);
        let mut s = Self {
            w: Window::new(sat_u32(cwnd), 0),
            base_rtt_ns: init.rtt_hint_ns,
            avg_rtt_ns: init.rtt_hint_ns,
            clock_rtt_us: 0,
            host: HostDelay::new(),
            qa_end_ns: 0,
            qa_acked: 0,
            qa_cwnd: 0,
            trigger_qa: false,
            period_marked: false,
            repath: false,
            fast_increase: false,
            ignore_left: 0,
            clean_bytes: 0,
            inc_acked: 0,
            inc_gap_bytes: 0,
            last_md_ns: 0,
            target_rtt_ns: 0,
            max_wnd: 0,
            mtu_a_q16: 0,
        };
        s.refresh_flow_constants(p);
        s
    }

    fn on_ack(&mut self, p: &Params, s: &AckSample) {
        let now = s.now_ns;
        let acked = s.acked_bytes;
        let marked = s.marked_bytes > 0;
        self.qa_acked = self.qa_acked.saturating_add(acked);
        if s.rtt_ns != 0 {
            // (A new minimum reaches the cached constants at the end of the
            // current QuickAdapt measurement, within one target RTT.)
            update_min_rtt(&mut self.base_rtt_ns, s.rtt_ns);
            self.host.sample(s.rtt_ns, p.host_delay_gain_q16);
            if self.avg_rtt_ns == 0 {
                self.avg_rtt_ns = s.rtt_ns; // first sample seeds the average
            }
            // avg += gain · (rtt − avg): |rtt − avg| < 2^32 and gain ≤ 1.0 (2^16),
            // so the product fits an i64 and the result lies between avg and rtt.
            let avg = self.avg_rtt_ns as i64;
            let gain = core::cmp::min(p.avg_rtt_gain_q16, ONE) as i64;
            self.avg_rtt_ns = (avg + ((s.rtt_ns as i64 - avg).wrapping_mul(gain) >> SHIFT)) as u32;
        }
        let rtt = if s.rtt_ns != 0 { s.rtt_ns } else { self.avg_rtt_ns };
        self.repath = false;
        self.period_marked |= marked;

        // Every path below keeps mtu ≤ cwnd ≤ max_wnd: the increases stop at
        // the cap, MD and QuickAdapt stop at one MTU, and a lowered cap clamps
        // the window where it is lowered.
        if self.ignore_left > 0 {
            // QuickAdapt's ignore phase; this ACK counts again if it ends it.
            self.ignore_left = self.ignore_left.saturating_sub(acked);
            if self.ignore_left > 0 {
                return;
            }
        }
        let q = Step { now, rtt, acked, marked, inflight: s.inflight, app_limited: s.app_limited };
        // Algorithm 4: QuickAdapt, else FastIncrease, else the core cases.
        // (The epoch end gets its own copy of the step, so that the common
        // path keeps it in registers.)
        if now >= self.qa_end_ns {
            // The ACK clock counts for the cap only after a measurement
            // period without a mark: the port reported no queue (module doc).
            let clock_us = if self.period_marked || p.host_delay_gain_q16 == 0 { 0 } else { s.srtt_ns / 1000 };
            self.clock_rtt_us = core::cmp::min(clock_us, u16::MAX as u32) as u16;
            self.period_marked = false;
            if !self.quick_adapt_epoch_end(p, &{ q }) && !self.fast_increase(p, &q) {
                self.core_cases(p, &q);
            }
            self.refresh_flow_constants(p);
        } else if !self.fast_increase(p, &q) {
            self.core_cases(p, &q);
        }
    }

    fn on_event(&mut self, p: &Params, e: Event, now: u64) {
        match e {
            Event::Loss { bytes } => self.on_trim(p, now, bytes),
            Event::Rto => self.on_trim(p, now, p.mtu),
            Event::IdleRestart => {
                self.drop_pending_increase();
                self.qa_end_ns = 0;
                self.qa_acked = 0;
                self.host.restart_round();
                self.clean_bytes = 0;
                self.fast_increase = false;
            }
        }
        self.w.clamp(p.mtu, self.max_wnd);
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
        self.w.bytes()
    }
    /// `flags`: 1 QuickAdapt armed, 2 repath requested, 4 fast increase.
    const INFO_FIELDS: [&'static str; 4] = ["base_rtt_us", "avg_rtt_us", "max_wnd", "flags"];
    fn info(&self) -> [u32; 4] {
        let flags = self.trigger_qa as u32 | (self.repath as u32) << 1 | (self.fast_increase as u32) << 2;
        [self.base_rtt_ns / 1000, self.avg_rtt_ns / 1000, self.max_wnd, flags]
    }
}

tunables!(Params {
    rate_bytes_per_sec: u64, mtu: u32, target_qdelay_ns: u32, gamma_q16: u32, max_md_q16: u32,
    fi_q16: u32, pi_q16: u32, ref_bdp_bytes: u32, avg_rtt_gain_q16: u32, fast_increase_k: u32,
    fast_increase_tol_q16: u32, qa_qdelay_ns: u32, qa_beta_q16: u32, qa_scaling_q16: u32,
    max_wnd_bdp_q16: u32, init_bdp_q16: u32, increase_batch_pkts: u32, host_delay_gain_q16: u32,
});
