#!/usr/bin/env python3
"""Why the bench's RMSNorm backward (autograd through fnk.torch, timed as
(forward + backward) - forward) can read more than the same kernels launched
directly (bench/split_probe.py): in one process, the backward as the bench
takes it, the same autograd.Function's forward and backward called without
the autograd engine, and, with --kernels, the CUDA kernels one eager
autograd step launches (torch.profiler). Run it with FNK_PDL=0 and without
to see what programmatic dependent launch gives each form.
    python3 bench/autograd_gap.py [--m 2048] [--n 8192] [--reps 50] [--kernels]
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402

fnt = bench.fnt


class Ctx:
    """What an autograd.Function's forward and backward need of their ctx."""

    def save_for_backward(self, *ts):
        self.saved_tensors = ts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=2048)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--kernels", action="store_true", help="list the kernels of one eager autograd step")
    ap.add_argument("--placement", action="store_true",
                    help="instead: the backward's two kernels alone with dx and dy placed at offsets of 64 KB steps")
    a = ap.parse_args()
    x, w = bench.make("rms", (a.m, a.n), torch.bfloat16)
    dy = torch.randn_like(x)
    f = bench.IMPLS["rms"][0]
    tins = [t.detach().requires_grad_() for t in (x, w)]
    xd, wd = x.detach(), w.detach()
    ctx = Ctx()
    if a.placement:
        return placement(a, xd, wd, dy)

    def fwd_direct():
        return fnt._RMSNorm.forward(ctx, xd, wd, 1e-6)

    def both_direct():
        fwd_direct()
        return fnt._RMSNorm.backward(ctx, dy)

    gx, gw = torch.autograd.grad(f(*tins), tins, dy)
    both_direct()
    dx, dw = fnt._RMSNorm.backward(ctx, dy)[:2]
    print(f"direct against autograd: dx {float((dx.float() - gx.float()).abs().max()):.3g}, "
          f"dw {float((dw.float() - gw.float()).abs().max()):.3g}", flush=True)
    if a.kernels:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            torch.autograd.grad(f(*tins), tins, dy)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        print(f"kernels of one autograd step ({len(names)}):", *names, sep="\n  ", flush=True)
    for r in range(2):
        t_auto = bench.time_backward(f, tins, dy, a.reps)
        t_direct = bench.time_graph(both_direct, a.reps) - bench.time_graph(fwd_direct, a.reps)
        bwd_alone = bench.time_graph(lambda: fnt._RMSNorm.backward(ctx, dy), a.reps)
        print(f"round {r}: autograd (the bench) {t_auto:.2f} us, direct {t_direct:.2f} us, "
              f"backward alone {bwd_alone:.2f} us", flush=True)


def placement(a, x, w, dy):
    """Does where dx and dy lie move the backward? Its two kernels (as
    fnk.torch launches them) with dx, then dy, at offsets into a pool, each
    captured afresh three times (a spread between captures of one placement
    is not the placement's)."""
    m, n = a.m, a.n
    mod = fnt._module("rmsnorm")
    sms = fnt._sms(x.device)
    launch = bench.schedules.rms_bwd(n, fnt._resident("rmsnorm", "bf16"), m=m, sms=sms, dtype="bf16")
    assert launch.kernel == "rmsnorm_bwd_split_acc", launch.kernel
    p = bench.schedules.partial_rows(m, sms, launch)
    acc = torch.zeros(bench.schedules.acc_rows(m, sms, launch), n, device="cuda")
    rstd = torch.rsqrt(x.float().pow(2).mean(1) + 1e-6)
    step = 32768  # elements: 64 KB of bf16
    pool = torch.empty(m * n + 16 * step, device="cuda", dtype=x.dtype)
    dw = torch.empty_like(w)
    ref = None
    for which in ("dx", "dy"):
        for k in (0, 1, 2, 3, 4, 8, 15):
            view = pool[k * step:k * step + m * n].view(m, n)
            dx, dyk = (view, dy) if which == "dx" else (torch.empty_like(x), view)
            if which == "dy":
                dyk.copy_(dy)

            def bwd():
                mod.rmsnorm_bwd_split_acc(x, w, dyk, rstd, dx, acc, **launch.consts, P=p, T="bf16")
                mod.rmsnorm_bwd_dw_take(acc, dw, T="bf16")

            bwd()
            if ref is None:
                ref = dx.clone()
            assert torch.equal(dx, ref), "dx differs between placements"
            ts = [bench.time_graph(bwd, a.reps) for _ in range(3)]
            print(f"{which} at +{k * 64:4d} KB: " + "  ".join(f"{t:.2f}" for t in ts) + " us", flush=True)


if __name__ == "__main__":
    main()
