#!/usr/bin/env python3
"""Check that every relative link in the project's Markdown resolves: the file
exists and, for `file#anchor` or `#anchor`, the anchor is a heading of that
file (GitHub's rule: lower case, punctuation dropped, spaces to hyphens,
duplicates suffixed -1, -2, ...). External links (http, https, mailto) are
not fetched. Used by test.sh; exits 1 listing the broken links.

    docs/check_links.py [FILE.md ...]   (default: README.md, docs/*.md,
                                         testbed/RESULTS.md, userspace/README.md)
"""

import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def anchors(path):
    """GitHub's anchors for the headings of a Markdown file."""
    seen, out = {}, set()
    in_fence = False
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            m = None if in_fence else HEADING.match(line)
            if not m:
                continue
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2))  # links keep their text
            slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(path):
    """(line number, target) of every Markdown link outside code blocks."""
    in_fence = False
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                yield i, m.group(1)


def broken(path):
    bad = []
    for line, target in links(path):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        rel = os.path.relpath(path, ROOT)
        if not os.path.exists(dest):
            bad.append(f"{rel}:{line}: {target}: no such file")
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            bad.append(f"{rel}:{line}: {target}: no heading with anchor #{anchor}")
    return bad


def main(argv):
    files = argv or [os.path.join(ROOT, f) for f in ["README.md", "testbed/RESULTS.md", "userspace/README.md"]] \
        + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    bad = [b for f in files for b in broken(os.path.abspath(f))]
    for b in bad:
        print(f"FAIL: {b}")
    n = sum(1 for f in files for _ in links(os.path.abspath(f)))
    print(f"{'FAIL' if bad else 'PASS'}: links: {n} links in {len(files)} files, {len(bad)} broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
