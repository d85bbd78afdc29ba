#!/usr/bin/env python3
"""The host, servers and vm backends: a simulator scenario with one
bottleneck, run on real kernels, with the model's prediction beside it.

  testbed/host/run.py SCENARIO [--cc a,b,...] [--set CC.NAME=VALUE ...] [--out DIR]
                      [--backend host|servers|vm] [--inventory FILE]

SCENARIO is a scenario in the simulator's format (testbed/scenarios/*.toml)
whose every flow crosses its one queue. For each CC (default: the scenario's `cc` list),
`xdcc-sim plan` resolves the file into absolute values (the port's rate and
buffer, its eBPF marker, the tunables) -- the model and this run read one
meaning of the file -- and this script only builds and measures it:

  sender ─┐
          ├─ router ── port: HTB at the rate over a byte FIFO of the buffer ── receiver
  sender ─┘            (+ the plan's xdcc marker on the port)

Backends (the same plan, the same measurement):
- host (default): network namespaces on this machine's kernel, one sender
  namespace per flow group. The base RTT is what the namespaces give (a few
  µs to tens of µs): a scenario whose flows need a longer path is refused,
  as it would need netem, which this kernel lacks.
- servers: real machines over SSH, named by an inventory (TOML; see
  testbed/host/inventory.example.toml): a router whose port toward the
  receiver is the bottleneck, the receiver (the address the senders use),
  and senders (flow group i runs on sender i mod n). This script copies its
  xdcc binaries to every machine, registers the BPF CCs on the machines with
  senders or the receiver, sets their default CC for the run (and puts the
  old one back), builds the port on the router's interface and removes it
  at the end. Time zero is shared by starting every machine's flows the
  same interval after one command (within the SSH round trip, ~ms); the
  port's counters are read on the router. Remote commands run as the
  inventory's SSH user, which must be root. Every machine needs iperf3, tc
  and ping; the router forwards between its interfaces.
- vm: the same namespaces in the qemu guest (testbed/vm/run.sh) on the test
  kernel, with xdcc's CCs as its modules (tcp_<cc>). The guest runs ~20×
  slower than real time (TCG), so it runs the plan of `xdcc-sim plan
  --backend vm`: the scenario 20× slowed (rates ÷ 20, times × 20, bytes as
  they are), the port a switch profile marking on its own queue (the guest
  has sch_red; no GSO/GRO super-packets), netem on the router's ports
  toward the senders (the ACK path) adding what each group's RTT needs
  beyond the guest's own path.
  What it measures in time is divided back by 20. One VM boot runs every CC.

Long flows are iperf3 streams (start and stop at whole seconds), sized flows
go through `xdcc-testbed flowgen` (a completion time each; its server on the
receiver, its clients on the senders). xdcc CCs run as their BPF struct_ops
build (bpf_<cc>), told the scenario's network; the kernel's own CCs (cubic,
bbr) run as they are and have no model.

Prints, per CC, the measured and the model's port utilization, queue mean
and p99, drops and Jain's index of the long flows' mean rates over the
measured interval (and the mean/p99 completion time of sized flows); writes
DIR/host.json and DIR/model.json (default DIR: out/<backend>/<scenario>).
Root for the host and vm backends.
"""
import argparse, json, math, os, shlex, shutil, subprocess, sys, tempfile, threading, time, tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XDCC = os.environ.get("XDCC_BIN", os.path.join(ROOT, "target", "release", "xdcc"))
XDCC_TESTBED = os.environ.get("XDCC_TESTBED_BIN", os.path.join(ROOT, "target", "release", "xdcc-testbed"))
SIM = os.environ.get("XDCC_SIM_BIN", os.path.join(ROOT, "target", "release", "xdcc-sim"))
# A flow may need at most this base RTT: the namespaces' own (no delay emulation).
MAX_RTT_US = 100.0
SAMPLE_S = 0.02
# The senders' RTTs are read every this many port samples.
RTT_EVERY = 5
FLOWGEN_PORT = 6500


class Fail(Exception):
    pass


def sh(*cmd, ns=None, check=True, capture=True):
    full = (["ip", "netns", "exec", ns] if ns else []) + [str(c) for c in cmd]
    r = subprocess.run(full, capture_output=capture, text=True)
    if check and r.returncode != 0:
        raise Fail(f"{' '.join(full)}: {(r.stderr or r.stdout).strip()}")
    return r.stdout if capture else ""


class Backend:
    """Where the plan runs. Roles: ("sender", i) for flow group i, "router"
    (the port's owner), "receiver". A backend maps a role to a machine and
    runs commands there; `machines` are the distinct kernels (one BPF CC
    registration and one default CC each)."""

    xdcc = XDCC
    xdcc_testbed = XDCC_TESTBED

    def __init__(self):
        self.procs = []  # background processes: killed on exit, whatever happened

    def prefix(self, role):
        raise NotImplementedError

    def run(self, role, *cmd, check=True):
        full = self.prefix(role) + [str(c) for c in cmd]
        r = subprocess.run(full, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise Fail(f"{shlex.join(full)}: {(r.stderr or r.stdout).strip()}")
        return r.stdout

    def ok(self, role, *cmd):
        """Whether a command succeeds (its output is not wanted)."""
        try:
            self.run(role, *cmd)
            return True
        except Fail:
            return False

    def popen(self, role, cmd, **kw):
        p = subprocess.Popen(self.prefix(role) + [str(c) for c in cmd], text=True, **kw)
        self.procs.append(p)
        return p

    def put(self, role, path, data, mode=0o644):
        """Writes a file on the role's machine."""
        r = subprocess.run(self.prefix(role) + self.shell(f"cat > {shlex.quote(path)} && chmod {mode:o} {shlex.quote(path)}"),
                           input=data, capture_output=True)
        if r.returncode != 0:
            raise Fail(f"{self.machine_of(role)}: writing {path}: {r.stderr.decode().strip()}")

    def shell(self, script):
        return ["sh", "-c", script]

    def kill_all(self):
        for p in self.procs:
            try:
                p.kill()
                p.wait(timeout=5)
            except Exception:
                pass

    def port_stats(self):
        """(bytes sent by the HTB, backlog bytes, drops) of the port."""
        out = self.run("router", "tc", "-s", "qdisc", "show", "dev", self.port_iface)
        sent = backlog = drops = 0
        cur = None
        for line in out.splitlines():
            w = line.split()
            if line.startswith("qdisc"):
                cur = w[1]
            elif w and w[0] == "Sent" and cur == "htb":
                sent = int(w[1])
            elif w and w[0] == "Sent" and cur in ("bfifo", "red"):
                drops = int(w[6].rstrip(","))
            elif w and w[0] == "backlog" and cur in ("bfifo", "red"):
                v = w[1]
                backlog = int(float(v[:-2]) * 1024) if v.endswith("Kb") else int(float(v[:-2]) * 1048576) if v.endswith("Mb") else int(v.rstrip("b"))
        return sent, backlog, drops

    def build_port(self, port):
        dev = self.port_iface
        if port["profile"]:
            # A kernel with sch_red: the port as a switch port (its profile).
            path = f"{self.scratch}/port.toml"
            self.put("router", path, port["profile"].encode())
            self.run("router", self.xdcc, "switch", "apply", path, dev)
            return
        rate = f"{port['rate_mbit']}mbit"
        self.run("router", "tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1")
        self.run("router", "tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", rate, "ceil", rate,
                 "burst", "64k", "cburst", "64k")
        self.run("router", "tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", "bfifo", "limit", port["buffer_bytes"])

    def base_rtt_us(self):
        out = self.run(("sender", 0), "ping", "-c", "20", "-i", "0.01", "-q", self.receiver_addr)
        avg = [l for l in out.splitlines() if l.startswith("rtt")][0].split("=")[1].split("/")[1]
        return float(avg) * 1000

    def emulate_rtts(self, base):
        """Gives every group its plan's base RTT where the backend can (the
        servers' paths are what they are)."""

    def register(self, machine, cc):
        """Makes xdcc's CC `cc` (its registered name) available on a
        machine; returns what `down` must unload."""
        self.run(machine, self.xdcc, "cc", "load", cc[4:], "--bpf")
        return cc[4:]


class Netns(Backend):
    """Namespaces on this kernel; removed on exit, whatever happened."""

    name = "host"
    port_iface, receiver_iface, receiver_addr = "p0", "e0", "10.78.200.1"
    # µs TCP timestamps on every namespace's route (`xdcc usec-ts`): veth
    # reorders a flow sent from two CPUs, and with ms timestamps Linux never
    # undoes the CC's reaction to the spurious retransmissions at these RTTs
    # (testbed/notes/2026-11-28-usec-timestamps.md). The vm backend's checks
    # are measured without them.
    usec_ts = True

    def __init__(self, plan, tag):
        super().__init__()
        self.plan = plan
        self.groups = [f"xh{tag}-s{i}" for i in range(len(plan["groups"]))]
        self.r, self.d = f"xh{tag}-r", f"xh{tag}-d"
        self.machines = ["local"]  # one kernel
        self.scratch = tempfile.mkdtemp(prefix="xdcc-port-")  # the port's profile

    def prefix(self, role):
        if role == "local":
            return []
        ns = self.r if role == "router" else self.d if role == "receiver" else self.groups[role[1]]
        return ["ip", "netns", "exec", ns]

    def machine_of(self, role):
        return "local"

    def time_zero(self, t0):
        return f"{t0}"  # one CLOCK_MONOTONIC for every namespace

    def up(self):
        for n in self.groups + [self.r, self.d]:
            sh("ip", "netns", "add", n)
            sh("ip", "-n", n, "link", "set", "lo", "up")
            sh("sysctl", "-qw", "net.ipv4.tcp_ecn=1", ns=n)
            # A SYN is not ECT: a port whose RED marks (the vm backend's)
            # drops it above K, and Linux's fallback would then open the
            # flow without ECN, which the model never does. Keep asking.
            sh("sysctl", "-qw", "net.ipv4.tcp_ecn_fallback=0", ns=n)
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=self.r)
        links = [(s, "e0", self.r, f"a{i}", i + 1) for i, s in enumerate(self.groups)] + [(self.d, "e0", self.r, "p0", 200)]
        for a, ia, b, ib, net in links:
            sh("ip", "link", "add", ia, "netns", a, "type", "veth", "peer", ib, "netns", b)
            sh("ip", "-n", a, "addr", "add", f"10.78.{net}.1/24", "dev", ia)
            sh("ip", "-n", b, "addr", "add", f"10.78.{net}.2/24", "dev", ib)
            sh("ip", "-n", a, "link", "set", ia, "up")
            sh("ip", "-n", b, "link", "set", ib, "up")
            sh("ip", "-n", a, "route", "add", "default", "via", f"10.78.{net}.2")
            if self.usec_ts:
                sh(XDCC, "-n", a, "usec-ts", "on", "default4")
        if not self.plan["offloads"]:
            # MTU-sized packets end to end, as the model's (the scenario's
            # `host_offloads = false`; the vm backend's port marks per skb:
            # with GSO one DCTCP flow of realspeed-8to1 sent 12 kB skbs that
            # RED judged as one packet each and took 743 of 1000 Mbit/s).
            devs = [(n, "e0") for n in self.groups + [self.d]] + [(self.r, f"a{i}") for i in range(len(self.groups))] + [(self.r, "p0")]
            for n, dev in devs:
                sh("ethtool", "-K", dev, "gso", "off", "tso", "off", "gro", "off", ns=n)
        self.build_port(self.plan["port"])

    def emulate_rtts(self, base):
        for g in self.plan["groups"]:
            if g["rtt_us"] > max(MAX_RTT_US, 4 * base):
                raise Fail(f"group {g['name']}: base RTT {g['rtt_us']} µs needs delay emulation (netem), which the host backend does not use (this path: {base:.0f} µs)")

    def set_cc(self, plan):
        """The namespaces' default CC, so that the receiver's listeners run
        it: Linux accepts an ECN SYN only at a listener whose CC needs ECN.
        (A namespace may only default to a non-restricted CC, as xdcc's are;
        the kernel's own CCs are set per socket by the senders.)"""
        if not plan["xdcc"]:
            return
        for n in self.groups + [self.d]:
            sh("sysctl", "-qw", f"net.ipv4.tcp_congestion_control={plan['registered']}", ns=n)

    def down(self, loaded):
        self.kill_all()
        for n in self.groups + [self.r, self.d]:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
        shutil.rmtree(self.scratch, ignore_errors=True)
        # After the namespaces: their sockets keep a BPF CC's maps alive.
        for _, c in loaded:
            subprocess.run([XDCC, "cc", "unload", c, "--bpf"], capture_output=True)


class Guest(Netns):
    """The namespaces in the qemu guest (`--backend vm`, inside the VM): the
    test kernel's modules, netem for the RTTs the plan asks beyond the
    guest's own path."""

    name = "vm"
    usec_ts = False

    def emulate_rtts(self, base):
        # On the router's port toward each group's senders: the ACK path,
        # away from the bottleneck and the senders' own qdiscs (TSQ).
        for i, g in enumerate(self.plan["groups"]):
            extra = g["rtt_us"] - base
            if extra >= 1:
                sh("tc", "qdisc", "replace", "dev", f"a{i}", "root", "netem", "delay", f"{extra:.0f}us", "limit", "100000", ns=self.r)
            else:
                print(f"[vm] group {g['name']}: the guest's own path ({base:.0f} µs) is at least the plan's {g['rtt_us']:.0f} µs: no delay added", flush=True)

    def register(self, machine, cc):
        # (xdcc's modules register their CCs non-restricted: any namespace
        # may make them its default.)
        if not os.path.isdir(f"/sys/module/tcp_{cc}"):
            sh("env", f"XDCC_MODULE_DIR={os.path.join(ROOT, 'kmods')}", XDCC, "cc", "load", cc)
        return None  # the guest is thrown away after the run

    def down(self, loaded):
        super().down([])


class Servers(Backend):
    """Machines over SSH, from an inventory (module doc)."""

    name = "servers"
    KEYS = {"ssh_options", "work_dir", "router", "receiver", "senders"}

    def __init__(self, plan, inventory_path, tag):
        super().__init__()
        self.plan = plan
        inv = load_inventory(inventory_path)
        self.opts = inv.get("ssh_options", [])
        self.work = f"{inv.get('work_dir', '/tmp/xdcc-testbed')}/{tag}"
        self.xdcc = f"{self.work}/xdcc"
        self.xdcc_testbed = f"{self.work}/xdcc-testbed"
        self.scratch = self.work
        self.router, self.receiver, self.senders = inv["router"]["ssh"], inv["receiver"]["ssh"], [x["ssh"] for x in inv["senders"]]
        self.port_iface = inv["router"]["port_iface"]
        self.receiver_addr = inv["receiver"]["addr"]
        self.receiver_iface = inv["receiver"].get("iface")
        self.ctl = tempfile.mkdtemp(prefix="xdcc-ssh-")
        self.machines = list(dict.fromkeys(self.senders[: len(plan["groups"])] + [self.receiver]))
        self.everyone = list(dict.fromkeys(self.machines + [self.router]))
        self.old_cc = {}
        self.port_built = False

    def machine_of(self, role):
        if role == "router":
            return self.router
        if role == "receiver":
            return self.receiver
        if isinstance(role, tuple):
            return self.senders[role[1] % len(self.senders)]
        return role  # a machine

    def prefix(self, role):
        return ["ssh", "-o", "BatchMode=yes", "-o", "ControlMaster=auto", "-o", f"ControlPath={self.ctl}/%C",
                "-o", "ControlPersist=300", *self.opts, self.machine_of(role), "--"]

    def run(self, role, *cmd, check=True):
        # ssh runs its arguments through the remote shell: quote them.
        return super().run(role, shlex.join(str(c) for c in cmd), check=check)

    def popen(self, role, cmd, **kw):
        return super().popen(role, [shlex.join(str(c) for c in cmd)], **kw)

    def shell(self, script):
        return [shlex.join(["sh", "-c", script])]

    def time_zero(self, t0):
        # Another machine's clock: "S seconds after you read this" (flowgen's +S).
        return f"+{max(0.0, t0 - time.monotonic()):.6f}"

    def up(self):
        for m in self.everyone:
            out = self.run(m, "sh", "-c", "id -u; for t in iperf3 tc ping; do command -v $t >/dev/null || echo missing:$t; done", check=False)
            if not out.strip():
                raise Fail(f"{m}: cannot run commands over ssh ({shlex.join(self.prefix(m))} ...)")
            if out.split()[0] != "0":
                raise Fail(f"{m}: the inventory's ssh user must be root (uid {out.split()[0]})")
            missing = [w.split(":")[1] for w in out.split() if w.startswith("missing:")]
            if missing:
                raise Fail(f"{m}: needs {', '.join(missing)}")
            # The xdcc binaries, the same everywhere.
            self.run(m, "mkdir", "-p", self.work)
            for local, remote in ((XDCC, self.xdcc), (XDCC_TESTBED, self.xdcc_testbed)):
                with open(local, "rb") as fh:
                    self.put(m, remote, fh.read(), 0o755)
        for m in self.machines:
            self.run(m, "sysctl", "-qw", "net.ipv4.tcp_ecn=1")
        if not self.plan["offloads"]:
            print(f"[servers] note: host_offloads = false: real servers keep their NICs' offloads (ethtool -K <dev> gso off tso off gro off on each, if the run needs them off)", file=sys.stderr)
        self.build_port(self.plan["port"])
        self.port_built = True

    def set_cc(self, plan):
        """The machines' default CC for the run (see Netns.set_cc); the old
        one is put back at the end."""
        if not plan["xdcc"]:
            return
        for m in self.machines:
            self.old_cc.setdefault(m, self.run(m, "sysctl", "-n", "net.ipv4.tcp_congestion_control").strip())
            self.run(m, "sysctl", "-qw", f"net.ipv4.tcp_congestion_control={plan['registered']}")

    def down(self, loaded):
        self.kill_all()
        for m, cc in self.old_cc.items():
            self.run(m, "sysctl", "-qw", f"net.ipv4.tcp_congestion_control={cc}", check=False)
        for m, c in loaded:
            self.run(m, self.xdcc, "cc", "unload", c, "--bpf", check=False)
        if self.port_built:
            self.run("router", "tc", "qdisc", "del", "dev", self.port_iface, "root", check=False)
        for m in self.everyone:
            self.run(m, "rm", "-rf", self.work, check=False)
            subprocess.run(self.prefix(m)[:-2] + ["-O", "exit", m], capture_output=True)
        shutil.rmtree(self.ctl, ignore_errors=True)


def load_inventory(path):
    """The servers backend's inventory, checked: one error naming the key."""
    try:
        with open(path, "rb") as fh:
            inv = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise Fail(f"inventory {path}: {e}")
    def need(d, key, where, kind=str):
        v = d.get(key) if isinstance(d, dict) else None
        if not isinstance(v, kind) or (kind is str and not v):
            raise Fail(f"inventory {path}: {where}{key} must be a {'non-empty string' if kind is str else kind.__name__}")
        return v
    unknown = set(inv) - Servers.KEYS
    if unknown:
        raise Fail(f"inventory {path}: unknown key {sorted(unknown)[0]} (keys: {', '.join(sorted(Servers.KEYS))})")
    if "ssh_options" in inv and not (isinstance(inv["ssh_options"], list) and all(isinstance(o, str) for o in inv["ssh_options"])):
        raise Fail(f"inventory {path}: ssh_options must be a list of strings")
    if "work_dir" in inv:
        need(inv, "work_dir", "")
    for sec, keys, opt in (("router", {"ssh", "port_iface"}, set()), ("receiver", {"ssh", "addr"}, {"iface"})):
        d = need(inv, sec, "", dict)
        for k in keys:
            need(d, k, f"[{sec}] ")
        bad = set(d) - keys - opt
        if bad:
            raise Fail(f"inventory {path}: [{sec}] unknown key {sorted(bad)[0]}")
    senders = need(inv, "senders", "", list)
    if not senders:
        raise Fail(f"inventory {path}: [[senders]] needs at least one machine")
    for i, d in enumerate(senders):
        need(d, "ssh", f"[[senders]] #{i + 1} ")
        if set(d) - {"ssh"}:
            raise Fail(f"inventory {path}: [[senders]] #{i + 1} unknown key {sorted(set(d) - {'ssh'})[0]}")
    return inv


def load_ccs(be, plan, loaded):
    """Registers the plan's BPF CCs on every machine and writes their
    network and tunables."""
    per_cc = {}
    for g in plan["groups"]:
        if g["xdcc"]:
            if per_cc.setdefault(g["registered"], g["tunables"]) != g["tunables"]:
                raise Fail(f"groups with different tunables for {g['registered']}: the kernel's tunables are per CC, not per flow")
    for m in be.machines:
        avail = be.run(m, "cat", "/proc/sys/net/ipv4/tcp_available_congestion_control").split()
        for cc, tun in per_cc.items():
            if cc not in avail:
                unload = be.register(m, cc)
                if unload:
                    loaded.append((m, unload))
            # The network first (it re-derives every tunable; each write is
            # checked as a set, so intra ≤ inter may need the other order), then
            # the scenario's own values, then the window pacing (default 100 %).
            net = list(plan["net"].items())
            for _ in range(2):
                net = [(k, v) for k, v in net if not be.ok(m, be.xdcc, "tunable", "set", cc, k, v)]
            for k, v in net:
                be.run(m, be.xdcc, "tunable", "set", cc, k, v)
            # (A slowed plan sets every tunable: one may need another first.)
            rest = sorted(tun.items())
            for _ in range(2):
                rest = [(k, v) for k, v in rest if not be.ok(m, be.xdcc, "tunable", "set", cc, k, v)]
            for k, v in rest:
                be.run(m, be.xdcc, "tunable", "set", cc, k, v)
            if "window_pacing_pct" not in tun:
                be.run(m, be.xdcc, "tunable", "set", cc, "window_pacing_pct", 100)


def start_marker(be, plan, dur):
    m = plan["port"]["marker"]
    if not m:
        return None
    rate = plan["port"]["rate_mbit"]
    if m["kind"] == "phantom":
        cmd = [be.xdcc, "mark-phantom", "--iface", be.port_iface, "--rate-mbit", rate, "--drain-pct", m["drain_pct"],
               "--size-bytes", m["size_bytes"], "--kmin-pct", m["kmin_pct"], "--kmax-pct", m["kmax_pct"], "--duration", dur]
        role = "router"
    else:
        if not be.receiver_iface:
            raise Fail("AMRT's marker runs on the receiver's interface from the router: give [receiver] iface in the inventory")
        cmd = [be.xdcc, "mark-amrt", "--iface", be.receiver_iface, "--rate-mbit", rate, "--duration", dur]
        role = "receiver"
    f = tempfile.TemporaryFile(mode="w+")
    p = be.popen(role, cmd, stdout=f, stderr=subprocess.STDOUT)
    time.sleep(0.5)
    if p.poll() is not None:
        f.seek(0)
        raise Fail(f"the marker did not start: {f.read().strip()}")
    return p, f


def whole(x, what):
    if abs(x - round(x)) > 1e-9:
        raise Fail(f"{what} = {x} s: long flows start and stop at whole seconds here (iperf3 -t)")
    return int(round(x))


def start_flowgens(be, sized, rwork, dur):
    """One `xdcc-testbed flowgen` serving on the receiver and one sending on each
    machine that has sized flows; returns [(process, role, out path, ids)]."""
    gens = []
    by_role = {}
    for i, s in enumerate(sized):
        by_role.setdefault(s["role"], []).append(i)
    plans = [("receiver", {"port": FLOWGEN_PORT, "servers": ["."], "deadline_s": dur + 5, "flows": []}, [])]
    for role, ids in by_role.items():
        flows = [{"at_s": sized[i]["at_s"], "src": ".", "dst": be.receiver_addr, "size": sized[i]["size"], "cc": sized[i]["cc"]} for i in ids]
        plans.append((role, {"port": FLOWGEN_PORT, "servers": [], "deadline_s": dur + 5, "flows": flows}, ids))
    for k, (role, plan, ids) in enumerate(plans):
        pf, of = f"{rwork}/flowgen-{k}.json", f"{rwork}/fct-{k}.jsonl"
        be.put(role, pf, json.dumps(plan).encode())
        p = be.popen(role, [be.xdcc_testbed, "flowgen", "--plan", pf, "--out", of], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = p.stdout.readline()
        try:
            ready = json.loads(line).get("ready") is True
        except ValueError:
            ready = False
        if not ready:
            raise Fail(f"xdcc-testbed flowgen did not start on {be.machine_of(role)}: {line.strip()}")
        gens.append((p, role, of, ids))
    return gens


def run_one(be, plan, work):
    loaded, longs = [], []
    ts = plan["time_scale"]
    # On the machines (the namespaces share this one's file system).
    rwork = work if isinstance(be, Netns) else be.work
    try:
        be.up()
        base = be.base_rtt_us()
        be.emulate_rtts(base)
        load_ccs(be, plan, loaded)
        be.set_cc(plan)
        dur = plan["duration_s"]
        # Servers: one iperf3 per long flow, one flowgen for the sized ones.
        sized = []
        port = 5400
        for gi, g in enumerate(plan["groups"]):
            for k in range(g["count"]):
                start = g["start_s"] + k * g["start_spacing_s"]
                if g["size_bytes"] is None:
                    stop = g["stop_s"] if g["stop_s"] is not None else dur
                    longs.append(dict(group=g["name"], role=("sender", gi), port=port, cc=g["registered"],
                                      start=whole(start, f"{g['name']} start"), secs=whole(stop - start, f"{g['name']} length")))
                    port += 1
                else:
                    sized.append(dict(at_s=start, role=("sender", gi), size=g["size_bytes"], cc=g["registered"], group=g["name"]))
        for f in longs:
            be.run("receiver", "iperf3", "-s", "-D", "-p", f["port"], "-I", f"{rwork}/iperf-{f['port']}.pid")
        time.sleep(0.3)
        marker = start_marker(be, plan, int(math.ceil(dur)) + 2)
        gens = start_flowgens(be, sized, rwork, dur) if sized else []
        samples = []
        t0 = time.monotonic() + 0.2  # room to tell every machine
        for p, *_ in gens:
            p.stdin.write(be.time_zero(t0) + "\n")
            p.stdin.flush()
        clients = []

        def start_long(f):
            time.sleep(max(0.0, t0 + f["start"] - time.monotonic()))
            p = be.popen(f["role"], ["iperf3", "-c", be.receiver_addr, "-p", f["port"], "-t", f["secs"], "-C", f["cc"],
                                     "-i", f"{0.1 * ts:g}", "-J"],
                         stdout=open(f"{work}/long-{f['port']}.json", "w"))
            clients.append(p)
        threads = [threading.Thread(target=start_long, args=(f,)) for f in longs]
        for t in threads:
            t.start()
        while time.monotonic() < t0:
            time.sleep(0.01)
        # The senders' machines, once each (for their flows' smoothed RTTs).
        senders = list({tuple(be.prefix(("sender", gi))): ("sender", gi) for gi in range(len(plan["groups"]))}.values())
        srtts, n = [], 0
        while time.monotonic() < t0 + dur:
            s = be.port_stats()
            now = time.monotonic() - t0
            samples.append((now,) + s)
            n += 1
            if n % RTT_EVERY == 0 and plan["measure_from_s"] <= now <= plan["measure_to_s"]:
                for role in senders:
                    srtts += flow_srtts_us(be.run(role, "ss", "-tinH", "dst", be.receiver_addr, check=False))
            time.sleep(SAMPLE_S * ts)
        for t in threads:
            t.join()
        for p in clients:
            p.wait(timeout=30)
        outcomes = []
        for p, role, of, ids in reversed(gens):  # the senders', then the receiver's
            if not ids:
                p.stdin.close()  # the server may stop (flowgen: EOF)
            p.wait(timeout=30)
            for l in be.run(role, "cat", of).splitlines():
                o = json.loads(l) if l.strip() else {}
                if "id" in o:
                    outcomes.append(dict(o, id=ids[o["id"]]))
        if marker:
            marker[0].wait(timeout=10)
            marker[1].seek(0)
        return measure(plan, work, samples, longs, sized, outcomes, base, srtts)
    finally:
        # (iperf3 daemons outlive a namespace's deletion: stop them by pid file.)
        for f in longs:
            be.run("receiver", "sh", "-c", f"kill $(cat {rwork}/iperf-{f['port']}.pid) 2>/dev/null", check=False)
        be.down(loaded)


def flow_srtts_us(ss_out):
    """The smoothed RTTs (µs) of the data flows in `ss -tinH` output: sockets
    that have moved at least 100 kB (not iperf3's control connections)."""
    out = []
    for line in ss_out.splitlines():
        w = dict(x.split(":", 1) for x in line.split() if ":" in x and x.split(":", 1)[0] in ("rtt", "bytes_acked"))
        if "rtt" in w and int(w.get("bytes_acked", "0")) >= 100_000:
            out.append(float(w["rtt"].split("/")[0]) * 1000)
    return out


def measure(plan, work, samples, longs, sized, outcomes, base, srtts):
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
    fct, errors = {}, []
    for o in outcomes:
        if o.get("ok"):
            fct.setdefault(sized[o["id"]]["group"], []).append(o["fct_s"] * 1e3)
        elif o.get("error") and o["error"] not in errors:
            errors.append(o["error"])
    # The end hosts' delay as the model takes it (its `host_delay_us`: a mean
    # extra delay of every ACK): the flows' mean smoothed RTT less the
    # scenario's base RTT and the port's mean queueing delay.
    queue_us = sum(q) / len(q) * 8 / plan["port"]["rate_mbit"]
    rtt_us = sum(srtts) / len(srtts) if srtts else None
    host_delay = max(0.0, rtt_us - min(g["rtt_us"] for g in plan["groups"]) - queue_us) if srtts else None
    # Times and rates in the scenario's time (a slowed executor's divided back).
    ts = plan["time_scale"]
    slow = lambda v: None if v is None else v / ts
    return {
        "time_scale": ts, "srtt_mean_us": slow(rtt_us), "host_delay_us": slow(host_delay),
        "utilization": util, "mean_qlen_kb": sum(q) / len(q) / 1e3, "p99_qlen_kb": q[min(len(q) - 1, int(0.99 * len(q)))] / 1e3,
        "drops": samples[-1][3] - samples[0][3], "jain_of_means": jain, "long_rates_mbps": [r * ts for r in rates], "base_rtt_us": slow(base),
        "fct_ms": {g: {"n": len(v), "mean": slow(sum(v) / len(v)), "p99": slow(sorted(v)[min(len(v) - 1, int(0.99 * len(v)))])} for g, v in fct.items()},
        "sized_planned": len(sized), "sized_done": sum(len(v) for v in fct.values()), "sized_outcomes": len(outcomes),
        "sized_errors": errors[:3],
    }


def model(scenario, cc, sets, host_delay_us, duration=None):
    if cc in ("cubic", "bbr", "reno", "vegas"):
        return None
    hd = [] if host_delay_us is None else ["--host-delay-us", f"{host_delay_us:.1f}"]
    dur = [] if duration is None else ["--duration", str(duration)]
    out = sh(SIM, "run", scenario, "--cc", cc, "--json", *hd, *dur, *[a for s in sets for a in ("--set", s)])
    r = json.loads(out)[0]
    q = r["queues"][0]
    fct = {}
    for f in r["flows"]:
        if f["fct_ms"] is not None:
            fct.setdefault(f["group"], []).append(f["fct_ms"])
    return {"host_delay_us": host_delay_us,
            "utilization": q["utilization"], "mean_qlen_kb": q["mean_qlen_kb"], "p99_qlen_kb": q["p99_qlen_kb"], "drops": q["drops"],
            "jain_of_means": r["jain_of_means"],
            "fct_ms": {g: {"n": len(v), "mean": sum(v) / len(v), "p99": sorted(v)[min(len(v) - 1, int(0.99 * len(v)))]} for g, v in fct.items()}}


def plans_of(scen, ccs, sets, backend, duration=None):
    """`xdcc-sim plan` of the scenario for each CC: one meaning of the file."""
    plans = []
    dur = [] if duration is None else ["--duration", str(duration)]
    for cc in ccs:
        plan = json.loads(sh(SIM, "plan", scen, "--cc", cc, "--backend", backend, *dur, *[x for s in sets for x in ("--set", s)]))
        for n in plan["notes"]:
            print(f"[{backend}] {cc}: note: {n}", file=sys.stderr)
        plans.append(plan)
    return plans


def execute(plans, backend, inventory=None):
    """Runs each plan on the backend's kernels: {cc: measurement}."""
    out = {}
    for plan in plans:
        slowed = f", {plan['time_scale']}x slowed" if plan["time_scale"] != 1 else ""
        print(f"[{backend}] {plan['cc']}: {plan['duration_s']:g} s on a {plan['port']['rate_mbit']} Mbit/s port{slowed}", file=sys.stderr, flush=True)
        tag = os.getpid() % 100000
        be = {"host": lambda: Netns(plan, tag), "vm": lambda: Guest(plan, tag),
              "servers": lambda: Servers(plan, inventory, tag)}[backend]()
        with tempfile.TemporaryDirectory() as work:
            out[plan["cc"]] = run_one(be, plan, work)
    return out


def run_in_vm(plans, out):
    """One boot of the qemu guest runs every plan (`run.py --guest OUT`
    there); the guest writes OUT/vm.json. The VM's console goes to
    OUT/vm.log, its progress lines here."""
    with open(os.path.join(out, "plans.json"), "w") as fh:
        json.dump(plans, fh)
    print("[vm] the test kernel and modules (testbed/kernel/build.sh, cached)", file=sys.stderr, flush=True)
    subprocess.run([os.path.join(ROOT, "testbed", "kernel", "build.sh")], stdout=subprocess.DEVNULL, check=True)
    result = os.path.join(out, "vm.json")
    if os.path.exists(result):
        os.remove(result)
    limit = int(sum(p["duration_s"] + 90 for p in plans) + 180)
    log = os.path.join(out, "vm.log")
    with open(log, "w", buffering=1) as fh:
        vm = subprocess.Popen([os.path.join(ROOT, "testbed", "vm", "run.sh"), "--timeout", str(limit), "--out", out,
                               "testbed/host/guest.sh", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in vm.stdout:
            fh.write(line)
            if line.startswith(("[vm]", "Traceback", "error")) or "WARNING" in line or "BUG" in line:
                print(line.rstrip(), file=sys.stderr, flush=True)
        rc = vm.wait()
    if rc != 0 or not os.path.exists(result):
        raise Fail(f"the VM run failed (exit {rc}); its console: {log}")
    with open(result) as fh:
        return json.load(fh)


def guest_main(out):
    """Inside the VM: the plans in OUT/plans.json on the guest's namespaces."""
    with open(os.path.join(out, "plans.json")) as fh:
        plans = json.load(fh)
    try:
        res = execute(plans, "vm")
    except Fail as e:
        print(f"[vm] error: {e}", flush=True)
        sys.exit(1)
    with open(os.path.join(out, "vm.json"), "w") as fh:
        json.dump(res, fh)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--guest":
        return guest_main(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("--cc", help="comma-separated CCs (default: the scenario's cc list)")
    ap.add_argument("--set", action="append", default=[], metavar="CC.NAME=VALUE")
    ap.add_argument("--out")
    ap.add_argument("--backend", choices=["host", "servers", "vm"], default="host")
    ap.add_argument("--inventory", help="the servers backend's machines (TOML; testbed/host/inventory.example.toml)")
    ap.add_argument("--host-delay", choices=["measured", "file"], default="measured",
                    help="the model's end-host delay: what the run measured (default) or the scenario's host_delay_us")
    ap.add_argument("--duration", type=int, metavar="S",
                    help="run time in seconds instead of the file's duration_ms (the measured interval then ends there): "
                         "a longer window for Jain on a busy host; the vm backend takes 20 times as long")
    a = ap.parse_args()
    if a.duration is not None and not 1 <= a.duration <= 3600:
        sys.exit("testbed/host/run.py: --duration is a whole number of seconds, 1-3600")
    if a.backend == "servers":
        if not a.inventory:
            sys.exit("testbed/host/run.py: --backend servers needs --inventory FILE")
        try:
            load_inventory(a.inventory)
        except Fail as e:
            sys.exit(f"testbed/host/run.py: {e}")
        need = ("ssh",)
    else:
        if a.inventory:
            sys.exit(f"testbed/host/run.py: --inventory is for --backend servers")
        if a.backend == "host" and os.geteuid() != 0:
            sys.exit("testbed/host/run.py: needs root (network namespaces, BPF)")
        need = ("iperf3", "tc", "ping", "ip") if a.backend == "host" else ()
    for t in need:
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
            with open(scen, "rb") as fh:
                ccs = tomllib.load(fh)["cc"]
        out = os.path.abspath(a.out or os.path.join(ROOT, "out", a.backend, name))
        os.makedirs(out, exist_ok=True)
        plans = plans_of(scen, ccs, a.set, a.backend, a.duration)
        host = run_in_vm(plans, out) if a.backend == "vm" else execute(plans, a.backend, a.inventory)
        pred = {cc: model(scen, cc, a.set, host[cc]["host_delay_us"] if a.host_delay == "measured" else None, a.duration) for cc in ccs}
        json.dump(host, open(os.path.join(out, "host.json"), "w"), indent=1)
        json.dump(pred, open(os.path.join(out, "model.json"), "w"), indent=1)
    except Fail as e:
        sys.exit(f"testbed/host/run.py: {e}")
    f = lambda v, fmt: "-" if v is None else fmt.format(v)
    where = {"host": f"this host (kernel {os.uname().release})", "servers": f"the servers of {a.inventory}",
             "vm": f"the qemu VM (the test kernel's modules, {plans[0]['time_scale']}x slowed, times read back in the scenario's)"}[a.backend]
    print(f"{name} on {where} and in the model (measured / model)")
    print(f"{'cc':<8} {'util %':>13} {'queue kB':>15} {'q p99 kB':>15} {'drops':>11} {'jain':>13} {'host µs':>7}  fct ms (mean / p99, measured | model)")
    for cc in ccs:
        h, m = host[cc], pred[cc] or {}
        fcts = "; ".join(f"{g} {v['mean']:.2f}/{v['p99']:.2f} | " + (f"{m['fct_ms'][g]['mean']:.2f}/{m['fct_ms'][g]['p99']:.2f}" if g in m.get("fct_ms", {}) else "-")
                         + f" ({v['n']} of {h['sized_planned']})" for g, v in h["fct_ms"].items())
        print(f"{cc:<8} {f(h['utilization'] * 100, '{:.1f}'):>6} / {f(m.get('utilization') and m['utilization'] * 100, '{:.1f}'):<5} "
              f"{f(h['mean_qlen_kb'], '{:.1f}'):>7} / {f(m.get('mean_qlen_kb'), '{:.1f}'):<6} {f(h['p99_qlen_kb'], '{:.1f}'):>7} / {f(m.get('p99_qlen_kb'), '{:.1f}'):<6} "
              f"{h['drops']:>5} / {f(m.get('drops'), '{}'):<4} {f(h['jain_of_means'], '{:.3f}'):>5} / {f(m.get('jain_of_means'), '{:.3f}'):<6} "
              f"{f(h['host_delay_us'], '{:.0f}'):>7}  {fcts}")
    for cc in ccs:
        h = host[cc]
        if h["sized_done"] < h["sized_planned"]:
            why = "; ".join(h["sized_errors"]) or "no outcome reported"
            print(f"{cc}: {h['sized_done']} of {h['sized_planned']} sized flows completed ({h['sized_outcomes']} outcomes): {why}")
    print(f"host µs: the end hosts' delay measured (flows' mean smoothed RTT − base RTT − port queueing), "
          f"{'given to the model' if a.host_delay == 'measured' else 'not given to the model (--host-delay file)'}")
    print(f"results: {out}/host.json, model.json; ping RTT {host[ccs[0]]['base_rtt_us']:.0f} µs")


if __name__ == "__main__":
    main()
