#!/usr/bin/env python3
"""Byte-exact TCP transfers for the xdcc tests (graceful close, unlike iperf3 -n).

  xfer.py recv --port P [--bind ADDR] [--cc NAME] --out FILE   # one connection
  xfer.py send --to ADDR --port P --bytes N [--cc NAME] [--rate-file F]

Both print/write one JSON object: bytes, sha256, local and remote address,
and the connection's congestion control and whether ECN was negotiated (as
the socket says at the end: TCP_CONGESTION, tcpi_options & TCPI_OPT_ECN).
The sender sends random data, shuts down its write side and waits for the
receiver's close, so every byte is acknowledged before it exits.
"""
import argparse, hashlib, json, os, socket, sys

TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)


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


def ends(s):
    l, r = s.getsockname(), s.getpeername()

    def fmt(a):
        host = a[0][7:] if a[0].startswith("::ffff:") and "." in a[0] else a[0]  # v4-mapped
        return f"[{host}]:{a[1]}" if ":" in host else f"{host}:{a[1]}"

    return fmt(l), fmt(r)


def recv(a):
    fam = addr_family(a.bind)
    srv = socket.socket(fam, socket.SOCK_STREAM)
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
        b = conn.recv(1 << 16)
        if not b:
            break
        h.update(b)
        n += len(b)
    local, remote = ends(conn)
    conn.close()
    out = {"bytes": n, "sha256": h.hexdigest(), "local": local, "remote": remote, **tcp}
    with open(a.out, "w") as f:
        json.dump(out, f)


def send(a):
    s = socket.socket(addr_family(a.to), socket.SOCK_STREAM)
    set_cc(s, a.cc)
    s.settimeout(a.timeout)
    s.connect((a.to, a.port))
    local, remote = ends(s)
    if a.started:
        with open(a.started, "w") as f:
            json.dump({"local": local, "remote": remote}, f)
    h, left = hashlib.sha256(), a.bytes
    block = os.urandom(1 << 16)
    while left > 0:
        chunk = block[: min(left, len(block))]
        s.sendall(chunk)
        h.update(chunk)
        left -= len(chunk)
    tcp = cc_ecn(s)
    s.shutdown(socket.SHUT_WR)
    while s.recv(1 << 16):
        pass
    s.close()
    print(json.dumps({"bytes": a.bytes, "sha256": h.hexdigest(), "local": local, "remote": remote, **tcp}))


p = argparse.ArgumentParser()
sub = p.add_subparsers(dest="cmd", required=True)
r = sub.add_parser("recv")
r.add_argument("--bind", default="::")
r.add_argument("--port", type=int, required=True)
r.add_argument("--cc")
r.add_argument("--out", required=True)
r.add_argument("--ready")
r.add_argument("--timeout", type=float, default=120)
s = sub.add_parser("send")
s.add_argument("--to", required=True)
s.add_argument("--port", type=int, required=True)
s.add_argument("--bytes", type=int, required=True)
s.add_argument("--cc")
s.add_argument("--started")
s.add_argument("--timeout", type=float, default=120)
a = p.parse_args()
recv(a) if a.cmd == "recv" else send(a)
