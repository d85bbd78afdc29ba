//! TCP sockets of the current network namespace from the kernel's sock_diag
//! (INET_DIAG with tcp_info and the congestion control's name): the same
//! source `ss -tin` reads, without parsing its output.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use netlink_packet_sock_diag::{
    constants::*,
    inet::{nlas::Nla, ExtensionFlags, InetRequest, SocketId, StateFlags},
    SockDiagMessage,
};
use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr as NlAddr};
use netlink_packet_utils::nla::Nla as _;
use serde::{Deserialize, Serialize};
use xdcc_algo::linux;

/// What the CLI shows of one socket's tcp_info.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TcpSocket {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub state: String,
    pub cc: String,
    pub cwnd: u32,
    pub mss: u32,
    pub srtt_us: u32,
    pub min_rtt_us: u32,
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub bytes_retrans: u64,
    pub total_retrans: u32,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub pacing_rate: u64,
    /// The xdcc CC's own per-flow state: from the module's `get_info` or the
    /// BPF CC's flow iterator. `None` for other CCs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_state: Option<CcState>,
}

/// An xdcc CC's per-flow state (`linux::CcInfo`, decoded).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CcState {
    pub ecn_ok: bool,
    /// The last data packet this socket received carried CE.
    pub ce_state: bool,
    pub rtos: u8,
    pub recoveries: u8,
    /// Restarts after more than an RTO without sending (saturating at 63).
    #[serde(default)]
    pub idle_restarts: u8,
    /// The algorithm's values by name (suffix `_us`: µs, `_q16`: fraction ×
    /// 65536), in the algorithm's order; a JSON object.
    #[serde(serialize_with = "ordered_map", deserialize_with = "from_map")]
    pub values: Vec<(String, u32)>,
}

fn ordered_map<S: serde::Serializer>(v: &[(String, u32)], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_map(v.iter().map(|(k, v)| (k, v)))
}

fn from_map<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<(String, u32)>, D::Error> {
    let m: std::collections::BTreeMap<String, u32> = serde::Deserialize::deserialize(d)?;
    Ok(m.into_iter().collect())
}

impl CcState {
    /// `None` when `cc` is not an xdcc CC.
    pub fn decode(cc: &str, info: &linux::CcInfo) -> Option<Self> {
        let names = linux::info_fields(cc)?;
        Some(CcState {
            ecn_ok: info.flags & linux::CcInfo::ECN_OK != 0,
            ce_state: info.flags & linux::CcInfo::CE_STATE != 0,
            rtos: info.rtos,
            recoveries: info.recoveries,
            idle_restarts: info.idle_restarts(),
            values: names.iter().zip(info.values).map(|(n, v)| (n.to_string(), v)).collect(),
        })
    }

    /// `base_rtt=20us alpha=0.125 ...` for the table.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = self
            .values
            .iter()
            .map(|(n, v)| {
                if let Some(stem) = n.strip_suffix("_q16") {
                    format!("{stem}={:.3}", *v as f64 / 65536.0)
                } else if let Some(stem) = n.strip_suffix("_us") {
                    format!("{stem}={v}us")
                } else if let Some(stem) = n.strip_suffix("_mbps") {
                    format!("{stem}={v}Mbps")
                } else {
                    format!("{n}={v}")
                }
            })
            .collect();
        if !self.ecn_ok {
            parts.push("no-ecn".into());
        }
        if self.rtos > 0 || self.recoveries > 0 {
            parts.push(format!("rto={} rec={}", self.rtos, self.recoveries));
        }
        if self.idle_restarts > 0 {
            parts.push(format!("idle={}", self.idle_restarts));
        }
        parts.join(" ")
    }
}

impl TcpSocket {
    /// A socket with every counter zero.
    pub fn new(local: SocketAddr, remote: SocketAddr, state: &str) -> Self {
        TcpSocket {
            local,
            remote,
            state: state.into(),
            cc: String::new(),
            cwnd: 0,
            mss: 0,
            srtt_us: 0,
            min_rtt_us: 0,
            bytes_sent: 0,
            bytes_acked: 0,
            bytes_received: 0,
            bytes_retrans: 0,
            total_retrans: 0,
            delivered: 0,
            delivered_ce: 0,
            pacing_rate: 0,
            cc_state: None,
        }
    }
}

pub fn state_name(s: u8) -> &'static str {
    match s {
        1 => "established",
        2 => "syn-sent",
        3 => "syn-recv",
        4 => "fin-wait-1",
        5 => "fin-wait-2",
        6 => "time-wait",
        7 => "close",
        8 => "close-wait",
        9 => "last-ack",
        10 => "listen",
        11 => "closing",
        _ => "unknown",
    }
}

/// Every TCP socket (IPv4 and IPv6) except listeners, as sock_diag reports
/// them (a module CC's state included; a BPF CC's comes from its flow
/// iterator: `flows::tcp_sockets` joins the two).
pub fn tcp_sockets() -> Result<Vec<TcpSocket>> {
    let mut out = dump(AF_INET)?;
    out.extend(dump(AF_INET6)?);
    Ok(out)
}

/// The address as sock_diag and the BPF flow iterators both key it (an
/// IPv4-mapped IPv6 address as IPv4).
pub fn canonical_addr(a: SocketAddr) -> SocketAddr {
    SocketAddr::new(a.ip().to_canonical(), a.port())
}

fn dump(family: u8) -> Result<Vec<TcpSocket>> {
    SockDiag::open()?.dump(family)
}

pub use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6};

/// A sock_diag socket: it answers for the network namespace it was opened
/// in, whichever namespace the thread is in later.
pub struct SockDiag {
    socket: Socket,
}

impl SockDiag {
    pub fn open() -> Result<Self> {
        let mut socket = Socket::new(NETLINK_SOCK_DIAG).context("opening a sock_diag netlink socket")?;
        socket.bind_auto().context("binding the sock_diag socket")?;
        socket.connect(&NlAddr::new(0, 0)).context("connecting the sock_diag socket")?;
        Ok(Self { socket })
    }

    /// Every TCP socket of `family` but listeners, with tcp_info, the CC's
    /// name and an xdcc module's state.
    pub fn dump(&self, family: u8) -> Result<Vec<TcpSocket>> {
        let mut states = StateFlags::all();
        states.remove(StateFlags::LISTEN);
        self.dump_states(family, states)
    }

    /// As [`Self::dump`], without TIME_WAIT and SYN_RECV sockets (the
    /// kernel's mini sockets, which have no tcp_info): what a sampler of
    /// data-carrying connections asks for, so that a host that has closed
    /// thousands of short flows does not answer every sample with them.
    pub fn dump_connections(&self, family: u8) -> Result<Vec<TcpSocket>> {
        let mut states = StateFlags::all();
        states.remove(StateFlags::LISTEN | StateFlags::TIME_WAIT | StateFlags::SYN_RECV);
        self.dump_states(family, states)
    }

    fn dump_states(&self, family: u8, states: StateFlags) -> Result<Vec<TcpSocket>> {
        let request = SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            // VEGASINFO asks the CC for its get_info (as `ss -i` does).
            extensions: ExtensionFlags::INFO | ExtensionFlags::CONG | ExtensionFlags::VEGASINFO,
            states,
            socket_id: if family == AF_INET { SocketId::new_v4() } else { SocketId::new_v6() },
        });
        let mut out = Vec::new();
        crate::netlink::dump(&self.socket, request, "sock_diag", |msg| {
            let SockDiagMessage::InetResponse(r) = msg else { return Ok(()) };
            let id = &r.header.socket_id;
            let mut s = TcpSocket::new(
                SocketAddr::new(id.source_address, id.source_port),
                SocketAddr::new(id.destination_address, id.destination_port),
                state_name(r.header.state),
            );
            let mut info = None;
            for nla in r.nlas.iter() {
                match nla {
                    Nla::Congestion(c) => s.cc = c.trim_end_matches('\0').to_string(),
                    Nla::TcpInfo(t) => {
                        s.cwnd = t.snd_cwnd;
                        s.mss = t.snd_mss;
                        s.srtt_us = t.rtt;
                        s.min_rtt_us = t.min_rtt;
                        s.bytes_sent = t.bytes_sent;
                        s.bytes_acked = t.bytes_acked;
                        s.bytes_received = t.bytes_received;
                        s.bytes_retrans = t.bytes_retrans;
                        s.total_retrans = t.total_retrans;
                        s.delivered = t.delivered;
                        s.delivered_ce = t.delivered_ce;
                        s.pacing_rate = t.pacing_rate;
                    }
                    Nla::Other(a) if a.kind() == linux::INET_DIAG_XDCC => {
                        let mut b = vec![0u8; a.value_len()];
                        a.emit_value(&mut b);
                        info = linux::CcInfo::from_bytes(&b);
                    }
                    _ => {}
                }
            }
            s.cc_state = info.and_then(|i| CcState::decode(&s.cc, &i));
            out.push(s);
            Ok(())
        })?;
        Ok(out)
    }
}

