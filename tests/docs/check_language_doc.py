#!/usr/bin/env python3
"""Keeps docs/language.md honest: every ```fnk block must compile with fnkc,
and every ```fnk-error block must fail with exit status 1 and a located
`file:line:col: error:` diagnostic. When a ```text block follows a fnk-error
block directly, each of its `example.fnk:...` lines must appear in fnkc's
output, so the messages shown in the doc are the real ones.

usage: check_language_doc.py --fnkc PATH/TO/fnkc docs/language.md
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\S*)\s*$")
LOCATED = re.compile(r"^example\.fnk:\d+:\d+: error: ", re.M)


def blocks(text):
    """Yields (tag, first line number, body) for each fenced block."""
    tag, start, body = None, 0, []
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if tag is None and m:
            tag, start, body = m.group(1), n + 1, []
        elif tag is not None and line.rstrip() == "```":
            yield tag, start, "\n".join(body) + "\n"
            tag = None
        elif tag is not None:
            body.append(line)
    if tag is not None:
        raise SystemExit(f"unterminated code block starting at line {start - 1}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fnkc", required=True)
    ap.add_argument("doc")
    args = ap.parse_args()
    fnkc = os.path.abspath(args.fnkc)
    doc = os.path.abspath(args.doc)
    items = list(blocks(open(doc, encoding="utf-8").read()))
    failures, compiled, rejected = [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "example.fnk")
        for i, (tag, line, body) in enumerate(items):
            if tag not in ("fnk", "fnk-error"):
                continue
            with open(src, "w", encoding="utf-8") as f:
                f.write(body)
            p = subprocess.run([fnkc, "example.fnk"], cwd=tmp, capture_output=True, text=True)
            where = f"{os.path.relpath(doc)}:{line}"
            if tag == "fnk":
                compiled += 1
                if p.returncode != 0:
                    failures.append(f"{where}: ```fnk block does not compile (exit {p.returncode}):\n{p.stderr}")
                continue
            rejected += 1
            if p.returncode != 1 or not LOCATED.search(p.stderr):
                failures.append(f"{where}: ```fnk-error block should fail with exit 1 and a located error, "
                                f"got exit {p.returncode}:\n{p.stderr}")
                continue
            # A ```text block right after shows the expected output.
            if i + 1 < len(items) and items[i + 1][0] == "text":
                out = p.stderr.splitlines()
                for want in items[i + 1][2].splitlines():
                    if want.startswith("example.fnk:") and want not in out:
                        failures.append(f"{os.path.relpath(doc)}:{items[i + 1][1]}: expected output line\n  {want}\n"
                                        f"not in fnkc's output:\n{p.stderr}")
    for f in failures:
        print(f, file=sys.stderr)
    print(f"{compiled} fnk blocks compiled, {rejected} fnk-error blocks rejected, {len(failures)} problems")
    return 1 if failures or compiled == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
