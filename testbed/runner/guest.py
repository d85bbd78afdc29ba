#!/usr/bin/env python3
"""Runs inside the test VM (testbed/run.sh boots it): for each sweep point and
CC of a scenario, build the 2-DC topology, configure the CC, run the traffic,
sample sockets and queues, and write one raw JSON per run to OUT/raw/.

    guest.py run OUT                   every run of OUT/plan.json (`xdcc-sim plan`)
    guest.py topo-test [SCENARIO]      build, check, tear down (the CI test)
    guest.py capacity OUT              what rates the VM sustains

It holds no scenario default and derives no value: every number it applies
comes from the plan (testbed/run.sh writes it on the host).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns  # noqa: E402
import topology  # noqa: E402

ROOT = topology.ROOT
XDCC = os.environ.get("XDCC_BIN", os.path.join(ROOT, "target", "release", "xdcc"))
# The testbed's own tools (sampler, sized flows): `xdcc-testbed`, beside it.
XDCC_TESTBED = os.environ.get("XDCC_TESTBED_BIN", os.path.join(ROOT, "target", "release", "xdcc-testbed"))
# The planner: every run's network and tunables (`xdcc-sim plan`).
XDCC_SIM = os.environ.get("XDCC_SIM_BIN", os.path.join(ROOT, "target", "release", "xdcc-sim"))
SCENARIOS = os.path.join(ROOT, "testbed", "scenarios")
LONG_PORT0 = 5201


class RunError(Exception):
    """A plan this kernel cannot carry out (a CC it lacks, a bad port)."""


def log(*a):
    print(*a, flush=True)


def cli(*args):
    """`xdcc ARGS` (its modules from this tree's kmods/); its error, if any,
    ends the run."""
    p = subprocess.run([XDCC, *args], capture_output=True, text=True,
                       env=dict(os.environ, XDCC_MODULE_DIR=os.path.join(ROOT, "kmods")))
    if p.returncode != 0:
        raise RunError(f"xdcc {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def load_cc(setup, run):
    """Kernel side of a CC (one of the plan's `setup`): load its module,
    tell it the network (link rate and base RTTs, from which it derives its
    tunables) and what the plan adds for it (`run["derived"]`: Gemini's
    time-scaled K and T), its preset (`xdcc tunable preset`), then the
    scenario's own tunables, validated by the CLI."""
    cc, module = setup["cc"], setup["module"]
    if module and not os.path.isdir(f"/sys/module/{module}"):
        cli("cc", "load", cc)
    # The hosts make it their default: a kernel CC such as bbr must be
    # allowed for that (xdcc's are); refused if the kernel lacks it.
    cli("cc", "allow", cc)
    if not module:
        return {}
    for k, v in list(run["net"].items()) + list(run["derived"].get(cc, {}).items()):
        cli("tunable", "set", cc, k, str(v))
    if setup["preset"]:
        cli("tunable", "preset", cc, setup["preset"])
    for k, v in setup["tunables"].items():
        cli("tunable", "set", cc, k, str(v))
    return {"tunables": cli("tunable", "list", cc)}


def network_plan(scenario, cc, net):
    """The network of `scenario`'s first run of `cc` with the topology
    overrides `net` (KEY=VALUE), from the planner (`xdcc-sim plan`)."""
    path = scenario if os.path.isfile(scenario) else os.path.join(SCENARIOS, scenario + ".toml")
    argv = [XDCC_SIM, "plan", path, "--cc", cc] + [a for kv in net for a in ("--net", kv)]
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        raise RunError(f"xdcc-sim plan: {p.stderr.strip()}")
    return json.loads(p.stdout)["runs"][0]["network"]


def process_ticks():
    """CPU time (utime + stime, clock ticks) of every live process:
    {pid: (command name, ticks)}. Kernel threads are included (ksoftirqd
    runs the softirqs the interrupted tasks leave over)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue  # (exited meanwhile)
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        rest = st[st.rindex(")") + 2:].split()
        out[int(d)] = (st[st.index("(") + 1:st.rindex(")")], int(rest[11]) + int(rest[12]))
    return out


def cpu_times():
    """What the guest's CPUs have done so far: /proc/stat's jiffies of all
    CPUs ((busy, softirq, total), plus user, system and irq), its context
    switches, /proc/softirqs' counts by type, summed over CPUs, and every
    live process's CPU time."""
    ctxt = 0
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
        for line in f:
            if line.startswith("ctxt "):
                ctxt = int(line.split()[1])
    idle = v[3] + v[4]
    softirqs = {}
    try:
        with open("/proc/softirqs") as f:
            next(f)
            for line in f:
                name, *counts = line.split()
                softirqs[name.rstrip(":").lower()] = sum(int(c) for c in counts)
    except OSError:
        pass  # (a kernel without it: the split by type is left out)
    return {"busy": sum(v) - idle, "softirq": v[6], "total": sum(v), "user": v[0] + v[1],
            "system": v[2], "irq": v[5], "softirqs": softirqs, "ctxt": ctxt,
            "procs": process_ticks(), "t": time.monotonic()}


def cpu_split(a, b):
    """Shares of the guest's CPU time between snapshots `a` and `b`, and the
    softirqs raised per second by type (NET_RX, HRTIMER, ...): what keeps
    the guest busy."""
    tot = max(1, b["total"] - a["total"])
    out = {k: round((b[k] - a[k]) / tot, 3) for k in ("busy", "softirq", "user", "system", "irq")}
    secs = max(1e-3, b["t"] - a["t"])
    out["softirqs_per_s"] = {k: round((n - a["softirqs"].get(k, 0)) / secs)
                             for k, n in b["softirqs"].items() if n > a["softirqs"].get(k, 0)}
    out["ctxt_per_s"] = round((b.get("ctxt", 0) - a.get("ctxt", 0)) / secs)
    # Share of all CPU time per command name, from the processes alive at
    # `b` (a process started since `a` counts whole; one that exited in
    # between is missing). Shares below 0.5 % are left out.
    by_name = {}
    for pid, (name, ticks) in b.get("procs", {}).items():
        before = a.get("procs", {}).get(pid)
        used = ticks - (before[1] if before and before[0] == name else 0)
        by_name[name] = by_name.get(name, 0) + max(0, used)
    out["processes"] = {k: round(n / tot, 3) for k, n in sorted(by_name.items(), key=lambda kv: -kv[1])
                        if n / tot >= 0.005}
    return out


def top_processes(cpu, n=3):
    """The `n` processes (by command name) with the most CPU, for the log line."""
    top = list(cpu.get("processes", {}).items())[:n]
    return ", ".join(f"{k} {100 * v:.0f}%" for k, v in top) or "no process above 0.5 %"


def top_softirqs(cpu, n=3):
    """The `n` most frequent softirq types per second, for the run's log line."""
    top = sorted(cpu.get("softirqs_per_s", {}).items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{k} {v}/s" for k, v in top) or "no softirq counts"


def addr(net, name, v6):
    """A host's address (`dc2h3`), or a border router's on one WAN path
    (`dc1br:wan0`), as the plan's network sets it."""
    return net["addresses"][name]["ipv6" if v6 else "ipv4"]


class Sampler:
    """Every sample_ms: tcp_info of each long flow (sender side) and the
    counters of every monitored port, from one `xdcc-testbed sample` process (Rust,
    netlink sockets opened once per namespace; it writes NDJSON to a file,
    read into the run's raw JSON when the run ends)."""

    def __init__(self, t0, period, senders, long_ports, ports, v6, path):
        self.t0, self.long_ports, self.path = t0, long_ports, path
        self.flows = {}
        self.queues = {p: [] for p, _, _ in ports}
        self.stats = {}
        by_host = {}
        for (h, port) in long_ports:
            by_host.setdefault(h, []).append(port)
        args = [XDCC_TESTBED, "sample", "--interval-ms", str(max(1, int(round(period * 1000))))]
        for h in senders:
            args += ["--sockets", f"{h}:{','.join(str(p) for p in sorted(by_host.get(h, [])))}"]
        for p in self.queues:
            args += ["--port", p]
        if v6:
            args.append("--ipv6")
        # Real-time priority (SCHED_FIFO 10, above every traffic process): a
        # sample is a short netlink dump, and under TCG a sampler that waits
        # for the CPU behind iperf3 and the flow generator leaves gaps.
        if shutil.which("chrt"):
            args = ["chrt", "-f", "10"] + args
        self.out = open(path, "w")
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=self.out, stderr=subprocess.PIPE, text=True)

    def finish(self):
        """Stops the sampler (closing its stdin) and reads what it wrote."""
        try:
            _, err = self.proc.communicate(input="", timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        self.out.close()
        if self.proc.returncode != 0:
            raise RuntimeError(f"xdcc-testbed sample failed ({self.proc.returncode}): {err.strip()}")
        with open(self.path) as fh:
            for line in fh:
                r = json.loads(line)
                if "sampler" in r:
                    self.stats = r["sampler"]
                elif "port" in r:
                    self.queues[r["port"]].append([round(r["t"] - self.t0, 4), r["backlog"], r["qlen"], r["bytes"],
                                                   r["drops"]])
                else:
                    fid = self.long_ports.get((r["ns"], r["dport"]))
                    if fid is not None:
                        self.flows.setdefault(fid, []).append(
                            [round(r["t"] - self.t0, 4), r["bytes_acked"], r["cwnd"], r["rtt_us"],
                             r["total_retrans"], r["delivered_ce"], r["pacing_rate"], r["cc"]])
        os.remove(self.path)  # (all of it is in the run's raw JSON)


class FlowGen:
    """The run's sized flows, sent and timed by one `xdcc-testbed flowgen` process
    (Rust, one event loop for every namespace: see userspace/xdcc/src/flowgen.rs)."""

    PORT = 7000

    def __init__(self, sized, net, cc, v6, deadline_s, path, preexec_fn=None):
        self.meta = []
        flows = []
        for f in sized:
            flows.append({"at_s": round(f["at_s"], 6), "src": f["src"], "dst": addr(net, f["dst"], v6), "size": f["bytes"], "cc": cc})
            self.meta.append({"src": f["src"], "dst": f["dst"], "kind": f["kind"], "size": f["bytes"],
                              "at_s": round(f["at_s"], 3), "class": f["class"]})
        servers = sorted({f["dst"] for f in sized})
        self.plan, self.out = path + ".plan.json", path + ".ndjson"
        with open(self.plan, "w") as fh:
            json.dump({"port": self.PORT, "servers": servers, "flows": flows, "deadline_s": deadline_s}, fh)
        self.proc = subprocess.Popen([XDCC_TESTBED, "flowgen", "--plan", self.plan, "--out", self.out],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=preexec_fn)
        ready = self.proc.stdout.readline()
        if '"ready"' not in ready:
            _, err = self.proc.communicate(timeout=30)
            raise RuntimeError(f"xdcc-testbed flowgen did not start: {err.strip() or ready.strip()}")

    def start(self, t0):
        """Time zero of the plan: `time.monotonic()` (CLOCK_MONOTONIC)."""
        self.wall0 = time.time() - (time.monotonic() - t0)
        self.proc.stdin.write(f"{t0!r}\n")
        self.proc.stdin.flush()

    def done(self):
        try:
            with open(self.out) as fh:
                return sum(1 for line in fh if '"id"' in line)
        except OSError:
            return 0

    def finish(self):
        """Waits for the generator (it stops at its deadline) and returns
        (one record per flow, number unfinished): a flow still running at the
        deadline is recorded as `unfinished` at its planned start."""
        try:
            _, err = self.proc.communicate(timeout=3600)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        if self.proc.returncode != 0:
            raise RuntimeError(f"xdcc-testbed flowgen failed ({self.proc.returncode}): {err.strip()}")
        fct, unfinished = [], 0
        with open(self.out) as fh:
            for line in fh:
                r = json.loads(line)
                if "summary" in r:
                    unfinished = r["summary"]["unfinished"]
                    continue
                rec = dict(self.meta[r["id"]], id=r["id"], at_s=round(r["start_s"], 3), start=self.wall0 + r["start_s"],
                           ok=r["ok"])
                if r.get("fct_s") is not None:
                    rec["fct_s"] = r["fct_s"]
                if r.get("error"):
                    rec["error"] = r["error"]
                fct.append(rec)
        seen = {r["id"] for r in fct}
        fct += [dict(m, ok=False, unfinished=True) for i, m in enumerate(self.meta) if i not in seen]
        for f in (self.plan, self.out):
            os.remove(f)  # (all of it is in the run's raw JSON)
        return fct, unfinished


def parse_port(spec):
    ns, _, dev = spec.partition(":")
    if not dev:
        raise RunError(f"port '{spec}' must be namespace:interface, e.g. dc1sw:h1")
    return ns, dev


def qdisc_text(ports):
    """`tc -s qdisc show` of each monitored port: the qdiscs' own counters
    (RED's marked / early / pdrop, the fifo's drops) that the sampler's
    netlink totals do not break down. Counters run on across the runs that
    share a network: compare the run's "before" and "after"."""
    out = {}
    for p, ns, dev in ports:
        try:
            out[p] = netns.run(ns, ["tc", "-s", "qdisc", "show", "dev", dev], check=False)
        except OSError as e:
            out[p] = f"tc failed: {e}"
    return out


def one_run(scenario, run, out, idx, total):
    """One run of a scenario: its plan (`xdcc-sim plan`) built, its CCs set
    up, its traffic sent and sampled."""
    name, label, cc = run["entry"], run["label"], run["cc"]
    run_id = name + (f"-{label}" if label else "")
    work = os.path.join(out, "raw", run_id + ".profiles")
    os.makedirs(work, exist_ok=True)
    net = run["network"]
    global _built
    if _built and _built[0] == net:
        # Same network as the last run: keep it (building costs ~1 min of
        # process spawns under TCG); its queues have drained meanwhile. The
        # run still records the profiles that stand.
        applied = _built[1]
        for f in os.listdir(_built[2]):
            if f.startswith("profile-"):
                shutil.copy(os.path.join(_built[2], f), work)
        time.sleep(2)
    else:
        applied = topology.build(net, work, XDCC, log)
        _built = (net, applied, work)
    cc_info = {}
    for i, c in enumerate(run["setup"]):
        info = load_cc(c, run)
        cc_info = cc_info if i else info
    for h in net["hosts"]:
        netns.sysctl(h, "net.ipv4.tcp_congestion_control", cc)
        netns.sysctl(h, "net.ipv4.tcp_no_metrics_save", 1)
        # Whether an RTO draws a new flow label (a new ECMP path): `reroute`.
        netns.sysctl(h, "net.core.txrehash", 0 if run["reroute"] == "single" else 1)
    traffic = run["traffic"]
    for c in traffic["cross"][:1]:
        # Cross traffic runs between the border routers. A listener accepts
        # ECN only if the SYN asks without ECT or its own CC needs ECN
        # (tcp_ecn_create_request), and a DCTCP-like sender's SYN is ECT: so
        # the receiving router's default CC is the cross traffic's (one CC
        # for all of it: the planner checks).
        for br in ("dc1br", "dc2br"):
            netns.sysctl(br, "net.ipv4.tcp_congestion_control", c["cc"])
    v6 = run["ipv6"]
    dur = run["duration_s"]

    # The plan's traffic: one iperf3 per long connection, one per cross
    # traffic entry (from dc2br itself to dc1br's address on its WAN path,
    # which only that path reaches), the sized flows by `xdcc-testbed flowgen`.
    flows, long_ports, senders = [], {}, set()
    port = LONG_PORT0
    for grp in traffic["long"]:
        for _ in range(grp["connections"]):
            fid = len(flows)
            flows.append({"id": fid, "kind": "long", "src": grp["src"], "dst": grp["dst"], "port": port,
                          "start_s": grp["start_s"], "stop_s": grp["stop_s"], "class": grp["class"]})
            long_ports[(grp["src"], port)] = fid
            senders.add(grp["src"])
            port += 1
    for c in traffic["cross"]:
        flows.append({"id": len(flows), "kind": "cross", "src": "dc2br", "dst": "dc1br", "port": port,
                      "addr": addr(net, f"dc1br:wan{c['path']}", v6), "link": f"wan{c['path']}", "streams": c["streams"],
                      "cc": c["cc"], "start_s": c["start_s"], "stop_s": c["stop_s"], "class": "inter"})
        port += 1
    events = []  # (time, kind, args): the long flows and cross traffic started, WAN paths failed or healed
    for f in flows:
        events.append((f["start_s"], "flow", f))
    for e in traffic["events"]:
        events.append((e["at_s"], e["action"], e["path"]))
    events.sort(key=lambda e: e[0])
    dead = set()  # WAN paths black-holed now
    # The sized flows in time order, run by `xdcc-testbed flowgen`.
    sized = sorted(traffic["sized"], key=lambda f: f["at_s"])
    # The sampler's and the flow generator's files are scratch (the run's raw
    # JSON keeps their contents) and live on the guest's tmpfs, not on the
    # 9p-mounted output directory: a write there is a round trip to qemu's
    # 9p server, which at a run's start also serves every exec'd iperf3's
    # pages, and the real-time sampler blocked on it left 0.2-0.4 s gaps.
    scratch = tempfile.mkdtemp(prefix=f"xdcc-{run_id}-")
    agents, gen_agent = {}, None
    if run["reroute"] == "agent":
        # One agent per sending host; the flow generator is one process, so
        # its flows can be in one host's agent cgroup only.
        # (The planner checks that the sized flows come from one host.)
        sized_from = {f["src"] for f in sized}
        agents = start_agents(sorted(senders | sized_from), scratch)
        gen_agent = agents[next(iter(sized_from))] if sized_from else None
    gen = FlowGen(sized, net, cc, v6, dur + max(10, dur // 2), os.path.join(scratch, "flowgen"),
                  preexec_fn=gen_agent.join if gen_agent else None) if sized else None

    # iperf3 servers for the long flows (one-off, one per flow).
    procs = []
    for f in flows:
        procs.append(netns.popen(f["dst"], ["iperf3", "-s", "-1", "-p", str(f["port"])],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(0.5)
    ports = [(p, *parse_port(p)) for p in dict.fromkeys([run["bottleneck"]] + run["monitor"])]
    qdisc_before = qdisc_text(ports)
    t0 = time.monotonic()
    cpu0 = cpu_times()
    sampler = Sampler(t0, run["sample_ms"] / 1000.0, sorted(senders), long_ports, ports, v6,
                      os.path.join(scratch, "samples.ndjson"))
    if gen:
        gen.start(t0)
    clients = {}
    wall0 = time.time()
    last_progress = 0
    ev = 0
    while True:
        now = time.monotonic() - t0
        while ev < len(events) and events[ev][0] <= now:
            _, kind, a = events[ev]
            ev += 1
            if kind == "blackhole":
                topology.blackhole(work, a)
                dead.add(a)
                log(f"[tb] run {idx}/{total} {run_id}: wan{a} black-holed at {now:.1f} s")
                continue
            if kind == "heal":
                topology.heal(work, a)
                dead.discard(a)
                log(f"[tb] run {idx}/{total} {run_id}: wan{a} healed at {now:.1f} s")
                continue
            n = max(1, int(round(a["stop_s"] - a["start_s"])))
            argv = ["iperf3", "-c", a.get("addr") or addr(net, a["dst"], v6), "-p", str(a["port"]), "-t", str(n),
                    "-C", a.get("cc", cc), "-J", "--connect-timeout", "5000"]
            if a["kind"] == "cross":
                argv += ["-P", str(a["streams"])]
            agent = agents.get(a["src"])
            clients[a["id"]] = netns.popen(
                a["src"], argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                # (in the agent's cgroup, so that its rerouter tracks the flow)
                preexec_fn=agent.join if agent else None)
        if now >= dur:
            cpu = cpu_split(cpu0, cpu_times())
            break
        if now - last_progress >= 5:
            last_progress = now
            log(f"[tb] run {idx}/{total} {run_id}: {int(now)}/{dur} s, "
                f"{sum(1 for p in clients.values() if p.poll() is None)} long flows up"
                + (f", {gen.done()} of {len(sized)} sized flows done" if gen else ""))
        # Sleep until the next client start, progress line or the end (a
        # 50 ms polling loop woke the busy guest 20 times a second).
        wake = min(dur, last_progress + 5, events[ev][0] if ev < len(events) else dur)
        time.sleep(max(0.0, wake - (time.monotonic() - t0)))
    # Let sized flows finish (until the generator's deadline), then stop sampling.
    fct, unfinished = gen.finish() if gen else ([], 0)
    for f in flows:
        p = clients.get(f["id"])
        if p is None:
            continue
        try:
            so, _ = p.communicate(timeout=15)
            j = json.loads(so)
            f["iperf3"] = {"sent_bytes": j["end"]["sum_sent"]["bytes"],
                           "received_bytes": j["end"]["sum_received"]["bytes"],
                           "retransmits": j["end"]["sum_sent"].get("retransmits", 0),
                           "error": j.get("error")}
        except (subprocess.TimeoutExpired, ValueError, KeyError) as e:
            p.kill()
            f["iperf3"] = {"error": f"iperf3 gave no result: {e}"}
    sampler.finish()
    for k in sorted(dead):
        topology.heal(work, k)  # (the next run may keep this network)
    reroutes = {h: a.finish() for h, a in agents.items()}
    shutil.rmtree(scratch, ignore_errors=True)
    qdisc_after = qdisc_text(ports)
    for p in procs:
        if p.poll() is None:
            p.kill()
    if unfinished:
        # Flows still sending would load the next run: start it afresh.
        topology.teardown()
        _built = None
    raw = {
        "scenario": scenario, "cc": name, "kernel_cc": cc, "label": label, "run_id": run_id, "started": wall0,
        "duration_s": dur, "sample_ms": run["sample_ms"], "ipv6": v6,
        "network": {k: net[k] for k in ("hosts", "wan_paths", "dc_rate_mbit", "wan_rate_mbit", "intra_rtt_us", "inter_rtt_us")},
        "inter_rtt_us": net["inter_rtt_us"], "ports": applied,
        "bottleneck": run["bottleneck"], "monitor": run["monitor"],
        "port_rates_mbit": {p: port_rate(applied, ns, dev) for p, ns, dev in ports},
        "cc_info": cc_info, "flows": flows,
        "samples": {str(k): v for k, v in sampler.flows.items()},
        "sample_fields": ["t", "bytes_acked", "cwnd", "rtt_us", "total_retrans", "delivered_ce",
                          "pacing_rate", "cc"],
        "queues": sampler.queues, "queue_fields": ["t", "backlog_bytes", "qlen", "sent_bytes", "drops"],
        "fct": fct, "fct_unfinished": unfinished,
        "qdisc_stats": {"before": qdisc_before, "after": qdisc_after},
        "cpu": cpu, "sample_gaps_ms": gaps(sampler.queues), "sampler": sampler.stats,
        "reroute": run["reroute"], "reroutes": reroutes,
        "events": [{"at_s": e["at_s"], "link": f"wan{e['path']}", "action": e["action"]} for e in traffic["events"]],
    }
    with open(os.path.join(out, "raw", run_id + ".json"), "w") as fh:
        json.dump(raw, fh)
    log(f"[tb] run {idx}/{total} {run_id}: done ({len(fct)} sized flows, {unfinished} unfinished; "
        f"guest CPU {100 * cpu['busy']:.0f}% busy, {100 * cpu['softirq']:.0f}% softirq "
        f"({top_softirqs(cpu)}; {cpu['ctxt_per_s']} context switches/s; {top_processes(cpu)}); "
        f"sample gaps {raw['sample_gaps_ms']} ms)")


_built = None  # (network plan, applied ports, profile dir) of the network standing now


class Agent:
    """The xdcc agent's rerouter in one sender's namespace (`reroute =
    "agent"`): it tracks the sockets of one cgroup2 group, which the
    sender's iperf3 clients join (`join`, run in the child before exec),
    and moves a flow to a new flow label (a new ECMP path) after congested
    or lossy rounds or an RTO. `paths 16` labels, as bench/reroute-paths.sh."""

    def __init__(self, host, scratch):
        self.host = host
        self.cgroup = os.path.join(cgroup2_root(), f"xdcc-tb-{host}")
        os.makedirs(self.cgroup, exist_ok=True)
        self.sock = os.path.join(scratch, f"agent-{host}.sock")
        self.log = open(os.path.join(scratch, f"agent-{host}.log"), "w")
        self.proc = netns.popen(host, [XDCC, "--socket", self.sock, "agent", "--cgroup", self.cgroup, "--iface", "eth0"],
                                stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(300):
            if os.path.exists(self.sock) or self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if not os.path.exists(self.sock):
            self.proc.kill()
            with open(self.log.name) as f:
                raise RuntimeError(f"xdcc agent in {host} did not start: {f.read().strip()}")
        self.ctl("reroute", "set", "paths", "16")

    def ctl(self, *argv):
        return netns.run(self.host, [XDCC, "--socket", self.sock] + list(argv))

    def join(self):
        with open(os.path.join(self.cgroup, "cgroup.procs"), "w") as f:
            f.write("0")

    def finish(self):
        """The agent's moves ({reroutes, by reason of each flow's last move}), then stop it."""
        try:
            stats = json.loads(self.ctl("--json", "stats"))
            flows = json.loads(self.ctl("--json", "flows", "--all"))
            last = {}
            for f in flows:
                if f.get("last_reroute"):
                    last[f["last_reroute"]] = last.get(f["last_reroute"], 0) + 1
            out = {"reroutes": stats.get("reroutes"), "last_move": last}
        except (RuntimeError, ValueError) as e:
            out = {"error": str(e)}
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        return out


def cgroup2_root():
    """Where cgroup2 is mounted (mounted under /run if it is nowhere yet)."""
    with open("/proc/mounts") as f:
        for line in f:
            w = line.split()
            if w[2] == "cgroup2":
                return w[1]
    root = "/run/xdcc-testbed-cgroup2"
    os.makedirs(root, exist_ok=True)
    subprocess.run(["mount", "-t", "cgroup2", "none", root], check=True)
    return root


def start_agents(senders, scratch):
    return {h: Agent(h, scratch) for h in senders}


def gaps(queues):
    """Median and max time between samples: how well the sampler kept up."""
    d = sorted(b[0] - a[0] for q in queues.values() for a, b in zip(q, q[1:]))
    return {"median": round(1000 * d[len(d) // 2]), "max": round(1000 * d[-1])} if d else None


def port_rate(applied, ns, dev):
    for a in applied:
        if a["ns"] == ns and a["dev"] == dev:
            return a["rate_mbit"]
    return None




def cmd_run(a):
    with open(os.path.join(a.out, "plan.json")) as fh:
        plan = json.load(fh)
    os.makedirs(os.path.join(a.out, "raw"), exist_ok=True)
    runs = plan["runs"]
    for idx, run in enumerate(runs, 1):
        one_run(plan["scenario"]["name"], run, a.out, idx, len(runs))
    topology.teardown()
    log(f"[tb] all {len(runs)} runs done")


def cmd_topo_test(a):
    # Four WAN paths marking ECN at K (an eBPF marker per WAN port: their
    # netem cannot mark), as h-wan-multipath runs them.
    # (dctcp: an entry without a switch profile of its own.)
    net = network_plan(a.scenario, "dctcp", ["wan_paths=4", "wan.border_profile=dc-gemini"])
    work = "/tmp/xdcc-topo-test"
    os.makedirs(work, exist_ok=True)
    applied = topology.build(net, work, XDCC, log)
    fails = 0
    for ok, desc in topology.verify(net):
        log(("PASS: " if ok else "FAIL: ") + "topology: " + desc)
        fails += not ok
    marked = [a for a in applied if a["wan_marker"]]
    ok = len(marked) == 8 and all(m.poll() is None for m in topology._markers)
    log(("PASS: " if ok else "FAIL: ") + f"topology: {len(marked)} of 8 WAN ports mark ECN by their eBPF marker")
    fails += not ok
    # A black hole on dc2br:wan1 eats what dc2br sends on it (pings to
    # dc1br's address on wan1, which only that path reaches); heal undoes it.
    for action, want in (("blackhole", False), ("heal", True)):
        getattr(topology, action)(work, 1)
        with netns.inside("dc2h1"):
            p = subprocess.run(["ping", "-c", "2", "-W", "3", addr(net, "dc1br:wan1", False)], capture_output=True, text=True)
        ok = (p.returncode == 0) == want
        log(("PASS: " if ok else "FAIL: ") + f"topology: after {action} on wan1, dc2h1 "
            + ("reaches" if want else "does not reach") + f" dc1br over wan1 (ping rc {p.returncode})")
        fails += not ok
    # Reachability over IPv4 and IPv6, within a DC and across the WAN.
    for src, dst in (("dc1h1", "dc1h2"), ("dc1h1", "dc2h1"), ("dc2h2", "dc1h2")):
        for v6 in (False, True):
            with netns.inside(src):
                ok = subprocess.run(["ping", "-6" if v6 else "-4", "-c", "2", "-W", "5", addr(net, dst, v6)],
                                    capture_output=True, text=True)
            rtt = ok.stdout.rsplit("=", 1)[-1].strip() if ok.returncode == 0 else ""
            log(("PASS: " if ok.returncode == 0 else "FAIL: ") + f"topology: {src} reaches {dst} "
                f"over IPv{6 if v6 else 4} (rtt min/avg/max {rtt})")
            fails += ok.returncode != 0
    topology.teardown()
    left = [ns for ns in netns.existing() if ns.startswith("dc")]
    log(("PASS: " if not left else "FAIL: ") + "topology: teardown removes every namespace")
    fails += bool(left)
    return 1 if fails else 0


def cmd_capacity(a):
    """The VM's forwarding capacity through the full inter-DC path."""
    net = network_plan("a-rtt-fairness", "dctcp", ["dc.rate_mbit=10000", "dc.uplink_rate_mbit=10000",
                                                   "wan.rate_mbit=10000", "wan.inter_intra_ratio=4"])
    work = "/tmp/xdcc-capacity"
    os.makedirs(work, exist_ok=True)
    topology.build(net, work, XDCC, log)
    res = {}
    for name, src, n in (("intra-1", "dc1h2", 1), ("inter-1", "dc2h1", 1), ("inter-4", "dc2h1", 4)):
        srv = netns.popen("dc1h1", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL)
        time.sleep(0.5)
        p = netns.run(src, ["iperf3", "-c", addr(net, "dc1h1", False), "-t", "8", "-P", str(n), "-J"], check=False)
        srv.wait(timeout=20)
        try:
            bps = json.loads(p)["end"]["sum_received"]["bits_per_second"]
        except (ValueError, KeyError):
            bps = 0
        res[name] = round(bps / 1e6, 1)
        log(f"[tb] capacity {name}: {res[name]} Mbit/s")
    topology.teardown()
    with open(os.path.join(a.out, "capacity.json"), "w") as fh:
        json.dump(res, fh)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", help="the run directory, holding plan.json")
    tt = sub.add_parser("topo-test")
    tt.add_argument("scenario", nargs="?", default="a-rtt-fairness")
    c = sub.add_parser("capacity")
    c.add_argument("out")
    a = ap.parse_args()
    try:
        if a.cmd == "run":
            cmd_run(a)
        elif a.cmd == "topo-test":
            sys.exit(cmd_topo_test(a))
        else:
            cmd_capacity(a)
    except RunError as e:
        log(f"error: {e}")
        sys.exit(2)


if __name__ == "__main__":
    main()
