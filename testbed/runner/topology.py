"""The 2-DC testbed's network in namespaces: the executor of a plan's
`network` (`xdcc-sim plan`, testbed/sim/src/testbed_plan.rs, where every
port, profile, link, route and marker is derived and documented):

    dc1h1..dc1hN ── dc1sw ── dc1br ══ WAN (1 to 4 links) ══ dc2br ── dc2sw ── dc2h1..dc2hN

build() creates the namespaces, runs the plan's `ip` lines, sets each
host NIC's netem, writes and applies every port's profile (`xdcc switch
apply`) and starts the plan's eBPF markers (`xdcc mark-phantom`,
`xdcc mark-amrt`) until teardown(); the plan names every address it sets
(`network.addresses`). `blackhole()` makes dc2br silently drop
everything it sends on one WAN path (netem loss 100 %, routes unchanged)
and `heal()` undoes it.
"""

import os
import subprocess
import socket
import time
import tomllib

import netns

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build(net, workdir, xdcc_bin, log=print):
    """Create a plan's network: every namespace, link, address, route,
    qdisc and marker; returns the applied ports. Existing testbed
    namespaces are removed first; the ports' profiles are written to
    workdir, so the run records exactly what was applied."""
    teardown()
    for ns in net["hosts"] + net["routers"]:
        netns.add(ns)
        # No duplicate address detection on the new links: while a router's
        # link-local address is tentative (~2 s) Linux sends no neighbour
        # solicitation for the IPv6 packets it forwards, and they are lost.
        netns.sysctl(ns, "net.ipv6.conf.all.accept_dad", 0)
        netns.sysctl(ns, "net.ipv6.conf.default.accept_dad", 0)
    for ns in net["routers"]:
        netns.sysctl(ns, "net.ipv4.ip_forward", 1)
        netns.sysctl(ns, "net.ipv6.conf.all.forwarding", 1)
        # ECMP over the WAN paths: hash the IPv6 flow label (policy 0 = L3
        # with the flow label), so a new path id (label) picks a new path.
        netns.sysctl(ns, "net.ipv6.fib_multipath_hash_policy", 0)
    netns.batch(None, "ip", net["veths"])
    for ns, lines in net["ip"].items():
        netns.batch(ns, "ip", lines)
    if not net["offloads"]:
        for ns in net["hosts"] + net["routers"]:
            for dev in interfaces(ns):
                netns.run(ns, ["ethtool", "-K", dev, "gso", "off", "tso", "off", "gro", "off"], check=False)
    nic = net["host_nic"]
    for h in net["hosts"]:
        netns.run(h, ["tc", "qdisc", "replace", "dev", "eth0", "root", "netem", "delay", f"{nic['delay_us']}us",
                      "rate", f"{nic['rate_mbit']}mbit", "limit", str(nic["limit_pkts"])])
    applied = []
    for p in net["ports"]:
        path = os.path.join(workdir, p["file"])
        with open(path, "w") as f:
            f.write(p["text"])
        netns.run(p["ns"], [xdcc_bin, "switch", "apply", path, p["dev"]])
        applied.append({k: p[k] for k in ("ns", "dev", "profile", "rate_mbit", "delay_us", "phantom", "amrt", "wan_marker")})
    for m in net["markers"]:
        profile = ["--profile", os.path.join(workdir, m["profile"])] if m["profile"] else []
        start_marker(workdir, m["ns"], m["dev"], [xdcc_bin, m["args"][0]] + profile + m["args"][1:], m["ready"])
    wait_markers()
    log(f"[tb] topology: {len(net['hosts'])} hosts, {net['wan_paths']} WAN path(s), "
        f"intra RTT {net['intra_rtt_us']} us, inter RTT {net['inter_rtt_us']} us, "
        f"DC {net['dc_rate_mbit']} Mbit/s, WAN {net['wan_rate_mbit']} Mbit/s")
    return applied


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


def start_marker(workdir, ns, dev, argv, ready):
    """An eBPF marker process in ns; its output (the ready line, then its
    counters as JSON at exit) goes to workdir/<subcommand>-<ns>-<dev>.log."""
    log_path = os.path.join(workdir, f"{argv[1]}-{ns}-{dev}.log")
    with open(log_path, "w") as out:
        m = netns.popen(ns, argv, stdout=out, stderr=subprocess.STDOUT)
    m.log_path, m.ready = log_path, ready
    _markers.append(m)


def wait_markers(timeout_s=120):
    """Until every marker has attached (its ready line; aya's warnings may
    come first, e.g. when a kernel refuses the object's BTF)."""
    deadline = time.monotonic() + timeout_s
    for m in _markers:
        while True:
            with open(m.log_path) as f:
                if any(line.startswith(m.ready) for line in f):
                    break
            if m.poll() is not None or time.monotonic() > deadline:
                with open(m.log_path) as f:
                    raise RuntimeError(f"marker {' '.join(m.args[-4:])} did not start: {f.read().strip()}")
            time.sleep(0.2)


def teardown():
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


def verify(net):
    """What a test checks after build(net): (ok, description) pairs."""
    res = []

    def check(desc, ok):
        res.append((bool(ok), desc))

    have = set(netns.existing())
    names = net["hosts"] + net["routers"]
    check(f"all {len(names)} namespaces exist", all(ns in have for ns in names))
    nic = net["host_nic"]
    for h in net["hosts"]:
        a4 = netns.run(h, ["ip", "-4", "-o", "addr", "show", "dev", "eth0"], check=False)
        a6 = netns.run(h, ["ip", "-6", "-o", "addr", "show", "dev", "eth0"], check=False)
        v4, v6 = net["addresses"][h]["ipv4"], net["addresses"][h]["ipv6"]
        check(f"{h} has {v4} and {v6}", f" {v4}/24 " in a4 and f" {v6}/64 " in a6)
        r = netns.run(h, ["ip", "route", "show", "default"], check=False)
        check(f"{h} delays ACKs" if net["delayed_acks"] else f"{h} ACKs every segment (route quickack 1)",
              ("quickack 1" in r) != net["delayed_acks"])
        q = netns.run(h, ["tc", "qdisc", "show", "dev", "eth0"], check=False)
        check(f"{h} eth0 has netem {nic['delay_us']}us at {nic['rate_mbit']}Mbit",
              "netem" in q and f"rate {nic['rate_mbit']}Mbit" in q)
    for p in net["ports"]:
        ns, dev, prof, rate, delay = p["ns"], p["dev"], p["profile"], p["rate_mbit"], p["delay_us"]
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
        # (the route that takes the other DC's first host)
        r = netns.run(br, ["ip", "route", "show", "match", net["addresses"][f"dc{other}h1"]["ipv4"]], check=False)
        n = r.count("nexthop") if net["wan_paths"] > 1 else r.count("via")
        check(f"{br} routes DC{other} over {net['wan_paths']} WAN path(s)", n == net["wan_paths"])
    return res
