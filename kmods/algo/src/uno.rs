//! UnoCC — uno-sc25 §4.1, Algorithm 1 ("UnoCC's control loop"); reference code
//! spcl/Uno_SC25 `sim/lcp.cpp`.
//!
//! Model. A window-based AIMD on ECN for intra- *and* inter-DC flows:
//! - **AI (ONACK)**: every ACK not ECN-marked grows the window by
//!   `α · bytes_acked / cwnd`, with α = 0.001 × the flow's BDP, i.e. α bytes
//!   per RTT (§4.1.1).
//! - **MD (ONEPOCH)**: at most once per *epoch*. An epoch is activated at the
//!   first ACK (`T_epoch` = its arrival time) and ends with the first ACK for a
//!   packet *sent* at or after `T_epoch`; then `T_epoch += epoch_period`. The
//!   epoch period is the **intra-DC** RTT for every flow, so inter-DC flows
//!   react at intra-DC granularity (the paper's key difference to Gemini). A
//!   congested epoch (any mark) cuts `cwnd *= 1 − MD_ECN · MD_scale` with
//!   `MD_ECN = E · 4K/(K + BDP)`, `E` the EWMA of the per-epoch marked fraction.
//! - **Phantom vs physical queues**: if the epoch's delay shows no physical
//!   queue (RTT within a small tolerance of the base RTT), the marks came from
//!   phantom queues only and the cut is made gentler, `MD_scale *= 0.3`;
//!   otherwise `MD_scale = 1`.
//! - **QuickAdapt (ONQA)**: once per RTT, if fewer than `β · cwnd` bytes were
//!   acked in that RTT the network is extremely congested and the window drops
//!   to the bytes acked; then one RTT of hold-off without QA or MD (§4.1.2).
//!
//! Deviations (from the paper, and from the reference code where the two differ). Each names
//! the tunable or preset, if any, that gives the other behaviour; the evidence is in
//! testbed/notes/2026-11-27-unocc-deviations.md.
//! - **QuickAdapt judges window-limited periods only** (the paper's premise): a period whose
//!   last sample is application-limited (the window did not limit the sender) is skipped. The
//!   code judges every period: `qa_when_app_limited = 1`, not in `uno-artifact`, since it moves
//!   two of the artifact's figures away from it
//!   (evidence: testbed/notes/2026-11-27-unocc-deviations.md#quickadapt-and-application-limited-periods).
//! - **Physical-queue test**: a queueing delay above `queue_delay_tol_q16` (0.055) × the
//!   intra-DC RTT, floor 1 µs, the same for every flow (paper: "delay == 0", which real clocks
//!   never show). The code's 5.5 % of each flow's own base RTT (`queue_tol_own_rtt = 1`,
//!   `uno-artifact`) lets inter-DC flows read a shared queue as phantom and take several times
//!   the intra-DC share (evidence: testbed/notes/2026-11-27-unocc-deviations.md#physical-queue-test).
//! - **Gentle factor not compounded**: `MD_scale = 0.3` for each phantom-only epoch, as the
//!   code does (its factor 0.35: `phantom_md_scale_q16`); the literal `MD_scale × 0.3` decays
//!   to 0 under a phantom queue that never empties and freezes the flows, so it is not offered
//!   (evidence: testbed/notes/2026-11-27-unocc-deviations.md#gentle-factor).
//! - E's EWMA gain: code 1.0 (no smoothing), paper runs 0.65: default 0.65
//!   (weight of the newest epoch), tunable (`ecn_ewma_gain_q16 = ONE` gives the
//!   code's behaviour).
//! - **QuickAdapt's test**: `cwnd = bytes_acked` (code `× 0.96`: `qa_scale_q16`), judged
//!   against the window at the *start* of the period and only for a shortfall above one packet,
//!   `acked + mtu < β·cwnd`; against the current window (`qa_vs_current = 1`, the code's) QA
//!   pins a 1–2 packet flow at one packet. The code's extra RTT-based QA trigger is not used
//!   (evidence: testbed/notes/2026-11-27-unocc-deviations.md#quickadapt-window).
//! - AI: code increases only while `rtt < target`; we follow the paper (every
//!   unmarked ACK).
//! - The code's `aimd_phantom` variant (the one its paper scripts run): at a
//!   marked epoch whose E fell below the previous epoch's (and the previous
//!   E was not 0, and E ≤ 0.9), the queue is draining, so the flow *adds* one
//!   AI step for the epoch's acked bytes instead of cutting. Tunable
//!   `aimd_phantom` (default 0 = the paper's Algorithm 1; see RESULTS.md for
//!   the measurement behind the default).
//! - **Fast increase**, the code's (`use_fi`, threshold 3; not in the paper, whose figure
//!   scripts pass `-noFi`): after `fast_increase_epochs` unmarked epochs in a row α is
//!   multiplied by their number. Off by default (Algorithm 1); the `real-host` preset turns it on,
//!   as the paper's α regrows a packet too slowly in a few-packet pipe, at the price of a physical
//!   queue in the simulator (evidence: testbed/notes/2026-11-27-unocc-deviations.md#fast-increase).
//! - Loss (stands in for NACK/timeout, which TCP does not have): one cut as if
//!   the whole epoch were marked (`E = 1`), at most once per RTT. RTO: window to
//!   one packet and slow start back to half the old window (TCP's RTO rule;
//!   the kernel enforces it anyway).
//! - Start: the window starts at one BDP of the handshake RTT (the paper's
//!   flows start at line rate), without slow start.
//! - **Host delay (real hosts; issue 28).** QuickAdapt's period, the flow's BDP (α,
//!   `4K/(K+BDP)`, the optional window cap) and the physical-queue test use the *pipe* RTT,
//!   base RTT + the host delay ([`super::host`]), read above the base RTT in unmarked rounds
//!   (the "floor" reading: UnoCC's ports mark before a physical queue forms). On a host a
//!   base-RTT period sees one ACK, so QuickAdapt pins every window at 2 packets, and the host's
//!   delay reads as a physical queue (full cuts at phantom marks). QuickAdapt's period is the
//!   base RTT plus the ACK clock (the smoothed RTT of unmarked rounds above the base RTT, never
//!   below the host delay: [`super::host`]): under stretch ACKs a window comes back after the
//!   oldest byte's RTT, and a period of the newest byte's judged every other period of a lone
//!   10 Gbit/s flow as extreme congestion
//!   (evidence: testbed/notes/2026-11-27-datacenter-rates.md#4d-the-ack-clock).
//!   `host_delay_gain_q16 = 0` gives the paper's sizing
//!   (evidence: testbed/notes/2026-11-27-unocc-deviations.md#host-delay).
//! - **QuickAdapt needs a mark (real hosts).** A period is judged only once the fabric has
//!   marked (in this epoch, or E has not yet decayed to 0): QuickAdapt is the paper's reaction
//!   to extreme congestion, which in UnoCC's ECN fabric marks first (its phantom queues mark
//!   at 90 % of the line), while on a host a CPU stall delays the ACK clock without a mark: a
//!   lone 10 Gbit/s flow took ~6 such cuts a second, each regrown by α over ~200 ms. Losses
//!   without marks still cut (the loss rule). `qa_needs_mark = 0` (`paper`, `uno-artifact`)
//!   judges every period
//!   (evidence: testbed/notes/2026-11-27-datacenter-rates.md#4i-quickadapt-needs-a-mark-and-unoccs-slow-path-as-a-global-bpf-function).
//! - **Pacing: the window over the base RTT**, as the code paces (`cwnd / base RTT`; the paper:
//!   "hardware pacing"), not the Linux adapter's `cwnd / srtt`: on a host the smoothed RTT holds
//!   CPU stalls and that rate falls below what the window allows. UnoCC stays window-limited to
//!   the adapter ([`CongestionControl::rate_limited`] is false)
//!   (evidence: testbed/notes/2026-11-27-unocc-deviations.md#pacing).
//! - **Not paced from the line rate up** (`unpaced_at_line_rate = 1`, the default; 0 in `paper`
//!   and `uno-artifact`, which pace always, as the reference code): a NIC sends no faster than
//!   its line, so a pacing rate at or above it limits nothing, while a host's software pacing
//!   costs a timer per skb that waits for its slot. On a host the base RTT is a few µs and
//!   `cwnd / base RTT` is 6–10 Gbit/s on a 1 Gbit/s port: paced, UnoCC took ~500 pacing-timer
//!   expiries per MB (cubic 20) and 7.9x cubic's CPU, and its flows were CPU-bound at 78–80 %
//!   of the port; unpaced, 98–99 % at 0.7x the CPU
//!   (evidence: testbed/notes/2026-11-29-realspeed-uno-cpu.md#the-pacing-rate-limits-nothing).

use super::fixed::{bdp_bytes, mul_div, mul_q16, mul_sat, ratio_q16, sat_u32, ONE, SHIFT};
use super::host::{AckClock, HostDelay};
use super::params::{check, NetConfig, ParamError};
use super::window::Window;
use super::{update_min_rtt, AckSample, CongestionControl, Event, FlowInit};

/// UnoCC tunables. Fractions are Q16 (`ONE` = 1.0) unless the name says ppm.
/// `repr(C)`: the BPF backend shares this layout with userspace through a map.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Line rate in bytes/s; the flow's BDP is `rate × base RTT`.
    pub rate_bytes_per_sec: u64,
    /// Packet size in bytes (minimum window, QA floor).
    pub mtu: u32,
    /// α, the AI per RTT, in parts per million of the flow's BDP (paper: 0.1 %
    /// = 1000 ppm).
    pub ai_bdp_ppm: u32,
    /// K in bytes for `MD_ECN = E · 4K/(K + BDP)` (paper: intra-DC BDP / 7).
    pub k_bytes: u32,
    /// Epoch period in ns, the intra-DC RTT for every flow (paper: 14 µs).
    pub epoch_ns: u32,
    /// Gain of E's EWMA, weight of the newest epoch (0.65).
    pub ecn_ewma_gain_q16: u32,
    /// MD_scale multiplier for phantom-only congestion (0.3).
    pub phantom_md_scale_q16: u32,
    /// RTT above `base + tol × intra-DC RTT` means a physical queue (0.055).
    pub queue_delay_tol_q16: u32,
    /// QuickAdapt threshold β: QA when bytes acked in an RTT < β·cwnd (0.5).
    pub qa_beta_q16: u32,
    /// QuickAdapt sets `cwnd = acked × qa_scale` (1.0).
    pub qa_scale_q16: u32,
    /// QuickAdapt period as a multiple of the flow's base RTT + its ACK clock (the base RTT alone with `host_delay_gain_q16 = 0`) (1.0).
    pub qa_period_q16: u32,
    /// Largest single multiplicative cut (0.5).
    pub max_md_q16: u32,
    /// Initial window as a multiple of the handshake BDP (1.0: line rate).
    pub init_bdp_q16: u32,
    /// 1: the reference code's `aimd_phantom` (increase instead of cutting
    /// while E falls); 0 (default): Algorithm 1.
    pub aimd_phantom: u32,
    /// 1: QuickAdapt compares the bytes acked with the *current* window, as
    /// the reference code does; 0 (default): with the window the period
    /// started with (see the module doc).
    pub qa_vs_current: u32,
    /// Window cap as a multiple of the flow's BDP (base RTT), Q16; 0
    /// (default): none. The reference code's runs cap at one BDP (1.0).
    pub max_wnd_bdp_q16: u32,
    /// 1: the physical-queue tolerance is a fraction of the flow's *own*
    /// base RTT, as the reference code's; 0 (default): of the intra-DC RTT,
    /// the same queueing delay for every flow (see the module doc).
    pub queue_tol_own_rtt: u32,
    /// Gain per round of the host-delay estimate (0.25; 0: off,
    /// the paper's period of one base RTT). See [`super::host`].
    pub host_delay_gain_q16: u32,
    /// Fast increase, the reference code's (`use_fi`, threshold 3; not in
    /// the paper, and its figure scripts pass `-noFi`): after this many
    /// unmarked epochs in a row the AI is multiplied by the number of
    /// unmarked epochs in a row; a mark, a congested epoch, QuickAdapt, a
    /// loss or an RTO start the count again. 0 (default): off, Algorithm 1.
    pub fast_increase_epochs: u32,
    /// 1: QuickAdapt also judges a period that ended application-limited,
    /// as the reference code does (its flows of a few MB under a one-BDP
    /// window are never window-limited); 0 (default): such a period is
    /// not judged (the module doc).
    pub qa_when_app_limited: u32,
    /// 1 (default): a flow whose window over its base RTT reaches the line
    /// rate is not paced: a NIC sends at most at line rate, so that pacing
    /// limits nothing and on a host costs a timer per skb (module doc, "Not
    /// paced from the line rate up"); 0 (`paper`, `uno-artifact`): always
    /// paced at `cwnd / base RTT`, as the reference code.
    pub unpaced_at_line_rate: u32,
    /// 1 (default): QuickAdapt judges a period only once the fabric has
    /// marked (in this epoch, or E has not yet decayed to 0), so a host's CPU
    /// stall, which delays the ACK clock without a mark, is not read as
    /// extreme congestion (module doc); 0: every period, as the paper and
    /// the reference code (`paper`, `uno-artifact`).
    pub qa_needs_mark: u32,
}

impl Params {
    const_unless_bpf! {
        /// The paper's defaults (uno-sc25 Table 2) for a network.
        pub fn from_net(n: &NetConfig) -> Self {
            let k = n.intra_bdp() / 7;
            Self {
                rate_bytes_per_sec: n.rate_bytes_per_sec(),
                mtu: n.mtu,
                ai_bdp_ppm: 1000,
                k_bytes: sat_u32(if k < n.mtu as u64 { n.mtu as u64 } else { k }),
                epoch_ns: n.intra_rtt_ns,
                ecn_ewma_gain_q16: ONE * 65 / 100,
                phantom_md_scale_q16: ONE * 3 / 10,
                queue_delay_tol_q16: ONE * 55 / 1000,
                qa_beta_q16: ONE / 2,
                qa_scale_q16: ONE,
                qa_period_q16: ONE,
                max_md_q16: ONE / 2,
                init_bdp_q16: ONE,
                aimd_phantom: 0,
                qa_vs_current: 0,
                max_wnd_bdp_q16: 0,
                queue_tol_own_rtt: 0,
                host_delay_gain_q16: super::host::DEFAULT_GAIN_Q16,
                fast_increase_epochs: 0,
                qa_when_app_limited: 0,
                unpaced_at_line_rate: 1,
                qa_needs_mark: 1,
            }
        }
    }

    pub fn validate(&self) -> Result<(), ParamError> {
        check("rate_bytes_per_sec", self.rate_bytes_per_sec, 125_000, 400_000_000_000)?;
        check("mtu", self.mtu as u64, 256, 65_535)?;
        check("ai_bdp_ppm", self.ai_bdp_ppm as u64, 1, 1_000_000)?;
        check("k_bytes", self.k_bytes as u64, 1, 1 << 30)?;
        check("epoch_ns", self.epoch_ns as u64, 1_000, 1_000_000_000)?;
        check("ecn_ewma_gain_q16", self.ecn_ewma_gain_q16 as u64, 1, ONE as u64)?;
        check("phantom_md_scale_q16", self.phantom_md_scale_q16 as u64, 0, ONE as u64)?;
        check("queue_delay_tol_q16", self.queue_delay_tol_q16 as u64, 0, 4 * ONE as u64)?;
        check("qa_beta_q16", self.qa_beta_q16 as u64, 0, ONE as u64)?;
        check("qa_scale_q16", self.qa_scale_q16 as u64, ONE as u64 / 8, 2 * ONE as u64)?;
        check("qa_period_q16", self.qa_period_q16 as u64, ONE as u64 / 4, 16 * ONE as u64)?;
        check("max_md_q16", self.max_md_q16 as u64, 1, ONE as u64 * 15 / 16)?;
        check("init_bdp_q16", self.init_bdp_q16 as u64, 0, 4 * ONE as u64)?;
        check("aimd_phantom", self.aimd_phantom as u64, 0, 1)?;
        check("qa_vs_current", self.qa_vs_current as u64, 0, 1)?;
        check("max_wnd_bdp_q16", self.max_wnd_bdp_q16 as u64, 0, 64 * ONE as u64)?;
        check("queue_tol_own_rtt", self.queue_tol_own_rtt as u64, 0, 1)?;
        check("host_delay_gain_q16", self.host_delay_gain_q16 as u64, 0, ONE as u64)?;
        check("fast_increase_epochs", self.fast_increase_epochs as u64, 0, 1000)?;
        check("qa_when_app_limited", self.qa_when_app_limited as u64, 0, 1)?;
        check("unpaced_at_line_rate", self.unpaced_at_line_rate as u64, 0, 1)?;
        check("qa_needs_mark", self.qa_needs_mark as u64, 0, 1)?;
        Ok(())
    }

    /// `4K / (K + BDP)` in Q16, the DCTCP/Gemini scale factor (§4.1.1).
    pub fn md_factor_q16(&self, bdp_bytes: u64) -> u32 {
        let k = self.k_bytes as u64;
        ratio_q16(4 * k, k.saturating_add(bdp_bytes))
    }
}

/// Per-flow UnoCC state (fits `ICSK_CA_PRIV_SIZE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uno {
    w: Window,
    base_rtt_ns: u32,
    last_rtt_ns: u32,
    /// α in bytes per RTT, Q16 (cached: changes only with the base RTT).
    ai_per_rtt_q16: u64,
    /// The host delay (the BDP, the physical-queue test; module doc).
    host: HostDelay,
    /// The ACK clock of unmarked rounds (QuickAdapt's period; module doc).
    ack_clock: AckClock,
    /// E: EWMA of the per-epoch marked fraction, Q16 in 16 bits (1.0 is
    /// kept as 65535/65536: 2 bytes for the loss holdoff's high word).
    ecn_ewma_q16: u16,
    /// MD_scale, Q16: 1.0 after physical-queue congestion,
    /// `phantom_md_scale_q16` (0.3) after a phantom-only congested epoch.
    /// (Kept as `ONE − MD_scale` in 16 bits: 1.0 and 0.3 exact, 0 read as
    /// 2⁻¹⁶; [`Self::md_scale_q16`].)
    md_scale_gap_q16: u16,
    epoch_acked: u32,
    epoch_marked: u32,
    /// `T_epoch`; 0 until the first ACK.
    epoch_end_ns: u64,
    /// End of the current QuickAdapt measurement; 0 = not started.
    qa_end_ns: u64,
    qa_acked: u32,
    /// Window when the QA period began: what the sender could have had in
    /// flight during the period.
    qa_cwnd: u32,
    /// No QA and no MD before this time (one RTT after a QA).
    holdoff_until_ns: u64,
    /// No second loss reaction before this time (one RTT after a loss cut),
    /// µs since boot in 48 bits (low and high words; 0: none): 8.9 years,
    /// where 32 bits wrapped at 71 minutes and read a 36-minute-old holdoff
    /// as pending again.
    loss_holdoff_until_us: u32,
    loss_holdoff_until_us_hi: u16,
    /// Unmarked epochs in a row (fast increase, `fast_increase_epochs`).
    good_epochs: u16,
    /// The window from which the flow is not paced (`unpaced_at_line_rate`:
    /// the line rate × the base RTT); 0: always paced.
    unpaced_from_cwnd: u32,
}
assert_fits_ca_priv!(Uno);

impl Uno {
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn refresh_flow_constants(&mut self, p: &Params) {
        let bdp = self.pipe_bdp(p);
        // α = ppm × BDP, in Q16 bytes; × the unmarked epochs in a row once
        // fast increase is on and the run is long enough.
        let fast = p.fast_increase_epochs != 0 && self.good_epochs as u32 >= p.fast_increase_epochs;
        let times = if fast { self.good_epochs as u64 } else { 1 };
        self.ai_per_rtt_q16 = mul_sat(mul_div(bdp << SHIFT, p.ai_bdp_ppm as u64, 1_000_000), times);
        self.unpaced_from_cwnd = if p.unpaced_at_line_rate != 0 && self.base_rtt_ns != 0 {
            sat_u32(core::cmp::max(bdp_bytes(p.rate_bytes_per_sec, self.base_rtt_ns), 1))
        } else {
            0
        };
    }

    /// Fast increase: a mark, a congested epoch, QuickAdapt, a loss or an
    /// RTO start the count of unmarked epochs again.
    /// (α carries the multiplier since the last refresh, so dividing by it
    /// gives the base α back: cheaper on the ACK path, and in BPF, than a
    /// refresh.)
    #[inline]
    fn end_fast_increase(&mut self, p: &Params) {
        let n = self.good_epochs as u32;
        if p.fast_increase_epochs != 0 && n >= p.fast_increase_epochs {
            self.ai_per_rtt_q16 /= core::cmp::max(n, 1) as u64;
        }
        self.good_epochs = 0;
    }

    /// The flow's BDP: line rate × the pipe RTT (base RTT + host delay; the
    /// base RTT alone where no host delay is measured, as in the paper).
    #[inline]
    fn pipe_bdp(&self, p: &Params) -> u64 {
        let pipe = self.base_rtt(p).saturating_add(self.host.ns());
        bdp_bytes(p.rate_bytes_per_sec, pipe)
    }

    /// `4K/(K+BDP)` for this flow, Q16 (once per congested epoch or loss).
    fn md_factor_q16(&self, p: &Params) -> u32 {
        p.md_factor_q16(self.pipe_bdp(p))
    }

    /// Largest window in bytes (`max_wnd_bdp` × BDP; none by default).
    #[inline(always)]
    fn max_cwnd(&self, p: &Params) -> u32 {
        if p.max_wnd_bdp_q16 == 0 {
            super::MAX_CWND_BYTES
        } else {
            sat_u32(core::cmp::max(mul_q16(self.pipe_bdp(p), p.max_wnd_bdp_q16), 2 * p.mtu as u64))
        }
    }

    /// One RTT sample (the last one, and the host-delay estimate and the
    /// ACK clock with the smoothed RTT, read above the base RTT: a marked
    /// ACK discards its round, module doc).
    #[inline(always)]
    fn rtt_sample(&mut self, p: &Params, s: &AckSample) {
        self.last_rtt_ns = s.rtt_ns;
        if self.host.sample_above(s.rtt_ns, self.base_rtt_ns, p.host_delay_gain_q16) {
            self.ack_clock.round_end(s.srtt_ns, self.base_rtt_ns, self.host.ns(), p.host_delay_gain_q16);
        }
    }

    /// The base RTT, or until the first RTT sample the intra-DC RTT (the
    /// epoch period). The minimum itself is seeded by the first real sample,
    /// never by this guess: an inter-DC flow without a handshake RTT would
    /// otherwise keep an intra-DC base RTT for its whole life.
    #[inline]
    fn base_rtt(&self, p: &Params) -> u32 {
        if self.base_rtt_ns != 0 {
            self.base_rtt_ns
        } else {
            p.epoch_ns
        }
    }

    /// Is the RTT close enough to the pipe RTT that no physical queue exists?
    /// The RTT without a switch queue is the pipe RTT (base RTT + the host
    /// delay learned in unmarked rounds; the base RTT alone where none is
    /// measured, as in the paper): the test measures the port, not the host.
    /// (The tolerance is one queueing delay for every flow, a fraction of the
    /// intra-DC RTT, unless `queue_tol_own_rtt` asks for the reference
    /// code's fraction of the flow's own base RTT.)
    fn no_physical_queue(&self, p: &Params) -> bool {
        let base = self.base_rtt(p) as u64;
        let scale = if p.queue_tol_own_rtt != 0 { base } else { p.epoch_ns as u64 };
        let tol = core::cmp::max(mul_q16(scale, p.queue_delay_tol_q16), 1_000);
        let pipe = base.saturating_add(self.host.ns() as u64);
        (self.last_rtt_ns as u64) <= pipe.saturating_add(tol)
    }

    /// ONEPOCH: called when an epoch ends.
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn on_epoch(&mut self, p: &Params, now: u64) {
        let frac = ratio_q16(self.epoch_marked as u64, core::cmp::max(self.epoch_acked, 1) as u64);
        let frac = core::cmp::min(frac, ONE);
        let prev = self.ecn_ewma_q16 as u32; // E after the previous epoch
        let e = super::fixed::ewma_q16(prev, frac, p.ecn_ewma_gain_q16);
        // (e ≤ ONE, an average of values ≤ ONE; ONE is kept as ONE − 1,
        // without a branch: BPF has no conditional move)
        self.ecn_ewma_q16 = e.wrapping_sub(e >> SHIFT) as u16;
        let e = self.ecn_ewma_q16 as u32;
        let draining =
            p.aimd_phantom != 0 && prev != 0 && e <= ONE * 9 / 10 && e < prev;
        if self.epoch_marked > 0 && draining {
            // aimd_phantom: the marks are falling, the queue drains: one AI
            // step for the epoch's bytes instead of a cut.
            self.w.ai(self.ai_per_rtt_q16, self.epoch_acked, self.max_cwnd(p));
        } else if self.epoch_marked > 0 && now >= self.holdoff_until_ns {
            if self.no_physical_queue(p) {
                // Congestion in phantom queues only: gentle reduction.
                self.set_md_scale(p.phantom_md_scale_q16);
            } else {
                self.set_md_scale(ONE);
            }
            let md_ecn = mul_q16(e as u64, self.md_factor_q16(p));
            let md = sat_u32(mul_q16(md_ecn, self.md_scale_q16()));
            self.w.md(core::cmp::min(md, p.max_md_q16), p.mtu);
            self.w.exit_slow_start();
        }
        if self.epoch_marked == 0 && p.fast_increase_epochs != 0 {
            self.good_epochs = self.good_epochs.saturating_add(1);
            self.refresh_flow_constants(p);
        }
        self.epoch_acked = 0;
        self.epoch_marked = 0;
    }

    /// ONQA: called when a QA measurement period ends.
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    fn on_qa(&mut self, p: &Params, now: u64, app_limited: bool) {
        // Compare with the window the period started with: an increase made
        // during the period (even by this very ACK) could not yet be used.
        let cwnd = if p.qa_vs_current != 0 { self.w.bytes() } else { core::cmp::min(self.w.bytes(), self.qa_cwnd) } as u64;
        // (Has the fabric marked lately? In an ECN fabric extreme congestion
        // marks first; a host's stall delays the ACK clock without a mark.)
        let marked_lately = (self.epoch_marked != 0) | (self.ecn_ewma_q16 != 0);
        if now >= self.holdoff_until_ns
            && (!app_limited || p.qa_when_app_limited != 0)
            && (p.qa_needs_mark == 0 || marked_lately)
            && (self.qa_acked as u64).saturating_add(p.mtu as u64) < mul_q16(cwnd, p.qa_beta_q16)
        {
            self.w.prior_cwnd = self.w.bytes();
            self.w.set(mul_q16(self.qa_acked as u64, p.qa_scale_q16), p.mtu);
            self.end_fast_increase(p);
            self.w.exit_slow_start();
            // Skip one RTT of QA and MD: the packets still in flight were sent
            // at the old rate and will report congestion that QA already fixed.
            let rtt = core::cmp::max(self.last_rtt_ns, self.base_rtt(p)) as u64;
            self.holdoff_until_ns = now.saturating_add(rtt);
        }
        self.qa_acked = 0;
        self.qa_cwnd = self.w.bytes();
        self.qa_end_ns = now.saturating_add(self.qa_period(p));
        // The host delay moves the BDP: α follows once per period.
        self.refresh_flow_constants(p);
    }

    /// QuickAdapt's period: what a window takes to come back unqueued (the
    /// base RTT + the ACK clock, which is never below the host delay: module
    /// doc) × `qa_period`.
    fn qa_period(&self, p: &Params) -> u64 {
        let pipe = (self.base_rtt(p) as u64).saturating_add(self.ack_clock.ns() as u64);
        core::cmp::max(mul_q16(pipe, p.qa_period_q16), 1)
    }

    /// The host delay estimate in ns (module doc).
    pub fn host_delay_ns(&self) -> u32 {
        self.host.ns()
    }

    /// The complete ACK processing; [`CongestionControl::on_ack`] takes a
    /// shortcut for the common case and comes here for everything else.
    #[cfg_attr(not(xdcc_bpf), inline(never))]
    #[cfg_attr(xdcc_bpf, inline(always))]
    pub fn on_ack_full(&mut self, p: &Params, s: &AckSample) {
        let now = s.now_ns;
        if s.rtt_ns != 0 {
            self.rtt_sample(p, s);
            if update_min_rtt(&mut self.base_rtt_ns, s.rtt_ns) {
                self.refresh_flow_constants(p);
            }
        }
        let marked = core::cmp::min(s.marked_bytes, s.acked_bytes);
        if marked > 0 {
            self.end_fast_increase(p);
            // A round with a mark may hold a switch queue: not host delay.
            self.host.restart_round();
        }

        // ONACK: additive increase on the unmarked bytes (slow start only
        // after an RTO).
        if self.w.in_slow_start() {
            if marked > 0 {
                self.w.exit_slow_start();
            } else {
                self.w.slow_start(s.acked_bytes, self.max_cwnd(p));
            }
        } else if marked < s.acked_bytes && !s.app_limited {
            self.w.ai(self.ai_per_rtt_q16, s.acked_bytes - marked, self.max_cwnd(p));
        }

        // ONEPOCH.
        self.epoch_acked = self.epoch_acked.saturating_add(s.acked_bytes);
        self.epoch_marked = self.epoch_marked.saturating_add(marked);
        if self.epoch_end_ns == 0 {
            self.epoch_end_ns = core::cmp::max(now, 1);
        } else if s.send_time_ns >= self.epoch_end_ns {
            self.on_epoch(p, now);
            let next = self.epoch_end_ns.saturating_add(p.epoch_ns as u64);
            // After idle or a stall the schedule may lag far behind: restart it
            // at this packet instead of ending one epoch per ACK.
            self.epoch_end_ns =
                if next > s.send_time_ns { next } else { s.send_time_ns.saturating_add(p.epoch_ns as u64) };
        }

        // ONQA.
        self.qa_acked = self.qa_acked.saturating_add(s.acked_bytes);
        if self.qa_end_ns == 0 {
            self.qa_end_ns = now.saturating_add(self.qa_period(p));
            self.qa_acked = 0;
            self.qa_cwnd = self.w.bytes();
        } else if now >= self.qa_end_ns {
            self.on_qa(p, now, s.app_limited);
        }
    }

    /// Current E (EWMA of the marked fraction), Q16. For stats.
    pub fn ecn_ewma_q16(&self) -> u32 {
        self.ecn_ewma_q16 as u32
    }
    /// Sets MD_scale (Q16, ≤ ONE): its gap to 1.0 in 16 bits, a gap of ONE
    /// (MD_scale 0) kept as ONE − 1 without a branch (BPF has no
    /// conditional move).
    #[inline(always)]
    fn set_md_scale(&mut self, scale_q16: u32) {
        let gap = ONE.saturating_sub(scale_q16);
        self.md_scale_gap_q16 = gap.wrapping_sub(gap >> SHIFT) as u16;
    }
    /// Current MD_scale, Q16.
    #[inline(always)]
    pub fn md_scale_q16(&self) -> u32 {
        ONE - self.md_scale_gap_q16 as u32
    }
    /// The flow's base RTT estimate in ns (0 before the first RTT sample).
    pub fn base_rtt_ns(&self) -> u32 {
        self.base_rtt_ns
    }
}

impl CongestionControl for Uno {
    type Params = Params;
    const NAME: &'static str = "uno";

    fn new(p: &Params, init: &FlowInit) -> Self {
        let base = if init.rtt_hint_ns != 0 { init.rtt_hint_ns } else { p.epoch_ns };
        // Window from the handshake RTT or, without one, the intra-DC RTT.
        let bdp = bdp_bytes(p.rate_bytes_per_sec, base);
        let cwnd = core::cmp::max(mul_q16(bdp, p.init_bdp_q16), 2 * core::cmp::max(init.mss, 1) as u64);
        let mut s = Self {
            w: Window::new(sat_u32(cwnd), 0),
            base_rtt_ns: init.rtt_hint_ns,
            last_rtt_ns: init.rtt_hint_ns,
            ai_per_rtt_q16: 0,
            host: HostDelay::new(),
            ack_clock: AckClock::new(),
            ecn_ewma_q16: 0,
            md_scale_gap_q16: 0,
            epoch_acked: 0,
            epoch_marked: 0,
            epoch_end_ns: 0,
            qa_end_ns: 0,
            qa_acked: 0,
            qa_cwnd: 0,
            holdoff_until_ns: 0,
            loss_holdoff_until_us: 0,
            loss_holdoff_until_us_hi: 0,
            good_epochs: 0,
            unpaced_from_cwnd: 0,
        };
        s.refresh_flow_constants(p);
        s
    }

    fn on_ack(&mut self, p: &Params, s: &AckSample) {
        // Fast path, the same logic as `on_ack_full` restricted to the common
        // case: an unmarked, cwnd-limited ACK with a valid RTT that does not
        // lower the base RTT, outside slow start, ending neither the epoch nor
        // the QA period (both comparisons are also true before those start:
        // their ends are then 0).
        let slow = (s.marked_bytes != 0) | s.app_limited | (s.rtt_ns == 0) | (s.rtt_ns < self.base_rtt_ns) | (self.base_rtt_ns == 0);
        if slow || self.w.in_slow_start() || s.send_time_ns >= self.epoch_end_ns || s.now_ns >= self.qa_end_ns {
            #[cfg(xdcc_bpf)]
            {
                // The flow's state and the params are the first fields of the private
                // area and of the configuration, the sample a whole `AckSample` (entry.rs
                // checks the offsets and the size); nothing is retained after the call.
                #[allow(unsafe_code)]
                // SAFETY: valid pointers to the memory the global function's types declare (above).
                unsafe { bpf_global::xdcc_uno_ack_full(self, p, s) };
                return;
            }
            #[cfg(not(xdcc_bpf))]
            return self.on_ack_full(p, s);
        }
        self.rtt_sample(p, s);
        self.w.ai(self.ai_per_rtt_q16, s.acked_bytes, self.max_cwnd(p));
        self.epoch_acked = self.epoch_acked.saturating_add(s.acked_bytes);
        self.qa_acked = self.qa_acked.saturating_add(s.acked_bytes);
    }

    fn on_event(&mut self, p: &Params, e: Event, now: u64) {
        match e {
            Event::Loss { .. } => {
                let now_us = now / 1000;
                let until = (self.loss_holdoff_until_us_hi as u64) << 32 | self.loss_holdoff_until_us as u64;
                self.end_fast_increase(p);
                if now_us >= until {
                    self.w.md(core::cmp::min(self.md_factor_q16(p), p.max_md_q16), p.mtu);
                    self.w.exit_slow_start();
                    let rtt_us = (core::cmp::max(self.last_rtt_ns, self.base_rtt(p)) / 1000).max(1);
                    let until = now_us.saturating_add(rtt_us as u64);
                    self.loss_holdoff_until_us = until as u32;
                    self.loss_holdoff_until_us_hi = (until >> 32) as u16;
                }
            }
            Event::Rto => {
                self.end_fast_increase(p);
                self.w.rto(p.mtu);
                self.epoch_end_ns = 0;
                self.qa_end_ns = 0;
                self.host.restart_round();
            }
            Event::IdleRestart => {
                self.epoch_end_ns = 0;
                self.qa_end_ns = 0;
                self.host.restart_round();
                self.epoch_acked = 0;
                self.epoch_marked = 0;
            }
        }
    }

    fn cwnd(&self) -> u32 {
        self.w.bytes()
    }
    /// The window over the base RTT (module doc: "Pacing"), or none at all
    /// from the line rate up with `unpaced_at_line_rate`; before the first
    /// RTT sample, the adapter's window pacing.
    fn pacing_rate(&self) -> Option<u64> {
        if self.base_rtt_ns == 0 {
            return None;
        }
        if self.unpaced_from_cwnd != 0 && self.w.bytes() >= self.unpaced_from_cwnd {
            return Some(super::UNPACED);
        }
        Some(mul_div(self.w.bytes() as u64, 1_000_000_000, self.base_rtt_ns as u64))
    }
    fn rate_limited(&self) -> bool {
        false
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
    const INFO_FIELDS: [&'static str; 4] = ["base_rtt_us", "host_delay_us", "ecn_ewma_q16", "md_scale_q16"];
    fn info(&self) -> [u32; 4] {
        [self.base_rtt_ns / 1000, self.host.ns() / 1000, self.ecn_ewma_q16 as u32, self.md_scale_q16()]
    }
}

/// BPF backend only: the complete ACK processing ([`Uno::on_ack_full`]) is a
/// *global* BPF function, which the verifier checks once on its own (as
/// `fixed::bpf_global`'s arithmetic), so that it is not re-explored for every
/// path of the fast path and the adapter around it: inlined, bpf_uno's ACK
/// handler took 230,241 verified instructions, as a function 8,885
/// (evidence: testbed/notes/2026-11-27-datacenter-rates.md#4i-quickadapt-needs-a-mark-and-unoccs-slow-path-as-a-global-bpf-function). `kmods/bpf/shim.c`
/// defines it (C, so that it carries BTF) and calls back into
/// `xdcc_uno_ack_full_body` in `kmods/bpf/entry.rs`.
#[cfg(xdcc_bpf)]
mod bpf_global {
    extern "C" {
        #[allow(improper_ctypes)]
        pub fn xdcc_uno_ack_full(state: *mut super::Uno, p: *const super::Params, s: *const super::AckSample) -> i32;
    }
}

tunables!(Params {
    rate_bytes_per_sec: u64, mtu: u32, ai_bdp_ppm: u32, k_bytes: u32, epoch_ns: u32,
    ecn_ewma_gain_q16: u32, phantom_md_scale_q16: u32, queue_delay_tol_q16: u32,
    qa_beta_q16: u32, qa_scale_q16: u32, qa_period_q16: u32, max_md_q16: u32, init_bdp_q16: u32,
    aimd_phantom: u32, qa_vs_current: u32, max_wnd_bdp_q16: u32,
    queue_tol_own_rtt: u32, host_delay_gain_q16: u32, fast_increase_epochs: u32, qa_when_app_limited: u32,
    unpaced_at_line_rate: u32, qa_needs_mark: u32,
});
