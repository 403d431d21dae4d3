#!/usr/bin/env python3
"""The RMSNorm (or, with --norm ln, LayerNorm) backward through fnk.torch under
other schedules: each --case replaces schedules.rms_bwd (ln_bwd) for its
width, and the whole backward (the split and its sum kernel) is timed as
bench.py times it (forward + backward captured in one CUDA graph, minus the
forward; L2 flushed; median), beside fnk.torch's own schedule and
torch.compile, with every case's dx, dw (and db) checked against torch in
float32. Rounds alternate the cases, so a drifting clock shows as spread.

    python3 bench/bwd_probe.py [--norm rms|ln] --shape MxN ... [--dtype bf16|f32]
                               [--case N:KERNEL:K=V,...] [--rounds R] [--reps N]

A case's consts are as bench/fwd_probe.py takes them; the lowercase keys
per_sm, cluster and grid set the Launch's fields (schedules.Launch), e.g.
    --case 20000:rmsnorm_bwd_split_acc:BLOCK_N=4096,CLUSTER=5,WARPS=8,per_sm=8,cluster=5
A kernel named var.NAME is bench/variants.fnk's NAME, called as fnk.torch
calls the stdlib kernel its name ends like (*_split_acc: into zeroed rows of
sums). A case that sets VEC gets a P that is a multiple of VEC, as
fnk.torch's own shifted splits do (schedules.partial_rows), e.g.
    --case 65537:rmsnorm_bwd_split_acc:BLOCK_N=8192,CLUSTER=9,WARPS=16,VEC=8,per_sm=8,cluster=9
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
from fwd_probe import parse_case  # noqa: E402

import fnk  # noqa: E402  (bench puts python/ on the path)
import fnk.torch as fnk_torch  # noqa: E402
from fnk import schedules  # noqa: E402

FIELDS = ("per_sm", "cluster", "grid")  # Launch's fields besides kernel and consts


def as_launch(kernel, consts):
    return schedules.Launch(kernel, {k: v for k, v in consts.items() if k not in FIELDS},
                            **{k: v for k, v in consts.items() if k in FIELDS})


class WithVariants:
    """fnk.torch's stdlib module `lib` with bench/variants.fnk's kernels beside it, as var.NAME."""

    def __init__(self, lib, var):
        self._lib, self._var = lib, var

    def __getattr__(self, name):
        if not name.startswith("var."):
            return getattr(self._lib, name)
        return getattr(self._var, name[4:])


def schedule(name, own, launch):
    """Makes fnk.torch's backward take `launch` (schedules.NAME returns it; None: `own`, the
    original), its cache of plans cleared."""
    setattr(schedules, name, own if launch is None else (lambda *a, **k: launch))
    fnk_torch._bwd_plan.cache_clear()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--norm", default="rms", choices=("rms", "ln"))
    ap.add_argument("--shape", action="append", required=True, help="MxN (repeatable)")
    ap.add_argument("--dtype", default="bf16", choices=("bf16", "f32"))
    ap.add_argument("--case", action="append", default=[], type=parse_case, metavar="N:KERNEL:K=V,...")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[a.dtype]
    name = "ln_bwd" if a.norm == "ln" else "rms_bwd"
    own = getattr(schedules, name)
    fnk_f, ref_f = bench.IMPLS[a.norm]
    if any(k.startswith("var.") for _, (k, _) in a.case):
        module = "layernorm" if a.norm == "ln" else "rmsnorm"
        var = fnk.load(bench.REPO / "bench" / "variants.fnk")
        fnk_torch._modules[module] = WithVariants(fnk_torch._module(module), var)
    print(bench.device_id(), flush=True)
    worst = 0.0
    for m, n in (tuple(int(v) for v in s.split("x")) for s in a.shape):
        ins = bench.make(a.norm, (m, n), dt)
        dy = torch.randn(ins[0].shape, device="cuda", dtype=dt)
        leaves = [t.detach().float().requires_grad_() for t in ins]
        refs = torch.autograd.grad(ref_f(*leaves), leaves, dy.float())
        comp = torch.compile(ref_f, dynamic=False)
        cases = {"fnk.torch (its own schedule)": (fnk_f, None), "torch.compile": (comp, None)}
        cases.update({f"{k} {c}": (fnk_f, as_launch(k, c)) for cn, (k, c) in a.case if cn == n})
        timed = {}
        for label, (f, launch) in cases.items():
            schedule(name, own, launch)
            tins = [t.detach().requires_grad_() for t in ins]
            try:
                gs = torch.autograd.grad(f(*tins), tins, dy)
            except Exception as e:  # noqa: BLE001 - a candidate the launch refuses is reported, not fatal
                print(f"  {m}x{n} {label}: refused: {str(e).splitlines()[0][:160]}", flush=True)
                continue
            err = max(bench.rel_err(g, r) for g, r in zip(gs, refs))
            worst = max(worst, err)
            timed[f"{label} (err {err:.2g})"] = (f, launch, tins)
        times = {k: [] for k in timed}
        for _ in range(a.rounds):
            for label, (f, launch, tins) in timed.items():
                schedule(name, own, launch)
                times[label].append(bench.time_backward(f, tins, dy, a.reps))
        setattr(schedules, name, own)
        base = min(next(v for k, v in times.items() if k.startswith("torch.compile")))
        print(f"{m}x{n} {a.dtype} backward:", flush=True)
        for label, ts in sorted(times.items(), key=lambda kv: min(kv[1])):
            print(f"  {' / '.join(f'{t:7.2f}' for t in ts)} us  torch.compile / it {base / min(ts):.3f}  {label}",
                  flush=True)
    print(f"largest relative error against torch float32: {worst:.3g}")
    return 0 if worst <= bench.TOLERANCE[dt] else 1


if __name__ == "__main__":
    sys.exit(main())
