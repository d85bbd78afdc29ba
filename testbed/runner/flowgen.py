"""Flow-completion-time traffic: what iperf3 cannot do (many sized flows,
each on its own connection with its own CC, timed to the last byte).

A flow: the client opens a connection from its host's namespace with
TCP_CONGESTION set, sends an 8-byte length and the payload; the server reads
it all and answers one byte. FCT = from connect() to that answer, so it
includes the handshake (one RTT) and half an RTT for the answer, as a
request/response application would see it."""

import bisect
import random
import socket
import struct
import threading
import time

import netns

CHUNK = memoryview(bytes(256 * 1024))
PORT = 7000


def load_cdf(path):
    """A flow-size CDF: `<bytes> <cdf>` per line, cdf in 0-100 (HPCC/Uno
    format) or 0-1 (TrafficGenerator format); returns [(bytes, 0..1)]."""
    pts = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip().replace(",", " ")
            if not line or line.startswith("#"):
                continue
            try:
                size, p = (float(x) for x in line.split()[:2])
            except ValueError:
                raise ValueError(f"{path}:{n}: expected '<bytes> <cdf>', got {line!r}") from None
            pts.append((size, p))
    if len(pts) < 2:
        raise ValueError(f"{path}: needs at least two points")
    scale = 100.0 if pts[-1][1] > 1.0 + 1e-9 else 1.0
    pts = [(s, p / scale) for s, p in pts]
    if abs(pts[-1][1] - 1.0) > 1e-6 or any(b[1] < a[1] or b[0] < a[0] for a, b in zip(pts, pts[1:])):
        raise ValueError(f"{path}: the CDF must rise to 1 (or 100) with non-decreasing sizes")
    return pts


def cdf_mean(pts):
    return sum((a[0] + b[0]) / 2 * (b[1] - a[1]) for a, b in zip(pts, pts[1:])) + pts[0][0] * pts[0][1]


def sample(pts, rng):
    """Inverse-CDF sample, linear between points (as the HPCC/Uno generators)."""
    u = rng.random()
    ps = [p for _, p in pts]
    i = bisect.bisect_left(ps, u)
    if i == 0:
        return max(1, int(pts[0][0]))
    (s0, p0), (s1, p1) = pts[i - 1], pts[i]
    x = s0 if p1 == p0 else s0 + (s1 - s0) * (u - p0) / (p1 - p0)
    return max(1, int(x))


class Server:
    """Accepts flows on PORT (IPv4 and IPv6) in one host's namespace."""

    def __init__(self, ns):
        self.socks = []
        with netns.inside(ns):
            s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            s.bind(("::", PORT))
            s.listen(512)
        self.sock = s
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _serve(c):
        buf = bytearray(256 * 1024)
        try:
            hdr = b""
            while len(hdr) < 8:
                d = c.recv(8 - len(hdr))
                if not d:
                    return
                hdr += d
            left = struct.unpack("!Q", hdr)[0]
            while left > 0:
                n = c.recv_into(buf, min(len(buf), left))
                if n == 0:
                    return
                left -= n
            c.sendall(b"\1")
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        # shutdown() wakes the thread blocked in accept(); close() alone
        # would leave the port bound while it waits.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def run_flow(src_ns, dst_addr, size, cc, record, meta):
    """One flow, blocking; appends its result to `record` (a list)."""
    fam = socket.AF_INET6 if ":" in dst_addr else socket.AF_INET
    with netns.inside(src_ns):
        s = socket.socket(fam, socket.SOCK_STREAM)
    res = dict(meta, size=size, start=time.time())
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        s.settimeout(120)
        t0 = time.monotonic()
        s.connect((dst_addr, PORT))
        s.sendall(struct.pack("!Q", size))
        left = size
        while left > 0:
            n = min(left, len(CHUNK))
            s.sendall(CHUNK[:n])
            left -= n
        ok = s.recv(1) == b"\1"
        res["fct_s"] = time.monotonic() - t0
        res["ok"] = ok
    except OSError as e:
        res["ok"] = False
        res["error"] = str(e)
    finally:
        s.close()
    record.append(res)


def start_flow(*args):
    t = threading.Thread(target=run_flow, args=args, daemon=True)
    t.start()
    return t


def poisson_schedule(rng, duration_s, load, link_bps, mean_bytes):
    """Arrival times (s) of a Poisson process whose offered load is `load`
    of `link_bps` for flows of mean size `mean_bytes`."""
    lam = load * link_bps / 8.0 / mean_bytes  # flows per second
    t, out = 0.0, []
    while True:
        t += rng.expovariate(lam)
        if t >= duration_s:
            return out
        out.append(t)


def new_rng(seed):
    return random.Random(seed)
