"""Bandwidth against row width from bench.csv: one PNG for the RMSNorm
forward sweep and one for the backward, fnk against each peer and the copy
roofline. Usage: python3 bench/plot.py bench.csv OUTDIR"""
import csv
import os
import re
import sys

import matplotlib  # noqa: F401  (ImportError here tells bench.py to skip)
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def draw(csv_path, out):
    series, roof = {}, None
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            m = re.match(r"sweep RMSNorm (fwd|bwd) N=(\d+)", row["workload"])
            if not m:
                continue
            roof = float(row["roofline_GB/s"])
            series.setdefault(m.group(1), {}).setdefault(row["impl"], []).append((int(m.group(2)), float(row["GB/s"])))
    for direction, impls in series.items():
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for impl, pts in sorted(impls.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl)
        if roof:
            ax.axhline(roof, color="gray", linestyle="--", label=f"copy roofline {roof:.0f} GB/s")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("row width N (M = 2^26 // N rows of bf16)")
        ax.set_ylabel("GB/s (each tensor read or written once)")
        ax.set_title(f"RMSNorm {'forward' if direction == 'fwd' else 'backward (dx, dw)'} on H200")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        path = os.path.join(out, f"bw_{direction}.png")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        print(f"wrote {path}")


if __name__ == "__main__":
    draw(sys.argv[1], sys.argv[2])
