#!/usr/bin/env python3
"""Where a short workload's time goes: each kernel of the 2048x8192 RMSNorm
backward (as fnk.torch launches it: python/fnk/schedules.py) timed alone and
together the way bench.py times it, beside the
same-bytes copy and a one-element kernel (the graph's floor per launch).
With --once each case runs once, outside any graph, for ncu to give each
kernel's own duration without the launch around it:
    python3 bench/split_probe.py [--reps N] [--m M] [--once]
    ncu --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
        python3 bench/split_probe.py --once
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import tune  # noqa: E402

import fnk  # noqa: E402  (bench puts python/ on the path)
from fnk import schedules  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--m", type=int, default=2048)
    ap.add_argument("--once", action="store_true", help="each case once, no timing (for ncu)")
    a = ap.parse_args()
    print(bench.device_id(), flush=True)
    rms = fnk.load(bench.REPO / "stdlib" / "norm" / "rmsnorm.fnk")
    var = fnk.load(bench.REPO / "bench" / "variants.fnk")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    M, N = a.m, 8192
    x, w, dy, dx, rstd, ref = tune.rms_bwd_inputs(M, N)
    y = torch.empty_like(x)
    # The forward and the backward's row kernel as fnk.torch launches them.
    fl, bl = schedules.rms_fwd(N, sms), schedules.rms_bwd(N, m=M, sms=sms)
    part = torch.empty(schedules.partial_rows(M, sms, bl), N, device="cuda")
    gpart = torch.empty(sms, N, device="cuda")
    dw = torch.empty(N, device="cuda", dtype=x.dtype)
    count = torch.zeros(2, device="cuda", dtype=torch.int32)
    one, one_out = torch.ones(1, device="cuda"), torch.empty(1, device="cuda")

    def fwd():
        getattr(rms, fl.kernel)(x, w, y, rstd, eps=1e-6, **fl.consts)

    def rows():
        getattr(rms, bl.kernel)(x, w, dy, rstd, dx, part, **bl.consts)

    def dws():
        rms.rmsnorm_bwd_dw(part, dw)

    def gridsync():
        var.rms_bwd_gridsync(x, w, dy, rstd, dx, dw, gpart, count, BLOCK_N=N, WARPS=16, BLOCK_P=256)

    fwd_name = f"fnk forward ({fl.kernel})"
    cases = [
        ("one-element add (a launch's floor)", lambda: torch.add(one, one, out=one_out)),
        ("copy: torch.add x + dy -> dx", lambda: torch.add(x, dy, out=dx)),
        ("copy: mul, then add (as the bench)", lambda: (torch.mul(x, 1.0, out=y), torch.add(x, dy, out=dx))),
        ("copy: mul alone", lambda: torch.mul(x, 1.0, out=y)),
        (fwd_name, fwd),
        (f"fnk row kernel alone ({bl.kernel})", rows),
        ("fnk dw kernel alone", dws),
        ("fnk row + dw", lambda: (rows(), dws())),
        ("fnk forward + row + dw", lambda: (fwd(), rows(), dws())),
        ("fnk gridsync (one kernel)", gridsync),
        ("fnk forward + gridsync", lambda: (fwd(), gridsync())),
    ]
    if a.once:
        for name, fn in cases:
            print(f"  {name}", flush=True)
            fn()
            torch.cuda.synchronize()
        return 0
    times = {}
    for name, fn in cases:
        times[name] = bench.time_graph(fn, a.reps)
        print(f"  {name:40} {times[name]:8.2f} us", flush=True)
    fb = times["fnk forward + row + dw"] - times[fwd_name]
    fg = times["fnk forward + gridsync"] - times[fwd_name]
    cp = times["copy: mul, then add (as the bench)"] - times["copy: mul alone"]
    print(f"backward as the bench takes it: two kernels {fb:.2f} us, gridsync {fg:.2f} us, copy {cp:.2f} us "
          f"(ratios {cp / fb:.3f}, {cp / fg:.3f})")
    err = max(tune.rel_err(dx, ref), tune.rel_err(dw, (dy.float() * x.float() * rstd[:, None]).sum(0)))
    print(f"largest relative error of dx, dw against torch float32: {err:.3g}")
    return 0 if err < tune.TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
