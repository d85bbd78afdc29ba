#!/usr/bin/env python3
"""Judges a host or servers backend run of realspeed-incast for DCTCP (the
tests' end-to-end check of testbed/host/run.py):

  testbed/host/check_dctcp_incast.py OUT_DIR LABEL

every incast flow completes (16 of 16), the port is full (>= 0.9), the
plan's step marker holds the queue near K = 97.5 kB (p99 <= 2 K = 195 kB;
without the marker it fills the 675 kB buffer), and the model's prediction
sits beside the run. Exit 1 with what failed."""
import json, sys

out, label = sys.argv[1], sys.argv[2]
h, m = (json.load(open(f"{out}/{f}.json"))["dctcp"] for f in ("host", "model"))
bad = []
if h["fct_ms"].get("incast", {}).get("n") != 16:
    bad.append(f"incast flows completed: {h['fct_ms'].get('incast', {}).get('n', 0)} of 16 ({'; '.join(h.get('sized_errors', []))})")
if not h["utilization"] >= 0.9:
    bad.append(f"utilization {h['utilization']:.3f} < 0.9")
if not h["p99_qlen_kb"] <= 195:
    bad.append(f"queue p99 {h['p99_qlen_kb']:.1f} kB > 2 K = 195 kB")
if not (m and m["utilization"] > 0 and "incast" in m["fct_ms"]):
    bad.append("no model prediction beside the run")
if bad:
    sys.exit(f"[{label}] FAIL: DCTCP incast: " + "; ".join(bad))
print(f"[{label}] DCTCP incast ok: 16 of 16 flows (mean {h['fct_ms']['incast']['mean']:.1f} ms), utilization "
      f"{h['utilization'] * 100:.1f} %, queue p99 {h['p99_qlen_kb']:.0f} kB, model beside")
