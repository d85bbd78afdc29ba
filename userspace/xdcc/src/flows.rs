//! One row per TCP flow: the eBPF flow table joined with the kernel's
//! tcp_info (sock_diag) and, for a BPF CC, its state from the CC's flow
//! iterator, as a human table or JSON. The one place that joins sources.

use std::{
    collections::HashMap,
    net::{IpAddr, Ipv6Addr, SocketAddr},
};

use serde::{Deserialize, Serialize};
use xdcc_common::{path_label, FlowKey, FlowStats, RerouteReason};

use crate::sockdiag::{self, CcState, TcpSocket};

/// Every TCP socket but listeners (sock_diag), with the algorithm state of
/// the ones on a BPF CC loaded by xdcc (its flow iterator). A BPF CC whose
/// iterator cannot be read or parsed is warned about and its sockets shown
/// without that state: one bad program does not hide the others' sockets.
pub fn tcp_sockets() -> anyhow::Result<Vec<TcpSocket>> {
    let mut out = sockdiag::tcp_sockets()?;
    if !out.iter().any(|s| s.cc_state.is_none() && s.cc.starts_with("bpf_")) {
        return Ok(out);
    }
    let infos = crate::bpfcc::flow_infos().unwrap_or_else(|e| {
        log::warn!("BPF CC state unavailable: {e:#}");
        Vec::new()
    });
    let bpf: HashMap<(SocketAddr, SocketAddr), CcState> =
        infos.into_iter().filter_map(|f| Some(((f.local, f.remote), CcState::decode(&f.cc, &f.info)?))).collect();
    for s in out.iter_mut().filter(|s| s.cc_state.is_none() && s.cc.starts_with("bpf_")) {
        let key = (sockdiag::canonical_addr(s.local), sockdiag::canonical_addr(s.remote));
        s.cc_state = bpf.get(&key).cloned();
    }
    Ok(out)
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FlowView {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub family: u8,
    pub cc: String,
    /// TCP state from sock_diag, or "closed" (kept by the agent after close).
    pub state: String,
    /// Where the row comes from: "ebpf+tcp_info", "ebpf" (socket gone or in
    /// another namespace) or "tcp_info" (no agent, or the flow predates it).
    pub source: String,
    pub age_ms: u64,
    /// When the eBPF side saw the flow established (kernel ns; 0 for a row
    /// from tcp_info alone): with the 4-tuple, which flow this is. Not part
    /// of the JSON.
    #[serde(skip)]
    pub established_ns: u64,
    // bytes and segments
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u64,
    pub segs_in: u64,
    /// TCP payload bytes seen on the interfaces (tc), both directions.
    pub tc_bytes_out: u64,
    pub tc_bytes_in: u64,
    // ECN
    pub ect_out: u64,
    pub ce_in: u64,
    pub ece_in: u64,
    pub ece_out: u64,
    /// ECE fraction of the last round, percent.
    pub ecn_round_pct: f64,
    // RTT (µs)
    pub rtt_min_us: u32,
    pub rtt_srtt_us: u32,
    pub rtt_last_us: u32,
    pub rtt_p50_us: Option<u32>,
    pub rtt_p99_us: Option<u32>,
    pub rtt_samples: u32,
    /// The flow's RTT samples in the Prometheus histogram's buckets
    /// ([`RTT_LE_US`], then +Inf; not cumulative), and their sum in µs
    /// (each sample at its eBPF bucket's midpoint). Only the agent's eBPF
    /// flows have them; not part of the JSON.
    #[serde(skip)]
    pub rtt_le_counts: [u32; RTT_LE_US.len() + 1],
    #[serde(skip)]
    pub rtt_sum_us: u64,
    // window
    pub cwnd: u32,
    pub mss: u32,
    pub retrans: u32,
    pub pacing_rate_bps: u64,
    // rerouting
    pub path_id: Option<u32>,
    pub flow_label: Option<u32>,
    pub reroutes: u32,
    pub last_reroute: String,
    /// UnoLB: the subflows the flow is sprayed over (None: one path), and
    /// those re-drawn after losing a packet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subflows: Option<u32>,
    #[serde(default)]
    pub subflow_redraws: u32,
    /// The agent's `[[policy]]` entry (1-based) that chose this flow's CC.
    #[serde(default)]
    pub policy: Option<u32>,
    /// The xdcc CC's own state (module get_info / BPF flow iterator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_state: Option<CcState>,
}

pub fn key_addrs(k: &FlowKey) -> (SocketAddr, SocketAddr) {
    let ip = |a: [u8; 16]| -> IpAddr {
        let v6 = Ipv6Addr::from(a);
        match v6.to_ipv4_mapped() {
            Some(v4) if k.family == 4 => IpAddr::V4(v4),
            _ => IpAddr::V6(v6),
        }
    };
    (SocketAddr::new(ip(k.local_addr), k.local_port), SocketAddr::new(ip(k.remote_addr), k.remote_port))
}

pub fn key_from_addrs(local: SocketAddr, remote: SocketAddr) -> FlowKey {
    let bytes = |ip: IpAddr| match ip.to_canonical() {
        IpAddr::V4(v4) => FlowKey::map_v4(v4.octets()),
        IpAddr::V6(v6) => v6.octets(),
    };
    let family = if local.ip().to_canonical().is_ipv4() { 4 } else { 6 };
    FlowKey {
        local_addr: bytes(local.ip()),
        remote_addr: bytes(remote.ip()),
        local_port: local.port(),
        remote_port: remote.port(),
        family,
        _pad: 0,
    }
}

/// A row from the eBPF entry (and the socket's tcp_info if it still exists).
/// Upper bounds (µs) of the RTT histogram the agent exports per CC
/// (`xdcc_cc_rtt_seconds`): 10 µs to 1 s in 1-2-5 steps.
pub const RTT_LE_US: [u32; 16] =
    [10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000];

/// The eBPF histogram (4 buckets per power of two) in [`RTT_LE_US`]'s
/// buckets: each eBPF bucket counts under the first bound at or above its
/// upper edge (so a sample may count up to one eBPF bucket, 25 %, high).
/// Returns the counts and the sum of the samples at their buckets'
/// midpoints, µs.
pub fn rtt_le_counts(hist: &[u32]) -> ([u32; RTT_LE_US.len() + 1], u64) {
    let mut out = [0u32; RTT_LE_US.len() + 1];
    let mut sum = 0u64;
    for (b, &n) in hist.iter().enumerate().filter(|(_, &n)| n != 0) {
        let upper = xdcc_common::bucket_upper_us(b);
        let i = RTT_LE_US.iter().position(|&le| upper <= le).unwrap_or(RTT_LE_US.len());
        out[i] = out[i].saturating_add(n);
        let lower = xdcc_common::bucket_lower_us(b) as u64;
        let mid = if upper == u32::MAX { lower } else { (lower + upper as u64) / 2 };
        sum = sum.saturating_add(mid.saturating_mul(n as u64));
    }
    (out, sum)
}

pub fn from_ebpf(key: &FlowKey, st: &FlowStats, sock: Option<&TcpSocket>, now_ns: u64, salt: u32) -> FlowView {
    let (local, remote) = key_addrs(key);
    let end = if st.closed_ns != 0 { st.closed_ns } else { now_ns };
    let rtt_le = rtt_le_counts(&st.rtt_hist);
    let mut v = FlowView {
        local,
        remote,
        family: key.family as u8,
        cc: st.cc_name().to_string(),
        state: if st.closed_ns != 0 { "closed".into() } else { "established".into() },
        source: "ebpf".into(),
        age_ms: end.saturating_sub(st.established_ns) / 1_000_000,
        established_ns: st.established_ns,
        bytes_sent: st.bytes_out,
        bytes_acked: st.bytes_acked,
        bytes_received: st.bytes_received,
        segs_out: st.segs_out,
        segs_in: st.segs_in,
        tc_bytes_out: st.bytes_out,
        tc_bytes_in: st.bytes_in,
        ect_out: st.ect_out,
        ce_in: st.ce_in,
        ece_in: st.ece_in,
        ece_out: st.ece_out,
        ecn_round_pct: st.round_ecn_ppm as f64 / 10_000.0,
        rtt_min_us: st.min_rtt_us,
        rtt_srtt_us: st.srtt_us,
        rtt_last_us: st.last_rtt_us,
        rtt_p50_us: st.rtt_quantile_us(500_000),
        rtt_p99_us: st.rtt_quantile_us(990_000),
        rtt_samples: st.rtt_samples,
        rtt_le_counts: rtt_le.0,
        rtt_sum_us: rtt_le.1,
        cwnd: st.snd_cwnd,
        mss: st.mss,
        retrans: st.total_retrans,
        pacing_rate_bps: 0,
        path_id: (key.family == 6).then_some(st.path_id),
        flow_label: (key.family == 6).then(|| path_label(st.path_id, salt)),
        reroutes: st.reroutes,
        last_reroute: RerouteReason::from_u32(st.last_reason).name().into(),
        subflows: (st.lb_subflows != 0).then_some(st.lb_subflows),
        subflow_redraws: st.lb_redraws,
        policy: (st.policy != 0).then_some(st.policy),
        cc_state: None,
    };
    if let Some(s) = sock {
        // live transport state is fresher than the per-round snapshot
        v.source = "ebpf+tcp_info".into();
        v.state = s.state.clone();
        if !s.cc.is_empty() {
            v.cc = s.cc.clone();
        }
        v.cwnd = s.cwnd;
        v.mss = s.mss;
        v.rtt_srtt_us = s.srtt_us;
        v.rtt_min_us = s.min_rtt_us;
        v.bytes_acked = s.bytes_acked;
        v.bytes_received = s.bytes_received;
        v.bytes_sent = s.bytes_sent;
        v.retrans = s.total_retrans;
        v.pacing_rate_bps = s.pacing_rate.saturating_mul(8);
        v.cc_state = s.cc_state.clone();
    }
    v
}

/// A row from tcp_info alone.
pub fn from_socket(s: &TcpSocket) -> FlowView {
    FlowView {
        local: SocketAddr::new(s.local.ip().to_canonical(), s.local.port()),
        remote: SocketAddr::new(s.remote.ip().to_canonical(), s.remote.port()),
        family: if s.local.ip().to_canonical().is_ipv4() { 4 } else { 6 },
        cc: s.cc.clone(),
        state: s.state.clone(),
        source: "tcp_info".into(),
        bytes_sent: s.bytes_sent,
        bytes_acked: s.bytes_acked,
        bytes_received: s.bytes_received,
        ce_in: s.delivered_ce as u64,
        rtt_min_us: s.min_rtt_us,
        rtt_srtt_us: s.srtt_us,
        cwnd: s.cwnd,
        mss: s.mss,
        retrans: s.total_retrans,
        pacing_rate_bps: s.pacing_rate.saturating_mul(8),
        last_reroute: "-".into(),
        age_ms: 0,
        established_ns: 0,
        segs_out: 0,
        segs_in: 0,
        tc_bytes_out: 0,
        tc_bytes_in: 0,
        ect_out: 0,
        ece_in: 0,
        ece_out: 0,
        ecn_round_pct: 0.0,
        rtt_last_us: 0,
        rtt_p50_us: None,
        rtt_p99_us: None,
        rtt_samples: 0,
        rtt_le_counts: [0; RTT_LE_US.len() + 1],
        rtt_sum_us: 0,
        path_id: None,
        flow_label: None,
        reroutes: 0,
        subflows: None,
        subflow_redraws: 0,
        policy: None,
        cc_state: s.cc_state.clone(),
    }
}

/// Joins eBPF entries with sockets; sockets without an entry are added from
/// tcp_info alone. Sorted by local then remote address.
pub fn join(entries: &[(FlowKey, FlowStats)], sockets: &[TcpSocket], now_ns: u64, salt: u32) -> Vec<FlowView> {
    let mut by_key: HashMap<FlowKey, &TcpSocket> =
        sockets.iter().map(|s| (key_from_addrs(s.local, s.remote), s)).collect();
    let mut rows: Vec<FlowView> = entries
        .iter()
        .map(|(k, st)| {
            let sock = if st.closed_ns == 0 { by_key.remove(k) } else { None };
            from_ebpf(k, st, sock, now_ns, salt)
        })
        .collect();
    rows.extend(by_key.values().filter(|s| s.state != "time-wait").map(|s| from_socket(s)));
    rows.sort_by(|a, b| (a.local, a.remote).cmp(&(b.local, b.remote)));
    rows
}

fn human(n: u64) -> String {
    const UNITS: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < UNITS.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n}")
    } else if v < 10.0 {
        format!("{v:.1}{}", UNITS[u])
    } else {
        format!("{v:.0}{}", UNITS[u])
    }
}

fn opt(v: Option<u32>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// The human table (`xdcc flows`).
pub fn render_table(rows: &[FlowView]) -> String {
    let header = [
        "LOCAL", "REMOTE", "CC", "STATE", "SENT", "ACKED", "RCVD", "CE", "ECE", "ECN%", "RTT(us) min/srtt/p99", "CWND",
        "RETX", "PATH", "RR", "POLICY", "CC STATE",
    ];
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        cells.push(vec![
            r.local.to_string(),
            r.remote.to_string(),
            if r.cc.is_empty() { "-".into() } else { r.cc.clone() },
            r.state.clone(),
            human(r.bytes_sent),
            human(r.bytes_acked),
            human(r.bytes_received),
            human(r.ce_in),
            human(r.ece_in),
            format!("{:.1}", r.ecn_round_pct),
            format!("{}/{}/{}", r.rtt_min_us, r.rtt_srtt_us, opt(r.rtt_p99_us)),
            r.cwnd.to_string(),
            r.retrans.to_string(),
            opt(r.path_id),
            r.reroutes.to_string(),
            r.policy.map(|i| format!("#{i}")).unwrap_or_else(|| "-".into()),
            r.cc_state.as_ref().map(|c| c.summary()).unwrap_or_else(|| "-".into()),
        ]);
    }
    let widths: Vec<usize> =
        (0..header.len()).map(|c| cells.iter().map(|row| row[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &cells {
        let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if rows.is_empty() {
        out.push_str("(no TCP flows)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(local: &str, remote: &str) -> TcpSocket {
        let mut s = TcpSocket::new(local.parse().unwrap(), remote.parse().unwrap(), "established");
        s.cc = "cubic".into();
        s.cwnd = 10;
        s.bytes_acked = 1234;
        s
    }

    #[test]
    fn keys_round_trip_v4_v6_and_mapped() {
        for (l, r) in [("10.0.0.1:5000", "10.0.0.2:80"), ("[fd00::1]:4000", "[fd00::2]:443")] {
            let k = key_from_addrs(l.parse().unwrap(), r.parse().unwrap());
            assert_eq!(key_addrs(&k), (l.parse().unwrap(), r.parse().unwrap()));
        }
        // a v4-mapped v6 socket keys like the IPv4 packets it sends
        let k = key_from_addrs("[::ffff:10.0.0.1]:1".parse().unwrap(), "[::ffff:10.0.0.2]:2".parse().unwrap());
        assert_eq!(k.family, 4);
        assert_eq!(k.local_addr, FlowKey::map_v4([10, 0, 0, 1]));
    }

    #[test]
    fn join_prefers_live_tcp_info_and_keeps_unknown_sockets() {
        let s1 = sock("10.0.0.1:5000", "10.0.0.2:80");
        let s2 = sock("10.0.0.1:5001", "10.0.0.2:80");
        let mut st = FlowStats::zeroed();
        st.ce_in = 7;
        st.bytes_acked = 1; // stale per-round snapshot
        st.cc[..3].copy_from_slice(b"uno");
        let k = key_from_addrs(s1.local, s1.remote);
        let rows = join(&[(k, st)], &[s1, s2], 0, 0);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].source, "ebpf+tcp_info");
        assert_eq!(rows[0].ce_in, 7);
        assert_eq!(rows[0].bytes_acked, 1234);
        assert_eq!(rows[1].source, "tcp_info");
        let table = render_table(&rows);
        assert!(table.starts_with("LOCAL"));
        assert!(table.contains("10.0.0.1:5001"));
        let json = serde_json::to_string(&rows).unwrap();
        let back: Vec<FlowView> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, rows);
    }

    #[test]
    fn closed_flows_do_not_take_a_reused_socket() {
        let s = sock("10.0.0.1:5000", "10.0.0.2:80");
        let mut st = FlowStats::zeroed();
        st.closed_ns = 5;
        let k = key_from_addrs(s.local, s.remote);
        let rows = join(&[(k, st)], &[s], 10, 0);
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().any(|r| r.state == "closed"));
    }
}
