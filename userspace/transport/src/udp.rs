//! The two ends over a UDP socket: blocking loops that feed the state
//! machines of `session` with datagrams and the clock.
//!
//! Plain `send`/`recv` one datagram at a time, no ECN, one entropy (the
//! socket's own port): the first socket layer, enough for a byte-exact
//! transfer through a lossy path. ECN, an entropy per packet, GSO/GRO and
//! batched syscalls come next (docs/transport.md).

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::time::TimeSpec;

use crate::session::{Receiver, ReceiverStats, Sender, SenderStats, Sink, Source};

/// The peer said nothing for this long: the transfer fails.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_DATAGRAM: usize = 65_536;

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

/// Waits on `sock` for one datagram until `deadline_ns` (at most 50 ms
/// away); None if none came. `ppoll`, because a socket's receive timeout
/// counts scheduler ticks (1-10 ms) while a paced sender's gaps between
/// packets are microseconds.
fn recv_until(sock: &UdpSocket, clock: &Clock, deadline_ns: Option<u64>, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>> {
    let wait = deadline_ns.map_or(50_000_000, |d| d.saturating_sub(clock.now())).min(50_000_000);
    let mut fds = [PollFd::new(sock.as_fd(), PollFlags::POLLIN)];
    let timeout = TimeSpec::from_duration(Duration::from_nanos(wait));
    match ppoll(&mut fds, Some(timeout), None) {
        Ok(0) | Err(Errno::EINTR) => return Ok(None),
        Ok(_) => {}
        Err(e) => return Err(e.into()),
    }
    match sock.recv_from(buf) {
        Ok(r) => Ok(Some(r)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

/// How often the loops report progress.
const PROGRESS_NS: u64 = 100_000_000;

/// Sends `sender`'s transfer to `peer` from `sock` until the receiver has
/// every block; fails if the receiver is silent for `PEER_TIMEOUT`.
/// `progress` hears the bytes the receiver has whole, every 100 ms.
pub fn send<S: Source>(sock: &UdpSocket, peer: SocketAddr, sender: &mut Sender<S>, progress: &mut dyn FnMut(u64)) -> io::Result<SenderStats> {
    sock.set_nonblocking(true)?;
    let clock = Clock(Instant::now());
    let mut out = Vec::with_capacity(MAX_DATAGRAM);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut heard = clock.now();
    let mut reported = 0;
    while !sender.is_done() {
        let now = clock.now();
        if now >= reported + PROGRESS_NS {
            reported = now;
            progress(sender.bytes_done());
        }
        while sender.poll_transmit(now, &mut out)? {
            sock.send_to(&out, peer)?;
        }
        if let Some((n, from)) = recv_until(sock, &clock, sender.next_timeout(), &mut buf)? {
            if from == peer {
                heard = clock.now();
                sender.on_datagram(heard, &buf[..n]);
            }
        }
        let now = clock.now();
        sender.on_timeout(now);
        if now.saturating_sub(heard) > PEER_TIMEOUT.as_nanos() as u64 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no answer from {peer} for {} s", PEER_TIMEOUT.as_secs())));
        }
    }
    progress(sender.bytes_done());
    Ok(sender.stats)
}

/// Receives one transfer on `sock` from the first address that sends one of
/// its packets (from `from` only, if given; datagrams from elsewhere are
/// refused), until every block is written; fails if the sender is silent
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
    let sender_ip = from;
    sock.set_nonblocking(true)?;
    let clock = Clock(Instant::now());
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut out = Vec::with_capacity(64);
    let mut peer: Option<SocketAddr> = None;
    let mut heard = clock.now();
    let mut linger_until: Option<u64> = None;
    let mut reported = 0;
    loop {
        let now = clock.now();
        if now >= reported + PROGRESS_NS {
            reported = now;
            progress(receiver.bytes_done());
        }
        if let Some(to) = peer {
            for nack in receiver.poll_nacks(now) {
                out.clear();
                nack.write(&mut out).map_err(io::Error::other)?;
                sock.send_to(&out, to)?;
            }
        }
        let deadline = match linger_until {
            Some(l) => Some(l),
            None => receiver.next_timeout(),
        };
        if let Some((n, from)) = recv_until(sock, &clock, deadline, &mut buf)? {
            if peer.is_some_and(|p| p != from) || from_ip_differs(from, sender_ip) {
                receiver.stats.refused += 1;
                continue;
            }
            let now = clock.now();
            if let Some(ack) = receiver.on_datagram(now, &buf[..n], false)? {
                peer = Some(from);
                heard = now;
                out.clear();
                ack.write(&mut out).map_err(io::Error::other)?;
                sock.send_to(&out, from)?;
            }
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
