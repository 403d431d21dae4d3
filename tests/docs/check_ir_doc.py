#!/usr/bin/env python3
"""Every op of ir/Ops.def has a row in docs/ir.md's op reference: a table row
whose first cell starts with the op's name in backticks, or names it in a
group (`tile.add sub mul div` documents tile.sub too). Prints the missing ops
and exits 1 when there are any.
    check_ir_doc.py OPS_DEF IR_MD"""
import re
import sys


def documented(ir_md):
    """Op names the first cells of ir.md's table rows document."""
    names = set()
    for line in ir_md.splitlines():
        m = re.match(r"\|\s*`([a-z_]+)\.([a-z0-9_]+)((?: [a-z0-9_]+)*)", line)
        if m:
            dialect = m.group(1)
            names.add(f"{dialect}.{m.group(2)}")
            names.update(f"{dialect}.{w}" for w in m.group(3).split())
    return names


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    ops_def, ir_md = (open(p).read() for p in sys.argv[1:])
    ops = re.findall(r'^FNK_OP\(\w+,\s*"([a-z_]+\.[a-z0-9_]+)"', ops_def, re.M)
    missing = [op for op in ops if op not in documented(ir_md)]
    for op in missing:
        print(f"docs/ir.md: no row for {op}")
    print(f"{len(ops) - len(missing)} of {len(ops)} ops of ir/Ops.def documented")
    return 1 if missing or not ops else 0


if __name__ == "__main__":
    sys.exit(main())
