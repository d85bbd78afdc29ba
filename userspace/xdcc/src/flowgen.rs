//! `xdcc flowgen`: the testbed's sized-flow traffic (incasts, Poisson
//! workloads), timed to the last byte, from one process.
//!
//! A flow: the client opens a connection from its host's network namespace
//! with `TCP_CONGESTION` set, sends an 8-byte big-endian length and the
//! payload; the server reads it all and answers one byte. The flow completion
//! time runs from `connect()` to that answer, so it includes the handshake
//! (one RTT) and half an RTT for the answer, as a request/response
//! application sees it.
//!
//! One single-threaded event loop serves every namespace's listener and runs
//! every flow: sockets are opened inside their namespace (`setns` on this
//! thread, then back) and stay there. It replaced a Python generator with a
//! thread per flow, which under the testbed's emulated CPUs cost more guest
//! CPU than the traffic it made.
//!
//! Protocol with the caller (testbed/runner/guest.py): the plan is a JSON file
//! (`Plan`); once every listener is bound the generator prints
//! `{"ready":true}` on stdout and reads one line from stdin: the time zero of
//! the plan, in seconds of `CLOCK_MONOTONIC` (Python's `time.monotonic()`).
//! Each flow starts at zero + `at_s`. One JSON line per finished flow goes to
//! the output file as it completes; at the end (every flow done, or the
//! deadline) a summary line `{"summary":{"done":N,"failed":F,"unfinished":M}}`:
//! N flows ended, F of them with an error (counted in N), M still running.
//!
//! On separate machines (the testbed's `servers` backend, over SSH) there is
//! no shared clock to name: the time zero may be `+S`, S seconds after the
//! line is read, and a namespace may be `.`, this process's own. A plan with
//! servers and no flows (the receiver's, its clients running elsewhere)
//! serves until its deadline or until stdin closes.

use std::{
    io::Write,
    net::{IpAddr, Ipv6Addr, SocketAddr},
    path::Path,
    time::Duration,
};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpSocket, TcpStream},
    sync::mpsc,
    time::Instant,
};

use crate::failure::bad_value;

/// Size of the payload writes and of the server's reads.
const CHUNK: usize = 256 * 1024;
static ZEROS: [u8; CHUNK] = [0; CHUNK];
/// Longest congestion-control name Linux accepts (`TCP_CA_NAME_MAX` − 1).
const CC_NAME_MAX: usize = 15;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// TCP port every server listens on (IPv4 and IPv6).
    pub port: u16,
    /// Namespaces that run a server (`.`: this process's own).
    pub servers: Vec<String>,
    pub flows: Vec<PlannedFlow>,
    /// Seconds after time zero at which unfinished flows are given up.
    pub deadline_s: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedFlow {
    /// Start, in seconds after time zero.
    pub at_s: f64,
    /// Namespace of the sender (`.`: this process's own).
    pub src: String,
    /// Address of the receiver (a server of the plan).
    pub dst: IpAddr,
    pub size: u64,
    /// Congestion control of the sender's socket.
    pub cc: String,
}

/// One finished flow (`id` = its index in the plan).
#[derive(Debug, Serialize)]
struct Outcome {
    id: usize,
    /// When it actually started, seconds after time zero.
    start_s: f64,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    fct_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Plan {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let plan: Plan = serde_json::from_str(&text).map_err(|e| bad_value(format!("{}: {e}", path.display())))?;
        plan.check().map_err(|e| bad_value(format!("{}: {e}", path.display())))?;
        Ok(plan)
    }

    fn check(&self) -> Result<()> {
        if self.port == 0 {
            bail!("port must be 1-65535");
        }
        if !(self.deadline_s.is_finite() && self.deadline_s > 0.0) {
            bail!("deadline_s must be a positive number of seconds, got {}", self.deadline_s);
        }
        for (i, f) in self.flows.iter().enumerate() {
            if !(f.at_s.is_finite() && f.at_s >= 0.0) {
                bail!("flows[{i}].at_s must be a non-negative number of seconds, got {}", f.at_s);
            }
            if f.size == 0 {
                bail!("flows[{i}].size must be at least one byte");
            }
            if f.cc.is_empty() || f.cc.len() > CC_NAME_MAX || !f.cc.bytes().all(|b| b.is_ascii_graphic()) {
                bail!("flows[{i}].cc {:?}: not a congestion control name", f.cc);
            }
            if f.src.is_empty() {
                bail!("flows[{i}].src: empty namespace");
            }
        }
        Ok(())
    }
}

/// `CLOCK_MONOTONIC` now, in seconds (the clock of the plan's time zero).
fn monotonic_s() -> Result<f64> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).context("reading CLOCK_MONOTONIC")?;
    Ok(t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
}

/// The plan's time zero from its stdin line: `CLOCK_MONOTONIC` seconds, or
/// `+S` for S seconds after `now`.
fn time_zero(line: &str, now: f64) -> Result<f64> {
    let (rel, v) = match line.strip_prefix('+') {
        Some(v) => (true, v),
        None => (false, line),
    };
    match v.parse::<f64>() {
        Ok(s) if rel && s.is_finite() && s >= 0.0 => Ok(now + s),
        Ok(z) if !rel && z.is_finite() && z > 0.0 => Ok(z),
        _ => Err(bad_value(format!("time zero on stdin: expected CLOCK_MONOTONIC seconds or +SECONDS, got {line:?}"))),
    }
}

/// Runs `f` in namespace `ns`, or where this thread is for `.`.
fn in_ns<T>(ns: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    if ns == "." {
        f()
    } else {
        crate::kernel::inside_netns(ns, f)
    }
}

/// Runs the plan; see the module documentation for the protocol.
pub fn run(plan: &Plan, out: &Path) -> Result<()> {
    let mut file = std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting tokio")?;
    rt.block_on(async {
        for ns in &plan.servers {
            let listener = in_ns(ns, || listen(plan.port))
                .with_context(|| format!("server in namespace {ns}, port {}", plan.port))?;
            tokio::spawn(serve(listener));
        }
        println!("{{\"ready\":true}}");
        std::io::stdout().flush().context("writing to stdout")?;

        let mut line = String::new();
        let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
        stdin.read_line(&mut line).await.context("reading time zero from stdin")?;
        let zero = time_zero(line.trim(), monotonic_s()?)?;
        // Instants of time zero and of the deadline on tokio's clock.
        let now_mono = monotonic_s()?;
        let now = Instant::now();
        let at = |s: f64| {
            let d = zero + s - now_mono;
            if d > 0.0 {
                now + Duration::from_secs_f64(d)
            } else {
                now
            }
        };

        let (tx, mut rx) = mpsc::unbounded_channel();
        for (id, f) in plan.flows.iter().enumerate() {
            let tx = tx.clone();
            let start = at(f.at_s);
            let (src, dst, size, cc) = (f.src.clone(), SocketAddr::new(f.dst, plan.port), f.size, f.cc.clone());
            tokio::spawn(async move {
                tokio::time::sleep_until(start).await;
                let start_s = monotonic_s().map(|t| t - zero).unwrap_or(f64::NAN);
                let t0 = Instant::now();
                let o = match one_flow(&src, dst, size, &cc).await {
                    Ok(()) => Outcome { id, start_s, ok: true, fct_s: Some(t0.elapsed().as_secs_f64()), error: None },
                    Err(e) => Outcome { id, start_s, ok: false, fct_s: None, error: Some(format!("{e:#}")) },
                };
                let _ = tx.send(o);
            });
        }
        drop(tx);

        let deadline = at(plan.deadline_s);
        let (mut done, mut failed) = (0usize, 0usize);
        while done < plan.flows.len() {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(o)) => {
                    done += 1;
                    failed += usize::from(!o.ok);
                    writeln!(file, "{}", serde_json::to_string(&o)?).context("writing a flow's outcome")?;
                }
                Ok(None) | Err(_) => break,
            }
        }
        if plan.flows.is_empty() && !plan.servers.is_empty() {
            // A server only (its clients run elsewhere): serve until the
            // deadline or until the caller closes stdin.
            let mut rest = Vec::new();
            let _ = tokio::time::timeout_at(deadline, stdin.read_to_end(&mut rest)).await;
        }
        let summary =
            serde_json::json!({"summary": {"done": done, "failed": failed, "unfinished": plan.flows.len() - done}});
        writeln!(file, "{summary}").context("writing the summary")?;
        file.flush().context("writing the outcomes")?;
        Ok(())
    })
}

/// A listener on `[::]:port` that takes IPv4 too, in the calling thread's
/// namespace.
fn listen(port: u16) -> Result<TcpListener> {
    let s = TcpSocket::new_v6().context("socket")?;
    s.set_reuseaddr(true).context("SO_REUSEADDR")?;
    nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::Ipv6V6Only, &false).context("IPV6_V6ONLY")?;
    s.bind(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port)).context("bind")?;
    s.listen(1024).context("listen")
}

async fn serve(listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((c, _)) => {
                tokio::spawn(async move {
                    // (A client that breaks off is its own flow's error.)
                    let _ = receive(c).await;
                });
            }
            // Out of descriptors or memory: wait rather than spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// The server's half of a flow: the length, the payload, one byte back.
async fn receive(mut c: TcpStream) -> std::io::Result<()> {
    let mut len = [0u8; 8];
    c.read_exact(&mut len).await?;
    let mut left = u64::from_be_bytes(len);
    let mut buf = vec![0u8; CHUNK];
    while left > 0 {
        let want = left.min(CHUNK as u64) as usize;
        let n = c.read(&mut buf[..want]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        left -= n as u64;
    }
    c.write_all(&[1]).await?;
    c.shutdown().await
}

/// The client's half: connect from namespace `src` with `cc`, send, wait
/// for the answer.
async fn one_flow(src: &str, dst: SocketAddr, size: u64, cc: &str) -> Result<()> {
    let sock = in_ns(src, || {
        let s = if dst.is_ipv6() { TcpSocket::new_v6() } else { TcpSocket::new_v4() }.context("socket")?;
        nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::TcpCongestion, &std::ffi::OsString::from(cc))
            .with_context(|| format!("TCP_CONGESTION {cc}"))?;
        Ok(s)
    })?;
    let mut c = sock.connect(dst).await.with_context(|| format!("connecting to {dst}"))?;
    c.write_all(&size.to_be_bytes()).await.context("sending")?;
    let mut left = size;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        c.write_all(&ZEROS[..n]).await.context("sending")?;
        left -= n as u64;
    }
    let mut answer = [0u8; 1];
    c.read_exact(&mut answer).await.context("waiting for the receiver's answer")?;
    if answer[0] != 1 {
        bail!("the receiver answered {} instead of 1", answer[0]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(json: &str) -> Result<Plan> {
        let p: Plan = serde_json::from_str(json)?;
        p.check()?;
        Ok(p)
    }

    #[test]
    fn a_good_plan_loads() {
        let p = plan(r#"{"port":7000,"servers":["dc1h1"],"deadline_s":30,
            "flows":[{"at_s":0.5,"src":"dc1h2","dst":"10.1.0.1","size":150000,"cc":"uno"},
                     {"at_s":1,"src":"dc2h1","dst":"fd00::1","size":1,"cc":"cubic"}]}"#)
        .unwrap();
        assert_eq!(p.flows.len(), 2);
        assert!(p.flows[1].dst.is_ipv6());
    }

    #[test]
    fn bad_plans_are_refused_with_the_field_named() {
        let f = |flow: &str| format!(r#"{{"port":7000,"servers":[],"deadline_s":30,"flows":[{flow}]}}"#);
        for (json, want) in [
            (f(r#"{"at_s":-1,"src":"a","dst":"10.0.0.1","size":1,"cc":"uno"}"#), "at_s"),
            (f(r#"{"at_s":1,"src":"a","dst":"10.0.0.1","size":0,"cc":"uno"}"#), "size"),
            (f(r#"{"at_s":1,"src":"a","dst":"10.0.0.1","size":1,"cc":"a-name-longer-than-15"}"#), "cc"),
            (f(r#"{"at_s":1,"src":"","dst":"10.0.0.1","size":1,"cc":"uno"}"#), "src"),
            (f(r#"{"at_s":1,"src":"a","dst":"nowhere","size":1,"cc":"uno"}"#), "address"),
            (r#"{"port":0,"servers":[],"deadline_s":30,"flows":[]}"#.to_string(), "port"),
            (r#"{"port":7000,"servers":[],"deadline_s":0,"flows":[]}"#.to_string(), "deadline_s"),
            (r#"{"port":7000,"servers":[],"deadline_s":1,"flows":[],"extra":1}"#.to_string(), "extra"),
        ] {
            let e = format!("{:#}", plan(&json).unwrap_err());
            assert!(e.contains(want), "{json}: {e}");
        }
    }

    #[test]
    fn time_zero_is_absolute_or_relative_to_reading_it() {
        assert_eq!(time_zero("1234.5", 99.0).unwrap(), 1234.5);
        assert_eq!(time_zero("+0.25", 99.0).unwrap(), 99.25);
        assert_eq!(time_zero("+0", 99.0).unwrap(), 99.0);
        for bad in ["", "+", "-1", "+-1", "0", "nan", "+inf", "soon"] {
            let e = format!("{:#}", time_zero(bad, 99.0).unwrap_err());
            assert!(e.contains("time zero"), "{bad}: {e}");
        }
    }
}
