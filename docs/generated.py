"""Shared by the docs generators (gen_tunables.py, gen_cli.py): write a
generated page, or with --check say whether the committed one is stale."""
import os
import sys


def write_or_check(path, new, source):
    """`source`: what the page is generated from, for the PASS line."""
    rel = os.path.relpath(path, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = os.path.relpath(sys.argv[0])
    if "--check" in sys.argv[1:]:
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if old != new:
            print(f"FAIL: {rel} is stale: run {script}", file=sys.stderr)
            sys.exit(1)
        print(f"PASS: {rel} matches {source}")
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
