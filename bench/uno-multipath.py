#!/usr/bin/env python3
"""Uno's load-balancing and coding results (uno-sc25 Figs. 9 and 13) in
xdcc-sim, beside the Uno artifact's own htsim runs of the same cases.

  bench/uno-multipath.py [--figs 13a,13b,13c,9] [--seeds N]
                         [--artifact DIR] [--artifact-seeds M]

Per figure and variant (load balancer, with or without UnoRC's coding):
the mean over seeds of the flows' mean and p99 completion times, with a
95 % interval, and the wall time. With --artifact (a checkout of
github.com/spcl/Uno_SC25 built by bench/build-uno-artifact.sh), the
artifact's htsim runs the same cases with the same command lines as its
artifact_scripts (end time cut to when the flows are long done: the
scripts simulate 12.86 s of which the flows take < 50 ms, the rest is
1 µs timers ticking), and the table shows both and their wall times.

Numbers, not assertions: testbed/RESULTS.md holds a dated run and
testbed/sim/tests/multipath.rs the claims CI checks on the small topology.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = os.path.join(ROOT, "target", "release", "xdcc-sim")
SCEN = os.path.join(ROOT, "testbed", "scenarios")

# The artifact's common command line (artifact_scripts/fig13_linkfail.py).
HTSIM_COMMON = (
    "-o uec_entry -queue_type composite -hop_latency 1000 -switch_latency 0 -nodes 128 -collect_data 0 "
    "-topology interdc -os_border 16 -linkspeed 100000 -topo lcp/configs/topos/fat_tree_100Gbps.topo "
    "-noRto -queueSizeRatio 1 -IntraFiT 100 -InterFiT 2500 -interKmax 60 -interKmin 20 -ecnAlpha 0.65 "
    "-usePacing 1 -lcpK 6 -interEcn -mdRTT 0.0003515625 -kmin 10 -kmax 80 -lcpAlgo aimd_phantom "
    "-use_phantom 1 -phantom_slowdown 5 -phantom_kmin 2 -phantom_kmax 60 -forceQueueSize 1000000 -noFi"
).split()
HTSIM_EC = "-erasureDst -parityGroup 10 -parityCorrect 2".split()
HTSIM_STRAT = {"spray": "rand", "unolb": "simple_subflow", "plb-artifact": "plb", "ecmp": "ecmp_classic"}

# Figure: xdcc-sim scenario, the artifact's matrix and extra flags, end time (ms), its first seed.
FIGS = {
    "13a": dict(scenario="uno-fig13a-linkfail", tm="fail_more.cm", extra="-interdcDelay 886500 -phantom_size 22400515 -fail_one", end=50, seed=111,
                title="Fig. 13A: 8 inter-DC flows of 5 MB, one of 8 border links black-holed"),
    "13b": dict(scenario="uno-fig13b-random-drops", tm="fail_one.cm", extra="-interdcDelay 886500 -phantom_size 22400515 -multiple_failures", end=50, seed=333,
                title="Fig. 13B: one 5 MB flow under Table 1's correlated drops (artifact: -multiple_failures without -fail_one, as its older paper_script/run_failure_random_seed.py; its fig13 script runs a black hole instead)"),
    "13b-artifact": dict(scenario="uno-fig13a-linkfail", tm="fail_one.cm", extra="-interdcDelay 886500 -phantom_size 22400515 -fail_one", end=50, seed=333,
                         sim_tm="uno-artifact-tms/fail_one.cm",
                         title="Fig. 13B as the artifact's script runs it: one 5 MB flow, one border link black-holed"),
    "13c": dict(scenario="uno-fig13c-allreduce", tm="ai.cm", extra="-interdcDelay 3546000 -phantom_size 89602060 -fail_one -multiple_failures", end=150, seed=111,
                title="Fig. 13C: 8 inter-DC flows of 35 MB, a black hole and Table 1 drops; ideal 10.4 ms"),
}
VARIANTS_13 = [("spray", True), ("spray", False), ("unolb", True), ("unolb", False), ("plb-artifact", True), ("plb-artifact", False)]


def p99(x):
    """numpy.percentile(x, 99), linear interpolation (the artifact's scripts)."""
    s = sorted(x)
    k = 0.99 * (len(s) - 1)
    f = math.floor(k)
    return s[f] + (s[min(f + 1, len(s) - 1)] - s[f]) * (k - f)


def ci(xs):
    m = statistics.mean(xs)
    h = 1.96 * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
    return m, h


def cell(xs):
    if not xs:
        return "-"
    m, h = ci(xs)
    return f"{m:6.2f} ± {h:4.2f}"


def run_sim(scenario, lb, ec, seeds, cc=None, border_links=None, tm=None):
    """Per seed: (mean FCT, p99 FCT, unfinished flows); the wall time and packets."""
    path = os.path.join(SCEN, scenario + ".toml")
    tmp = None
    if tm:  # the same network with another connection matrix
        text = open(path).read()
        text = re.sub(r'^tm = .*$', f'tm = "{tm}"', text, flags=re.M)
        tmp = os.path.join(SCEN, f".bench-{os.getpid()}.toml")
        open(tmp, "w").write(text)
        path = tmp
    cmd = [SIM, "run", path, "--lb", lb, "--seeds", str(seeds), "--json"]
    cmd += [] if ec else ["--no-ec"]
    cmd += ["--cc", cc] if cc else []
    cmd += ["--border-links", str(border_links)] if border_links else []
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    finally:
        if tmp:
            os.unlink(tmp)
    per, wall, packets = [], 0.0, 0
    for seed in json.loads(out):
        r = seed[0]
        f = [x["fct_ms"] for x in r["flows"]]
        done = [x for x in f if x is not None]
        per.append((statistics.mean(done) if done else float("nan"), p99(done) if done else float("nan"), len(f) - len(done)))
        wall += r["wall_s"]
        packets += r["packets"]
    return per, wall, packets


def run_artifact(art, fig, lb, ec, seeds, border=16, fig9=None):
    per, wall = [], 0.0
    binary = os.path.join(art, "sim", "datacenter", "htsim_lcp_entry_modern")
    for i in range(seeds):
        if fig9:
            cmd = [binary] + fig9(border) + ["-seed", str(FIG9_SEED[lb] + i)]
        else:
            f = FIGS[fig]
            cmd = [binary] + HTSIM_COMMON + ["-seed", str(f["seed"] + i), "-end_time", str(f["end"]),
                                             "-tm", f"lcp/configs/tms/simple/{f['tm']}", "-strat", HTSIM_STRAT[lb]]
            cmd += HTSIM_EC if ec else []
            cmd += f["extra"].split()
        t0 = time.monotonic()
        out = subprocess.run(cmd, cwd=art, capture_output=True, text=True).stdout
        wall += time.monotonic() - t0
        fct = [float(m) / 1e3 for m in re.findall(r"(?:Completion time is|Flow Finishing Time) ([0-9.e+-]+)us", out)]
        per.append((statistics.mean(fct) if fct else float("nan"), p99(fct) if fct else float("nan"), 0))
    return per, wall


FIG9_SEED = {"unolb": 215, "ecmp": 215, "gemini": 15}


def fig9_cmd(variant):
    def build(border):
        os_border = str(128 // border)
        base = HTSIM_COMMON[:]
        base[base.index("-os_border") + 1] = os_border
        base += ["-tm", "lcp/configs/tms/simple/custom_256_5mb.cm", "-end_time", "100", "-interdcDelay", "886500", "-phantom_size", "22400515"]
        if variant == "gemini":
            return ("-o uec_entry -queue_type composite -hop_latency 1000 -switch_latency 0 -nodes 128 -collect_data 0 "
                    f"-topology interdc -os_border {os_border} -strat ecmp_classic -linkspeed 100000 "
                    "-topo lcp/configs/topos/fat_tree_100Gbps.topo -tm lcp/configs/tms/simple/custom_256_5mb.cm "
                    "-noFi -noQaInter -noQaIntra -forceQueueSize 1000000 -interKmin 25 -interKmax 75 -kmin 25 -kmax 75 "
                    "-ecnAlpha 0.5 -usePacing 1 -end_time 100 -lcpK 6 -interAlgo gemini -intraAlgo gemini "
                    "-geminiH 0.00024 -geminiBeta 0.1 -geminiT 0.1 -interdcDelay 886500").split()
        return base + ["-strat", HTSIM_STRAT[variant]]
    return build


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--figs", default="13a,13b,13c,9")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--artifact", help="a built checkout of spcl/Uno_SC25 (bench/build-uno-artifact.sh)")
    ap.add_argument("--artifact-seeds", type=int, default=5)
    a = ap.parse_args()
    if a.seeds < 2 or a.artifact_seeds < 1:
        sys.exit("--seeds must be at least 2 and --artifact-seeds at least 1")
    if a.artifact and not os.path.exists(os.path.join(a.artifact, "sim", "datacenter", "htsim_lcp_entry_modern")):
        sys.exit(f"{a.artifact}: no sim/datacenter/htsim_lcp_entry_modern (build it with bench/build-uno-artifact.sh)")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "xdcc-sim"], cwd=ROOT, check=True)
    figs = a.figs.split(",")
    for fig in figs:
        if fig not in FIGS and fig != "9":
            sys.exit(f"--figs: unknown figure {fig!r} (13a, 13b, 13b-artifact, 13c, 9)")
    hdr = f"{'variant':<22} {'xdcc-sim mean':>15} {'p99':>15} {'unfinished':>10} {'wall s':>7}"
    if a.artifact:
        hdr += f" | {'artifact mean':>15} {'p99':>15} {'wall s':>7}"
    for fig in figs:
        rows = []
        if fig == "9":
            print(f"\nFig. 9: permutation of 256 hosts (142 inter-DC, 114 intra-DC flows of 1 MB), FCT in ms, {a.seeds} seeds (artifact: {a.artifact_seeds})")
            for border in (8, 128):
                for variant, scen, cc in (("unolb", "uno-fig9-permutation", None), ("ecmp", "uno-fig9-permutation", None),
                                          ("gemini", "uno-fig9-permutation-gemini", "gemini")):
                    lb = "ecmp" if variant == "gemini" else variant
                    per, wall, _ = run_sim(scen, lb, False, a.seeds, cc=cc, border_links=border)
                    art = run_artifact(a.artifact, None, variant, False, a.artifact_seeds, border, fig9=fig9_cmd(variant)) if a.artifact else None
                    name = {"unolb": "Uno (UnoLB)", "ecmp": "Uno + ECMP", "gemini": "Gemini + ECMP"}[variant]
                    rows.append((f"{name}, {border} links", per, wall, art))
        else:
            f = FIGS[fig]
            print(f"\n{f['title']}; FCT in ms, {a.seeds} seeds (artifact: {a.artifact_seeds})")
            for lb, ec in VARIANTS_13:
                per, wall, _ = run_sim(f["scenario"], lb, ec, a.seeds, tm=f.get("sim_tm"))
                art = run_artifact(a.artifact, fig, lb, ec, a.artifact_seeds) if a.artifact and f["extra"] else None
                name = {"spray": "spraying", "unolb": "UnoLB", "plb-artifact": "PLB"}[lb] + (" + EC" if ec else "")
                rows.append((name, per, wall, art))
        print(hdr)
        for name, per, wall, art in rows:
            line = f"{name:<22} {cell([x[0] for x in per]):>15} {cell([x[1] for x in per]):>15} {sum(x[2] for x in per):>10} {wall:>7.2f}"
            if art:
                aper, awall = art
                line += f" | {cell([x[0] for x in aper]):>15} {cell([x[1] for x in aper]):>15} {awall:>7.1f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
