//! The switch-side markers the eBPF programs run on a port and the
//! simulator runs in its ports, written once: Uno's phantom queue (fed at
//! enqueue or by a mirror of the link, judged less the bytes still on the
//! ingress wires), AMRT's anti-ECN spare-bandwidth marks, and the
//! configurations and counters the agent and `xdcc mark-*` share with them.
//! Integer-only and BPF-clean.

use crate::below;

/// Uno's phantom queue at a switch port (uno-sc25 §4.1; htsim
/// compositequeue.cpp): a virtual queue that grows by every packet entering
/// the port and drains at `drain_bytes_per_sec` (a fraction of the line rate,
/// 0.9 in the paper), capped at `size_bytes`; ECT packets are marked CE with
/// a probability rising linearly from 0 at `kmin_bytes` to 1 at `kmax_bytes`.
/// `drain_bytes_per_sec == 0` switches the marker off.
///
/// Where the phantom queue is fed: Uno's simulator feeds it
/// at the port's enqueue; HULL (Uno's reference [10], which introduced
/// phantom queues) places it on the egress *link*, fed by the bytes the port
/// transmits, at most the line rate. A hardware port's arrivals are bounded
/// by its ingress links, so the two differ only in transients. A software
/// switch whose CPUs also run the hosts is different: after a CPU stall it
/// forwards a backlog at memory speed, and an enqueue-fed phantom queue
/// reads milliseconds of ordinary traffic as overload (bench/realspeed.sh,
/// testbed/RESULTS.md). `line_bytes_per_sec > 0` selects the link feed: a
/// mirror of the port (a virtual queue draining at the line rate) feeds the
/// phantom queue with its departures.
///
/// The ingress links: a hardware port's queue grows only by what its
/// ingress links deliver, each at most its own rate, so a burst from one
/// sender whose NIC runs at the port's rate never queues. A software
/// router's veths deliver a sender's 64 kB GSO packet, and a CPU's batch of
/// them, in no time, and a queue fed at enqueue reads that as a queue of
/// the whole batch. `ingress_bytes_per_sec > 0` models the links: every
/// ingress interface is a wire that delivers at that rate (the senders' NIC
/// rate), and the marker judges the queue less the bytes still on the
/// wires (a lower bound of the queue behind such links, exact while the
/// port is busy). 0: instantaneous arrivals.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhantomConfig {
    pub drain_bytes_per_sec: u64,
    pub size_bytes: u64,
    pub kmin_bytes: u64,
    pub kmax_bytes: u64,
    /// 0: fed at enqueue (Uno's simulator); otherwise the port's line rate,
    /// and the phantom queue is fed by the port's (mirrored) departures.
    pub line_bytes_per_sec: u64,
    /// 0: packets arrive at once; otherwise every ingress link delivers at
    /// this rate (the senders' NICs) and the bytes still on the wires are
    /// not yet queued (above).
    pub ingress_bytes_per_sec: u64,
    /// What the port sends ahead of its line rate: a software shaper's
    /// token bucket (Linux HTB: its burst, plus the packet it lets its
    /// tokens go negative for). A mirror that drains as a fluid holds this
    /// much more than such a port ever queues, so the marker judges the
    /// queue less it. 0: a hardware port (no bucket).
    pub port_burst_bytes: u64,
}


impl PhantomConfig {
    /// Uno's defaults for a port: drain at `drain_pct` of the line rate,
    /// marking between `kmin_pct` and `kmax_pct` of the phantom size.
    pub fn for_port(rate_bits_per_sec: u64, drain_pct: u64, size_bytes: u64, kmin_pct: u64, kmax_pct: u64) -> Self {
        PhantomConfig {
            drain_bytes_per_sec: rate_bits_per_sec / 8 * drain_pct / 100,
            size_bytes,
            kmin_bytes: size_bytes * kmin_pct / 100,
            kmax_bytes: size_bytes * kmax_pct / 100,
            line_bytes_per_sec: 0,
            ingress_bytes_per_sec: 0,
            port_burst_bytes: 0,
        }
    }

    /// The same queue mirroring a shaped port that sends `burst_bytes`
    /// ahead of its rate.
    pub fn shaper_burst(self, burst_bytes: u64) -> Self {
        PhantomConfig { port_burst_bytes: burst_bytes, ..self }
    }

    /// The same queue behind ingress links of `rate_bits_per_sec` each.
    pub fn behind_links(self, rate_bits_per_sec: u64) -> Self {
        PhantomConfig { ingress_bytes_per_sec: rate_bits_per_sec / 8, ..self }
    }

    /// The same queue fed by the transmissions of a port of
    /// `rate_bits_per_sec` (HULL's placement) instead of at its enqueue.
    pub fn link_fed(self, rate_bits_per_sec: u64) -> Self {
        PhantomConfig { line_bytes_per_sec: rate_bits_per_sec / 8, ..self }
    }

    /// Why a configuration is unusable, if it is.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.drain_bytes_per_sec == 0 || self.drain_bytes_per_sec > 50_000_000_000 {
            return Err("drain rate must be between 1 byte/s and 400 Gbit/s");
        }
        if self.size_bytes < 3000 || self.size_bytes > 1 << 31 {
            return Err("phantom size must be between 3000 bytes and 2 GiB");
        }
        if !(self.kmin_bytes < self.kmax_bytes && self.kmax_bytes <= self.size_bytes) {
            return Err("need kmin < kmax <= size");
        }
        if self.line_bytes_per_sec != 0
            && !(self.drain_bytes_per_sec..=50_000_000_000).contains(&self.line_bytes_per_sec)
        {
            return Err("a link-fed phantom queue needs a line rate between its drain rate and 400 Gbit/s");
        }
        if self.ingress_bytes_per_sec > 50_000_000_000 {
            return Err("the ingress links' rate must be at most 400 Gbit/s");
        }
        if self.port_burst_bytes > 1 << 30 {
            return Err("the port's burst must be at most 1 GiB");
        }
        Ok(())
    }
}

/// Phantom-queue marker counters (index 0 of its stats array).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PhantomStats {
    pub packets: u64,
    pub ect_packets: u64,
    pub marked: u64,
    /// Largest phantom queue seen, bytes.
    pub max_queue_bytes: u64,
    /// Bytes counted (on the wire: GSO packets with every segment's headers).
    pub bytes: u64,
    /// Largest backlog of the port's mirror (link feed), bytes.
    pub max_mirror_bytes: u64,
    /// Most bytes seen still on the ingress links' wires (ingress model).
    pub max_on_wires_bytes: u64,
}

/// The test CE marker (`xdcc mark-ce`): marks every `every_n`-th ECT data
/// packet CE (0 = off). Index 0 of `MARK_CE_CFG`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MarkCeConfig {
    pub every_n: u64,
}

/// The test CE marker's counters (index 0 of `MARK_CE_STATS`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MarkCeStats {
    /// ECT data packets seen.
    pub ect_seen: u64,
    /// Segments marked CE.
    pub marked: u64,
}

/// AMRT's anti-ECN marker at a port (amrt-icpp20 §4.1, eq. 2): a packet finds
/// spare bandwidth when the link was idle, before it, for at least one MTU's
/// transmission time. Index 0 of `AMRT_CFG`; `ps_per_byte == 0` is off.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AmrtConfig {
    /// Transmission time of one byte at line rate, in picoseconds.
    pub ps_per_byte: u64,
    /// Transmission time of one MTU at line rate, in ns.
    pub mtu_ns: u64,
    /// 0: first hop (CE = spare); 1: transit (CE = CE AND spare, eq. 3).
    pub transit: u64,
}

impl AmrtConfig {
    /// The marker of a port of `rate_bits_per_sec` carrying `mtu`-byte packets.
    pub fn for_port(rate_bits_per_sec: u64, mtu: u64, transit: bool) -> Result<Self, &'static str> {
        if !(1_000_000..=400_000_000_000).contains(&rate_bits_per_sec) {
            return Err("line rate must be between 1 Mbit/s and 400 Gbit/s");
        }
        if !(576..=65_535).contains(&mtu) {
            return Err("MTU must be between 576 and 65535 bytes");
        }
        let ps_per_byte = 8_000_000_000_000 / rate_bits_per_sec;
        Ok(AmrtConfig { ps_per_byte, mtu_ns: mtu * ps_per_byte / 1000, transit: transit as u64 })
    }
}

/// AMRT marker counters (index 0 of `AMRT_STATS`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct AmrtStats {
    /// ECN-capable packets seen.
    pub ect_packets: u64,
    /// Packets leaving with CE (spare bandwidth).
    pub marked: u64,
    /// CE cleared to ECT(0) (no spare bandwidth here).
    pub cleared: u64,
}

/// Times of the AMRT marker are kept in 48 bits of nanoseconds (78 hours).
pub const AMRT_TIME_MASK: u64 = (1 << 48) - 1;

/// A virtual link may run at most this many MTU transmission times ahead of
/// the packets' arrival (see [`amrt_step`]).
pub const AMRT_MAX_BACKLOG_MTUS: u64 = 64;

/// Eq. 2 of amrt-icpp20 for one packet that starts its transmission at
/// `now_ns`: was the link idle for at least one MTU's transmission time
/// before it (spare capacity)? `finish_ns` is when the link finishes the
/// packets before it; returns (spare, the link's finish time after this
/// packet of `len` bytes).
///
/// The link is modelled as a serializer at line rate: packets that arrive
/// faster than the line rate (a shaper such as HTB releases a burst of
/// tokens' worth back to back, and a timer that fires late under
/// virtualization releases several) are queued virtually behind each other,
/// so the gap after such a burst is busy time, not idle time. On a real
/// line-rate link the packets are already spaced by their transmission
/// times and this is exactly "gap since the previous packet minus its
/// transmission time ≥ one MTU". Times are 48-bit (`AMRT_TIME_MASK`): a
/// finish time that is ahead of `now_ns` by less than 2^47 ns is a busy
/// link; the virtual backlog is capped at `AMRT_MAX_BACKLOG_MTUS` (a marker
/// configured below the port's real rate would otherwise fall behind for
/// ever). Shared by the eBPF marker and the simulator's queues.
pub const fn amrt_step(finish_ns: u64, now_ns: u64, len: u64, cfg: &AmrtConfig) -> (bool, u64) {
    let now = now_ns & AMRT_TIME_MASK;
    // A packet is at most 64 KiB and a byte takes at most 8 µs (1 Mbit/s):
    // bounded so, the products stay below 2^48 (no overflow-checked
    // multiply, which BPF cannot lower).
    let len = if len > 0xffff { 0xffff } else { len };
    let ps = if cfg.ps_per_byte > 0xffff_ffff { 0xffff_ffff } else { cfg.ps_per_byte };
    let mtu_ns = if cfg.mtu_ns > 0xffff_ffff { 0xffff_ffff } else { cfg.mtu_ns };
    let tx_ns = len.wrapping_mul(ps) / 1000;
    let ahead = finish_ns.wrapping_sub(now) & AMRT_TIME_MASK;
    let (spare, start) = if ahead < 1 << 47 {
        // Busy: this packet waits (virtually) behind the earlier ones.
        let cap = mtu_ns.wrapping_mul(AMRT_MAX_BACKLOG_MTUS);
        (false, now + if ahead > cap { cap } else { ahead })
    } else {
        // Idle since `finish_ns`.
        let idle = now.wrapping_sub(finish_ns) & AMRT_TIME_MASK;
        (idle >= mtu_ns, now)
    };
    (spare, (start + tx_ns) & AMRT_TIME_MASK)
}

/// The phantom queue after `elapsed_us` of draining and a packet of `len`
/// bytes (shared by the eBPF marker and its tests).
pub const fn phantom_step(queue: u64, elapsed_us: u64, len: u64, cfg: &PhantomConfig) -> u64 {
    // elapsed is capped at 10 s: 1e7 µs x 5e10 B/s fits in u64
    let e = if elapsed_us > 10_000_000 { 10_000_000 } else { elapsed_us };
    let drained = e * cfg.drain_bytes_per_sec / 1_000_000;
    let q = if queue > drained { queue - drained } else { 0 } + len;
    if q > cfg.size_bytes {
        cfg.size_bytes
    } else {
        q
    }
}

/// The port's mirror for a link-fed phantom queue: a virtual queue `m`
/// draining at the line rate, after `elapsed_us` and a packet of `len`
/// bytes. Returns the new level and the bytes it transmitted meanwhile (the
/// phantom queue's input).
pub const fn mirror_step(m: u64, elapsed_us: u64, len: u64, cfg: &PhantomConfig) -> (u64, u64) {
    let e = if elapsed_us > 10_000_000 { 10_000_000 } else { elapsed_us };
    let can = e * cfg.line_bytes_per_sec / 1_000_000;
    let sent = if m < can { m } else { can };
    let next = m - sent + len;
    (if next > cfg.size_bytes { cfg.size_bytes } else { next }, sent)
}

/// A link-fed phantom queue after `elapsed_us` in which the link carried
/// `sent` bytes. The link sends at the line rate, at or above the drain
/// rate, so the bytes come first and the drain after: the queue ends at
/// `q + sent − drained`, floored at 0 (exact for the fluid tandem).
pub const fn link_phantom_step(q: u64, elapsed_us: u64, sent: u64, cfg: &PhantomConfig) -> u64 {
    let e = if elapsed_us > 10_000_000 { 10_000_000 } else { elapsed_us };
    let drained = e * cfg.drain_bytes_per_sec / 1_000_000;
    let up = q + sent;
    let v = if up > drained { up - drained } else { 0 };
    if v > cfg.size_bytes {
        cfg.size_bytes
    } else {
        v
    }
}

/// Ingress links modelled by the marker (`PhantomConfig::ingress_bytes_per_sec`):
/// interfaces share a wire when their index is equal modulo this (a shared
/// wire delivers less than two would, so the queue is underestimated).
pub const INGRESS_WIRES: u32 = 8;

/// One ingress link's wire: the bytes it still has to deliver after
/// `elapsed_us` at `bytes_per_sec` (the packed state's upper 32 bits).
pub const fn wire_level(on_wire: u64, elapsed_us: u64, bytes_per_sec: u64) -> u64 {
    let e = if elapsed_us > 10_000_000 { 10_000_000 } else { elapsed_us };
    let delivered = e * bytes_per_sec / 1_000_000;
    if on_wire > delivered {
        on_wire - delivered
    } else {
        0
    }
}

/// The wire after `elapsed_us` and a packet of `len` bytes put on it
/// (capped at 2^32 - 1: the packed state's width).
pub const fn wire_step(on_wire: u64, elapsed_us: u64, len: u64, bytes_per_sec: u64) -> u64 {
    let w = wire_level(on_wire, elapsed_us, bytes_per_sec) + len;
    if w > 0xffff_ffff {
        0xffff_ffff
    } else {
        w
    }
}

/// The µs a packed queue state (level in the upper 32 bits, the time of its
/// last update in µs mod 2^32 in the lower; 0: never updated) has drained
/// for at `now_us`, and the time to store with its update. Another CPU may
/// have stored a later time since `now_us` was read (by less than a
/// second): no time passed for this packet — a wrapped difference would
/// read as 71 minutes and empty the queue — and the later time stays.
pub const fn packed_elapsed(state: u64, now_us: u32) -> (u64, u32) {
    if state == 0 {
        return (0, now_us);
    }
    let t0 = state as u32;
    let behind_us = t0.wrapping_sub(now_us);
    if behind_us != 0 && behind_us < 1_000_000 {
        return (0, t0);
    }
    (now_us.wrapping_sub(t0) as u64, now_us)
}

/// The queue the marker judges: the virtual queue less the bytes still on
/// the ingress wires and less what the port sends ahead of its rate.
pub const fn judged_queue(queue: u64, on_wires: u64, cfg: &PhantomConfig) -> u64 {
    let ahead = on_wires + cfg.port_burst_bytes;
    if queue > ahead {
        queue - ahead
    } else {
        0
    }
}

/// Whether to mark at phantom queue `q`, given a uniform random `r`: never
/// below kmin, always at or above kmax, linear in between.
pub const fn phantom_mark(q: u64, r: u32, cfg: &PhantomConfig) -> bool {
    if q <= cfg.kmin_bytes {
        return false;
    }
    if q >= cfg.kmax_bytes {
        return true;
    }
    let span = cfg.kmax_bytes - cfg.kmin_bytes;
    // P(mark) = (q - kmin) / span: r / 2^32 < (q - kmin) / span
    ((r as u64 * span) >> 32) < q - cfg.kmin_bytes
}

/// Most packets one block can lose (`LossConfig::cum_ppm`'s length).
pub const LOSS_MAX_DROPS: usize = 8;
/// Longest block of the loss injector (its drop positions are a u64 mask).
pub const LOSS_MAX_BLOCK: u32 = 64;

/// The loss injector (`xdcc inject-loss`): a port that loses packets as
/// Uno's Table 1 describes a WAN link (uno-sc25; the simulator's
/// `LossModel::Block`): the packets are cut into blocks of `block`
/// consecutive ones, and at each block's start the number it loses is
/// drawn, exactly j + 1 with probability `p[j]`, at positions uniform and
/// distinct. `cum_ppm[j]` is p[0] + ... + p[j] in parts per million, the
/// entries after the last given repeat it. Bernoulli loss at p is a block of
/// one with p[0] = p. `block == 0`: off. Index 0 of `LOSS_CFG`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LossConfig {
    pub block: u32,
    pub cum_ppm: [u32; LOSS_MAX_DROPS],
}

/// The loss injector's place in its block (index 0 of `LOSS_STATE`): the
/// next packet's position, and how many of the block's packets from it on
/// are still to be dropped.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct LossState {
    pub pos: u32,
    pub need: u32,
}

/// The loss injector's counters (index 0 of `LOSS_STATS`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct LossStats {
    pub packets: u64,
    pub dropped: u64,
    pub blocks: u64,
    /// Blocks that lost at least one packet.
    pub lossy_blocks: u64,
}

impl LossConfig {
    /// Blocks of `block` packets losing exactly j + 1 of them with
    /// probability `p_ppm[j]` (parts per million).
    pub fn from_ppm(block: u32, p_ppm: &[u32]) -> Result<Self, &'static str> {
        if block == 0 || block > LOSS_MAX_BLOCK {
            return Err("the block must hold 1..=64 packets");
        }
        if p_ppm.is_empty() || p_ppm.len() > LOSS_MAX_DROPS || p_ppm.len() > block as usize {
            return Err("give 1..=8 probabilities (of 1, 2, ... drops per block), at most one per packet of the block");
        }
        let mut cum_ppm = [0u32; LOSS_MAX_DROPS];
        let mut sum = 0u32;
        for (j, c) in cum_ppm.iter_mut().enumerate() {
            sum = sum.saturating_add(p_ppm.get(j).copied().unwrap_or(0));
            *c = sum;
        }
        if sum > 1_000_000 {
            return Err("the probabilities must sum to at most 1");
        }
        Ok(Self { block, cum_ppm })
    }

    /// How many packets a block loses, for a draw `r_ppm` uniform in
    /// [0, 1_000_000).
    pub const fn drops(&self, r_ppm: u32) -> u32 {
        let mut j = 0;
        while j < LOSS_MAX_DROPS {
            if r_ppm < self.cum_ppm[j] {
                return j as u32 + 1;
            }
            j += 1;
        }
        0
    }
}

/// One packet through the loss injector: whether it is dropped, and
/// whether it opened a block that loses packets (`None`: it opened none).
/// `random` gives uniform u32s. The block's losses are placed by selection
/// sampling, one packet at a time (Knuth's Algorithm S: the packet at a
/// position is dropped with probability drops-still-to-place /
/// packets-left), which puts them at uniform, distinct positions with no
/// loop (a loop over the block's positions drawing them ahead made the BPF
/// verifier walk past its million instructions).
#[inline(always)]
pub fn loss_step(cfg: &LossConfig, st: &mut LossState, mut random: impl FnMut() -> u32) -> (bool, Option<bool>) {
    let block = if cfg.block > LOSS_MAX_BLOCK { LOSS_MAX_BLOCK } else { cfg.block };
    let mut opened = None;
    if st.pos == 0 || st.pos >= block {
        st.pos = 0;
        st.need = cfg.drops(below(random(), 1_000_000));
        opened = Some(st.need > 0);
    }
    let left = block.saturating_sub(st.pos);
    let drop = st.need > 0 && below(random(), left) < st.need;
    if drop {
        st.need = st.need.saturating_sub(1);
    }
    st.pos = st.pos.saturating_add(1);
    (drop, opened)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    fn xorshift() -> impl FnMut() -> u32 {
        let mut x = 0x9e37_79b9u32;
        move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        }
    }

    #[test]
    fn loss_blocks_lose_as_table_1_says() {
        // Table 1's shape at 100 times its rates: 3 %, 0.75 %, 0.16 %.
        let cfg = LossConfig::from_ppm(10, &[30_000, 7_500, 1_600]).unwrap();
        let mut st = LossState::default();
        let mut r = xorshift();
        let blocks = 200_000u32;
        let mut per_block = [0u32; 11];
        let (mut dropped, mut lossy) = (0u32, 0u32);
        for _ in 0..blocks {
            let mut here = 0;
            for k in 0..10 {
                let (drop, opened) = loss_step(&cfg, &mut st, &mut r);
                assert_eq!(opened.is_some(), k == 0, "a block opens at its first packet");
                lossy += u32::from(opened == Some(true));
                here += u32::from(drop);
            }
            per_block[here as usize] += 1;
            dropped += here;
        }
        // Expected: 6,000 / 1,500 / 320 blocks losing 1 / 2 / 3 (sd ~77, 39, 18).
        let within = |got: u32, want: f64| (f64::from(got) - want).abs() < 5.0 * want.sqrt();
        assert!(within(per_block[1], 6_000.0) && within(per_block[2], 1_500.0) && within(per_block[3], 320.0), "{per_block:?}");
        assert_eq!(per_block[4..].iter().sum::<u32>(), 0);
        assert_eq!(lossy, blocks - per_block[0]);
        assert_eq!(dropped, per_block[1] + 2 * per_block[2] + 3 * per_block[3]);
    }

    #[test]
    fn loss_positions_are_uniform_and_distinct() {
        // Every block loses exactly 3 of 10: each position 30 % of the time.
        let cfg = LossConfig::from_ppm(10, &[0, 0, 1_000_000]).unwrap();
        let mut st = LossState::default();
        let mut r = xorshift();
        let mut at = [0u32; 10];
        for _ in 0..50_000 {
            let mut n = 0;
            for a in at.iter_mut() {
                let (drop, _) = loss_step(&cfg, &mut st, &mut r);
                *a += u32::from(drop);
                n += u32::from(drop);
            }
            assert_eq!(n, 3);
        }
        assert!(at.iter().all(|&a| (14_000..16_000).contains(&a)), "{at:?}");
        // A block of one: Bernoulli at 1 %.
        let cfg = LossConfig::from_ppm(1, &[10_000]).unwrap();
        let d = (0..1_000_000).filter(|_| loss_step(&cfg, &mut st, &mut r).0).count();
        assert!((9_500..10_500).contains(&d), "{d}");
    }

    #[test]
    fn bad_loss_configs_are_refused() {
        assert!(LossConfig::from_ppm(0, &[1]).is_err());
        assert!(LossConfig::from_ppm(65, &[1]).is_err());
        assert!(LossConfig::from_ppm(10, &[]).is_err());
        assert!(LossConfig::from_ppm(2, &[1, 1, 1]).is_err());
        assert!(LossConfig::from_ppm(10, &[600_000, 500_000]).is_err());
        assert_eq!(LossConfig::from_ppm(10, &[1, 2]).unwrap().cum_ppm, [1, 3, 3, 3, 3, 3, 3, 3]);
    }

    #[test]
    fn phantom_queue_drains_caps_and_marks_linearly() {
        // 50 Mbit/s port, drain at 90 %: 5.625 MB/s
        let c = PhantomConfig::for_port(50_000_000, 90, 100_000, 20, 80);
        assert_eq!(c.drain_bytes_per_sec, 5_625_000);
        assert!(c.check().is_ok());
        // 1500 B every 240 µs = line rate: grows by 1500 - 1350 = 150 B per packet
        let mut q = 0;
        for _ in 0..100 {
            q = phantom_step(q, 240, 1500, &c);
        }
        assert_eq!(q, 1500 + 99 * 150);
        // at 80 % of line rate it stays within one packet
        let mut q2 = 0;
        for _ in 0..10_000 {
            q2 = phantom_step(q2, 300, 1500, &c);
        }
        assert!(q2 <= 1500);
        assert_eq!(phantom_step(99_000, 0, 9000, &c), 100_000, "capped at its size");
        assert_eq!(phantom_step(50_000, 20_000_000, 1500, &c), 1500, "long idle drains it");
        assert!(!phantom_mark(20_000, 0, &c) && phantom_mark(80_000, u32::MAX, &c));
        // halfway between kmin and kmax: about half of the draws mark
        let marks = (0..1000u32).filter(|i| phantom_mark(50_000, i.wrapping_mul(4_294_967), &c)).count();
        assert!((450..=550).contains(&marks), "{marks}");
        assert!(PhantomConfig { kmin_bytes: 5, kmax_bytes: 5, ..c }.check().is_err());
    }

    /// One packet through the link-fed pair, as the eBPF marker does it.
    fn link_fed(state: &mut (u64, u64), elapsed_us: u64, len: u64, c: &PhantomConfig) -> u64 {
        let (m, sent) = mirror_step(state.0, elapsed_us, len, c);
        state.0 = m;
        state.1 = link_phantom_step(state.1, elapsed_us, sent, c);
        state.1
    }

    #[test]
    fn link_fed_phantom_ignores_bursts_but_not_overload() {
        // 1 Gbit/s port, phantom draining at 90 %, 675 kB, marking from 135 kB.
        let c = PhantomConfig::for_port(1_000_000_000, 90, 675_000, 20, 80).link_fed(1_000_000_000);
        assert_eq!(c.line_bytes_per_sec, 125_000_000);
        assert!(c.check().is_ok());
        // A 4 ms CPU stall of a port carrying 80 %: 400 kB at once. Fed at
        // enqueue the phantom queue jumps to 3 × kmin; fed by the link it grows
        // by the 10 % the drain lags the line while the mirror sends them.
        let burst = 400_000;
        let enq = phantom_step(0, 4_000, burst, &c);
        assert!(enq > 2 * c.kmin_bytes, "{enq}");
        let mut st = (0, 0);
        let mut peak = link_fed(&mut st, 4_000, burst, &c);
        for _ in 0..400 {
            peak = peak.max(link_fed(&mut st, 10, 0, &c));
        }
        assert!((35_000..=45_000).contains(&peak), "peak {peak}");
        assert!(peak < c.kmin_bytes);
        // Sustained overload (arrivals at 95 % of the line for 40 ms): the
        // phantom queue grows by the 5 % above its drain, as fed at enqueue.
        let mut st = (0, 0);
        let mut q = 0;
        for _ in 0..3_167 {
            // 1500 B every 12.5 µs on average = 120 MB/s (96 %)
            link_fed(&mut st, 12, 1500, &c);
            q = link_fed(&mut st, 13, 1500, &c);
        }
        // 6,334 packets in 79.2 ms: 9.5 MB in, 8.9 MB drained: ~0.6 MB.
        assert!(q > c.kmax_bytes, "q {q}");
        // Below the drain rate nothing accumulates.
        let mut st = (0, 0);
        let mut q = 0;
        for _ in 0..10_000 {
            q = link_fed(&mut st, 14, 1500, &c); // 107 MB/s = 86 %
        }
        assert!(q <= 1500, "q {q}");
        // A line rate below the drain rate is refused.
        assert!(PhantomConfig { line_bytes_per_sec: 1, ..c }.check().is_err());
    }

    /// The marker's queue behind ingress links, as the BPF program forms it:
    /// the queue of instantaneous arrivals less what the wires still carry.
    fn behind_links(q: &mut u64, wires: &mut [u64], link: usize, elapsed_us: u64, len: u64, c: &PhantomConfig) -> u64 {
        *q = phantom_step(*q, elapsed_us, len, c);
        for (i, w) in wires.iter_mut().enumerate() {
            *w = if i == link { wire_step(*w, elapsed_us, len, c.ingress_bytes_per_sec) } else { wire_level(*w, elapsed_us, c.ingress_bytes_per_sec) };
        }
        q.saturating_sub(wires.iter().sum())
    }

    #[test]
    fn ingress_links_bound_what_queues() {
        // A 10 Gbit/s port marking at the DCTCP paper's K (65 packets) as a
        // mirror (drain 100 %), senders whose NICs run at the port's rate.
        let k = 97_500;
        let c = PhantomConfig::for_port(10_000_000_000, 100, 10 * k, 10, 11).behind_links(10_000_000_000);
        assert!(c.check().is_ok());
        // Two 64 kB GSO packets from one sender 20 µs apart: at once they
        // queue above K (what veths deliver), behind a 10 Gbit/s NIC nothing
        // queues (the NIC is no faster than the port).
        let gso = 66_000;
        assert!(phantom_step(phantom_step(0, 0, gso, &c), 20, gso, &c) > k);
        let (mut q, mut w) = (0, [0u64; 2]);
        let mut top = 0;
        for _ in 0..100 {
            top = top.max(behind_links(&mut q, &mut w, 0, 53, gso, &c)); // 10 Gbit/s of 66 kB packets
        }
        top = top.max(behind_links(&mut q, &mut w, 0, 0, 20 * gso, &c)); // a CPU's batch of 20 at once
        for _ in 0..200 {
            top = top.max(behind_links(&mut q, &mut w, 0, 10, 0, &c));
        }
        assert!(top < 3_000, "one sender at the port's rate queued {top}");
        // Two senders at the port's rate each: the queue grows at the
        // port's rate (2x in, 1x out): 50 µs of it is 62.5 kB, 200 µs 250 kB.
        let (mut q, mut w) = (0, [0u64; 2]);
        let mut level = 0;
        for _ in 0..40 {
            behind_links(&mut q, &mut w, 0, 5, 6_250, &c);
            level = behind_links(&mut q, &mut w, 1, 0, 6_250, &c);
        }
        assert!((240_000..=260_000).contains(&level), "two senders for 200 µs: {level}");
        // The links' rate is bounded like the port's.
        assert!(PhantomConfig { ingress_bytes_per_sec: 60_000_000_000, ..c }.check().is_err());
    }

    #[test]
    fn packed_states_drain_by_wall_time_across_cpus_and_the_clock_wrap() {
        // A fresh state starts its clock at any time, also past 2^31 µs of
        // uptime (a first version stamped 0 there and never drained again).
        let late = 3_000_000_000u32; // 50 min of uptime
        assert_eq!(packed_elapsed(0, late), (0, late));
        let st = (5_000u64 << 32) | late as u64;
        assert_eq!(packed_elapsed(st, late.wrapping_add(40)), (40, late.wrapping_add(40)));
        // Another CPU stored a later time: no time passed, its stamp stays.
        assert_eq!(packed_elapsed(st, late - 3), (0, late));
        // Across the 32-bit wrap and after a long idle: the real gap.
        let st = (5_000u64 << 32) | (u32::MAX - 9) as u64;
        assert_eq!(packed_elapsed(st, 10), (20, 10));
        assert_eq!(packed_elapsed(st, 2_000_000_000).0, 2_000_000_010);
    }

    #[test]
    fn a_mirror_of_a_shaped_port_is_judged_less_its_bucket() {
        // 1 Gbit/s HTB port (burst 64k, and one 64 kB GSO packet on negative
        // tokens), stepped at the DCTCP paper's K = 20 packets.
        let k = 30_000;
        let c = PhantomConfig::for_port(1_000_000_000, 100, 10 * k, 10, 11).shaper_burst(2 * 65_536);
        assert!(c.check().is_ok());
        // Two GSO packets at once: the fluid mirror holds 130 kB, the port
        // sends both at once (its bucket) and queues nothing.
        let q = phantom_step(phantom_step(0, 0, 65_000, &c), 0, 65_000, &c);
        assert!(q > k && judged_queue(q, 0, &c) == 0);
        // A standing queue above the bucket is judged as the port holds it.
        assert_eq!(judged_queue(131_072 + 40_000, 0, &c), 40_000);
        assert_eq!(judged_queue(131_072 + 40_000, 10_000, &c), 30_000);
        assert!(PhantomConfig { port_burst_bytes: (1 << 30) + 1, ..c }.check().is_err());
    }

    #[test]
    fn amrt_spare_needs_one_idle_mtu_after_the_previous_packet() {
        // 10 Gbit/s: 800 ps per byte, one 1500-byte MTU = 1200 ns.
        let c = AmrtConfig::for_port(10_000_000_000, 1500, false).unwrap();
        assert_eq!((c.ps_per_byte, c.mtu_ns, c.transit), (800, 1200, 0));
        let t0 = 1_000_000;
        let (_, f) = amrt_step(0, t0, 1500, &c);
        assert_eq!(f, t0 + 1200, "the link is busy for one MTU");
        // Back to back (next packet as the previous one finishes): no spare.
        assert_eq!(amrt_step(f, t0 + 1200, 1500, &c), (false, t0 + 2400));
        // Idle for exactly one MTU after the previous packet: spare (eq. 2, ≥).
        assert!(amrt_step(f, t0 + 2400, 1500, &c).0);
        assert!(!amrt_step(f, t0 + 2399, 1500, &c).0);
        // A small previous packet leaves more idle time in the same gap.
        let (_, f_small) = amrt_step(0, t0, 100, &c);
        assert!(amrt_step(f_small, t0 + 1300, 1500, &c).0);
        // Extreme lengths saturate instead of wrapping into "spare".
        let (_, f_huge) = amrt_step(0, t0, u64::MAX, &c);
        assert!(!amrt_step(f_huge, t0 + 1, 1500, &c).0);
    }

    #[test]
    fn amrt_bursts_from_a_shaper_are_busy_time_not_spare() {
        // 100 Mbit/s: 80 ns per byte, one MTU = 120 µs. A shaper at line
        // rate releases 8 packets back to back every 960 µs (its burst):
        // the link is fully used, and no packet may be marked spare.
        let c = AmrtConfig::for_port(100_000_000, 1500, false).unwrap();
        let mut finish = 0;
        let mut spare = 0;
        for burst in 0..100u64 {
            for i in 0..8u64 {
                let now = 1_000_000 + burst * 960_000 + i; // 1 ns apart
                let (s, f) = amrt_step(finish, now, 1500, &c);
                spare += s as u32;
                finish = f;
            }
        }
        assert!(spare <= 1, "{spare} false spare marks on a full link");
        // The same bursts with half the time free: each burst follows
        // 960 µs of real idle time.
        let mut finish = 0;
        let mut spare = 0;
        for burst in 0..100u64 {
            for i in 0..8u64 {
                let (s, f) = amrt_step(finish, 1_000_000 + burst * 1_920_000 + i, 1500, &c);
                spare += s as u32;
                finish = f;
            }
        }
        assert_eq!(spare, 100, "one spare mark per idle period");
        // A clock read out of order (another CPU) is busy time, not 2^48 ns
        // of idle time; a runaway backlog is capped.
        let (s, f) = amrt_step(5_000_000, 4_999_000, 1500, &c);
        assert!(!s && f == 5_000_000 + 120_000);
        let (s, f) = amrt_step(4_000_000_000, 1_000_000, 1500, &c);
        assert!(!s && f == 1_000_000 + 64 * 120_000 + 120_000);
        // The 48-bit clock wraps: a packet just after the wrap is idle time.
        let (s, _) = amrt_step(AMRT_TIME_MASK - 10, 1_000_000, 1500, &c);
        assert!(s);
        assert!(AmrtConfig::for_port(999_999, 1500, false).is_err());
        assert!(AmrtConfig::for_port(1_000_000, 100, true).is_err());
        assert_eq!(AmrtConfig::for_port(1_000_000, 1500, true).unwrap().mtu_ns, 12_000_000);
    }
}
