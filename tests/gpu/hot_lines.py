"""Where a kernel's warps wait, line by line: a summary of ncu's source page.

    python3 tests/gpu/hot_lines.py NCU_CSV [--top N]

NCU_CSV is what `ncu --section SourceCounters --page source --print-source
sass --csv` prints for one kernel (`tests/gpu/stalls.sh --lines` writes it). Prints
the warp instructions executed, then the SASS lines with the most stall
samples: each one's share of all samples, its two largest stall reasons and
the line before it (a stall is charged to the instruction that cannot issue,
so the line before often names what it waits for: the load a widening waits
on, the barrier after a reduction). Per-kernel counters (stalls.sh) say how
long warps wait; this says at which instruction, which is how backend v8
found a uniform-register move waiting on a prefetch (docs/perf-notes.md).
Then, when the page has ncu's shared-memory wavefront columns, how many
wavefronts the shared loads and stores took against the ideal and the lines
with the most excess: how backend v17 found rmsnorm_bwd_split_smem's dw
accesses conflicting two ways (8 wavefronts per LDS.128 where 4 are ideal).
"""
import argparse
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def _num(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read_lines(rows):
    """The SASS lines of ncu's source-page CSV as dicts keyed by its header
    (the first row that starts with "Address"); other rows are skipped."""
    header, lines = None, []
    for row in rows:
        if len(row) >= 2 and row[0] == "Address":
            header = row
        elif header and len(row) == len(header):
            lines.append(dict(zip(header, row)))
    if header is None:
        raise ValueError("no 'Address' header row: not ncu's --page source --csv output")
    if SAMPLES not in header or "Source" not in header:
        raise ValueError(f"the source page has no '{SAMPLES}' or 'Source' column (ncu --section SourceCounters)")
    return lines


def summarize(lines, top=10):
    """(instructions executed, total samples, [(share, index, source, reasons, previous source)])."""
    reasons = [k for k in (lines[0].keys() if lines else ()) if k.startswith("stall_") and "Not Issued" not in k]
    total = sum(_num(l[SAMPLES]) for l in lines)
    executed = sum(_num(l.get(EXECUTED, "0")) for l in lines)
    hot = []
    for i in sorted(range(len(lines)), key=lambda i: -_num(lines[i][SAMPLES]))[:top]:
        line = lines[i]
        if total == 0 or _num(line[SAMPLES]) == 0:
            break
        why = sorted(((_num(line[r]), r[len("stall_"):]) for r in reasons), reverse=True)[:2]
        prev = lines[i - 1]["Source"].strip() if i > 0 else ""
        hot.append((_num(line[SAMPLES]) / total, i, line["Source"].strip(), [w for w in why if w[0] > 0], prev))
    return executed, total, hot


WAVEFRONTS = "L1 Wavefronts Shared"
IDEAL = "L1 Wavefronts Shared Ideal"


def bank_conflicts(lines, top=5):
    """(wavefronts, ideal wavefronts, [(excess, index, source)]) of the shared
    loads and stores, the lines with excess first; None without the columns."""
    if not lines or WAVEFRONTS not in lines[0] or IDEAL not in lines[0]:
        return None
    rows = [(_num(l[WAVEFRONTS]) - _num(l[IDEAL]), i, l["Source"].strip()) for i, l in enumerate(lines)]
    worst = sorted((r for r in rows if r[0] > 0), key=lambda r: -r[0])[:top]
    return sum(_num(l[WAVEFRONTS]) for l in lines), sum(_num(l[IDEAL]) for l in lines), worst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="ncu --page source --print-source sass --csv output")
    ap.add_argument("--top", type=int, default=10)
    a = ap.parse_args(argv)
    try:
        with open(a.csv, newline="") as f:
            lines = read_lines(csv.reader(f))
    except (OSError, ValueError) as e:
        print(f"hot_lines: {a.csv}: {e}", file=sys.stderr)
        return 1
    executed, total, hot = summarize(lines, a.top)
    print(f"{a.csv}: {executed:.0f} warp instructions, {total:.0f} stall samples")
    for share, i, src, why, prev in hot:
        reasons = ", ".join(f"{name} {n:.0f}" for n, name in why)
        print(f"  {100 * share:5.1f}%  line {i}: {src[:60]:60}  [{reasons}]  after: {prev[:40]}")
    conflicts = bank_conflicts(lines)
    if conflicts and conflicts[1] > 0:
        waves, ideal, worst = conflicts
        print(f"  shared memory: {waves:.0f} wavefronts, {ideal:.0f} ideal ({waves / ideal:.2f}x)")
        for excess, i, src in worst:
            print(f"    {excess:12.0f} excess  line {i}: {src[:60]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
