//! xdcc congestion-control algorithms as pure integer state machines.
//!
//! One source for every world: the Rust-for-Linux kernel modules under `kmods/`
//! include these files, and the simulator, the tests and the benchmarks build
//! them with cargo. Nothing here allocates, uses floating point or can panic:
//! all arithmetic is explicitly saturating/wrapping/checked (the kernel builds
//! Rust with overflow checks on), and every fraction is fixed point with its
//! scale stated where it is declared (mostly Q16, see [`fixed`]).
//!
//! Each algorithm is one file that reads side by side with its paper:
//! - [`uno`]: UnoCC, uno-sc25 §4.1, Algorithm 1.
//! - [`gemini`]: Gemini, gemini-ton §III, Algorithm 1.
//! - [`oscar`]: OSCAR, oscar-nsdi26 §4, Algorithms 1–2.
//! - [`smartt`]: SMaRTT / UEC NSCC, smartt-uec-nscc §III, Algorithms 1–4.
//! - [`amrt`]: AMRT's sender (anti-ECN marks: grow on spare bandwidth),
//!   amrt-icpp20 §4.3 and §6.
//! - [`dctcp`]: DCTCP as Linux's `tcp_dctcp.c` runs it, the baseline the
//!   papers compare against.
//!
//! All of them implement [`CongestionControl`]: per-flow state (which must fit
//! the kernel's private CC area, [`ICSK_CA_PRIV_SIZE`] bytes) is updated from an
//! [`AckSample`] per ACK and from [`Event`]s (loss, RTO, idle restart); the
//! outputs are a congestion window in bytes, an optional pacing rate and a slow
//! start threshold. Tunables live in a separate `Params` struct per algorithm,
//! derived from a few user-facing values ([`NetConfig`]) and checked by
//! `validate()`; in the kernel they are global sysctls, outside the per-socket
//! state.
#![cfg_attr(not(xdcc_kernel), no_std)]
#![cfg_attr(not(xdcc_bpf), forbid(unsafe_code))]
// The BPF build calls three global BPF functions (fixed.rs, `bpf_global`).
#![cfg_attr(xdcc_bpf, deny(unsafe_code))]
#![deny(clippy::float_arithmetic)]

// Slow paths are `#[inline(never)]` so that the per-ACK fast paths stay
// small, except in the BPF build (`--cfg xdcc_bpf`, kmods/bpf/build.sh),
// where everything must be inlined into the struct_ops programs.
//
// The algorithm files refer to their siblings with `super::` (not `crate::`)
// and use these macros by textual scope, so that the kernel modules can
// include this crate as a module (`#[path = "algo/src/lib.rs"] mod algo;`).

/// A `const fn`, except in the BPF build, where it (or a function it calls)
/// calls a global BPF function (fixed.rs, `bpf_global`), which a `const fn`
/// cannot. The kernel modules need them `const` for their static defaults.
macro_rules! const_unless_bpf {
    ($(#[$m:meta])* $vis:vis fn $($rest:tt)*) => {
        #[cfg(not(xdcc_bpf))]
        $(#[$m])* $vis const fn $($rest)*
        #[cfg(xdcc_bpf)]
        $(#[$m])* $vis fn $($rest)*
    };
}

/// Compile-time check that a per-flow state fits the kernel's private area.
macro_rules! assert_fits_ca_priv {
    ($t:ty) => {
        const _: () = assert!(
            core::mem::size_of::<$t>() <= super::ICSK_CA_PRIV_SIZE,
            "per-flow CC state does not fit ICSK_CA_PRIV_SIZE"
        );
    };
}

/// Generates, for a `Params` struct, the list of tunable names and
/// `get`/`set` by name. `set` validates the whole struct afterwards and
/// restores the old value on error, so bad input changes nothing.
macro_rules! tunables {
    ($ty:ident { $($field:ident : $t:ty),* $(,)? }) => {
        tunables!($ty { $($field: $t),* }; window_pacing = super::linux::Pacing::DEFAULT);
    };
    ($ty:ident { $($field:ident : $t:ty),* $(,)? }; window_pacing = $wp:expr) => {
        impl $ty {
            /// Every field of the struct is in the list: this pattern names
            /// the listed fields and has no `..`, so a field left out of the
            /// list is a compile error (E0027).
            #[allow(dead_code)]
            fn every_field_is_a_tunable(&self) {
                let $ty { $($field: _),* } = self;
            }

            /// Names of the tunables, as used by sysctls and scenario files.
            pub const TUNABLES: &'static [&'static str] = &[$(stringify!($field)),*];

            /// Reads a tunable by name.
            pub fn get(&self, name: &str) -> Option<u64> {
                match name {
                    $(stringify!($field) => Some(self.$field as u64),)*
                    _ => None,
                }
            }

            /// Sets a tunable by name without validating the whole set:
            /// for loading a consistent set one value at a time (e.g. the
            /// values read back from a module's sysctls) before `set`.
            pub fn set_unchecked(&mut self, name: &str, value: u64) -> Result<(), super::ParamError> {
                match name {
                    $(stringify!($field) => {
                        self.$field = <$t>::try_from(value).map_err(|_| super::ParamError {
                            name: stringify!($field),
                            value,
                            reason: "does not fit the field",
                            range: Some((0, <$t>::MAX as u64)),
                        })?;
                        Ok(())
                    })*
                    _ => Err(super::ParamError { name: "(unknown)", value, reason: "unknown parameter name", range: None }),
                }
            }

            /// Writes the set in its `#[repr(C)]` layout (native byte
            /// order, padding zeroed) to `out[..size_of::<Self>()]`, as the
            /// BPF CCs' configuration map holds it. False if `out` is short.
            pub fn write_bytes(&self, out: &mut [u8]) -> bool {
                if out.len() < core::mem::size_of::<Self>() {
                    return false;
                }
                out[..core::mem::size_of::<Self>()].fill(0);
                $(
                    let o = core::mem::offset_of!(Self, $field);
                    let b = self.$field.to_ne_bytes();
                    out[o..o + b.len()].copy_from_slice(&b);
                )*
                true
            }

            /// Reads a set written by [`Self::write_bytes`]; None if `b` is
            /// short. Not validated: call `validate()`.
            pub fn read_bytes(b: &[u8], mut base: Self) -> Option<Self> {
                if b.len() < core::mem::size_of::<Self>() {
                    return None;
                }
                $(
                    let o = core::mem::offset_of!(Self, $field);
                    let mut v = [0u8; core::mem::size_of::<$t>()];
                    v.copy_from_slice(&b[o..o + core::mem::size_of::<$t>()]);
                    base.$field = <$t>::from_ne_bytes(v);
                )*
                Some(base)
            }

            /// Sets a tunable by name; on any error nothing changes.
            #[allow(clippy::should_implement_trait)]
            pub fn set(&mut self, name: &str, value: u64) -> Result<(), super::ParamError> {
                let old = *self;
                self.set_unchecked(name, value)?;
                if let Err(e) = self.validate() {
                    *self = old;
                    return Err(e);
                }
                Ok(())
            }
        }
        impl super::Tunables for $ty {
            const TUNABLES: &'static [&'static str] = <$ty>::TUNABLES;
            const WINDOW_PACING: super::linux::Pacing = $wp;
            fn get(&self, name: &str) -> Option<u64> {
                <$ty>::get(self, name)
            }
            fn set(&mut self, name: &str, value: u64) -> Result<(), super::ParamError> {
                <$ty>::set(self, name, value)
            }
            fn set_unchecked(&mut self, name: &str, value: u64) -> Result<(), super::ParamError> {
                <$ty>::set_unchecked(self, name, value)
            }
            fn from_net(n: &super::NetConfig) -> Self {
                <$ty>::from_net(n)
            }
            fn write_bytes(&self, out: &mut [u8]) -> bool {
                <$ty>::write_bytes(self, out)
            }
            fn read_bytes(b: &[u8], base: Self) -> Option<Self> {
                <$ty>::read_bytes(b, base)
            }
            fn validate(&self) -> Result<(), super::ParamError> {
                <$ty>::validate(self)
            }
        }
    };
}

pub mod amrt;
pub mod dctcp;
pub mod fixed;
pub mod gemini;
pub mod host;
pub mod linux;
pub mod oscar;
pub mod params;
pub mod presets;
pub mod smartt;
pub mod uno;
mod window;

pub use params::{NetConfig, ParamError};
pub use window::Window;

/// What the rest of xdcc (kernel modules, BPF backend, agent, VM tests,
/// testbed runner) needs to know about one congestion control. [`CCS`] is the
/// one list of them; code that needs the algorithm's *types* dispatches on
/// the name with [`with_cc!`].
#[derive(Clone, Copy, Debug)]
pub struct CcSpec {
    /// Registered name (`net.ipv4.tcp_congestion_control`), sysctl directory
    /// `/proc/sys/net/xdcc/<name>/`; the BPF version registers `bpf_<name>`.
    pub name: &'static str,
    /// Kernel module (`kmods/<module>.rs`).
    pub module: &'static str,
    /// Needs ECN negotiated (`TCP_CONG_NEEDS_ECN`): whenever it reads marks.
    pub needs_ecn: bool,
    /// What a CE mark tells the algorithm.
    pub marks: Marks,
    /// Whether it sets its sending rate itself (a pacing rate it computes,
    /// OSCAR) rather than only a window.
    pub rate_based: bool,
    /// The paper the algorithm file follows, by its short name (docs/claims.md
    /// cites each; DCTCP's file follows RFC 8257 and Linux's `tcp_dctcp.c`,
    /// as Alizadeh et al., SIGCOMM 2010, describe it).
    pub paper: &'static str,
    /// The algorithm's own tunables (every module also has the `net_*` and
    /// `window_pacing_*` files of the Linux adapter).
    pub tunables: &'static [&'static str],
    /// Names of the four values in the flow's `CcInfo` (`xdcc flows`).
    pub info_fields: [&'static str; 4],
}

/// One line of `xdcc cc known`: `name module ecn|no-ecn paper` (the line
/// scripts read: `cargo run -p xdcc-algo --example ccs` prints the same).
impl core::fmt::Display for CcSpec {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let ecn = if self.needs_ecn { "ecn" } else { "no-ecn" };
        write!(f, "{} {} {} {}", self.name, self.module, ecn, self.paper)
    }
}

/// What a CE mark means to an algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marks {
    /// Congestion: the window or rate goes down (DCTCP and the papers that
    /// follow it).
    Congestion,
    /// Spare bandwidth: the window goes up (AMRT's anti-ECN marks).
    SpareBandwidth,
    /// Not read: no ECN (OSCAR, delay only).
    Unused,
}

impl Marks {
    /// The name `xdcc cc known --json` shows.
    pub const fn as_str(self) -> &'static str {
        match self {
            Marks::Congestion => "congestion",
            Marks::SpareBandwidth => "spare_bandwidth",
            Marks::Unused => "unused",
        }
    }
}

macro_rules! cc_spec {
    ($m:ident :: $state:ident, $module:literal, marks: $marks:ident, rate_based: $rate:literal, paper: $paper:literal) => {
        CcSpec {
            name: <$m::$state as CongestionControl>::NAME,
            module: $module,
            needs_ecn: !matches!(Marks::$marks, Marks::Unused),
            marks: Marks::$marks,
            rate_based: $rate,
            paper: $paper,
            tunables: <$m::Params as Tunables>::TUNABLES,
            info_fields: <$m::$state as CongestionControl>::INFO_FIELDS,
        }
    };
}

/// Every xdcc congestion control, in the order the docs list them.
pub const CCS: [CcSpec; 6] = [
    cc_spec!(uno::Uno, "tcp_uno", marks: Congestion, rate_based: false, paper: "uno-sc25"),
    cc_spec!(gemini::Gemini, "tcp_gemini", marks: Congestion, rate_based: false, paper: "gemini-ton"),
    cc_spec!(oscar::Oscar, "tcp_oscar", marks: Unused, rate_based: true, paper: "oscar-nsdi26"),
    cc_spec!(smartt::Smartt, "tcp_smartt", marks: Congestion, rate_based: false, paper: "smartt-uec-nscc"),
    cc_spec!(amrt::Amrt, "tcp_amrt", marks: SpareBandwidth, rate_based: false, paper: "amrt-icpp20"),
    cc_spec!(dctcp::Dctcp, "tcp_dctcp", marks: Congestion, rate_based: false, paper: "dctcp-sigcomm10"),
];

/// The entry of `name` (`uno` or `bpf_uno`, ...).
pub fn cc_spec(name: &str) -> Option<&'static CcSpec> {
    let name = name.strip_prefix("bpf_").unwrap_or(name);
    CCS.iter().find(|c| c.name == name)
}

/// Whether the CC registered as `name` needs ECN: a `const fn` so that the
/// kernel modules take it from [`CCS`] at compile time.
pub const fn needs_ecn(name: &str) -> bool {
    let mut i = 0;
    while i < CCS.len() {
        if str_eq(CCS[i].name, name) {
            return CCS[i].needs_ecn;
        }
        i += 1;
    }
    false
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Expands `$callback!(args... uno::Uno, gemini::Gemini, ...)`: every
/// algorithm as `module::State`, in the order of [`CCS`] — the one list by
/// type that other code expands over ([`with_cc!`], the simulator's dispatch
/// enums). The callback is given as tokens in brackets, so that a path such as
/// `$crate::with_cc` works: `for_each_cc!([my_macro] (extra, args,))`.
#[cfg(not(xdcc_kernel))]
#[macro_export]
macro_rules! for_each_cc {
    ([$($callback:tt)+] ($($args:tt)*)) => {
        $($callback)+! { $($args)* uno::Uno, gemini::Gemini, oscar::Oscar, smartt::Smartt, amrt::Amrt, dctcp::Dctcp }
    };
}

/// Runs `$body` with `$cc` naming the algorithm's state type and `$params`
/// its `Params`, for the CC called `$name` (without the `bpf_` prefix);
/// `$other` for any other name (the algorithms from [`for_each_cc!`]).
///
/// ```
/// use xdcc_algo::{with_cc, Tunables};
/// let n = with_cc!("gemini", |C, P| P::TUNABLES.len(), _ => 0);
/// assert!(n > 0);
/// ```
#[cfg(not(xdcc_kernel))]
#[macro_export]
macro_rules! with_cc {
    ($name:expr, |$cc:ident, $params:ident| $body:expr, _ => $other:expr) => {
        $crate::for_each_cc!([$crate::with_cc] (@arms $name, $cc, $params, $body, $other,))
    };
    (@arms $name:expr, $cc:ident, $params:ident, $body:expr, $other:expr, $($m:ident :: $state:ident),*) => {
        match $name {
            $(n if n == <$crate::$m::$state as $crate::CongestionControl>::NAME => {
                #[allow(dead_code)]
                type $cc = $crate::$m::$state;
                #[allow(dead_code)]
                type $params = $crate::$m::Params;
                $body
            })*
            _ => $other,
        }
    };
}

/// Size of the per-socket private congestion-control area in Linux 6.12
/// (`ICSK_CA_PRIV_SIZE`, `13 * sizeof(u64)`). Every algorithm's state is
/// checked against it at compile time.
pub const ICSK_CA_PRIV_SIZE: usize = 104;

/// Largest congestion window any algorithm will hold, in bytes (1 GiB). It is
/// far above any real BDP (400 Gbit/s × 20 ms = 1 GB) and keeps every
/// `window × Q16 factor` product below 2^63.
pub const MAX_CWND_BYTES: u32 = 1 << 30;

/// A pacing rate that does not limit (bytes/s): what an ACK-clocked
/// algorithm returns from `pacing_rate` so that the stack's window pacing
/// stays off (AMRT after its first window).
pub const UNPACED: u64 = 1 << 50;

/// What the transport learned from one ACK. All times are in nanoseconds on
/// the sender's clock (the kernel's `tcp_clock_ns()`); sizes are in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckSample {
    /// Time the ACK is processed.
    pub now_ns: u64,
    /// Bytes newly acknowledged by this ACK (cumulative plus SACKed).
    pub acked_bytes: u32,
    /// Of `acked_bytes`, how many arrived CE-marked at the receiver (echoed as
    /// ECE). With DCTCP-style receivers every ACK reflects the CE state of the
    /// data it covers, so this is either 0 or `acked_bytes` per ACK.
    pub marked_bytes: u32,
    /// Round-trip time measured by this ACK; 0 means "no valid sample".
    pub rtt_ns: u32,
    /// The sender's smoothed RTT; 0 means unknown. On Linux `tp->srtt_us`:
    /// its samples time the *oldest* newly acked byte, `rtt_ns` the newest,
    /// so under delayed and stretch ACKs it runs well above the mean of
    /// `rtt_ns` and follows the ACK clock (what one window takes to come
    /// back: window / throughput) where `rtt_ns` does not. The simulator,
    /// which ACKs every packet, gives its own EWMA of `rtt_ns` (gain 1/8).
    pub srtt_ns: u32,
    /// Send time of the newest data packet this ACK covers; 0 means unknown.
    /// Values may go backwards (retransmissions, reordering): every algorithm
    /// tolerates that.
    pub send_time_ns: u64,
    /// Bytes that were in flight when that packet was sent (OSCAR's echoed
    /// `pktInfl`); 0 means unknown. On Linux: the packets delivered between
    /// that packet's send and its ACK (`tp->delivered − rs->prior_delivered`),
    /// i.e. what was ahead of it in the pipe; `rs->prior_delivered == 0`
    /// means the ACK carried no rate sample and gives 0 (see `linux.rs`).
    pub inflight_at_send: u32,
    /// Bytes in flight now, after this ACK was processed.
    pub inflight: u32,
    /// The window did not limit the sender when the acked data was sent (the
    /// application did, or the receiver's window: Linux's rate sample flags
    /// the first, the adapters add `tcp_is_cwnd_limited()` false for algorithms
    /// without their own rate), so a low ACK rate says nothing about the network.
    pub app_limited: bool,
}

/// Non-ACK events. TCP has neither packet trimming (SMaRTT) nor NACKs (Uno):
/// a detected loss and a retransmission timeout stand in for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Loss detected by fast retransmit/RACK; `bytes` is the size of the lost
    /// data (one segment, usually).
    Loss { bytes: u32 },
    /// Retransmission timeout: everything in flight is presumed lost.
    Rto,
    /// The flow restarts after an idle period longer than an RTO; timers and
    /// per-round measurements are stale.
    IdleRestart,
}

/// What the algorithm knows when a flow starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowInit {
    pub now_ns: u64,
    /// Maximum segment (payload) size in bytes.
    pub mss: u32,
    /// An RTT estimate available at start (the handshake RTT in the kernel);
    /// 0 when none. Used to size the initial window and the per-flow BDP until
    /// real samples arrive.
    pub rtt_hint_ns: u32,
}

/// The common interface of every xdcc algorithm.
pub trait CongestionControl: Sized {
    /// Global tunables (the same for all flows of a host).
    type Params;
    /// Name as registered with the kernel (`net.ipv4.tcp_congestion_control`).
    const NAME: &'static str;
    /// Creates the per-flow state.
    fn new(p: &Self::Params, init: &FlowInit) -> Self;
    /// Processes one ACK.
    fn on_ack(&mut self, p: &Self::Params, s: &AckSample);
    /// Processes a loss, RTO or idle restart at time `now_ns`.
    fn on_event(&mut self, p: &Self::Params, e: Event, now_ns: u64);
    /// Congestion window in bytes, always within `[min, MAX_CWND_BYTES]`.
    fn cwnd(&self) -> u32;
    /// Pacing rate in bytes per second, if the algorithm paces.
    fn pacing_rate(&self) -> Option<u64>;
    /// Whether the pacing rate, not the window, limits the sender (OSCAR):
    /// then a round the window did not limit is no application-limited
    /// round. An algorithm that paces its own window over an RTT (UnoCC)
    /// is still window-limited.
    fn rate_limited(&self) -> bool {
        self.pacing_rate().is_some_and(|r| r < UNPACED)
    }
    /// Slow-start threshold in bytes (`u32::MAX`: none).
    fn ssthresh(&self) -> u32;
    /// Restores the window from before the last loss reaction (the kernel
    /// calls this when a loss turns out to be spurious).
    fn undo(&mut self, p: &Self::Params);
    /// The sender could not use a window above `max_bytes` (it was not
    /// window-limited), so growth beyond it is taken back: Linux grows
    /// windows only when `tcp_is_cwnd_limited()`. Never cuts below the
    /// window the flow had; algorithms that pace ignore it.
    fn hold_cwnd(&mut self, max_bytes: u32);
    /// Names of the four per-flow values `info` returns, shown by `get_info`
    /// and `xdcc flows`. By suffix: `_us` microseconds, `_q16` a fraction
    /// times 65536, `_mbps` megabits per second; otherwise a count, a byte
    /// value or a flag set the algorithm documents.
    const INFO_FIELDS: [&'static str; 4];
    /// The algorithm's state, named by `INFO_FIELDS`.
    fn info(&self) -> [u32; 4];
}

/// Tunables by name, for code generic over the algorithms (kernel sysctls,
/// scenario files). Implemented by every `Params`.
pub trait Tunables: Sized + Copy {
    /// Names of the tunables.
    const TUNABLES: &'static [&'static str];
    /// The Linux adapter's default window pacing for this CC.
    const WINDOW_PACING: linux::Pacing;
    /// Reads a tunable by name.
    fn get(&self, name: &str) -> Option<u64>;
    /// Sets a tunable by name after validating the whole set; on error nothing changes.
    fn set(&mut self, name: &str, value: u64) -> Result<(), ParamError>;
    /// Sets a tunable by name without validating the whole set (to load a
    /// set that is consistent as a whole one value at a time).
    fn set_unchecked(&mut self, name: &str, value: u64) -> Result<(), ParamError>;
    /// The paper's defaults for a network.
    fn from_net(n: &NetConfig) -> Self;
    /// The set in its `#[repr(C)]` layout (see the `tunables!` macro).
    fn write_bytes(&self, out: &mut [u8]) -> bool;
    /// The fields of a set written by `write_bytes`, on top of `base`.
    fn read_bytes(b: &[u8], base: Self) -> Option<Self>;
    /// Checks the whole set.
    fn validate(&self) -> Result<(), ParamError>;
}

/// Base RTT bookkeeping shared by all algorithms: the minimum RTT seen over the
/// flow's life (the papers' `RTT_base`, "minimum RTT observed during a long
/// time"), seeded by the handshake hint.
pub(crate) fn update_min_rtt(base_rtt_ns: &mut u32, rtt_ns: u32) -> bool {
    if rtt_ns != 0 && (rtt_ns < *base_rtt_ns || *base_rtt_ns == 0) {
        *base_rtt_ns = rtt_ns;
        true
    } else {
        false
    }
}

