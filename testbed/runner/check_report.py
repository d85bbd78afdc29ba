#!/usr/bin/env python3
"""Check that a testbed results directory is complete: every run of the
scenario has every metric filled, its time series and plots, and the report
names them; and that the kernel agrees with the model (the simulator's
prediction for the same scenario) within AGREE on the metrics a two-flow
steady state pins down. Used by test.sh after the CI smoke scenario; exits 1
listing what is missing or disagrees, 3 when everything is present and the
only disagreements are in runs whose guest stalled (see STALLED_GAPS): the
comparison is void there, and the caller may run the scenario once more.

    check_report.py OUT
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import scenario_of  # noqa: E402

# Metrics that must hold a number for every run with long flows. (Convergence
# time may be None: "never converged" is a result, but the key must exist.)
REQUIRED = ["utilization", "jain", "queue_mean_kb", "queue_p99_kb", "drops", "retransmits",
            "guest_cpu_busy", "sample_gap_max_ms"]
PER_CLASS = ["per_flow_mbps", "sum_mbps", "rtt_ms"]
# Kernel vs model: bottleneck utilization within 15 points (absolute), its
# mean queue between 0.3 and 1.4 times the model's (the marking threshold
# sets it; a broken marker leaves the queue at the buffer, a CC that cuts
# too hard at zero). The lower bound is wide because the guest's queue runs
# below the model's by a varying amount: Gemini's mean at 0.72-0.79 of the
# model's in four runs, then 0.67 and 0.47 in two CI runs of 2026-11-26
# (45.2 and 31.9 kB against 67.8), DCTCP's at 0.83-0.92. Robust on purpose: Jain and the inter/intra split of a 4-s steady
# window are not (see testbed/RESULTS.md, "model vs kernel"), and neither is
# the queue's p99 there: 40 samples at 100 ms make it the largest sample, and
# in the emulated guest one burst decides it (DCTCP's 78-133 kB against the
# model's 76 in four runs of the smoke scenario, while the mean queues of
# DCTCP and Gemini stayed 8-28 % below the model's).
AGREE = {"utilization": ("abs", 0.15, 0.15), "queue_mean_kb": ("ratio", 0.30, 1.40)}
# The kernel-vs-model comparison holds for a guest that ran the scenario at
# its pace. The sampler runs at real-time priority inside the guest, so a
# gap between its samples of more than STALLED_GAPS periods is the host not
# running the guest's CPU (TCG on a host shared with other work). Quiet, the
# smoke's gaps are 107-141 ms at 100 ms; beside a compile on this 2-CPU host
# one run's was 335 ms, its flows ran at a fifth of their windows for 4 s and
# Gemini's utilization read 0.63 (testbed/notes/2026-11-27-ci-time.md).
STALLED_GAPS = 2.0


def stalled(r, sample_ms):
    gap = r.get("sample_gap_max_ms")
    return gap is not None and gap > STALLED_GAPS * sample_ms


def disagreements(runs):
    bad = []
    for r in runs:
        model = r.get("model")
        if model is None:
            continue
        for k, (kind, lo, hi) in AGREE.items():
            if r.get(k) is None or k not in model:
                bad.append(f"{r['run_id']}: {k}: no kernel or model value to compare")
                continue
            mean = model[k][0]
            if kind == "abs":
                diff = abs(r[k] - mean)
                if diff > hi:
                    bad.append(f"{r['run_id']}: {k} kernel {r[k]:.3f} vs model {mean:.3f}: differ by {diff:.3f} > {hi:.3f}")
            elif not lo * mean <= r[k] <= hi * mean:
                bad.append(f"{r['run_id']}: {k} kernel {r[k]:.3f} vs model {mean:.3f}: "
                           f"outside {lo:.2f}-{hi:.2f} times the model's")
    return bad


def problems(out):
    """(what is missing or disagrees, the disagreements of stalled runs)"""
    bad = []
    try:
        with open(os.path.join(out, "summary.json")) as fh:
            summary = json.load(fh)
        scen = scenario_of(out)
        with open(os.path.join(out, "report.md")) as fh:
            report = fh.read()
    except (OSError, ValueError) as e:
        return [f"cannot read results: {e}"], []
    runs = summary["runs"]
    points = len(scen["points"])
    if len(runs) != points * len(scen["ccs"]):
        bad.append(f"{len(runs)} runs in summary.json, expected {points * len(scen['ccs'])}")
    if sorted({r["cc"] for r in runs}) != sorted(scen["ccs"]):
        bad.append(f"CCs in summary {sorted({r['cc'] for r in runs})} != scenario {scen['ccs']}")
    for r in runs:
        rid = r["run_id"]
        for k in REQUIRED:
            if r.get(k) is None:
                bad.append(f"{rid}: {k} missing")
        if "convergence_s" not in r:
            bad.append(f"{rid}: convergence_s missing")
        for cls in ("intra", "inter"):
            if r[cls]["n"]:
                for k in PER_CLASS:
                    if r[cls].get(k) is None:
                        bad.append(f"{rid}: {cls}.{k} missing")
        if r["utilization"] is not None:
            # A rate over the steady window W is off by up to one sample gap g
            # when the guest stalls between reading a counter and its clock:
            # more than 1 + g/W (+2 %) of line rate is a measurement error.
            w = max(1e-3, r["steady_to_s"] - r["steady_from_s"])
            hi = 1.02 + (r["sample_gap_max_ms"] or 0) / 1000 / w
            if not 0.05 < r["utilization"] <= hi:
                bad.append(f"{rid}: utilization {r['utilization']:.3f} outside (0.05, {hi:.3f}]")
        if scen["sized"]:
            if not r["fct"] or r["fct_count"] == 0:
                bad.append(f"{rid}: no flow completion times")
            elif r["fct_failed"] > r["fct_count"] // 2:
                bad.append(f"{rid}: {r['fct_failed']} of {r['fct_count']} sized flows failed")
        for f in (f"timeseries/{rid}.csv", f"plots/{rid}.png", f"plots/{rid}.svg", f"raw/{rid}.json"):
            if not os.path.isfile(os.path.join(out, f)):
                bad.append(f"{rid}: {f} missing")
        if f"plots/{rid}.png" not in report:
            bad.append(f"{rid}: not in report.md")
    xdcc = [r for r in runs if r["cc"] in scen["modelled"]]  # xdcc CCs and variants
    if not os.path.isfile(os.path.join(out, "prediction.json")):
        bad.append("prediction.json missing (testbed/run.sh runs xdcc-sim on the scenario)")
    elif xdcc and not any(r.get("model") for r in xdcc):
        bad.append("no run has the model's prediction beside it")
    sample_ms = scen["sample_ms"]
    bad += disagreements([r for r in runs if not stalled(r, sample_ms)])
    void = [f"{d} (void: the guest stalled, sampler gap {r['sample_gap_max_ms']:.0f} ms "
            f"> {STALLED_GAPS:g} x {sample_ms} ms)"
            for r in runs if stalled(r, sample_ms) for d in disagreements([r])]
    for f in (f"plots/{scen['name']}.png", f"plots/{scen['name']}.svg", "summary.csv"):
        if not os.path.isfile(os.path.join(out, f)):
            bad.append(f"{f} missing")
    return bad, void


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    bad, void = problems(sys.argv[1])
    for b in bad:
        print(f"FAIL: report: {b}")
    for v in void:
        print(f"STALLED: report: {v}")
    if not bad and not void:
        print(f"PASS: report: every metric, time series and plot present in {sys.argv[1]}, "
              "the kernel within the model's bounds")
    sys.exit(1 if bad else 3 if void else 0)


if __name__ == "__main__":
    main()
