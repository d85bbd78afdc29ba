"""What a run's raw samples mean: per-flow rates over time, Jain's index,
convergence, utilization, queue, RTT, drops and FCT by size class. Pure
functions over the raw JSON that guest.py writes (unit-tested in
testbed/runner/test_metrics.py)."""

import math

BIN_S = 0.5          # rate averaging window for the time series
CONVERGED_JAIN = 0.9  # "converged": Jain over BIN_S windows stays >= this
SIZE_CLASSES = [(0, 100_000, "<100KB"), (100_000, 1_000_000, "100KB-1MB"),
                (1_000_000, 10_000_000, "1-10MB"), (10_000_000, float("inf"), ">10MB")]


def jain(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    s, q = sum(xs), sum(x * x for x in xs)
    return (s * s) / (len(xs) * q) if q > 0 else 1.0


def percentile(xs, p):
    """Nearest-rank percentile (p in 0..100); None for no data."""
    xs = sorted(xs)
    if not xs:
        return None
    k = max(0, min(len(xs) - 1, math.ceil(p / 100.0 * len(xs)) - 1))
    return xs[k]


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def interp(samples, t):
    """Cumulative counter (column 1) at time t, linear between samples; 0
    before the first, the last value after the last."""
    if not samples or t <= samples[0][0]:
        return samples[0][1] if samples and t >= samples[0][0] else 0
    lo, hi = 0, len(samples) - 1
    if t >= samples[hi][0]:
        return samples[hi][1]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if samples[mid][0] <= t:
            lo = mid
        else:
            hi = mid
    (t0, v0), (t1, v1) = samples[lo][:2], samples[hi][:2]
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0) if t1 > t0 else v1


def rate_series(samples, t_end, bin_s=BIN_S):
    """[(bin start, bit/s)] from cumulative bytes_acked samples."""
    out, t = [], 0.0
    while t + bin_s <= t_end + 1e-9:
        out.append((t, (interp(samples, t + bin_s) - interp(samples, t)) * 8 / bin_s))
        t += bin_s
    return out


def steady_window(flows, duration):
    """All long flows active: [latest start, earliest stop]; the metrics use
    its second half (the first half is convergence)."""
    longs = [f for f in flows if f["kind"] == "long"]
    if not longs:
        return duration / 2, duration
    a = max(f["start_s"] for f in longs)
    b = min(f["stop_s"] for f in longs)
    b = min(b, duration)
    return a + (b - a) / 2, b


def flow_samples(raw, fid):
    """A flow's samples up to where its cumulative byte counter falls: after
    the connection closes, a late sampler can match another socket on the
    same ports (iperf3's control connection, a new one), whose counter
    starts from 0 and would read as a negative rate."""
    s = raw["samples"].get(str(fid), [])
    for k in range(1, len(s)):
        if s[k][1] < s[k - 1][1]:
            return s[:k]
    return s


def phases(raw):
    """Per-port utilization and queue in each phase of the run: the periods
    between consecutive long-flow starts and stops (phases shorter than 1 s
    are skipped), each measured over its second half like the steady window.
    For experiments whose claim is per phase (amrt-icpp20 Fig. 1/2: flows
    joining or finishing)."""
    dur = raw["duration_s"]
    longs = [f for f in raw["flows"] if f["kind"] == "long"]
    cuts = sorted({0.0, float(dur)} | {float(min(max(x, 0), dur)) for f in longs for x in (f["start_s"], f["stop_s"])})
    out = []
    for a, b in zip(cuts, cuts[1:]):
        if b - a < 1:
            continue
        t_a = a + (b - a) / 2
        active = [f["id"] for f in longs if f["start_s"] <= a and f["stop_s"] >= b]
        ports = {}
        for port, q in raw["queues"].items():
            rate = raw["port_rates_mbit"].get(port) or 0
            qs = [x for x in q if t_a <= x[0] <= b]
            if len(qs) >= 2 and rate and qs[-1][0] > qs[0][0]:
                ports[port] = {"util": (qs[-1][3] - qs[0][3]) * 8 / ((qs[-1][0] - qs[0][0]) * rate * 1e6),
                               "queue_mean_kb": mean(x[1] / 1000 for x in qs),
                               "queue_p99_kb": percentile([x[1] / 1000 for x in qs], 99)}
        out.append({"from_s": a, "to_s": b, "flows": active, "ports": ports})
    return out


def convergence_s(jain_series, t_from, bin_s=BIN_S, thresh=CONVERGED_JAIN):
    """Seconds after t_from until Jain stays >= thresh to the end; None if never."""
    pts = [(t, j) for t, j in jain_series if t >= t_from and j is not None]
    if not pts:
        return None
    last_bad = None
    for t, j in pts:
        if j < thresh:
            last_bad = t
    if last_bad is None:
        return 0.0
    if last_bad >= pts[-1][0]:
        return None
    return last_bad + bin_s - t_from


def size_class(size):
    for lo, hi, name in SIZE_CLASSES:
        if lo <= size < hi:
            return name
    return SIZE_CLASSES[-1][2]


def fct_table(fct):
    """Per size class and traffic kind: count, mean and p99 FCT (ms)."""
    rows = []
    ok = [f for f in fct if f.get("ok")]
    groups = {}
    for f in ok:
        groups.setdefault((f["kind"], f["class"], size_class(f["size"])), []).append(f["fct_s"] * 1000)
    order = {name: i for i, (_, _, name) in enumerate(SIZE_CLASSES)}
    for (kind, cls, sc), v in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], order[kv[0][2]])):
        rows.append({"kind": kind, "class": cls, "size": sc, "n": len(v),
                     "mean_ms": mean(v), "p99_ms": percentile(v, 99)})
    return rows


def analyze(raw):
    """Every metric of one run, plus the time series the plots draw."""
    dur = raw["duration_s"]
    flows = raw["flows"]
    t_a, t_b = steady_window(flows, dur)
    series, mean_rate, rtts = {}, {}, {}
    for f in flows:
        s = flow_samples(raw, f["id"])
        series[f["id"]] = rate_series(s, dur)
        # (To the last sample if the flow's samples end early.)
        t_end = min(t_b, s[-1][0]) if s else t_b
        if t_end > t_a and s:
            mean_rate[f["id"]] = (interp(s, t_end) - interp(s, t_a)) * 8 / (t_end - t_a)
        rr = [x[3] / 1000.0 for x in s if t_a <= x[0] <= t_b and x[3] > 0]
        rtts[f["id"]] = percentile(rr, 50)
    # Jain over time: flows active for the whole bin.
    jain_series = []
    if series:
        n_bins = max(len(v) for v in series.values())
        for k in range(n_bins):
            t = k * BIN_S
            act = [series[f["id"]][k][1] for f in flows
                   if k < len(series[f["id"]]) and f["start_s"] <= t and t + BIN_S <= f["stop_s"]]
            jain_series.append((t, jain(act) if len(act) >= 2 else None))
    longs = [f for f in flows if f["kind"] == "long"]
    t_all = max((f["start_s"] for f in longs), default=0)
    q = raw["queues"].get(raw["bottleneck"], [])
    qs = [x for x in q if t_a <= x[0] <= t_b]
    rate = raw["port_rates_mbit"].get(raw["bottleneck"]) or 0
    util = None
    if len(qs) >= 2 and rate:
        util = (qs[-1][3] - qs[0][3]) * 8 / ((qs[-1][0] - qs[0][0]) * rate * 1e6)
    by_class = {}
    for cls in ("intra", "inter"):
        ids = [f["id"] for f in longs if f["class"] == cls]
        vals = [mean_rate[i] for i in ids if i in mean_rate]
        by_class[cls] = {"n": len(ids), "sum_mbps": sum(vals) / 1e6 if vals else None,
                         "per_flow_mbps": mean(vals) / 1e6 if vals else None,
                         "rtt_ms": mean(rtts[i] for i in ids if rtts.get(i) is not None)
                         if any(rtts.get(i) is not None for i in ids) else None}
    drops = {p: (v[-1][4] - v[0][4]) if len(v) >= 2 else 0 for p, v in raw["queues"].items()}
    retx = sum(max((x[4] for x in flow_samples(raw, f["id"])), default=0) for f in longs)
    ratio = None
    if by_class["inter"]["per_flow_mbps"] and by_class["intra"]["per_flow_mbps"]:
        ratio = by_class["inter"]["per_flow_mbps"] / by_class["intra"]["per_flow_mbps"]
    m = {
        "run_id": raw["run_id"], "cc": raw["cc"], "label": raw["label"],
        "steady_from_s": t_a, "steady_to_s": t_b,
        "utilization": util,
        "jain": jain(list(mean_rate.values())) if len(mean_rate) >= 2 else None,
        "convergence_s": convergence_s(jain_series, t_all) if len(longs) >= 2 else None,
        "queue_mean_kb": mean(x[1] / 1000 for x in qs) if qs else None,
        "queue_p99_kb": percentile([x[1] / 1000 for x in qs], 99) if qs else None,
        "drops": drops.get(raw["bottleneck"], 0), "drops_by_port": drops,
        "retransmits": retx,
        "intra": by_class["intra"], "inter": by_class["inter"], "inter_intra_ratio": ratio,
        "flow_mbps": {str(i): v / 1e6 for i, v in mean_rate.items()},
        "phases": phases(raw),
        "flow_rtt_ms": {str(i): v for i, v in rtts.items()},
        "fct": fct_table(raw.get("fct", [])),
        "fct_count": len(raw.get("fct", [])),
        "fct_failed": sum(1 for f in raw.get("fct", []) if not f.get("ok")) + raw.get("fct_unfinished", 0),
        # How loaded the emulation itself was: a saturated guest CPU or large
        # sample gaps mean the numbers measure the VM, not only the CC.
        "guest_cpu_busy": (raw.get("cpu") or {}).get("busy"),
        "sample_gap_max_ms": (raw.get("sample_gaps_ms") or {}).get("max"),
    }
    ts = {"rates": series, "jain": jain_series, "queue": q,
          "rtt": {f["id"]: [(x[0], x[3] / 1000.0) for x in flow_samples(raw, f["id"])] for f in flows},
          "cwnd": {f["id"]: [(x[0], x[2]) for x in flow_samples(raw, f["id"])] for f in flows}}
    return m, ts
