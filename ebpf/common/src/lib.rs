//! What the xdcc eBPF programs (`ebpf/programs`) share with the agent
//! (`userspace/xdcc`) and the simulator: here, the keys and values of the
//! telemetry, rerouting and policy maps, the RTT histogram bucketing and the
//! path-id → IPv6 flow-label mapping; in [`plb`], PLB's round rule; in
//! [`markers`], the switch-side markers (phantom queue, AMRT's anti-ECN)
//! with their configurations and counters.
//!
//! All types are `#[repr(C)]`, contain no padding the verifier could
//! complain about (explicit `_pad` fields), and are `Copy`, so both sides
//! see the same bytes. Layouts are checked by unit tests.
#![no_std]

pub mod markers;
pub mod plb;

/// The flow table's size as compiled into the object (LRU: the least
/// recently used flow is evicted when full). The agent loads it with its
/// own `max_open_flows` instead; this size serves the other loaders (`xdcc
/// mark-*`), which do not track flows.
pub const MAX_FLOWS: u32 = 16_384;
/// Maximum number of destinations whose path health is tracked.
pub const MAX_DESTS: u32 = 4_096;
/// Number of path ids a destination's health is tracked for. Path ids are
/// `0..PATHS` (the rerouter picks among them).
pub const PATHS: u32 = 16;

/// Buckets of the RTT histogram: 4 per octave of microseconds, from 1 µs to
/// ~29 s (1.75 × 2^24 µs; slower samples land in the last bucket). Bucket `i` covers `[lower(i), lower(i + 1))`.
pub const RTT_BUCKETS: usize = 96;
const SUB_BUCKETS_LOG2: u32 = 2;

/// A TCP connection as seen from this host: local and remote address (IPv4 as
/// IPv4-mapped IPv6, `::ffff:a.b.c.d`) and ports in host byte order.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub local_addr: [u8; 16],
    pub remote_addr: [u8; 16],
    pub local_port: u16,
    pub remote_port: u16,
    /// 4 or 6 (the socket's family; a v4-mapped address on an AF_INET6
    /// socket still counts as 4: no flow label can be set on it).
    pub family: u16,
    pub _pad: u16,
}

impl FlowKey {
    /// IPv4 address (network byte order bytes) as IPv4-mapped IPv6.
    pub const fn map_v4(a: [u8; 4]) -> [u8; 16] {
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a[0], a[1], a[2], a[3]]
    }
}

/// Why a flow last moved to another path.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RerouteReason {
    None = 0,
    /// A retransmission timeout (uno-sc25 Alg. 2: sender timeout).
    Rto = 1,
    /// `lossy_rounds` consecutive rounds with retransmissions (stands in for
    /// UnoRC's NACKs: TCP has none).
    Loss = 2,
    /// `congested_rounds` consecutive rounds whose ECE fraction was above the
    /// threshold (PLB).
    Congestion = 3,
    /// Asked for by the operator (`xdcc reroute force`).
    Forced = 4,
}

impl RerouteReason {
    pub const fn from_u32(v: u32) -> Self {
        match v {
            1 => Self::Rto,
            2 => Self::Loss,
            3 => Self::Congestion,
            4 => Self::Forced,
            _ => Self::None,
        }
    }
    pub const fn name(self) -> &'static str {
        match self {
            Self::None => "-",
            Self::Rto => "rto",
            Self::Loss => "loss",
            Self::Congestion => "congestion",
            Self::Forced => "forced",
        }
    }
}

/// Per-flow state, one entry of the `FLOWS` LRU map.
///
/// Packet counters are written by the tc programs with atomic adds (any CPU,
/// any time); everything else by sock_ops, which runs under the socket lock.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FlowStats {
    // --- lifecycle (sock_ops) ---
    /// `bpf_ktime_get_ns()` at establishment and at close (0 while open).
    pub established_ns: u64,
    pub closed_ns: u64,
    /// Congestion control name at establishment / last round, NUL padded.
    pub cc: [u8; 16],

    // --- packets (tc; atomic) ---
    /// TCP segments and payload bytes this host sent on the flow (GSO
    /// packets count as their segments), retransmissions included.
    pub segs_out: u64,
    pub bytes_out: u64,
    /// Segments and payload bytes received.
    pub segs_in: u64,
    pub bytes_in: u64,
    /// Received data segments carrying CE (what a receiver sees of the marks).
    pub ce_in: u64,
    /// Received segments with the ECE flag (what the sender sees: the
    /// receiver's echo of CE).
    pub ece_in: u64,
    /// Sent segments with ECT(0/1) set.
    pub ect_out: u64,
    /// Sent segments with the ECE flag (a receiver's echo of CE).
    pub ece_out: u64,

    // --- transport snapshot (sock_ops, once per round trip) ---
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub total_retrans: u32,
    pub snd_cwnd: u32,
    pub mss: u32,
    /// Smoothed RTT (µs), the last RTT sample and the minimum RTT sample.
    pub srtt_us: u32,
    pub last_rtt_us: u32,
    pub min_rtt_us: u32,
    /// Number of RTT samples (= rounds the kernel ended).
    pub rtt_samples: u32,
    /// ECE fraction of the last round in parts per million of the segments
    /// acknowledged in it (approximated by segments sent).
    pub round_ecn_ppm: u32,
    /// Counters at the start of the current round.
    pub round_ece_start: u64,
    pub round_segs_start: u64,
    pub round_retrans_start: u32,

    // --- rerouting ---
    /// Current path id (written into the IPv6 flow label on egress).
    pub path_id: u32,
    pub reroutes: u32,
    /// A `RerouteReason` as u32.
    pub last_reason: u32,
    pub last_reroute_ns: u64,
    /// Consecutive congested / lossy rounds.
    pub congested_run: u32,
    pub lossy_run: u32,
    /// Rounds left during which the flow's recovery does not count against
    /// its new path (after a move).
    pub settle_rounds: u32,
    /// The `[[policy]]` entry (1-based) that chose the flow's CC; 0: none
    /// (no entry matched, or the CC is not the entry's).
    pub policy: u32,
    /// UnoLB for TCP (`lb = "unolb"` in the flow's `[[policy]]` entry): the
    /// subflows its packets are sprayed over (0: one path id, `path_id`),
    /// and the subflows re-drawn after losing a packet.
    pub lb_subflows: u32,
    pub lb_redraws: u32,

    /// RTT samples per bucket (see `rtt_bucket`).
    pub rtt_hist: [u32; RTT_BUCKETS],
}

impl FlowStats {
    pub const fn zeroed() -> Self {
        FlowStats {
            established_ns: 0,
            closed_ns: 0,
            cc: [0; 16],
            segs_out: 0,
            bytes_out: 0,
            segs_in: 0,
            bytes_in: 0,
            ce_in: 0,
            ece_in: 0,
            ect_out: 0,
            ece_out: 0,
            bytes_acked: 0,
            bytes_received: 0,
            total_retrans: 0,
            snd_cwnd: 0,
            mss: 0,
            srtt_us: 0,
            last_rtt_us: 0,
            min_rtt_us: 0,
            rtt_samples: 0,
            round_ecn_ppm: 0,
            round_ece_start: 0,
            round_segs_start: 0,
            round_retrans_start: 0,
            path_id: 0,
            reroutes: 0,
            last_reason: 0,
            last_reroute_ns: 0,
            congested_run: 0,
            lossy_run: 0,
            settle_rounds: 0,
            policy: 0,
            lb_subflows: 0,
            lb_redraws: 0,
            rtt_hist: [0; RTT_BUCKETS],
        }
    }

    /// The CC name as text (up to the first NUL).
    pub fn cc_name(&self) -> &str {
        let n = self.cc.iter().position(|&b| b == 0).unwrap_or(self.cc.len());
        core::str::from_utf8(&self.cc[..n]).unwrap_or("?")
    }

    /// RTT quantile (µs) from the histogram: the upper edge of the bucket
    /// holding the `q_ppm`-th sample (so the value is within one bucket,
    /// ≤ 19 % above the true quantile). None without samples.
    pub fn rtt_quantile_us(&self, q_ppm: u32) -> Option<u32> {
        let total: u64 = self.rtt_hist.iter().map(|&c| c as u64).sum();
        if total == 0 {
            return None;
        }
        // rank of the sample, 1-based: ceil(total * q)
        let rank = (total * q_ppm as u64).div_ceil(1_000_000).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.rtt_hist.iter().enumerate() {
            seen += c as u64;
            if seen >= rank {
                return Some(bucket_upper_us(i));
            }
        }
        Some(bucket_upper_us(RTT_BUCKETS - 1))
    }
}

/// Runtime configuration, the single entry of the `CONFIG` array map, set by
/// the agent (`xdcc reroute set ...`).

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// 1: move flows between paths (labels of tracked IPv6 flows are always
    /// set from their path id).
    pub reroute_enabled: u32,
    /// A round is congested when its ECE fraction is at least this (ppm;
    /// PLB's default is 50 %).
    pub congested_ecn_ppm: u32,
    /// Move after this many consecutive congested rounds (PLB: M; 12, as
    /// Linux's own PLB, `tcp_plb_rehash_rounds`: with 3, every flow of a
    /// fully loaded fabric moved ~50 times a second under DCTCP's marks,
    /// `bench/reroute-paths.sh`).
    pub congested_rounds: u32,
    /// Move after this many consecutive rounds with retransmissions.
    pub lossy_rounds: u32,
    /// Move on a retransmission timeout.
    pub reroute_on_rto: u32,
    /// Number of path ids in use (2..=PATHS).
    pub paths: u32,
    /// Minimum time between two moves of one flow, in base RTTs (uno-sc25:
    /// at most once per base RTT).
    pub min_interval_base_rtts: u32,
    /// A path a flow to a destination left on an RTO or lossy rounds within
    /// this many µs is avoided by the next moves there; one that ended an
    /// uncongested round within it counts as healthy (`xdcc stats`).
    pub healthy_window_us: u32,
    /// 1: give each new connection to a destination the next path id
    /// (UnoLB subflow spreading); 0: a hash of the 4-tuple.
    pub spread_subflows: u32,
    /// Salt mixed into flow labels (so two hosts' path ids differ).
    pub label_salt: u32,
}

impl Config {
    pub const DEFAULT: Config = Config {
        reroute_enabled: 1,
        congested_ecn_ppm: 500_000,
        congested_rounds: 12,
        lossy_rounds: 2,
        reroute_on_rto: 1,
        paths: 8,
        min_interval_base_rtts: 1,
        healthy_window_us: 1_000_000,
        spread_subflows: 1,
        label_salt: 0x5a17,
    };
}

/// Per destination: when each path id last ended an uncongested round and
/// when a flow last left it on an RTO or lossy rounds (`bpf_ktime_get_ns`,
/// 0 = never), and the next id for subflow spreading.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PathHealth {
    pub last_good_ns: [u64; PATHS as usize],
    pub last_bad_ns: [u64; PATHS as usize],
    pub next_subflow: u32,
    pub _pad: u32,
}

/// Maximum number of pending forced moves (`FORCE` map: flow → 1; sock_ops
/// moves the flow at its next round or RTO and deletes the entry).
pub const MAX_FORCED: u32 = 1024;

/// Agent-wide counters (per-CPU array, index 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub flows_opened: u64,
    pub flows_closed: u64,
    pub reroutes: u64,
    /// Packets of TCP flows not in the table (started before the agent, or evicted).
    pub untracked_packets: u64,
    /// Flows that could not be inserted.
    pub insert_failures: u64,
    pub labels_rewritten: u64,
    /// Closed flows whose final record did not fit the `CLOSED` ring buffer
    /// (the agent fell behind); their entry stays in the flow table for the
    /// agent's harvest, where LRU eviction may still take it.
    pub closed_ring_full: u64,
    /// Tracked flows that closed without an entry: the flow table (an LRU
    /// map of the agent's `max_open_flows`) evicted them while they were
    /// open, so more flows were open at once than it holds. Their final
    /// record is lost; raise `max_open_flows`. (After an agent restart, the
    /// flows the previous agent tracked count here too as they close: their
    /// sockets keep the state callback, the new table never had them.)
    pub open_flows_evicted: u64,
}

/// A closed flow's final record, sent to the agent through the `CLOSED`
/// ring buffer when the socket closes (the flow table's entry is then
/// deleted, so churn does not evict records before the agent reads them).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ClosedFlow {
    pub key: FlowKey,
    pub stats: FlowStats,
}

/// Size of the `CLOSED` ring buffer: ~13,000 final records.
pub const CLOSED_RING_BYTES: u32 = 8 << 20;

/// Destinations → congestion control (the agent's `[[policy]]` entries):
/// the value of the `CC_POLICY` LPM trie, keyed by the peer's address as 16
/// bytes (IPv4 v4-mapped, so an IPv4 prefix of length p is one of 96 + p).
/// The sock_ops program sets the CC of a connection to a matching peer
/// before its SYN (active side) or once established (passive side), and
/// answers "needs ECN" for it so ECN is negotiated whatever the listener's
/// CC is.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CcPolicy {
    /// 1-based position of the entry in the configuration file.
    pub index: u32,
    /// 1: the CC needs ECN (`TCP_CONG_NEEDS_ECN`).
    pub needs_ecn: u32,
    /// The CC's name, NUL padded (`TCP_CA_NAME_MAX`).
    pub cc: [u8; 16],
    /// UnoLB: spray the connection over this many subflows (entropies of
    /// the IPv6 flow label) under its one window; 0: one path per
    /// connection (the rerouter's path id).
    pub lb_subflows: u32,
}

/// Most `[[policy]]` entries.
pub const MAX_POLICIES: u32 = 1024;


/// How far back (ns) a move looks for path ids that failed: the configured
/// window, and while a flow keeps timing out (this move and its previous one
/// both RTOs) twice the time since its previous move as well. RTO backoff
/// doubles the gap between a dead flow's moves, so a fixed window (1 s)
/// forgot the ids this outage had already found dead by the fifth move and
/// drew blind: with 16 ids on two links, CI saw a flow's 8 moves all land on
/// the failed link (`userspace/tests/netns.sh reroute`). Twice the last gap
/// covers every earlier move of the outage.
pub const fn failed_window_ns(window_ns: u64, rto_again: bool, since_last_move_ns: u64) -> u64 {
    if rto_again {
        window_ns.saturating_add(since_last_move_ns.saturating_mul(2))
    } else {
        window_ns
    }
}

/// The 20-bit IPv6 flow label for a path id: a mix of the id and the salt,
/// never 0 (0 means "no label" and hashes as such). Distinct ids give
/// distinct labels.
pub const fn path_label(path_id: u32, salt: u32) -> u32 {
    // An odd multiplier is a bijection on 32 bits; keep 19 bits of it and set
    // bit 19 so the label is never 0. For ids < 2^19 with one salt, labels
    // differ because the low 19 bits of (id ^ s) * odd differ.
    let x = ((path_id & 0x7ffff) ^ (salt & 0x7ffff)).wrapping_mul(0x9e37_79b1) & 0x7ffff;
    x | 0x80000
}

/// Bucket of an RTT sample in µs (4 buckets per power of two).
pub const fn rtt_bucket(us: u32) -> usize {
    if us < 4 {
        return us as usize; // buckets 0..3: 0, 1, 2, 3 µs exactly
    }
    let msb = 31 - us.leading_zeros(); // >= 2
    let sub = (us >> (msb - SUB_BUCKETS_LOG2)) & 3;
    let b = (msb - 1) * 4 + sub; // msb = 2 -> buckets 4..7
    if b as usize >= RTT_BUCKETS {
        RTT_BUCKETS - 1
    } else {
        b as usize
    }
}

/// Lowest RTT (µs) of a bucket.
pub const fn bucket_lower_us(b: usize) -> u32 {
    if b < 4 {
        return b as u32;
    }
    let msb = (b / 4 + 1) as u32;
    let sub = (b % 4) as u32;
    (1 << msb) + (sub << (msb - SUB_BUCKETS_LOG2))
}

/// Upper edge of a bucket (the next bucket's lower edge, minus 1 µs).
pub const fn bucket_upper_us(b: usize) -> u32 {
    if b + 1 >= RTT_BUCKETS {
        return u32::MAX;
    }
    bucket_lower_us(b + 1) - 1
}

#[cfg(feature = "user")]
mod pod {
    // SAFETY: all of these are repr(C), Copy, made only of integers and
    // arrays of integers with explicit padding fields: every bit pattern is
    // a valid value.
    unsafe impl aya::Pod for super::FlowKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::FlowStats {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::CcPolicy {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::Config {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::PathHealth {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::Counters {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::markers::PhantomConfig {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::markers::PhantomStats {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::markers::MarkCeConfig {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::markers::MarkCeStats {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::markers::AmrtConfig {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::markers::AmrtStats {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::markers::LossConfig {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::markers::LossState {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::markers::LossStats {}
}

/// `x` in `[0, n)` without a division (multiply-shift range reduction):
/// the BPF programs' and the markers' draws.
#[inline(always)]
pub const fn below(x: u32, n: u32) -> u32 {
    (((x as u64) * (n as u64)) >> 32) as u32
}

#[cfg(test)]
mod tests {

    extern crate std;
    use super::*;
    use core::mem::size_of;

    #[test]
    fn layouts_have_no_hidden_padding() {
        assert_eq!(size_of::<FlowKey>(), 40);
        assert_eq!(size_of::<Config>(), 40);
        assert_eq!(size_of::<PathHealth>(), 16 * PATHS as usize + 8);
        assert_eq!(size_of::<FlowStats>() % 8, 0);
        // sum of field sizes == struct size (no implicit padding)
        let fields = 8 * 2 + 16 + 8 * 8 + 8 * 2 + 4 * 8 + 8 * 2 + 4 * 4 + 8 + 4 * 6 + 4 * RTT_BUCKETS;
        assert_eq!(size_of::<FlowStats>(), fields);
        assert_eq!(size_of::<CcPolicy>(), 4 + 4 + 16 + 4);
    }

    #[test]
    fn buckets_are_monotonic_contiguous_and_narrow() {
        let mut prev = 0;
        for us in 0u32..200_000 {
            let b = rtt_bucket(us);
            assert!(b >= prev, "bucket decreases at {us}");
            assert!(b <= prev + 1);
            prev = b;
            assert!(bucket_lower_us(b) <= us && us <= bucket_upper_us(b), "{us} not in bucket {b}");
        }
        for b in 4..RTT_BUCKETS - 1 {
            let (lo, hi) = (bucket_lower_us(b) as u64, bucket_upper_us(b) as u64 + 1);
            assert!(hi * 100 <= lo * 125, "bucket {b} [{lo},{hi}) wider than 25 %");
        }
        assert_eq!(rtt_bucket(u32::MAX), RTT_BUCKETS - 1);
        assert_eq!(rtt_bucket(1 << 25), RTT_BUCKETS - 1);
    }

    #[test]
    fn quantiles_from_the_histogram() {
        let mut s = FlowStats::zeroed();
        assert_eq!(s.rtt_quantile_us(500_000), None);
        for us in [100u32; 98].iter().chain(&[10_000, 20_000]) {
            s.rtt_hist[rtt_bucket(*us)] += 1;
        }
        let p50 = s.rtt_quantile_us(500_000).unwrap();
        assert!((100..=125).contains(&p50), "p50 {p50}");
        let p99 = s.rtt_quantile_us(990_000).unwrap();
        assert!((10_000..=12_500).contains(&p99), "p99 {p99}");
        let max = s.rtt_quantile_us(1_000_000).unwrap();
        assert!((20_000..=25_000).contains(&max), "max {max}");
    }

    #[test]
    fn a_flow_that_keeps_timing_out_remembers_its_whole_outage() {
        let s = 1_000_000_000u64;
        // RTO backoff: moves at 0.2, 0.6, 1.4, 3.0, 6.2, 12.6, 25.4 s after
        // the failure; at every move all earlier ones are within the window.
        let moves = [200, 600, 1400, 3000, 6200, 12600, 25400].map(|ms| ms * 1_000_000u64);
        for i in 1..moves.len() {
            let w = failed_window_ns(s, true, moves[i] - moves[i - 1]);
            assert!(w >= moves[i] - moves[0], "move {i}: window {w} misses the first move");
        }
        // Not timing out again: the configured window only.
        assert_eq!(failed_window_ns(s, false, 60 * s), s);
        assert_eq!(failed_window_ns(u64::MAX, true, u64::MAX), u64::MAX);
    }

    #[test]
    fn labels_are_nonzero_20_bit_and_distinct_per_path() {
        for salt in [0u32, 0x5a17, 0xfffff] {
            let mut seen = std::collections::HashSet::new();
            for id in 0..1024 {
                let l = path_label(id, salt);
                assert!(l != 0 && l < (1 << 20));
                assert!(seen.insert(l), "label collision for id {id} salt {salt}");
            }
        }
    }


    #[test]
    fn reroute_reasons_round_trip() {
        for r in [RerouteReason::None, RerouteReason::Rto, RerouteReason::Loss, RerouteReason::Congestion, RerouteReason::Forced] {
            assert_eq!(RerouteReason::from_u32(r as u32), r);
        }
    }
}
