//! The rerouter (UnoLB / PLB): on an RTO, after `lossy_rounds` rounds with
//! retransmissions or `congested_rounds` rounds with an ECE fraction above the
//! threshold, a flow gets a new path id, at most once per
//! `min_interval_base_rtts` base RTTs: a random other id that no flow to the
//! same destination left on an RTO or lossy rounds within the window
//! (`failed_window_ns`: for a flow still timing out, its whole outage), ids
//! nobody used lately counting as good. (Uno's Alg. 2 prefers "a subflow
//! that has recently received ACKs"; preferring only those never tried a
//! healed path again: see [`reroute`].) The path id becomes the IPv6 flow
//! label on egress (`telemetry.rs`), which ECMP hashes.

use aya_ebpf::{macros::map, maps::LruHashMap, programs::SockOpsContext};
use aya_log_ebpf::info;
use xdcc_common::{failed_window_ns, Config, FlowKey, FlowStats, PathHealth, RerouteReason, MAX_DESTS, MAX_FORCED, PATHS};

use crate::{below, count, random};

/// Per destination address (IPv4-mapped IPv6): which path ids are healthy.
#[map]
static PATH_HEALTH: LruHashMap<[u8; 16], PathHealth> = LruHashMap::with_max_entries(MAX_DESTS, 0);
/// Flows the operator asked to move (`xdcc reroute force`).
#[map]
static FORCE: LruHashMap<FlowKey, u32> = LruHashMap::with_max_entries(MAX_FORCED, 0);

/// Settling rounds after a move: the recovery of what was lost on the old
/// path does not count against the new one.
const SETTLE_ROUNDS: u32 = 2;
/// Random draws when looking for a healthy path.
const PICK_TRIES: u32 = 4;

/// A destination seen for the first time: no path known good or bad yet.
static NEW_DESTINATION: PathHealth =
    PathHealth { last_good_ns: [0; PATHS as usize], last_bad_ns: [0; PATHS as usize], next_subflow: 0, _pad: 0 };

/// A new flow's path id: the destination's next subflow id (UnoLB spreads an
/// application's connections over distinct paths) or a hash of the ports.
pub(crate) fn first_path(key: &FlowKey, cfg: &Config, now: u64) -> u32 {
    let paths = cfg.paths.clamp(1, PATHS);
    if cfg.spread_subflows == 0 {
        let h = (key.local_port as u32 ^ ((key.remote_port as u32) << 16)).wrapping_mul(0x9e37_79b1);
        return below(h, paths);
    }
    match PATH_HEALTH.get_ptr_mut(&key.remote_addr) {
        Some(h) => {
            // SAFETY: live map value; a racing connect to the same peer may
            // get the same id, which only makes the spreading less even.
            let h = unsafe { &mut *h };
            let id = if h.next_subflow < paths { h.next_subflow } else { 0 };
            h.next_subflow = if id + 1 < paths { id + 1 } else { 0 };
            id
        }
        None => {
            let id = below(random(), paths);
            // (From a zeroed constant, then set in place: the value is too
            // large for the BPF stack.)
            let _ = now;
            let _ = PATH_HEALTH.insert(&key.remote_addr, &NEW_DESTINATION, 0);
            if let Some(h) = PATH_HEALTH.get_ptr_mut(&key.remote_addr) {
                // SAFETY: live map value, as above.
                unsafe { (*h).next_subflow = if id + 1 < paths { id + 1 } else { 0 } };
            }
            id
        }
    }
}

/// The operator asked to move this flow.
#[inline(always)]
pub(crate) fn forced(key: &FlowKey) -> bool {
    // SAFETY: read of a live map value.
    unsafe { FORCE.get(key).is_some() }
}

pub(crate) fn mark_healthy(dest: &[u8; 16], path: u32, now: u64) {
    if let Some(h) = PATH_HEALTH.get_ptr_mut(dest) {
        // SAFETY: live map value; a racing writer stores a similar time.
        let h = unsafe { &mut *h };
        let i = core::hint::black_box(path) as usize;
        if i < PATHS as usize {
            h.last_good_ns[i] = now;
        }
    }
}

/// Moves the flow to another path id (IPv6 only: IPv4 has no flow label).
/// Returns the flow's path id afterwards. (A value the callers keep
/// (`black_box`), not `()`: LLVM may compile this as a BPF subprogram, and
/// one whose unused R0 still holds a stack pointer at exit is refused by the
/// verifier, "cannot return stack pointer to the caller".)
pub(crate) fn reroute(ctx: &SockOpsContext, key: &FlowKey, st: &mut FlowStats, cfg: &Config, reason: RerouteReason, now: u64) -> u32 {
    if cfg.reroute_enabled == 0 || key.family != 6 {
        let _ = FORCE.remove(key);
        return st.path_id;
    }
    // (products of a u32 and ≤ 1000 · 1000 cannot overflow u64; BPF has no
    // 128-bit multiply for checked arithmetic)
    let base_rtt_ns = (st.min_rtt_us as u64).wrapping_mul(1000);
    let min_gap = base_rtt_ns.wrapping_mul(cfg.min_interval_base_rtts.min(1000) as u64);
    if st.last_reroute_ns != 0 && now.wrapping_sub(st.last_reroute_ns) < min_gap {
        return st.path_id;
    }
    let paths = cfg.paths.clamp(2, PATHS);
    let old = st.path_id;
    // Random other ids, up to PICK_TRIES of them; the first one that no flow
    // to this destination left on an RTO or lossy rounds within the window
    // wins, else the first draw. Ids nobody has used lately count as good:
    // preferring only ids that recently delivered (UnoLB's option) never
    // tried a failed path again after it healed, and left it empty
    // (`bench/reroute-paths.sh`). (Sampling keeps the verifier's work
    // constant.)
    let failed = matches!(reason, RerouteReason::Rto | RerouteReason::Loss);
    let rto_again = reason as u32 == RerouteReason::Rto as u32
        && st.last_reason == RerouteReason::Rto as u32
        && st.last_reroute_ns != 0;
    let window =
        failed_window_ns((cfg.healthy_window_us as u64).wrapping_mul(1000), rto_again, now.wrapping_sub(st.last_reroute_ns));
    let health = PATH_HEALTH.get_ptr_mut(&key.remote_addr);
    if let Some(h) = health {
        let i = core::hint::black_box(old) as usize;
        if failed && i < PATHS as usize {
            // SAFETY: live map value; a racing writer stores a similar time.
            unsafe { (*h).last_bad_ns[i] = now };
        }
    }
    let mut new = other_path(old, paths);
    for _ in 0..PICK_TRIES {
        let cand = other_path(old, paths);
        if let Some(h) = health {
            let i = core::hint::black_box(cand) as usize;
            if i < PATHS as usize {
                // SAFETY: live map value, read only here.
                let t = unsafe { (*h).last_bad_ns[i] };
                if t == 0 || now.wrapping_sub(t) > window {
                    new = cand;
                    break;
                }
            }
        }
    }
    st.path_id = if new < paths { new } else { 0 };
    st.reroutes = st.reroutes.wrapping_add(1);
    st.last_reason = reason as u32;
    st.last_reroute_ns = now;
    let _ = FORCE.remove(key);
    st.settle_rounds = SETTLE_ROUNDS;
    st.congested_run = 0;
    st.lossy_run = 0;
    count(|c| c.reroutes = c.reroutes.wrapping_add(1));
    info!(ctx, "xdcc: reroute port {} path {} -> {} ({})", key.local_port, old, st.path_id, reason as u32);
    st.path_id
}

/// A random path id other than `old`: old + 1 + r (mod paths), r < paths - 1.
#[inline(always)]
fn other_path(old: u32, paths: u32) -> u32 {
    let id = old.wrapping_add(1).wrapping_add(below(random(), paths - 1));
    if id >= paths {
        id.wrapping_sub(paths)
    } else {
        id
    }
}
