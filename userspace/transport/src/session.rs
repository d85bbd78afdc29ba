//! One transfer's two ends as state machines, without I/O: bytes in
//! (datagrams and the clock), bytes out (datagrams to send, data written at
//! its offset). `udp` drives them over a socket; tests drive them directly.
//!
//! The model, after uno-sc25 §4 and the artifact:
//! - The data is cut into packets of `payload` bytes and the packets into
//!   blocks of `code.data`, each sent with its `code.parity` parity packets
//!   (the last block holds what is left). Every transmission has its own
//!   number (`seq`); the receiver ACKs each one, echoing whether it arrived
//!   CE-marked, and says how many blocks from the first it has whole.
//! - The window is UnoCC's (`xdcc_algo::uno`, the code the kernel modules
//!   run), fed one sample per ACK as the simulator feeds it; the sender paces
//!   at its rate.
//! - A packet is lost when a later transmission was ACKed and it was not,
//!   and either three later ones were (on one path) or it left 9/8 of an
//!   RTT ago (QUIC's two thresholds; sprayed packets only the second): it
//!   leaves the window, and nothing is resent: the block's parity may cover it. UnoCC
//!   hears a loss only when the code could not cover it (a NACK: "an
//!   unrecoverable block", §4.3) and a timeout: UnoRC's losses are the WAN's
//!   failures and corruption (Table 1), which the parity is there to absorb,
//!   while Uno's congestion signal is ECN (evidence:
//!   testbed/notes/2026-11-29-transport.md).
//! - The receiver arms a block's timer at its first packet, for "the
//!   estimated maximum queuing and transmission delay" (§4.3): the packet
//!   carries the transmission part (the time the block's remaining packets
//!   take to leave at the sender's current rate) and the receiver adds its
//!   queuing allowance, `nack_queue_ns`. When the timer expires
//!   with the block incomplete the receiver NACKs the block once
//!   (`ec::BlockRx`), and the sender resends the block's packets that it
//!   sent and has no ACK for and that are not in flight.
//! - When no ACK came for a retransmission timeout (3 smoothed RTTs, or
//!   SRTT + 4 RTTVAR if the RTT varies more, at least `min_rto_ns`, doubled
//!   per timeout without progress), everything
//!   in flight is presumed lost (UnoCC's RTO) and the unACKed packets of the
//!   blocks not yet whole are resent: a block lost whole arms no timer.
//!   A timeout is spurious when the first ACK after it is of a packet sent
//!   before it (Eifel, RFC 3522, with the sequence numbers in place of
//!   timestamps: no packet is ever sent twice under one): UnoCC's window
//!   comes back (`undo`, as Linux's `undo_cwnd`) and the balancer's
//!   re-draws of that timeout come undone as their late ACKs arrive.
//! - The receiver holds at most `max_open_blocks` blocks past its first
//!   incomplete one (its memory bound), and the sender opens no block
//!   beyond that.
//! - Every packet goes out on an *entropy* that `xdcc_multipath::lb`'s
//!   `Balancer` picks (the simulator's code): UnoLB (§4.2) round-robins
//!   over `subflows` entropies under the one window and re-draws the
//!   silent ones on a NACK or a timeout; ECMP keeps one. The I/O layer maps
//!   an entropy to a path (its own UDP source port).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io;

use xdcc_algo::uno::{Params as UnoParams, Uno};
use xdcc_algo::{AckSample, CongestionControl, Event, FlowInit};
use xdcc_multipath::ec::{BlockCode, RxOutcome};
use xdcc_multipath::lb::{Balancer, Strategy, UnoLbConfig};

use crate::coding::{BlockAssembly, Coder, CodingError, MAX_DATA_PAYLOAD};
use crate::wire::{BlockPacket, Packet, BLOCK_HEADER_LEN};

/// What both ends agree on before the first packet (the control
/// connection's job; a test's here).
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The transfer's id, in every packet.
    pub flow: u64,
    /// The transfer's length in bytes.
    pub bytes: u64,
    /// Data bytes per packet.
    pub payload: usize,
    pub code: BlockCode,
    /// The queuing delay the receiver allows a block's packets beyond their
    /// transmission time (which the packets carry) before it NACKs the
    /// block. The receiver's setting; a sender ignores it.
    pub nack_queue_ns: u64,
    /// Blocks the receiver holds open at once (its memory: this many times
    /// `code.data + code.parity` packets).
    pub max_open_blocks: u64,
    /// The least retransmission timeout.
    pub min_rto_ns: u64,
}

impl Config {
    pub fn check(&self) -> Result<(), String> {
        self.code.check().map_err(str::to_string)?;
        if self.payload == 0 || self.payload > MAX_DATA_PAYLOAD {
            return Err(format!("payload of {} bytes per packet (1..={MAX_DATA_PAYLOAD})", self.payload));
        }
        if self.max_open_blocks == 0 {
            return Err("max_open_blocks must be at least 1".into());
        }
        if self.min_rto_ns == 0 {
            return Err("min_rto_ns must be at least 1".into());
        }
        Ok(())
    }

    /// Data packets in the transfer.
    pub fn data_packets(&self) -> u64 {
        self.bytes.div_ceil(self.payload as u64)
    }

    pub fn blocks(&self) -> u64 {
        self.code.blocks(self.data_packets())
    }

    /// Where data packet `index` of `block` starts, and how long it is.
    fn span(&self, block: u64, index: u8) -> (u64, usize) {
        let n = block.saturating_mul(u64::from(self.code.data)).saturating_add(u64::from(index));
        let start = n.saturating_mul(self.payload as u64);
        let len = self.bytes.saturating_sub(start).min(self.payload as u64);
        (start, len as usize)
    }

    /// The data bytes in the first `blocks` blocks.
    pub fn bytes_in(&self, blocks: u64) -> u64 {
        blocks.saturating_mul(u64::from(self.code.data)).saturating_mul(self.payload as u64).min(self.bytes)
    }

    fn data_in(&self, block: u64) -> u8 {
        self.code.data_in(block, self.data_packets())
    }

    /// The parity shards' length in `block`: its longest payload plus 2.
    fn shard_len(&self, block: u64) -> usize {
        self.span(block, 0).1 + 2
    }
}

/// Where the sender reads the data.
pub trait Source {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
}

/// Where the receiver writes it.
pub trait Sink {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
}

impl Source for &[u8] {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
        let src = start.checked_add(buf.len()).and_then(|end| self.get(start..end)).ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl Source for std::fs::File {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }
}

/// A buffer of the transfer's length.
impl Sink for Vec<u8> {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
        let dst = start.checked_add(data.len()).and_then(|end| self.get_mut(start..end)).ok_or(io::ErrorKind::WriteZero)?;
        dst.copy_from_slice(data);
        Ok(())
    }
}

impl Sink for std::fs::File {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(self, data, offset)
    }
}

/// How many packets declared lost the sender remembers for late ACKs.
const MAX_DECLARED_LOST: usize = 8192;
/// Packets reordered past this many later ACKed transmissions are lost.
const REORDER_PACKETS: u64 = 3;
/// The least reordering window in time (checked on ACKs, not by a timer:
/// QUIC's 1 ms granularity would be ten datacenter RTTs).
const MIN_REORDER_NS: u64 = 10_000;
/// Longest retransmission timeout after backing off (unless 3 RTTs are
/// longer): a dead path is probed often enough to be left before the peer
/// timeout (testbed/notes/2026-11-29-unolb-transport.md).
const MAX_RTO_NS: u64 = 200_000_000;
/// The balancer's least base RTT (what a subflow's silence is measured
/// against).
const MIN_BASE_RTT_NS: u64 = 10_000;
/// Longest NACK wait the receiver accepts from a packet.
const MAX_NACK_WAIT_NS: u64 = 10_000_000_000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SenderStats {
    pub packets: u64,
    pub parity_packets: u64,
    /// Packets sent again (after a NACK or a timeout).
    pub resent: u64,
    pub acked: u64,
    pub marked: u64,
    pub lost: u64,
    pub nacks: u64,
    pub timeouts: u64,
    /// Datagrams that were not this transfer's ACKs or NACKs.
    pub ignored: u64,
    /// Entropies (paths) the balancer re-drew after NACKs and timeouts.
    pub redrawn: u64,
    /// Of those, re-draws a late ACK undid (the old path had delivered).
    pub redraws_undone: u64,
    /// Timeouts whose first ACK was of a packet sent before them (the
    /// window came back).
    pub spurious_timeouts: u64,
    /// Packets declared lost whose ACK came later (reordered past the
    /// loss thresholds, or a spurious timeout).
    pub late_acks: u64,
}

#[derive(Clone, Copy)]
struct Sent {
    block: u64,
    index: u8,
    bytes: u32,
    sent_ns: u64,
    inflight_at_send: u32,
    entropy: u16,
}

pub struct Sender<S: Source> {
    cfg: Config,
    src: S,
    coder: Coder,
    params: UnoParams,
    cc: Uno,
    blocks: u64,
    /// Blocks the receiver has whole, from the first.
    blocks_done: u64,
    /// The next block to open.
    next_block: u64,
    /// Packets to send, in order: opened blocks' packets, and resends.
    queue: VecDeque<(u64, u8)>,
    /// Per open block: its parity shards and which of its packets were ACKed.
    open: BTreeMap<u64, OpenBlock>,
    inflight: BTreeMap<u64, Sent>,
    /// The latest packets declared lost (at most `MAX_DECLARED_LOST`): a
    /// late ACK still marks its packet received and tells the balancer its
    /// path delivers.
    declared_lost: BTreeMap<u64, Sent>,
    inflight_bytes: u64,
    next_seq: u64,
    largest_acked: Option<u64>,
    srtt_ns: u64,
    /// The RTT's mean deviation (RFC 6298's RTTVAR).
    rttvar_ns: u64,
    rto_backoff: u32,
    /// The latest timeout, until the first ACK after it says whether it
    /// was spurious (module doc).
    undecided_timeout_ns: Option<u64>,
    last_progress_ns: u64,
    next_send_ns: u64,
    lb: Balancer,
    /// The balancer's random source (xorshift64*, seeded by the flow id).
    rng: u64,
    pub stats: SenderStats,
}

/// The transport's UnoLB: `subflows` entropies, each re-drawn only when a
/// packet sent on it went unanswered (`UnoLbConfig::unanswered`: after a
/// timeout the window holds one packet, and the artifact's rule would
/// re-draw every subflow it was not sent on).
pub const fn unolb(subflows: u8) -> Strategy {
    Strategy::UnoLb(UnoLbConfig { subflows, prefer_recent: false, unanswered: true })
}

/// The next number of a xorshift64* generator: the balancer's draws need
/// to differ between flows and subflows, not to be secret.
fn draw(state: &mut u64) -> u32 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
}

/// A block the sender has opened: its parity, and per packet (bit = index)
/// whether it is queued to go out, in flight, or ACKed.
struct OpenBlock {
    parity: Vec<Vec<u8>>,
    /// The receiver's NACK for it came (it sends one, to several ports).
    nacked: bool,
    queued: u32,
    in_flight: u32,
    acked: u32,
}

impl OpenBlock {
    /// The packets a resend should queue: sent once, neither ACKed, nor in
    /// flight, nor queued already (a packet not yet sent goes anyway).
    fn to_resend(&self, width: u8) -> u32 {
        let all = 1u32.checked_shl(u32::from(width)).map_or(u32::MAX, |b| b - 1);
        all & !(self.acked | self.in_flight | self.queued)
    }
}

impl<S: Source> Sender<S> {
    /// A sender of `cfg.bytes` bytes of `src`, its window UnoCC's with
    /// `params`, its paths chosen by `lb`; `rtt_hint_ns` sizes the first
    /// window (0: UnoCC's default) and is the balancer's base RTT. Every
    /// packet is paced, as the reference code paces (`unpaced_at_line_rate`
    /// is set to 0): no NIC spaces this sender's datagrams, which unpaced
    /// would leave as a burst of the window.
    pub fn new(cfg: Config, src: S, params: UnoParams, lb: Strategy, rtt_hint_ns: u32, now_ns: u64) -> Result<Self, String> {
        let params = UnoParams { unpaced_at_line_rate: 0, ..params };
        cfg.check()?;
        lb.check().map_err(str::to_string)?;
        if matches!(lb, Strategy::Spray) {
            return Err("spray: a fresh path per packet is the simulator's baseline, not a transport's (use unolb)".into());
        }
        let coder = Coder::new(cfg.code).map_err(|e| e.to_string())?;
        let mss = u32::try_from(cfg.payload + BLOCK_HEADER_LEN).unwrap_or(u32::MAX);
        let cc = Uno::new(&params, &FlowInit { now_ns, mss, rtt_hint_ns });
        let mut rng = cfg.flow | 1;
        let base_rtt_ns = u64::from(rtt_hint_ns).max(MIN_BASE_RTT_NS);
        let lb = Balancer::new(lb, base_rtt_ns, now_ns, &mut || draw(&mut rng));
        Ok(Self {
            blocks: cfg.blocks(),
            cfg,
            src,
            coder,
            params,
            cc,
            blocks_done: 0,
            next_block: 0,
            queue: VecDeque::new(),
            open: BTreeMap::new(),
            inflight: BTreeMap::new(),
            declared_lost: BTreeMap::new(),
            inflight_bytes: 0,
            next_seq: 0,
            largest_acked: None,
            srtt_ns: u64::from(rtt_hint_ns),
            rttvar_ns: u64::from(rtt_hint_ns) / 2,
            rto_backoff: 0,
            undecided_timeout_ns: None,
            last_progress_ns: now_ns,
            next_send_ns: now_ns,
            lb,
            rng,
            stats: SenderStats::default(),
        })
    }

    /// The entropies (paths) in use now, one per subflow.
    pub fn entropies(&self) -> &[u16] {
        self.lb.entropies()
    }

    /// Every block is whole at the receiver.
    pub fn is_done(&self) -> bool {
        self.blocks_done >= self.blocks
    }

    pub fn cwnd(&self) -> u32 {
        self.cc.cwnd()
    }

    pub fn srtt_ns(&self) -> u64 {
        self.srtt_ns
    }

    pub fn blocks_done(&self) -> u64 {
        self.blocks_done
    }

    /// The bytes the receiver has whole, from the first.
    pub fn bytes_done(&self) -> u64 {
        self.cfg.bytes_in(self.blocks_done)
    }

    /// The retransmission timeout: 3 smoothed RTTs, or RFC 6298's
    /// SRTT + 4 RTTVAR when the RTT varies more (sprayed paths of unequal
    /// queues; a loaded host's late ACKs), at least `min_rto_ns`.
    fn rto_ns(&self) -> u64 {
        let base = self
            .srtt_ns
            .saturating_mul(3)
            .max(self.srtt_ns.saturating_add(self.rttvar_ns.saturating_mul(4)))
            .max(self.cfg.min_rto_ns);
        base.saturating_mul(1u64 << self.rto_backoff.min(63)).min(MAX_RTO_NS.max(base))
    }

    fn packet_len(&self, block: u64, index: u8) -> usize {
        if index < self.cfg.data_in(block) {
            self.cfg.span(block, index).1
        } else {
            self.cfg.shard_len(block)
        }
    }

    /// The next packet to send: a queued one still needed, else the next
    /// block's first, if the receiver can hold that block.
    fn next_packet(&mut self) -> Result<Option<(u64, u8)>, CodingError> {
        while let Some(&(block, index)) = self.queue.front() {
            match self.open.get(&block) {
                Some(b) if b.acked & (1 << index) == 0 => return Ok(Some((block, index))),
                _ => {
                    self.queue.pop_front();
                    if let Some(b) = self.open.get_mut(&block) {
                        b.queued &= !(1 << index);
                    }
                }
            }
        }
        let window_end = self.blocks_done.saturating_add(self.cfg.max_open_blocks).min(self.blocks);
        if self.next_block >= window_end {
            return Ok(None);
        }
        let block = self.next_block;
        let k = self.cfg.data_in(block);
        let mut data = Vec::with_capacity(usize::from(k));
        for i in 0..k {
            let (start, len) = self.cfg.span(block, i);
            let mut buf = vec![0u8; len];
            self.src.read_at(start, &mut buf).map_err(|_| CodingError::Code("the source is shorter than the transfer"))?;
            data.push(buf);
        }
        let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
        let parity = self.coder.encode(&refs)?;
        let width = k.saturating_add(self.cfg.code.parity);
        let queued = 1u32.checked_shl(u32::from(width)).map_or(u32::MAX, |b| b - 1);
        self.open.insert(block, OpenBlock { parity, nacked: false, queued, in_flight: 0, acked: 0 });
        self.queue.extend((0..width).map(|i| (block, i)));
        self.next_block += 1;
        Ok(self.queue.front().copied())
    }

    /// Writes the next datagram into `out` (cleared first) if the window and
    /// the pacing allow one at `now_ns`, and returns the entropy it goes out
    /// on; None if nothing is to be sent now.
    pub fn poll_transmit(&mut self, now_ns: u64, out: &mut Vec<u8>) -> io::Result<Option<u16>> {
        out.clear();
        if self.is_done() || now_ns < self.next_send_ns {
            return Ok(None);
        }
        let Some((block, index)) = self.next_packet().map_err(|e| io::Error::other(e.to_string()))? else {
            return Ok(None);
        };
        let len = self.packet_len(block, index);
        let wire_len = (len + BLOCK_HEADER_LEN) as u64;
        if self.inflight_bytes > 0 && self.inflight_bytes.saturating_add(wire_len) > u64::from(self.cc.cwnd()) {
            return Ok(None);
        }
        self.queue.pop_front();
        if let Some(b) = self.open.get_mut(&block) {
            b.queued &= !(1 << index);
            b.in_flight |= 1 << index;
        }
        let k = self.cfg.data_in(block);
        let mut payload = Vec::new();
        let payload: &[u8] = if index < k {
            let (start, len) = self.cfg.span(block, index);
            payload.resize(len, 0);
            self.src.read_at(start, &mut payload)?;
            &payload
        } else {
            let b = self.open.get(&block).ok_or_else(|| io::Error::other("parity of a block not open"))?;
            b.parity.get(usize::from(index - k)).map(|p| p.as_slice()).unwrap_or(&[])
        };
        let seq = self.next_seq;
        let wait_us = (self.block_wait_ns(block, wire_len) / 1000).min(u64::from(u32::MAX)) as u32;
        let p = BlockPacket { flow: self.cfg.flow, seq, block, index, data: k, parity: self.cfg.code.parity, wait_us, payload };
        Packet::Block(p).write(out).map_err(|e| io::Error::other(e.to_string()))?;
        self.next_seq += 1;
        self.stats.packets += 1;
        if index >= k {
            self.stats.parity_packets += 1;
        }
        let inflight_at_send = self.inflight_bytes.min(u64::from(u32::MAX)) as u32;
        let rng = &mut self.rng;
        let entropy = self.lb.next_entropy(now_ns, &mut || draw(rng));
        self.inflight.insert(seq, Sent { block, index, bytes: wire_len as u32, sent_ns: now_ns, inflight_at_send, entropy });
        self.inflight_bytes += wire_len;
        if let Some(rate) = self.pacing_rate() {
            let gap = wire_len.saturating_mul(1_000_000_000) / rate;
            self.next_send_ns = now_ns.saturating_add(gap);
        }
        Ok(Some(entropy))
    }

    /// How long the block's remaining packets take to leave once a packet
    /// of `block` does (what the packet tells the receiver): the packets
    /// still queued, each taking `wire_len` at the window's rate over the
    /// smoothed RTT (or the pacing rate, if slower).
    fn block_wait_ns(&self, block: u64, wire_len: u64) -> u64 {
        let queued = self.open.get(&block).map_or(0, |b| u64::from(b.queued.count_ones()));
        let by_window = self.srtt_ns.saturating_mul(wire_len) / u64::from(self.cc.cwnd()).max(wire_len);
        let by_rate = self.pacing_rate().map_or(0, |r| wire_len.saturating_mul(1_000_000_000) / r);
        queued.saturating_mul(by_window.max(by_rate))
    }

    /// The rate the sender paces at, bytes/s: UnoCC's (`cwnd / base RTT`).
    fn pacing_rate(&self) -> Option<u64> {
        self.cc.pacing_rate().filter(|&r| r > 0 && r < xdcc_algo::UNPACED)
    }

    /// When the sender next wants the clock, after `poll_transmit` said no:
    /// when pacing lets the next packet go if the window has room for one
    /// and one is waiting, else the retransmission timeout (an ACK may come
    /// first: a window-limited sender waits for one).
    pub fn next_timeout(&self) -> Option<u64> {
        if self.is_done() {
            return None;
        }
        let rto = self.last_progress_ns.saturating_add(self.rto_ns());
        let wire_len = (self.cfg.payload + BLOCK_HEADER_LEN) as u64;
        let room = self.inflight_bytes == 0 || self.inflight_bytes.saturating_add(wire_len) <= u64::from(self.cc.cwnd());
        let window_end = self.blocks_done.saturating_add(self.cfg.max_open_blocks).min(self.blocks);
        let waiting = !self.queue.is_empty() || self.next_block < window_end;
        Some(if room && waiting { rto.min(self.next_send_ns) } else { rto })
    }

    /// A datagram from the receiver.
    pub fn on_datagram(&mut self, now_ns: u64, datagram: &[u8]) {
        match Packet::parse(datagram) {
            Ok(Packet::Ack { flow, seq, ce, blocks_done }) if flow == self.cfg.flow => {
                self.on_ack(now_ns, seq, ce, blocks_done)
            }
            Ok(Packet::Nack { flow, block }) if flow == self.cfg.flow => self.on_nack(now_ns, block),
            _ => self.stats.ignored += 1,
        }
    }

    fn on_ack(&mut self, now_ns: u64, seq: u64, ce: bool, blocks_done: u64) {
        if seq >= self.next_seq {
            self.stats.ignored += 1;
            return;
        }
        if blocks_done > self.blocks_done {
            self.blocks_done = blocks_done.min(self.blocks);
            let keep = self.open.split_off(&self.blocks_done);
            self.open = keep;
        }
        self.last_progress_ns = now_ns;
        self.rto_backoff = 0;
        let Some(s) = self.inflight.remove(&seq) else {
            // Declared lost before its ACK came: the receiver has it, and
            // its path delivers (the window and the RTT hear nothing: the
            // sample is stale).
            if let Some(s) = self.declared_lost.remove(&seq) {
                self.stats.late_acks += 1;
                if self.undecided_timeout_ns.take().is_some_and(|t| s.sent_ns < t) {
                    self.stats.spurious_timeouts += 1;
                    self.cc.undo(&self.params);
                }
                if let Some(b) = self.open.get_mut(&s.block) {
                    b.acked |= 1 << s.index;
                }
                let rng = &mut self.rng;
                self.lb.on_ack(now_ns, s.sent_ns, s.entropy, ce, &mut || draw(rng));
                self.stats.redraws_undone = u64::from(self.lb.moves.undone);
            }
            return;
        };
        self.inflight_bytes = self.inflight_bytes.saturating_sub(u64::from(s.bytes));
        if let Some(b) = self.open.get_mut(&s.block) {
            b.acked |= 1 << s.index;
            b.in_flight &= !(1 << s.index);
        }
        // (Sent after the timeout, or with none pending: not spurious.)
        self.undecided_timeout_ns = None;
        self.stats.acked += 1;
        if ce {
            self.stats.marked += 1;
        }
        let rng = &mut self.rng;
        self.lb.on_ack(now_ns, s.sent_ns, s.entropy, ce, &mut || draw(rng));
        let rtt = now_ns.saturating_sub(s.sent_ns).max(1);
        if self.srtt_ns == 0 {
            (self.srtt_ns, self.rttvar_ns) = (rtt, rtt / 2);
        } else {
            self.rttvar_ns = self.rttvar_ns - self.rttvar_ns / 4 + self.srtt_ns.abs_diff(rtt) / 4;
            self.srtt_ns = self.srtt_ns - self.srtt_ns / 8 + rtt / 8;
        }
        self.lb.observe_rtt(self.srtt_ns);
        self.cc.on_ack(
            &self.params,
            &AckSample {
                now_ns,
                acked_bytes: s.bytes,
                marked_bytes: if ce { s.bytes } else { 0 },
                rtt_ns: rtt.min(u64::from(u32::MAX)) as u32,
                srtt_ns: self.srtt_ns.min(u64::from(u32::MAX)) as u32,
                send_time_ns: s.sent_ns,
                inflight_at_send: s.inflight_at_send,
                inflight: self.inflight_bytes.min(u64::from(u32::MAX)) as u32,
                app_limited: false,
            },
        );
        self.largest_acked = Some(self.largest_acked.map_or(seq, |l| l.max(seq)));
        self.detect_losses(now_ns, rtt);
    }

    /// The packets sent before the largest ACKed one that are lost: on one
    /// path, those `REORDER_PACKETS` before it; sprayed over several, whose
    /// paths' queues reorder far more, those sent 9/8 of an RTT ago (QUIC's
    /// time threshold, RFC 9002 §6.1.2; the packet threshold would call
    /// every packet that took a longer path lost).
    fn detect_losses(&mut self, now_ns: u64, latest_rtt_ns: u64) {
        let Some(largest) = self.largest_acked else { return };
        let below = if self.lb.entropies().len() > 1 { 0 } else { largest.saturating_sub(REORDER_PACKETS) };
        let threshold = self.srtt_ns.max(latest_rtt_ns).saturating_mul(9) / 8;
        let sent_by = now_ns.saturating_sub(threshold.max(MIN_REORDER_NS));
        // (Sequence and send time rise together: the lost are a prefix.)
        let lost: Vec<u64> =
            self.inflight.range(..largest).take_while(|(&seq, p)| seq < below || p.sent_ns <= sent_by).map(|(&s, _)| s).collect();
        for seq in lost {
            if let Some(s) = self.inflight.remove(&seq) {
                self.inflight_bytes = self.inflight_bytes.saturating_sub(u64::from(s.bytes));
                if let Some(b) = self.open.get_mut(&s.block) {
                    b.in_flight &= !(1 << s.index);
                }
                self.stats.lost += 1;
                self.remember_lost(seq, s);
            }
        }
    }

    fn remember_lost(&mut self, seq: u64, s: Sent) {
        self.declared_lost.insert(seq, s);
        while self.declared_lost.len() > MAX_DECLARED_LOST {
            self.declared_lost.pop_first();
        }
    }

    fn on_nack(&mut self, now_ns: u64, block: u64) {
        match self.open.get_mut(&block) {
            // (A copy: the receiver sends its one NACK to several ports.)
            Some(b) if !b.nacked => b.nacked = true,
            _ => {
                self.stats.ignored += 1;
                return;
            }
        }
        self.stats.nacks += 1;
        let rng = &mut self.rng;
        self.lb.on_nack(now_ns, &mut || draw(rng));
        self.stats.redrawn = u64::from(self.lb.moves.entropies);
        // A NACK for packets still in flight or not yet sent (the receiver's
        // timer ran out first) asks for nothing and tells UnoCC nothing.
        let resent = self.resend(block);
        if resent > 0 {
            let bytes = (self.cfg.payload + BLOCK_HEADER_LEN) as u32;
            self.cc.on_event(&self.params, Event::Loss { bytes: bytes.saturating_mul(resent) }, now_ns);
        }
    }

    /// Queues the packets of `block` the receiver may lack (sent, not
    /// ACKed, not in flight) ahead of new blocks: the receiver waits on it.
    /// Returns how many.
    fn resend(&mut self, block: u64) -> u32 {
        let width = self.cfg.data_in(block).saturating_add(self.cfg.code.parity);
        let Some(b) = self.open.get_mut(&block) else { return 0 };
        let missing = b.to_resend(width);
        b.queued |= missing;
        self.stats.resent += u64::from(missing.count_ones());
        for i in (0..width).rev().filter(|i| missing & (1 << i) != 0) {
            self.queue.push_front((block, i));
        }
        missing.count_ones()
    }

    /// The clock reached `now_ns`: a retransmission timeout if no ACK came
    /// for one.
    pub fn on_timeout(&mut self, now_ns: u64) {
        if self.is_done() || now_ns < self.last_progress_ns.saturating_add(self.rto_ns()) {
            return;
        }
        self.stats.timeouts += 1;
        self.undecided_timeout_ns = Some(now_ns);
        let rng = &mut self.rng;
        self.lb.on_timeout(now_ns, &mut || draw(rng));
        self.stats.redrawn = u64::from(self.lb.moves.entropies);
        if !self.inflight.is_empty() {
            self.cc.on_event(&self.params, Event::Rto, now_ns);
        }
        self.stats.lost += self.inflight.len() as u64;
        for (seq, s) in std::mem::take(&mut self.inflight) {
            self.remember_lost(seq, s);
        }
        self.inflight_bytes = 0;
        let open: Vec<u64> = self.open.keys().copied().collect();
        for b in self.open.values_mut() {
            b.in_flight = 0;
        }
        // (Last block first: each goes to the queue's front.)
        for block in open.into_iter().rev() {
            self.resend(block);
        }
        self.rto_backoff = self.rto_backoff.saturating_add(1).min(16);
        self.last_progress_ns = now_ns;
        self.next_send_ns = now_ns;
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReceiverStats {
    /// Packets of the transfer that were kept.
    pub packets: u64,
    pub marked: u64,
    pub duplicates: u64,
    /// Blocks whose data was (partly) recomputed from parity, and the data
    /// packets so recomputed.
    pub rebuilt_blocks: u64,
    pub rebuilt_packets: u64,
    pub nacks: u64,
    /// Datagrams refused: malformed, another flow's, or contradicting the
    /// transfer (a block or length it does not have, beyond the open window).
    pub refused: u64,
}

pub struct Receiver<W: Sink> {
    cfg: Config,
    sink: W,
    coder: Coder,
    blocks: u64,
    blocks_done: u64,
    open: BTreeMap<u64, BlockAssembly>,
    /// Blocks written beyond `blocks_done` (a hole before them).
    done_ahead: BTreeSet<u64>,
    pub stats: ReceiverStats,
}

impl<W: Sink> Receiver<W> {
    pub fn new(cfg: Config, sink: W) -> Result<Self, String> {
        cfg.check()?;
        let coder = Coder::new(cfg.code).map_err(|e| e.to_string())?;
        Ok(Self {
            blocks: cfg.blocks(),
            cfg,
            sink,
            coder,
            blocks_done: 0,
            open: BTreeMap::new(),
            done_ahead: BTreeSet::new(),
            stats: ReceiverStats::default(),
        })
    }

    pub fn is_done(&self) -> bool {
        self.blocks_done >= self.blocks
    }

    pub fn into_sink(self) -> W {
        self.sink
    }

    /// The bytes written, from the first, with no hole before them.
    pub fn bytes_done(&self) -> u64 {
        self.cfg.bytes_in(self.blocks_done)
    }

    /// Blocks held incomplete (at most `max_open_blocks`).
    pub fn open_blocks(&self) -> usize {
        self.open.len()
    }

    /// A datagram arrived at `now_ns` (`ce`: its IP header was CE-marked).
    /// Returns the ACK to send, if the datagram was this transfer's; an
    /// error only when the sink cannot be written.
    pub fn on_datagram(&mut self, now_ns: u64, datagram: &[u8], ce: bool) -> io::Result<Option<Packet<'static>>> {
        let p = match Packet::parse(datagram) {
            Ok(Packet::Block(p)) if p.flow == self.cfg.flow => p,
            _ => {
                self.stats.refused += 1;
                return Ok(None);
            }
        };
        let ack = |blocks_done| Packet::Ack { flow: p.flow, seq: p.seq, ce, blocks_done };
        if p.block < self.blocks_done || self.done_ahead.contains(&p.block) {
            self.stats.duplicates += 1;
            return Ok(Some(ack(self.blocks_done)));
        }
        if !self.belongs(&p) {
            self.stats.refused += 1;
            return Ok(None);
        }
        let block = p.block;
        let asm = match self.open.entry(block) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => match BlockAssembly::new(p.data, p.parity) {
                Ok(a) => e.insert(a),
                Err(_) => {
                    self.stats.refused += 1;
                    return Ok(None);
                }
            },
        };
        let wait_ns = u64::from(p.wait_us).saturating_mul(1000).min(MAX_NACK_WAIT_NS).saturating_add(self.cfg.nack_queue_ns);
        match asm.add(&p, now_ns, wait_ns) {
            Err(_) => {
                self.stats.refused += 1;
                return Ok(None);
            }
            Ok(RxOutcome::Duplicate | RxOutcome::AlreadyComplete) => self.stats.duplicates += 1,
            Ok(RxOutcome::Counted) => self.count(ce),
            Ok(RxOutcome::Completed) => {
                self.count(ce);
                self.finish(block)?;
            }
        }
        Ok(Some(ack(self.blocks_done)))
    }

    fn count(&mut self, ce: bool) {
        self.stats.packets += 1;
        if ce {
            self.stats.marked += 1;
        }
    }

    /// Whether a packet of a block not yet whole is one this transfer can
    /// have: a block it has, within the open window, of that block's
    /// geometry, a data payload of exactly its length, a parity shard of
    /// the block's shard length.
    fn belongs(&self, p: &BlockPacket) -> bool {
        let window_end = self.blocks_done.saturating_add(self.cfg.max_open_blocks).min(self.blocks);
        if p.block >= window_end || (p.data, p.parity) != (self.cfg.data_in(p.block), self.cfg.code.parity) {
            return false;
        }
        let want = if p.is_parity() { self.cfg.shard_len(p.block) } else { self.cfg.span(p.block, p.index).1 };
        p.payload.len() == want
    }

    /// Writes a whole block's data and moves the window.
    fn finish(&mut self, block: u64) -> io::Result<()> {
        let Some(asm) = self.open.remove(&block) else { return Ok(()) };
        let missing = asm.missing_data() as u64;
        let data = asm.rebuild(&self.coder).map_err(|e| io::Error::other(format!("block {block}: {e}")))?;
        if missing > 0 {
            self.stats.rebuilt_blocks += 1;
            self.stats.rebuilt_packets += missing;
        }
        for (i, d) in data.iter().enumerate() {
            let (start, len) = self.cfg.span(block, i as u8);
            if d.len() != len {
                return Err(io::Error::other(format!("block {block}: packet {i} rebuilt as {} bytes, not {len}", d.len())));
            }
            self.sink.write_at(start, d)?;
        }
        self.done_ahead.insert(block);
        while self.done_ahead.remove(&self.blocks_done) {
            self.blocks_done += 1;
        }
        Ok(())
    }

    /// The NACKs due at `now_ns`.
    pub fn poll_nacks(&mut self, now_ns: u64) -> Vec<Packet<'static>> {
        let flow = self.cfg.flow;
        let mut out = Vec::new();
        for (&block, asm) in self.open.iter_mut() {
            if asm.rx().on_timer(now_ns) {
                out.push(Packet::Nack { flow, block });
            }
        }
        self.stats.nacks += out.len() as u64;
        out
    }

    /// When the next NACK is due, if any block waits for one.
    pub fn next_timeout(&mut self) -> Option<u64> {
        self.open.values_mut().filter_map(|a| a.rx().nack_due_ns()).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdcc_algo::NetConfig;

    fn cfg(bytes: u64) -> Config {
        Config {
            flow: 0x5eed,
            bytes,
            payload: 1000,
            code: BlockCode::default(),
            nack_queue_ns: 200_000,
            max_open_blocks: 64,
            min_rto_ns: 1_000_000,
        }
    }

    fn params() -> UnoParams {
        UnoParams::from_net(&NetConfig { link_rate_bps: 1_000_000_000, intra_rtt_ns: 100_000, inter_rtt_ns: 1_000_000, mtu: 1034 })
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 1000) as u8).collect()
    }

    /// Runs a transfer through a path that delays every datagram by
    /// `one_way_ns` and drops the data-path packets `drop` says to;
    /// returns the receiver's bytes and both ends' counters.
    fn run(bytes: usize, mut drop: impl FnMut(&BlockPacket) -> bool) -> (Vec<u8>, SenderStats, ReceiverStats) {
        let (got, tx, rx, done) = run_paths(bytes, unolb(10), |_| {}, |p, _| drop(p));
        assert!(done, "the transfer ended: {tx:?} {rx:?}");
        (got, tx, rx)
    }

    /// `run` with the sender's paths chosen by `lb` (`setup` sees the
    /// sender first), `drop` told each packet's entropy too, and 30 s of
    /// simulated time: whether the transfer ended is returned.
    fn run_paths(
        bytes: usize,
        lb: Strategy,
        setup: impl FnOnce(&Sender<&[u8]>),
        mut drop: impl FnMut(&BlockPacket, u16) -> bool,
    ) -> (Vec<u8>, SenderStats, ReceiverStats, bool) {
        let src = data(bytes);
        let c = cfg(bytes as u64);
        let one_way_ns = 50_000;
        let mut now = 0u64;
        let mut tx = Sender::new(c, src.as_slice(), params(), lb, 100_000, now).unwrap();
        setup(&tx);
        let mut rx = Receiver::new(c, vec![0u8; bytes]).unwrap();
        // (arrival time, towards the receiver?, datagram)
        let mut wire: Vec<(u64, bool, Vec<u8>)> = Vec::new();
        let mut buf = Vec::new();
        while now < 30_000_000_000 {
            while let Some(entropy) = tx.poll_transmit(now, &mut buf).unwrap() {
                let Ok(Packet::Block(p)) = Packet::parse(&buf) else { panic!("the sender wrote a bad packet") };
                if !drop(&p, entropy) {
                    wire.push((now + one_way_ns, true, buf.clone()));
                }
            }
            for n in rx.poll_nacks(now) {
                let mut b = Vec::new();
                n.write(&mut b).unwrap();
                wire.push((now + one_way_ns, false, b));
            }
            tx.on_timeout(now);
            if tx.is_done() && rx.is_done() {
                break;
            }
            // Next event: a datagram's arrival or either end's timer.
            let next = [wire.iter().map(|w| w.0).min(), tx.next_timeout(), rx.next_timeout()]
                .into_iter()
                .flatten()
                .min()
                .expect("something is pending");
            now = next.max(now + 1);
            let (due, later): (Vec<_>, Vec<_>) = wire.into_iter().partition(|w| w.0 <= now);
            wire = later;
            for (_, to_rx, d) in due {
                if to_rx {
                    if let Some(a) = rx.on_datagram(now, &d, false).unwrap() {
                        let mut b = Vec::new();
                        a.write(&mut b).unwrap();
                        wire.push((now + one_way_ns, false, b));
                    }
                } else {
                    tx.on_datagram(now, &d);
                }
            }
        }
        let done = tx.is_done() && rx.is_done();
        let stats = rx.stats;
        (rx.into_sink(), tx.stats, stats, done)
    }

    /// Drops the packets `which` picks the first time each is sent.
    fn first_sending(which: impl Fn(&BlockPacket) -> bool) -> impl FnMut(&BlockPacket) -> bool {
        let mut seen = BTreeSet::new();
        move |p| which(p) && seen.insert((p.block, p.index))
    }

    #[test]
    fn a_clean_path_moves_the_bytes_without_rebuilding() {
        let bytes = 1_234_567;
        let (got, tx, rx) = run(bytes, |_| false);
        assert!(got == data(bytes), "byte-exact");
        assert_eq!((rx.rebuilt_blocks, rx.nacks, tx.resent, tx.lost), (0, 0, 0, 0));
        assert_eq!(tx.parity_packets, 2 * cfg(bytes as u64).blocks(), "two parity packets per block");
    }

    #[test]
    fn two_losses_per_block_are_rebuilt_from_parity_and_not_resent() {
        let bytes = 800_000;
        // Every block loses its data packets 1 and 6 on their first sending.
        let (got, tx, rx) = run(bytes, first_sending(|p| p.index == 1 || p.index == 6));
        assert!(got == data(bytes), "byte-exact");
        assert_eq!(rx.rebuilt_blocks, cfg(bytes as u64).blocks());
        assert_eq!(rx.rebuilt_packets, 2 * rx.rebuilt_blocks);
        assert_eq!((rx.nacks, tx.resent), (0, 0), "the code recovered every loss");
        assert!(tx.lost > 0, "the losses were seen");
    }

    #[test]
    fn three_losses_in_a_block_are_nacked_and_resent() {
        let bytes = 80_000; // 10 blocks
        let (got, tx, rx) = run(bytes, first_sending(|p| p.block == 4 && p.index < 3));
        assert!(got == data(bytes), "byte-exact");
        assert_eq!(rx.nacks, 1);
        assert_eq!(tx.nacks, 1);
        assert_eq!(tx.resent, 3, "the block's three missing packets, nothing else");
    }

    #[test]
    fn a_block_lost_whole_is_resent_after_a_timeout() {
        let bytes = 80_000;
        let (got, tx, rx) = run(bytes, first_sending(|p| p.block == 9));
        assert!(got == data(bytes), "byte-exact");
        assert!(tx.timeouts >= 1, "no packet of the block arrived to arm its timer: the sender's timeout resends it");
        assert_eq!(rx.rebuilt_blocks, 0);
        assert_eq!(tx.packets, 110, "the block sent once more, nothing else");
    }

    /// Two equal-cost paths, an entropy's path its parity; the path of the
    /// sender's first entropy is black-holed from the start.
    fn dead_path_of_the_first_entropy(lb: Strategy) -> (Vec<u8>, SenderStats, ReceiverStats, bool) {
        let dead = std::cell::Cell::new(0u16);
        run_paths(200_000, lb, |s| dead.set(s.entropies()[0] % 2), |_, e| e % 2 == dead.get())
    }

    #[test]
    fn unolb_leaves_a_black_holed_path_where_ecmp_is_stuck() {
        let (_, tx, rx, done) = dead_path_of_the_first_entropy(Strategy::Ecmp);
        assert!(!done && rx.packets == 0 && tx.timeouts > 5, "ECMP's one path is dead: no byte in 30 s: {tx:?} {rx:?}");

        let (got, tx, rx, done) = dead_path_of_the_first_entropy(unolb(10));
        assert!(done && got == data(200_000), "byte-exact through the live path: {tx:?} {rx:?}");
        assert!(tx.redrawn >= 1 && tx.nacks + tx.timeouts >= 1, "the silent subflows were re-drawn after NACKs or timeouts: {tx:?}");
        assert!(tx.lost > 0 && rx.rebuilt_blocks > 0, "the dead path's losses: {tx:?} {rx:?}");
    }

    #[test]
    fn a_late_ack_marks_its_packet_received_and_a_nack_copy_is_ignored() {
        let c = cfg(8_000); // one block: 8 data, 2 parity
        let src = data(8_000);
        let mut tx = Sender::new(c, src.as_slice(), params(), unolb(10), 100_000, 0).unwrap();
        let mut buf = Vec::new();
        let (mut sent, mut now) = (0, 0);
        while sent < 10 && now < 1_000_000 {
            while tx.poll_transmit(now, &mut buf).unwrap().is_some() {
                sent += 1;
            }
            now += 1_000;
        }
        assert_eq!(sent, 10, "the block went out by {now} ns");
        let ack = |tx: &mut Sender<&[u8]>, now: u64, seq: u64| {
            let mut d = Vec::new();
            Packet::Ack { flow: c.flow, seq, ce: false, blocks_done: 0 }.write(&mut d).unwrap();
            tx.on_datagram(now, &d);
        };
        // Packets 1..9 answered at 100 us, packet 9 at 300 us: packet 0, on
        // a longer path, is then declared lost (sent more than 9/8 of an RTT
        // before), and its ACK comes after all.
        for seq in 1..9 {
            ack(&mut tx, 100_000, seq);
        }
        ack(&mut tx, 300_000, 9);
        assert_eq!(tx.stats.lost, 1);
        ack(&mut tx, 310_000, 0);
        assert_eq!(tx.stats.late_acks, 1);
        // The receiver's NACK (as if a packet was missing), twice: the first
        // asks for nothing (every packet is answered), the copy is ignored.
        let mut d = Vec::new();
        Packet::Nack { flow: c.flow, block: 0 }.write(&mut d).unwrap();
        let ignored = tx.stats.ignored;
        tx.on_datagram(400_000, &d);
        tx.on_datagram(400_000, &d);
        assert_eq!((tx.stats.nacks, tx.stats.resent, tx.stats.ignored), (1, 0, ignored + 1));
    }

    #[test]
    fn a_timeout_whose_first_ack_is_of_an_earlier_packet_is_undone() {
        // One block out, then nothing heard for the timeout: the window
        // falls to one packet. For (first ACK after it, spurious):
        // packet 0, sent before the timeout: the window comes back;
        // a packet sent after it: the timeout stands, and a later ACK of
        // packet 0 changes nothing.
        for (after_first, spurious) in [(false, true), (true, false)] {
            let c = cfg(16_000);
            let src = data(16_000);
            let mut tx = Sender::new(c, src.as_slice(), params(), unolb(4), 100_000, 0).unwrap();
            let mut buf = Vec::new();
            let mut now = 0;
            while now < 100_000 {
                while tx.poll_transmit(now, &mut buf).unwrap().is_some() {}
                now += 1_000;
            }
            let before = tx.cc.cwnd();
            let ack = |tx: &mut Sender<&[u8]>, now: u64, seq: u64| {
                let mut d = Vec::new();
                Packet::Ack { flow: c.flow, seq, ce: false, blocks_done: 0 }.write(&mut d).unwrap();
                tx.on_datagram(now, &d);
            };
            tx.on_timeout(5_000_000);
            assert_eq!(tx.stats.timeouts, 1);
            assert!(tx.cc.cwnd() < before, "the timeout cut the window");
            if after_first {
                let resent = tx.poll_transmit(5_000_000, &mut buf).unwrap();
                assert!(resent.is_some(), "a packet goes out after the timeout");
                let last = tx.next_seq - 1;
                ack(&mut tx, 5_100_000, last);
            }
            ack(&mut tx, 5_200_000, 0);
            assert_eq!(tx.stats.late_acks, 1);
            assert_eq!(tx.stats.spurious_timeouts, u64::from(spurious));
            assert_eq!(tx.cc.cwnd() >= before, spurious, "window {} against {before}", tx.cc.cwnd());
        }
    }

    #[test]
    fn the_timeout_widens_with_the_rtts_variation() {
        let c = cfg(400_000);
        let src = data(400_000);
        let rto_after = |rtts: &[u64]| {
            let mut tx = Sender::new(c, src.as_slice(), params(), unolb(4), 2_000_000, 0).unwrap();
            let mut buf = Vec::new();
            let mut now = 0;
            for &rtt in rtts {
                while tx.poll_transmit(now, &mut buf).unwrap().is_some() {}
                let seq = tx.next_seq - 1;
                now += rtt;
                let mut d = Vec::new();
                Packet::Ack { flow: c.flow, seq, ce: false, blocks_done: 0 }.write(&mut d).unwrap();
                tx.on_datagram(now, &d);
            }
            (tx.rto_ns(), tx.srtt_ns)
        };
        // Steady 2 ms RTTs: 3 smoothed RTTs.
        let (steady, srtt) = rto_after(&[2_000_000; 40]);
        assert_eq!(steady, 3 * srtt);
        // Alternating 1 and 5 ms (mean deviation ~2 ms): SRTT + 4 RTTVAR.
        let (varying, srtt) = rto_after(&[1_000_000, 5_000_000].repeat(20));
        assert!(varying > 3 * srtt + 2_000_000, "rto {varying} for srtt {srtt}");
    }

    #[test]
    fn datagrams_that_do_not_belong_are_refused_and_change_nothing() {
        let c = cfg(20_000);
        let mut rx = Receiver::new(c, vec![0u8; 20_000]).unwrap();
        let payload = vec![1u8; 1000];
        let good = BlockPacket { flow: c.flow, seq: 0, block: 0, index: 0, data: 8, parity: 2, wait_us: 200, payload: &payload };
        let bad = [
            BlockPacket { flow: c.flow + 1, ..good },
            BlockPacket { block: 3, ..good },         // the transfer has blocks 0..=2
            BlockPacket { data: 7, ..good },          // block 0 holds 8
            BlockPacket { payload: &payload[..999], ..good },
            BlockPacket { index: 8, payload: &payload, ..good }, // parity of the wrong length
        ];
        for p in bad {
            let mut b = Vec::new();
            Packet::Block(p).write(&mut b).unwrap();
            assert_eq!(rx.on_datagram(0, &b, false).unwrap(), None, "{p:?}");
        }
        assert_eq!(rx.on_datagram(0, b"junk", false).unwrap(), None);
        assert_eq!(rx.stats.refused, 6);
        assert_eq!(rx.stats.packets, 0);
        assert!(rx.next_timeout().is_none(), "no block was opened");
        let mut b = Vec::new();
        Packet::Block(good).write(&mut b).unwrap();
        assert_eq!(rx.on_datagram(0, &b, true).unwrap(), Some(Packet::Ack { flow: c.flow, seq: 0, ce: true, blocks_done: 0 }));
        assert_eq!(rx.on_datagram(0, &b, false).unwrap().map(|_| ()), Some(()), "a duplicate is ACKed");
        assert_eq!((rx.stats.packets, rx.stats.duplicates, rx.stats.marked), (1, 1, 1));
    }

    #[test]
    fn parity_that_does_not_belong_ends_the_transfer_with_an_error() {
        let c = cfg(8_000);
        let mut rx = Receiver::new(c, vec![0u8; 8_000]).unwrap();
        let payload = vec![3u8; 1000];
        let forged = vec![0xffu8; 1002];
        let mut result = Ok(None);
        for index in 1..9u8 {
            let p = if index < 8 { &payload } else { &forged };
            let packet = BlockPacket { flow: c.flow, seq: u64::from(index), block: 0, index, data: 8, parity: 2, wait_us: 0, payload: p };
            let mut b = Vec::new();
            Packet::Block(packet).write(&mut b).unwrap();
            result = rx.on_datagram(0, &b, false);
        }
        let e = result.unwrap_err();
        assert!(e.to_string().starts_with("block 0: "), "{e}");
        assert_eq!(rx.bytes_done(), 0, "nothing of the block was written");
    }

    #[test]
    fn bad_configs_are_refused() {
        let src: &[u8] = &[];
        for c in [
            Config { payload: 0, ..cfg(1) },
            Config { payload: MAX_DATA_PAYLOAD + 1, ..cfg(1) },
            Config { max_open_blocks: 0, ..cfg(1) },
            Config { code: BlockCode { data: 0, parity: 1 }, ..cfg(1) },
        ] {
            assert!(Sender::new(c, src, params(), Strategy::Ecmp, 0, 0).is_err());
            assert!(Receiver::new(c, Vec::new()).is_err());
        }
        for lb in [Strategy::Spray, Strategy::UnoLb(xdcc_multipath::lb::UnoLbConfig { subflows: 0, ..Default::default() })] {
            assert!(Sender::new(cfg(1), src, params(), lb, 0, 0).is_err(), "{lb:?}");
        }
    }
}
