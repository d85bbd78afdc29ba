//! TCP sockets of the current network namespace from the kernel's sock_diag
//! (INET_DIAG with tcp_info and the congestion control's name): the same
//! source `ss -tin` reads, without parsing its output.

use std::net::{IpAddr, SocketAddr};

use anyhow::{bail, Context, Result};
use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST};
use netlink_packet_sock_diag::{
    constants::*,
    inet::{nlas::Nla, ExtensionFlags, InetRequest, SocketId, StateFlags},
    SockDiagMessage,
};
use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr as NlAddr};
use serde::{Deserialize, Serialize};

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

/// Every TCP socket (IPv4 and IPv6) except listeners.
pub fn tcp_sockets() -> Result<Vec<TcpSocket>> {
    let mut out = dump(AF_INET)?;
    out.extend(dump(AF_INET6)?);
    Ok(out)
}

fn dump(family: u8) -> Result<Vec<TcpSocket>> {
    let mut socket = Socket::new(NETLINK_SOCK_DIAG).context("opening a sock_diag netlink socket")?;
    socket.bind_auto().context("binding the sock_diag socket")?;
    socket.connect(&NlAddr::new(0, 0)).context("connecting the sock_diag socket")?;
    let mut hdr = NetlinkHeader::default();
    hdr.flags = NLM_F_REQUEST | NLM_F_DUMP;
    let mut states = StateFlags::all();
    states.remove(StateFlags::LISTEN);
    let mut req = NetlinkMessage::new(
        hdr,
        SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::INFO | ExtensionFlags::CONG,
            states,
            socket_id: if family == AF_INET { SocketId::new_v4() } else { SocketId::new_v6() },
        })
        .into(),
    );
    req.finalize();
    let mut buf = vec![0; req.buffer_len()];
    req.serialize(&mut buf);
    socket.send(&buf, 0).context("sending the sock_diag request")?;

    let mut out = Vec::new();
    let mut rx = vec![0u8; 64 * 1024];
    loop {
        let n = socket.recv(&mut &mut rx[..], 0).context("reading sock_diag")?;
        let mut off = 0;
        while off < n {
            let msg = NetlinkMessage::<SockDiagMessage>::deserialize(&rx[off..n]).context("decoding sock_diag")?;
            let len = msg.header.length as usize;
            match msg.payload {
                NetlinkPayload::Done(_) => return Ok(out),
                NetlinkPayload::Error(e) => bail!("sock_diag: {e:?}"),
                NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
                    let id = &r.header.socket_id;
                    let mut s = TcpSocket::new(
                        SocketAddr::new(id.source_address, id.source_port),
                        SocketAddr::new(id.destination_address, id.destination_port),
                        state_name(r.header.state),
                    );
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
                            _ => {}
                        }
                    }
                    out.push(s);
                }
                _ => {}
            }
            if len == 0 {
                break;
            }
            off += len;
        }
    }
}

/// IPv4-mapped IPv6 addresses as plain IPv4 (how the eBPF side keys them).
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ip,
        },
        v4 => v4,
    }
}
