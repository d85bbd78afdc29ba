//! The agent's control protocol: one JSON object per line over a root-only
//! Unix socket, one response line per request.

use std::{
    io::{BufRead, BufReader, Write},
    os::unix::net::UnixStream,
    path::Path,
    time::Duration,
};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Ping,
    /// Flows; `all` includes closed flows the agent still retains.
    Flows { all: bool },
    Stats,
    RerouteGet,
    RerouteSet { name: String, value: u32 },
    /// Move matching flows (IPv6 only) at their next round; `local`/`remote`
    /// are "addr:port" or "addr" filters, none = every flow.
    RerouteForce { local: Option<String>, remote: Option<String> },
    Metrics,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub data: serde_json::Value,
}

impl Response {
    pub fn ok(data: impl Serialize) -> Self {
        Response { ok: true, error: None, data: serde_json::to_value(data).unwrap_or_default() }
    }
    pub fn err(msg: impl Into<String>) -> Self {
        Response { ok: false, error: Some(msg.into()), data: serde_json::Value::Null }
    }
}

/// Sends one request to the agent. `Ok(None)` when no agent listens there.
pub fn call(socket: &Path, req: &Request) -> Result<Option<serde_json::Value>> {
    let mut s = match UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused) => {
            return Ok(None)
        }
        Err(e) => return Err(e).with_context(|| format!("connecting to the agent at {}", socket.display())),
    };
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut line = serde_json::to_string(req)?;
    line.push('\n');
    s.write_all(line.as_bytes())?;
    let mut reply = String::new();
    BufReader::new(&s).read_line(&mut reply).context("reading the agent's reply")?;
    let r: Response = serde_json::from_str(&reply).context("decoding the agent's reply")?;
    if !r.ok {
        bail!("{}", r.error.unwrap_or_else(|| "agent error".into()));
    }
    Ok(Some(r.data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_one_json_line_each() {
        let r = Request::RerouteSet { name: "paths".into(), value: 4 };
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(s, r#"{"op":"reroute_set","name":"paths","value":4}"#);
        assert_eq!(serde_json::from_str::<Request>(&s).unwrap(), r);
        assert!(serde_json::from_str::<Request>(r#"{"op":"format_disk"}"#).is_err());
    }
}
