//! Whatever arrives: datagrams of any bytes, and packets of this transfer
//! with any field values, in any order, CE-marked or not, at any time. The
//! parser must refuse or accept without panicking, and what it accepts it
//! writes back byte for byte; the receiver must take or refuse each
//! datagram without panicking (or end the transfer when a block's packets
//! do not rebuild), never write outside the transfer (its sink is exactly
//! the transfer's length and fails otherwise), and keep at most
//! `max_open_blocks` blocks; the sender must take any datagram as an ACK or
//! NACK or ignore it.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use xdcc_algo::{uno, NetConfig, Tunables};
use xdcc_multipath::ec::BlockCode;
use xdcc_transport::session::{self, Config, Receiver, Sender};
use xdcc_transport::{BlockPacket, Packet};

#[derive(Arbitrary, Debug)]
enum Input {
    /// Raw bytes.
    Raw(Vec<u8>),
    /// A packet of the transfer (or of another flow), fields as they come.
    Block { other_flow: bool, seq: u64, block: u8, index: u8, data: u8, parity: u8, wait_us: u32, len: u16, fill: u8 },
    Ack { seq: u64, ce: bool, blocks_done: u64 },
    Nack { block: u64 },
}

#[derive(Arbitrary, Debug)]
struct Case {
    bytes: u16,
    payload: u8,
    max_open_blocks: u8,
    steps: Vec<(Input, bool, u16)>,
}

fuzz_target!(|c: Case| {
    let cfg = Config {
        flow: 42,
        bytes: u64::from(c.bytes),
        payload: usize::from(c.payload).max(1),
        code: BlockCode::default(),
        nack_queue_ns: 1_000_000,
        max_open_blocks: u64::from(c.max_open_blocks).max(1),
        min_rto_ns: 1_000_000,
    };
    let sink = vec![0u8; usize::from(c.bytes)];
    let mut rx = Receiver::new(cfg, sink).expect("a valid config");
    let src = vec![7u8; usize::from(c.bytes)];
    let params = uno::Params::from_net(&NetConfig::LINUX_DEFAULT);
    let mut tx = Sender::new(cfg, src.as_slice(), params, session::unolb(10), 100_000, 0).expect("a valid config");
    let mut now = 0u64;
    let mut out = Vec::new();
    for (input, ce, dt) in c.steps {
        now += u64::from(dt) * 1000;
        let mut d = Vec::new();
        match input {
            Input::Raw(b) => d = b,
            Input::Block { other_flow, seq, block, index, data, parity, wait_us, len, fill } => {
                let payload = vec![fill; usize::from(len) % 3000];
                let p = BlockPacket { flow: if other_flow { 43 } else { 42 }, seq, block: u64::from(block), index, data, parity, wait_us, payload: &payload };
                let _ = Packet::Block(p).write(&mut d);
            }
            Input::Ack { seq, ce, blocks_done } => {
                let _ = Packet::Ack { flow: 42, seq, ce, blocks_done }.write(&mut d);
            }
            Input::Nack { block } => {
                let _ = Packet::Nack { flow: 42, block }.write(&mut d);
            }
        }
        if let Ok(p) = Packet::parse(&d) {
            let mut again = Vec::new();
            p.write(&mut again).expect("an accepted packet writes");
            assert_eq!(again, d, "an accepted packet writes back as it came");
        }
        match rx.on_datagram(now, &d, ce) {
            Ok(_) => {}
            // A block whose packets do not belong together (parity of other
            // data) ends the transfer with its error; a write outside the
            // transfer would fail the sink with another.
            Err(e) => {
                assert!(e.to_string().starts_with("block "), "only a block's rebuild may fail: {e}");
                return;
            }
        }
        assert!(rx.open_blocks() as u64 <= cfg.max_open_blocks, "the receiver's memory bound");
        let _ = rx.poll_nacks(now);
        tx.on_datagram(now, &d);
        tx.on_timeout(now);
        while tx.poll_transmit(now, &mut out).expect("the source holds the transfer").is_some() {}
    }
});
