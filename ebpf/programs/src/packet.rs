//! What the tc programs read of a TCP/IP packet, in one helper call per
//! family.

use aya_ebpf::programs::TcContext;
use xdcc_common::FlowKey;

const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const IPPROTO_TCP: u8 = 6;
pub(crate) const ETH_HLEN: usize = 14;
pub(crate) const TCP_FLAG_ECE: u8 = 0x40;
const ECN_MASK: u8 = 3;
pub(crate) const ECN_CE: u8 = 3;

/// What the tc programs need of a TCP/IP packet.
pub(crate) struct Packet {
    pub(crate) family: u16,
    pub(crate) src: [u8; 16],
    pub(crate) dst: [u8; 16],
    pub(crate) sport: u16,
    pub(crate) dport: u16,
    pub(crate) ecn: u8,
    pub(crate) tcp_flags: u8,
    /// The TCP sequence number.
    pub(crate) seq: u32,
    /// TCP payload bytes (of the whole GSO packet).
    pub(crate) payload: u32,
    /// IPv6: the first header word (version, traffic class, flow label), host order.
    pub(crate) v6_word0: u32,
    pub(crate) segs: u32,
}

/// Headers are copied to the stack with one `bpf_skb_load_bytes` per family
/// (helper calls dominate the per-packet cost): Ethernet + IPv4 (no options)
/// + TCP = 54 bytes, Ethernet + IPv6 + TCP = 74 bytes. IPv4 options cost a
/// second load; IPv6 extension headers are not followed.
#[inline(always)]
pub(crate) fn parse(ctx: &TcContext) -> Option<Packet> {
    let proto = u16::from_be(ctx.load::<u16>(12).ok()?);
    let mut v6_word0 = 0;
    let (family, src, dst, ecn, tcp, ip_len) = if proto == ETH_P_IP {
        let h: [u8; 54] = ctx.load(0).ok()?;
        if h[ETH_HLEN + 9] != IPPROTO_TCP {
            return None;
        }
        let ihl = ((h[ETH_HLEN] & 0x0f) as usize) * 4;
        let s = [h[26], h[27], h[28], h[29]];
        let d = [h[30], h[31], h[32], h[33]];
        let tcp: [u8; 14] = if ihl == 20 {
            let mut t = [0u8; 14];
            t.copy_from_slice(&h[34..48]);
            t
        } else {
            ctx.load(ETH_HLEN + ihl).ok()?
        };
        (4u16, FlowKey::map_v4(s), FlowKey::map_v4(d), h[ETH_HLEN + 1] & ECN_MASK, tcp, ihl)
    } else if proto == ETH_P_IPV6 {
        let h: [u8; 74] = ctx.load(0).ok()?;
        if h[ETH_HLEN + 6] != IPPROTO_TCP {
            return None; // extension headers are not followed
        }
        let mut s = [0u8; 16];
        let mut d = [0u8; 16];
        s.copy_from_slice(&h[22..38]);
        d.copy_from_slice(&h[38..54]);
        let mut tcp = [0u8; 14];
        tcp.copy_from_slice(&h[54..68]);
        v6_word0 = u32::from_be_bytes([h[14], h[15], h[16], h[17]]);
        // traffic class = bits 20..27 of the first word; ECN = its low 2 bits
        let ecn = ((v6_word0 >> 20) as u8) & ECN_MASK;
        (6u16, s, d, ecn, tcp, 40)
    } else {
        return None;
    };
    let sport = u16::from_be_bytes([tcp[0], tcp[1]]);
    let dport = u16::from_be_bytes([tcp[2], tcp[3]]);
    let hdrs = (ETH_HLEN + ip_len + ((tcp[12] >> 4) as usize) * 4) as u32;
    let payload = ctx.len().saturating_sub(hdrs);
    // SAFETY: reading the context's gso_segs field.
    let gso = unsafe { (*ctx.skb.skb).gso_segs };
    let segs = if gso == 0 { 1 } else { gso };
    let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
    Some(Packet { family, src, dst, sport, dport, ecn, tcp_flags: tcp[13], seq, payload, v6_word0, segs })
}

