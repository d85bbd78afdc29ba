//! The control connection (TCP) that opens and closes a transfer.
//!
//! The receiver listens on the network, so it takes data only from a
//! transfer it agreed to, and only from a sender that holds the key its
//! operator configured (a shared secret, as bulk-transfer tools take one
//! over SSH or TLS):
//!
//! ```text
//! receiver -> sender   Challenge { version, nonce_r }
//! sender -> receiver   Hello { version, flow, bytes, payload, data, parity, nonce_s, mac }
//!                      mac = HMAC-SHA256(key, "hello", nonce_r, nonce_s, flow, bytes, payload, data, parity)
//! receiver -> sender   Accept { udp_port, mac }     mac = HMAC(key, "accept", nonce_s, nonce_r, flow, udp_port)
//!                   or Refuse { reason }
//!     ... the data, over UDP from the control connection's peer address, flow id `flow` ...
//! sender -> receiver   Done { sha256, mac }         mac = HMAC(key, "done", nonce_r, flow, sha256)
//! receiver -> sender   Verdict { ok, sha256, reason }
//! ```
//!
//! Each side proves the key over the other's fresh nonce, so a recorded
//! conversation replays to nobody. The flow id (64 random bits) is the
//! token every data packet carries; the receiver also drops datagrams from
//! any address but the control connection's peer. (An on-path attacker who
//! reads the flow id can still forge data packets: the SHA-256 of the whole
//! transfer, compared before the file is put in place, catches that.)
//! Messages are JSON, each after its length (4 bytes, big-endian, at most
//! `MAX_MESSAGE`).

use std::io::{self, Read, Write};

use hmac::{Hmac, Mac};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use sha2::Sha256;

pub const VERSION: u32 = 1;
/// The longest control message either side reads.
pub const MAX_MESSAGE: usize = 4096;
/// The shortest key the ends accept, in bytes.
pub const MIN_KEY: usize = 16;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    Challenge { version: u32, nonce: String },
    Hello { version: u32, flow: u64, bytes: u64, payload: u32, data: u8, parity: u8, nonce: String, mac: String },
    Accept { udp_port: u16, mac: String },
    Refuse { reason: String },
    Done { sha256: String, mac: String },
    Verdict { ok: bool, sha256: String, reason: String },
}

pub fn write(w: &mut impl Write, m: &Message) -> io::Result<()> {
    let body = serde_json::to_vec(m).map_err(io::Error::other)?;
    if body.len() > MAX_MESSAGE {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "control message too long"));
    }
    w.write_all(&(body.len() as u32).to_be_bytes())?;
    w.write_all(&body)?;
    w.flush()
}

pub fn read(r: &mut impl Read) -> io::Result<Message> {
    read_as(r)
}

fn read_as<T: DeserializeOwned>(r: &mut impl Read) -> io::Result<T> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_MESSAGE {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("control message of {len} bytes (at most {MAX_MESSAGE})")));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("control message: {e}")))
}

/// 16 bytes from the OS's random source, as hex.
pub fn nonce() -> io::Result<String> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b).map_err(io::Error::other)?;
    Ok(hex(&b))
}

/// A random flow id.
pub fn flow_id() -> io::Result<u64> {
    let mut b = [0u8; 8];
    getrandom::getrandom(&mut b).map_err(io::Error::other)?;
    Ok(u64::from_be_bytes(b))
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// HMAC-SHA256 of `parts` (each length-prefixed, so no two part lists
/// give the same input) under `key`.
fn mac_of(key: &[u8], parts: &[&[u8]]) -> Hmac<Sha256> {
    // (Hmac accepts keys of any length.)
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    for p in parts {
        m.update(&(p.len() as u64).to_be_bytes());
        m.update(p);
    }
    m
}

pub fn sign(key: &[u8], parts: &[&[u8]]) -> String {
    hex(&mac_of(key, parts).finalize().into_bytes())
}

/// Whether `mac` (hex) is the HMAC of `parts` under `key` (compared in
/// constant time).
pub fn verify(key: &[u8], parts: &[&[u8]], mac: &str) -> bool {
    unhex(mac).is_some_and(|m| mac_of(key, parts).verify_slice(&m).is_ok())
}

/// The parts of a Hello's MAC.
pub fn hello_parts(nonce_r: &str, nonce_s: &str, flow: u64, bytes: u64, payload: u32, data: u8, parity: u8) -> Vec<Vec<u8>> {
    vec![
        b"xdcc-transport hello v1".to_vec(),
        nonce_r.as_bytes().to_vec(),
        nonce_s.as_bytes().to_vec(),
        flow.to_be_bytes().to_vec(),
        bytes.to_be_bytes().to_vec(),
        payload.to_be_bytes().to_vec(),
        vec![data, parity],
    ]
}

pub fn accept_parts(nonce_s: &str, nonce_r: &str, flow: u64, udp_port: u16) -> Vec<Vec<u8>> {
    vec![
        b"xdcc-transport accept v1".to_vec(),
        nonce_s.as_bytes().to_vec(),
        nonce_r.as_bytes().to_vec(),
        flow.to_be_bytes().to_vec(),
        udp_port.to_be_bytes().to_vec(),
    ]
}

pub fn done_parts(nonce_r: &str, flow: u64, sha256: &str) -> Vec<Vec<u8>> {
    vec![b"xdcc-transport done v1".to_vec(), nonce_r.as_bytes().to_vec(), flow.to_be_bytes().to_vec(), sha256.as_bytes().to_vec()]
}

/// `parts` as the slices `sign` and `verify` take.
pub fn refs(parts: &[Vec<u8>]) -> Vec<&[u8]> {
    parts.iter().map(|p| p.as_slice()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_back_and_oversized_ones_are_refused() {
        let m = Message::Hello {
            version: 1,
            flow: 7,
            bytes: 1 << 40,
            payload: 1400,
            data: 8,
            parity: 2,
            nonce: "ab".into(),
            mac: "cd".into(),
        };
        let mut buf = Vec::new();
        write(&mut buf, &m).unwrap();
        assert_eq!(read(&mut buf.as_slice()).unwrap(), m);
        let mut huge = (MAX_MESSAGE as u32 + 1).to_be_bytes().to_vec();
        huge.extend(vec![b' '; MAX_MESSAGE + 1]);
        assert_eq!(read(&mut huge.as_slice()).unwrap_err().kind(), io::ErrorKind::InvalidData);
        let mut junk = 5u32.to_be_bytes().to_vec();
        junk.extend(b"{oops");
        assert_eq!(read(&mut junk.as_slice()).unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert_eq!(read(&mut &buf[..buf.len() - 1]).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_mac_holds_only_for_its_key_and_its_parts() {
        let key = b"0123456789abcdef-operator-key";
        let parts = hello_parts("r", "s", 1, 2, 3, 8, 2);
        let mac = sign(key, &refs(&parts));
        assert!(verify(key, &refs(&parts), &mac));
        assert!(!verify(b"0123456789abcdef-another-key!", &refs(&parts), &mac));
        assert!(!verify(key, &refs(&hello_parts("r", "s", 1, 3, 3, 8, 2)), &mac), "another length");
        assert!(!verify(key, &refs(&hello_parts("r2", "s", 1, 2, 3, 8, 2)), &mac), "another challenge");
        assert!(!verify(key, &refs(&parts), "zz"));
        assert!(!verify(key, &refs(&parts), &mac[..10]));
        // Length prefixes: moving a byte between parts changes the MAC.
        assert_ne!(sign(key, &[b"ab", b"c"]), sign(key, &[b"a", b"bc"]));
    }
}
