#!/usr/bin/env python3
"""Which side of the RMSNorm forward pays for rows off 16-byte alignment (a
bf16 row of odd width): bench/variants.fnk's rms_fwd_row_padded (the stdlib's
rmsnorm_fwd_row on rows padded past N) on x and y that are each either packed
(rows of N: off alignment in seven rows of eight) or padded to a multiple of 8
elements (aligned), beside fnk.torch's own launch and a copy of the same
bytes, timed as bench.py times (CUDA graph, L2 flushed, median), each output
checked against torch in float32.

    python3 bench/align_probe.py [--shape MxN ...] [--reps R]
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402

import fnk  # noqa: E402  (bench puts python/ on the path)
from fwd_probe import EPS  # noqa: E402


def padded(t, pad):
    """t, or a copy of it in the first N columns of rows padded to a multiple of 8 (a contiguous buffer)."""
    if not pad:
        return t
    m, n = t.shape
    buf = torch.zeros(m, (n + 7) // 8 * 8, dtype=t.dtype, device=t.device)
    buf[:, :n].copy_(t)
    return buf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", action="append", default=[], help="MxN (repeatable); N <= 8192")
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shape] or [(8192, 8191)]
    print(bench.device_id(), flush=True)
    var = fnk.load(bench.REPO / "bench" / "variants.fnk")
    fnk_f, ref_f = bench.IMPLS["rms"]
    worst = 0.0
    for m, n in shapes:
        x, w = (t.detach() for t in bench.make("rms", (m, n), torch.bfloat16))
        ref = ref_f(x.float(), w.float())
        rstd = torch.empty(m, device="cuda")
        y0 = torch.empty_like(x)
        print(f"{m}x{n} bf16:", flush=True)
        print(f"  {bench.time_graph(lambda: torch.mul(x, 1.0, out=y0), a.reps):8.2f} us  copy (torch.mul)")
        with torch.no_grad():
            worst = max(worst, bench.rel_err(fnk_f(x, w), ref))
            print(f"  {bench.time_graph(lambda: fnk_f(x, w), a.reps):8.2f} us  fnk.torch", flush=True)
        for xpad, ypad in ((False, False), (True, False), (False, True), (True, True)):
            xs = padded(x, xpad)
            y = padded(torch.full_like(x, float("nan")), ypad)
            def launch(xs=xs, y=y):
                var.rms_fwd_row_padded(xs, w, y, rstd, eps=EPS["rms"], T="bf16")
            launch()
            err = bench.rel_err(y[:, :n], ref)
            worst = max(worst, err)
            us = bench.time_graph(launch, a.reps)
            side = lambda p: "padded" if p else "packed"  # noqa: E731
            print(f"  {us:8.2f} us  x {side(xpad)}, y {side(ypad)} (err {err:.2g})", flush=True)
    print(f"largest relative error against torch float32: {worst:.3g}")
    return 0 if worst <= bench.TOLERANCE[torch.bfloat16] else 1


if __name__ == "__main__":
    sys.exit(main())
