"""The sized flows' plan: flow-size CDFs, inverse-CDF sampling and Poisson
arrivals. The flows themselves are sent and timed by `xdcc-testbed flowgen`
(userspace/xdcc/src/flowgen.rs), driven by guest.py."""

import bisect
import random


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
