#!/usr/bin/env python3
"""Byte-exact TCP transfers for the VM tests.

  xfer.py serve PORT                 accept one connection, print "<bytes> <sha256>"
  xfer.py send HOST PORT BYTES [--cc NAME] [--hold SECONDS] [--chunk B --interval S]
                                     send BYTES of deterministic data (optionally with
                                     setsockopt(TCP_CONGESTION)), print "<bytes> <sha256> <cc>",
                                     then keep the socket open for --hold seconds; with
                                     --interval, as one write of --chunk bytes every S
                                     seconds (an application-limited sender)
                                     and a fourth field: how many writes started
                                     200 ms (Linux's minimum RTO) or more after
                                     the one before (a stalled sender)
"""
import argparse
import hashlib
import socket
import sys
import time

TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
CHUNK = 1 << 16


def block(i: int) -> bytes:
    # 64 KiB of data that differs per block, cheap to produce.
    seed = hashlib.sha256(i.to_bytes(8, "little")).digest()
    return seed * (CHUNK // len(seed))


def serve(port: int) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(1)
    c, _ = s.accept()
    h = hashlib.sha256()
    n = 0
    while True:
        d = c.recv(1 << 20)
        if not d:
            break
        h.update(d)
        n += len(d)
    print(n, h.hexdigest(), flush=True)


def send(host: str, port: int, total: int, cc: str, hold: float, chunk: int, interval: float) -> None:
    # Paced writes: the data is made before connecting, so that the first
    # write follows the handshake at once (a slow start-up under TCG would
    # otherwise read as an idle period longer than the RTO).
    data = b"".join(block(j) for j in range(total // CHUNK + 1))[:total] if interval > 0 else b""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if cc:
        s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())
    for _ in range(100):
        try:
            s.connect((host, port))
            break
        except ConnectionRefusedError:
            time.sleep(0.05)
    else:
        sys.exit("connect failed")
    used = s.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).split(b"\0")[0].decode()
    h = hashlib.sha256()
    sent = 0
    i = 0
    late = 0
    if interval > 0:
        next_t = time.monotonic()
        last_write = None
        while sent < total:
            b = data[sent : sent + chunk]
            now = time.monotonic()
            # A write that starts an RTO or more after the one before may
            # follow a real idle period (the guest stalled the sender).
            if last_write is not None and now - last_write >= 0.2:
                late += 1
            last_write = now
            s.sendall(b)
            h.update(b)
            sent += len(b)
            next_t += interval
            time.sleep(max(0.0, next_t - time.monotonic()))
    while sent < total:
        b = block(i)[: total - sent]
        s.sendall(b)
        h.update(b)
        sent += len(b)
        i += 1
    print(sent, h.hexdigest(), used, late, flush=True)
    if hold > 0:
        time.sleep(hold)
    s.close()


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("serve")
    a.add_argument("port", type=int)
    b = sub.add_parser("send")
    b.add_argument("host")
    b.add_argument("port", type=int)
    b.add_argument("bytes", type=int)
    b.add_argument("--cc", default="")
    b.add_argument("--hold", type=float, default=0.0)
    b.add_argument("--chunk", type=int, default=1000)
    b.add_argument("--interval", type=float, default=0.0)
    o = p.parse_args()
    if o.cmd == "serve":
        serve(o.port)
    else:
        send(o.host, o.port, o.bytes, o.cc, o.hold, o.chunk, o.interval)


if __name__ == "__main__":
    main()
