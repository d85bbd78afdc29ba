//! The two ends over a UDP socket: blocking loops that feed the state
//! machines of `session` with datagrams and the clock.
//!
//! The socket layer is quinn-udp's (the QUIC stack's, well kept): data
//! packets leave ECN-capable (ECT(0), in the IP header's TOS / traffic
//! class), the receiver reads each datagram's ECN bits (IP_RECVTOS /
//! IPV6_RECVTCLASS) and echoes CE in its ACK, and it receives in batches
//! (recvmmsg) with UDP GRO where the kernel coalesces datagrams. The sender
//! sends one datagram per syscall, each on its entropy's socket (its own
//! source port: its own path through ECMP).

use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::socket::{setsockopt, sockopt};
use nix::sys::time::TimeSpec;
use quinn_udp::{EcnCodepoint, RecvMeta, Transmit, UdpSocketState, BATCH_SIZE};

use crate::session::{Receiver, ReceiverStats, Sender, SenderStats, Sink, Source};

/// The peer said nothing for this long: the transfer fails.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(10);
/// A receive buffer: the largest datagram, or a GRO batch of them.
const RECV_BUFFER: usize = 1 << 16;
/// How many of the sender's ports a NACK goes to.
const NACK_PATHS: usize = 3;
/// How often the loops report progress.
const PROGRESS_NS: u64 = 100_000_000;

/// Whether a datagram from `from` comes from another address than the one
/// the transfer was agreed with (IPv4-mapped IPv6 compared as IPv4).
fn from_ip_differs(from: SocketAddr, agreed: Option<IpAddr>) -> bool {
    agreed.is_some_and(|a| a.to_canonical() != from.ip().to_canonical())
}

/// A monotonic clock in nanoseconds from the transfer's start.
struct Clock(Instant);

impl Clock {
    fn now(&self) -> u64 {
        self.0.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64
    }
}

/// A socket with quinn-udp's state.
struct Socket {
    sock: UdpSocket,
    state: UdpSocketState,
}

impl Socket {
    fn new(sock: UdpSocket) -> io::Result<Self> {
        // (Also makes the socket non-blocking and asks for ECN and GRO.)
        let state = UdpSocketState::new((&sock).into())?;
        Ok(Self { sock, state })
    }

    /// Sends one datagram, ECT(0) if `ect`. A full socket buffer waits up
    /// to a millisecond for room; a datagram that still cannot leave is
    /// dropped as the network would drop it (the protocol recovers it).
    fn send(&self, to: SocketAddr, bytes: &[u8], ect: bool) -> io::Result<()> {
        let t = Transmit { destination: to, ecn: ect.then_some(EcnCodepoint::Ect0), contents: bytes, segment_size: None, src_ip: None };
        match self.state.send((&self.sock).into(), &t) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let mut fds = [PollFd::new(self.sock.as_fd(), PollFlags::POLLOUT)];
                let _ = ppoll(&mut fds, Some(TimeSpec::from_duration(Duration::from_millis(1))), None);
                match self.state.send((&self.sock).into(), &t) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                    r => r,
                }
            }
            r => r,
        }
    }
}

/// What a datagram is handed to: its source, its bytes, whether it arrived
/// CE-marked.
type Handler<'h> = dyn FnMut(SocketAddr, &[u8], bool) -> io::Result<()> + 'h;

/// Receive buffers for batches of datagrams.
struct Inbox {
    bufs: Vec<Vec<u8>>,
    meta: Vec<RecvMeta>,
}

impl Inbox {
    fn new() -> Self {
        let batch = BATCH_SIZE.min(8);
        Self { bufs: vec![vec![0u8; RECV_BUFFER]; batch], meta: vec![RecvMeta::default(); batch] }
    }

    /// Waits until `deadline_ns` (at most 50 ms away) for datagrams on any
    /// of `socks` and hands each one to `handle` with its source and
    /// whether it arrived CE-marked. `ppoll`, because a socket's receive
    /// timeout counts scheduler ticks (1-10 ms) while a paced sender's gaps
    /// between packets are microseconds.
    fn recv_until<'a>(
        &mut self,
        socks: impl Iterator<Item = &'a Socket> + Clone,
        clock: &Clock,
        deadline_ns: Option<u64>,
        handle: &mut Handler,
    ) -> io::Result<()> {
        let wait = deadline_ns.map_or(50_000_000, |d| d.saturating_sub(clock.now())).min(50_000_000);
        let mut fds: Vec<PollFd> = socks.clone().map(|s| PollFd::new(s.sock.as_fd(), PollFlags::POLLIN)).collect();
        match ppoll(&mut fds, Some(TimeSpec::from_duration(Duration::from_nanos(wait))), None) {
            Ok(0) | Err(Errno::EINTR) => return Ok(()),
            Ok(_) => {}
            Err(e) => return Err(e.into()),
        }
        let ready: Vec<bool> = fds.iter().map(|f| f.revents().is_some_and(|r| !r.is_empty())).collect();
        for (s, _) in socks.zip(ready).filter(|(_, r)| *r) {
            let mut slices: Vec<IoSliceMut> = self.bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
            let n = match s.state.recv((&s.sock).into(), &mut slices, &mut self.meta) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            };
            for (m, buf) in self.meta.iter().zip(self.bufs.iter()).take(n) {
                let ce = m.ecn == Some(EcnCodepoint::Ce);
                let stride = m.stride.max(1);
                for datagram in buf[..m.len.min(buf.len())].chunks(stride) {
                    handle(m.addr, datagram, ce)?;
                }
            }
        }
        Ok(())
    }
}

/// Socket buffers of `SOCKET_BUFFER` bytes (the kernel caps them at
/// net.core.rmem_max / wmem_max): with the default ~200 kB a receiver that
/// is descheduled for a millisecond drops a burst at 10 Gbit/s.
pub fn socket_buffers(sock: &UdpSocket) {
    // (Best effort: a smaller buffer costs rebuilt blocks, not bytes.)
    let _ = setsockopt(sock, sockopt::RcvBuf, &SOCKET_BUFFER);
    let _ = setsockopt(sock, sockopt::SndBuf, &SOCKET_BUFFER);
}

const SOCKET_BUFFER: usize = 8 << 20;

/// The sender's paths: one socket per entropy, each on its own source
/// port, so that the network's ECMP hash of the ports (or of the IPv6 flow
/// label, which Linux derives from them) gives every entropy its own path.
/// A socket is opened when the balancer first sends on its entropy; one
/// whose entropy the balancer re-drew stays open (and read: ACKs and NACKs
/// for its packets still come to its port) until `RETIRED` newer ones have
/// been retired after it.
struct Paths {
    local: SocketAddr,
    socks: Vec<(u16, Socket)>,
    retired: std::collections::VecDeque<Socket>,
}

/// Re-drawn entropies' sockets kept open for their late answers.
const RETIRED: usize = 32;

impl Paths {
    fn socket(&mut self, entropy: u16, in_use: &[u16]) -> io::Result<&Socket> {
        if let Some(i) = self.socks.iter().position(|(e, _)| *e == entropy) {
            return Ok(&self.socks[i].1);
        }
        // (Bound before the old close: the kernel cannot hand back a port
        // whose late answers would then reach the new subflow.)
        let sock = UdpSocket::bind(self.local)?;
        socket_buffers(&sock);
        let (keep, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut self.socks).into_iter().partition(|(e, _)| in_use.contains(e));
        self.socks = keep;
        self.retired.extend(gone.into_iter().map(|(_, s)| s));
        while self.retired.len() > RETIRED {
            self.retired.pop_front();
        }
        self.socks.push((entropy, Socket::new(sock)?));
        Ok(&self.socks[self.socks.len() - 1].1)
    }

    /// Every open socket: the subflows' and the retired ones.
    fn all(&self) -> impl Iterator<Item = &Socket> + Clone {
        self.socks.iter().map(|(_, s)| s).chain(self.retired.iter())
    }
}

/// Sends `sender`'s transfer to `peer` from sockets bound to `local` (port
/// 0: one port per entropy) until the receiver has every block; fails if
/// the receiver is silent for `PEER_TIMEOUT`. `progress` hears the bytes
/// the receiver has whole, every 100 ms.
pub fn send<S: Source>(local: IpAddr, peer: SocketAddr, sender: &mut Sender<S>, progress: &mut dyn FnMut(u64)) -> io::Result<SenderStats> {
    let mut paths = Paths { local: SocketAddr::new(local, 0), socks: Vec::new(), retired: Default::default() };
    let mut inbox = Inbox::new();
    let clock = Clock(Instant::now());
    let mut out = Vec::with_capacity(RECV_BUFFER);
    let mut heard = clock.now();
    let mut reported = 0;
    while !sender.is_done() {
        let now = clock.now();
        if now >= reported + PROGRESS_NS {
            reported = now;
            progress(sender.bytes_done());
        }
        while let Some(entropy) = sender.poll_transmit(now, &mut out)? {
            paths.socket(entropy, sender.entropies())?.send(peer, &out, true)?;
        }
        inbox.recv_until(paths.all(), &clock, sender.next_timeout(), &mut |from, datagram, _| {
            if from == peer {
                heard = clock.now();
                sender.on_datagram(heard, datagram);
            }
            Ok(())
        })?;
        let now = clock.now();
        sender.on_timeout(now);
        if now.saturating_sub(heard) > PEER_TIMEOUT.as_nanos() as u64 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no answer from {peer} for {} s", PEER_TIMEOUT.as_secs())));
        }
    }
    progress(sender.bytes_done());
    Ok(sender.stats)
}

/// Receives one transfer on `sock` from the IP address that first sends one
/// of its packets, on any of its ports (its paths; from `from` only, if
/// given; datagrams from other addresses are refused), until every block is
/// written; fails if the sender is silent
/// for `PEER_TIMEOUT`. Then it goes on ACKing the sender's late resends (its
/// last ACKs may be lost) until `stop` is set or the sender is quiet for a
/// second. `progress` hears the bytes written, every 100 ms.
pub fn receive<W: Sink>(
    sock: &UdpSocket,
    from: Option<IpAddr>,
    receiver: &mut Receiver<W>,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64),
) -> io::Result<ReceiverStats> {
    let mut sender_ip = from;
    let sock = Socket::new(sock.try_clone()?)?;
    let mut inbox = Inbox::new();
    let clock = Clock(Instant::now());
    let mut out = Vec::with_capacity(64);
    // The sender's ports that delivered last (most recent first): a NACK
    // goes to each, since a path that delivers data says nothing of its
    // way back.
    let mut recent: Vec<SocketAddr> = Vec::with_capacity(NACK_PATHS + 1);
    let mut heard = clock.now();
    let mut linger_until: Option<u64> = None;
    let mut reported = 0;
    loop {
        let now = clock.now();
        if now >= reported + PROGRESS_NS {
            reported = now;
            progress(receiver.bytes_done());
        }
        for nack in receiver.poll_nacks(now) {
            out.clear();
            nack.write(&mut out).map_err(io::Error::other)?;
            for to in &recent {
                sock.send(*to, &out, false)?;
            }
        }
        let deadline = match linger_until {
            Some(l) => Some(l),
            None => receiver.next_timeout(),
        };
        let mut acks: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
        inbox.recv_until(std::iter::once(&sock), &clock, deadline, &mut |from, datagram, ce| {
            if from_ip_differs(from, sender_ip) {
                receiver.stats.refused += 1;
                return Ok(());
            }
            let now = clock.now();
            if let Some(ack) = receiver.on_datagram(now, datagram, ce)? {
                if recent.first() != Some(&from) {
                    recent.retain(|a| *a != from);
                    recent.insert(0, from);
                    recent.truncate(NACK_PATHS);
                }
                sender_ip.get_or_insert(from.ip());
                heard = now;
                let mut b = Vec::with_capacity(32);
                ack.write(&mut b).map_err(io::Error::other)?;
                acks.push((from, b));
            }
            Ok(())
        })?;
        for (to, ack) in &acks {
            sock.send(*to, ack, false)?;
        }
        let now = clock.now();
        if receiver.is_done() {
            // Linger: answer the sender's resends until it goes quiet.
            let quiet_until = heard.saturating_add(1_000_000_000);
            if now >= quiet_until || stop.load(Ordering::Relaxed) {
                progress(receiver.bytes_done());
                return Ok(receiver.stats);
            }
            linger_until = Some(quiet_until);
        } else if now.saturating_sub(heard) > PEER_TIMEOUT.as_nanos() as u64 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no data for {} s", PEER_TIMEOUT.as_secs())));
        }
    }
}
