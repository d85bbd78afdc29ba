//! Whole-file transfers: the control connection (`control`) around the data
//! path (`udp`), what `xdcc send` and `xdcc recv` run.
//!
//! The receiver writes into a new temporary file beside the target
//! (`.NAME.xdcc-partial-FLOW`, created exclusively) and puts it in place
//! only once the SHA-256 of what it wrote equals the sender's; a failed or
//! refused transfer leaves no file and changes none. It refuses a target
//! that exists unless told to overwrite it, before any data flows.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};
use xdcc_algo::{uno, NetConfig};
use xdcc_multipath::ec::BlockCode;
use xdcc_multipath::lb::Strategy;

use crate::control::{self, accept_parts, done_parts, hello_parts, refs, Message, MIN_KEY, VERSION};
use crate::session::{self, Config, Receiver, ReceiverStats, Sender, SenderStats};
use crate::udp;
use crate::wire::BLOCK_HEADER_LEN;

/// How long either end waits for the other's control message.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);

/// What a sender chooses for its transfer.
#[derive(Clone, Copy, Debug)]
pub struct SendOptions {
    /// Data bytes per packet.
    pub payload: usize,
    pub code: BlockCode,
    /// The path's bottleneck rate, for UnoCC's parameters (bits/s).
    pub link_rate_bps: u64,
    /// How packets choose their paths (UnoLB: 10 subflows).
    pub lb: Strategy,
}

impl Default for SendOptions {
    fn default() -> Self {
        // 1400 bytes of data: a 1438-byte datagram, 1466 on the wire over
        // IPv4, under a 1500-byte MTU with room for IPv6's larger header.
        Self { payload: 1400, code: BlockCode::default(), link_rate_bps: NetConfig::LINUX_DEFAULT.link_rate_bps, lb: session::unolb(10) }
    }
}

/// What a receiver accepts.
#[derive(Clone, Copy, Debug)]
pub struct ReceiveOptions {
    /// Replace an existing target file.
    pub overwrite: bool,
    /// The largest transfer accepted, in bytes.
    pub max_bytes: u64,
    /// Blocks held open at once (memory: this many times 10 packets).
    pub max_open_blocks: u64,
    /// The queuing delay allowed a block's packets before it is NACKed.
    pub nack_queue: Duration,
}

impl Default for ReceiveOptions {
    fn default() -> Self {
        Self { overwrite: false, max_bytes: 1 << 40, max_open_blocks: 1024, nack_queue: Duration::from_millis(2) }
    }
}

/// What a finished transfer did, for the summary line and `--json`: one
/// end's counters.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub bytes: u64,
    /// From the first data packet to the last block whole.
    pub seconds: f64,
    pub goodput_mbps: f64,
    pub sha256: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent: Option<SenderStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received: Option<ReceiverStats>,
}

impl Summary {
    fn new(bytes: u64, seconds: f64, sha256: String) -> Self {
        let goodput_mbps = if seconds > 0.0 { bytes as f64 * 8.0 / seconds / 1e6 } else { 0.0 };
        Self { bytes, seconds, goodput_mbps, sha256, sent: None, received: None }
    }
}

fn refused(reason: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, reason.into())
}

fn protocol(what: &str, got: &Message) -> io::Error {
    let said = match got {
        Message::Refuse { reason } => format!("refused: {reason}"),
        other => format!("unexpected {other:?}"),
    };
    io::Error::new(io::ErrorKind::InvalidData, format!("{what}: {said}"))
}

/// Checks an operator's key.
pub fn check_key(key: &[u8]) -> io::Result<()> {
    if key.len() < MIN_KEY {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("the key is {} bytes; at least {MIN_KEY}", key.len())));
    }
    Ok(())
}

fn sha256_of(path: &Path) -> io::Result<String> {
    let mut r = BufReader::with_capacity(1 << 20, File::open(path)?);
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(control::hex(&h.finalize()))
}

fn unspecified_like(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// Sends the file at `path` to the receiver at `to` (its control port),
/// proving `key`; `progress` hears (bytes done, total).
pub fn send_file(path: &Path, to: SocketAddr, key: &[u8], opts: SendOptions, progress: &mut (dyn FnMut(u64, u64) + Send)) -> io::Result<Summary> {
    check_key(key)?;
    let file = File::open(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let bytes = file.metadata()?.len();
    let sha256 = sha256_of(path)?;

    let started = Instant::now();
    let mut ctl = TcpStream::connect_timeout(&to, CONTROL_TIMEOUT)?;
    // The handshake's time, and below the Hello's answer's: the shorter is
    // UnoCC's first estimate of the path's RTT and the balancer's base RTT
    // (a handshake holds a lost SYN's second; testbed/notes/2026-11-29-unolb-transport.md).
    let connect = started.elapsed();
    ctl.set_read_timeout(Some(CONTROL_TIMEOUT))?;
    ctl.set_nodelay(true)?;
    let nonce_r = match control::read(&mut ctl)? {
        Message::Challenge { version: VERSION, nonce } => nonce,
        other => return Err(protocol("the receiver's challenge", &other)),
    };
    let flow = control::flow_id()?;
    let nonce_s = control::nonce()?;
    let (payload, data, parity) = (opts.payload as u32, opts.code.data, opts.code.parity);
    let mac = control::sign(key, &refs(&hello_parts(&nonce_r, &nonce_s, flow, bytes, payload, data, parity)));
    let asked = Instant::now();
    control::write(&mut ctl, &Message::Hello { version: VERSION, flow, bytes, payload, data, parity, nonce: nonce_s.clone(), mac })?;
    let answer = control::read(&mut ctl)?;
    let rtt = connect.min(asked.elapsed());
    let udp_port = match answer {
        Message::Accept { udp_port, mac } => {
            if !control::verify(key, &refs(&accept_parts(&nonce_s, &nonce_r, flow, udp_port)), &mac) {
                return Err(refused("the receiver does not hold the key"));
            }
            udp_port
        }
        other => return Err(protocol("the receiver's answer", &other)),
    };

    let cfg = Config {
        flow,
        bytes,
        payload: opts.payload,
        code: opts.code,
        nack_queue_ns: 0, // (the receiver's setting)
        max_open_blocks: ReceiveOptions::default().max_open_blocks,
        min_rto_ns: 1_000_000,
    };
    let rtt_ns = u32::try_from(rtt.as_nanos()).unwrap_or(u32::MAX).max(10_000);
    let net = NetConfig {
        link_rate_bps: opts.link_rate_bps,
        intra_rtt_ns: rtt_ns,
        inter_rtt_ns: rtt_ns,
        mtu: (opts.payload + BLOCK_HEADER_LEN + 48) as u32,
    };
    let params = <uno::Params as xdcc_algo::Tunables>::from_net(&net);
    let peer = SocketAddr::new(to.ip(), udp_port);
    let mut sender = Sender::new(cfg, file, params, opts.lb, rtt_ns, 0).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let data_started = Instant::now();
    let tx = udp::send(unspecified_like(to.ip()), peer, &mut sender, &mut |b| progress(b, bytes))?;
    let seconds = data_started.elapsed().as_secs_f64();

    let mac = control::sign(key, &refs(&done_parts(&nonce_r, flow, &sha256)));
    control::write(&mut ctl, &Message::Done { sha256: sha256.clone(), mac })?;
    match control::read(&mut ctl)? {
        Message::Verdict { ok: true, sha256: theirs, .. } if theirs == sha256 => {}
        Message::Verdict { reason, sha256: theirs, .. } => {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("the receiver's copy differs (sha256 {theirs}, ours {sha256}): {reason}")))
        }
        other => return Err(protocol("the receiver's verdict", &other)),
    }
    Ok(Summary { sent: Some(tx), ..Summary::new(bytes, seconds, sha256) })
}

/// Where the receiver writes before the transfer is verified.
fn partial_path(target: &Path, flow: u64) -> io::Result<PathBuf> {
    let name = target
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{}: not a file name", target.display())))?;
    Ok(target.with_file_name(format!(".{}.xdcc-partial-{flow:016x}", name.to_string_lossy())))
}

/// Removes the partial file unless the transfer put it in place.
struct Partial(Option<PathBuf>);

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// Takes one transfer on `listener` (its control port), from a sender that
/// proves `key`, into `target`; `progress` hears (bytes done, total).
pub fn receive_file(listener: &TcpListener, target: &Path, key: &[u8], opts: ReceiveOptions, progress: &mut (dyn FnMut(u64, u64) + Send)) -> io::Result<Summary> {
    check_key(key)?;
    let (mut ctl, peer) = listener.accept()?;
    ctl.set_read_timeout(Some(CONTROL_TIMEOUT))?;
    ctl.set_nodelay(true)?;
    let nonce_r = control::nonce()?;
    control::write(&mut ctl, &Message::Challenge { version: VERSION, nonce: nonce_r.clone() })?;
    let hello = control::read(&mut ctl)?;
    let Message::Hello { version, flow, bytes, payload, data, parity, nonce: nonce_s, mac } = hello else {
        return Err(protocol("the sender's hello", &hello));
    };
    let refuse = |ctl: &mut TcpStream, reason: String| -> io::Error {
        let _ = control::write(ctl, &Message::Refuse { reason: reason.clone() });
        refused(format!("{peer}: {reason}"))
    };
    if version != VERSION {
        return Err(refuse(&mut ctl, format!("version {version}; this receiver speaks {VERSION}")));
    }
    if !control::verify(key, &refs(&hello_parts(&nonce_r, &nonce_s, flow, bytes, payload, data, parity)), &mac) {
        return Err(refuse(&mut ctl, "the sender does not hold the key".into()));
    }
    if bytes > opts.max_bytes {
        return Err(refuse(&mut ctl, format!("{bytes} bytes; this receiver takes at most {}", opts.max_bytes)));
    }
    let cfg = Config {
        flow,
        bytes,
        payload: payload as usize,
        code: BlockCode { data, parity },
        nack_queue_ns: opts.nack_queue.as_nanos().min(u128::from(u64::MAX)) as u64,
        max_open_blocks: opts.max_open_blocks,
        min_rto_ns: 1_000_000,
    };
    if let Err(e) = cfg.check() {
        return Err(refuse(&mut ctl, e));
    }
    if !opts.overwrite && target.exists() {
        return Err(refuse(&mut ctl, format!("{} exists (overwrite not allowed)", target.display())));
    }
    let partial_at = partial_path(target, flow)?;
    let file = OpenOptions::new().write(true).create_new(true).open(&partial_at).map_err(|e| refuse(&mut ctl, format!("{}: {e}", partial_at.display())))?;
    let mut partial = Partial(Some(partial_at.clone()));
    file.set_len(bytes)?;
    let mut receiver = Receiver::new(cfg, file).map_err(|e| refuse(&mut ctl, e))?;

    let sock = UdpSocket::bind(SocketAddr::new(listener.local_addr()?.ip(), 0))?;
    udp::socket_buffers(&sock);
    let udp_port = sock.local_addr()?.port();
    let mac = control::sign(key, &refs(&accept_parts(&nonce_s, &nonce_r, flow, udp_port)));
    control::write(&mut ctl, &Message::Accept { udp_port, mac })?;

    // The data path runs until the sender's Done arrives on the control
    // connection (so it keeps ACKing the sender's last resends).
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let (rx, done) = thread::scope(|s| {
        let data = s.spawn(|| udp::receive(&sock, Some(peer.ip()), &mut receiver, &stop, &mut |b| progress(b, bytes)));
        ctl.set_read_timeout(None).ok();
        let done = control::read(&mut ctl);
        stop.store(true, Ordering::Relaxed);
        (data.join(), done)
    });
    let rx = rx.map_err(|_| io::Error::other("the data path panicked"))??;
    let seconds = started.elapsed().as_secs_f64();
    let (their_sha, mac) = match done? {
        Message::Done { sha256, mac } => (sha256, mac),
        other => return Err(protocol("the sender's done", &other)),
    };
    if !control::verify(key, &refs(&done_parts(&nonce_r, flow, &their_sha)), &mac) {
        return Err(refuse(&mut ctl, "the done message does not carry the key's MAC".into()));
    }
    let file = receiver.into_sink();
    file.sync_all()?;
    drop(file);
    let ours = sha256_of(&partial_at)?;
    if ours != their_sha {
        let _ = control::write(&mut ctl, &Message::Verdict { ok: false, sha256: ours.clone(), reason: "checksum mismatch".into() });
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("sha256 of the received data {ours}, the sender's {their_sha}: discarded")));
    }
    fs::rename(&partial_at, target)?;
    partial.0 = None;
    control::write(&mut ctl, &Message::Verdict { ok: true, sha256: ours.clone(), reason: String::new() })?;
    Ok(Summary { received: Some(rx), ..Summary::new(bytes, seconds, ours) })
}
