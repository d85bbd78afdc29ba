#!/usr/bin/env python3
"""Checks the Grafana dashboard against what the agent really exports.

    check_dashboard.py DASHBOARD.json SCRAPE.txt

SCRAPE.txt is one scrape of `xdcc agent --metrics` (Prometheus text 0.0.4 or
OpenMetrics). Every panel must have an id of its own, a position, the
dashboard's Prometheus data source variable and at least one query; every
`xdcc_*` name a query uses must be a metric the scrape declares (`# TYPE`)
or samples, and a name under rate()/increase() must be a counter. Prints one
line per problem on stderr and exits 1 if there is any, else prints PASS and exits 0.
"""
import json
import re
import sys

NAME = re.compile(r"\bxdcc_[a-z0-9_]+")
RATE = re.compile(r"\b(?:rate|irate|increase)\(\s*(xdcc_[a-z0-9_]+)")


def exported(scrape):
    """(every metric name the scrape declares or samples, {name: type})."""
    names, types = set(), {}
    for line in scrape.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(None, 3)
            types[name] = kind
            names.add(name)
            if kind == "counter":  # OpenMetrics: the family is named without _total
                names.add(name + "_total")
                types[name + "_total"] = kind
            if kind == "histogram":  # its series only grow: rate() applies
                for suffix in ("_bucket", "_sum", "_count"):
                    names.add(name + suffix)
                    types[name + suffix] = "counter"
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names, types


def problems(dashboard, scrape):
    names, types = exported(scrape)
    out, ids = [], set()
    panels = dashboard.get("panels") or []
    if not panels:
        out.append("the dashboard has no panels")
    variables = {v.get("name") for v in dashboard.get("templating", {}).get("list", [])}
    for p in panels:
        title = p.get("title", "?")
        if p.get("id") in ids:
            out.append(f"panel '{title}': id {p.get('id')} is used twice")
        ids.add(p.get("id"))
        if not {"h", "w", "x", "y"} <= set(p.get("gridPos", {})):
            out.append(f"panel '{title}': no gridPos")
        uid = p.get("datasource", {}).get("uid", "")
        if not (uid.startswith("${") and uid[2:-1] in variables):
            out.append(f"panel '{title}': data source '{uid}' is not a dashboard variable")
        targets = p.get("targets") or []
        if not targets:
            out.append(f"panel '{title}': no query")
        for t in targets:
            expr = t.get("expr", "")
            used = NAME.findall(expr)
            if not used:
                out.append(f"panel '{title}': query '{expr}' names no xdcc metric")
            for n in used:
                if n not in names:
                    out.append(f"panel '{title}': {n} is not exported by the agent")
            for n in RATE.findall(expr):
                if n in names and types.get(n) != "counter":
                    out.append(f"panel '{title}': rate() of {n}, which is a {types.get(n, 'metric without TYPE')}, not a counter")
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        dashboard = json.load(f)
    with open(sys.argv[2]) as f:
        scrape = f.read()
    out = problems(dashboard, scrape)
    for line in out:
        print("FAIL:", line, file=sys.stderr)
    if out:
        sys.exit(1)
    print(f"PASS: {len(dashboard['panels'])} panels, every query names a metric the agent exports")


if __name__ == "__main__":
    main()
