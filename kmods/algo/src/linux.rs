//! The Linux adapter: how `tcp_congestion_ops` callbacks drive an algorithm.
//!
//! This is the one place that knows what the kernel's callbacks mean. It is
//! plain, safe Rust over plain values, shared by both backends:
//! - the Rust-for-Linux modules (`kmods/glue.rs`) read `tcp_sock` fields into
//!   a [`Sock`] / [`RateSample`], call these functions and write the
//!   [`Update`] back;
//! - the BPF struct_ops programs (`kmods/bpf/`) do the same from BPF.
//! Neither backend contains congestion-control logic of its own.
//!
//! The mapping, checked against Linux 6.12 `tcp_input.c`/`tcp_output.c` and
//! the in-tree `tcp_dctcp.c` and `tcp_bbr.c`:
//! - **ACKs** (`cong_control`, called for every ACK that acknowledges data):
//!   the rate sample becomes an [`AckSample`]. ECE is taken from the `flag`
//!   argument (`FLAG_ECE`) of *this* ACK, never from state kept between
//!   callbacks, so a mark seen on an ACK with nothing in flight (which gets
//!   `in_ack_event` but no `cong_control`) cannot leak into the next ACK.
//! - **Window growth only when the window limits the sender**
//!   (`tcp_is_cwnd_limited()`, as Reno, CUBIC and DCTCP): an application- or
//!   receiver-limited flow keeps its window. Algorithms that pace (OSCAR) are
//!   limited by their rate, not their window, and are left alone.
//! - **Such a round is no congestion signal either**: its sample reaches
//!   the algorithm as application-limited (Linux's rate sample says so only
//!   for the application, not for the receive window), so a round the
//!   receive window held back — every round of an inter-DC flow's start
//!   behind Linux's 64 KB initial receive window — does not look like a
//!   collapse of the ACK rate to UnoCC's and SMaRTT's QuickAdapt.
//! - **Never below two packets** on the kernel side: a one-packet window
//!   waits for the receiver's delayed-ACK timer every round.
//! - **Loss**: fast recovery (`set_state(TCP_CA_Recovery)`) is one
//!   [`Event::Loss`] on the *transition* into recovery. An RTO is one
//!   [`Event::Rto`] on `CA_EVENT_LOSS`, which `tcp_enter_loss()` raises only
//!   when it reduces `ssthresh`, i.e. once per loss episode: backoff RTOs of
//!   the same episode (and `tcp_simple_retransmit()` after an MTU probe
//!   failure) do not halve the window again, so `undo` can still restore it.
//! - **Idle restart**: `CA_EVENT_TX_START` arrives on every send that starts
//!   with nothing in flight, which flows that drain every round (RPCs,
//!   incast responses) do every RTT. Only a gap since the last send longer
//!   than the RTO is an idle restart (RFC 5681 §4.1; Linux's own
//!   `tcp_cwnd_restart()` rule, which the kernel skips for `cong_control`
//!   CCs).
//! - **Pacing**: the algorithm's own rate if it has one, else
//!   `ratio × cwnd × mss / srtt` with Linux's ratios: 200 % in slow start
//!   (`tcp_pacing_ss_ratio`) and a congestion-avoidance ratio (Linux: 120 %,
//!   `tcp_pacing_ca_ratio`; xdcc's default 100 %, see [`Pacing`]).
//! - **DCTCP-style CE echo** on the receiver ([`CeEcho`]): every change of
//!   the CE state of arriving data forces an immediate ACK, first flushing a
//!   delayed ACK for the old state, so ECE marks exactly the ACKs that cover
//!   CE-marked data (what the algorithms' per-ACK marked bytes assume).
//! - **Without ECN** (a peer with `net.ipv4.tcp_ecn=0`, or a middlebox that
//!   clears ECT so the handshake fails): no ECE ever arrives. DCTCP falls
//!   back to Reno; xdcc keeps the algorithm running on its other signals —
//!   losses and QuickAdapt for UnoCC; losses and its WAN delay signal
//!   (RTT above base + T) for Gemini; losses and delay-armed QuickAdapt for
//!   SMaRTT; delay for OSCAR (tests/linux.rs, `without_ecn_...`) — and
//!   reports `ecn_ok = 0` in its state so the operator can see it. The
//!   modules also clear the ECT that the stack sets on a NEEDS_ECN socket
//!   whether or not ECN was negotiated (`kmods/glue.rs`,
//!   `stop_ect_without_ecn`), so RED ports drop instead of marking CE that
//!   nobody echoes.

use super::fixed::{mul_div, mul_sat, sat_u32};
use super::{AckSample, CongestionControl, Event, FlowInit, NetConfig, ParamError, Tunables, ICSK_CA_PRIV_SIZE};

/// Linux's `enum tcp_ca_state` values used here.
pub const TCP_CA_OPEN: u8 = 0;
pub const TCP_CA_RECOVERY: u8 = 3;
pub const TCP_CA_LOSS: u8 = 4;

/// Linux's `enum tcp_ca_event` values used here.
pub const CA_EVENT_TX_START: u32 = 0;
pub const CA_EVENT_CWND_RESTART: u32 = 1;
pub const CA_EVENT_COMPLETE_CWR: u32 = 2;
pub const CA_EVENT_LOSS: u32 = 3;
pub const CA_EVENT_ECN_NO_CE: u32 = 4;
pub const CA_EVENT_ECN_IS_CE: u32 = 5;

/// `FLAG_ECE` of `tcp_input.c` in the `flag` argument of `cong_control`
/// (the same value since Linux 2.6; the BPF selftests rely on it too).
pub const FLAG_ECE: i32 = 0x40;

/// The socket fields a callback needs, read by the backend.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sock {
    /// `tp->tcp_mstamp`: the time of the packet being processed, µs.
    pub now_us: u64,
    /// `tp->mss_cache` (0: unknown, 1460 is used).
    pub mss: u32,
    /// `tp->srtt_us`: smoothed RTT in µs << 3 (0: no sample yet).
    pub srtt_us8: u32,
    /// `tp->snd_cwnd_clamp`, packets.
    pub snd_cwnd_clamp: u32,
    /// `tp->delivered`, packets.
    pub delivered: u32,
    /// `tcp_packets_in_flight(tp)`, packets.
    pub packets_in_flight: u32,
    /// `icsk->icsk_ca_state` (in `set_state`: the state being left).
    pub ca_state: u8,
    /// `tcp_is_cwnd_limited(sk)`.
    pub cwnd_limited: u8,
    /// `tp->ecn_flags & TCP_ECN_OK`: ECN was negotiated.
    pub ecn_ok: u8,
    pub _pad: u8,
    /// `tcp_jiffies32 − tp->lsndtime`: time since the last send, jiffies.
    pub idle_jiffies: u32,
    /// `icsk->icsk_rto`, jiffies.
    pub rto_jiffies: u32,
    /// `tp->snd_cwnd`, packets (what callbacks before `init` leave as is).
    pub snd_cwnd: u32,
    pub _pad2: u32,
}

/// The kernel's `struct rate_sample` fields the adapter uses.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    /// `tp->first_tx_mstamp` after the sample: send time of the most
    /// recently acknowledged packet, µs.
    pub send_time_us: u64,
    /// `rs->rtt_us` (negative or 0: no sample).
    pub rtt_us: i64,
    /// `rs->acked_sacked`, packets.
    pub acked_sacked: u32,
    /// `rs->prior_delivered` (0: this ACK delivered no new packet).
    pub prior_delivered: u32,
    /// `rs->is_app_limited`.
    pub is_app_limited: u8,
    pub _pad: [u8; 3],
    /// The `flag` argument of `cong_control` (`FLAG_*` of `tcp_input.c`).
    pub flag: i32,
}

/// What the backend writes back into the socket.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Update {
    /// New `snd_cwnd`, packets (≥ 2, ≤ the clamp); 0 = leave it (only
    /// before `init`, see [`Flow`]).
    pub cwnd_pkts: u32,
    /// New `snd_ssthresh`, packets; 0 = leave it.
    pub ssthresh_pkts: u32,
    /// New `sk_pacing_rate`, bytes/s; 0 = leave it.
    pub pacing_rate: u64,
}

/// Window pacing of algorithms without their own rate, in percent of
/// `cwnd × mss / srtt`. A module-wide tunable pair.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacing {
    /// In slow start (window below the algorithm's ssthresh): Linux's
    /// `tcp_pacing_ss_ratio`, 200.
    pub ss_pct: u32,
    /// Otherwise. Linux's `tcp_pacing_ca_ratio` is 120; xdcc's default is
    /// 100 because the simulator showed UnoCC's and Gemini's flows reach
    /// fairness at 100 % and not at 120 % (a flow paced above its window's
    /// rate sends its window as a burst into the queue every round) — a
    /// phase effect of its deterministic host delay, it turned out; on a
    /// real host DCTCP and Gemini are fairer unpaced (evidence:
    /// testbed/notes/2026-11-29-realspeed-uno-cpu.md#which-is-wrong-the-models-case-for-window-pacing-is-a-phase-effect).
    pub ca_pct: u32,
}

impl Pacing {
    pub const DEFAULT: Pacing = Pacing { ss_pct: 200, ca_pct: 100 };
    /// No window pacing: no rate is set, so TCP's internal pacing never
    /// waits (DCTCP's and Gemini's default: on a host, paced at their
    /// window's rate, flows of the same sender got 2.4x each other's RTT;
    /// testbed/notes/2026-11-29-realspeed-uno-cpu.md).
    pub const OFF: Pacing = Pacing { ss_pct: 0, ca_pct: 0 };
    /// Largest accepted ratio, percent.
    pub const MAX_PCT: u32 = 1000;
    /// Their knob names (sysctl files, `xdcc tunable`, config keys):
    /// congestion avoidance, then slow start.
    pub const KNOBS: [&'static str; 2] = ["window_pacing_pct", "window_pacing_ss_pct"];
}

/// Size of a BPF CC's configuration map value (`struct xdcc_config` in
/// kmods/bpf/shim.c, which kmods/bpf/build.sh sizes from this constant):
/// every CC's [`Config`] fits it (checked below).
pub const CONFIG_BYTES: usize = 256;

/// The configuration of a BPF CC (its config map's value, written by
/// `xdcc tunable set`): the algorithm's tunables, the window pacing ratios
/// and the network they were derived from (only userspace reads `net`).
/// The kernel modules keep the same three as sysctls.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config<P> {
    pub params: P,
    pub pacing: Pacing,
    pub net: NetConfig,
}

impl<P: Tunables> Config<P> {
    /// The defaults for a network.
    pub fn for_net(net: &NetConfig) -> Self {
        Config { params: P::from_net(net), pacing: P::WINDOW_PACING, net: *net }
    }

    /// Every knob of a CC in the Linux backends, in the order of its sysctl
    /// files: the algorithm's tunables, the `net_*` network description,
    /// the pacing ratios.
    pub fn knob_names() -> impl Iterator<Item = &'static str> {
        P::TUNABLES.iter().chain(NetConfig::KNOBS.iter()).chain(Pacing::KNOBS.iter()).copied()
    }

    /// The value of knob `name` (None: not a knob of this CC).
    pub fn get(&self, name: &str) -> Option<u64> {
        if let Some(i) = NetConfig::KNOBS.iter().position(|k| *k == name) {
            return Some(self.net.knobs()[i]);
        }
        match name {
            n if n == Pacing::KNOBS[0] => Some(self.pacing.ca_pct as u64),
            n if n == Pacing::KNOBS[1] => Some(self.pacing.ss_pct as u64),
            n => self.params.get(n),
        }
    }

    /// This configuration with knob `name` set to `value`, by the rules every
    /// backend applies (module sysctls, BPF map, CLI checks): a tunable is
    /// validated with the whole set; a `net_*` value re-derives every
    /// tunable from the papers' rules for the new network; a pacing ratio
    /// is 0..=`Pacing::MAX_PCT`. On error, nothing is returned to write.
    pub fn set(&self, name: &str, value: u64) -> Result<Self, ParamError> {
        let mut c = *self;
        if let Some(i) = NetConfig::KNOBS.iter().position(|k| *k == name) {
            let mut knobs = self.net.knobs();
            knobs[i] = value;
            let net = NetConfig::from_knobs(knobs);
            net.validate()?;
            let params = P::from_net(&net);
            params.validate()?;
            c.net = net;
            c.params = params;
        } else if name == Pacing::KNOBS[0] {
            c.pacing.ca_pct = validate_pacing_pct(Pacing::KNOBS[0], value)?;
        } else if name == Pacing::KNOBS[1] {
            c.pacing.ss_pct = validate_pacing_pct(Pacing::KNOBS[1], value)?;
        } else {
            c.params.set(name, value)?;
        }
        Ok(c)
    }

    /// The `#[repr(C)]` layout, padding zeroed. False if `out` is short.
    pub fn write_bytes(&self, out: &mut [u8]) -> bool {
        if out.len() < core::mem::size_of::<Self>() {
            return false;
        }
        out[..core::mem::size_of::<Self>()].fill(0);
        let pacing = core::mem::offset_of!(Self, pacing);
        let net = core::mem::offset_of!(Self, net);
        put(out, pacing + core::mem::offset_of!(Pacing, ss_pct), &self.pacing.ss_pct.to_ne_bytes());
        put(out, pacing + core::mem::offset_of!(Pacing, ca_pct), &self.pacing.ca_pct.to_ne_bytes());
        put(out, net + core::mem::offset_of!(NetConfig, link_rate_bps), &self.net.link_rate_bps.to_ne_bytes());
        put(out, net + core::mem::offset_of!(NetConfig, intra_rtt_ns), &self.net.intra_rtt_ns.to_ne_bytes());
        put(out, net + core::mem::offset_of!(NetConfig, inter_rtt_ns), &self.net.inter_rtt_ns.to_ne_bytes());
        put(out, net + core::mem::offset_of!(NetConfig, mtu), &self.net.mtu.to_ne_bytes());
        self.params.write_bytes(out)
    }

    /// Decodes `write_bytes`' layout; None if short or if the values do not
    /// pass the same checks as `xdcc tunable set`.
    pub fn read_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < core::mem::size_of::<Self>() {
            return None;
        }
        let pacing = core::mem::offset_of!(Self, pacing);
        let net = core::mem::offset_of!(Self, net);
        let net = NetConfig {
            link_rate_bps: u64::from_ne_bytes(get(b, net + core::mem::offset_of!(NetConfig, link_rate_bps))?),
            intra_rtt_ns: u32::from_ne_bytes(get(b, net + core::mem::offset_of!(NetConfig, intra_rtt_ns))?),
            inter_rtt_ns: u32::from_ne_bytes(get(b, net + core::mem::offset_of!(NetConfig, inter_rtt_ns))?),
            mtu: u32::from_ne_bytes(get(b, net + core::mem::offset_of!(NetConfig, mtu))?),
        };
        let pacing = Pacing {
            ss_pct: u32::from_ne_bytes(get(b, pacing + core::mem::offset_of!(Pacing, ss_pct))?),
            ca_pct: u32::from_ne_bytes(get(b, pacing + core::mem::offset_of!(Pacing, ca_pct))?),
        };
        net.validate().ok()?;
        validate_pacing_pct(Pacing::KNOBS[1], pacing.ss_pct as u64).ok()?;
        validate_pacing_pct(Pacing::KNOBS[0], pacing.ca_pct as u64).ok()?;
        let params = P::read_bytes(b, P::from_net(&net))?;
        params.validate().ok()?;
        Some(Config { params, pacing, net })
    }
}

fn put(out: &mut [u8], at: usize, b: &[u8]) {
    if let Some(d) = out.get_mut(at..at + b.len()) {
        d.copy_from_slice(b);
    }
}

fn get<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at + N)?.try_into().ok()
}

/// Receiver side of the DCTCP-style CE echo: what the backend must do when
/// the CE state of arriving data changes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CeEcho {
    /// If `flush`: a delayed ACK is pending for data of the old CE state;
    /// send it now, acknowledging up to `flush_ack_seq`, with ECE = `flush_ce`.
    pub flush_ack_seq: u32,
    pub flush: bool,
    pub flush_ce: bool,
    /// Force the next ACK to go out immediately (`ICSK_ACK_NOW`).
    pub ack_now: bool,
    /// Set (true) or clear `TCP_ECN_DEMAND_CWR` (ECE on outgoing ACKs).
    pub demand_cwr: bool,
}

/// Per-socket adapter state kept next to the algorithm's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkState {
    /// Receiver: `rcv_nxt` when the CE state last changed.
    prior_rcv_nxt: u32,
    /// Idle restarts (`CA_EVENT_TX_START` after more than an RTO of
    /// silence), saturating at 255: for `get_info` and the tests.
    idle_restarts: u8,
    /// `ECN_OK`: ECN was negotiated (refreshed on every ACK); `LIVE`:
    /// written by `init` (a zeroed area is a flow not yet initialised);
    /// `CE`: receiver, the last data packet carried CE.
    flags: u8,
    /// Number of loss episodes (`CA_EVENT_LOSS`) and fast recoveries seen,
    /// saturating at 255: for `get_info` and the tests.
    rtos: u8,
    recoveries: u8,
}

/// Everything an xdcc CC keeps in the socket's private CC area.
///
/// The stack can call a CC before its `init`: on the active side, the ACK
/// of the SYN goes through `tcp_ack()` → `cong_control` in
/// `tcp_rcv_synsent_state_process()`, and only then does
/// `tcp_finish_connect()` → `tcp_init_transfer()` call `init`. The private
/// area is zeroed when the CC is assigned, so such a call sees an all-zero
/// `Flow` (valid: integers and bools). It must change nothing: a window or
/// pacing rate computed from zeroed state outlives `init` (`init` does not
/// rewrite `sk_pacing_rate`; a 1 byte/s rate set there pushed the socket's
/// EDT stamp minutes ahead after the 10th segment and stalled it). Every
/// callback therefore checks `LinkState`'s `LIVE` flag, which only
/// [`Flow::new`] sets.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow<A> {
    pub algo: A,
    pub link: LinkState,
}

/// Compile-time check that `Flow<A>` fits the kernel's private CC area.
pub const fn fits_ca_priv<A>() -> bool {
    core::mem::size_of::<Flow<A>>() <= ICSK_CA_PRIV_SIZE && core::mem::align_of::<Flow<A>>() <= 8
}

const _: () = assert!(fits_ca_priv::<super::uno::Uno>(), "UnoCC + adapter state exceed ICSK_CA_PRIV_SIZE");
const _: () = assert!(fits_ca_priv::<super::gemini::Gemini>(), "Gemini + adapter state exceed ICSK_CA_PRIV_SIZE");
const _: () = assert!(fits_ca_priv::<super::oscar::Oscar>(), "OSCAR + adapter state exceed ICSK_CA_PRIV_SIZE");
const _: () = assert!(fits_ca_priv::<super::smartt::Smartt>(), "SMaRTT + adapter state exceed ICSK_CA_PRIV_SIZE");
const _: () = assert!(fits_ca_priv::<super::amrt::Amrt>(), "AMRT + adapter state exceed ICSK_CA_PRIV_SIZE");
const _: () = assert!(fits_ca_priv::<super::dctcp::Dctcp>(), "DCTCP + adapter state exceed ICSK_CA_PRIV_SIZE");

const _: () = assert!(core::mem::size_of::<Config<super::uno::Params>>() <= CONFIG_BYTES);
const _: () = assert!(core::mem::size_of::<Config<super::gemini::Params>>() <= CONFIG_BYTES);
const _: () = assert!(core::mem::size_of::<Config<super::oscar::Params>>() <= CONFIG_BYTES);
const _: () = assert!(core::mem::size_of::<Config<super::smartt::Params>>() <= CONFIG_BYTES);
const _: () = assert!(core::mem::size_of::<Config<super::amrt::Params>>() <= CONFIG_BYTES);
const _: () = assert!(core::mem::size_of::<Config<super::dctcp::Params>>() <= CONFIG_BYTES);

const DEFAULT_MSS: u32 = 1460;

#[inline]
fn mss_of(s: &Sock) -> u32 {
    if s.mss == 0 {
        DEFAULT_MSS
    } else {
        s.mss
    }
}

#[inline]
fn ns_of_us(us: u64) -> u64 {
    super::fixed::mul_sat(us, 1000)
}

impl<A: CongestionControl> Flow<A> {
    /// `init`: a new flow. The handshake RTT (`srtt_us`) is the algorithm's
    /// RTT hint when there is one.
    pub fn new(p: &A::Params, s: &Sock) -> Self {
        let init = FlowInit {
            now_ns: ns_of_us(s.now_us),
            mss: mss_of(s),
            rtt_hint_ns: sat_u32(ns_of_us((s.srtt_us8 >> 3) as u64)),
        };
        let flags = LinkState::LIVE | if s.ecn_ok != 0 { LinkState::ECN_OK } else { 0 };
        Flow { algo: A::new(p, &init), link: LinkState { flags, ..LinkState::default() } }
    }

    /// Whether `init` has run (see [`Flow`]: callbacks before it are no-ops).
    pub fn is_live(&self) -> bool {
        self.link.flags & LinkState::LIVE != 0
    }

    /// `cong_control`: one ACK.
    pub fn on_ack(&mut self, p: &A::Params, pacing: &Pacing, s: &Sock, rs: &RateSample) -> Update {
        if !self.is_live() {
            return Update::default();
        }
        let mut sample = ack_sample(s, rs);
        // (Algorithms that set their own rate are limited by it instead.)
        let own_rate = self.algo.rate_limited();
        // A round in which the window did not limit the sender (the receive
        // window did, or the application) says nothing about the network:
        // the algorithm sees it as application-limited, as Linux's rate
        // sample says only for the application.
        if s.cwnd_limited == 0 && !own_rate {
            sample.app_limited = true;
        }
        self.link.set_ecn_ok(s.ecn_ok != 0);
        if sample.acked_bytes != 0 || sample.rtt_ns != 0 {
            let before = self.algo.cwnd();
            self.algo.on_ack(p, &sample);
            if s.cwnd_limited == 0 && !own_rate && self.algo.cwnd() > before {
                self.algo.hold_cwnd(before);
            }
        }
        self.update(pacing, s, false)
    }

    /// `set_state`: `new_state` is being entered; `s.ca_state` is the state
    /// being left. Returns the new window when the algorithm reacted.
    pub fn on_set_state(&mut self, p: &A::Params, pacing: &Pacing, s: &Sock, new_state: u8) -> Option<Update> {
        if !self.is_live() {
            return None;
        }
        if new_state == TCP_CA_RECOVERY && s.ca_state != TCP_CA_RECOVERY {
            self.link.recoveries = self.link.recoveries.saturating_add(1);
            self.algo.on_event(p, Event::Loss { bytes: mss_of(s) }, ns_of_us(s.now_us));
            return Some(self.update(pacing, s, true));
        }
        None
    }

    /// `cwnd_event` on the sender side: returns the new window when the
    /// algorithm reacted. CE events go to [`Flow::on_ce_event`].
    pub fn on_cwnd_event(&mut self, p: &A::Params, pacing: &Pacing, s: &Sock, ev: u32) -> Option<Update> {
        if !self.is_live() {
            return None;
        }
        let now = ns_of_us(s.now_us);
        match ev {
            CA_EVENT_LOSS => {
                self.link.rtos = self.link.rtos.saturating_add(1);
                self.algo.on_event(p, Event::Rto, now);
                // `tcp_enter_loss()` sets the window to in-flight + 1 right
                // after this event; the ssthresh is what we report.
                Some(self.update(pacing, s, true))
            }
            CA_EVENT_TX_START if s.idle_jiffies > s.rto_jiffies => {
                self.link.idle_restarts = self.link.idle_restarts.saturating_add(1);
                self.algo.on_event(p, Event::IdleRestart, now);
                None
            }
            _ => None,
        }
    }

    /// `cwnd_event` with `CA_EVENT_ECN_IS_CE` / `CA_EVENT_ECN_NO_CE` on the
    /// receiver: `rcv_nxt` is `tp->rcv_nxt`, `delayed_ack_pending` whether
    /// `icsk_ack.pending` has `ICSK_ACK_TIMER` set.
    pub fn on_ce_event(&mut self, ev: u32, rcv_nxt: u32, delayed_ack_pending: bool) -> Option<CeEcho> {
        if !self.is_live() {
            return None;
        }
        let ce = match ev {
            CA_EVENT_ECN_IS_CE => 1u8,
            CA_EVENT_ECN_NO_CE => 0u8,
            _ => return None,
        };
        let mut out = CeEcho { demand_cwr: ce != 0, ..CeEcho::default() };
        if self.link.ce_state() != ce {
            if delayed_ack_pending {
                out.flush = true;
                out.flush_ack_seq = self.link.prior_rcv_nxt;
                out.flush_ce = self.link.ce_state() != 0;
            }
            out.ack_now = true;
        }
        self.link.prior_rcv_nxt = rcv_nxt;
        self.link.set_flag(LinkState::CE, ce != 0);
        Some(out)
    }

    /// `ssthresh`: called when the stack enters CWR, Recovery or Loss. The
    /// window is the algorithm's (`cong_control`); report its threshold so
    /// `tcp_in_slow_start()` agrees with it.
    pub fn ssthresh_pkts(&self, s: &Sock) -> u32 {
        if !self.is_live() {
            // Not running yet: Reno's rule on the stack's own window.
            return core::cmp::max(s.snd_cwnd / 2, 2);
        }
        let th = self.algo.ssthresh();
        if th == u32::MAX || th == 0 {
            core::cmp::max(self.cwnd_pkts(s), 2)
        } else {
            core::cmp::max(th / mss_of(s), 2)
        }
    }

    /// `undo_cwnd`: the last loss reaction was spurious.
    pub fn undo_cwnd_pkts(&mut self, p: &A::Params, s: &Sock) -> u32 {
        if !self.is_live() {
            return core::cmp::max(s.snd_cwnd, 2);
        }
        self.algo.undo(p);
        self.cwnd_pkts(s)
    }

    /// The algorithm's window in packets, within [2, clamp].
    pub fn cwnd_pkts(&self, s: &Sock) -> u32 {
        let pkts = core::cmp::max(self.algo.cwnd() / mss_of(s), 2);
        core::cmp::min(pkts, core::cmp::max(s.snd_cwnd_clamp, 2))
    }

    /// Socket-independent adapter state, for `get_info` and tests.
    pub fn link(&self) -> &LinkState {
        &self.link
    }

    /// What `get_info` (modules) and the flow iterator (BPF) report.
    pub fn info(&self) -> CcInfo {
        CcInfo {
            version: CcInfo::VERSION,
            flags: self.link.ecn_ok() as u8
                | (self.link.ce_state() != 0) as u8 * CcInfo::CE_STATE
                | core::cmp::min(self.link.idle_restarts, CcInfo::IDLE_MAX) << CcInfo::IDLE_SHIFT,
            rtos: self.link.rtos,
            recoveries: self.link.recoveries,
            values: self.algo.info(),
        }
    }

    fn update(&self, pacing: &Pacing, s: &Sock, with_ssthresh: bool) -> Update {
        let cwnd_pkts = self.cwnd_pkts(s);
        let pacing_rate = match self.algo.pacing_rate() {
            Some(r) => core::cmp::max(r, 1),
            None if s.srtt_us8 != 0 => {
                let slow_start = self.algo.cwnd() < self.algo.ssthresh();
                let pct = if slow_start { pacing.ss_pct } else { pacing.ca_pct };
                // bytes/s = pct/100 · cwnd · mss / (srtt_us8 / 8 µs)
                let bytes = (cwnd_pkts as u64) * (mss_of(s) as u64); // < 2^64: both < 2^32
                let per_sec = mul_div(bytes, 8_000_000, s.srtt_us8 as u64);
                mul_div(per_sec, pct as u64, 100)
            }
            None => 0,
        };
        Update { cwnd_pkts, ssthresh_pkts: if with_ssthresh { self.ssthresh_pkts(s) } else { 0 }, pacing_rate }
    }
}

/// One flow's CC state as the kernel reports it: the modules' `get_info`
/// (an INET_DIAG attribute, `INET_DIAG_XDCC`) and the BPF CCs' flow
/// iterator both carry these 20 bytes, and `xdcc flows` decodes them with
/// `info_fields`. Native byte order (the reader runs on the same host).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CcInfo {
    /// `CcInfo::VERSION`; a reader refuses other versions.
    pub version: u8,
    /// `ECN_OK`: ECN negotiated; `CE_STATE`: the last data packet received
    /// was CE; bits 2–7: idle restarts, saturating at `IDLE_MAX`.
    pub flags: u8,
    /// Loss episodes (RTOs) and fast recoveries, saturating at 255.
    pub rtos: u8,
    pub recoveries: u8,
    /// The algorithm's `info()`, named by its `INFO_FIELDS`.
    pub values: [u32; 4],
}

/// The INET_DIAG attribute type of `CcInfo` in the modules' `get_info`
/// replies: beyond the kernel's own types (the last is 22 in 6.12), so
/// no reader mistakes it for another CC's structure; `ss` skips it.
pub const INET_DIAG_XDCC: u16 = 0x0878;

impl CcInfo {
    pub const VERSION: u8 = 2;
    pub const BYTES: usize = 20;
    pub const ECN_OK: u8 = 1;
    pub const CE_STATE: u8 = 2;
    pub const IDLE_SHIFT: u8 = 2;
    pub const IDLE_MAX: u8 = 63;

    /// Idle restarts of the flow (saturating at `IDLE_MAX`).
    pub fn idle_restarts(&self) -> u8 {
        self.flags >> Self::IDLE_SHIFT
    }

    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        b[0] = self.version;
        b[1] = self.flags;
        b[2] = self.rtos;
        b[3] = self.recoveries;
        let mut i = 0;
        while i < 4 {
            let v = self.values[i].to_ne_bytes();
            b[4 + 4 * i] = v[0];
            b[5 + 4 * i] = v[1];
            b[6 + 4 * i] = v[2];
            b[7 + 4 * i] = v[3];
            i += 1;
        }
        b
    }

    /// `None` when `b` is short or of another version.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < Self::BYTES || b[0] != Self::VERSION {
            return None;
        }
        let word = |i: usize| u32::from_ne_bytes([b[4 + 4 * i], b[5 + 4 * i], b[6 + 4 * i], b[7 + 4 * i]]);
        Some(CcInfo { version: b[0], flags: b[1], rtos: b[2], recoveries: b[3], values: [word(0), word(1), word(2), word(3)] })
    }
}

/// The names of `CcInfo::values` for the CC registered as `name` (the
/// module's `uno` or the BPF backend's `bpf_uno`, ...).
pub fn info_fields(name: &str) -> Option<[&'static str; 4]> {
    super::cc_spec(name).map(|c| c.info_fields)
}

/// The algorithm's view of one ACK.
pub fn ack_sample(s: &Sock, rs: &RateSample) -> AckSample {
    let mss = mss_of(s) as u64;
    let acked = sat_u32(mul_sat(rs.acked_sacked as u64, mss));
    let inflight_at_send = if rs.prior_delivered == 0 {
        0 // no packet newly delivered: no rate sample, unknown
    } else {
        sat_u32(mul_sat(s.delivered.wrapping_sub(rs.prior_delivered) as u64, mss))
    };
    AckSample {
        now_ns: ns_of_us(s.now_us),
        acked_bytes: acked,
        marked_bytes: if rs.flag & FLAG_ECE != 0 { acked } else { 0 },
        rtt_ns: if rs.rtt_us > 0 { sat_u32(ns_of_us(rs.rtt_us as u64)) } else { 0 },
        srtt_ns: sat_u32(ns_of_us((s.srtt_us8 >> 3) as u64)),
        send_time_ns: ns_of_us(rs.send_time_us),
        inflight_at_send,
        inflight: sat_u32(mul_sat(s.packets_in_flight as u64, mss)),
        app_limited: rs.is_app_limited != 0,
    }
}

impl LinkState {
    const ECN_OK: u8 = 1;
    const LIVE: u8 = 2;
    const CE: u8 = 4;

    pub fn ecn_ok(&self) -> bool {
        self.flags & Self::ECN_OK != 0
    }
    fn set_ecn_ok(&mut self, on: bool) {
        self.set_flag(Self::ECN_OK, on);
    }
    fn set_flag(&mut self, flag: u8, on: bool) {
        self.flags = if on { self.flags | flag } else { self.flags & !flag };
    }
    /// Receiver: CE state of the last data packet (0/1).
    pub fn ce_state(&self) -> u8 {
        (self.flags & Self::CE != 0) as u8
    }
    pub fn rtos(&self) -> u8 {
        self.rtos
    }
    pub fn recoveries(&self) -> u8 {
        self.recoveries
    }
}


/// Checks a pacing tunable.
pub fn validate_pacing_pct(name: &'static str, v: u64) -> Result<u32, ParamError> {
    super::params::check(name, v, 0, Pacing::MAX_PCT as u64)?;
    Ok(v as u32)
}
