//! `xdcc sample`: one process that samples TCP sockets (sock_diag) and port
//! queues (the root qdisc's counters, rtnetlink) in several network
//! namespaces at a fixed period and writes one JSON object per line.
//!
//! The testbed runs it in the guest instead of an interpreter: a netlink
//! socket keeps the namespace it was opened in, so every socket is opened
//! once (the thread enters the namespace, opens, and returns) and each sample
//! costs two dumps per namespace and no process spawn.
//!
//! Lines (`t`: CLOCK_MONOTONIC seconds, when that dump was requested):
//! - `{"t":..,"ns":"dc1h2","dport":5201,"bytes_acked":..,"cwnd":..,"rtt_us":..,
//!   "total_retrans":..,"delivered_ce":..,"pacing_rate":..,"cc":".."}`: per
//!   namespace and watched destination port, the socket that acknowledged the
//!   most bytes (iperf3's data connection, not its control one);
//! - `{"t":..,"port":"dc1sw:h1","backlog":..,"qlen":..,"bytes":..,"packets":..,"drops":..}`:
//!   per port, the root qdisc's counters (drops: the larger of the root's and
//!   the sum of its children's, since netem's losses do not reach an HTB root);
//! - at the end `{"sampler":{"samples":N,"gap_median_ms":..,"gap_max_ms":..}}`.
//!
//! It stops at `--duration`, or without one when its standard input closes.

use std::{
    collections::BTreeMap,
    io::{Read, Write},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use anyhow::{bail, Context, Result};
use netlink_packet_route::{
    tc::{TcAttribute, TcHandle, TcMessage, TcStats2},
    RouteNetlinkMessage,
};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr as NlAddr};
use serde::Serialize;

use crate::{failure::bad_value, sockdiag};

/// What to sample, from the command line.
pub struct Plan {
    /// (namespace, destination ports to report) per socket namespace.
    pub sockets: Vec<(String, Vec<u16>)>,
    /// (label, namespace, interface) per port.
    pub ports: Vec<(String, String, String)>,
    pub period: Duration,
    pub duration: Option<Duration>,
    pub ipv6: bool,
}

/// `NS:PORT[,PORT...]` → (NS, ports).
pub fn parse_sockets(spec: &str) -> Result<(String, Vec<u16>)> {
    let (ns, ports) = spec.split_once(':').ok_or_else(|| bad_value(format!("--sockets {spec}: expected NAMESPACE:PORT[,PORT...]")))?;
    let ports = ports
        .split(',')
        .map(|p| p.parse::<u16>().map_err(|_| bad_value(format!("--sockets {spec}: {p:?} is not a TCP port"))))
        .collect::<Result<Vec<_>>>()?;
    if ns.is_empty() {
        bail!(bad_value(format!("--sockets {spec}: empty namespace")));
    }
    Ok((ns.to_string(), ports))
}

/// `NS:DEV` → (label `NS:DEV`, NS, DEV).
pub fn parse_port(spec: &str) -> Result<(String, String, String)> {
    match spec.split_once(':') {
        Some((ns, dev)) if !ns.is_empty() && !dev.is_empty() => Ok((spec.to_string(), ns.to_string(), dev.to_string())),
        _ => bail!(bad_value(format!("--port {spec}: expected NAMESPACE:INTERFACE, e.g. dc1sw:h1"))),
    }
}

#[derive(Serialize)]
struct FlowLine<'a> {
    t: f64,
    ns: &'a str,
    dport: u16,
    bytes_acked: u64,
    cwnd: u32,
    rtt_us: u32,
    total_retrans: u32,
    delivered_ce: u32,
    pacing_rate: u64,
    cc: &'a str,
}

#[derive(Serialize, Default, Clone, Copy)]
struct QueueCounters {
    backlog: u32,
    qlen: u32,
    bytes: u64,
    packets: u32,
    drops: u32,
}

#[derive(Serialize)]
struct QueueLine<'a> {
    t: f64,
    port: &'a str,
    #[serde(flatten)]
    counters: QueueCounters,
}

fn monotonic_s() -> f64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap_or(nix::sys::time::TimeSpec::new(0, 0));
    ts.tv_sec() as f64 + ts.tv_nsec() as f64 * 1e-9
}

fn route_socket() -> Result<Socket> {
    let mut s = Socket::new(NETLINK_ROUTE).context("opening an rtnetlink socket")?;
    s.bind_auto().context("binding the rtnetlink socket")?;
    s.connect(&NlAddr::new(0, 0)).context("connecting the rtnetlink socket")?;
    Ok(s)
}

/// Root-qdisc counters per interface index (`RTM_GETQDISC` dump).
fn qdisc_dump(socket: &Socket) -> Result<BTreeMap<i32, QueueCounters>> {
    let mut roots: BTreeMap<i32, QueueCounters> = BTreeMap::new();
    let mut child_drops: BTreeMap<i32, u32> = BTreeMap::new();
    let request = RouteNetlinkMessage::GetQueueDiscipline(TcMessage::default());
    crate::netlink::dump(socket, request, "the qdisc dump", |msg| {
        let RouteNetlinkMessage::NewQueueDiscipline(m) = msg else { return Ok(()) };
        let mut c = QueueCounters::default();
        for a in &m.attributes {
            if let TcAttribute::Stats2(stats) = a {
                for s in stats {
                    match s {
                        TcStats2::Basic(b) => (c.bytes, c.packets) = (b.bytes, b.packets),
                        TcStats2::Queue(q) => (c.qlen, c.backlog, c.drops) = (q.qlen, q.backlog, q.drops),
                        _ => {}
                    }
                }
            }
        }
        if m.header.parent == TcHandle::ROOT {
            let d = roots.get(&m.header.index).map_or(0, |r| r.drops);
            roots.insert(m.header.index, QueueCounters { drops: c.drops.max(d), ..c });
        } else {
            let d = child_drops.entry(m.header.index).or_default();
            *d = d.saturating_add(c.drops);
        }
        Ok(())
    })?;
    // A leaf's drop also counts at an HTB root, except netem's losses: take
    // whichever saw more.
    for (idx, d) in child_drops {
        let r = roots.entry(idx).or_default();
        r.drops = r.drops.max(d);
    }
    Ok(roots)
}

/// Median and maximum of the time between consecutive samples, in ms.
fn gap_stats(times: &[f64]) -> Option<(f64, f64)> {
    let mut d: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) * 1e3).collect();
    if d.is_empty() {
        return None;
    }
    d.sort_by(|a, b| a.total_cmp(b));
    Some((d[d.len() / 2], d[d.len() - 1]))
}

pub fn run(plan: &Plan, out: &mut impl Write) -> Result<()> {
    let family = if plan.ipv6 { sockdiag::AF_INET6 } else { sockdiag::AF_INET };
    let mut diag = Vec::new();
    for (ns, ports) in &plan.sockets {
        diag.push((ns.as_str(), ports.clone(), crate::kernel::inside_netns(ns, sockdiag::SockDiag::open).with_context(|| format!("namespace {ns}"))?));
    }
    // One rtnetlink socket per namespace, shared by that namespace's ports.
    let mut route: BTreeMap<&str, Socket> = BTreeMap::new();
    let mut ports = Vec::new();
    for (label, ns, dev) in &plan.ports {
        if !route.contains_key(ns.as_str()) {
            route.insert(ns, crate::kernel::inside_netns(ns, route_socket).with_context(|| format!("namespace {ns}"))?);
        }
        let idx = crate::kernel::inside_netns(ns, || {
            nix::net::if_::if_nametoindex(dev.as_str()).map_err(|e| bad_value(format!("--port {label}: no interface {dev} in {ns}: {e}")))
        })?;
        ports.push((label.as_str(), ns.as_str(), idx as i32));
    }

    // Stop at --duration, or without one when stdin closes (the runner
    // closes it).
    let stop = Arc::new(AtomicBool::new(false));
    if plan.duration.is_none() {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut sink = [0u8; 256];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
            stop.store(true, Ordering::Relaxed);
        });
    }
    let start = monotonic_s();
    let mut next = start;
    let mut times = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let t_sample = monotonic_s();
        if plan.duration.is_some_and(|d| t_sample - start >= d.as_secs_f64()) {
            break;
        }
        times.push(t_sample);
        for (ns, dports, d) in &diag {
            let t = monotonic_s();
            let mut best: BTreeMap<u16, sockdiag::TcpSocket> = BTreeMap::new();
            for s in d.dump_connections(family)? {
                let dport = s.remote.port();
                if dports.contains(&dport) && best.get(&dport).map_or(true, |b| s.bytes_acked >= b.bytes_acked) {
                    best.insert(dport, s);
                }
            }
            for (dport, s) in &best {
                let line = FlowLine {
                    t,
                    ns,
                    dport: *dport,
                    bytes_acked: s.bytes_acked,
                    cwnd: s.cwnd,
                    rtt_us: s.srtt_us,
                    total_retrans: s.total_retrans,
                    delivered_ce: s.delivered_ce,
                    pacing_rate: s.pacing_rate,
                    cc: &s.cc,
                };
                serde_json::to_writer(&mut *out, &line)?;
                out.write_all(b"\n")?;
            }
        }
        for (ns, socket) in &route {
            let t = monotonic_s();
            let counters = qdisc_dump(socket).with_context(|| format!("namespace {ns}"))?;
            for (label, _, idx) in ports.iter().filter(|p| p.1 == *ns) {
                if let Some(c) = counters.get(idx) {
                    serde_json::to_writer(&mut *out, &QueueLine { t, port: label, counters: *c })?;
                    out.write_all(b"\n")?;
                }
            }
        }
        out.flush()?;
        next += plan.period.as_secs_f64();
        let now = monotonic_s();
        if next < now {
            next = now; // fell behind: sample again at once, don't burst to catch up
        }
        std::thread::sleep(Duration::from_secs_f64(next - now));
    }
    let (median, max) = gap_stats(&times).unwrap_or((0.0, 0.0));
    writeln!(
        out,
        "{}",
        serde_json::json!({"sampler": {"samples": times.len(), "gap_median_ms": median.round(), "gap_max_ms": max.round()}})
    )?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_checked() {
        assert_eq!(parse_sockets("dc1h2:5201,5202").unwrap(), ("dc1h2".into(), vec![5201, 5202]));
        assert!(parse_sockets("dc1h2").is_err());
        assert!(parse_sockets("dc1h2:http").is_err());
        assert!(parse_sockets(":5201").is_err());
        assert_eq!(parse_port("dc1sw:h1").unwrap(), ("dc1sw:h1".into(), "dc1sw".into(), "h1".into()));
        assert!(parse_port("dc1sw").is_err());
        assert!(parse_port("dc1sw:").is_err());
    }

    #[test]
    fn gaps_are_median_and_max() {
        let (median, max) = gap_stats(&[0.0, 0.1, 0.2, 0.5]).unwrap();
        assert!((median - 100.0).abs() < 1e-6 && (max - 300.0).abs() < 1e-6, "{median} {max}");
        assert_eq!(gap_stats(&[1.0]), None);
    }
}
