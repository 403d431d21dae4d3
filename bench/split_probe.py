#!/usr/bin/env python3
"""Where a short workload's time goes: each kernel of the 2048x8192 RMSNorm
backward (as fnk.torch launches it: python/fnk/schedules.py) timed alone and
together the way bench.py times it, beside the
same-bytes copy, a one-element kernel (the graph's floor per launch) and the
candidates (the split's partial rows added into R rows of sums at other R,
v18's partial rows, a grid barrier from bench/variants.fnk), each checked
against torch.
With --once each case runs once, outside any graph, for ncu to give each
kernel's own duration without the launch around it:
    python3 bench/split_probe.py [--reps N] [--m M] [--n N] [--reds R,R] [--grid-p P,P] [--acc-variant KERNEL:K=V,...] [--rounds K] [--once]
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
    ap.add_argument("--n", type=int, default=8192, help="columns (the grid-barrier form only at 8192)")
    ap.add_argument("--once", action="store_true", help="each case once, no timing (for ncu)")
    ap.add_argument("--reds", type=lambda v: [int(r) for r in v.split(",") if r], default=[8],
                    help="other R of the accumulating split to time (fnk.torch's: ACC_ROWS)")
    ap.add_argument("--grid-p", type=lambda v: [int(p) for p in v.split(",") if p], default=[],
                    help="also fnk.torch's accumulating split over these numbers of clusters P")
    ap.add_argument("--acc-variant", action="append", default=[], metavar="KERNEL:K=V,...",
                    help="also a bench/variants.fnk kernel with rmsnorm_bwd_split_acc's parameters, at these consts, "
                         "then rmsnorm_bwd_dw_take (repeatable)")
    ap.add_argument("--rounds", type=int, default=1, help="time every case this many times, in turn")
    a = ap.parse_args()
    print(bench.device_id(), flush=True)
    rms = fnk.load(bench.REPO / "stdlib" / "norm" / "rmsnorm.fnk")
    var = fnk.load(bench.REPO / "bench" / "variants.fnk")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    M, N = a.m, a.n
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

    # v18's form of a split: one partial row per cluster, summed by rmsnorm_bwd_dw.
    partial_kernel = "rmsnorm_bwd_split" if bl.kernel == "rmsnorm_bwd_split_acc" else bl.kernel

    def rows_partial():
        getattr(rms, partial_kernel)(x, w, dy, rstd, dx, part, **bl.consts)

    def dws():
        rms.rmsnorm_bwd_dw(part, dw)

    def gridsync():
        var.rms_bwd_gridsync(x, w, dy, rstd, dx, dw, gpart, count, BLOCK_N=N, WARPS=16, BLOCK_P=256)

    # The rows adding into R rows of sums (vector reds), then the kernel that takes them (fnk.torch's since
    # backend v19, at R = schedules.ACC_ROWS), at other R, other grids and as variants. acc stays at zero
    # between calls.
    accs = {}
    # the row kernel's split as fnk.torch launches it (clusters of 2 x 4096 at N = 8192, of 8 x 8192 at 65536)
    split = {k: bl.consts[k] for k in ("BLOCK_N", "CLUSTER", "WARPS", "L2") if k in bl.consts}
    split["P"] = schedules.partial_rows(M, sms, bl)

    def take(acc):
        """rmsnorm_bwd_dw_take of the rows of sums acc into dw (leaving acc at zero)."""
        rb = max(16, 1 << (acc.shape[0] - 1).bit_length())
        rms.rmsnorm_bwd_dw_take(acc, dw, RB=rb, BLOCK_N=64 if rb <= 16 else 32)

    def into_rows(r, kernel=rms.rmsnorm_bwd_split_acc, **consts):
        """kernel (rmsnorm_bwd_split_acc's parameters; fnk.torch's split by default) adding into r rows of sums,
        then rmsnorm_bwd_dw_take."""
        acc = accs.setdefault(r, torch.zeros(r, N, device="cuda"))
        consts = consts or split
        return lambda: (kernel(x, w, dy, rstd, dx, acc, **consts), take(acc))

    # Each backward as the bench takes it: (forward + backward) - forward. fnk.torch's first.
    if bl.kernel == "rmsnorm_bwd_split_acc":
        r_torch = schedules.acc_rows(M, sms, bl)
        backwards = {f"fnk.torch (split acc R={r_torch} + take)": into_rows(r_torch)}
        backwards.update({f"split acc R={r} + take": into_rows(r) for r in a.reds if r != r_torch})
        backwards["split, partial rows + rmsnorm_bwd_dw (v18)"] = lambda: (rows_partial(), dws())
        for p in a.grid_p:
            backwards[f"split acc P={p}"] = into_rows(schedules.ACC_ROWS, **{**split, "P": p})
        for v in a.acc_variant:
            name, _, consts = v.partition(":")
            c = {k: int(val) for k, val in (kv.split("=") for kv in consts.split(",") if kv)}
            backwards[v] = into_rows(schedules.ACC_ROWS, getattr(var, name), **{**split, **c})
    else:
        backwards = {f"fnk.torch ({bl.kernel} + rmsnorm_bwd_dw)": lambda: (rows_partial(), dws())}
    if N == 8192:
        backwards["gridsync"] = gridsync
    fwd_name = f"fnk forward ({fl.kernel})"
    cases = [
        ("one-element add (a launch's floor)", lambda: torch.add(one, one, out=one_out)),
        ("copy: torch.add x + dy -> dx", lambda: torch.add(x, dy, out=dx)),
        ("copy: mul, then add (as the bench)", lambda: (torch.mul(x, 1.0, out=y), torch.add(x, dy, out=dx))),
        ("copy: mul alone", lambda: torch.mul(x, 1.0, out=y)),
        (fwd_name, fwd),
        (f"fnk row kernel alone ({partial_kernel})", rows_partial),
        ("fnk dw kernel alone", dws),
    ]
    if bl.kernel == "rmsnorm_bwd_split_acc":  # its two kernels apart, on rows of sums of their own
        scratch = torch.zeros(schedules.acc_rows(M, sms, bl), N, device="cuda")
        cases += [("fnk split acc alone (no take; the sums grow)",
                   lambda: rms.rmsnorm_bwd_split_acc(x, w, dy, rstd, dx, scratch, **split)),
                  ("fnk take alone", lambda: take(scratch))]
    for name, bwd in backwards.items():
        cases += [(f"fnk {name}", bwd), (f"fnk forward + {name}", lambda bwd=bwd: (fwd(), bwd()))]
    if a.once:
        for name, fn in cases:
            print(f"  {name}", flush=True)
            fn()
            torch.cuda.synchronize()
        return 0
    for rnd in range(a.rounds):
        times = {}
        for name, fn in cases:
            times[name] = bench.time_graph(fn, a.reps)
            print(f"  {name:48} {times[name]:8.2f} us", flush=True)
        cp = times["copy: mul, then add (as the bench)"] - times["copy: mul alone"]
        print(f"backward as the bench takes it, round {rnd + 1} (copy {cp:.2f} us):")
        for name in backwards:
            t = times[f"fnk forward + {name}"] - times[fwd_name]
            print(f"  {name:44} {t:8.2f} us  copy / it {cp / t:.3f}")
    ref_dw = (dy.float() * x.float() * rstd[:, None]).sum(0)
    worst = 0.0
    for name, bwd in backwards.items():  # each backward's own answer, dx and dw poisoned first
        dx.fill_(float("nan"))
        dw.fill_(float("nan"))
        bwd()
        err = max(tune.rel_err(dx, ref), tune.rel_err(dw, ref_dw))
        worst = max(worst, err)
        print(f"  {name:44} largest relative error of dx, dw against torch float32: {err:.3g}")
    return 0 if worst < tune.TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
