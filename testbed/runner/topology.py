"""The 2-DC topology (gemini-ton §IV-A) in network namespaces.

    dc1h1..dc1hN ── dc1sw ── dc1br ══ WAN (1 to 4 links) ══ dc2br ── dc2sw ── dc2h1..dc2hN

Hosts are namespaces with one NIC (eth0); a DC switch is a routing namespace
with one port per host (h1..hN) and an uplink (up); a border router has a
DC-facing port (dc) and one port per WAN path (wan0, wan1, ...). Every port that
can queue gets a switch-config profile (`xdcc switch apply`), so a scenario
sets rate, buffer and marking exactly as a real switch would:

    host NIC eth0         netem: half the intra-DC base RTT, at the DC rate
    switch port hI, uplink   the DC switch profile (ECN marking), DC / uplink rate;
                          dc.k_pkts > 0 replaces its marking by a step at K packets
    border port dc        dc-fifo at the uplink rate
    border port wanK      the WAN profile with delay (ratio-1)/2 x intra RTT;
                          netem cannot mark, so a WAN profile's step or RED
                          marking runs as an eBPF marker on a virtual queue
                          that mirrors the port (`xdcc mark-phantom` draining
                          at 100 %, as the host backend marks)

so that intra-DC RTT = intra_rtt_us and inter-DC RTT = ratio x intra_rtt_us.

Markers that a profile asks for run as `xdcc` eBPF processes until teardown:
a [phantom] section starts `xdcc mark-phantom` on the port itself; an [amrt]
section (amrt-icpp20's anti-ECN marks) starts `xdcc mark-amrt` on the ingress
of the port's peer, where packets arrive at the port's dequeue times (eq. 2).
When the DC switch profile has [amrt], the host NICs are AMRT's first hop
too: a first-hop marker (CE = spare, the sender "starts with spare") on each
switch port's ingress from its host, at the DC rate, and the ports'
transit markers AND their verdict into it (eq. 3). Ports without [amrt]
(the border's dc-fifo and WAN ports) leave CE as it is.
Addresses: host I of DC D is 10.D.I.2/24 and fd00:D:I::2/64 (switch side .1);
switch-border 10.D.250.0/24; WAN path K 10.200.K.0/24 (dc1br .1, dc2br .2)
and the same in fd00::/8. Several WAN paths form an ECMP route that hashes
the IPv6 flow label (a new label, from an RTO or the agent's rerouter, picks
a new path). `blackhole()` makes dc2br silently drop everything it sends on
one of them (netem loss 100 %, routes unchanged) and `heal()` undoes it.
"""

import copy
import os
import subprocess
import socket
import time
import tomllib

import netns

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILE_DIR = os.path.join(ROOT, "switch-config", "profiles")

DEFAULTS = {
    "description": "",
    "hosts_per_dc": 4,
    "wan_paths": 1,
    "gso": False,
    "delayed_acks": True,
    "time_scale": 10,
    "dc": {"rate_mbit": 100, "intra_rtt_us": 2000, "uplink_rate_mbit": 400,
           "switch_profile": "dc-gemini", "host_buffer_pkts": 1000, "k_pkts": 0},
    "wan": {"rate_mbit": 400, "inter_intra_ratio": 10, "border_profile": "wan-border"},
}


class ConfigError(Exception):
    pass


def merge(base, over, where=""):
    """Deep-merge `over` into a copy of `base`; unknown keys are errors."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if k not in base:
            raise ConfigError(f"unknown key '{where}{k}' (known: {', '.join(sorted(base))})")
        if isinstance(base[k], dict):
            if not isinstance(v, dict):
                raise ConfigError(f"'{where}{k}' must be a table")
            out[k] = merge(base[k], v, f"{where}{k}.")
        else:
            # (ints where ints go; bool is an int to Python but not here)
            if type(v) is not type(base[k]) and not (
                    type(base[k]) is int and isinstance(v, int) and not isinstance(v, bool)):
                raise ConfigError(f"'{where}{k}' must be a {type(base[k]).__name__}, not {v!r}")
            out[k] = v
    return out


def load(path, overrides=None):
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: {e}") from None
    t = merge(DEFAULTS, raw)
    if overrides:
        t = merge(t, overrides)
    validate(t)
    return t


def validate(t):
    def rng(name, v, lo, hi):
        if not lo <= v <= hi:
            raise ConfigError(f"{name} = {v} is out of range [{lo}, {hi}]")
    rng("hosts_per_dc", t["hosts_per_dc"], 1, 32)
    rng("time_scale", t["time_scale"], 1, 1000)
    rng("wan_paths", t["wan_paths"], 1, 4)
    rng("dc.rate_mbit", t["dc"]["rate_mbit"], 1, 100_000)
    rng("dc.uplink_rate_mbit", t["dc"]["uplink_rate_mbit"], 1, 100_000)
    rng("dc.intra_rtt_us", t["dc"]["intra_rtt_us"], 20, 1_000_000)
    rng("dc.host_buffer_pkts", t["dc"]["host_buffer_pkts"], 10, 100_000)
    rng("dc.k_pkts", t["dc"]["k_pkts"], 0, 100_000)
    rng("wan.rate_mbit", t["wan"]["rate_mbit"], 1, 100_000)
    rng("wan.inter_intra_ratio", t["wan"]["inter_intra_ratio"], 1, 1000)
    for key in ("dc.switch_profile", "wan.border_profile"):
        sec, name = key.split(".")
        profile_path(t[sec][name])


def profile_path(name):
    p = name if name.endswith(".toml") else os.path.join(PROFILE_DIR, name + ".toml")
    if not os.path.isfile(p):
        raise ConfigError(f"no switch profile '{name}' (shipped: {', '.join(shipped_profiles())})")
    return p


def shipped_profiles():
    return sorted(f[:-5] for f in os.listdir(PROFILE_DIR) if f.endswith(".toml"))


def inter_rtt_us(t):
    return t["dc"]["intra_rtt_us"] * t["wan"]["inter_intra_ratio"]


def host_name(dc, i):
    return f"dc{dc}h{i}"


def hosts(t, dc=None):
    dcs = [dc] if dc else [1, 2]
    return [host_name(d, i) for d in dcs for i in range(1, t["hosts_per_dc"] + 1)]


def namespaces(t):
    return hosts(t) + ["dc1sw", "dc2sw", "dc1br", "dc2br"]


def host_addr(name, v6=False):
    """dc2h3 -> 10.2.3.2 / fd00:2:3::2."""
    d, i = parse_host(name)
    return f"fd00:{d}:{i}::2" if v6 else f"10.{d}.{i}.2"


def parse_host(name):
    try:
        assert name.startswith("dc") and "h" in name
        d, i = name[2:].split("h")
        return int(d), int(i)
    except (AssertionError, ValueError):
        raise ConfigError(f"'{name}' is not a host name (dcDhI, e.g. dc1h2)") from None


def same_dc(a, b):
    return parse_host(a)[0] == parse_host(b)[0]


def _toml(d, prefix=""):
    """Write a profile (tables of scalars) back as TOML."""
    lines, tables = [], []
    for k, v in d.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif isinstance(v, str):
            lines.append(f'{k} = "{v}"')
        elif isinstance(v, bool):
            lines.append(f"{k} = {'true' if v else 'false'}")
        else:
            lines.append(f"{k} = {v}")
    for k, v in tables:
        lines.append(f"[{prefix}{k}]")
        lines.append(_toml(v, f"{prefix}{k}."))
    return "\n".join(lines)


def derive_profile(name, workdir, tag, rate_mbit, delay_us=None, time_scale=1, k_pkts=0):
    """A shipped profile with this port's rate (and WAN delay), written to
    workdir so the run records exactly what was applied.

    time_scale: the testbed emulates the paper's network slowed down by
    this factor (rates / s, delays x s), which keeps every BDP, queue and
    threshold in packets, and so the dynamics in units of RTTs. The
    profiles' per-Gbps buffers and K are therefore evaluated at the paper's
    rate (rate x s) and written as absolute values."""
    with open(profile_path(name), "rb") as f:
        p = tomllib.load(f)
    p["port"]["rate_mbit"] = rate_mbit
    paper_gbps = rate_mbit * time_scale / 1000
    per_gbps = p["port"].pop("buffer_pkts_per_gbps", None)
    if per_gbps is not None:
        p["port"]["buffer_bytes"] = max(1, round(per_gbps * paper_gbps)) * p["port"].get("mtu", 1500)
    if k_pkts:
        # An absolute step-marking threshold (gemini-ton sweeps K in packets).
        p["marking"] = {"kind": "step", "k_pkts_per_gbps": max(1, round(k_pkts * 1000 / rate_mbit))}
    elif p.get("marking", {}).get("kind") == "step":
        p["marking"]["k_pkts_per_gbps"] *= time_scale
    ph = p.get("phantom")
    if ph and "size_pkts_per_gbps" in ph:
        ph["size_bytes"] = max(1, round(ph.pop("size_pkts_per_gbps") * paper_gbps)) * p["port"].get("mtu", 1500)
    if delay_us is not None:
        p.setdefault("wan", {})["delay_us"] = delay_us
    path = os.path.join(workdir, f"profile-{tag}.toml")
    with open(path, "w") as f:
        f.write(_toml(p) + "\n")
    return path


def step_k_pkts(t):
    """The DC switch ports' step-marking threshold K in packets (None for
    RED or no marking), as derive_profile() applies it."""
    if t["dc"]["k_pkts"]:
        return t["dc"]["k_pkts"]
    with open(profile_path(t["dc"]["switch_profile"]), "rb") as f:
        m = tomllib.load(f).get("marking", {})
    if m.get("kind") != "step":
        return None
    return max(1, round(m["k_pkts_per_gbps"] * t["dc"]["rate_mbit"] * t["time_scale"] / 1000))


def ports(t):
    """Every queueing port: (namespace, iface, profile name, rate_mbit, delay_us)."""
    n, dc, wan = t["hosts_per_dc"], t["dc"], t["wan"]
    wan_delay = (inter_rtt_us(t) - dc["intra_rtt_us"]) // 2
    out = []
    for d in (1, 2):
        for i in range(1, n + 1):
            out.append((f"dc{d}sw", f"h{i}", dc["switch_profile"], dc["rate_mbit"], None))
        out.append((f"dc{d}sw", "uplink", dc["switch_profile"], dc["uplink_rate_mbit"], None))
        out.append((f"dc{d}br", "dc", "dc-fifo", dc["uplink_rate_mbit"], None))
        for k in range(t["wan_paths"]):
            out.append((f"dc{d}br", f"wan{k}", wan["border_profile"], wan["rate_mbit"], wan_delay))
    return out


def peer(t, ns, dev):
    """The (namespace, interface) at the other end of a port's veth."""
    d = ns[2]
    if ns.endswith("sw"):
        return (host_name(int(d), int(dev[1:])), "eth0") if dev.startswith("h") else (f"dc{d}br", "dc")
    if dev == "dc":
        return f"dc{d}sw", "uplink"
    return f"dc{3 - int(d)}br", dev


def link_lines(t):
    """(namespace, ip -batch lines) to create links, addresses and routes."""
    n = t["hosts_per_dc"]
    # delayed_acks = false: the hosts ACK every segment (the route's
    # quickack), as the simulator's receivers (and htsim's) do.
    quickack = "" if t["delayed_acks"] else " quickack 1"
    cmds = {ns: [] for ns in namespaces(t)}
    root = []  # veth pairs are created from the first namespace of each pair

    def veth(ns_a, a, ns_b, b):
        root.append(f"link add {a} netns {ns_a} type veth peer name {b} netns {ns_b}")

    for d in (1, 2):
        sw, br = f"dc{d}sw", f"dc{d}br"
        for i in range(1, n + 1):
            h = host_name(d, i)
            veth(h, "eth0", sw, f"h{i}")
            cmds[h] += [f"addr add 10.{d}.{i}.2/24 dev eth0",
                        f"addr add fd00:{d}:{i}::2/64 dev eth0 nodad",
                        "link set lo up", "link set eth0 up",
                        f"route add default via 10.{d}.{i}.1" + quickack,
                        f"route add ::/0 via fd00:{d}:{i}::1" + quickack]
            cmds[sw] += [f"addr add 10.{d}.{i}.1/24 dev h{i}",
                         f"addr add fd00:{d}:{i}::1/64 dev h{i} nodad", f"link set h{i} up"]
        veth(sw, "uplink", br, "dc")
        cmds[sw] += [f"addr add 10.{d}.250.1/24 dev uplink", f"addr add fd00:{d}:250::1/64 dev uplink nodad",
                     "link set uplink up", "link set lo up",
                     f"route add default via 10.{d}.250.2", f"route add ::/0 via fd00:{d}:250::2"]
        cmds[br] += [f"addr add 10.{d}.250.2/24 dev dc", f"addr add fd00:{d}:250::2/64 dev dc nodad",
                     "link set dc up", "link set lo up",
                     f"route add 10.{d}.0.0/16 via 10.{d}.250.1",
                     f"route add fd00:{d}::/32 via fd00:{d}:250::1"]
    for k in range(t["wan_paths"]):
        veth("dc1br", f"wan{k}", "dc2br", f"wan{k}")
        for d in (1, 2):
            cmds[f"dc{d}br"] += [f"addr add 10.200.{k}.{d}/24 dev wan{k}",
                                 f"addr add fd00:200:{k}::{d}/64 dev wan{k} nodad", f"link set wan{k} up"]
    for d, other in ((1, 2), (2, 1)):
        hops4 = [f"10.200.{k}.{other}" for k in range(t["wan_paths"])]
        hops6 = [f"fd00:200:{k}::{other}" for k in range(t["wan_paths"])]
        if len(hops4) == 1:
            cmds[f"dc{d}br"] += [f"route add 10.{other}.0.0/16 via {hops4[0]}",
                                 f"route add fd00:{other}::/32 via {hops6[0]}"]
        else:
            cmds[f"dc{d}br"] += [
                f"route add 10.{other}.0.0/16 " + " ".join(f"nexthop via {h}" for h in hops4),
                f"route add fd00:{other}::/32 " + " ".join(f"nexthop via {h}" for h in hops6)]
    return root, cmds


def build(t, workdir, xdcc_bin, log=print):
    """Create every namespace, link, address, route and qdisc; returns the
    list of applied ports. Existing testbed namespaces are removed first."""
    teardown(t)
    for ns in namespaces(t):
        netns.add(ns)
    for ns in ("dc1sw", "dc2sw", "dc1br", "dc2br"):
        netns.sysctl(ns, "net.ipv4.ip_forward", 1)
        netns.sysctl(ns, "net.ipv6.conf.all.forwarding", 1)
        # ECMP over the WAN paths: hash the IPv6 flow label (policy 0 = L3
        # with the flow label), so a new path id (label) picks a new path.
        netns.sysctl(ns, "net.ipv6.fib_multipath_hash_policy", 0)
    root, cmds = link_lines(t)
    netns.batch(None, "ip", root)
    for ns, lines in cmds.items():
        netns.batch(ns, "ip", lines)
    if not t["gso"]:
        # Queues count real packets (ECN thresholds are in packets), as on
        # a switch: no GSO/TSO/GRO super-packets on any port.
        for ns in namespaces(t):
            for dev in interfaces(ns):
                netns.run(ns, ["ethtool", "-K", dev, "gso", "off", "tso", "off", "gro", "off"], check=False)
    half = t["dc"]["intra_rtt_us"] // 2
    for h in hosts(t):
        netns.run(h, ["tc", "qdisc", "replace", "dev", "eth0", "root", "netem", "delay", f"{half}us",
                      "rate", f"{t['dc']['rate_mbit']}mbit", "limit", str(t["dc"]["host_buffer_pkts"])])
    applied, paths, wan_marks = [], {}, {}
    for ns, dev, prof, rate, delay in ports(t):
        k = t["dc"]["k_pkts"] if prof == t["dc"]["switch_profile"] else 0
        path = derive_profile(prof, workdir, f"{ns}-{dev}", rate, delay, t["time_scale"], k)
        if delay is not None:
            wan_marks[(ns, dev)] = wan_marker(path)
        netns.run(ns, [xdcc_bin, "switch", "apply", path, dev])
        paths[(ns, dev)] = path
        sections = profile_sections(path)
        applied.append({"ns": ns, "dev": dev, "profile": prof, "rate_mbit": rate, "delay_us": delay,
                        "phantom": "phantom" in sections, "amrt": "amrt" in sections,
                        "wan_marker": wan_marks.get((ns, dev))})
    for ns, dev, argv, ready in markers(t, paths, wan_marks):
        start_marker(workdir, ns, dev, [xdcc_bin] + argv, ready)
    wait_markers()
    log(f"[tb] topology: {len(hosts(t))} hosts, {t['wan_paths']} WAN path(s), "
        f"intra RTT {t['dc']['intra_rtt_us']} us, inter RTT {inter_rtt_us(t)} us, "
        f"DC {t['dc']['rate_mbit']} Mbit/s, WAN {t['wan']['rate_mbit']} Mbit/s")
    return applied


def wan_marker(path):
    """A WAN port's marking as an eBPF marker: netem (its delay line) cannot
    mark, so the derived profile's step or RED marking is taken out of the
    file (`xdcc switch apply` refuses marking beside [wan]) and returned as
    a virtual queue draining at the line rate that marks as the port would
    (as the host backend's plans mark: testbed/sim/src/plan.rs): a step at K
    is a queue of 10 K marking from 10 to 11 % of it, RED its buffer marking
    from min to max. None for a port without marking."""
    with open(path, "rb") as f:
        p = tomllib.load(f)
    m = p.get("marking", {"kind": "none"})
    if m["kind"] == "none":
        return None
    mtu, rate = p["port"].get("mtu", 1500), p["port"]["rate_mbit"]
    if m["kind"] == "step":
        k = max(1, m["k_pkts_per_gbps"] * rate // 1000) * mtu
        mark = {"rate_mbit": rate, "drain_pct": 100, "size_bytes": 10 * k, "kmin_pct": 10, "kmax_pct": 11}
    else:
        mark = {"rate_mbit": rate, "drain_pct": 100, "size_bytes": p["port"]["buffer_bytes"],
                "kmin_pct": m["min_pct"], "kmax_pct": m["max_pct"]}
    p["marking"] = {"kind": "none"}
    with open(path, "w") as f:
        f.write(_toml(p) + "\n")
    return mark


def markers(t, paths, wan_marks=None):
    """The marker processes the ports' profiles ask for: (namespace, iface,
    xdcc arguments, the line it prints once attached). paths maps each
    port (ns, dev) of ports(t) to its derived profile file, wan_marks WAN
    ports to their marker's settings (wan_marker())."""
    out = []
    for (ns, dev), m in (wan_marks or {}).items():
        if m:
            out.append((ns, dev, ["mark-phantom", "--iface", dev] + [a for k, v in m.items()
                                                                     for a in (f"--{k.replace('_', '-')}", str(v))],
                        "phantom queue on"))
    for (ns, dev), path in paths.items():
        sections = profile_sections(path)
        if "phantom" in sections:
            # Uno's phantom queue counts the port's own departures.
            out.append((ns, dev, ["mark-phantom", "--profile", path, "--iface", dev], "phantom queue on"))
        if "amrt" in sections:
            pns, pdev = peer(t, ns, dev)
            out.append((pns, pdev, ["mark-amrt", "--profile", path, "--iface", pdev], "AMRT anti-ECN marking on"))
    if "amrt" in profile_sections(profile_path(t["dc"]["switch_profile"])):
        for h in hosts(t):
            d, i = parse_host(h)
            out.append((f"dc{d}sw", f"h{i}", ["mark-amrt", "--iface", f"h{i}", "--rate-mbit", str(t["dc"]["rate_mbit"])],
                        "AMRT anti-ECN marking on"))
    return out


def _wan_leaf(workdir, k, loss_pct):
    """tc arguments that set dc2br:wanK's netem leaf with loss_pct % loss,
    keeping the delay and limit of the profile build() derived for it into
    workdir: `change` keeps the qdisc and its counters."""
    with open(os.path.join(workdir, f"profile-dc2br-wan{k}.toml"), "rb") as f:
        p = tomllib.load(f)
    pkts = max(1, p["port"]["buffer_bytes"] // p["port"].get("mtu", 1500))
    return ["qdisc", "change", "dev", f"wan{k}", "parent", "1:1", "handle", "10:", "netem",
            "delay", f"{p['wan']['delay_us']}us", "limit", str(pkts), "loss", "random", f"{loss_pct}%"]


def blackhole(workdir, k):
    """dc2br silently drops everything it sends on WAN path k (no routing
    update: the flows hashed onto it lose every packet)."""
    netns.run("dc2br", ["tc"] + _wan_leaf(workdir, k, 100))


def heal(workdir, k):
    netns.run("dc2br", ["tc"] + _wan_leaf(workdir, k, 0))


def wan_addr(k, dc, v6=False):
    """dcDbr's address on WAN path k (only that path reaches it)."""
    return f"fd00:200:{k}::{dc}" if v6 else f"10.200.{k}.{dc}"


def tc_time(us):
    """A delay as tc prints it (sprint_time64: three significant digits)."""
    return f"{us / 1000:.3g}ms" if us >= 1000 else f"{us}us"


def interfaces(ns):
    with netns.inside(ns):
        return [name for _, name in socket.if_nameindex() if name != "lo"]


def ifindex(ns, dev):
    with netns.inside(ns):
        return socket.if_nametoindex(dev)


_markers = []  # marker processes of the standing topology (phantom queues, AMRT)


def profile_sections(profile_file):
    with open(profile_file, "rb") as f:
        return set(tomllib.load(f))


def has_phantom(profile_file):
    return "phantom" in profile_sections(profile_file)


def start_marker(workdir, ns, dev, argv, ready):
    """An eBPF marker process in ns; its output (the ready line, then its
    counters as JSON at exit) goes to workdir/<subcommand>-<ns>-<dev>.log."""
    log_path = os.path.join(workdir, f"{argv[1]}-{ns}-{dev}.log")
    with open(log_path, "w") as out:
        m = netns.popen(ns, argv, stdout=out, stderr=subprocess.STDOUT)
    m.log_path, m.ready = log_path, ready
    _markers.append(m)


def wait_markers(timeout_s=120):
    """Until every marker has attached (its first output line)."""
    deadline = time.monotonic() + timeout_s
    for m in _markers:
        while True:
            with open(m.log_path) as f:
                first = f.readline()
            if first.startswith(m.ready):
                break
            if m.poll() is not None or time.monotonic() > deadline:
                with open(m.log_path) as f:
                    raise RuntimeError(f"marker {' '.join(m.args[-4:])} did not start: {f.read().strip()}")
            time.sleep(0.2)


def teardown(t=None):
    while _markers:
        m = _markers.pop()
        m.terminate()  # the marker detaches and prints its counters
        try:
            m.wait(timeout=20)
        except subprocess.TimeoutExpired:
            m.kill()
    for ns in netns.existing():
        if ns.startswith("dc") and (ns[2:3].isdigit()):
            netns.delete(ns)


def verify(t):
    """What a test checks after build(): (ok, description) pairs."""
    res = []

    def check(desc, ok):
        res.append((bool(ok), desc))

    have = set(netns.existing())
    check(f"all {len(namespaces(t))} namespaces exist", all(ns in have for ns in namespaces(t)))
    for h in hosts(t):
        a4 = netns.run(h, ["ip", "-4", "-o", "addr", "show", "dev", "eth0"], check=False)
        a6 = netns.run(h, ["ip", "-6", "-o", "addr", "show", "dev", "eth0"], check=False)
        check(f"{h} has {host_addr(h)} and {host_addr(h, True)}",
              f" {host_addr(h)}/24 " in a4 and f" {host_addr(h, True)}/64 " in a6)
        r = netns.run(h, ["ip", "route", "show", "default"], check=False)
        check(f"{h} delays ACKs" if t["delayed_acks"] else f"{h} ACKs every segment (route quickack 1)",
              ("quickack 1" in r) != t["delayed_acks"])
        q = netns.run(h, ["tc", "qdisc", "show", "dev", "eth0"], check=False)
        check(f"{h} eth0 has netem {t['dc']['intra_rtt_us'] // 2}us at {t['dc']['rate_mbit']}Mbit",
              "netem" in q and f"rate {t['dc']['rate_mbit']}Mbit" in q)
    for ns, dev, prof, rate, delay in ports(t):
        q = netns.run(ns, ["tc", "qdisc", "show", "dev", dev], check=False)
        c = netns.run(ns, ["tc", "class", "show", "dev", dev], check=False)
        want = {"dc-fifo": "bfifo"}.get(prof)
        ok = "qdisc htb 1: root" in q and f"rate {rate}Mbit" in c.replace("Gbit", "000Mbit")
        if want:
            ok = ok and want in q
        if delay:
            ok = ok and "netem" in q and f"delay {tc_time(delay)}" in q
        check(f"{ns}:{dev} has profile {prof} at {rate} Mbit/s" + (f", delay {delay} us" if delay else ""), ok)
    for br, other in (("dc1br", 2), ("dc2br", 1)):
        r = netns.run(br, ["ip", "route", "show", f"10.{other}.0.0/16"], check=False)
        n = r.count("nexthop") if t["wan_paths"] > 1 else r.count("via")
        check(f"{br} routes DC{other} over {t['wan_paths']} WAN path(s)", n == t["wan_paths"])
    return res
