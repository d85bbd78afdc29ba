//! Prints every tunable with its default for a network, as a Markdown table:
//! `cargo run -p xdcc-algo --example tunables -- [link_mbps intra_us inter_us mtu]`
//! (defaults: the kernel modules' 10000 100 10000 1500).

use xdcc_algo::{with_cc, NetConfig, Tunables, CCS};

fn table<P: Tunables>(name: &str, p: &P) {
    println!("\n`/proc/sys/net/xdcc/{name}/`\n");
    println!("| tunable | default |");
    println!("|---|---|");
    for t in P::TUNABLES {
        println!("| `{t}` | {} |", p.get(t).unwrap_or(0));
    }
}

fn main() {
    let a: Vec<u64> = std::env::args().skip(1).filter_map(|s| s.parse().ok()).collect();
    let g = |i: usize, d: u64| a.get(i).copied().unwrap_or(d);
    let n = NetConfig {
        link_rate_bps: g(0, 10_000) * 1_000_000,
        intra_rtt_ns: (g(1, 100) * 1000) as u32,
        inter_rtt_ns: (g(2, 10_000) * 1000) as u32,
        mtu: g(3, 1500) as u32,
    };
    if let Err(e) = n.validate() {
        eprintln!("{e}");
        std::process::exit(2);
    }
    for c in CCS {
        with_cc!(c.name, |C, P| table(c.name, &P::from_net(&n)), _ => eprintln!("{}: no algorithm type (CCS and with_cc! disagree)", c.name));
    }
}
