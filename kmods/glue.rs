// SPDX-License-Identifier: GPL-2.0

//! Shared glue between Linux's `tcp_congestion_ops` and the algorithms of
//! `kmods/algo`, in the spirit of the Rust-for-Linux TCP CC series
//! (`rust/kernel/net/tcp/cong.rs`, PR #1062):
//!
//! - a trait per CC ([`KernelCc`]) naming the algorithm, its tunables and
//!   whether it needs ECN;
//! - a [`Registration`] that owns the `tcp_congestion_ops` and the sysctl
//!   table, registers both at module load and unregisters them on drop;
//! - `init`/`release` placing the per-socket state in `inet_csk_ca()`, with a
//!   compile-time check that it fits `ICSK_CA_PRIV_SIZE`;
//! - one mapping from the kernel's ACK processing (`cong_control` with the
//!   rate sample, `in_ack_event` for ECE, `set_state` for loss and RTO,
//!   `cwnd_event` for CE changes and idle restarts) onto
//!   [`CongestionControl`].
//!
//! Tunables live in a [`ParamCell`] per module, outside the per-socket state:
//! two copies of the parameters, an index readers follow, and RCU between a
//! writer's flip and its next reuse of the old copy. ACK processing runs in
//! softirq (an RCU read-side section), reads the current copy without locks
//! and never allocates.

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_ulong, c_void};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use kernel::bindings;
use kernel::prelude::*;
use kernel::str::CStr;

use super::algo::{AckSample, CongestionControl, Event, FlowInit, NetConfig, Tunables, ICSK_CA_PRIV_SIZE};

/// One xdcc congestion control as the kernel sees it.
pub trait KernelCc: 'static {
    /// The algorithm from `kmods/algo`.
    type Algo: CongestionControl<Params = Self::Params>;
    /// Its tunables.
    type Params: Tunables + 'static;
    /// Receiver-side state kept next to the algorithm ([`EcnReceiver`] for
    /// ECN-based CCs, `()` otherwise).
    type Extra: ExtraState;
    /// Name in `tcp_available_congestion_control` (at most 15 bytes).
    const NAME: &'static CStr;
    /// Sysctl directory, e.g. `net/xdcc/uno`.
    const SYSCTL_DIR: &'static CStr;
    /// The module's tunables (a `static` in the module file).
    fn params() -> &'static ParamCell<Self::Params>;
}

/// Per-socket state in `inet_csk_ca()`.
#[repr(C)]
pub struct Priv<A, E> {
    pub algo: A,
    pub extra: E,
}

/// Extra per-socket state beside the algorithm.
pub trait ExtraState: Sized {
    const NEEDS_ECN: bool;
    fn new() -> Self;
    /// `cwnd_event` for CE state changes (receiver side).
    fn cwnd_event(&mut self, sk: *mut bindings::sock, ev: bindings::tcp_ca_event);
    /// Remember whether the ACK being processed carries ECE.
    fn set_ece(&mut self, ece: bool);
    fn ece(&self) -> bool;
}

impl ExtraState for () {
    const NEEDS_ECN: bool = false;
    fn new() -> Self {}
    fn cwnd_event(&mut self, _: *mut bindings::sock, _: bindings::tcp_ca_event) {}
    fn set_ece(&mut self, _: bool) {}
    fn ece(&self) -> bool {
        false
    }
}

/// DCTCP-style receiver: every change of the CE state of arriving data forces
/// an immediate ACK (first flushing a delayed ACK for the old state), so the
/// sender sees ECE exactly on the ACKs that cover CE-marked data.
#[repr(C)]
pub struct EcnReceiver {
    prior_rcv_nxt: u32,
    ce_state: u8,
    ece: u8,
}

impl EcnReceiver {
    fn demand_cwr(tp: *mut bindings::tcp_sock, ce: bool) {
        // SAFETY: `tp` is the socket the stack is processing; it holds the
        // socket lock (or runs in its softirq context) while calling us.
        unsafe {
            if ce {
                (*tp).ecn_flags |= bindings::TCP_ECN_DEMAND_CWR as u8;
            } else {
                (*tp).ecn_flags &= !(bindings::TCP_ECN_DEMAND_CWR as u8);
            }
        }
    }
}

impl ExtraState for EcnReceiver {
    const NEEDS_ECN: bool = true;
    fn new() -> Self {
        Self { prior_rcv_nxt: 0, ce_state: 0, ece: 0 }
    }

    fn cwnd_event(&mut self, sk: *mut bindings::sock, ev: bindings::tcp_ca_event) {
        let new_ce = match ev {
            bindings::tcp_ca_event_CA_EVENT_ECN_IS_CE => 1u8,
            bindings::tcp_ca_event_CA_EVENT_ECN_NO_CE => 0u8,
            _ => return,
        };
        // SAFETY: the stack calls `cwnd_event` with a valid, locked socket;
        // `tcp_sk`/`inet_csk` are container_of casts of it.
        unsafe {
            let tp = bindings::tcp_sk(sk);
            let icsk = bindings::inet_csk(sk);
            if self.ce_state != new_ce {
                if (*icsk).icsk_ack.pending & bindings::inet_csk_ack_state_t_ICSK_ACK_TIMER as u8 != 0 {
                    // A delayed ACK is pending: send it now with the old CE state.
                    Self::demand_cwr(tp, self.ce_state != 0);
                    bindings::__tcp_send_ack(sk, self.prior_rcv_nxt, 0);
                }
                (*icsk).icsk_ack.pending |= bindings::inet_csk_ack_state_t_ICSK_ACK_NOW as u8;
            }
            self.prior_rcv_nxt = (*tp).rcv_nxt;
            self.ce_state = new_ce;
            Self::demand_cwr(tp, new_ce != 0);
        }
    }

    fn set_ece(&mut self, ece: bool) {
        self.ece = ece as u8;
    }
    fn ece(&self) -> bool {
        self.ece != 0
    }
}

/// The module's tunables, read lock-free on the ACK path (see module docs).
pub struct ParamCell<P> {
    slots: [UnsafeCell<P>; 2],
    active: AtomicUsize,
    writer: AtomicBool,
}

// SAFETY: readers only read the active slot; a writer (serialized by
// `writer`) only writes the inactive slot, publishes it with a release store
// and waits for an RCU grace period before it can write the old slot again,
// so no reader can still be reading a slot that is being written.
unsafe impl<P: Send> Sync for ParamCell<P> {}

impl<P: Tunables> ParamCell<P> {
    pub const fn new(p: P) -> Self {
        Self { slots: [UnsafeCell::new(p), UnsafeCell::new(p)], active: AtomicUsize::new(0), writer: AtomicBool::new(false) }
    }

    /// The current parameters. Callers run in an RCU read-side critical
    /// section (softirq ACK processing, or under `rcu_read_lock`).
    #[inline]
    pub fn current(&self) -> &P {
        let i = self.active.load(Ordering::Acquire) & 1;
        // SAFETY: see `Sync` above: the active slot is not written while
        // readers may hold it.
        unsafe { &*self.slots[i].get() }
    }

    /// Applies `f` to a copy of the current parameters and publishes it if
    /// `f` succeeds; on error nothing changes. Returns `-EBUSY` if another
    /// writer is active. May sleep (RCU grace period).
    pub fn update(&self, f: impl FnOnce(&mut P) -> core::result::Result<(), c_int>) -> c_int {
        if self.writer.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return -(bindings::EBUSY as c_int);
        }
        let mut next = *self.current();
        let r = match f(&mut next) {
            Ok(()) => {
                let i = self.active.load(Ordering::Relaxed) & 1;
                // SAFETY: slot `1 - i` is inactive and no reader holds it
                // (the previous writer waited a grace period after leaving it).
                unsafe { *self.slots[1 - i].get() = next };
                self.active.store(1 - i, Ordering::Release);
                // SAFETY: plain kernel call; we are in process context
                // (sysctl write) and hold no spinlock.
                unsafe { bindings::synchronize_rcu() };
                0
            }
            Err(e) => e,
        };
        self.writer.store(false, Ordering::Release);
        r
    }
}

/// Compile-time check that the per-socket state fits the CA private area.
pub const fn check_priv_size<T: KernelCc>() {
    assert!(
        core::mem::size_of::<Priv<T::Algo, T::Extra>>() <= ICSK_CA_PRIV_SIZE,
        "per-socket state does not fit ICSK_CA_PRIV_SIZE"
    );
    assert!(core::mem::align_of::<Priv<T::Algo, T::Extra>>() <= 8);
}

/// # Safety
/// `sk` must be a TCP socket whose CA private area holds an initialized
/// `Priv<T::Algo, T::Extra>` (true between `init` and `release`).
unsafe fn priv_of<'a, T: KernelCc>(sk: *mut bindings::sock) -> &'a mut Priv<T::Algo, T::Extra> {
    // SAFETY: guaranteed by the caller; the area is 8-byte aligned (u64 array).
    unsafe { &mut *(bindings::inet_csk_ca(sk) as *mut Priv<T::Algo, T::Extra>) }
}

fn mss(tp: *const bindings::tcp_sock) -> u32 {
    // SAFETY: `tp` is valid for the duration of the callback.
    let m = unsafe { (*tp).mss_cache };
    if m == 0 {
        1460
    } else {
        m
    }
}

/// Sets the kernel's window (packets) from the algorithm's (bytes), and the
/// pacing rate: the algorithm's own, or `pacing_pct` % of cwnd/srtt.
fn apply<T: KernelCc>(sk: *mut bindings::sock, algo: &T::Algo, pacing_pct: u32) {
    // SAFETY: `sk` is the socket being processed; the helpers are the
    // kernel's inline accessors.
    unsafe {
        let tp = bindings::tcp_sk(sk);
        let m = mss(tp);
        let pkts = core::cmp::max(algo.cwnd() / m, 1);
        let clamp = (*tp).snd_cwnd_clamp;
        bindings::tcp_snd_cwnd_set(tp, core::cmp::min(pkts, core::cmp::max(clamp, 1)));
        let rate = match algo.pacing_rate() {
            Some(r) => Some(r),
            None if pacing_pct > 0 && (*tp).srtt_us != 0 => {
                // srtt_us is in 1/8 µs; rate = pct/100 · cwnd · mss / srtt.
                let bytes = (pkts as u64).saturating_mul(m as u64);
                let per_sec = bytes.saturating_mul(8_000_000) / ((*tp).srtt_us as u64);
                Some(per_sec.saturating_mul(pacing_pct as u64) / 100)
            }
            None => None,
        };
        if let Some(r) = rate {
            bindings::tcp_set_pacing_rate(sk, r);
        }
    }
}

unsafe extern "C" fn init<T: KernelCc>(sk: *mut bindings::sock) {
    // SAFETY: called by the stack for a TCP socket being assigned this CC;
    // the CA private area is ours from now until `release`.
    unsafe {
        let tp = bindings::tcp_sk(sk);
        let p = T::params().current();
        let fi = FlowInit {
            now_ns: (*tp).tcp_mstamp.saturating_mul(1000),
            mss: mss(tp),
            // srtt_us is in 1/8 µs: the handshake RTT, if any.
            rtt_hint_ns: (((*tp).srtt_us >> 3) as u64).saturating_mul(1000).min(u32::MAX as u64) as u32,
        };
        let state = Priv::<T::Algo, T::Extra> { algo: T::Algo::new(p, &fi), extra: T::Extra::new() };
        core::ptr::write(bindings::inet_csk_ca(sk) as *mut Priv<T::Algo, T::Extra>, state);
        // TCP paces internally (without fq) once asked to.
        bindings::tcp_request_pacing(sk);
    }
}

unsafe extern "C" fn release<T: KernelCc>(_sk: *mut bindings::sock) {
    // The state is plain data: nothing to free.
}

unsafe extern "C" fn in_ack_event<T: KernelCc>(sk: *mut bindings::sock, flags: u32) {
    // SAFETY: between init and release.
    let s = unsafe { priv_of::<T>(sk) };
    s.extra.set_ece(flags & bindings::tcp_ca_ack_event_flags_CA_ACK_ECE != 0);
}

unsafe extern "C" fn cong_control<T: KernelCc>(
    sk: *mut bindings::sock,
    _ack: u32,
    _flag: c_int,
    rs: *const bindings::rate_sample,
) {
    // SAFETY: the stack passes a valid socket and rate sample; the CA area
    // holds our state between init and release.
    unsafe {
        let tp = bindings::tcp_sk(sk);
        let s = priv_of::<T>(sk);
        let p = T::params().current();
        let m = mss(tp) as u64;
        let rs = &*rs;
        let acked = (rs.acked_sacked as u64).saturating_mul(m).min(u32::MAX as u64) as u32;
        let rtt_ns = if rs.rtt_us > 0 { (rs.rtt_us as u64).saturating_mul(1000).min(u32::MAX as u64) as u32 } else { 0 };
        let inflight_at_send = ((*tp).delivered.wrapping_sub(rs.prior_delivered) as u64).saturating_mul(m);
        let inflight = (bindings::tcp_packets_in_flight(tp) as u64).saturating_mul(m);
        let sample = AckSample {
            now_ns: (*tp).tcp_mstamp.saturating_mul(1000),
            acked_bytes: acked,
            marked_bytes: if s.extra.ece() { acked } else { 0 },
            rtt_ns,
            send_time_ns: (*tp).first_tx_mstamp.saturating_mul(1000),
            inflight_at_send: inflight_at_send.min(u32::MAX as u64) as u32,
            inflight: inflight.min(u32::MAX as u64) as u32,
            app_limited: rs.is_app_limited,
        };
        s.extra.set_ece(false);
        if acked != 0 || rtt_ns != 0 {
            s.algo.on_ack(p, &sample);
        }
        apply::<T>(sk, &s.algo, pacing_pct::<T>());
    }
}

/// Window pacing for window-only algorithms, percent of cwnd/srtt (sysctl
/// `window_pacing_pct`, 0 = no pacing). Default 100: the simulator shows
/// UnoCC fair at 100 % where Linux's default 120 % (`tcp_pacing_ca_ratio`,
/// which does not apply to `cong_control` CCs) is not.
static PACING_PCT: AtomicUsize = AtomicUsize::new(100);

fn pacing_pct<T: KernelCc>() -> u32 {
    PACING_PCT.load(Ordering::Relaxed).min(1000) as u32
}

unsafe extern "C" fn set_state<T: KernelCc>(sk: *mut bindings::sock, new_state: u8) {
    // SAFETY: between init and release; `tcp_sk` of a valid socket.
    unsafe {
        let tp = bindings::tcp_sk(sk);
        let s = priv_of::<T>(sk);
        let p = T::params().current();
        let now = (*tp).tcp_mstamp.saturating_mul(1000);
        match new_state as u32 {
            bindings::tcp_ca_state_TCP_CA_Loss => s.algo.on_event(p, Event::Rto, now),
            bindings::tcp_ca_state_TCP_CA_Recovery => s.algo.on_event(p, Event::Loss { bytes: mss(tp) }, now),
            _ => return,
        }
        apply::<T>(sk, &s.algo, pacing_pct::<T>());
    }
}

unsafe extern "C" fn cwnd_event<T: KernelCc>(sk: *mut bindings::sock, ev: bindings::tcp_ca_event) {
    // SAFETY: between init and release.
    unsafe {
        let s = priv_of::<T>(sk);
        match ev {
            bindings::tcp_ca_event_CA_EVENT_TX_START | bindings::tcp_ca_event_CA_EVENT_CWND_RESTART => {
                let tp = bindings::tcp_sk(sk);
                let now = (*tp).tcp_mstamp.saturating_mul(1000);
                s.algo.on_event(T::params().current(), Event::IdleRestart, now);
            }
            _ => s.extra.cwnd_event(sk, ev),
        }
    }
}

unsafe extern "C" fn ssthresh<T: KernelCc>(sk: *mut bindings::sock) -> u32 {
    // Called when the stack enters CWR (ECE), Recovery or Loss. The window
    // itself is ours (`cong_control`); report the algorithm's threshold so
    // `tcp_in_slow_start()` agrees with it.
    // SAFETY: between init and release.
    unsafe {
        let tp = bindings::tcp_sk(sk);
        let s = priv_of::<T>(sk);
        let th = s.algo.ssthresh();
        if th == u32::MAX || th == 0 {
            core::cmp::max(bindings::tcp_snd_cwnd(tp), 2)
        } else {
            core::cmp::max(th / mss(tp), 2)
        }
    }
}

unsafe extern "C" fn undo_cwnd<T: KernelCc>(sk: *mut bindings::sock) -> u32 {
    // SAFETY: between init and release.
    unsafe {
        let tp = bindings::tcp_sk(sk);
        let s = priv_of::<T>(sk);
        s.algo.undo();
        core::cmp::max(s.algo.cwnd() / mss(tp), 1)
    }
}

/// One sysctl file per tunable, then `net_*` files that re-derive every
/// tunable from the papers' defaults for a new network description, then
/// `window_pacing_pct`.
const NET_KNOBS: [&str; 5] = ["net_link_rate_mbps", "net_intra_rtt_us", "net_inter_rtt_us", "net_mtu", "window_pacing_pct"];
const PACING_KNOB: usize = 4;

/// Kernel-side owner of the registered ops and sysctl table.
pub struct Registration<T: KernelCc> {
    ops: Pin<KBox<bindings::tcp_congestion_ops>>,
    _table: KVec<bindings::ctl_table>,
    _names: KVec<[u8; 40]>,
    header: *mut bindings::ctl_table_header,
    _t: core::marker::PhantomData<T>,
}

// SAFETY: the registration only holds kernel objects that are safe to drop
// from any context that may sleep (module exit).
unsafe impl<T: KernelCc> Send for Registration<T> {}
// SAFETY: no interior mutability is exposed.
unsafe impl<T: KernelCc> Sync for Registration<T> {}

/// The network the tunables were last derived from (for the `net_*` files).
static NET: [AtomicUsize; 4] = [
    AtomicUsize::new(10_000),
    AtomicUsize::new(100),
    AtomicUsize::new(10_000),
    AtomicUsize::new(1500),
];

unsafe extern "C" fn sysctl_handler<T: KernelCc>(
    table: *const bindings::ctl_table,
    write: c_int,
    buffer: *mut c_void,
    lenp: *mut usize,
    ppos: *mut bindings::loff_t,
) -> c_int {
    // SAFETY: `table` is one of our entries; `extra1` holds its index.
    let idx = unsafe { (*table).extra1 as usize };
    let names = <T::Params as Tunables>::TUNABLES;
    let net_idx = idx.checked_sub(names.len());
    let name = names.get(idx).copied();
    let current: u64 = match (name, net_idx) {
        (Some(name), _) => T::params().current().get(name).unwrap_or(0),
        (None, Some(PACING_KNOB)) => PACING_PCT.load(Ordering::Relaxed) as u64,
        (None, Some(n)) => match NET.get(n) {
            Some(a) => a.load(Ordering::Relaxed) as u64,
            None => return -(bindings::EINVAL as c_int),
        },
        (None, None) => return -(bindings::EINVAL as c_int),
    };
    let mut val: c_ulong = current as c_ulong;
    let mut tmp = bindings::ctl_table {
        // SAFETY: copying the procname pointer of a valid table entry.
        procname: unsafe { (*table).procname },
        data: &mut val as *mut c_ulong as *mut c_void,
        maxlen: core::mem::size_of::<c_ulong>() as c_int,
        mode: 0o644,
        ..Default::default()
    };
    // SAFETY: `tmp` points at a local `unsigned long`; the buffer arguments
    // are passed through from the sysctl core.
    let r = unsafe { bindings::proc_doulongvec_minmax(&mut tmp, write, buffer, lenp, ppos) };
    if r != 0 || write == 0 {
        return r;
    }
    let v = val as u64;
    match (name, net_idx) {
        (Some(name), _) => T::params().update(|p| p.set(name, v).map_err(|_| -(bindings::EINVAL as c_int))),
        (None, None) => -(bindings::EINVAL as c_int),
        (None, Some(PACING_KNOB)) => {
            if v > 1000 {
                return -(bindings::EINVAL as c_int);
            }
            PACING_PCT.store(v as usize, Ordering::Relaxed);
            0
        }
        (None, Some(n)) => {
            let mut net = [0u64; 4];
            for (i, a) in NET.iter().enumerate() {
                net[i] = a.load(Ordering::Relaxed) as u64;
            }
            if let Some(slot) = net.get_mut(n) {
                *slot = v;
            }
            let cfg = NetConfig {
                link_rate_bps: net[0].saturating_mul(1_000_000),
                intra_rtt_ns: net[1].saturating_mul(1000).min(u32::MAX as u64) as u32,
                inter_rtt_ns: net[2].saturating_mul(1000).min(u32::MAX as u64) as u32,
                mtu: net[3].min(u32::MAX as u64) as u32,
            };
            if cfg.validate().is_err() {
                return -(bindings::EINVAL as c_int);
            }
            let r = T::params().update(|p| {
                *p = <T::Params as Tunables>::from_net(&cfg);
                Ok(())
            });
            if let (0, Some(a)) = (r, NET.get(n)) {
                a.store(v as usize, Ordering::Relaxed);
            }
            r
        }
    }
}

impl<T: KernelCc> Registration<T> {
    pub fn new(module: &'static ThisModule) -> Result<Self> {
        const { check_priv_size::<T>() };
        let mut ops = bindings::tcp_congestion_ops::default();
        let name = T::NAME.as_bytes();
        if name.len() >= ops.name.len() {
            return Err(EINVAL);
        }
        for (d, s) in ops.name.iter_mut().zip(name) {
            *d = *s as _;
        }
        ops.owner = module.as_ptr();
        ops.flags = bindings::TCP_CONG_NON_RESTRICTED
            | if <T::Extra as ExtraState>::NEEDS_ECN { bindings::TCP_CONG_NEEDS_ECN } else { 0 };
        ops.init = Some(init::<T>);
        ops.release = Some(release::<T>);
        ops.cong_control = Some(cong_control::<T>);
        ops.in_ack_event = Some(in_ack_event::<T>);
        ops.set_state = Some(set_state::<T>);
        ops.cwnd_event = Some(cwnd_event::<T>);
        ops.ssthresh = Some(ssthresh::<T>);
        ops.undo_cwnd = Some(undo_cwnd::<T>);
        let mut ops = KBox::pin(ops, GFP_KERNEL)?;

        // Sysctl table: one entry per tunable, then the net_* entries.
        let names = <T::Params as Tunables>::TUNABLES;
        let n = names.len() + NET_KNOBS.len();
        let mut cnames = KVec::with_capacity(n, GFP_KERNEL)?;
        for name in Iterator::chain(names.iter(), NET_KNOBS.iter()) {
            let mut b = [0u8; 40];
            let nb = name.as_bytes();
            if nb.len() >= b.len() {
                return Err(EINVAL);
            }
            b[..nb.len()].copy_from_slice(nb);
            cnames.push(b, GFP_KERNEL)?;
        }
        let mut table = KVec::with_capacity(n, GFP_KERNEL)?;
        for (i, b) in cnames.iter().enumerate() {
            table.push(
                bindings::ctl_table {
                    procname: b.as_ptr() as *const _,
                    data: core::ptr::null_mut(),
                    maxlen: core::mem::size_of::<c_ulong>() as c_int,
                    mode: 0o644,
                    proc_handler: Some(sysctl_handler::<T>),
                    extra1: i as *mut c_void,
                    ..Default::default()
                },
                GFP_KERNEL,
            )?;
        }
        // SAFETY: `table` and the names it points to live in this
        // registration until `Drop` unregisters the table.
        let header = unsafe { bindings::register_sysctl_sz(T::SYSCTL_DIR.as_char_ptr(), table.as_mut_ptr(), table.len()) };
        if header.is_null() {
            return Err(ENOMEM);
        }

        // SAFETY: `ops` is pinned and outlives the registration (unregistered
        // in `Drop` before it is freed).
        let r = unsafe { bindings::tcp_register_congestion_control(ops.as_mut().get_unchecked_mut()) };
        if r != 0 {
            // SAFETY: registered just above.
            unsafe { bindings::unregister_sysctl_table(header) };
            return Err(Error::from_errno(r));
        }
        Ok(Self { ops, _table: table, _names: cnames, header, _t: core::marker::PhantomData })
    }
}

impl<T: KernelCc> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: both were registered in `new`; no socket can use the CC
        // any more (module refcount), so the ops can go.
        unsafe {
            bindings::tcp_unregister_congestion_control(self.ops.as_mut().get_unchecked_mut());
            bindings::unregister_sysctl_table(self.header);
        }
    }
}

/// Declares one xdcc congestion-control module: its tunables (module
/// defaults: 10 Gbit/s, 100 µs intra-DC and 10 ms inter-DC base RTTs, 1500-byte
/// MTU; the `net_*` sysctls re-derive them), its [`KernelCc`] and its
/// [`Registration`].
macro_rules! xdcc_cc_module {
    (name: $name:tt, module: $module:ident, algo: $algo:ident :: $state:ident,
     extra: $extra:ty, description: $desc:tt $(,)?) => {
        kernel::prelude::module! {
            type: $module,
            name: $name,
            author: "xdcc developers",
            description: $desc,
            license: "GPL",
        }

        static PARAMS: glue::ParamCell<algo::$algo::Params> =
            glue::ParamCell::new(algo::$algo::Params::from_net(&algo::NetConfig {
                link_rate_bps: 10_000_000_000,
                intra_rtt_ns: 100_000,
                inter_rtt_ns: 10_000_000,
                mtu: 1500,
            }));

        struct Cc;

        impl glue::KernelCc for Cc {
            type Algo = algo::$algo::$state;
            type Params = algo::$algo::Params;
            type Extra = $extra;
            const NAME: &'static kernel::str::CStr = kernel::c_str!(stringify!($algo));
            const SYSCTL_DIR: &'static kernel::str::CStr = kernel::c_str!(concat!("net/xdcc/", stringify!($algo)));
            fn params() -> &'static glue::ParamCell<Self::Params> {
                &PARAMS
            }
        }

        struct $module {
            _reg: glue::Registration<Cc>,
        }

        impl kernel::Module for $module {
            fn init(module: &'static kernel::ThisModule) -> kernel::error::Result<Self> {
                let reg = glue::Registration::<Cc>::new(module)?;
                kernel::pr_info!(concat!("registered congestion control \"", stringify!($algo), "\"\n"));
                Ok(Self { _reg: reg })
            }
        }
    };
}
