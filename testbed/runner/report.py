#!/usr/bin/env python3
"""Turn a testbed run directory (OUT/raw/*.json from guest.py) into results:
OUT/summary.{json,csv}, OUT/timeseries/<run>.csv, plots (PNG and SVG) under
OUT/plots/, and OUT/report.md comparing the CCs; prints the summary table.

    report.py OUT
    report.py --combine OUT REP_DIR...   mean and 95 % interval per metric over
                                         repeated runs (testbed/run.sh --repeat N)
    report.py --results RESULTS.md DIR...  rewrite RESULTS.md's generated section
                                         from combined runs (testbed/results.sh)
"""

import csv
import glob
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def metrics_tool(*args, stdin=None):
    """Runs `xdcc-metrics` (testbed/metrics: the metric definitions the
    simulator uses too) and returns its JSON answer. The binary is
    $XDCC_METRICS, else the workspace's release build, built if missing."""
    exe = os.environ.get("XDCC_METRICS") or os.path.join(REPO, "target", "release", "xdcc-metrics")
    if not os.access(exe, os.X_OK):
        try:
            subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "xdcc-metrics"], cwd=REPO, check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            sys.exit(f"report.py: no {exe} and building it failed ({e}): run `cargo build --release -p xdcc-metrics`")
    p = subprocess.run([exe, *args], input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"report.py: xdcc-metrics {args[0]} failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def analyze(paths):
    """(definitions, [(metrics, series)]) of the raw runs at `paths`: the
    definitions are BIN_S, CONVERGED_JAIN and the FCT size classes."""
    doc = metrics_tool("analyze", *paths)
    return doc["definitions"], [(r["metrics"], r["series"]) for r in doc["runs"]]


def fmt(v, nd=1, pct=False):
    if v is None:
        return "-"
    if pct:
        return f"{100 * v:.{nd}f}"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


COLUMNS = [  # (header, getter, format)
    ("cc", lambda m: m["cc"], None),
    ("point", lambda m: m["label"] or "-", None),
    ("util%", lambda m: fmt(m["utilization"], 1, pct=True), None),
    ("jain", lambda m: fmt(m["jain"], 3), None),
    ("conv_s", lambda m: fmt(m["convergence_s"], 1) if m["convergence_s"] is not None
     else ("never" if m["jain"] is not None else "-"), None),
    ("intra_Mbps", lambda m: fmt(m["intra"]["per_flow_mbps"], 1), None),
    ("inter_Mbps", lambda m: fmt(m["inter"]["per_flow_mbps"], 1), None),
    ("inter/intra", lambda m: fmt(m["inter_intra_ratio"], 2), None),
    ("rtt_intra_ms", lambda m: fmt(m["intra"]["rtt_ms"], 1), None),
    ("rtt_inter_ms", lambda m: fmt(m["inter"]["rtt_ms"], 1), None),
    ("q_mean_kB", lambda m: fmt(m["queue_mean_kb"], 1), None),
    ("q_p99_kB", lambda m: fmt(m["queue_p99_kb"], 1), None),
    ("drops", lambda m: str(m["drops"]), None),
    ("retx", lambda m: str(m["retransmits"]), None),
    ("cpu%", lambda m: fmt(m.get("guest_cpu_busy"), 0, pct=True), None),
]


def table(ms, markdown=False):
    rows = [[c[1](m) for c in COLUMNS] for m in ms]
    heads = [c[0] for c in COLUMNS]
    if markdown:
        out = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(out)
    w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    line = lambda r: "  ".join(x.rjust(w[i]) if i > 1 else x.ljust(w[i]) for i, x in enumerate(r))
    return "\n".join([line(heads)] + [line(r) for r in rows])


# The model's prediction (`xdcc-sim run SCENARIO --json`, written by
# testbed/run.sh as OUT/prediction.json) beside the kernel's measurement:
# (metric, header, scale, decimals). Both sides come from the same code
# (testbed/metrics: the simulator's run becomes a run record like the
# testbed's raw JSON and goes through the same `analyze`).
COMPARE = [("utilization", "util%", 100, 1), ("jain", "jain", 1, 3), ("convergence_s", "conv_s", 1, 1),
           ("inter_intra_ratio", "inter/intra", 1, 2), ("queue_mean_kb", "q_mean_kB", 1, 1),
           ("queue_p99_kb", "q_p99_kB", 1, 1), ("drops", "drops", 1, 0), ("retransmits", "retx", 1, 0)]


def load_prediction(out):
    """{(ccs entry, label): prediction} from OUT/prediction.json, {} without one."""
    try:
        with open(os.path.join(out, "prediction.json")) as fh:
            preds = json.load(fh)
    except FileNotFoundError:
        return {}
    return {(p["entry"], p["label"]): p for p in preds}


def model_of(m, preds):
    """This run's prediction: {metric: (mean, 95 % half-width)}, None without a model."""
    p = preds.get((m["cc"], m["label"] or ""))
    return {k: tuple(v) for k, v in p["metrics"].items()} if p and p["metrics"] else None


def compare_rows(ms, preds):
    """Per run: cc, point, then 'kernel / model' per COMPARE metric."""
    rows = []
    for m in ms:
        model = model_of(m, preds)
        if model is None:
            p = preds.get((m["cc"], m["label"] or ""))
            why = "; ".join(p["notes"]) if p else "no prediction"
            rows.append([m["cc"], m["label"] or "-"] + ["-"] * len(COMPARE) + [why])
            continue
        cells = []
        for key, _, scale, nd in COMPARE:
            k = m.get(key)
            mean, hw = model.get(key, (None, None))
            ks = "-" if k is None else f"{k * scale:.{nd}f}"
            ms_ = "-" if mean is None else (f"{mean * scale:.{nd}f}" + (f"±{hw * scale:.{nd}f}" if hw else ""))
            cells.append(f"{ks} / {ms_}")
        p = preds[(m["cc"], m["label"] or "")]
        rows.append([m["cc"], m["label"] or "-"] + cells + ["; ".join(p["notes"]) or "-"])
    return rows


def fct_compare_rows(ms, preds):
    """Per run and FCT row (kind, class, size): n, mean and p99 as 'kernel / model'."""
    rows = []
    for m in ms:
        model = model_of(m, preds)
        if not model:
            continue
        for r in m["fct"]:
            key = f"{r['kind']} {r['class']} {r['size']}"
            mm, mp, mn = (model.get(f"fct_{x} {key}", (None, None))[0] for x in ("mean_ms", "p99_ms", "n"))
            rows.append([m["cc"], m["label"] or "-", r["kind"], r["class"], r["size"],
                         f"{r['n']} / {fmt(mn, 0)}", f"{fmt(r['mean_ms'], 0)} / {fmt(mm, 0)}",
                         f"{fmt(r['p99_ms'], 0)} / {fmt(mp, 0)}"])
    return rows


def fct_rows(ms):
    out = []
    for m in ms:
        for r in m["fct"]:
            out.append([m["cc"], m["label"] or "-", r["kind"], r["class"], r["size"], str(r["n"]),
                        fmt(r["mean_ms"], 1), fmt(r["p99_ms"], 1)])
    return out


def plot_run(raw, m, ts, defs, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    flows = raw["flows"]
    fig, ax = plt.subplots(4, 1, figsize=(9, 11), sharex=True)
    colors = {"intra": "tab:blue", "inter": "tab:red"}
    for f in flows:
        s = ts["rates"][str(f["id"])]
        ax[0].plot([t + defs["bin_s"] / 2 for t, _ in s], [r / 1e6 for _, r in s],
                   color=colors[f["class"]], alpha=0.7, lw=1,
                   label=f"{f['class']}" if f is next(g for g in flows if g["class"] == f["class"]) else None)
        r = ts["rtt"][str(f["id"])]
        ax[1].plot([t for t, _ in r], [v for _, v in r], color=colors[f["class"]], alpha=0.6, lw=0.8)
    ax[0].set_ylabel(f"rate (Mbit/s, {defs['bin_s']}s bins)")
    ax[0].legend(loc="upper right")
    ax[1].set_ylabel("srtt (ms)")
    ax[1].set_yscale("log")
    q = ts["queue"]
    ax[2].plot([x[0] for x in q], [x[1] / 1000 for x in q], color="black", lw=0.8)
    ax[2].set_ylabel(f"queue {raw['bottleneck']} (kB)")
    j = [(t, v) for t, v in ts["jain"] if v is not None]
    ax[3].plot([t + defs["bin_s"] / 2 for t, _ in j], [v for _, v in j], color="tab:green")
    ax[3].axhline(defs["converged_jain"], ls="--", color="gray", lw=0.8)
    ax[3].set_ylim(0, 1.05)
    ax[3].set_ylabel("Jain's index")
    ax[3].set_xlabel("time (s)")
    fig.suptitle(f"{raw['scenario']}: {raw['run_id']}")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(outdir, f"{raw['run_id']}.{ext}"), dpi=90)
    plt.close(fig)


def plot_compare(ms, defs, outdir, name):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ccs = list(dict.fromkeys(m["cc"] for m in ms))
    labels = list(dict.fromkeys(m["label"] or "-" for m in ms))
    fig, ax = plt.subplots(1, 3, figsize=(13, 4))
    width = 0.8 / max(1, len(ccs))
    for i, cc in enumerate(ccs):
        by = {m["label"] or "-": m for m in ms if m["cc"] == cc}
        xs = [k + i * width for k in range(len(labels))]
        ax[0].bar(xs, [by[lab]["jain"] or 0 if lab in by else 0 for lab in labels], width, label=cc)
        ax[1].bar(xs, [(by[lab]["inter_intra_ratio"] or 0) if lab in by else 0 for lab in labels], width)
        ax[2].bar(xs, [(by[lab]["utilization"] or 0) * 100 if lab in by else 0 for lab in labels], width)
    for a, t in zip(ax, ("Jain's index (steady)", "inter/intra per-flow throughput", "bottleneck utilization %")):
        a.set_xticks([k + width * (len(ccs) - 1) / 2 for k in range(len(labels))])
        a.set_xticklabels(labels)
        a.set_title(t)
    ax[1].axhline(1.0, ls="--", color="gray", lw=0.8)
    ax[0].legend()
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(outdir, f"{name}.{ext}"), dpi=90)
    plt.close(fig)
    if any(m["fct"] for m in ms):
        classes = defs["size_classes"]
        fig, ax = plt.subplots(1, 2, figsize=(12, 4))
        for i, m in enumerate(ms):
            for k, stat in enumerate(("mean_ms", "p99_ms")):
                vals = []
                for c in classes:
                    v = [r[stat] for r in m["fct"] if r["size"] == c]
                    vals.append(max(v) if v else 0)
                ax[k].bar([x + i * 0.8 / len(ms) for x in range(len(classes))], vals, 0.8 / len(ms),
                          label=m["run_id"])
        for k, t in enumerate(("FCT mean (ms)", "FCT p99 (ms)")):
            ax[k].set_xticks([x + 0.4 - 0.4 / len(ms) for x in range(len(classes))])
            ax[k].set_xticklabels(classes)
            ax[k].set_yscale("log")
            ax[k].set_title(t)
        ax[0].legend(fontsize=7)
        fig.tight_layout()
        for ext in ("png", "svg"):
            fig.savefig(os.path.join(outdir, f"{name}-fct.{ext}"), dpi=90)
        plt.close(fig)


def phase_rows(ms):
    """(cc, point, phase, flows, port, util%, queue mean kB, p99 kB) rows
    for runs with more than one phase (flows joining or leaving, links
    failing); util% is 'kernel / model' where the run has a model."""
    rows = []
    for m in ms:
        ph = m.get("phases") or []
        if len(ph) < 2:
            continue
        for p in ph:
            span = f"{p['from_s']:g}-{p['to_s']:g} s"
            for port, v in sorted(p["ports"].items()):
                util = fmt(v["util"], 1, pct=True)
                if m.get("model"):
                    util += " / " + model_cell(m["model"], f"phase {span} util {port}", 100, 1)
                rows.append([m["cc"], m["label"] or "-", span, ",".join(str(i) for i in p["flows"]) or "-", port,
                             util, fmt(v["queue_mean_kb"], 1), fmt(v["queue_p99_kb"], 1)])
    return rows


def phase_flow_rows(ms, raws):
    """(cc, point, phase, long flows, their Mbit/s, stuck, sized flows
    started in the phase, their FCT mean and p99 (ms) and failures, the
    agent's moves) rows for runs with events (a WAN path failing or
    healing): 'kernel / model' where the run has a model. raws: run_id ->
    raw run."""
    rows = []
    for m in ms:
        raw = raws.get(m["run_id"], {})
        if not raw.get("events"):
            continue
        moves = sum((r or {}).get("reroutes") or 0 for r in (raw.get("reroutes") or {}).values())
        for p in m.get("phases") or []:
            span = f"{p['from_s']:g}-{p['to_s']:g} s"
            cells = {"long_mbps": fmt(p.get("long_mbps"), 1), "stuck": fmt(p.get("stuck"), 0),
                     "fct_mean_ms": fmt(p.get("fct_mean_ms"), 0), "fct_p99_ms": fmt(p.get("fct_p99_ms"), 0),
                     "fct_failed": fmt(p.get("fct_failed"), 0) if p.get("fct_n") else "-"}
            if m.get("model"):
                for k in cells:
                    cells[k] += " / " + model_cell(m["model"], f"phase {span} {k}", 1, 1 if k in ("long_mbps", "stuck") else 0)
            rows.append([m["cc"], m["label"] or "-", span, str(len(p["flows"])), cells["long_mbps"], cells["stuck"],
                         str(p.get("fct_n") or 0), cells["fct_mean_ms"], cells["fct_p99_ms"], cells["fct_failed"],
                         str(moves) if raw.get("reroute") == "agent" else "-"])
    return rows


REPEAT_METRICS = [  # (header, getter, decimals)
    ("util%", lambda m: None if m["utilization"] is None else 100 * m["utilization"], 1),
    ("jain", lambda m: m["jain"], 3),
    ("conv_s", lambda m: m["convergence_s"], 1),
    ("intra_Mbps", lambda m: m["intra"]["per_flow_mbps"], 1),
    ("inter_Mbps", lambda m: m["inter"]["per_flow_mbps"], 1),
    ("inter/intra", lambda m: m["inter_intra_ratio"], 2),
    ("q_mean_kB", lambda m: m["queue_mean_kb"], 1),
    ("q_p99_kB", lambda m: m["queue_p99_kb"], 1),
    ("drops", lambda m: m["drops"], 0),
    ("retx", lambda m: m["retransmits"], 0),
    ("cpu%", lambda m: None if m.get("guest_cpu_busy") is None else 100 * m["guest_cpu_busy"], 0),
]


def combine(out, dirs):
    """OUT/report.md and OUT/summary.json over the repetitions in `dirs` (each
    a run directory with its own summary.json): per (cc, point) and metric the
    mean, the 95 % interval and how many repetitions had a value; the same per
    FCT row (traffic, class, size) and per phase and port (utilization)."""
    reps = []
    for d in dirs:
        try:
            with open(os.path.join(d, "summary.json")) as fh:
                reps.append(json.load(fh))
        except OSError as e:
            print(f"report.py: {d}: no summary.json ({e.strerror})", file=sys.stderr)
            sys.exit(1)
    try:
        sc = scenario_of(dirs[0])
    except OSError:
        sc = {}
    keys, vals = [], {}
    for rep in reps:
        for m in rep["runs"]:
            k = (m["cc"], m["label"] or "-")
            if k not in vals:
                keys.append(k)
                vals[k] = []
            vals[k].append(m)
    # Every list of values to reduce, by a unique name; one call computes
    # their means and intervals (testbed/metrics: `xdcc-metrics interval`).
    values = {}
    for i, k in enumerate(keys):
        for name, get, _ in REPEAT_METRICS:
            values[f"{i} {name}"] = [v for v in (get(m) for m in vals[k]) if v is not None]
        for m in vals[k]:
            for r in m.get("fct") or []:
                row = f"{r['kind']} {r['class']} {r['size']}"
                for stat in ("mean_ms", "p99_ms"):
                    values.setdefault(f"{i} fct {stat} {row}", []).append(r[stat])
            for ph in m.get("phases") or []:
                for port, v in ph["ports"].items():
                    values.setdefault(f"{i} phase {ph['from_s']:g}-{ph['to_s']:g} s {port}", []).append(
                        None if v["util"] is None else 100 * v["util"])
    iv = metrics_tool("interval", stdin=json.dumps(values))
    rows = []
    for i, k in enumerate(keys):
        row = {"cc": k[0], "point": k[1], "repeats": len(vals[k]),
               "model": next((m["model"] for m in vals[k] if m.get("model")), None)}
        for name, _, _ in REPEAT_METRICS:
            row[name] = dict(iv[f"{i} {name}"], values=values[f"{i} {name}"])
        row["fct"] = {name[len(f"{i} fct "):]: dict(iv[name], values=v) for name, v in values.items()
                      if name.startswith(f"{i} fct ")}
        row["phases"] = {name[len(f"{i} phase "):]: dict(iv[name], values=v) for name, v in values.items()
                         if name.startswith(f"{i} phase ")}
        rows.append(row)
    cpu = [m["guest_cpu_busy"] for rep in reps for m in rep["runs"] if m.get("guest_cpu_busy") is not None]
    gaps = [m["sample_gap_max_ms"] for rep in reps for m in rep["runs"] if m.get("sample_gap_max_ms") is not None]
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump({"scenario": reps[0]["scenario"], "description": sc.get("description"), "paper": sc.get("paper"),
                   "repeats": len(reps), "guest_cpu_busy": [min(cpu), max(cpu)] if cpu else None,
                   "sample_gap_max_ms": max(gaps) if gaps else None, "rows": rows}, fh, indent=1)
    md = [f"# {reps[0]['scenario']}: {len(reps)} repetitions", "",
          "Mean ± half-width of the 95 % confidence interval (Student's t) per metric; `(n/N)`: only n of "
          "the N repetitions had a value (e.g. `conv_s` when a run never converged). Each repetition's own "
          "report: " + ", ".join(f"[{os.path.basename(d)}]({os.path.basename(d)}/report.md)" for d in dirs) + ".", "",
          "| " + " | ".join(["cc", "point"] + [h for h, _, _ in REPEAT_METRICS]) + " |",
          "|" + "---|" * (len(REPEAT_METRICS) + 2)]
    for r in rows:
        md.append("| " + " | ".join([r["cc"], r["point"]] + [interval_cell(r[h], r["repeats"], nd)
                                                             for h, _, nd in REPEAT_METRICS]) + " |")
    modelled = [r for r in rows if r["model"]]
    if modelled:
        md += ["", "## Kernel next to the model", "",
               "Each cell: the kernel's mean ± 95 % interval over the repetitions / the simulator's prediction "
               "(`xdcc-sim run` on the same scenario, mean ± 95 % interval over its seeds).", ""]
        md += kernel_model_table(modelled)
    with open(os.path.join(out, "report.md"), "w") as fh:
        fh.write("\n".join(md) + "\n")
    print("\n".join(md[4:]))


def interval_cell(c, repeats, nd):
    """'mean ± ci' of an interval from `combine`, '(n/N)' when only n of N had a value."""
    if c["mean"] is None:
        return "-"
    s = f"{c['mean']:.{nd}f} ± {c['ci95']:.{nd}f}"
    return s if c["n"] == repeats else f"{s} ({c['n']}/{repeats})"


def model_cell(model, key, scale, nd):
    mean, hw = (model or {}).get(key, (None, None))
    return "-" if mean is None else f"{mean * scale:.{nd}f} ± {hw * scale:.{nd}f}"


def kernel_model_table(rows):
    """Markdown rows: per (cc, point) and COMPARE metric, 'kernel / model'
    (the model's cell only for CCs the simulator models)."""
    md = ["| cc | point | " + " | ".join(h for _, h, _, _ in COMPARE) + " |", "|" + "---|" * (len(COMPARE) + 2)]
    for r in rows:
        cells = []
        for key, head, scale, nd in COMPARE:
            name = {"utilization": "util%"}.get(key, head)
            kernel = interval_cell(r[name], r["repeats"], nd) if name in r else "-"
            cells.append(f"{kernel} / {model_cell(r['model'], key, scale, nd)}" if r["model"] else kernel)
        md.append("| " + " | ".join([r["cc"], r["point"]] + cells) + " |")
    return md


RESULTS_BEGIN = "<!-- BEGIN generated by testbed/results.sh: do not edit by hand -->"
RESULTS_END = "<!-- END generated -->"


def results(results_md, dirs):
    """Rewrites the generated part of RESULTS.md (between RESULTS_BEGIN and
    RESULTS_END) from the combined repetitions in `dirs` (testbed/run.sh
    SCENARIO --repeat N --out DIR): per scenario the paper's claim, then
    kernel / model per metric, FCT rows and per-phase utilization."""
    with open(results_md) as fh:
        text = fh.read()
    if RESULTS_BEGIN not in text or RESULTS_END not in text:
        sys.exit(f"report.py: {results_md} has no generated section ({RESULTS_BEGIN} ... {RESULTS_END})")
    md = []
    for d in dirs:
        try:
            with open(os.path.join(d, "summary.json")) as fh:
                sm = json.load(fh)
        except OSError as e:
            sys.exit(f"report.py: {d}: no summary.json ({e.strerror})")
        if "rows" not in sm:
            sys.exit(f"report.py: {d}: not a repeated run (testbed/run.sh SCENARIO --repeat N --out {d})")
        rows = sm["rows"]
        cpu = sm.get("guest_cpu_busy")
        md += [f"### `{sm['scenario']}`: {sm.get('description') or ''}", ""]
        if sm.get("paper"):
            md += [f"Paper: {sm['paper']}", ""]
        md += [f"{sm['repeats']} repetitions; guest CPU "
               + (f"{100 * cpu[0]:.0f}–{100 * cpu[1]:.0f} %" if cpu else "unknown")
               + (f", largest sampler gap {sm['sample_gap_max_ms']:.0f} ms" if sm.get("sample_gap_max_ms") else "")
               + ". Cells: kernel mean ± 95 % interval over the repetitions / model (`xdcc-sim`, mean ± 95 % "
               "over 3 seeds; only for xdcc's CCs).", ""]
        md += kernel_model_table(rows) + [""]
        # (In the report's order: traffic, class, size class.)
        fct = [(r, row) for r in rows for row in r["fct"] if row.startswith("mean_ms ")]
        if fct:
            md += ["| cc | point | traffic | class | size | FCT mean ms | FCT p99 ms |", "|---|---|---|---|---|---|---|"]
            for r, row in fct:
                kind, cls, size = row[len("mean_ms "):].split(" ", 2)
                cells = []
                for stat in ("mean_ms", "p99_ms"):
                    k = interval_cell(r["fct"][f"{stat} {kind} {cls} {size}"], r["repeats"], 0)
                    cells.append(f"{k} / {model_cell(r['model'], f'fct_{stat} {kind} {cls} {size}', 1, 0)}"
                                 if r["model"] else k)
                md.append(f"| {r['cc']} | {r['point']} | {kind} | {cls} | {size} | " + " | ".join(cells) + " |")
            md += [""]
        phased = [r for r in rows if len({p.rsplit(" ", 1)[0] for p in r["phases"]}) >= 2]
        if phased:
            md += ["Utilization % per phase (periods between long-flow starts and stops, each over its second half):", "",
                   "| cc | point | phase | port | util % |", "|---|---|---|---|---|"]
            for r in phased:
                for ph, c in sorted(r["phases"].items(), key=lambda kv: (float(kv[0].split("-")[0]), kv[0])):
                    span, port = ph.rsplit(" ", 1)
                    md.append(f"| {r['cc']} | {r['point']} | {span} | {port} | {interval_cell(c, r['repeats'], 1)} |")
            md += [""]
    a = text.index(RESULTS_BEGIN) + len(RESULTS_BEGIN)
    b = text.index(RESULTS_END)
    with open(results_md, "w") as fh:
        fh.write(text[:a] + "\n\n" + "\n".join(md) + "\n" + text[b:])
    print(f"report.py: {results_md}: generated section from {len(dirs)} scenario(s)")


def scenario_of(out):
    """What a run directory's report says of its scenario, from its plan
    (`plan.json`, written by `xdcc-sim plan`), or from the `scenario.json`
    that runs recorded before the planner: name, description, paper,
    entries (`ccs`) and sweep labels (`points`), the settings every run
    shares, the WAN events and cross traffic, whether sized flows run, and
    which entries the model predicts."""
    path = os.path.join(out, "plan.json")
    if os.path.isfile(path):
        with open(path) as fh:
            plan = json.load(fh)
        run = plan["runs"][0]
        t = run["traffic"]
        return dict(plan["scenario"], **{k: run[k] for k in ("duration_s", "sample_ms", "bottleneck")},
                    events=[{"link": f"wan{e['path']}", "action": e["action"], "at_s": e["at_s"]} for e in t["events"]],
                    cross=[{"link": f"wan{c['path']}", "streams": c["streams"], "start_s": c["start_s"], "stop_s": c["stop_s"]}
                           for c in t["cross"]],
                    sized=any(r["traffic"]["sized"] for r in plan["runs"]),
                    modelled={r["entry"] for r in plan["runs"] if r["modelled"]})
    with open(os.path.join(out, "scenario.json")) as fh:
        sc = json.load(fh)
    sw = sc.get("sweep")
    return dict(sc, points=[f"{sw['key'].split('.')[-1]}={v}" for v in sw["values"]] if sw else [""],
                cross=[{"link": c["link"], "streams": c.get("flows", 1), "start_s": c.get("start_s", 0),
                        "stop_s": c.get("stop_s", sc["duration_s"])} for c in sc.get("cross") or []],
                sized=bool(sc.get("workload") or sc.get("incast")),
                modelled={c for c in sc["ccs"] if c not in ("cubic", "bbr", "reno", "vegas")})


def network_of(raw):
    """The network a raw run was built on: its plan's (`network`), or the
    topology dict that runs recorded before the planner."""
    if "network" in raw:
        n = raw["network"]
        return dict(n, hosts_per_dc=len(n["hosts"]) // 2)
    t = raw["topology"]
    return {"hosts_per_dc": t["hosts_per_dc"], "dc_rate_mbit": t["dc"]["rate_mbit"], "intra_rtt_us": t["dc"]["intra_rtt_us"],
            "wan_rate_mbit": t["wan"]["rate_mbit"], "wan_paths": t["wan_paths"]}

def main():
    modes = {"--results": results, "--combine": combine}  # MODE TARGET DIR...
    if len(sys.argv) >= 2 and sys.argv[1] in modes:
        if len(sys.argv) < 4:
            print(__doc__.strip(), file=sys.stderr)
            sys.exit(2)
        modes[sys.argv[1]](sys.argv[2], sys.argv[3:])
        return
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    raws = sorted(glob.glob(os.path.join(out, "raw", "*.json")))
    if not raws:
        print(f"report.py: no runs under {out}/raw/", file=sys.stderr)
        sys.exit(1)
    sc = scenario_of(out)
    order = {cc: i for i, cc in enumerate(sc["ccs"])}
    defs, analysed = analyze(raws)
    runs = []
    for p, (m, ts) in zip(raws, analysed):
        with open(p) as fh:
            runs.append((json.load(fh), m, ts))
    labels = sc["points"]
    runs.sort(key=lambda r: (labels.index(r[1]["label"]) if r[1]["label"] in labels else 99, order.get(r[1]["cc"], 99)))
    ms = [m for _, m, _ in runs]
    os.makedirs(os.path.join(out, "plots"), exist_ok=True)
    os.makedirs(os.path.join(out, "timeseries"), exist_ok=True)
    for raw, m, ts in runs:
        with open(os.path.join(out, "timeseries", raw["run_id"] + ".csv"), "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["t_s", "flow", "class", "rate_mbps", "srtt_ms", "cwnd"])
            for f in raw["flows"]:
                rt = dict(ts["rtt"][str(f["id"])])
                cw = dict(ts["cwnd"][str(f["id"])])
                for t, r in ts["rates"][str(f["id"])]:
                    near = min(rt, key=lambda x: abs(x - t - defs["bin_s"]), default=None)
                    w.writerow([f"{t:.2f}", f["id"], f["class"], f"{r / 1e6:.3f}",
                                f"{rt[near]:.3f}" if near is not None else "",
                                f"{cw[near]:g}" if near in cw else ""])
        try:
            plot_run(raw, m, ts, defs, os.path.join(out, "plots"))
        except ImportError:
            pass
    try:
        plot_compare(ms, defs, os.path.join(out, "plots"), sc["name"])
        have_plots = True
    except ImportError:
        have_plots = False
    preds = load_prediction(out)
    for m in ms:
        m["model"] = model_of(m, preds)
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump({"scenario": sc["name"], "runs": ms}, fh, indent=1)
    with open(os.path.join(out, "summary.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([c[0] for c in COLUMNS])
        for m in ms:
            w.writerow([c[1](m) for c in COLUMNS])
    md = [f"# {sc['name']}: {sc['description']}", ""]
    if sc.get("paper"):
        md += [f"Paper claims: {sc['paper']}", ""]
    n = network_of(runs[0][0])
    md += [f"Topology: {n['hosts_per_dc']} hosts per DC, DC links {n['dc_rate_mbit']} Mbit/s, "
           f"intra-DC RTT {n['intra_rtt_us']} us, WAN {n['wan_rate_mbit']} Mbit/s over "
           f"{n['wan_paths']} path(s); bottleneck `{sc['bottleneck']}`; {sc['duration_s']} s per run, "
           f"samples every {sc['sample_ms']} ms. Steady-state metrics over the second half of the "
           f"period when all long flows run; Jain over {defs['bin_s']} s bins, converged when it "
           f"stays >= {defs['converged_jain']} (definitions: `testbed/metrics`, shared with the simulator). `cpu%` is the guest's CPU use during the run: near 100 "
           f"the emulation itself limits the result (`raw/RUN.json` \"cpu\": its split into user, system, "
           f"irq and softirq, and the softirqs per second by type).", "", table(ms, markdown=True), ""]
    cr = compare_rows(ms, preds) if preds else []
    if cr:
        seeds = next(iter(preds.values()))["seeds"]
        md += ["## Kernel next to the model", "",
               "Each cell: the kernel's measurement / the simulator's prediction for the same scenario "
               f"(`xdcc-sim run`, the same ports, profiles, tunables and traffic; mean ± 95 % interval over "
               f"{seeds} seeds). The model runs the same algorithm code without the guest: where the two "
               "disagree and the model matches the paper, the kernel integration or the emulation is the "
               "suspect; where both disagree with the paper, the algorithm (or its parameters) is.", "",
               "| cc | point | " + " | ".join(h for _, h, _, _ in COMPARE) + " | not modelled |",
               "|" + "---|" * (len(COMPARE) + 3)]
        md += ["| " + " | ".join(r) + " |" for r in cr]
        md += [""]
        fc = fct_compare_rows(ms, preds)
        if fc:
            md += ["Flow completion times, kernel / model (mean over seeds of each seed's mean and p99; "
                   "the model's FCT plus one base RTT for the handshake the testbed's timing includes):", "",
                   "| cc | point | traffic | class | size | n | mean ms | p99 ms |", "|---|---|---|---|---|---|---|---|"]
            md += ["| " + " | ".join(r) + " |" for r in fc]
            md += [""]
    pf = phase_flow_rows(ms, {raw["run_id"]: raw for raw, _, _ in runs})
    if pf:
        ev = "; ".join(f"{e['link']} {e['action']} at {e['at_s']:g} s" for e in sc["events"])
        cross = "; ".join(f"{c['streams']} cross flow(s) on {c['link']} {c['start_s']:g}-{c['stop_s']:g} s"
                          for c in sc["cross"])
        md += ["## Long flows per phase", "",
               f"Events: {ev}" + (f"; {cross}" if cross else "") + ". Per phase (cut at events and at flow starts and "
               "stops, measured over its second half): the long flows' summed throughput, the flows "
               "stuck below 1/400 of the bottleneck port's rate, the sized flows that started in it (their mean and "
               "p99 FCT, and how many failed or never finished), and the agent's moves over the whole run "
               "(`reroute = agent`); kernel / model.", "",
               "| cc | point | phase | long flows | Mbit/s | stuck | sized | FCT mean ms | FCT p99 ms | failed | agent moves |",
               "|---|---|---|---|---|---|---|---|---|---|---|"]
        md += ["| " + " | ".join(r) + " |" for r in pf]
        md += [""]
    pr = phase_rows(ms)
    if pr:
        md += ["## Phases", "", "Each period between long-flow (and cross-traffic) starts and stops and the run's events, "
               "measured over its second half; util% kernel / model where the run has a model.", "",
               "| cc | point | phase | flows | port | util% | q_mean_kB | q_p99_kB |", "|---|---|---|---|---|---|---|---|"]
        md += ["| " + " | ".join(r) + " |" for r in pr]
        md += [""]
    fr = fct_rows(ms)
    if fr:
        md += ["## Flow completion times", "",
               "| cc | point | traffic | class | size | n | mean ms | p99 ms |", "|---|---|---|---|---|---|---|---|"]
        md += ["| " + " | ".join(r) + " |" for r in fr]
        md += [""]
        failed = sum(m["fct_failed"] for m in ms)
        md += [f"Sized flows that failed or did not finish: {failed}.", ""]
    if have_plots:
        md += ["## Plots", "", f"![comparison](plots/{sc['name']}.png)", ""]
        if fr:
            md += [f"![FCT](plots/{sc['name']}-fct.png)", ""]
        md += [f"![{m['run_id']}](plots/{m['run_id']}.png)" for m in ms]
    md += ["", "Files: `summary.json`, `summary.csv`, `timeseries/*.csv`, `raw/*.json` "
           "(every sample), `raw/*.profiles/` (the switch profiles applied)."]
    with open(os.path.join(out, "report.md"), "w") as fh:
        fh.write("\n".join(md) + "\n")
    print(table(ms))
    if cr:
        print("\nkernel / model")
        w = [max(len(r[i]) for r in cr + [["cc", "point"] + [h for _, h, _, _ in COMPARE]]) for i in range(2 + len(COMPARE))]
        print("  ".join(h.ljust(w[i]) for i, h in enumerate(["cc", "point"] + [h for _, h, _, _ in COMPARE])))
        for r in cr:
            print("  ".join(x.ljust(w[i]) for i, x in enumerate(r[:-1])))
    if pr:
        print()
        print("cc            point  phase        flows    port            util%  q_mean_kB  q_p99_kB")
        for r in pr:
            print(f"{r[0]:<13} {r[1]:<6} {r[2]:<12} {r[3]:<8} {r[4]:<15} {r[5]:>5} {r[6]:>10} {r[7]:>9}")
    if fr:
        print()
        print("cc       point  traffic   class  size        n    mean_ms    p99_ms")
        for r in fr:
            print(f"{r[0]:<8} {r[1]:<6} {r[2]:<9} {r[3]:<6} {r[4]:<10} {r[5]:>3} {r[6]:>10} {r[7]:>9}")
    print(f"\nreport: {os.path.join(out, 'report.md')}")


if __name__ == "__main__":
    main()
