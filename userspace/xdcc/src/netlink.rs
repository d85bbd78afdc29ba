//! One netlink dump: send a request with NLM_F_DUMP on an already opened
//! socket and hand every answer to a callback until the kernel says done.
//! sock_diag (`sockdiag`) and rtnetlink qdisc counters (`sampler`) share it.

use std::cell::Cell;
use std::fmt::Debug;

use anyhow::{bail, Context, Result};
use netlink_packet_core::{
    NetlinkDeserializable, NetlinkHeader, NetlinkMessage, NetlinkPayload, NetlinkSerializable, NLM_F_DUMP,
    NLM_F_REQUEST,
};
use netlink_sys::Socket;

/// Size of the receive buffer: a dump answer arrives in chunks of at most
/// this many bytes.
const RX_LEN: usize = 256 * 1024;

thread_local! {
    /// The receive buffer, kept between dumps. A fresh 256 KiB buffer per
    /// dump is an mmap, 64 page faults and an munmap (a TLB shootdown on
    /// every CPU) per dump: in the emulated testbed guest that was most of
    /// the sampler's cost per sample.
    static RX: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Sends `request` as a dump on `socket` and calls `each` with every answer
/// message; `what` names the dump in errors.
pub fn dump<M>(socket: &Socket, request: M, what: &str, each: impl FnMut(M) -> Result<()>) -> Result<()>
where
    M: NetlinkSerializable + NetlinkDeserializable + Debug,
{
    // (A dump started from `each` finds the buffer taken and uses its own.)
    let mut rx = RX.take();
    if rx.len() < RX_LEN {
        rx = vec![0; RX_LEN];
    }
    let result = dump_with(socket, &mut rx, request, what, each);
    RX.set(rx);
    result
}

fn dump_with<M>(socket: &Socket, rx: &mut [u8], request: M, what: &str, mut each: impl FnMut(M) -> Result<()>) -> Result<()>
where
    M: NetlinkSerializable + NetlinkDeserializable + Debug,
{
    let mut hdr = NetlinkHeader::default();
    hdr.flags = NLM_F_REQUEST | NLM_F_DUMP;
    let mut req = NetlinkMessage::new(hdr, NetlinkPayload::InnerMessage(request));
    req.finalize();
    let mut buf = vec![0; req.buffer_len()];
    req.serialize(&mut buf);
    socket.send(&buf, 0).with_context(|| format!("sending the {what} request"))?;
    loop {
        let n = socket.recv(&mut &mut rx[..], 0).with_context(|| format!("reading {what}"))?;
        let mut off = 0;
        while off < n {
            let msg = NetlinkMessage::<M>::deserialize(&rx[off..n]).with_context(|| format!("decoding {what}"))?;
            let len = msg.header.length as usize;
            match msg.payload {
                NetlinkPayload::Done(_) => return Ok(()),
                NetlinkPayload::Error(e) => bail!("{what}: {e:?}"),
                NetlinkPayload::InnerMessage(m) => each(m)?,
                _ => {}
            }
            if len == 0 {
                break;
            }
            off += len;
        }
    }
}
