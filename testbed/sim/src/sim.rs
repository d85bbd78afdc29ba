//! The packet-level engine: a deterministic discrete-event simulation of
//! senders, store-and-forward bottleneck queues and receivers.
//!
//! Model (what is simulated and what is not):
//! - Every flow has its own sender NIC (serialization at the host rate, plus
//!   the algorithm's pacing rate if it has one), a path through one or more
//!   named queues, and a fixed propagation RTT split evenly over the hops of the
//!   forward path (half the RTT) and the uncongested ACK path (the other half).
//! - Queues are FIFO, drop-tail with a byte buffer, serialize at their line
//!   rate, and CE-mark at enqueue by threshold or RED on the instantaneous
//!   length, and/or by a phantom queue, or (AMRT's anti-ECN) at dequeue when
//!   the link idled for one MTU time before the packet, ANDed along the path.
//! - Receivers ACK every packet immediately and echo its CE mark (the
//!   DCTCP-style receiver the kernel modules set up), so each ACK reports one
//!   packet: bytes, RTT, send time, in-flight at send, mark.
//! - Losses are found by RACK (`LossRecovery::Rack`, the default): a packet
//!   is lost once one sent after it is acknowledged and a reordering window
//!   has passed — zero until the flow has seen reordering (so on the FIFO
//!   paths of queues in series: at the first later ACK), then min RTT / 4,
//!   a quarter more per round trip with a spurious loss, up to the srtt;
//!   lost packets are retransmitted first; a retransmission timeout
//!   (max(min_rto, 3·srtt), or the scenario's fixed `rto_us`) retransmits
//!   everything outstanding. `LossRecovery::Timeout` (the Uno artifact's
//!   transport) has a timer per packet instead. Headers and delayed ACKs
//!   are not modelled.
//! - Routed networks (`[topology]`, `crate::topology`): a packet's next queue
//!   is chosen at every node by ECMP over the equal-cost next hops, hashing
//!   (flow, the packet's entropy, the node's salt); the flow's load balancer
//!   (`xdcc_multipath::lb`) picks the entropy per packet. A flow pinned to
//!   links (`path` in a routed network) takes those links in order: their
//!   queues and delays, the rest of half its RTT before the first. A failed
//!   link drops everything in its failure windows. ACKs take the
//!   reverse propagation without queueing. UnoRC flows (`ec`) send blocks of
//!   data + parity packets; the receiver counts a block once `data` of its
//!   packets arrived, NACKs blocks still short a timer after their first
//!   packet, and the flow completes when every block is complete, learnt
//!   from the ACK of the packet that completed the last one.
//! - Windows grow only while the window limits the sender, as Linux grows
//!   them (`tcp_is_cwnd_limited()`, which the kernel modules' adapter
//!   applies): a flow held back by its NIC, its receive window or its data
//!   keeps its window instead of growing it without bound. Same rule as
//!   the adapter: the window counts as limiting for one window of data after
//!   the sender last found it full, and in slow start while it is below
//!   twice the most that was in flight; algorithms with their own pacing
//!   rate are left alone.
//! - The receive window, when the scenario sets one (`receive_window`):
//!   a flow never has more than it in flight; it starts at `init_kb` and
//!   grows by every byte delivered (doubling per round trip, Linux's
//!   receive-buffer autotuning for a reader that keeps up) up to `max_kb`.
//! - Hosts are not in lockstep: every packet reaches its first queue up to
//!   `jitter_us` (default one MTU time) later than its NIC finished it, drawn
//!   from the seed, a flow's packets staying in order. Simultaneous arrivals
//!   at a queue are therefore ordered at random, not by which flow the
//!   scenario lists first.
//! - End hosts can delay ACKs (`host_delay_us`, default 0): each ACK an
//!   extra delay with that mean — a steady share (`host_delay_steady`,
//!   default 0) plus an exponential remainder — a flow's ACKs in order: the
//!   host delay of a loaded Linux host that the papers' NICs do not have.
//! - Same seed, same scenario: the same result, bit for bit (ties between
//!   events at the same nanosecond are broken by insertion order).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use anyhow::{bail, Result};
use xdcc_algo::{AckSample, Event, FlowInit, NetConfig};

use crate::cc::{AnyCc, AnyParams, CcKind};
use crate::scenario::{LossRecovery, Marking, RtoBackoff, Scenario};
use crate::rng::Rng;
use crate::topology::LossState;
use xdcc_common::markers::{amrt_step, AmrtConfig};
use xdcc_multipath::{Balancer, BlockCode, BlockRx, RxOutcome};

/// Algorithms see `sim time + CLOCK_BASE_NS`, like a kernel clock that has been
/// running for a while (0 means "unknown" in `AckSample`).
pub const CLOCK_BASE_NS: u64 = 1_000_000_000;

#[derive(Clone, Copy, Debug)]
struct Pkt {
    flow: u32,
    hop: u16,
    ce: bool,
    /// An AMRT (anti-ECN) queue has decided `ce` already: later ones AND it.
    amrt_seen: bool,
    size: u32,
    seq: u64,
    send_time: u64,
    inflight_at_send: u32,
    /// Routed flows: the entropy ECMP hashes, and the propagation delay met
    /// so far (the ACK's way back).
    entropy: u16,
    prop_ns: u32,
    /// UnoRC: this packet completed its block / the flow (carried by its ACK).
    block_done: bool,
    flow_done: bool,
    /// A retransmission (UnoRC: it carries the longer NACK wait).
    retx: bool,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    // (Packets in flight wait in `Sim::in_flight`; the heap holds their
    // index, which keeps its entries small: the heap is the hot path.)
    QueueArrive(u16, u32),
    QueueDepart(u16),
    RecvArrive(u32),
    AckArrive(u32),
    SenderWake(u32),
    /// A packet of (flow, bytes) left its host's shared NIC ([`SharedNic`]).
    NicDepart(u32, u32),
    RtoCheck(u32),
    /// RACK's reordering timer of a flow.
    RackTimer(u32),
    /// UnoRC: the receiver's timer of (flow, block), and its NACK reaching
    /// the sender.
    NackTimer(u32, u32),
    NackArrive(u32, u32),
    /// Routed networks: the first packet on a link's wire (after its queue)
    /// reaches the link's far end; the first ACK on a flow's way back
    /// reaches its sender. Both are FIFO (one delay per link; a flow's ACKs
    /// in order), so the heap holds one event per busy link or flow instead
    /// of one per packet.
    WireExit(u16),
    AckWireExit(u32),
    FlowStart(u32),
    FlowStop(u32),
    Sample,
}

struct Scheduled {
    t: u64,
    seq: u64,
    ev: Ev,
}
impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.t, self.seq).cmp(&(o.t, o.seq))
    }
}

struct PhantomState {
    size: f64,
    drain_bytes_per_ns: f64,
    kmin: f64,
    kmax: f64,
    level: f64,
    last_ns: u64,
}

pub(crate) struct Queue {
    pub name: String,
    rate_bps: f64,
    buffer: u64,
    marking: Marking,
    phantom: Option<PhantomState>,
    /// AMRT anti-ECN marking, and when the link finishes the packets
    /// dequeued so far (None: none yet).
    amrt: Option<AmrtConfig>,
    link_finish: Option<u64>,
    loss_prob: f64,
    /// A routed network's link (its departures are computed, see `wire`),
    /// rather than a queue in series.
    link: bool,
    /// Routed networks: the link's loss model, its propagation delay (after
    /// the queue), the node it leads to, and when it is a black hole
    /// ([from, until) in ns).
    loss: Option<LossState>,
    latency_ns: u64,
    to_node: u32,
    fail: Vec<(u64, Option<u64>)>,
    /// In the run's report and time series.
    pub report: bool,
    /// Routed networks: packets on the link's wire, with their arrival time
    /// at its far end. A routed link's queue is computed, not stepped: a
    /// FIFO at a fixed rate sends a packet at max(arrival, the link free)
    /// for its size, so each packet's departure is known when it arrives
    /// (`departures`: those still in the queue, with when they leave), and
    /// goes straight onto the wire — one event per packet per hop.
    wire: VecDeque<(u64, Pkt)>,
    departures: VecDeque<(u64, u32)>,
    busy_until: u64,
    pkts: VecDeque<Pkt>,
    pub bytes: u64,
    // statistics
    pub tx_bytes: u64,
    pub tx_bytes_measured: u64,
    pub drops: u64,
    pub marks: u64,
    pub enqueued: u64,
    /// Packets a failed link swallowed (also in `drops`).
    pub blackholed: u64,
}

impl Queue {
    fn new(name: String, rate_bps: f64, buffer: u64, marking: Marking, phantom: Option<crate::scenario::Phantom>, loss_prob: f64, mtu: u32) -> Result<Self> {
        let amrt = (marking == Marking::Amrt)
            .then(|| AmrtConfig::for_port(rate_bps.round() as u64, mtu as u64, false))
            .transpose()
            .map_err(|e| anyhow::anyhow!("queues.{name}: AMRT marking: {e}"))?;
        Ok(Queue {
            name,
            rate_bps,
            buffer,
            marking,
            amrt,
            link_finish: None,
            phantom: phantom.map(|p| {
                let size = p.size_kb.map_or(buffer as f64, |s| s * 1000.0);
                PhantomState {
                    size,
                    drain_bytes_per_ns: rate_bps * p.drain_frac / 8.0 / 1e9,
                    kmin: p.min_frac * size,
                    kmax: p.max_frac * size,
                    level: 0.0,
                    last_ns: 0,
                }
            }),
            loss_prob,
            link: false,
            loss: None,
            latency_ns: 0,
            to_node: 0,
            fail: Vec::new(),
            report: true,
            wire: VecDeque::new(),
            departures: VecDeque::new(),
            busy_until: 0,
            pkts: VecDeque::new(),
            bytes: 0,
            tx_bytes: 0,
            tx_bytes_measured: 0,
            drops: 0,
            marks: 0,
            enqueued: 0,
            blackholed: 0,
        })
    }

    /// A routed link: the packets that have left by `now` leave the queue.
    fn flush(&mut self, now: u64) {
        while let Some(&(t, size)) = self.departures.front() {
            if t > now {
                break;
            }
            self.departures.pop_front();
            self.bytes -= size as u64;
            self.tx_bytes += size as u64;
        }
    }

    fn tx_ns(&self, size: u32) -> u64 {
        ((size as f64 * 8.0) * 1e9 / self.rate_bps).ceil() as u64
    }

    fn mark(&mut self, now: u64, size: u32, mtu: u32, rng: &mut Rng) -> bool {
        let q = self.bytes as f64;
        let mut ce = match self.marking {
            Marking::None | Marking::Amrt => false,
            Marking::Threshold { k_pkts } => q >= k_pkts * mtu as f64,
            Marking::Red { min_frac, max_frac, pmax } => {
                let (lo, hi) = (min_frac * self.buffer as f64, max_frac * self.buffer as f64);
                if q < lo {
                    false
                } else if q >= hi {
                    true
                } else {
                    rng.unit() < pmax * (q - lo) / (hi - lo)
                }
            }
        };
        if let Some(p) = &mut self.phantom {
            let dt = now.saturating_sub(p.last_ns) as f64;
            p.level = (p.level - dt * p.drain_bytes_per_ns).max(0.0);
            p.last_ns = now;
            p.level = (p.level + size as f64).min(p.size);
            let l = p.level;
            let pq = if l < p.kmin {
                false
            } else if l >= p.kmax {
                true
            } else {
                rng.unit() < (l - p.kmin) / (p.kmax - p.kmin)
            };
            ce |= pq;
        }
        ce
    }

    /// The packet at the head starts its transmission at `now` (dequeue):
    /// AMRT's eq. 2 on the gap since the previous dequeue, eq. 3 along the path.
    fn dequeue_mark(&mut self, now: u64) {
        let Some(mut p) = self.pkts.front().copied() else { return };
        self.amrt_mark(&mut p, now);
        if let Some(f) = self.pkts.front_mut() {
            *f = p;
        }
    }

    /// AMRT's decision for packet `p` starting its transmission at `now`.
    fn amrt_mark(&mut self, p: &mut Pkt, now: u64) {
        let Some(cfg) = self.amrt else { return };
        let (spare, finish) = amrt_step(self.link_finish.unwrap_or(0), now, p.size as u64, &cfg);
        // (The first packet: the link was idle since the start.)
        let spare = spare || self.link_finish.is_none();
        self.link_finish = Some(finish);
        let ce = if p.amrt_seen { p.ce && spare } else { spare };
        if ce && !p.ce {
            self.marks += 1;
        }
        p.ce = ce;
        p.amrt_seen = true;
    }
}

#[derive(Clone, Copy, Debug)]
struct Sent {
    seq: u64,
    size: u32,
    send_time: u64,
}

/// A flow through a routed network.
struct Routed {
    src: u32,
    dst: u32,
    /// Index of the hop-distance table toward `dst` (`Sim::dist`).
    dist: usize,
    /// The flow's part of every ECMP hash (its 5-tuple).
    hash: u64,
    lb: Balancer,
    /// Both ends in one DC.
    intra_dc: bool,
}

/// A UnoRC flow: sender and receiver sides of its blocks.
struct FlowEc {
    code: BlockCode,
    /// Packets of data (the flow's size in MTUs); parity comes on top.
    data_packets: u64,
    rx: Vec<BlockRx>,
    rx_complete: u64,
    /// Blocks the sender knows complete (from ACKs): their packets are
    /// neither retransmitted nor waited for.
    tx_complete: Vec<bool>,
    nack_timeout_ns: u64,
    retx_nack_timeout_ns: u64,
    /// NACKs the receiver sent.
    nacks: u64,
}

pub(crate) struct Flow {
    pub name: String,
    pub group: String,
    pub kind: CcKind,
    params: usize,
    cc: Option<AnyCc>,
    path: Vec<u16>,
    hop_delay_ns: u64,
    ack_delay_ns: u64,
    /// When the flow's last ACK reaches it (host delay keeps ACKs in order).
    last_ack_arrival_ns: u64,
    host_rate_bps: f64,
    pub rtt_ns: u64,
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
    pub size: Option<u64>,
    /// The scenario's size (`size` less UnoRC's parity).
    pub data_bytes: Option<u64>,
    snd_nxt: u64,
    pub delivered: u64,
    inflight: u64,
    outstanding: VecDeque<Sent>,
    retx: VecDeque<(u64, u32)>,
    nic_free_ns: u64,
    /// The host NIC the flow shares with its host's other flows (an index
    /// into `Sim::nics`), and its bytes queued there.
    nic: Option<u32>,
    nic_bytes: u64,
    /// When the last packet sent reaches the first queue (jitter keeps order).
    first_hop_arrival_ns: u64,
    next_pace_ns: u64,
    wake_at: Option<u64>,
    rto_armed: bool,
    last_progress_ns: u64,
    srtt_ns: f64,
    /// Timeouts in a row without an RTT sample (`RtoBackoff::Timer`: the
    /// timeout is doubled this many times).
    rto_backoffs: u32,
    pub last_rtt_ns: u64,
    pub sending: bool,
    pub started: bool,
    pub finish_ns: Option<u64>,
    pub losses: u64,
    pub rtos: u64,
    pub marked_acks: u64,
    pub acks: u64,
    /// The receiver's advertised window and its cap (u64::MAX: unlimited).
    rwnd: u64,
    rwnd_max: u64,
    /// Linux's `tcp_cwnd_validate()` state: whether the window limited the
    /// sender in the current window of data (which ends when everything up
    /// to `cwnd_usage_seq` is acknowledged) and the most bytes in flight in it.
    cwnd_limited: bool,
    cwnd_usage_seq: u64,
    max_inflight: u64,
    /// Routed flows (None: the fixed `path`).
    routed: Option<Routed>,
    ec: Option<FlowEc>,
    /// ECN-capable: queues may mark its packets (`FlowSpec::ect`).
    ect: bool,
    /// RACK (RFC 8985): the send time and RTT of the most recently sent
    /// packet acknowledged, whether the flow has seen reordering, its
    /// minimum RTT, its last RTO, its armed reordering timer.
    rack_xmit_ns: u64,
    rack_rtt_ns: u64,
    reord_seen: bool,
    /// RACK's reordering window in quarters of the min RTT (Linux
    /// `reo_wnd_steps`: one more per round trip with a spurious loss).
    reo_wnd_steps: u32,
    reo_wnd_step_at_ns: u64,
    min_rtt_ns: u64,
    last_rto_ns: u64,
    rack_timer_at: Option<u64>,
    /// Packets declared lost that were delivered after all (reordering).
    pub spurious: u64,
    /// Routed flows: ACKs on their way back, with their arrival times.
    ack_wire: VecDeque<(u64, Pkt)>,
}

/// What a flow is given when it is made; the rest of [`Flow`] is its
/// state before it starts.
struct FlowSetup {
    name: String,
    group: String,
    kind: CcKind,
    params: usize,
    path: Vec<u16>,
    ect: bool,
    hop_delay_ns: u64,
    ack_delay_ns: u64,
    host_rate_bps: f64,
    nic: Option<u32>,
    rtt_ns: u64,
    start_ns: u64,
    stop_ns: Option<u64>,
    size: Option<u64>,
    data_bytes: Option<u64>,
    /// The receiver's initial and largest window in bytes (none: unlimited).
    receive_window: Option<(u64, u64)>,
    routed: Option<Routed>,
    ec: Option<FlowEc>,
}

impl Flow {
    fn new(f: FlowSetup) -> Self {
        let (rwnd, rwnd_max) = f.receive_window.unwrap_or((u64::MAX, u64::MAX));
        Flow {
            name: f.name,
            group: f.group,
            kind: f.kind,
            params: f.params,
            cc: None,
            path: f.path,
            ect: f.ect,
            hop_delay_ns: f.hop_delay_ns,
            ack_delay_ns: f.ack_delay_ns,
            last_ack_arrival_ns: 0,
            host_rate_bps: f.host_rate_bps,
            rtt_ns: f.rtt_ns,
            start_ns: f.start_ns,
            stop_ns: f.stop_ns,
            size: f.size,
            data_bytes: f.data_bytes,
            snd_nxt: 0,
            delivered: 0,
            inflight: 0,
            outstanding: VecDeque::new(),
            retx: VecDeque::new(),
            nic_free_ns: 0,
            nic: f.nic,
            nic_bytes: 0,
            first_hop_arrival_ns: 0,
            next_pace_ns: 0,
            wake_at: None,
            rto_armed: false,
            last_progress_ns: 0,
            srtt_ns: f.rtt_ns as f64,
            rto_backoffs: 0,
            last_rtt_ns: 0,
            sending: false,
            started: false,
            finish_ns: None,
            losses: 0,
            rtos: 0,
            marked_acks: 0,
            acks: 0,
            rwnd,
            rwnd_max,
            cwnd_limited: false,
            cwnd_usage_seq: 0,
            max_inflight: 0,
            routed: f.routed,
            ec: f.ec,
            rack_xmit_ns: 0,
            rack_rtt_ns: 0,
            reord_seen: false,
            reo_wnd_steps: 1,
            reo_wnd_step_at_ns: 0,
            min_rtt_ns: u64::MAX,
            last_rto_ns: 0,
            rack_timer_at: None,
            spurious: 0,
            ack_wire: VecDeque::new(),
        }
    }

    /// After a send attempt: was the sender stopped by its congestion window?
    fn note_window_use(&mut self, cwnd_limited: bool) {
        let una = self.outstanding.front().map_or(self.snd_nxt, |s| s.seq);
        if una >= self.cwnd_usage_seq || cwnd_limited || (!self.cwnd_limited && self.inflight > self.max_inflight) {
            self.cwnd_limited = cwnd_limited;
            self.max_inflight = self.inflight;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// `tcp_is_cwnd_limited()`.
    fn is_cwnd_limited(&self, cc: &AnyCc) -> bool {
        let cwnd = cc.cwnd() as u64;
        self.cwnd_limited || (cwnd < cc.ssthresh() as u64 && cwnd < 2 * self.max_inflight)
    }

    pub fn cwnd(&self) -> u32 {
        self.cc.as_ref().map_or(0, |c| c.cwnd())
    }
    pub fn pacing_rate(&self) -> Option<u64> {
        self.cc.as_ref().and_then(|c| c.pacing_rate())
    }
    pub fn active(&self) -> bool {
        self.started && self.finish_ns.is_none() && self.sending
    }
    /// Load-balancer moves (routed flows).
    pub fn lb_moves(&self) -> Option<xdcc_multipath::lb::Moves> {
        self.routed.as_ref().map(|r| r.lb.moves)
    }
    /// UnoRC NACKs sent by the receiver.
    pub fn nacks(&self) -> u64 {
        self.ec.as_ref().map_or(0, |e| e.nacks)
    }
    /// RACK's reordering window (Linux `tcp_rack_reo_wnd`): 0 until
    /// reordering was seen, then `steps` quarters of the minimum RTT, at
    /// most the smoothed RTT.
    fn reo_wnd_ns(&self) -> u64 {
        if self.reord_seen {
            (self.min_rtt_ns / 4).saturating_mul(self.reo_wnd_steps.max(1) as u64).min(self.srtt_ns as u64)
        } else {
            0
        }
    }
}

/// Time series sampled every `sample_interval`.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub t_ns: Vec<u64>,
    /// Per sample, per flow: cumulative delivered bytes, cwnd, last RTT (ns),
    /// pacing rate (bytes/s, 0 = none), active flag.
    pub delivered: Vec<Vec<u64>>,
    pub cwnd: Vec<Vec<u32>>,
    pub rtt: Vec<Vec<u64>>,
    pub pacing: Vec<Vec<u64>>,
    pub active: Vec<Vec<bool>>,
    /// Per sample, per flow: packets lost so far (retransmitted).
    pub losses: Vec<Vec<u64>>,
    /// Per sample, per reported queue (all of queues in series; a routed
    /// network's border and failed links): bytes queued, bytes sent and
    /// packets dropped so far.
    pub qlen: Vec<Vec<u64>>,
    pub tx_bytes: Vec<Vec<u64>>,
    pub drops: Vec<Vec<u64>>,
}

/// A host NIC its flows share (`host` in a flow group), as a Linux host's
/// qdisc over its NIC: one FIFO at the NIC's rate, in which each socket
/// keeps at most its TCP-small-queues budget ([`tsq_limit`]); the rest of
/// its window waits in the socket until one of its packets leaves. The
/// shares follow the budgets, i.e. the flows' pacing rates. (netem's
/// packet limit is not modelled: the budgets keep the FIFO far below it.)
struct SharedNic {
    rate_bps: f64,
    /// When the FIFO's last packet leaves.
    last_depart_ns: u64,
}

/// Linux's TCP small queues (`tcp_small_queue_check`): a socket keeps at
/// most about 1 ms of its pacing rate (`sk_pacing_shift` 10), at least two
/// packets and at most `tcp_limit_output_bytes` (1 MB), in the qdisc and
/// the device. Without the CC's own rate, the pacing rate is Linux's
/// (`tcp_update_pacing_rate`): the window over the smoothed RTT, times 2 in
/// slow start (below half of ssthresh), 1.2 after.
fn tsq_limit(cc: &AnyCc, srtt_ns: f64, mtu: u32) -> u64 {
    let rate = cc.pacing_rate().map_or_else(
        || {
            let gain = if (cc.cwnd() as u64) < cc.ssthresh() as u64 / 2 { 2.0 } else { 1.2 };
            gain * cc.cwnd() as f64 * 1e9 / srtt_ns.max(1.0)
        },
        |r| r as f64,
    );
    ((rate / 1024.0) as u64).clamp(2 * mtu as u64, 1 << 20)
}

pub(crate) struct Sim {
    pub now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<Scheduled>>,
    pub queues: Vec<Queue>,
    pub flows: Vec<Flow>,
    params: Vec<AnyParams>,
    mtu: u32,
    rng: Rng,
    min_rto_ns: u64,
    pub end_ns: u64,
    sample_ns: u64,
    measure_from_ns: u64,
    measure_to_ns: u64,
    pub series: Series,
    pub events: u64,
    pub packets_sent: u64,
    window_pacing_gain: f64,
    jitter_ns: u64,
    /// Mean end-host delay per ACK, ns (0: none).
    host_delay_ns: f64,
    /// The steady part of it (`host_delay_steady` × the mean), ns.
    host_steady_ns: f64,
    /// Flow whose every ACK is printed to stderr (`XDCC_SIM_TRACE=<index>`).
    trace: Option<usize>,
    /// Packets between queues, hosts and ACKs (`Ev` holds their index).
    in_flight: Vec<Pkt>,
    free_slots: Vec<u32>,
    loss_recovery: LossRecovery,
    /// Sized flows not finished yet, and whether the run ends when none is left.
    unfinished: usize,
    stop_when_done: bool,
    rto_fixed_ns: Option<u64>,
    rto_intra_ns: Option<u64>,
    rto_window_cut: bool,
    rto_backoff: RtoBackoff,
    /// Routed networks: each node's ECMP salt, and the next hops toward
    /// each of the flows' destinations.
    salt: Vec<u64>,
    hops: Vec<NextHops>,
    node_names: Vec<String>,
    nics: Vec<SharedNic>,
}

/// The equal-cost next hops toward one destination: for every node, its
/// out-links one hop closer (`links[offs[n]..offs[n + 1]]`).
struct NextHops {
    offs: Vec<u32>,
    links: Vec<u16>,
}

impl NextHops {
    fn new(out: &[Vec<u16>], queues: &[Queue], dist: &[u16]) -> Self {
        let (mut offs, mut links) = (vec![0u32], Vec::new());
        for (n, o) in out.iter().enumerate() {
            links.extend(o.iter().filter(|&&l| dist[queues[l as usize].to_node as usize].wrapping_add(1) == dist[n]));
            offs.push(links.len() as u32);
        }
        Self { offs, links }
    }

    /// ECMP at `node`: the next hop a hash of (flow, entropy, the node's salt) picks.
    fn pick(&self, node: u32, flow_hash: u64, entropy: u16, salt: u64) -> u16 {
        let c = &self.links[self.offs[node as usize] as usize..self.offs[node as usize + 1] as usize];
        let h = Rng(flow_hash ^ salt ^ (entropy as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93)).next_u64();
        c[(h % c.len().max(1) as u64) as usize]
    }
}

/// A routed network's routes: the nodes' ECMP salts, and per destination
/// (as flows first need it) its distance table and equal-cost next hops.
struct Routes {
    salt: Vec<u64>,
    dist: Vec<Vec<u16>>,
    hops: Vec<NextHops>,
    of_dst: std::collections::BTreeMap<u32, usize>,
}

/// What [`Sim::new`] assembles, in the order it draws from the scenario's
/// random numbers (the salts, then each routed flow's balancer).
struct Builder<'a> {
    sc: &'a Scenario,
    net: NetConfig,
    /// The CC of flows without their own.
    kind: CcKind,
    /// Every CC some flow runs; `params[i]` is `kinds[i]`'s for i <
    /// `kinds.len()`, then one per group with its own tunables.
    kinds: Vec<CcKind>,
    params: Vec<AnyParams>,
    graph: Option<crate::topology::Graph>,
    queues: Vec<Queue>,
    rng: Rng,
    routes: Routes,
    flows: Vec<Flow>,
    /// The shared NICs by host name.
    nics: Vec<(String, SharedNic)>,
}

impl<'a> Builder<'a> {
    fn new(sc: &'a Scenario, kind: CcKind) -> Result<Self> {
        let net: NetConfig = sc.net_config();
        let mut kinds: Vec<CcKind> = vec![kind];
        for f in &sc.flows {
            if let Some(c) = &f.cc {
                let k = CcKind::parse(c)?;
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
        }
        let params = kinds.iter().map(|&k| AnyParams::build(k, &net, &sc.params_of(k)?)).collect::<Result<Vec<_>>>()?;
        let graph = sc.topology.as_ref().map(|t| t.build()).transpose()?;
        let queues = Self::queues(sc, graph.as_ref(), kind)?;
        let mut rng = Rng(sc.seed ^ 0x5EED_0F_5C3A_A210);
        let salt: Vec<u64> = graph.as_ref().map_or(Vec::new(), |g| g.node_names.iter().map(|_| rng.next_u64()).collect());
        let routes = Routes { salt, dist: Vec::new(), hops: Vec::new(), of_dst: Default::default() };
        Ok(Self { sc, net, kind, kinds, params, graph, queues, rng, routes, flows: Vec::new(), nics: Vec::new() })
    }

    /// The scenario's queues in series, or its routed network's links.
    fn queues(sc: &Scenario, graph: Option<&crate::topology::Graph>, kind: CcKind) -> Result<Vec<Queue>> {
        let mtu = sc.net.mtu;
        let queues = match graph {
            None => sc
                .queues_for(kind.name())
                .into_iter()
                .map(|q| Queue::new(q.name, q.rate_bps, q.buffer_bytes, q.marking, q.phantom, q.loss_prob, mtu))
                .collect::<Result<Vec<_>>>()?,
            Some(g) => g
                .links
                .iter()
                .map(|l| {
                    let mut q = Queue::new(l.name.clone(), l.rate_bps, l.buffer_bytes, l.marking.clone(), l.phantom.clone(), 0.0, mtu)?;
                    q.link = true;
                    q.loss = l.loss.clone().map(LossState::new);
                    q.latency_ns = l.latency_ns;
                    q.to_node = l.to;
                    q.fail = l.fail.clone();
                    q.report = l.report;
                    Ok(q)
                })
                .collect::<Result<Vec<_>>>()?,
        };
        if queues.len() > u16::MAX as usize {
            bail!("too many queues");
        }
        Ok(queues)
    }

    /// The flows of group `g` (number `gi` in the file).
    fn add_group(&mut self, gi: usize, g: &crate::scenario::FlowSpec) -> Result<()> {
        let sc = self.sc;
        let k = g.cc.as_deref().map(CcKind::parse).transpose()?.unwrap_or(self.kind);
        let mut pi = self.kinds.iter().position(|&x| x == k).expect("collected above");
        if !g.params.is_empty() {
            // This group's own tunables: the run's for its algorithm, then the group's.
            let mut merged = sc.params_of(k)?;
            merged.extend(g.params.iter().map(|(n, v)| (n.clone(), *v)));
            self.params.push(AnyParams::build(k, &self.net, &merged).map_err(|e| anyhow::anyhow!("flows.{}.params: {e}", g.name))?);
            pi = self.params.len() - 1;
        }
        // Queues in series by name; a routed network's links (a flow
        // pinned to them) as `Graph::find_link` names them.
        let path: Vec<u16> = match &self.graph {
            None => g.path.iter().map(|n| self.queues.iter().position(|q| &q.name == n).expect("validated") as u16).collect(),
            Some(gr) => g.path.iter().map(|n| gr.find_link(n).expect("validated") as u16).collect(),
        };
        // (A flow pinned to links: they are in the report.)
        let pinned = self.graph.is_some() && !path.is_empty();
        if pinned {
            for &q in &path {
                self.queues[q as usize].report = true;
            }
        }
        let ends = match &self.graph {
            Some(gr) if !pinned => crate::topology::endpoints(gr, g.count, g.src.as_deref(), g.dst.as_deref(), &g.pairs, sc.seed.wrapping_add(gi as u64)).map_err(|e| anyhow::anyhow!("flows.{}: {e}", g.name))?,
            _ => Vec::new(),
        };
        let strategy = g.lb.as_ref().map_or(Ok(xdcc_multipath::Strategy::Ecmp), |l| l.strategy())?;
        let code = g.ec.as_ref().map(|e| e.code()).transpose()?;
        for i in 0..g.count {
            let start = ns(g.start_ms, 1e6) + ns(g.start_spacing_us, 1e3) * i as u64;
            let (rtt, routed, first_rate) = if self.graph.is_some() && !pinned {
                let (src, dst) = ends[i as usize];
                let (rtt, first_rate, (dist, hash, intra_dc)) = self.route(&g.name, src, dst)?;
                let mut draw = || (self.rng.next_u64() >> 32) as u32;
                let lb = Balancer::new(strategy, rtt, start, &mut draw);
                (rtt, Some(Routed { src, dst, dist, hash, lb, intra_dc }), first_rate)
            } else {
                (ns(g.rtt_us, 1e3), None, self.queues[path[0] as usize].rate_bps)
            };
            let (hop_delay_ns, ack_delay_ns) = self.propagation(&path, pinned, routed.is_some(), rtt);
            let (size, data_bytes, ec) = self.sized(g, code)?;
            let name = if g.count == 1 { g.name.clone() } else { format!("{}-{}", g.name, i) };
            let mut host_rate_bps = g.host_rate_gbps.map_or(first_rate, |r| r * 1e9);
            let nic = match &g.host {
                None => None,
                Some(h) => {
                    // (Every group naming the host gives its NIC one rate: validated.)
                    let n = self.nics.iter().position(|(name, _)| name == h).unwrap_or_else(|| {
                        self.nics.push((h.clone(), SharedNic { rate_bps: host_rate_bps, last_depart_ns: 0 }));
                        self.nics.len() - 1
                    });
                    host_rate_bps = self.nics[n].1.rate_bps;
                    Some(n as u32)
                }
            };
            let flow = Flow::new(FlowSetup {
                name,
                group: g.name.clone(),
                kind: k,
                params: pi,
                path: path.clone(),
                ect: g.ect,
                hop_delay_ns,
                ack_delay_ns,
                host_rate_bps,
                nic,
                rtt_ns: rtt,
                start_ns: start,
                stop_ns: g.stop_ms.map(|s| ns(s, 1e6)),
                size,
                data_bytes,
                receive_window: sc.receive_window.map(|w| ((w.init_kb * 1000.0).round() as u64, (w.max_kb * 1000.0).round() as u64)),
                routed,
                ec,
            });
            self.flows.push(flow);
        }
        Ok(())
    }

    /// A routed flow from `src` to `dst`: its base RTT along the entropy-0
    /// path (propagation both ways: ACKs are not serialized), its first
    /// link's rate, and its route: the destination's distance table, the
    /// flow's ECMP hash, whether it stays in one datacenter.
    fn route(&mut self, group: &str, src: u32, dst: u32) -> Result<(u64, f64, (usize, u64, bool))> {
        let gr = self.graph.as_ref().expect("routed flows have a graph");
        let r = &mut self.routes;
        let queues = &self.queues;
        let di = *r.of_dst.entry(dst).or_insert_with(|| {
            let d = gr.distances_to(dst);
            r.hops.push(NextHops::new(&gr.out, queues, &d));
            r.dist.push(d);
            r.dist.len() - 1
        });
        if r.dist[di][src as usize] == u16::MAX {
            bail!("flows.{group}: {} cannot reach {}", gr.node_names[src as usize], gr.node_names[dst as usize]);
        }
        let hash = Rng(self.sc.seed ^ (self.flows.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64();
        let (mut node, mut prop, mut first_rate) = (src, 0u64, 0.0);
        while node != dst {
            let l = r.hops[di].pick(node, hash, 0, r.salt[node as usize]);
            prop += queues[l as usize].latency_ns;
            if first_rate == 0.0 {
                first_rate = queues[l as usize].rate_bps;
            }
            node = queues[l as usize].to_node;
        }
        let dc = |n: u32| gr.node_names[n as usize].split('.').next().map(str::to_owned);
        Ok((2 * prop, first_rate, (di, hash, dc(src) == dc(dst))))
    }

    /// A flow's propagation delays before its first queue and on its ACK's
    /// way back: routed flows meet their links' own delays on the way (and
    /// their sum back); a flow pinned to links meets the links' delays too,
    /// and the rest of half its RTT before its first queue (the other half
    /// on the way back); queues in series have none, the RTT is split over
    /// the hops.
    fn propagation(&self, path: &[u16], pinned: bool, routed: bool, rtt: u64) -> (u64, u64) {
        let hops = path.len() as u64 + 1;
        if routed {
            (0, 0)
        } else if pinned {
            let links: u64 = path.iter().map(|&q| self.queues[q as usize].latency_ns).sum();
            ((rtt / 2).saturating_sub(links), rtt - rtt / 2)
        } else {
            (rtt / 2 / hops, rtt - rtt / 2 / hops * hops)
        }
    }

    /// A flow's size: what it sends, its data and, with a code, its
    /// blocks (whole MTU packets, parity on top: then it sends more than
    /// its data).
    fn sized(&self, g: &crate::scenario::FlowSpec, code: Option<BlockCode>) -> Result<(Option<u64>, Option<u64>, Option<FlowEc>)> {
        let mtu = self.sc.net.mtu as u64;
        let data_bytes = g.size_kb.map(|s| (s * 1000.0).round().max(1.0) as u64);
        let Some(code) = code else { return Ok((data_bytes, data_bytes, None)) };
        let spec = g.ec.as_ref().expect("a code comes from [ec]");
        let data_packets = data_bytes.unwrap_or(0).div_ceil(mtu);
        let blocks = code.blocks(data_packets);
        let ec = FlowEc {
            code,
            data_packets,
            rx: vec![BlockRx::default(); blocks as usize],
            rx_complete: 0,
            tx_complete: vec![false; blocks as usize],
            nack_timeout_ns: ns(spec.nack_timeout_us, 1e3),
            retx_nack_timeout_ns: ns(spec.retx_nack_timeout_us(), 1e3),
            nacks: 0,
        };
        Ok((Some(code.packets(data_packets) * mtu), data_bytes, Some(ec)))
    }

    fn finish(self) -> Result<Sim> {
        let sc = self.sc;
        if self.flows.len() > u32::MAX as usize / 2 {
            bail!("too many flows");
        }
        let (sized, n_flows) = (self.flows.iter().filter(|f| f.size.is_some()).count(), self.flows.len());
        let mut sim = Sim {
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            queues: self.queues,
            flows: self.flows,
            params: self.params,
            mtu: sc.net.mtu,
            rng: self.rng,
            min_rto_ns: ns(sc.min_rto_us, 1e3),
            end_ns: ns(sc.duration_ms, 1e6),
            sample_ns: ns(sc.sample_interval_us, 1e3).max(1),
            measure_from_ns: ns(sc.measure_from_ms, 1e6),
            measure_to_ns: ns(sc.measure_to_ms.unwrap_or(sc.duration_ms), 1e6),
            series: Series::default(),
            events: 0,
            packets_sent: 0,
            window_pacing_gain: sc.window_pacing_gain,
            jitter_ns: sc.jitter_ns(),
            host_delay_ns: sc.host_delay_us * 1e3 * (1.0 - sc.host_delay_steady),
            host_steady_ns: sc.host_delay_us * 1e3 * sc.host_delay_steady,
            trace: std::env::var("XDCC_SIM_TRACE").ok().and_then(|v| v.parse().ok()),
            in_flight: Vec::new(),
            free_slots: Vec::new(),
            loss_recovery: sc.loss_recovery,
            unfinished: sized,
            stop_when_done: sc.stop_when_done && sized == n_flows,
            rto_fixed_ns: sc.rto_us.map(|r| ns(r, 1e3)),
            rto_intra_ns: sc.rto_intra_us.map(|r| ns(r, 1e3)),
            rto_window_cut: sc.rto_window_cut,
            rto_backoff: sc.rto_backoff,
            salt: self.routes.salt,
            hops: self.routes.hops,
            nics: self.nics.into_iter().map(|(_, n)| n).collect(),
            node_names: self.graph.as_ref().map_or(Vec::new(), |g| g.node_names.clone()),
        };
        for i in 0..sim.flows.len() {
            let f = &sim.flows[i];
            let (start, stop) = (f.start_ns, f.stop_ns);
            sim.at(start, Ev::FlowStart(i as u32));
            if let Some(s) = stop {
                sim.at(s, Ev::FlowStop(i as u32));
            }
        }
        sim.at(0, Ev::Sample);
        Ok(sim)
    }
}

fn ns(ms_or_us: f64, scale: f64) -> u64 {
    (ms_or_us * scale).round() as u64
}

impl Sim {
    /// Builds the simulation of `sc` where every flow without its own `cc`
    /// runs `kind`: the CCs' parameters, the queues (a routed network's
    /// links), each flow group's flows with their routes, then the first
    /// events.
    pub fn new(sc: &Scenario, kind: CcKind) -> Result<Self> {
        sc.validate()?;
        let mut b = Builder::new(sc, kind)?;
        for (gi, g) in sc.flows.iter().enumerate() {
            b.add_group(gi, g)?;
        }
        b.finish()
    }

    /// A packet on its way (between queues, to its receiver, its ACK back).
    fn stash(&mut self, p: Pkt) -> u32 {
        match self.free_slots.pop() {
            Some(i) => {
                self.in_flight[i as usize] = p;
                i
            }
            None => {
                self.in_flight.push(p);
                (self.in_flight.len() - 1) as u32
            }
        }
    }

    fn unstash(&mut self, i: u32) -> Pkt {
        self.free_slots.push(i);
        self.in_flight[i as usize]
    }

    fn at(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse(Scheduled { t, seq: self.seq, ev }));
    }

    /// Runs to the end of the scenario.
    pub fn run(&mut self) {
        while let Some(Reverse(s)) = self.heap.pop() {
            if s.t > self.end_ns {
                break;
            }
            if self.stop_when_done && self.unfinished == 0 {
                // Every flow is sized and done: the run ends here.
                self.end_ns = self.now;
                self.measure_to_ns = self.measure_to_ns.min(self.now);
                self.sample();
                break;
            }
            self.now = s.t;
            self.events += 1;
            match s.ev {
                Ev::QueueArrive(q, p) => {
                    let p = self.unstash(p);
                    self.queue_arrive(q, p)
                }
                Ev::QueueDepart(q) => self.queue_depart(q),
                Ev::RecvArrive(p) => {
                    let p = self.unstash(p);
                    self.recv_arrive(p)
                }
                Ev::AckArrive(p) => {
                    let p = self.unstash(p);
                    self.ack_arrive(p)
                }
                Ev::RackTimer(f) => {
                    let fl = &mut self.flows[f as usize];
                    if fl.rack_timer_at == Some(self.now) {
                        fl.rack_timer_at = None;
                        self.rack_detect(f as usize);
                        self.try_send(f as usize);
                    }
                }
                Ev::NackTimer(f, b) => self.nack_timer(f as usize, b as usize),
                Ev::WireExit(q) => self.wire_exit(q),
                Ev::AckWireExit(f) => {
                    let fl = &mut self.flows[f as usize];
                    let (_, p) = fl.ack_wire.pop_front().expect("scheduled for its head");
                    if let Some(&(t, _)) = fl.ack_wire.front() {
                        self.at(t, Ev::AckWireExit(f));
                    }
                    self.ack_arrive(p);
                }
                Ev::NackArrive(f, b) => self.nack_arrive(f as usize, b as usize),
                Ev::SenderWake(f) => {
                    let fl = &mut self.flows[f as usize];
                    if fl.wake_at == Some(self.now) {
                        fl.wake_at = None;
                    }
                    self.try_send(f as usize);
                }
                Ev::NicDepart(f, bytes) => {
                    let fl = &mut self.flows[f as usize];
                    fl.nic_bytes = fl.nic_bytes.saturating_sub(bytes as u64);
                    self.try_send(f as usize);
                }
                Ev::RtoCheck(f) => self.rto_check(f as usize),
                Ev::FlowStart(f) => self.flow_start(f as usize),
                Ev::FlowStop(f) => self.flows[f as usize].sending = false,
                Ev::Sample => {
                    self.sample();
                    let t = self.now + self.sample_ns;
                    if t <= self.end_ns {
                        self.at(t, Ev::Sample);
                    }
                }
            }
        }
        self.now = self.end_ns;
    }

    fn flow_start(&mut self, i: usize) {
        let mtu = self.mtu;
        let f = &mut self.flows[i];
        // The handshake RTT: propagation plus one MTU serialization per hop,
        // plus the end hosts' steady delay, which every packet of a busy host
        // waits, the handshake's too (without it a flow's minimum RTT stayed
        // below every sample it ever took, by a gap no real host shows, and
        // the CCs that read delay above the minimum read the host as a queue:
        // SMaRTT carried 8 % of realspeed-10g-lone at a 74 µs host delay,
        // the host 88 %; testbed/notes/2026-11-27-datacenter-rates.md, 4j).
        let mut hint = f.rtt_ns as f64 + mtu as f64 * 8.0 * 1e9 / f.host_rate_bps + self.host_steady_ns;
        for &q in &f.path {
            hint += mtu as f64 * 8.0 * 1e9 / self.queues[q as usize].rate_bps;
        }
        let init = FlowInit { now_ns: self.now + CLOCK_BASE_NS, mss: mtu, rtt_hint_ns: hint.min(u32::MAX as f64) as u32 };
        f.cc = Some(AnyCc::new(&self.params[f.params], &init));
        f.started = true;
        f.sending = true;
        f.last_progress_ns = self.now;
        self.try_send(i);
    }

    fn try_send(&mut self, i: usize) {
        let now = self.now;
        let mtu = self.mtu;
        if !self.flows[i].started || self.flows[i].finish_ns.is_some() {
            return;
        }
        let cwnd_limited = loop {
            let f = &mut self.flows[i];
            // Next packet: retransmissions first, then new data.
            if let (Some(&(s, _)), Some(ec)) = (f.retx.front(), &f.ec) {
                if ec.tx_complete[ec.code.locate(s / mtu as u64).0 as usize] {
                    f.retx.pop_front(); // its block is complete: nothing to resend
                    continue;
                }
            }
            let (seq, size, is_new) = if let Some(&(s, z)) = f.retx.front() {
                (s, z, false)
            } else if f.sending {
                let remaining = f.size.map_or(u64::MAX, |s| s.saturating_sub(f.snd_nxt));
                if remaining == 0 {
                    break false;
                }
                (f.snd_nxt, remaining.min(mtu as u64) as u32, true)
            } else {
                break false;
            };
            let cc = f.cc.as_ref().expect("started");
            let cwnd = cc.cwnd() as u64;
            if f.inflight > 0 && f.inflight + size as u64 > cwnd.min(f.rwnd) {
                // Window-limited (an ACK will call us again); by the
                // congestion window unless the receive window is smaller.
                break cwnd <= f.rwnd;
            }
            if f.nic.is_some() && f.nic_bytes >= tsq_limit(cc, f.srtt_ns, mtu) {
                // Its budget in the shared NIC's FIFO is used: the next of its
                // packets to leave calls again.
                break false;
            }
            // (A shared NIC queues: only the flow's pacing waits.)
            let t = if f.nic.is_some() { now.max(f.next_pace_ns) } else { now.max(f.nic_free_ns).max(f.next_pace_ns) };
            if t > now {
                if f.wake_at.map_or(true, |w| w > t) {
                    f.wake_at = Some(t);
                    self.at(t, Ev::SenderWake(i as u32));
                }
                break false;
            }
            if is_new {
                f.snd_nxt += size as u64;
            } else {
                f.retx.pop_front();
            }
            f.inflight += size as u64;
            f.outstanding.push_back(Sent { seq, size, send_time: now });
            let tx = ((size as f64 * 8.0) * 1e9 / f.host_rate_bps).ceil() as u64;
            f.nic_free_ns = now + tx;
            if let Some(n) = f.nic {
                let nic = &mut self.nics[n as usize];
                nic.last_depart_ns = nic.last_depart_ns.max(now) + tx;
                f.nic_free_ns = nic.last_depart_ns;
                f.nic_bytes += size as u64;
                // (`self.at`, on the fields it uses: `f` is still borrowed.)
                self.seq += 1;
                self.heap.push(Reverse(Scheduled { t: f.nic_free_ns, seq: self.seq, ev: Ev::NicDepart(i as u32, size) }));
            }
            let rate = match cc.pacing_rate() {
                Some(r) => Some(r.max(1) as f64),
                None if self.window_pacing_gain > 0.0 => {
                    Some(self.window_pacing_gain * cwnd.max(mtu as u64) as f64 * 1e9 / f.srtt_ns.max(1.0))
                }
                None => None,
            };
            if let Some(rate) = rate {
                let gap = (size as f64 * 1e9 / rate).ceil() as u64;
                f.next_pace_ns = now + gap;
            }
            let mut pkt = Pkt {
                flow: i as u32,
                hop: 0,
                ce: false,
                amrt_seen: false,
                size,
                seq,
                send_time: now,
                inflight_at_send: f.inflight.min(u32::MAX as u64) as u32,
                entropy: 0,
                prop_ns: 0,
                block_done: false,
                flow_done: false,
                retx: !is_new,
            };
            let q0 = match &mut f.routed {
                None => f.path[0],
                Some(r) => {
                    let rng = &mut self.rng;
                    pkt.entropy = r.lb.next_entropy(now, &mut || (rng.next_u64() >> 32) as u32);
                    self.hops[r.dist].pick(r.src, r.hash, pkt.entropy, self.salt[r.src as usize])
                }
            };
            let mut arrive = f.nic_free_ns + f.hop_delay_ns;
            if self.jitter_ns > 0 {
                arrive += self.rng.next_u64() % (self.jitter_ns + 1);
                arrive = arrive.max(f.first_hop_arrival_ns + 1);
            }
            f.first_hop_arrival_ns = arrive;
            let arm = !f.rto_armed;
            f.rto_armed = true;
            let rto = self.rto_ns(i);
            self.packets_sent += 1;
            let slot = self.stash(pkt);
            self.at(arrive, Ev::QueueArrive(q0, slot));
            if arm {
                self.at(now + rto, Ev::RtoCheck(i as u32));
            }
        };
        self.flows[i].note_window_use(cwnd_limited);
    }

    fn rto_ns(&self, i: usize) -> u64 {
        let f = &self.flows[i];
        if let Some(r) = self.rto_fixed_ns {
            return match (self.rto_intra_ns, &f.routed) {
                (Some(intra), Some(rt)) if rt.intra_dc => intra,
                _ => r,
            };
        }
        let rto = (f.srtt_ns * 3.0).max(self.min_rto_ns as f64) as u64;
        // (`rto_backoffs` stays 0 under `RtoBackoff::Srtt`.)
        const RTO_MAX_NS: u64 = 120_000_000_000;
        rto.saturating_mul(1 << f.rto_backoffs.min(32)).min(RTO_MAX_NS.max(rto))
    }

    fn queue_arrive(&mut self, qi: u16, mut p: Pkt) {
        let now = self.now;
        let mtu = self.mtu;
        let ect = self.flows[p.flow as usize].ect;
        let q = &mut self.queues[qi as usize];
        if q.fail.iter().any(|&(from, until)| now >= from && until.map_or(true, |u| now < u)) {
            q.drops += 1;
            q.blackholed += 1;
            return;
        }
        if q.loss_prob > 0.0 && self.rng.unit() < q.loss_prob {
            q.drops += 1;
            return;
        }
        if let Some(l) = &mut q.loss {
            let rng = &mut self.rng;
            if l.lose(&mut || rng.unit()) {
                q.drops += 1;
                return;
            }
        }
        let link = q.link;
        if link {
            q.flush(now);
        }
        if q.bytes + p.size as u64 > q.buffer {
            q.drops += 1;
            return;
        }
        // (A packet that is not ECN-capable still fills a phantom queue.)
        if q.mark(now, p.size, mtu, &mut self.rng) && ect {
            if !p.ce {
                q.marks += 1;
            }
            p.ce = true;
        }
        q.enqueued += 1;
        q.bytes += p.size as u64;
        if link {
            // Its departure is known now (see `Queue::wire`).
            let start = now.max(q.busy_until);
            q.amrt_mark(&mut p, start);
            let depart = start + q.tx_ns(p.size);
            q.busy_until = depart;
            q.departures.push_back((depart, p.size));
            if depart >= self.measure_from_ns && depart < self.measure_to_ns {
                q.tx_bytes_measured += p.size as u64;
            }
            p.prop_ns = p.prop_ns.saturating_add(q.latency_ns.min(u32::MAX as u64) as u32);
            let exit = depart + q.latency_ns;
            q.wire.push_back((exit, p));
            if q.wire.len() == 1 {
                self.at(exit, Ev::WireExit(qi));
            }
            return;
        }
        q.pkts.push_back(p);
        if q.pkts.len() == 1 {
            q.dequeue_mark(now);
            let tx = q.tx_ns(p.size);
            self.at(now + tx, Ev::QueueDepart(qi));
        }
    }

    fn queue_depart(&mut self, qi: u16) {
        let now = self.now;
        let measure = now >= self.measure_from_ns && now < self.measure_to_ns;
        let q = &mut self.queues[qi as usize];
        let Some(mut p) = q.pkts.pop_front() else { return };
        q.bytes -= p.size as u64;
        q.tx_bytes += p.size as u64;
        if measure {
            q.tx_bytes_measured += p.size as u64;
        }
        if let Some(next) = q.pkts.front() {
            let tx = q.tx_ns(next.size);
            q.dequeue_mark(now);
            self.at(now + tx, Ev::QueueDepart(qi));
        }
        let f = &self.flows[p.flow as usize];
        let d = f.hop_delay_ns;
        p.hop += 1;
        if (p.hop as usize) < f.path.len() {
            let nq = f.path[p.hop as usize];
            let slot = self.stash(p);
            self.at(now + d, Ev::QueueArrive(nq, slot));
        } else {
            let slot = self.stash(p);
            self.at(now + d, Ev::RecvArrive(slot));
        }
    }

    /// The packet reaches its receiver, which ACKs it at once (its CE mark
    /// echoed); an UnoRC receiver also counts the packet into its block.
    fn recv_arrive(&mut self, mut p: Pkt) {
        let now = self.now;
        let mtu = self.mtu as u64;
        let i = p.flow as usize;
        let f = &mut self.flows[i];
        if let Some(ec) = &mut f.ec {
            let (block, pos) = ec.code.locate(p.seq / mtu);
            let needed = ec.code.data_in(block, ec.data_packets);
            let blocks = ec.rx.len() as u64;
            let rx = &mut ec.rx[block as usize];
            let armed = rx.nack_due_ns();
            let wait = if p.retx { ec.retx_nack_timeout_ns } else { ec.nack_timeout_ns };
            match rx.on_packet(pos, needed, now, wait) {
                RxOutcome::Completed => {
                    p.block_done = true;
                    ec.rx_complete += 1;
                    p.flow_done = ec.rx_complete == blocks;
                }
                // (An ACK of a packet of a complete block says so again.)
                RxOutcome::AlreadyComplete => p.block_done = true,
                RxOutcome::Counted | RxOutcome::Duplicate => {}
            }
            if let (None, Some(t)) = (armed, rx.nack_due_ns()) {
                self.at(t, Ev::NackTimer(i as u32, block as u32));
            }
        }
        let host = if self.host_delay_ns > 0.0 {
            // The steady part, then an exponential with the rest of the
            // mean: −ln(U), U in (0, 1].
            (self.host_steady_ns - (1.0 - self.rng.unit()).ln() * self.host_delay_ns) as u64
        } else {
            self.host_steady_ns as u64
        };
        let f = &mut self.flows[i];
        let back = if f.routed.is_some() { p.prop_ns as u64 } else { f.ack_delay_ns };
        let t = (now + back + host).max(f.last_ack_arrival_ns);
        f.last_ack_arrival_ns = t;
        if f.routed.is_some() {
            f.ack_wire.push_back((t, p));
            if f.ack_wire.len() == 1 {
                self.at(t, Ev::AckWireExit(i as u32));
            }
            return;
        }
        let slot = self.stash(p);
        self.at(t, Ev::AckArrive(slot));
    }

    /// The first packet on link `qi`'s wire reaches the far end: its
    /// receiver, or the next queue: the one ECMP picks, or a pinned flow's
    /// next link.
    fn wire_exit(&mut self, qi: u16) {
        let q = &mut self.queues[qi as usize];
        let (_, mut p) = q.wire.pop_front().expect("scheduled for its head");
        let node = q.to_node;
        if let Some(&(t, _)) = q.wire.front() {
            self.at(t, Ev::WireExit(qi));
        }
        let f = &self.flows[p.flow as usize];
        let Some(r) = &f.routed else {
            p.hop += 1;
            match f.path.get(p.hop as usize) {
                Some(&nq) => self.queue_arrive(nq, p),
                None => self.recv_arrive(p),
            }
            return;
        };
        if node == r.dst {
            self.recv_arrive(p);
        } else {
            let nq = self.hops[r.dist].pick(node, r.hash, p.entropy, self.salt[node as usize]);
            self.queue_arrive(nq, p);
        }
    }

    /// UnoRC: the receiver's timer of a block; a block still incomplete is
    /// NACKed once (the NACK takes the flow's one-way base delay back; the
    /// block's next packet re-arms the timer).
    fn nack_timer(&mut self, i: usize, block: usize) {
        let now = self.now;
        let f = &mut self.flows[i];
        let back = f.rtt_ns / 2;
        let Some(ec) = &mut f.ec else { return };
        if f.finish_ns.is_some() || !ec.rx[block].on_timer(now) {
            return;
        }
        ec.nacks += 1;
        self.at(now + back, Ev::NackArrive(i as u32, block as u32));
    }

    /// UnoRC: a block NACK reaches the sender, which moves its load balancer
    /// and resends every packet of the block it has no ACK for.
    fn nack_arrive(&mut self, i: usize, block: usize) {
        let now = self.now;
        let mtu = self.mtu as u64;
        let f = &mut self.flows[i];
        if f.finish_ns.is_some() {
            return;
        }
        if let Some(r) = &mut f.routed {
            let rng = &mut self.rng;
            r.lb.on_nack(now, &mut || (rng.next_u64() >> 32) as u32);
        }
        let Some(ec) = &f.ec else { return };
        if ec.tx_complete[block] {
            return;
        }
        let code = ec.code;
        let in_block = |seq: u64| code.locate(seq / mtu).0 as usize == block;
        let (mut keep, mut resend) = (VecDeque::new(), Vec::new());
        for s in f.outstanding.drain(..) {
            if in_block(s.seq) {
                resend.push(s);
            } else {
                keep.push_back(s);
            }
        }
        f.outstanding = keep;
        for s in resend.into_iter().rev() {
            f.inflight -= s.size as u64;
            if !f.retx.iter().any(|&(q, _)| q == s.seq) {
                f.retx.push_front((s.seq, s.size));
            }
        }
        self.try_send(i);
    }

    /// RACK: every outstanding packet sent before the newest one delivered
    /// is lost once `rack_rtt + reo_wnd` has passed since it was sent; the
    /// earliest of the others arms the reordering timer.
    fn rack_detect(&mut self, i: usize) {
        let now = self.now;
        let f = &mut self.flows[i];
        let (xmit, wait) = (f.rack_xmit_ns, f.rack_rtt_ns + f.reo_wnd_ns());
        let params = &self.params[f.params];
        let mut k = 0;
        let mut next_timer = None;
        while k < f.outstanding.len() {
            let s = f.outstanding[k];
            if s.send_time >= xmit {
                break; // sent as late as the newest delivered: not yet
            }
            if now >= s.send_time + wait {
                f.outstanding.remove(k);
                f.inflight -= s.size as u64;
                f.retx.push_back((s.seq, s.size));
                f.losses += 1;
                let cc = f.cc.as_mut().expect("started");
                cc.on_event(params, Event::Loss { bytes: s.size }, now + CLOCK_BASE_NS);
                if self.trace == Some(i) {
                    eprintln!("trace t={:.3}ms flow={} loss cwnd -> {}", now as f64 / 1e6, f.name, cc.cwnd());
                }
            } else {
                next_timer.get_or_insert(s.send_time + wait);
                k += 1;
            }
        }
        if let Some(t) = next_timer {
            if f.rack_timer_at.map_or(true, |a| a > t || a < now) {
                f.rack_timer_at = Some(t);
                self.at(t, Ev::RackTimer(i as u32));
            }
        }
    }

    fn ack_arrive(&mut self, p: Pkt) {
        let now = self.now;
        let i = p.flow as usize;
        let mtu = self.mtu as u64;
        let f = &mut self.flows[i];
        if f.finish_ns.is_some() || !f.started {
            return;
        }
        if p.flow_done {
            // UnoRC: the receiver has every block.
            f.finish_ns = Some(now);
            self.unfinished = self.unfinished.saturating_sub(1);
            return;
        }
        if let (true, Some(ec)) = (p.block_done, &mut f.ec) {
            let block = ec.code.locate(p.seq / mtu).0;
            if !ec.tx_complete[block as usize] {
                ec.tx_complete[block as usize] = true;
                // The block's other packets are no longer waited for.
                let code = ec.code;
                let before = f.outstanding.len();
                let mut freed = 0;
                f.outstanding.retain(|s| {
                    let other = code.locate(s.seq / mtu).0 == block && !(s.seq == p.seq && s.send_time == p.send_time);
                    if other {
                        freed += s.size as u64;
                    }
                    !other
                });
                if f.outstanding.len() != before {
                    f.inflight -= freed;
                }
            }
        }
        let Some(pos) = f.outstanding.iter().position(|s| s.seq == p.seq && s.send_time == p.send_time) else {
            // Declared lost before it was delivered: reordering, unless an
            // RTO (which presumes everything lost) sent it away.
            if p.send_time >= f.last_rto_ns && self.loss_recovery == LossRecovery::Rack {
                f.spurious += 1;
                // A wider window after a spurious loss, once per round trip
                // (Linux widens it on DSACKs the same way).
                if f.reord_seen && now >= f.reo_wnd_step_at_ns {
                    f.reo_wnd_steps = f.reo_wnd_steps.saturating_add(1).min(255);
                    f.reo_wnd_step_at_ns = now + f.srtt_ns as u64;
                }
                f.reord_seen = true;
            }
            return;
        };
        let limited = f.is_cwnd_limited(f.cc.as_ref().expect("started"));
        let s = f.outstanding.remove(pos).expect("found");
        let rtt = now - s.send_time;
        // RACK: the most recently sent packet delivered, and its RTT.
        if s.send_time >= f.rack_xmit_ns {
            f.rack_xmit_ns = s.send_time;
            f.rack_rtt_ns = rtt;
        }
        f.min_rtt_ns = f.min_rtt_ns.min(rtt);
        if self.loss_recovery == LossRecovery::Rack {
            self.rack_detect(i);
        }
        let f = &mut self.flows[i];
        let params = &self.params[f.params];
        if let Some(r) = &mut f.routed {
            let rng = &mut self.rng;
            r.lb.on_ack(now, s.send_time, p.entropy, p.ce, &mut || (rng.next_u64() >> 32) as u32);
        }
        let cc = f.cc.as_mut().expect("started");
        f.inflight -= s.size as u64;
        f.delivered += s.size as u64;
        f.rwnd = f.rwnd.saturating_add(s.size as u64).min(f.rwnd_max);
        f.acks += 1;
        if p.ce {
            f.marked_acks += 1;
        }
        f.last_rtt_ns = rtt;
        f.srtt_ns += (rtt as f64 - f.srtt_ns) / 8.0;
        f.rto_backoffs = 0;
        f.last_progress_ns = now;
        let own_rate = cc.rate_limited();
        let sample = AckSample {
            now_ns: now + CLOCK_BASE_NS,
            acked_bytes: s.size,
            marked_bytes: if p.ce { s.size } else { 0 },
            rtt_ns: rtt.clamp(1, u32::MAX as u64) as u32,
            srtt_ns: f.srtt_ns.clamp(0.0, u32::MAX as f64) as u32,
            send_time_ns: s.send_time + CLOCK_BASE_NS,
            inflight_at_send: p.inflight_at_send,
            inflight: f.inflight.min(u32::MAX as u64) as u32,
            // (As the kernel adapter: a round the window did not limit, here
            // because the receive window did, is application-limited to the
            // algorithm; one with its own rate is limited by that, not by
            // its window.)
            app_limited: !limited && !own_rate,
        };
        let before = cc.cwnd();
        cc.on_ack(params, &sample);
        if !limited && !own_rate && cc.cwnd() > before {
            cc.hold_cwnd(before);
        }
        if self.trace == Some(i) {
            eprintln!(
                "trace t={:.3}ms flow={} sent={:.3}ms rtt={}us ce={} cwnd {} -> {} inflight={}",
                now as f64 / 1e6, f.name, s.send_time as f64 / 1e6, rtt / 1000, p.ce, before, cc.cwnd(), f.inflight
            );
            if std::env::var_os("XDCC_SIM_TRACE_STATE").is_some() {
                eprintln!("state {cc:?}");
            }
        }
        if f.ec.is_none() {
            if let Some(size) = f.size {
                if f.delivered >= size {
                    f.finish_ns = Some(now);
                    self.unfinished = self.unfinished.saturating_sub(1);
                    return;
                }
            }
        }
        self.try_send(i);
    }

    fn rto_check(&mut self, i: usize) {
        let now = self.now;
        let rto = self.rto_ns(i);
        let f = &mut self.flows[i];
        if f.outstanding.is_empty() || f.finish_ns.is_some() {
            f.rto_armed = false;
            return;
        }
        // RACK: the flow's timer runs from its last progress; the artifact's
        // transport: one timer per packet, from its send.
        let per_packet = self.loss_recovery == LossRecovery::Timeout;
        let deadline = if per_packet { f.outstanding.front().expect("non-empty").send_time + rto } else { f.last_progress_ns + rto };
        if now < deadline {
            self.at(deadline, Ev::RtoCheck(i as u32));
            return;
        }
        f.rtos += 1;
        f.last_rto_ns = now;
        let params = &self.params[f.params];
        if self.rto_window_cut {
            f.cc.as_mut().expect("started").on_event(params, Event::Rto, now + CLOCK_BASE_NS);
        }
        if let Some(r) = &mut f.routed {
            let rng = &mut self.rng;
            r.lb.on_timeout(now, &mut || (rng.next_u64() >> 32) as u32);
        }
        // Lost: everything outstanding (RACK), or every packet sent one RTO
        // ago or earlier (per-packet timers).
        let cut = if per_packet { f.outstanding.iter().take_while(|s| s.send_time + rto <= now).count() } else { f.outstanding.len() };
        let lost: Vec<_> = f.outstanding.drain(..cut).map(|s| (s.seq, s.size)).collect();
        for &(_, size) in &lost {
            f.inflight -= size as u64;
        }
        if per_packet {
            f.losses += lost.len() as u64;
        }
        for l in lost.into_iter().rev() {
            f.retx.push_front(l);
        }
        f.last_progress_ns = now;
        let next = if per_packet {
            f.outstanding.front().map_or(now + rto, |s| s.send_time + rto).max(now + 1)
        } else {
            f.inflight = 0;
            match self.rto_backoff {
                RtoBackoff::Srtt => f.srtt_ns *= 2.0,
                RtoBackoff::Timer => f.rto_backoffs += 1,
            }
            now + self.rto_ns(i)
        };
        self.at(next, Ev::RtoCheck(i as u32));
        self.try_send(i);
    }

    fn sample(&mut self) {
        let s = &mut self.series;
        s.t_ns.push(self.now);
        s.delivered.push(self.flows.iter().map(|f| f.delivered).collect());
        s.cwnd.push(self.flows.iter().map(|f| f.cwnd()).collect());
        s.rtt.push(self.flows.iter().map(|f| f.last_rtt_ns).collect());
        s.pacing.push(self.flows.iter().map(|f| f.pacing_rate().unwrap_or(0)).collect());
        s.active.push(self.flows.iter().map(|f| f.active()).collect());
        s.losses.push(self.flows.iter().map(|f| f.losses).collect());
        let now = self.now;
        for q in self.queues.iter_mut().filter(|q| q.report) {
            q.flush(now); // (a no-op for queues in series)
        }
        let reported = || self.queues.iter().filter(|q| q.report);
        s.qlen.push(reported().map(|q| q.bytes).collect());
        s.tx_bytes.push(reported().map(|q| q.tx_bytes).collect());
        s.drops.push(reported().map(|q| q.drops).collect());
    }

    pub fn link_rate_bps(&self, q: usize) -> f64 {
        self.queues[q].rate_bps
    }
    /// A routed flow's "src>dst" hosts.
    pub fn hosts_of(&self, i: usize) -> Option<String> {
        let r = self.flows[i].routed.as_ref()?;
        Some(format!("{}>{}", self.node_names[r.src as usize], self.node_names[r.dst as usize]))
    }
    /// The queues in reports and time series, in order.
    pub fn reported_queues(&self) -> impl Iterator<Item = (usize, &Queue)> {
        self.queues.iter().enumerate().filter(|(_, q)| q.report)
    }
    pub fn measure_from_ns(&self) -> u64 {
        self.measure_from_ns
    }
    /// The end of the measured interval (at most the end of the run).
    pub fn measure_to_ns(&self) -> u64 {
        self.measure_to_ns.min(self.end_ns)
    }
    pub fn sample_ns(&self) -> u64 {
        self.sample_ns
    }
}
