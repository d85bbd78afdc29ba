#!/usr/bin/env python3
"""Byte-exact TCP transfers for xdcc's test suites (graceful close, unlike iperf3 -n).

  xfer.py recv --port P [--bind ADDR] [--cc NAME] [--out FILE] [--ready FILE]
  xfer.py send --to ADDR --port P --bytes N [--cc NAME] [--started FILE]
               [--hold S] [--chunk B --interval S]

Each end prints (recv: or writes to --out) one JSON object: bytes, sha256,
local and remote address, the connection's congestion control and whether
ECN was negotiated (as the socket says at the end: TCP_CONGESTION,
tcpi_options & TCPI_OPT_ECN). The receiver accepts one connection (--ready:
a file made once it listens). The sender retries a refused connect for 5 s,
sends data that differs per 64 KiB block, keeps the connection open for
--hold seconds, then shuts down its write side and waits for the receiver's
close, so every byte is acknowledged before it exits. The sender also reports
`acked_ms`: from the handshake's end to the acknowledgment of its last byte
(its send queue, SIOCOUTQ, empty), the transfer's own time, without the
process's start-up, the hold or the close. With --interval it
writes --chunk bytes every S seconds (an application-limited sender) and
reports `late`: the writes that started 200 ms (Linux's minimum RTO) or more
after the one before (a stalled sender).
"""
import argparse
import fcntl
import hashlib
import json
import socket
import struct
import sys
import termios
import time

TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
BLOCK = 1 << 16


def block(i):
    """64 KiB of data that differs per block, cheap to make."""
    seed = hashlib.sha256(i.to_bytes(8, "little")).digest()
    return seed * (BLOCK // len(seed))


def addr_family(a):
    return socket.AF_INET6 if ":" in a else socket.AF_INET


def set_cc(s, cc):
    if cc:
        s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())


def cc_ecn(s):
    """The socket's CC and whether ECN was negotiated (tcp_info.tcpi_options)."""
    cc = s.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).split(b"\0")[0].decode()
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
    return {"cc": cc, "ecn": bool(info[5] & 8)}


def unacked(s):
    """Bytes written but not yet acknowledged (SIOCOUTQ, = TIOCOUTQ: for TCP
    the send queue from snd_una to write_seq)."""
    return struct.unpack("i", fcntl.ioctl(s.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]


def wait_acked(s, t0, timeout):
    """Milliseconds from t0 until every written byte is acknowledged (polled
    every 10 ms), or None if that takes longer than timeout seconds."""
    deadline = time.monotonic() + timeout
    while unacked(s) > 0:
        if time.monotonic() > deadline:
            return None
        time.sleep(0.01)
    return round((time.monotonic() - t0) * 1000)


def ends(s):
    def fmt(a):
        host = a[0][7:] if a[0].startswith("::ffff:") and "." in a[0] else a[0]  # v4-mapped
        return f"[{host}]:{a[1]}" if ":" in host else f"{host}:{a[1]}"

    return fmt(s.getsockname()), fmt(s.getpeername())


def recv(a):
    srv = socket.socket(addr_family(a.bind), socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    set_cc(srv, a.cc)
    srv.bind((a.bind, a.port))
    srv.listen(1)
    srv.settimeout(a.timeout)
    if a.ready:
        open(a.ready, "w").close()
    conn, _ = srv.accept()
    conn.settimeout(a.timeout)
    tcp = cc_ecn(conn)
    h, n = hashlib.sha256(), 0
    while True:
        b = conn.recv(1 << 20)
        if not b:
            break
        h.update(b)
        n += len(b)
    local, remote = ends(conn)
    conn.close()
    out = json.dumps({"bytes": n, "sha256": h.hexdigest(), "local": local, "remote": remote, **tcp})
    if a.out:
        with open(a.out, "w") as f:
            f.write(out)
    else:
        print(out, flush=True)


def connect(a):
    deadline = time.monotonic() + 5
    while True:
        s = socket.socket(addr_family(a.to), socket.SOCK_STREAM)
        set_cc(s, a.cc)
        s.settimeout(a.timeout)
        try:
            s.connect((a.to, a.port))
            return s
        except ConnectionRefusedError:
            s.close()
            if time.monotonic() > deadline:
                sys.exit(f"xfer.py: connection to {a.to} port {a.port} refused for 5 s")
            time.sleep(0.05)


def send(a):
    # A paced sender's data is made before connecting, so that its first
    # write follows the handshake at once (a slow start-up under the VM's
    # emulation would otherwise read as an idle period longer than the RTO).
    paced = b"".join(block(j) for j in range(a.bytes // BLOCK + 1))[: a.bytes] if a.interval > 0 else b""
    s = connect(a)
    t0 = time.monotonic()
    local, remote = ends(s)
    if a.started:
        with open(a.started, "w") as f:
            json.dump({"local": local, "remote": remote}, f)
    h, sent, late = hashlib.sha256(), 0, 0
    if a.interval > 0:
        next_t = time.monotonic()
        last = None
        while sent < a.bytes:
            b = paced[sent : sent + a.chunk]
            now = time.monotonic()
            if last is not None and now - last >= 0.2:
                late += 1
            last = now
            s.sendall(b)
            h.update(b)
            sent += len(b)
            next_t += a.interval
            time.sleep(max(0.0, next_t - time.monotonic()))
    i = 0
    while sent < a.bytes:
        b = block(i)[: a.bytes - sent]
        s.sendall(b)
        h.update(b)
        sent += len(b)
        i += 1
    acked_ms = wait_acked(s, t0, a.timeout)
    tcp = cc_ecn(s)
    out = {"bytes": sent, "sha256": h.hexdigest(), "local": local, "remote": remote, **tcp, "late": late, "acked_ms": acked_ms}
    if a.hold > 0:
        # (Printed first: a caller may act while the connection is held.)
        print(json.dumps(out), flush=True)
        time.sleep(a.hold)
    s.shutdown(socket.SHUT_WR)
    try:
        while s.recv(1 << 16):
            pass
    except OSError:
        pass
    s.close()
    if a.hold <= 0:
        print(json.dumps(out), flush=True)


p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
sub = p.add_subparsers(dest="cmd", required=True)
r = sub.add_parser("recv")
r.add_argument("--bind", default="::")
r.add_argument("--port", type=int, required=True)
r.add_argument("--cc")
r.add_argument("--out")
r.add_argument("--ready")
r.add_argument("--timeout", type=float, default=120)
s = sub.add_parser("send")
s.add_argument("--to", required=True)
s.add_argument("--port", type=int, required=True)
s.add_argument("--bytes", type=int, required=True)
s.add_argument("--cc")
s.add_argument("--started")
s.add_argument("--hold", type=float, default=0.0)
s.add_argument("--chunk", type=int, default=1000)
s.add_argument("--interval", type=float, default=0.0)
s.add_argument("--timeout", type=float, default=120)
a = p.parse_args()
recv(a) if a.cmd == "recv" else send(a)
