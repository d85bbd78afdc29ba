//! Why the transport codes with reed-solomon-erasure: both well-kept Rust
//! Reed–Solomon crates on an (8,2) block of 1400-byte packets, encoding a
//! block and rebuilding two lost data packets, in GB/s of data, plus this
//! crate's own path (framing, assembly, rebuild) on the chosen one.
//!   cargo run --release -p xdcc-transport --example rs_choice [BLOCKS]
use std::time::Instant;

use xdcc_multipath::ec::BlockCode;
use xdcc_transport::{BlockAssembly, BlockPacket, Coder};

const SHARD: usize = 1400;

fn gbps(blocks: usize, secs: f64) -> f64 {
    (blocks * 8 * SHARD) as f64 / 1e9 / secs
}

fn main() {
    let blocks: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let data: Vec<Vec<u8>> = (0..8).map(|i| (0..SHARD).map(|j| (i * 31 + j * 7) as u8).collect()).collect();

    let t = Instant::now();
    let mut enc = reed_solomon_simd::ReedSolomonEncoder::new(8, 2, SHARD).expect("encoder");
    let mut parity = Vec::new();
    for _ in 0..blocks {
        for d in &data {
            enc.add_original_shard(d).expect("shard");
        }
        parity = enc.encode().expect("encode").recovery_iter().map(|r| r.to_vec()).collect();
    }
    let e = gbps(blocks, t.elapsed().as_secs_f64());
    let mut dec = reed_solomon_simd::ReedSolomonDecoder::new(8, 2, SHARD).expect("decoder");
    let t = Instant::now();
    for _ in 0..blocks {
        for (i, d) in data.iter().enumerate().skip(2) {
            dec.add_original_shard(i, d).expect("shard");
        }
        for (i, p) in parity.iter().enumerate() {
            dec.add_recovery_shard(i, p).expect("shard");
        }
        let r = dec.decode().expect("decode");
        assert_eq!(r.restored_original(0), Some(&data[0][..]));
    }
    println!("reed-solomon-simd 3.1:      encode {e:.2} GB/s, rebuild 2 of 8 {:.3} GB/s", gbps(blocks, t.elapsed().as_secs_f64()));

    let rs = reed_solomon_erasure::galois_8::ReedSolomon::new(8, 2).expect("codec");
    let mut shards = data.clone();
    shards.extend([vec![0; SHARD], vec![0; SHARD]]);
    let t = Instant::now();
    for _ in 0..blocks {
        rs.encode(&mut shards).expect("encode");
    }
    let e = gbps(blocks, t.elapsed().as_secs_f64());
    let t = Instant::now();
    for _ in 0..blocks {
        let mut lost: Vec<Option<Vec<u8>>> = shards.iter().cloned().map(Some).collect();
        lost[0] = None;
        lost[1] = None;
        rs.reconstruct_data(&mut lost).expect("rebuild");
        assert_eq!(lost[0].as_ref(), Some(&data[0]));
    }
    println!("reed-solomon-erasure 6.0:   encode {e:.2} GB/s, rebuild 2 of 8 {:.3} GB/s (a copy of the block included)", gbps(blocks, t.elapsed().as_secs_f64()));

    let coder = Coder::new(BlockCode::default()).expect("coder");
    let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
    let t = Instant::now();
    for _ in 0..blocks {
        parity = coder.encode(&refs).expect("encode");
    }
    let e = gbps(blocks, t.elapsed().as_secs_f64());
    let t = Instant::now();
    for _ in 0..blocks {
        let mut b = BlockAssembly::new(8, 2).expect("block");
        for (i, p) in refs.iter().copied().chain(parity.iter().map(|p| p.as_slice())).enumerate().skip(2) {
            let p = BlockPacket { flow: 1, seq: i as u64, block: 0, index: i as u8, data: 8, parity: 2, wait_us: 640, payload: p };
            b.add(&p, 0, 640_000).expect("packet");
        }
        assert_eq!(b.rebuild(&coder).expect("rebuild")[0], data[0]);
    }
    println!("xdcc-transport (erasure):   encode {e:.2} GB/s, assemble and rebuild 2 of 8 {:.3} GB/s", gbps(blocks, t.elapsed().as_secs_f64()));
}
