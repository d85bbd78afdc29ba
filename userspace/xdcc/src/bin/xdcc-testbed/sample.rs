//! `xdcc-testbed sample`: the testbed's sampler (sockets and port queues).

use anyhow::{bail, Result};
use clap::Args;
use xdcc::{failure, sampler};

#[derive(Args)]
pub struct SampleArgs {
    /// NAMESPACE:PORT[,PORT...]: report, per destination port, the
    /// socket of that namespace with the most bytes acknowledged.
    #[arg(long = "sockets", value_name = "NS:PORTS", value_parser = sampler::parse_sockets)]
    sockets: Vec<(String, Vec<u16>)>,
    /// NAMESPACE:INTERFACE: the root qdisc's counters (repeatable).
    #[arg(long = "port", value_name = "NS:DEV", value_parser = sampler::parse_port)]
    ports: Vec<(String, String, String)>,
    /// Sampling period in milliseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    interval_ms: u64,
    /// Stop after this many seconds (without it: when stdin closes).
    #[arg(long)]
    duration: Option<f64>,
    /// Sample IPv6 sockets instead of IPv4.
    #[arg(long)]
    ipv6: bool,
}

pub fn run(a: SampleArgs) -> Result<()> {
    let SampleArgs { sockets, ports, interval_ms, duration, ipv6 } = a;
    if let Some(d) = duration {
        if !(d.is_finite() && d > 0.0) {
            bail!(failure::bad_value(format!("--duration {d}: must be a positive number of seconds")));
        }
    }
    let plan = sampler::Plan {
        sockets,
        ports,
        period: std::time::Duration::from_millis(interval_ms),
        duration: duration.map(std::time::Duration::from_secs_f64),
        ipv6,
    };
    sampler::run(&plan, &mut std::io::BufWriter::new(std::io::stdout().lock()))
}
