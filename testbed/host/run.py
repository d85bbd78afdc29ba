#!/usr/bin/env python3
"""The host backend: a simulator scenario with one bottleneck, run at real
speed on this machine's own kernel, with the model's prediction beside it.

  testbed/host/run.py SCENARIO [--cc a,b,...] [--set CC.NAME=VALUE ...] [--out DIR]

SCENARIO is a simulator scenario (testbed/sim/scenarios/*.toml) whose every
flow crosses its one queue. For each CC (default: the scenario's `cc` list),
`xdcc-sim plan` resolves the file into absolute values (the port's rate and
buffer, its eBPF marker, the tunables) -- the model and this run read one
meaning of the file -- and this script only builds and measures it:

  s<group> ─┐
            ├─ r ── port p0: HTB at the rate over a byte FIFO of the buffer ── d
  s<group> ─┘       (+ the plan's xdcc marker on p0)

one sender namespace per flow group; long flows are iperf3 streams (start and
stop at whole seconds), sized flows go through `xdcc flowgen` (a completion
time each). xdcc CCs run as their BPF struct_ops build (bpf_<cc>), told the
scenario's network; the kernel's own CCs (cubic, bbr) run as they are and
have no model. The base RTT is what the namespaces give (a few µs to tens
of µs): a scenario whose flows need a longer path is refused, as it would
need netem, which this kernel lacks.

Prints, per CC, the host's and the model's port utilization, queue mean and
p99, drops and Jain's index of the long flows' mean rates over the measured
interval (and the mean/p99 completion time of sized flows); writes
DIR/host.json and DIR/model.json (default DIR: out/host/<scenario>). Root.
"""
import argparse, json, math, os, shutil, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XDCC = os.environ.get("XDCC_BIN", os.path.join(ROOT, "target", "release", "xdcc"))
SIM = os.environ.get("XDCC_SIM_BIN", os.path.join(ROOT, "target", "release", "xdcc-sim"))
# A flow may need at most this base RTT: the namespaces' own (no delay emulation).
MAX_RTT_US = 100.0
SAMPLE_S = 0.02


class Fail(Exception):
    pass


def sh(*cmd, ns=None, check=True, capture=True):
    full = (["ip", "netns", "exec", ns] if ns else []) + [str(c) for c in cmd]
    r = subprocess.run(full, capture_output=capture, text=True)
    if check and r.returncode != 0:
        raise Fail(f"{' '.join(full)}: {(r.stderr or r.stdout).strip()}")
    return r.stdout if capture else ""


class Net:
    """The namespaces and the port; removed on exit, whatever happened."""

    def __init__(self, plan, tag):
        self.tag, self.plan = tag, plan
        self.groups = [f"xh{tag}-s{i}" for i in range(len(plan["groups"]))]
        self.r, self.d = f"xh{tag}-r", f"xh{tag}-d"
        self.pids = []

    def up(self):
        for n in self.groups + [self.r, self.d]:
            sh("ip", "netns", "add", n)
            sh("ip", "-n", n, "link", "set", "lo", "up")
            sh("sysctl", "-qw", "net.ipv4.tcp_ecn=1", ns=n)
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=self.r)
        links = [(s, "e0", self.r, f"a{i}", i + 1) for i, s in enumerate(self.groups)] + [(self.d, "e0", self.r, "p0", 200)]
        for a, ia, b, ib, net in links:
            sh("ip", "link", "add", ia, "netns", a, "type", "veth", "peer", ib, "netns", b)
            sh("ip", "-n", a, "addr", "add", f"10.78.{net}.1/24", "dev", ia)
            sh("ip", "-n", b, "addr", "add", f"10.78.{net}.2/24", "dev", ib)
            sh("ip", "-n", a, "link", "set", ia, "up")
            sh("ip", "-n", b, "link", "set", ib, "up")
            sh("ip", "-n", a, "route", "add", "default", "via", f"10.78.{net}.2")
        port = self.plan["port"]
        rate = f"{port['rate_mbit']}mbit"
        sh("tc", "-n", self.r, "qdisc", "add", "dev", "p0", "root", "handle", "1:", "htb", "default", "1")
        sh("tc", "-n", self.r, "class", "add", "dev", "p0", "parent", "1:", "classid", "1:1", "htb", "rate", rate, "ceil", rate,
           "burst", "64k", "cburst", "64k")
        sh("tc", "-n", self.r, "qdisc", "add", "dev", "p0", "parent", "1:1", "handle", "10:", "bfifo", "limit", port["buffer_bytes"])

    def down(self):
        for p in self.pids:
            try:
                p.kill()
                p.wait(timeout=5)
            except Exception:
                pass
        for n in self.groups + [self.r, self.d]:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)

    def set_cc(self, cc):
        """The namespaces' default CC, so that the receiver's listeners run
        it: Linux accepts an ECN SYN only at a listener whose CC needs ECN.
        (A namespace may only default to a non-restricted CC, as xdcc's are;
        the kernel's own CCs are set per socket by the senders.)"""
        if not cc.startswith("bpf_"):
            return
        for n in self.groups + [self.d]:
            sh("sysctl", "-qw", f"net.ipv4.tcp_congestion_control={cc}", ns=n)

    def base_rtt_us(self):
        out = sh("ping", "-c", "20", "-i", "0.01", "-q", "10.78.200.1", ns=self.groups[0])
        avg = [l for l in out.splitlines() if l.startswith("rtt")][0].split("=")[1].split("/")[1]
        return float(avg) * 1000


def port_stats(ns):
    """(bytes sent by the HTB, backlog bytes, drops) of port p0."""
    out = sh("tc", "-s", "-n", ns, "qdisc", "show", "dev", "p0")
    sent = backlog = drops = 0
    cur = None
    for line in out.splitlines():
        w = line.split()
        if line.startswith("qdisc"):
            cur = w[1]
        elif w and w[0] == "Sent" and cur == "htb":
            sent = int(w[1])
        elif w and w[0] == "Sent" and cur == "bfifo":
            drops = int(w[6].rstrip(","))
        elif w and w[0] == "backlog" and cur == "bfifo":
            v = w[1]
            backlog = int(float(v[:-2]) * 1024) if v.endswith("Kb") else int(float(v[:-2]) * 1048576) if v.endswith("Mb") else int(v.rstrip("b"))
    return sent, backlog, drops


def load_ccs(plan, loaded):
    """Registers the plan's BPF CCs and writes their network and tunables."""
    per_cc = {}
    for g in plan["groups"]:
        if g["registered"].startswith("bpf_"):
            if per_cc.setdefault(g["registered"], g["tunables"]) != g["tunables"]:
                raise Fail(f"groups with different tunables for {g['registered']}: the kernel's tunables are per CC, not per flow")
    avail = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
    for cc, tun in per_cc.items():
        if cc not in avail:
            sh(XDCC, "cc", "load", cc[4:], "--bpf")
            loaded.append(cc[4:])
        # The network first (it re-derives every tunable; each write is
        # checked as a set, so intra ≤ inter may need the other order), then
        # the scenario's own values, then the window pacing (default 100 %).
        net = list(plan["net"].items())
        for _ in range(2):
            net = [(k, v) for k, v in net if subprocess.run([XDCC, "tunable", "set", cc, k, str(v)], capture_output=True).returncode]
        for k, v in net + sorted(tun.items()):
            sh(XDCC, "tunable", "set", cc, k, v)
        if "window_pacing_pct" not in tun:
            sh(XDCC, "tunable", "set", cc, "window_pacing_pct", 100)


def start_marker(net, plan, procs, dur):
    m = plan["port"]["marker"]
    if not m:
        return None
    rate = plan["port"]["rate_mbit"]
    if m["kind"] == "phantom":
        cmd = [XDCC, "mark-phantom", "--iface", "p0", "--rate-mbit", rate, "--drain-pct", m["drain_pct"],
               "--size-bytes", m["size_bytes"], "--kmin-pct", m["kmin_pct"], "--kmax-pct", m["kmax_pct"], "--duration", dur]
        ns = net.r
    else:
        cmd = [XDCC, "mark-amrt", "--iface", "e0", "--rate-mbit", rate, "--duration", dur]
        ns = net.d
    f = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen(["ip", "netns", "exec", ns] + [str(c) for c in cmd], stdout=f, stderr=subprocess.STDOUT, text=True)
    procs.append(p)
    time.sleep(0.3)
    if p.poll() is not None:
        f.seek(0)
        raise Fail(f"the marker did not start: {f.read().strip()}")
    return p, f


def whole(x, what):
    if abs(x - round(x)) > 1e-9:
        raise Fail(f"{what} = {x} s: long flows start and stop at whole seconds here (iperf3 -t)")
    return int(round(x))


def run_one(plan, work):
    tag = os.getpid() % 100000
    net = Net(plan, tag)
    loaded = []
    procs = net.pids  # the marker and flowgen: killed with the namespaces, whatever happened
    try:
        net.up()
        base = net.base_rtt_us()
        for g in plan["groups"]:
            if g["rtt_us"] > max(MAX_RTT_US, 4 * base):
                raise Fail(f"group {g['name']}: base RTT {g['rtt_us']} µs needs delay emulation (netem), which the host backend does not use (this path: {base:.0f} µs)")
        load_ccs(plan, loaded)
        net.set_cc(plan["registered"])
        dur = plan["duration_s"]
        # Servers: one iperf3 per long flow, one flowgen for the sized ones.
        longs, sized = [], []
        port = 5400
        for gi, g in enumerate(plan["groups"]):
            for k in range(g["count"]):
                start = g["start_s"] + k * g["start_spacing_s"]
                if g["size_bytes"] is None:
                    stop = g["stop_s"] if g["stop_s"] is not None else dur
                    longs.append(dict(group=g["name"], ns=net.groups[gi], port=port, cc=g["registered"],
                                      start=whole(start, f"{g['name']} start"), secs=whole(stop - start, f"{g['name']} length")))
                    port += 1
                else:
                    sized.append(dict(at_s=start, src=net.groups[gi], dst="10.78.200.1", size=g["size_bytes"], cc=g["registered"], group=g["name"]))
        for f in longs:
            sh("iperf3", "-s", "-D", "-p", f["port"], "-I", f"{work}/iperf-{f['port']}.pid", ns=net.d)
        time.sleep(0.3)
        marker = start_marker(net, plan, procs, int(math.ceil(dur)) + 2)
        fg = None
        if sized:
            with open(f"{work}/flowgen.json", "w") as fh:
                json.dump({"port": 6500, "servers": [net.d], "deadline_s": dur + 5,
                           "flows": [{k: v for k, v in s.items() if k != "group"} for s in sized]}, fh)
            fg = subprocess.Popen([XDCC, "flowgen", "--plan", f"{work}/flowgen.json", "--out", f"{work}/fct.jsonl"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            procs.append(fg)
            if json.loads(fg.stdout.readline()).get("ready") is not True:
                raise Fail("xdcc flowgen did not start")
        samples = []
        t0 = time.monotonic()
        if fg:
            fg.stdin.write(f"{t0}\n")
            fg.stdin.flush()
        clients = []

        def start_long(f):
            time.sleep(max(0.0, t0 + f["start"] - time.monotonic()))
            p = subprocess.Popen(["ip", "netns", "exec", f["ns"], "iperf3", "-c", "10.78.200.1", "-p", str(f["port"]), "-t", str(f["secs"]),
                                  "-C", f["cc"], "-i", "0.1", "-J"], stdout=open(f"{work}/long-{f['port']}.json", "w"), text=True)
            clients.append(p)
        threads = [threading.Thread(target=start_long, args=(f,)) for f in longs]
        for t in threads:
            t.start()
        while time.monotonic() < t0 + dur:
            s = port_stats(net.r)
            samples.append((time.monotonic() - t0,) + s)
            time.sleep(SAMPLE_S)
        for t in threads:
            t.join()
        for p in clients:
            p.wait(timeout=30)
        if fg:
            fg.wait(timeout=30)
        if marker:
            marker[0].wait(timeout=10)
            marker[1].seek(0)
        return measure(plan, work, samples, longs, sized, base)
    finally:
        for f in os.listdir(work):
            if f.startswith("iperf-") and f.endswith(".pid"):
                try:
                    os.kill(int(open(os.path.join(work, f)).read()), 15)
                except Exception:
                    pass
        net.down()
        for c in loaded:
            subprocess.run([XDCC, "cc", "unload", c, "--bpf"], capture_output=True)


def measure(plan, work, samples, longs, sized, base):
    lo, hi = plan["measure_from_s"], plan["measure_to_s"]
    win = [s for s in samples if lo <= s[0] <= hi]
    if len(win) < 2:
        raise Fail("no samples in the measured interval")
    span = win[-1][0] - win[0][0]
    util = (win[-1][1] - win[0][1]) * 8 / (plan["port"]["rate_mbit"] * 1e6 * span)
    q = sorted(s[2] for s in win)
    rates = []
    for f in longs:
        j = json.load(open(f"{work}/long-{f['port']}.json"))
        b = sum(iv["sum"]["bytes"] for iv in j.get("intervals", [])
                if lo <= f["start"] + iv["sum"]["start"] and f["start"] + iv["sum"]["end"] <= hi)
        # Only flows that ran for the whole interval count (as the model's jain_of_means).
        if f["start"] <= lo and f["start"] + f["secs"] >= hi:
            rates.append(b * 8 / (hi - lo) / 1e6)
    jain = sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates)) if rates and sum(rates) else None
    fct = {}
    if sized:
        done = [json.loads(l) for l in open(f"{work}/fct.jsonl") if l.strip() and '"id"' in l]
        for o in done:
            if o.get("ok"):
                fct.setdefault(sized[o["id"]]["group"], []).append(o["fct_s"] * 1e3)
    return {
        "utilization": util, "mean_qlen_kb": sum(q) / len(q) / 1e3, "p99_qlen_kb": q[min(len(q) - 1, int(0.99 * len(q)))] / 1e3,
        "drops": samples[-1][3] - samples[0][3], "jain_of_means": jain, "long_rates_mbps": rates, "base_rtt_us": base,
        "fct_ms": {g: {"n": len(v), "mean": sum(v) / len(v), "p99": sorted(v)[min(len(v) - 1, int(0.99 * len(v)))]} for g, v in fct.items()},
        "sized_planned": len(sized), "sized_done": sum(len(v) for v in fct.values()),
    }


def model(scenario, cc, sets):
    if cc in ("cubic", "bbr", "reno", "vegas"):
        return None
    out = sh(SIM, "run", scenario, "--cc", cc, "--json", *[a for s in sets for a in ("--set", s)])
    r = json.loads(out)[0]
    q = r["queues"][0]
    fct = {}
    for f in r["flows"]:
        if f["fct_ms"] is not None:
            fct.setdefault(f["group"], []).append(f["fct_ms"])
    return {"utilization": q["utilization"], "mean_qlen_kb": q["mean_qlen_kb"], "p99_qlen_kb": q["p99_qlen_kb"], "drops": q["drops"],
            "jain_of_means": r["jain_of_means"],
            "fct_ms": {g: {"n": len(v), "mean": sum(v) / len(v), "p99": sorted(v)[min(len(v) - 1, int(0.99 * len(v)))]} for g, v in fct.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("--cc", help="comma-separated CCs (default: the scenario's cc list)")
    ap.add_argument("--set", action="append", default=[], metavar="CC.NAME=VALUE")
    ap.add_argument("--out")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("testbed/host/run.py: needs root (network namespaces, BPF)")
    for t in ("iperf3", "tc", "ping", "ip"):
        if not shutil.which(t):
            sys.exit(f"testbed/host/run.py: needs {t}")
    if not (os.access(XDCC, os.X_OK) and os.access(SIM, os.X_OK)):
        subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "xdcc", "-p", "xdcc-sim"], cwd=ROOT, check=True)
    scen = os.path.abspath(a.scenario)
    name = os.path.splitext(os.path.basename(scen))[0]
    try:
        if a.cc:
            ccs = a.cc.split(",")
        else:
            import tomllib
            with open(scen, "rb") as fh:
                ccs = tomllib.load(fh)["cc"]
        out = a.out or os.path.join(ROOT, "out", "host", name)
        os.makedirs(out, exist_ok=True)
        host, pred, rows = {}, {}, []
        for cc in ccs:
            plan = json.loads(sh(SIM, "plan", scen, "--cc", cc, *[x for s in a.set for x in ("--set", s)]))
            for n in plan["notes"]:
                print(f"[host] {cc}: note: {n}", file=sys.stderr)
            print(f"[host] {cc}: {plan['duration_s']} s on a {plan['port']['rate_mbit']} Mbit/s port", file=sys.stderr)
            with tempfile.TemporaryDirectory() as work:
                host[cc] = run_one(plan, work)
            pred[cc] = model(scen, cc, a.set)
        json.dump(host, open(os.path.join(out, "host.json"), "w"), indent=1)
        json.dump(pred, open(os.path.join(out, "model.json"), "w"), indent=1)
    except Fail as e:
        sys.exit(f"testbed/host/run.py: {e}")
    f = lambda v, fmt: "-" if v is None else fmt.format(v)
    print(f"{name} on this host (kernel {os.uname().release}) and in the model (host / model)")
    print(f"{'cc':<8} {'util %':>13} {'queue kB':>15} {'q p99 kB':>15} {'drops':>11} {'jain':>13}  fct ms (mean / p99, host | model)")
    for cc in ccs:
        h, m = host[cc], pred[cc] or {}
        fcts = "; ".join(f"{g} {v['mean']:.2f}/{v['p99']:.2f} | " + (f"{m['fct_ms'][g]['mean']:.2f}/{m['fct_ms'][g]['p99']:.2f}" if g in m.get("fct_ms", {}) else "-")
                         + f" ({v['n']} of {h['sized_planned']})" for g, v in h["fct_ms"].items())
        print(f"{cc:<8} {f(h['utilization'] * 100, '{:.1f}'):>6} / {f(m.get('utilization') and m['utilization'] * 100, '{:.1f}'):<5} "
              f"{f(h['mean_qlen_kb'], '{:.1f}'):>7} / {f(m.get('mean_qlen_kb'), '{:.1f}'):<6} {f(h['p99_qlen_kb'], '{:.1f}'):>7} / {f(m.get('p99_qlen_kb'), '{:.1f}'):<6} "
              f"{h['drops']:>5} / {f(m.get('drops'), '{}'):<4} {f(h['jain_of_means'], '{:.3f}'):>5} / {f(m.get('jain_of_means'), '{:.3f}'):<6} {fcts}")
    print(f"results: {out}/host.json, model.json; base RTT here {host[ccs[0]]['base_rtt_us']:.0f} µs")


if __name__ == "__main__":
    main()
