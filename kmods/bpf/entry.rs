//! BPF entry points of the xdcc algorithms: the struct_ops shim (`shim.c`)
//! calls these with the socket fields it read; all logic is the Linux
//! adapter (`algo/src/linux.rs`) and the algorithms, the same source the
//! kernel modules and the simulator build. Compiled for
//! `bpfel-unknown-none` to LLVM bitcode and inlined into the shim's programs
//! (`build.sh`): no function here survives as a BPF subprogram.
//!
//! Every entry takes at most five arguments (the BPF calling convention).
#![no_std]
#![no_main]

#[allow(dead_code)]
#[path = "../algo/src/lib.rs"]
mod algo;

use algo::linux::{CcInfo, CeEcho, Config, Flow, RateSample, Sock, Update};
use algo::CongestionControl;

/// Size of the configuration map's value (`struct xdcc_config` in shim.c).
pub use algo::linux::CONFIG_BYTES;

macro_rules! entries {
    ($cc:ident, $algo:ty, $params:ty) => {
        mod $cc {
            use super::*;
            type F = Flow<$algo>;
            type C = Config<$params>;

            /// # Safety (all entries)
            /// The shim passes valid, aligned pointers to its stack copies of
            /// the CA private area and the socket view, and to the config map
            /// value; nothing is retained after the call.
            #[export_name = concat!("xdcc_", stringify!($cc), "_init")]
            pub unsafe extern "C" fn init(flow: *mut F, cfg: *const C, s: *const Sock) {
                // SAFETY: see above.
                unsafe { flow.write(F::new(&(*cfg).params, &*s)) }
            }

            #[export_name = concat!("xdcc_", stringify!($cc), "_cong_control")]
            pub unsafe extern "C" fn cong_control(
                flow: *mut F,
                cfg: *const C,
                s: *const Sock,
                rs: *const RateSample,
                out: *mut Update,
            ) {
                // SAFETY: see above.
                unsafe { *out = (*flow).on_ack(&(*cfg).params, &(*cfg).pacing, &*s, &*rs) }
            }

            /// Returns 1 when `out` holds a new window.
            #[export_name = concat!("xdcc_", stringify!($cc), "_set_state")]
            pub unsafe extern "C" fn set_state(
                flow: *mut F,
                cfg: *const C,
                s: *const Sock,
                new_state: u32,
                out: *mut Update,
            ) -> u32 {
                // SAFETY: see above.
                match unsafe { (*flow).on_set_state(&(*cfg).params, &(*cfg).pacing, &*s, new_state as u8) } {
                    Some(u) => {
                        // SAFETY: see above.
                        unsafe { *out = u };
                        1
                    }
                    None => 0,
                }
            }

            /// Sender events. Returns 1 when `out` holds a new window.
            #[export_name = concat!("xdcc_", stringify!($cc), "_cwnd_event")]
            pub unsafe extern "C" fn cwnd_event(
                flow: *mut F,
                cfg: *const C,
                s: *const Sock,
                ev: u32,
                out: *mut Update,
            ) -> u32 {
                // SAFETY: see above.
                match unsafe { (*flow).on_cwnd_event(&(*cfg).params, &(*cfg).pacing, &*s, ev) } {
                    Some(u) => {
                        // SAFETY: see above.
                        unsafe { *out = u };
                        1
                    }
                    None => 0,
                }
            }

            /// Receiver CE events. Returns 1 when `out` holds what to do.
            #[export_name = concat!("xdcc_", stringify!($cc), "_ce_event")]
            pub unsafe extern "C" fn ce_event(
                flow: *mut F,
                ev: u32,
                rcv_nxt: u32,
                delayed_ack_pending: u32,
                out: *mut CeEcho,
            ) -> u32 {
                // SAFETY: see above.
                match unsafe { (*flow).on_ce_event(ev, rcv_nxt, delayed_ack_pending != 0) } {
                    Some(e) => {
                        // SAFETY: see above.
                        unsafe { *out = e };
                        1
                    }
                    None => 0,
                }
            }

            #[export_name = concat!("xdcc_", stringify!($cc), "_ssthresh")]
            pub unsafe extern "C" fn ssthresh(flow: *const F, s: *const Sock) -> u32 {
                // SAFETY: see above.
                unsafe { (*flow).ssthresh_pkts(&*s) }
            }

            #[export_name = concat!("xdcc_", stringify!($cc), "_undo_cwnd")]
            pub unsafe extern "C" fn undo_cwnd(flow: *mut F, cfg: *const C, s: *const Sock) -> u32 {
                // SAFETY: see above.
                unsafe { (*flow).undo_cwnd_pkts(&(*cfg).params, &*s) }
            }

            /// The flow's `CcInfo` (the flow iterator's record).
            #[export_name = concat!("xdcc_", stringify!($cc), "_info")]
            pub unsafe extern "C" fn info(flow: *const F, out: *mut CcInfo) {
                // SAFETY: see above.
                unsafe { *out = (*flow).info() }
            }

            /// Writes the default configuration (the modules' defaults).
            #[export_name = concat!("xdcc_", stringify!($cc), "_default_config")]
            pub unsafe extern "C" fn default_config(cfg: *mut C) {
                // SAFETY: see above.
                unsafe { cfg.write(C::for_net(&algo::NetConfig::LINUX_DEFAULT)) }
            }

            const _: () = assert!(core::mem::size_of::<F>() <= algo::ICSK_CA_PRIV_SIZE);
            const _: () = assert!(core::mem::size_of::<C>() <= CONFIG_BYTES);
            #[allow(dead_code)]
            fn _is_cc(_: &$algo) where $algo: CongestionControl {}
        }
    };
}

entries!(uno, algo::uno::Uno, algo::uno::Params);
entries!(gemini, algo::gemini::Gemini, algo::gemini::Params);
entries!(oscar, algo::oscar::Oscar, algo::oscar::Params);
entries!(smartt, algo::smartt::Smartt, algo::smartt::Params);
entries!(amrt, algo::amrt::Amrt, algo::amrt::Params);
entries!(dctcp, algo::dctcp::Dctcp, algo::dctcp::Params);

/// Size of `AckSample`; build.sh passes it to shim.c (`struct xdcc_ack_sample`).
pub const ACK_SAMPLE_BYTES: usize = 48;

/// UnoCC's complete ACK processing, the body of the global BPF function
/// `xdcc_uno_ack_full` (shim.c; `algo::uno::bpf_global`). Its pointer
/// arguments are typed there as the private area (`Flow`'s first field is the
/// algorithm's state), the configuration (`Config`'s first field is the
/// params) and an `AckSample`: the verifier checks each call passes that much
/// memory.
///
/// # Safety
/// Valid, aligned pointers to an `Uno`, its `Params` and an `AckSample`.
#[no_mangle]
pub unsafe extern "C" fn xdcc_uno_ack_full_body(
    state: *mut algo::uno::Uno,
    p: *const algo::uno::Params,
    s: *const algo::AckSample,
) {
    // SAFETY: see above.
    unsafe { (*state).on_ack_full(&*p, &*s) }
}
const _: () = assert!(core::mem::offset_of!(Flow<algo::uno::Uno>, algo) == 0);
const _: () = assert!(core::mem::offset_of!(Config<algo::uno::Params>, params) == 0);
const _: () = assert!(core::mem::size_of::<algo::AckSample>() == ACK_SAMPLE_BYTES);

/// Bodies of the arithmetic helpers that the BPF build calls as global BPF
/// functions (`algo::fixed::bpf_global`; the wrappers are in shim.c).
#[no_mangle]
pub extern "C" fn xdcc_mul_sat_body(a: u64, b: u64) -> u64 {
    algo::fixed::mul_sat_body(a, b)
}

#[no_mangle]
pub extern "C" fn xdcc_mul_div_body(a: u64, b: u64, c: u64) -> u64 {
    algo::fixed::mul_div_body(a, b, c)
}

/// `i64::MIN` for a degenerate batch (no spread in x).
#[no_mangle]
pub extern "C" fn xdcc_slope_q16_body(n: i64, sum_x: i64, sum_y: i64, sum_xx: i64, sum_xy: i64) -> i64 {
    match algo::fixed::slope_q16_body(n, sum_x, sum_y, sum_xx, sum_xy) {
        Some(q) => q as i64,
        None => i64::MIN,
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Unreachable: the algorithms never panic (overflow checks are off in
    // this build; the crate's tests run with them on).
    loop {}
}
