//! Microsecond TCP timestamps per destination: the route feature
//! `RTAX_FEATURE_TCP_USEC_TS` (Linux 6.7+), set on routes of the main table.
//!
//! The model: at datacenter RTTs (tens of µs) a millisecond TCP timestamp
//! cannot tell an original segment from its retransmission, so Linux's
//! Eifel check (`tcp_packet_delayed`: the ACK echoes a timestamp older than
//! the retransmission) never fires and a spurious fast retransmission —
//! one caused by reordering, not loss — is never undone: the CC's loss
//! reaction stands. With µs timestamps the check works at these RTTs and
//! the stack calls the CC's `undo_cwnd`. Only the data sender's route
//! matters (it compares its own clock); the feature applies to connections
//! opened after it is set. Linux reads it from the route at connect time
//! (client) and when answering a SYN (server).

use std::net::IpAddr;

use anyhow::{bail, Context, Result};
use futures::TryStreamExt;
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteFlag, RouteMessage, RouteMetric, RouteType};
use rtnetlink::IpVersion;

/// `RTAX_FEATURE_TCP_USEC_TS` (include/uapi/linux/rtnetlink.h).
pub const FEATURE_TCP_USEC_TS: u32 = 1 << 4;
/// `RT_TABLE_MAIN`.
const MAIN_TABLE: u32 = 254;

/// A destination prefix as an operator writes it: `default` (both
/// families), `default4`/`default6`, `ADDR/LEN` or a bare address (a host
/// route).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    /// None: a default route of either family.
    pub addr: Option<IpAddr>,
    pub len: u8,
    /// For `default`: which families (v4, v6).
    pub families: (bool, bool),
}

impl std::str::FromStr for Prefix {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "default" => return Ok(Prefix { addr: None, len: 0, families: (true, true) }),
            "default4" => return Ok(Prefix { addr: None, len: 0, families: (true, false) }),
            "default6" => return Ok(Prefix { addr: None, len: 0, families: (false, true) }),
            _ => {}
        }
        let (a, l) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr =
            a.parse().map_err(|_| anyhow::anyhow!("`{s}` is not a prefix (ADDR/LEN, an address, or `default`)"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match l {
            None => max,
            Some(l) => match l.parse::<u8>() {
                Ok(n) if n <= max => n,
                _ => bail!("`{s}`: prefix length must be 0..={max}"),
            },
        };
        Ok(Prefix { addr: Some(addr), len, families: (addr.is_ipv4(), addr.is_ipv6()) })
    }
}

/// One unicast route of the main table and whether it carries the feature.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RouteTs {
    pub destination: String,
    pub usec_ts: bool,
}

fn destination(m: &RouteMessage) -> Option<IpAddr> {
    m.attributes.iter().find_map(|a| match a {
        RouteAttribute::Destination(RouteAddress::Inet(v4)) => Some(IpAddr::V4(*v4)),
        RouteAttribute::Destination(RouteAddress::Inet6(v6)) => Some(IpAddr::V6(*v6)),
        _ => None,
    })
}

fn table(m: &RouteMessage) -> u32 {
    m.attributes
        .iter()
        .find_map(|a| if let RouteAttribute::Table(t) = a { Some(*t) } else { None })
        .unwrap_or(m.header.table as u32)
}

fn features(m: &RouteMessage) -> u32 {
    m.attributes
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Metrics(ms) => ms.iter().find_map(|x| if let RouteMetric::Features(f) = x { Some(*f) } else { None }),
            _ => None,
        })
        .unwrap_or(0)
}

fn describe(m: &RouteMessage) -> String {
    match destination(m) {
        Some(a) => format!("{a}/{}", m.header.destination_prefix_length),
        None if m.header.destination_prefix_length == 0 => {
            if m.header.address_family == netlink_packet_route::AddressFamily::Inet6 { "default (v6)" } else { "default" }
                .to_string()
        }
        None => format!("?/{}", m.header.destination_prefix_length),
    }
}

fn matches(m: &RouteMessage, p: &Prefix, v6: bool) -> bool {
    if m.header.destination_prefix_length != p.len {
        return false;
    }
    match (p.addr, destination(m)) {
        (None, None) => if v6 { p.families.1 } else { p.families.0 },
        (Some(a), Some(d)) => a == d,
        // A /0 route may be dumped with or without an all-zero destination.
        (Some(a), None) => p.len == 0 && a.is_unspecified(),
        (None, Some(d)) => d.is_unspecified(),
    }
}

/// The same route with the feature bit set or cleared; what the kernel
/// reports and will not take back (cache info, expiry, the next hops'
/// state flags such as linkdown) is left out.
fn with_feature(m: &RouteMessage, on: bool) -> RouteMessage {
    let mut out = m.clone();
    out.header.flags.retain(|f| !matches!(f, RouteFlag::Dead | RouteFlag::Linkdown | RouteFlag::Offload | RouteFlag::Trap));
    out.attributes.retain(|a| !matches!(a, RouteAttribute::CacheInfo(_) | RouteAttribute::Expires(_)));
    let f = features(m);
    let f = if on { f | FEATURE_TCP_USEC_TS } else { f & !FEATURE_TCP_USEC_TS };
    match out.attributes.iter_mut().find_map(|a| if let RouteAttribute::Metrics(ms) = a { Some(ms) } else { None }) {
        Some(ms) => {
            ms.retain(|x| !matches!(x, RouteMetric::Features(_)));
            if f != 0 {
                ms.push(RouteMetric::Features(f));
            }
        }
        None if f != 0 => out.attributes.push(RouteAttribute::Metrics(vec![RouteMetric::Features(f)])),
        None => {}
    }
    out
}

async fn main_routes(handle: &rtnetlink::Handle) -> Result<Vec<(RouteMessage, bool)>> {
    let mut out = Vec::new();
    for (ver, v6) in [(IpVersion::V4, false), (IpVersion::V6, true)] {
        let mut dump = handle.route().get(ver).execute();
        while let Some(m) = dump.try_next().await.context("dumping routes")? {
            if table(&m) == MAIN_TABLE && m.header.kind == RouteType::Unicast {
                out.push((m, v6));
            }
        }
    }
    Ok(out)
}

fn connect() -> Result<rtnetlink::Handle> {
    let (conn, handle, _) = rtnetlink::new_connection().context("opening rtnetlink")?;
    tokio::spawn(conn);
    Ok(handle)
}

/// Every unicast route of the main table.
pub async fn list() -> Result<Vec<RouteTs>> {
    let handle = connect()?;
    Ok(main_routes(&handle)
        .await?
        .iter()
        .map(|(m, _)| RouteTs { destination: describe(m), usec_ts: features(m) & FEATURE_TCP_USEC_TS != 0 })
        .collect())
}

/// Sets (`on`) or clears the feature on the main-table routes of every
/// prefix; returns each route's description and whether it changed. Every
/// prefix must name at least one route, checked before anything changes.
pub async fn set(prefixes: &[Prefix], on: bool) -> Result<Vec<(String, bool)>> {
    let handle = connect()?;
    let routes = main_routes(&handle).await?;
    let mut todo = Vec::new();
    for p in prefixes {
        let hits: Vec<&RouteMessage> = routes.iter().filter(|(m, v6)| matches(m, p, *v6)).map(|(m, _)| m).collect();
        if hits.is_empty() {
            bail!("no route in the main table for {} (see `ip route` / `ip -6 route`)", fmt_prefix(p));
        }
        todo.extend(hits);
    }
    let mut done = Vec::new();
    for m in todo {
        let has = features(m) & FEATURE_TCP_USEC_TS != 0;
        if has == on {
            done.push((describe(m), false));
            continue;
        }
        let mut req = handle.route().add();
        *req.message_mut() = with_feature(m, on);
        if let Err(e) = req.replace().execute().await {
            let old_kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .and_then(|r| kernel_version(&r))
                .is_some_and(|v| v < (6, 7));
            let hint = if on && old_kernel { " (µs TCP timestamps need Linux 6.7 or later)" } else { "" };
            bail!("changing the route {}: {e}{hint}", describe(m));
        }
        done.push((describe(m), true));
    }
    Ok(done)
}

/// (major, minor) of a kernel release string ("6.18.44-fc" -> (6, 18)).
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.trim().split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

fn fmt_prefix(p: &Prefix) -> String {
    match p.addr {
        None => match p.families {
            (true, false) => "default4".to_string(),
            (false, true) => "default6".to_string(),
            _ => "default".to_string(),
        },
        Some(a) => format!("{a}/{}", p.len),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_parse_and_bad_ones_are_refused() {
        let p: Prefix = "10.1.0.0/16".parse().unwrap();
        assert_eq!((p.addr.unwrap().to_string(), p.len), ("10.1.0.0".into(), 16));
        assert_eq!("10.1.2.3".parse::<Prefix>().unwrap().len, 32);
        assert_eq!("fd00::/8".parse::<Prefix>().unwrap().len, 8);
        assert_eq!("default".parse::<Prefix>().unwrap().families, (true, true));
        assert_eq!("default6".parse::<Prefix>().unwrap().families, (false, true));
        for bad in ["10.1.0.0/33", "fd00::/129", "eth0", "10.1.0.0/x", ""] {
            assert!(bad.parse::<Prefix>().is_err(), "{bad}");
        }
    }

    #[test]
    fn kernel_versions_read_from_a_release() {
        assert_eq!(kernel_version("6.18.44-fc-v782\n"), Some((6, 18)));
        assert_eq!(kernel_version("6.1.0-30-amd64"), Some((6, 1)));
        assert!(kernel_version("6.1.0").unwrap() < (6, 7));
        assert_eq!(kernel_version("garbage"), None);
    }

    #[test]
    fn the_feature_bit_joins_and_leaves_the_other_metrics() {
        let mut m = RouteMessage::default();
        m.attributes.push(RouteAttribute::Metrics(vec![RouteMetric::Mtu(9000), RouteMetric::Features(1)]));
        m.attributes.push(RouteAttribute::Table(MAIN_TABLE));
        let on = with_feature(&m, true);
        assert_eq!(features(&on), 1 | FEATURE_TCP_USEC_TS);
        assert!(matches!(&on.attributes[0], RouteAttribute::Metrics(ms) if ms.contains(&RouteMetric::Mtu(9000))));
        assert_eq!(features(&with_feature(&on, false)), 1);
        let bare = RouteMessage::default();
        assert_eq!(features(&with_feature(&bare, true)), FEATURE_TCP_USEC_TS);
        assert!(with_feature(&bare, false).attributes.is_empty());
    }
}
