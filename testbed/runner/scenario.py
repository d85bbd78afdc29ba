"""Scenario files (testbed/scenarios/*.toml): which topology, which CCs, what
traffic, what to sweep. Validated up front: a bad file is one clear error
before anything is built."""

import json
import os
import subprocess
import tomllib

import topology

TESTBED = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


XDCC = os.environ.get("XDCC_BIN", os.path.join(os.path.dirname(TESTBED), "target", "release", "xdcc"))


def _known():
    """`xdcc --json cc known`: the algorithm crate's one CC list, with each
    CC's presets."""
    try:
        out = subprocess.run([XDCC, "--json", "cc", "known"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise RuntimeError(f"the CC list comes from `{XDCC} --json cc known` ({e}): build it with "
                           "`cargo build --release -p xdcc` or set XDCC_BIN") from e
    return json.loads(out)


KNOWN_CCS = _known()
XDCC_CCS = tuple(c["name"] for c in KNOWN_CCS)
KERNEL_CCS = ("cubic", "bbr", "reno", "vegas")
KNOWN = {
    "description": str, "paper": str, "topology": str, "ccs": list, "duration_s": int,
    "sample_ms": int, "ipv6": bool, "net": dict, "bottleneck": str, "monitor": list, "profiles": dict,
    "tunables": dict, "presets": dict, "variants": dict, "sweep": dict, "long": list, "incast": list, "workload": dict,
    "reroute": str, "events": list, "cross": list,
}
# How the senders choose a WAN path (`reroute`, a sweep key too): the IPv6
# flow label ECMP hashes never changes (single: net.core.txrehash = 0), Linux
# draws a new one after an RTO (rto: txrehash = 1, the kernel's default), or
# the xdcc agent's rerouter moves flows too (agent: PLB + RTO moves).
REROUTE = ("single", "rto", "agent")
EVENT_ACTIONS = ("blackhole", "heal")
VARIANT_KEYS = {"cc": str, "tunables": dict, "profile": str, "preset": str, "description": str}
WORKLOAD_KEYS = {"load": float, "hosts": list, "intra_cdf": str, "inter_cdf": str,
                 "inter_fraction": float, "intra_scale": float, "inter_scale": float, "seed": int,
                 "start_s": int, "stop_s": int}


class ScenarioError(Exception):
    pass


def find(name):
    for p in (name, os.path.join(TESTBED, "scenarios", name + ".toml")):
        if os.path.isfile(p):
            return p
    have = sorted(f[:-5] for f in os.listdir(os.path.join(TESTBED, "scenarios")) if f.endswith(".toml"))
    raise ScenarioError(f"no scenario '{name}' (shipped: {', '.join(have)})")


def load(name, ccs=None, duration_s=None):
    path = find(name)
    try:
        with open(path, "rb") as f:
            s = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: {e}") from None
    try:
        s = normalize(s, ccs, duration_s)
    except (ScenarioError, topology.ConfigError, ValueError) as e:
        raise ScenarioError(f"{path}: {e}") from None
    s["name"] = os.path.basename(path)[:-5]
    s["path"] = path
    return s


def normalize(s, ccs, duration_s):
    if "duration_ms" in s or "queues" in s:
        rate = s.get("net", {}).get("link_rate_gbps") if isinstance(s.get("net"), dict) else None
        raise ScenarioError(
            "a simulator scenario (xdcc-sim's format: duration_ms, [[queues]], [[flows]])"
            + (f" at {rate:g} Gbit/s" if isinstance(rate, (int, float)) else "")
            + ": the VM forwards a few hundred Mbit/s at most (testbed/run.sh --capacity), so the testbed runs "
            "the papers' settings scaled down 20x, in testbed/scenarios/ (testbed/run.sh --list); "
            "run this file with `xdcc-sim run FILE`")
    for k, v in s.items():
        if k not in KNOWN:
            raise ScenarioError(f"unknown key '{k}' (known: {', '.join(sorted(KNOWN))})")
        if not isinstance(v, KNOWN[k]):
            raise ScenarioError(f"'{k}' must be a {KNOWN[k].__name__}")
    s.setdefault("description", "")
    s.setdefault("paper", "")
    s.setdefault("topology", "two-dc")
    s.setdefault("ccs", ["uno", "gemini", "cubic", "dctcp"])
    s.setdefault("duration_s", 20)
    s.setdefault("sample_ms", 100)
    s.setdefault("ipv6", False)
    s.setdefault("monitor", [])
    s.setdefault("profiles", {})
    s.setdefault("tunables", {})
    s.setdefault("presets", {})
    s.setdefault("variants", {})
    s.setdefault("long", [])
    s.setdefault("incast", [])
    s.setdefault("reroute", "rto")
    s.setdefault("events", [])
    s.setdefault("cross", [])
    if ccs:
        s["ccs"] = ccs
    if duration_s:
        s["duration_s"] = duration_s
    for name, v in s["variants"].items():
        where = f"[variants.{name}]"
        if name in XDCC_CCS + KERNEL_CCS:
            raise ScenarioError(f"{where}: a variant needs its own name, not a CC's")
        if not isinstance(v, dict) or set(v) - set(VARIANT_KEYS) or "cc" not in v:
            raise ScenarioError(f"{where}: needs cc = \"<xdcc CC>\" and may set {', '.join(sorted(VARIANT_KEYS))}")
        for k, ty in VARIANT_KEYS.items():
            if k in v and not isinstance(v[k], ty):
                raise ScenarioError(f"{where}: '{k}' must be a {ty.__name__}")
        if v["cc"] not in XDCC_CCS:
            raise ScenarioError(f"{where}: cc = '{v['cc']}' is not an xdcc CC ({', '.join(XDCC_CCS)})")
        if "profile" in v:
            topology.profile_path(v["profile"])
    for cc in s["ccs"]:
        if cc not in XDCC_CCS + KERNEL_CCS + tuple(s["variants"]):
            raise ScenarioError(f"unknown CC '{cc}' (xdcc: {', '.join(XDCC_CCS)}; kernel: {', '.join(KERNEL_CCS)}"
                                + (f"; variants: {', '.join(s['variants'])}" if s["variants"] else "") + ")")
    if not 1 <= s["duration_s"] <= 3600:
        raise ScenarioError(f"duration_s = {s['duration_s']} is out of range [1, 3600]")
    if not 20 <= s["sample_ms"] <= 10_000:
        raise ScenarioError(f"sample_ms = {s['sample_ms']} is out of range [20, 10000]")
    topo_path = os.path.join(TESTBED, "topologies", s["topology"] + ".toml")
    if not os.path.isfile(topo_path):
        raise ScenarioError(f"no topology '{s['topology']}' in testbed/topologies/")
    s["topology_path"] = topo_path
    base = topology.load(topo_path, s.get("net"))
    sweep = s.get("sweep")
    if sweep is not None:
        if set(sweep) != {"key", "values"} or not sweep["values"]:
            raise ScenarioError("[sweep] needs key = \"section.name\" and a non-empty values list")
    if sweep is not None and sweep["key"] == "reroute":
        bad = [v for v in sweep["values"] if v not in REROUTE]
        if bad:
            raise ScenarioError(f"[sweep] reroute: {bad[0]!r} is not one of {', '.join(REROUTE)}")
    if s["reroute"] not in REROUTE:
        raise ScenarioError(f"reroute = {s['reroute']!r} is not one of {', '.join(REROUTE)}")
    if sweep is not None and sweep["key"].startswith("workload."):
        if "workload" not in s or sweep["key"][9:] not in WORKLOAD_KEYS:
            raise ScenarioError(f"[sweep] key '{sweep['key']}': no such [workload] setting")
    for v in sweep_values(s):
        t, sv = at_point(s, base, v)
        topology.validate(t)
        check_traffic(sv, t)
    for cc, prof in s["profiles"].items():
        topology.profile_path(prof)
    for cc, name in s["presets"].items():
        check_preset(cc, name, "[presets]")
    for name, v in s["variants"].items():
        if "preset" in v:
            check_preset(v["cc"], v["preset"], f"[variants.{name}]")
    for cc, kv in s["tunables"].items():
        if cc not in XDCC_CCS or not isinstance(kv, dict):
            raise ScenarioError(f"[tunables.{cc}]: tunables exist for {', '.join(XDCC_CCS)} only")
    return s


# {cc: [preset names]}, as `xdcc tunable preset CC` lists them.
PRESETS = {c["name"]: c["presets"] for c in KNOWN_CCS if c["presets"]}


def check_preset(cc, name, where):
    if not isinstance(name, str) or name not in PRESETS.get(cc, []):
        have = ", ".join(f"{c}: {', '.join(n)}" for c, n in sorted(PRESETS.items()))
        raise ScenarioError(f"{where}: no preset '{name}' for {cc} (presets: {have})")


def sweep_values(s):
    """The topology overrides of each sweep point ([{}] without a sweep)."""
    sw = s.get("sweep")
    if not sw:
        return [{}]
    sec, _, key = sw["key"].partition(".")
    out = []
    for v in sw["values"]:
        out.append({sec: {key: v}} if key else {sec: v})
    return out


def at_point(s, base_topology, over):
    """(topology, scenario) at one sweep point: workload.* keys and reroute
    change the scenario, everything else the topology."""
    if "reroute" in over:
        return base_topology, dict(s, reroute=over["reroute"])
    if "workload" in over:
        sv = dict(s, workload=dict(s["workload"], **over["workload"]))
        return base_topology, sv
    return (topology.merge(base_topology, over) if over else base_topology), s


def check_traffic(s, t):
    names = set(topology.hosts(t))
    dur = s["duration_s"]

    def host(h, where):
        if h not in names:
            raise ScenarioError(f"{where}: no host '{h}' in the topology (hosts: dc1h1..dc2h{t['hosts_per_dc']})")

    for i, f in enumerate(s["long"]):
        where = f"[[long]] #{i + 1}"
        extra = set(f) - {"from", "to", "start_s", "start_step_s", "stop_s", "flows"}
        if extra:
            raise ScenarioError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
        if not f.get("from") or "to" not in f:
            raise ScenarioError(f"{where}: needs from = [hosts] and to = host")
        for h in f["from"]:
            host(h, where)
        host(f["to"], where)
        n = f.get("flows", 1)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 64:
            raise ScenarioError(f"{where}: flows (connections from each sender) must be an integer in [1, 64]")
        start, step, stop = f.get("start_s", 0), f.get("start_step_s", 0), f.get("stop_s", dur)
        if not (0 <= start and start + step * (len(f["from"]) - 1) < stop <= dur):
            raise ScenarioError(f"{where}: needs 0 <= start_s < stop_s <= duration_s for every flow")
    for i, f in enumerate(s["incast"]):
        where = f"[[incast]] #{i + 1}"
        extra = set(f) - {"from", "to", "bytes", "at_s"}
        if extra:
            raise ScenarioError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
        for h in f.get("from", []):
            host(h, where)
        host(f.get("to", ""), where)
        if not f.get("from") or not 1 <= f.get("bytes", 0) <= 1 << 32 or not f.get("at_s"):
            raise ScenarioError(f"{where}: needs from, to, bytes (1..4 GiB) and at_s = [times]")
        if any(not 0 <= a < dur for a in f["at_s"]):
            raise ScenarioError(f"{where}: at_s must lie within [0, duration_s)")
    check_wan_events(s, t)
    w = s.get("workload")
    if w is not None:
        for k, v in w.items():
            if k not in WORKLOAD_KEYS:
                raise ScenarioError(f"[workload]: unknown key '{k}' (known: {', '.join(sorted(WORKLOAD_KEYS))})")
            if not isinstance(v, WORKLOAD_KEYS[k]) and not (WORKLOAD_KEYS[k] is float and isinstance(v, int)):
                raise ScenarioError(f"[workload].{k} must be a {WORKLOAD_KEYS[k].__name__}")
        if not 0 < w.get("load", 0) <= 1:
            raise ScenarioError("[workload].load must be in (0, 1]")
        if not 0 <= w.get("inter_fraction", 0.2) <= 1:
            raise ScenarioError("[workload].inter_fraction must be in [0, 1]")
        for h in w.get("hosts", []):
            host(h, "[workload]")
        for k in ("intra_cdf", "inter_cdf"):
            if k in w and not os.path.isfile(workload_path(w[k])):
                raise ScenarioError(f"[workload].{k}: no file '{w[k]}' in testbed/workloads/")


def wan_link(name, t, where):
    """K of a WAN path named wanK."""
    k = name[3:] if isinstance(name, str) and name.startswith("wan") else ""
    if not k.isdigit() or not 0 <= int(k) < t["wan_paths"]:
        raise ScenarioError(f"{where}: link {name!r} is not a WAN path (wan0..wan{t['wan_paths'] - 1})")
    return int(k)


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_wan_events(s, t):
    """[[events]] (a WAN path black-holed or healed at at_s: dc2br drops
    everything it sends on it, routes unchanged) and [[cross]] (flows from
    dc2br to dc1br's address on one WAN path, which only that path reaches)."""
    dur = s["duration_s"]
    dead = set()
    for i, e in enumerate(sorted(s["events"], key=lambda e: e.get("at_s", 0) if isinstance(e, dict) else 0)):
        where = f"[[events]] at_s = {e.get('at_s')}" if isinstance(e, dict) else f"[[events]] #{i + 1}"
        if not isinstance(e, dict) or set(e) != {"at_s", "link", "action"}:
            raise ScenarioError(f"{where}: needs exactly at_s, link = \"wanK\" and action = \"blackhole\" or \"heal\"")
        if not number(e["at_s"]) or not 0 <= e["at_s"] < dur:
            raise ScenarioError(f"{where}: at_s must lie within [0, duration_s)")
        k = wan_link(e["link"], t, where)
        if e["action"] not in EVENT_ACTIONS:
            raise ScenarioError(f"{where}: action {e['action']!r} is not one of {', '.join(EVENT_ACTIONS)}")
        if (e["action"] == "heal") != (k in dead):
            raise ScenarioError(f"{where}: {e['link']} is " + ("already black-holed" if k in dead else "not black-holed"))
        (dead.add if e["action"] == "blackhole" else dead.discard)(k)
    if s["events"]:
        with open(topology.profile_path(t["wan"]["border_profile"]), "rb") as f:
            wan = tomllib.load(f).get("wan", {})
        if wan.get("loss_ppm") or "gilbert_elliott" in wan:
            raise ScenarioError("[[events]]: a black hole replaces the WAN port's netem loss; "
                                f"profile {t['wan']['border_profile']} has its own loss")
    for i, c in enumerate(s["cross"]):
        where = f"[[cross]] #{i + 1}"
        extra = set(c) - {"link", "start_s", "stop_s", "flows", "cc"} if isinstance(c, dict) else {"?"}
        if extra:
            raise ScenarioError(f"{where}: unknown key(s) {', '.join(sorted(extra))} (link, start_s, stop_s, flows, cc)")
        wan_link(c.get("link"), t, where)
        start, stop = c.get("start_s", 0), c.get("stop_s", dur)
        if not (number(start) and number(stop) and 0 <= start < stop <= dur):
            raise ScenarioError(f"{where}: needs 0 <= start_s < stop_s <= duration_s")
        n = c.get("flows", 1)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 64:
            raise ScenarioError(f"{where}: flows must be an integer in [1, 64]")
        if c.get("cc") != s["cross"][0].get("cc"):
            raise ScenarioError(f"{where}: all cross traffic runs one CC (its receiver's default, for ECN)")
        if "cc" in c and c["cc"] not in XDCC_CCS + KERNEL_CCS:
            raise ScenarioError(f"{where}: unknown CC {c['cc']!r} (xdcc: {', '.join(XDCC_CCS)}; kernel: {', '.join(KERNEL_CCS)})")


def workload_path(name):
    return name if os.path.isabs(name) else os.path.join(TESTBED, "workloads", name)
