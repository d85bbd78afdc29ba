// SPDX-License-Identifier: GPL-2.0

//! Rust-for-Linux backend of the xdcc congestion controls, in the shape of
//! the Rust-for-Linux TCP CC abstraction (`rust/kernel/net/tcp/cong.rs`,
//! PR #1062):
//!
//! - [`Sk`], a safe wrapper of the socket a callback is running for: the
//!   only code here that touches `tcp_sock` fields, each access with its
//!   safety argument; every callback body is then safe code;
//! - [`KernelCc`], one per module, naming the algorithm and its tunables;
//! - [`Registration`] owns only the `tcp_congestion_ops`; [`Sysctls`] owns
//!   the sysctl table.
//!
//! What the callbacks *mean* is not here: `kmods/algo/src/linux.rs` maps
//! them onto the algorithm once, for this backend and the BPF struct_ops
//! backend alike. This file reads kernel fields into that adapter's plain
//! values and writes its results back.
//!
//! The configuration (`linux::Config`: tunables, network description, pacing
//! ratios — the same value the BPF CCs keep in their map) lives in a
//! [`ConfigCell`] per module, outside the per-socket state: two copies, an
//! index readers follow, and RCU between a
//! writer's flip and its next reuse of the old copy. Every reader holds an
//! [`RcuReadGuard`] (the type makes it so): callbacks run in softirq *and* in
//! process context (backlog ACKs from `release_sock()`, `CA_EVENT_TX_START`
//! from `tcp_sendmsg()`, `setsockopt(TCP_CONGESTION)`), and on a
//! preemptible-RCU kernel only an explicit read-side section keeps a
//! preemptible reader inside the writer's grace period. Readers take no lock
//! and never allocate.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ffi::{c_int, c_ulong, c_void};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use kernel::bindings;
use kernel::prelude::*;
use kernel::str::CStr;

use super::algo::linux::{self, Flow, RateSample, Sock, Update};
use super::algo::{CongestionControl, Tunables};

/// One xdcc congestion control as the kernel sees it.
pub trait KernelCc: 'static {
    /// The algorithm from `kmods/algo`.
    type Algo: CongestionControl<Params = Self::Params> + Copy;
    /// Its tunables.
    type Params: Tunables + 'static;
    /// The algorithm reads ECN marks: ECT on every packet
    /// (`TCP_CONG_NEEDS_ECN`) and the DCTCP-style CE echo on receive.
    const NEEDS_ECN: bool;
    /// Name in `tcp_available_congestion_control` (at most 15 bytes).
    const NAME: &'static CStr;
    /// Sysctl directory, e.g. `net/xdcc/uno`.
    const SYSCTL_DIR: &'static CStr;
    /// The module's configuration: tunables, network description, pacing
    /// ratios (a `static` in the module file).
    fn config() -> &'static ConfigCell<linux::Config<Self::Params>>;
}

/// The socket a callback of CC `T` runs for, borrowed for the callback
/// (`'a`), as Rust-for-Linux's `cong::Sock<'a, T>`.
///
/// Invariant: `sk` is a TCP socket on CC `T` that the stack is processing,
/// locked (or in its softirq context) for `'a`, whose CA private area holds
/// an initialized `Flow<T::Algo>` (between `init` and `release`). An `Sk` is
/// only created at the top of a callback and never escapes it; every
/// callback body is then safe code.
pub struct Sk<'a, T: KernelCc> {
    sk: *mut bindings::sock,
    _borrow: PhantomData<&'a mut bindings::sock>,
    _cc: PhantomData<T>,
}

/// The size of the field `field` points to, at compile time
/// (`size_of_field(|s: &S| &s.f)`; the C side's `sizeof_field`).
const fn size_of_field<S, F>(_field: fn(&S) -> &F) -> usize {
    core::mem::size_of::<F>()
}

// The kernel's CA private area (`ICSK_CA_PRIV_SIZE`, a `sizeof_field` that
// bindgen cannot export) is the size the algorithm crate sizes every state
// for (`fits_ca_priv`): checked when the module is built.
const _: () = assert!(
    size_of_field(|c: &bindings::inet_connection_sock| &c.icsk_ca_priv) == super::algo::ICSK_CA_PRIV_SIZE
);

impl<'a, T: KernelCc> Sk<'a, T> {
    /// # Safety
    /// `sk` must satisfy the type invariant for `'a`.
    unsafe fn new(sk: *mut bindings::sock) -> Self {
        Self { sk, _borrow: PhantomData, _cc: PhantomData }
    }

    /// `init`: writes the flow's initial state into the CA private area,
    /// from which point the type invariant holds.
    ///
    /// # Safety
    /// `sk` is a TCP socket being assigned CC `T`, locked for `'a`; its CA
    /// private area is ours from now until `release`.
    unsafe fn init(sk: *mut bindings::sock, flow: impl FnOnce(&Sock) -> Flow<T::Algo>) -> Self {
        const { assert!(linux::fits_ca_priv::<T::Algo>()) };
        // SAFETY: the caller's guarantee, except that the area does not hold
        // a `Flow` yet: only `view` is used before it does.
        let sk = unsafe { Self::new(sk) };
        let f = flow(&sk.view());
        // SAFETY: the area is 8-byte aligned (an array of u64), large enough
        // (checked above) and ours; a plain write of plain data.
        unsafe { core::ptr::write(bindings::inet_csk_ca(sk.sk) as *mut Flow<T::Algo>, f) };
        sk
    }

    /// The per-socket CC state.
    fn flow(&mut self) -> &mut Flow<T::Algo> {
        const { assert!(linux::fits_ca_priv::<T::Algo>()) };
        // (The area is 8-byte aligned and large enough: checked above.)
        // SAFETY: it holds an initialized `Flow<T::Algo>` (invariant), the socket is ours for `'a`,
        // and the borrow of `self` keeps the reference unique.
        unsafe { &mut *(bindings::inet_csk_ca(self.sk) as *mut Flow<T::Algo>) }
    }

    fn tp(&self) -> *mut bindings::tcp_sock {
        // SAFETY: `sk` is a TCP socket (invariant); `tcp_sk` is a cast.
        unsafe { bindings::tcp_sk(self.sk) }
    }

    fn icsk(&self) -> *mut bindings::inet_connection_sock {
        // SAFETY: as above; `inet_csk` is a cast.
        unsafe { bindings::inet_csk(self.sk) }
    }

    /// The adapter's view of the socket.
    fn view(&self) -> Sock {
        let (tp, icsk) = (self.tp(), self.icsk());
        // SAFETY: `tp`/`icsk` point into the locked socket (invariant); plain
        // field reads. `jiffies` is the kernel's tick counter, read once.
        unsafe {
            let now_jiffies = core::ptr::read_volatile(core::ptr::addr_of!(bindings::jiffies)) as u32;
            Sock {
                now_us: (*tp).tcp_mstamp,
                mss: (*tp).mss_cache,
                srtt_us8: (*tp).srtt_us,
                snd_cwnd_clamp: (*tp).snd_cwnd_clamp,
                delivered: (*tp).delivered,
                packets_in_flight: bindings::tcp_packets_in_flight(tp),
                ca_state: (*icsk).icsk_ca_state(),
                cwnd_limited: bindings::tcp_is_cwnd_limited(self.sk) as u8,
                ecn_ok: ((*tp).ecn_flags & bindings::TCP_ECN_OK as u8 != 0) as u8,
                _pad: 0,
                idle_jiffies: now_jiffies.wrapping_sub((*tp).lsndtime),
                rto_jiffies: (*icsk).icsk_rto,
                snd_cwnd: (*tp).snd_cwnd,
                _pad2: 0,
            }
        }
    }

    fn rate_sample(&self, rs: &bindings::rate_sample, flag: c_int) -> RateSample {
        // SAFETY: `tp` points into the locked socket; a field read.
        let send_time_us = unsafe { (*self.tp()).first_tx_mstamp };
        RateSample {
            send_time_us,
            rtt_us: rs.rtt_us as i64,
            acked_sacked: rs.acked_sacked,
            prior_delivered: rs.prior_delivered,
            is_app_limited: rs.is_app_limited as u8,
            _pad: [0; 3],
            flag,
        }
    }

    /// Writes the adapter's result back.
    fn apply(&mut self, u: &Update) {
        let tp = self.tp();
        // SAFETY: the socket is locked (invariant); these are the writes the
        // kernel's own CCs make from the same callbacks.
        unsafe {
            if u.cwnd_pkts != 0 {
                bindings::tcp_snd_cwnd_set(tp, u.cwnd_pkts);
            }
            if u.ssthresh_pkts != 0 {
                (*tp).snd_ssthresh = u.ssthresh_pkts;
            }
            if u.pacing_rate != 0 {
                bindings::tcp_set_pacing_rate(self.sk, u.pacing_rate);
            }
        }
    }

    /// Receiver side of the CE echo: do what the adapter asks.
    fn ce_echo(&mut self, e: &linux::CeEcho) {
        let (tp, icsk) = (self.tp(), self.icsk());
        // SAFETY: the socket is locked; `__tcp_send_ack` and the flag writes
        // are what `tcp_dctcp.c` does from the same callback.
        unsafe {
            if e.flush {
                set_demand_cwr(tp, e.flush_ce);
                bindings::__tcp_send_ack(self.sk, e.flush_ack_seq, 0);
            }
            if e.ack_now {
                (*icsk).icsk_ack.pending |= bindings::inet_csk_ack_state_t_ICSK_ACK_NOW as u8;
            }
            set_demand_cwr(tp, e.demand_cwr);
        }
    }

    fn delayed_ack_pending(&self) -> bool {
        // SAFETY: a field read of the locked socket.
        unsafe { (*self.icsk()).icsk_ack.pending & bindings::inet_csk_ack_state_t_ICSK_ACK_TIMER as u8 != 0 }
    }

    fn rcv_nxt(&self) -> u32 {
        // SAFETY: a field read of the locked socket.
        unsafe { (*self.tp()).rcv_nxt }
    }

    fn request_pacing(&mut self) {
        // SAFETY: plain kernel call on the locked socket: TCP paces
        // internally (without fq) once asked to.
        unsafe { bindings::tcp_request_pacing(self.sk) }
    }

    /// ECN was not negotiated (a peer with `tcp_ecn=0`, or a middlebox that
    /// clears the handshake's ECN bits): stop sending ECT. For a
    /// `TCP_CONG_NEEDS_ECN` CC the stack sets ECT on the socket for the SYN
    /// (`tcp_ecn_send_syn()`) and again right after `init`
    /// (`tcp_init_congestion_control()` → `INET_ECN_xmit()`), whether or
    /// not the handshake negotiated ECN, so every packet would leave ECT(0):
    /// a RED/ECN port then marks CE instead of dropping, the peer echoes
    /// nothing, and the flow gets neither signal. DCTCP avoids it by
    /// swapping itself for Reno in `init`; xdcc keeps its algorithm and
    /// clears ECT (`INET_ECN_dontxmit()`) on the first transmission and on
    /// ACKs. A no-op when ECN was negotiated or ECT is already clear.
    fn stop_ect_without_ecn(&mut self) {
        const INET_ECN_MASK: u8 = 3;
        const AF_INET6: u16 = 10;
        // `tcp_sock` starts with `inet_sock`, whose `tos` and (IPv6)
        // `pinet6->tclass` are plain fields; INET_ECN_dontxmit() clears them
        // the same way.
        // SAFETY: `sk` is a locked full TCP socket (invariant), so both casts and field accesses are valid.
        unsafe {
            let inet = self.sk as *mut bindings::inet_sock;
            if (*self.tp()).ecn_flags & bindings::TCP_ECN_OK as u8 != 0 || (*inet).tos & INET_ECN_MASK == 0 {
                return;
            }
            (*inet).tos &= !INET_ECN_MASK;
            let np = (*inet).pinet6;
            if (*self.sk).__sk_common.skc_family == AF_INET6 && !np.is_null() {
                (*np).tclass &= !INET_ECN_MASK;
            }
        }
    }
}

/// # Safety
/// `tp` is a locked TCP socket.
unsafe fn set_demand_cwr(tp: *mut bindings::tcp_sock, on: bool) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        if on {
            (*tp).ecn_flags |= bindings::TCP_ECN_DEMAND_CWR as u8;
        } else {
            (*tp).ecn_flags &= !(bindings::TCP_ECN_DEMAND_CWR as u8);
        }
    }
}

/// An RCU read-side critical section, from `new()` to drop
/// (`rcu_read_lock()`/`rcu_read_unlock()`, as mainline's
/// `kernel::sync::rcu::Guard`). Not `Send`: it is released on the CPU and
/// task that took it. Code holding it must not sleep.
pub struct RcuReadGuard {
    _not_send: core::marker::PhantomData<*mut ()>,
}

impl RcuReadGuard {
    #[inline]
    pub fn new() -> Self {
        // SAFETY: plain kernel call; paired with the `rcu_read_unlock()` in
        // `drop`, on the same task (the guard is not `Send`).
        unsafe { bindings::rcu_read_lock() };
        Self { _not_send: core::marker::PhantomData }
    }
}

impl Drop for RcuReadGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this guard's `new()` took the read lock on this task.
        unsafe { bindings::rcu_read_unlock() };
    }
}

/// The module's tunables, read lock-free on the ACK path (see module docs).
pub struct ConfigCell<P> {
    slots: [UnsafeCell<P>; 2],
    active: AtomicUsize,
    writer: AtomicBool,
}

// SAFETY: readers only read the active slot, inside an RCU read-side
// section (`current` takes an `RcuReadGuard`); a writer (serialized by
// `writer`) only writes the inactive slot, publishes it with a release store
// and waits for an RCU grace period before it can write the old slot again,
// so no reader can still be reading a slot that is being written.
unsafe impl<P: Send> Sync for ConfigCell<P> {}

impl<P: Copy> ConfigCell<P> {
    pub const fn new(p: P) -> Self {
        Self { slots: [UnsafeCell::new(p), UnsafeCell::new(p)], active: AtomicUsize::new(0), writer: AtomicBool::new(false) }
    }

    /// The current parameters, borrowed for as long as the caller's RCU
    /// read-side section lasts.
    #[inline]
    pub fn current<'a>(&'a self, _rcu: &'a RcuReadGuard) -> &'a P {
        let i = self.active.load(Ordering::Acquire) & 1;
        // (`_rcu` lives as long as the borrow: no grace period ends before it.)
        // SAFETY: see `Sync` above: a slot active in this read section is not rewritten.
        unsafe { &*self.slots[i].get() }
    }

    /// Applies `f` to a copy of the current parameters and publishes it if
    /// `f` succeeds; on error nothing changes. Returns `-EBUSY` if another
    /// writer is active. May sleep (RCU grace period).
    pub fn update(&self, f: impl FnOnce(&mut P) -> core::result::Result<(), c_int>) -> c_int {
        if self.writer.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return -(bindings::EBUSY as c_int);
        }
        let i = self.active.load(Ordering::Relaxed) & 1;
        // SAFETY: only a writer writes a slot, and we are the only writer.
        let mut next = unsafe { *self.slots[i].get() };
        let r = match f(&mut next) {
            Ok(()) => {
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

// The callbacks: each turns the stack's raw socket into an `Sk` (its one
// `unsafe`, argued from the stack's calling contract) and is safe code after.

unsafe extern "C" fn init<T: KernelCc>(sk: *mut bindings::sock) {
    let rcu = RcuReadGuard::new();
    // SAFETY: the stack calls `init` for a locked TCP socket being assigned
    // this CC; the CA private area is ours from now until `release`.
    let mut sk = unsafe { Sk::<T>::init(sk, |view| Flow::new(&T::config().current(&rcu).params, view)) };
    sk.request_pacing();
}

unsafe extern "C" fn release<T: KernelCc>(_sk: *mut bindings::sock) {
    // The state is plain data: nothing to free.
}

unsafe extern "C" fn cong_control<T: KernelCc>(
    sk: *mut bindings::sock,
    _ack: u32,
    flag: c_int,
    rs: *const bindings::rate_sample,
) {
    // SAFETY: called by the stack between init and release with a locked
    // socket on this CC and a valid rate sample.
    let (mut sk, rs) = unsafe { (Sk::<T>::new(sk), &*rs) };
    let (view, sample) = (sk.view(), sk.rate_sample(rs, flag));
    let rcu = RcuReadGuard::new();
    let cfg = T::config().current(&rcu);
    let u = sk.flow().on_ack(&cfg.params, &cfg.pacing, &view, &sample);
    sk.apply(&u);
    if T::NEEDS_ECN && view.ecn_ok == 0 {
        sk.stop_ect_without_ecn();
    }
}

unsafe extern "C" fn set_state<T: KernelCc>(sk: *mut bindings::sock, new_state: u8) {
    // SAFETY: called by the stack between init and release, socket locked.
    let mut sk = unsafe { Sk::<T>::new(sk) };
    let view = sk.view();
    let rcu = RcuReadGuard::new();
    let cfg = T::config().current(&rcu);
    if let Some(u) = sk.flow().on_set_state(&cfg.params, &cfg.pacing, &view, new_state) {
        sk.apply(&u);
    }
}

unsafe extern "C" fn cwnd_event<T: KernelCc>(sk: *mut bindings::sock, ev: bindings::tcp_ca_event) {
    // SAFETY: called by the stack between init and release, socket locked.
    let mut sk = unsafe { Sk::<T>::new(sk) };
    let (view, rcv_nxt, pending) = (sk.view(), sk.rcv_nxt(), sk.delayed_ack_pending());
    if T::NEEDS_ECN && view.ecn_ok == 0 {
        // (CA_EVENT_TX_START comes before the first data packet's IP header
        // is built: that packet already leaves without ECT.)
        sk.stop_ect_without_ecn();
    }
    if T::NEEDS_ECN {
        if let Some(e) = sk.flow().on_ce_event(ev as u32, rcv_nxt, pending) {
            sk.ce_echo(&e);
            return;
        }
    }
    let rcu = RcuReadGuard::new();
    let cfg = T::config().current(&rcu);
    if let Some(u) = sk.flow().on_cwnd_event(&cfg.params, &cfg.pacing, &view, ev as u32) {
        sk.apply(&u);
    }
}

unsafe extern "C" fn ssthresh<T: KernelCc>(sk: *mut bindings::sock) -> u32 {
    // SAFETY: called by the stack between init and release, socket locked.
    let mut sk = unsafe { Sk::<T>::new(sk) };
    let view = sk.view();
    sk.flow().ssthresh_pkts(&view)
}

unsafe extern "C" fn undo_cwnd<T: KernelCc>(sk: *mut bindings::sock) -> u32 {
    // SAFETY: called by the stack between init and release, socket locked.
    let mut sk = unsafe { Sk::<T>::new(sk) };
    let view = sk.view();
    let rcu = RcuReadGuard::new();
    sk.flow().undo_cwnd_pkts(&T::config().current(&rcu).params, &view)
}

/// `INET_DIAG_VEGASINFO` (uapi `linux/inet_diag.h`): the request bit by
/// which `ss -i` and `xdcc flows` ask for the CC's `get_info`.
const INET_DIAG_VEGASINFO: u32 = 3;
/// `sizeof(union tcp_cc_info)` (uapi `linux/inet_diag.h`; its largest
/// member is `struct tcp_bbr_info`, five u32). Opaque in the bindings.
const TCP_CC_INFO_BYTES: usize = 20;

/// A copy of a socket's CC state, read without the socket lock (`get_info`
/// runs under RCU only, as DCTCP's reads its fields): a concurrent ACK may
/// make the copy a mix of two updates, never invalid (plain integers).
///
/// # Safety
/// `sk` is a TCP socket on CC `T` whose CA private area holds a
/// `Flow<T::Algo>` or is zeroed (it is zeroed when the CC is assigned,
/// before `init`), and stays mapped for the call.
unsafe fn flow_snapshot<T: KernelCc>(sk: *mut bindings::sock) -> Flow<T::Algo> {
    const { assert!(linux::fits_ca_priv::<T::Algo>()) };
    // SAFETY: guaranteed by the caller (an all-zero `Flow` is valid:
    // integers and bools only); aligned and large enough as above.
    unsafe { core::ptr::read_volatile(bindings::inet_csk_ca(sk) as *const Flow<T::Algo>) }
}

unsafe extern "C" fn get_info<T: KernelCc>(
    sk: *mut bindings::sock,
    ext: u32,
    attr: *mut c_int,
    info: *mut bindings::tcp_cc_info,
) -> usize {
    if ext & (1 << (INET_DIAG_VEGASINFO - 1)) == 0 {
        return 0;
    }
    const { assert!(TCP_CC_INFO_BYTES >= linux::CcInfo::BYTES) };
    // SAFETY: inet_diag calls this under RCU for a socket on this CC, whose
    // CA area holds our `Flow` or is still zeroed.
    let flow = unsafe { flow_snapshot::<T>(sk) };
    // A socket whose `init` has not run yet (an active open before its
    // handshake completes) has no state to report.
    if !flow.is_live() {
        return 0;
    }
    let bytes = flow.info().to_bytes();
    // SAFETY: `info` points to a `union tcp_cc_info` (at least as large as
    // `CcInfo`, checked above) and `attr` to an int, both the caller's.
    unsafe {
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), info as *mut u8, bytes.len());
        *attr = linux::INET_DIAG_XDCC as c_int;
    }
    bytes.len()
}

/// The sysctl files, entry `idx` of the table: one per knob of
/// `linux::Config` (the algorithm's tunables, then `net_*` files that
/// re-derive every tunable from the papers' rules for a new network, then
/// the two window-pacing ratios).
fn knob_name<T: KernelCc>(idx: usize) -> Option<&'static str> {
    linux::Config::<T::Params>::knob_names().nth(idx)
}

fn einval() -> c_int {
    -(bindings::EINVAL as c_int)
}

/// Current value of sysctl entry `idx`.
fn knob_value<T: KernelCc>(idx: usize) -> Option<u64> {
    T::config().current(&RcuReadGuard::new()).get(knob_name::<T>(idx)?)
}

/// Writes sysctl entry `idx` by `linux::Config::set` (the rule of every
/// backend): validated as a whole, all or nothing.
fn knob_write<T: KernelCc>(idx: usize, v: u64) -> c_int {
    let Some(name) = knob_name::<T>(idx) else { return einval() };
    T::config().update(|c| {
        *c = c.set(name, v).map_err(|_| einval())?;
        Ok(())
    })
}

unsafe extern "C" fn sysctl_handler<T: KernelCc>(
    table: *const bindings::ctl_table,
    write: c_int,
    buffer: *mut c_void,
    lenp: *mut usize,
    ppos: *mut bindings::loff_t,
) -> c_int {
    // SAFETY: `table` is one of our entries; `extra1` holds its index.
    let idx = unsafe { (*table).extra1 as usize };
    let Some(current) = knob_value::<T>(idx) else { return einval() };
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
    knob_write::<T>(idx, val as u64)
}

/// The module's sysctl table under `/proc/sys/<SYSCTL_DIR>/`: one file per
/// tunable, the `net_*` files and the pacing ratios. Unregistered on drop.
pub struct Sysctls<T: KernelCc> {
    _table: KVec<bindings::ctl_table>,
    _names: KVec<[u8; 40]>,
    header: *mut bindings::ctl_table_header,
    _t: core::marker::PhantomData<T>,
}

// SAFETY: only kernel objects that may be dropped from module exit.
unsafe impl<T: KernelCc> Send for Sysctls<T> {}
// SAFETY: no interior mutability is exposed.
unsafe impl<T: KernelCc> Sync for Sysctls<T> {}

impl<T: KernelCc> Sysctls<T> {
    pub fn register() -> Result<Self> {
        let n = linux::Config::<T::Params>::knob_names().count();
        let mut cnames = KVec::with_capacity(n, GFP_KERNEL)?;
        for name in linux::Config::<T::Params>::knob_names() {
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
        // SAFETY: `table` and the names it points to live in this value
        // until `Drop` unregisters the table.
        let header = unsafe { bindings::register_sysctl_sz(T::SYSCTL_DIR.as_char_ptr(), table.as_mut_ptr(), table.len()) };
        if header.is_null() {
            return Err(ENOMEM);
        }
        Ok(Self { _table: table, _names: cnames, header, _t: core::marker::PhantomData })
    }
}

impl<T: KernelCc> Drop for Sysctls<T> {
    fn drop(&mut self) {
        // SAFETY: registered in `register`.
        unsafe { bindings::unregister_sysctl_table(self.header) };
    }
}

/// Owns the registered `tcp_congestion_ops`; unregisters them on drop.
pub struct Registration<T: KernelCc> {
    ops: Pin<KBox<bindings::tcp_congestion_ops>>,
    _t: core::marker::PhantomData<T>,
}

// SAFETY: the ops are only handed to the kernel, which synchronizes access.
unsafe impl<T: KernelCc> Send for Registration<T> {}
// SAFETY: no interior mutability is exposed.
unsafe impl<T: KernelCc> Sync for Registration<T> {}

impl<T: KernelCc> Registration<T> {
    pub fn new(module: &'static ThisModule) -> Result<Self> {
        // The name and its NUL fit `TCP_CA_NAME_MAX`, checked when the module is built.
        const { assert!(T::NAME.len() < bindings::TCP_CA_NAME_MAX as usize) };
        let mut ops = bindings::tcp_congestion_ops::default();
        let name = T::NAME.as_bytes();
        for (d, s) in ops.name.iter_mut().zip(name) {
            *d = *s as _;
        }
        ops.owner = module.as_ptr();
        ops.flags = bindings::TCP_CONG_NON_RESTRICTED | if T::NEEDS_ECN { bindings::TCP_CONG_NEEDS_ECN } else { 0 };
        ops.init = Some(init::<T>);
        ops.release = Some(release::<T>);
        ops.cong_control = Some(cong_control::<T>);
        ops.set_state = Some(set_state::<T>);
        ops.cwnd_event = Some(cwnd_event::<T>);
        ops.ssthresh = Some(ssthresh::<T>);
        ops.undo_cwnd = Some(undo_cwnd::<T>);
        ops.get_info = Some(get_info::<T>);
        let mut ops = KBox::pin(ops, GFP_KERNEL)?;
        // SAFETY: `ops` is pinned and outlives the registration (unregistered
        // in `Drop` before it is freed).
        let r = unsafe { bindings::tcp_register_congestion_control(ops.as_mut().get_unchecked_mut()) };
        if r != 0 {
            return Err(Error::from_errno(r));
        }
        Ok(Self { ops, _t: core::marker::PhantomData })
    }
}

impl<T: KernelCc> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: registered in `new`; no socket can use the CC any more
        // (module refcount), so the ops can go.
        unsafe { bindings::tcp_unregister_congestion_control(self.ops.as_mut().get_unchecked_mut()) };
    }
}

/// Declares one xdcc congestion-control module: its tunables (module
/// defaults: 10 Gbit/s, 100 µs intra-DC and 10 ms inter-DC base RTTs, 1500-byte
/// MTU; the `net_*` sysctls re-derive them), its [`KernelCc`], its sysctls and
/// its [`Registration`].
macro_rules! xdcc_cc_module {
    (name: $name:tt, module: $module:ident, algo: $algo:ident :: $state:ident,
     description: $desc:tt $(,)?) => {
        kernel::prelude::module! {
            type: $module,
            name: $name,
            author: "xdcc developers",
            description: $desc,
            license: "GPL",
        }

        static CONFIG: glue::ConfigCell<algo::linux::Config<algo::$algo::Params>> =
            glue::ConfigCell::new(algo::linux::Config {
                params: algo::$algo::Params::from_net(&algo::NetConfig::LINUX_DEFAULT),
                pacing: <algo::$algo::Params as algo::Tunables>::WINDOW_PACING,
                net: algo::NetConfig::LINUX_DEFAULT,
            });

        struct Cc;

        impl glue::KernelCc for Cc {
            type Algo = algo::$algo::$state;
            type Params = algo::$algo::Params;
            // From the one CC list (algo::CCS).
            const NEEDS_ECN: bool = algo::needs_ecn(<algo::$algo::$state as algo::CongestionControl>::NAME);
            const NAME: &'static kernel::str::CStr = kernel::c_str!(stringify!($algo));
            const SYSCTL_DIR: &'static kernel::str::CStr = kernel::c_str!(concat!("net/xdcc/", stringify!($algo)));
            fn config() -> &'static glue::ConfigCell<algo::linux::Config<Self::Params>> {
                &CONFIG
            }
        }

        struct $module {
            // Dropped in order: the CC goes before its tunables.
            _reg: glue::Registration<Cc>,
            _sysctls: glue::Sysctls<Cc>,
        }

        impl kernel::Module for $module {
            fn init(module: &'static kernel::ThisModule) -> kernel::error::Result<Self> {
                let sysctls = glue::Sysctls::<Cc>::register()?;
                let reg = glue::Registration::<Cc>::new(module)?;
                kernel::pr_info!(concat!("registered congestion control \"", stringify!($algo), "\"\n"));
                Ok(Self { _reg: reg, _sysctls: sysctls })
            }
        }
    };
}
