//! What the simulator models of TCP itself, beside the algorithms: windows
//! grow only while they limit the sender (Linux's `tcp_is_cwnd_limited()`,
//! which the kernel adapter applies), and the receive window gates the
//! start of a flow whose algorithm starts with a large window.

use xdcc_sim::{run, CcKind, Scenario};

/// `count` flows of `cc` on a 1 Gbit/s port, RTT `rtt_us`, buffer `buffer_kb`,
/// sender NIC `host_gbps`; `extra` is appended to the file (e.g. a
/// `receive_window`).
fn flows(cc: &str, count: u32, rtt_us: u32, buffer_kb: u32, host_gbps: f64, extra: &str) -> Scenario {
    Scenario::from_toml(&format!(
        r#"
name = "tcp-model"
duration_ms = 1000
cc = ["{cc}"]
sample_interval_us = 1000
window_pacing_gain = 1.0
{extra}

[net]
link_rate_gbps = 1.0
intra_rtt_us = {rtt_us}
inter_rtt_us = {rtt_us}
mtu = 1500

[[queues]]
name = "port"
rate_gbps = 1.0
buffer_kb = {buffer_kb}

[[flows]]
name = "flow"
count = {count}
rtt_us = {rtt_us}
path = ["port"]
host_rate_gbps = {host_gbps}
"#
    ))
    .unwrap()
}

#[test]
fn a_window_that_does_not_limit_the_sender_does_not_grow() {
    // The sender's NIC is as fast as the port: nothing queues, no mark, no
    // loss, so every window-based algorithm keeps increasing, but the NIC,
    // not the window, limits the flow. Linux (and the adapter) then keep
    // the window; without that rule the model's window grew without bound
    // (17 MB on a 255 kB path in d-incast) and the next competitor met a
    // sender that took seconds to come back down.
    let bdp = 1e9 / 8.0 * 1e-3; // 1 ms at 1 Gbit/s: 125 kB
    for cc in ["uno", "gemini", "smartt"] {
        let r = run(&flows(cc, 1, 1000, 1000, 1.0, ""), CcKind::parse(cc).unwrap()).unwrap();
        let max_cwnd = r.samples.cwnd.iter().map(|s| s[0]).max().unwrap() as f64;
        eprintln!("{cc}: max cwnd {:.0} kB (BDP {:.0} kB), util {:.3}", max_cwnd / 1e3, bdp / 1e3, r.queues[0].utilization);
        assert!(r.queues[0].utilization > 0.95, "{cc}: the flow still fills the link");
        // (Slow start may take it to twice what was in flight, as Linux does.)
        assert!(max_cwnd <= 2.5 * bdp, "{cc}: window {max_cwnd} B grew far beyond what the sender could use ({bdp} B)");
    }
}

#[test]
fn the_receive_window_gates_a_one_bdp_start() {
    // Two UnoCC flows start together at one BDP each (1.25 MB at 1 Gbit/s x
    // 10 ms), each paced at a BDP per RTT, into a 300 kB buffer: without a
    // receive window two BDPs go out in the first round trip and overflow
    // the buffer (the model's drops at start-up in a-rtt-fairness); behind
    // Linux's (64 KB, growing by what is delivered) the first round trips
    // cannot.
    let linux = "receive_window = { init_kb = 64, max_kb = 3072 }";
    let uno = CcKind::parse("uno").unwrap();
    let open = run(&flows("uno", 2, 10_000, 300, 10.0, ""), uno).unwrap();
    let gated = run(&flows("uno", 2, 10_000, 300, 10.0, linux), uno).unwrap();
    eprintln!("drops without receive window {}, with {}", open.queues[0].drops, gated.queues[0].drops);
    assert!(open.queues[0].drops > 0, "a one-BDP burst overflows a quarter-BDP buffer");
    // By 25 ms (two round trips and a half) at most 64 + 128 kB (+ one RTT
    // of slack for the first ACKs) can have been delivered behind the window,
    // and nothing was dropped: the gate, not the algorithm, held the start.
    let k = gated.samples.t_ns.iter().position(|&t| t >= 25_000_000).unwrap();
    assert_eq!(gated.samples.drops[k][0], 0, "the receive window keeps the first round trips within the buffer");
    for i in 0..2 {
        let delivered = gated.samples.delivered[k][i];
        assert!(delivered <= 64_000 + 128_000 + 256_000, "flow {i}: delivered {delivered} B in 25 ms behind a 64 kB window");
    }
    // (Once the receive windows have grown past the path, two one-BDP
    // windows do not fit into one BDP and a quarter-BDP buffer: what is
    // dropped then is UnoCC's start, as in the kernel, and QuickAdapt cuts
    // it. It no longer cuts the rounds the receive window limited: see
    // `a_receive_window_limited_start_keeps_its_window`.)
    assert!(gated.queues[0].drops < open.queues[0].drops, "the gate spreads the start");
}

#[test]
fn a_receive_window_limited_start_keeps_its_window() {
    // One UnoCC flow starts at one BDP (1.25 MB) behind Linux's 64 KB
    // receive window, which doubles per round trip up to 3 MB; the buffer
    // holds a BDP, so nothing is lost. Rounds the receive window limits ack
    // far less than half the congestion window; read as congestion,
    // QuickAdapt cut the window to them (to ~128 kB) and the flow then grew
    // by 0.001 BDP per round trip: a tenth of the link for seconds. A round
    // the window did not limit is not a congestion signal (the adapter:
    // `tcp_is_cwnd_limited()` false), so the flow fills the link once the
    // receive window has opened.
    let linux = "receive_window = { init_kb = 64, max_kb = 3072 }";
    let uno = CcKind::parse("uno").unwrap();
    let r = run(&flows("uno", 1, 10_000, 1250, 10.0, linux), uno).unwrap();
    let bdp = 1e9 / 8.0 * 10e-3;
    let min_cwnd = r.samples.cwnd.iter().skip(1).map(|s| s[0]).min().unwrap() as f64;
    eprintln!("min cwnd {:.0} kB (BDP {:.0} kB), util {:.3}, drops {}", min_cwnd / 1e3, bdp / 1e3, r.queues[0].utilization, r.queues[0].drops);
    assert_eq!(r.queues[0].drops, 0);
    assert!(min_cwnd >= 0.9 * bdp, "the window was cut to {min_cwnd} B while the receive window limited the flow");
    assert!(r.queues[0].utilization > 0.9, "utilization {:.3}", r.queues[0].utilization);
}

#[test]
fn a_bad_receive_window_is_one_clear_error() {
    for (w, what) in [("{ init_kb = 0, max_kb = 64 }", "init_kb"), ("{ init_kb = 64, max_kb = 32 }", "init_kb <= max_kb")] {
        let text = format!(
            "name = \"x\"\nduration_ms = 10\ncc = [\"uno\"]\nreceive_window = {w}\n[net]\nlink_rate_gbps = 1.0\nintra_rtt_us = 10\ninter_rtt_us = 10\nmtu = 1500\n[[queues]]\nname = \"q\"\nrate_gbps = 1.0\nbuffer_kb = 100\n[[flows]]\nname = \"f\"\nrtt_us = 10\npath = [\"q\"]\n"
        );
        let e = Scenario::from_toml(&text).unwrap_err().to_string();
        assert!(e.contains("receive_window") && e.contains(what), "{e}");
    }
}
