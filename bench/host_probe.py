#!/usr/bin/env python3
"""Host time per call, eager (no CUDA graph): fnk's Python kernel call and
fnk.torch's autograd functions against torch's own norms, on shapes small
enough that the GPU work is a few microseconds, so the loop is bound by the
host; and, as the floor of any autograd.Function written in Python, one
whose forward and backward are one torch kernel each, against that kernel.
Each case runs `--calls` times after a warm-up; printed: microseconds per
call with the GPU synchronized once at the end (wall), and the ratio to
torch's eager call.
    python3 bench/host_probe.py [--calls 2000] [--m 8] [--n 1024] [--profile]
"""
import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
from autograd_gap import Ctx  # noqa: E402

import fnk  # noqa: E402  (bench puts python/ on the path)

fnt = bench.fnt


def per_call_us(fn, calls):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--m", type=int, default=8)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--profile", action="store_true", help="also cProfile the backward body's calls")
    a = ap.parse_args()
    print(bench.device_id(), flush=True)
    m, n = a.m, a.n
    x = torch.randn(m, n, device=bench.DEV, dtype=torch.bfloat16)
    w = torch.randn(n, device=bench.DEV, dtype=torch.bfloat16)
    b = torch.randn(n, device=bench.DEV, dtype=torch.bfloat16)
    dy = torch.randn_like(x)
    y, rstd = torch.empty_like(x), torch.empty(m, device=bench.DEV)
    rms_mod = fnt._module("rmsnorm")
    xl, wl, bl = (t.detach().requires_grad_() for t in (x, w, b))

    def grads(f, *leaves):
        return lambda: torch.autograd.grad(f(*leaves), leaves, dy)

    class Scale(torch.autograd.Function):
        """The floor of any autograd.Function written in Python: y = 2x, both ways one torch kernel."""

        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    pairs = [
        ("Python Function", grads(Scale.apply, xl), grads(lambda t: t * 2, xl)),
        ("RMSNorm fwd", lambda: fnt.rms_norm(x, w), lambda: F.rms_norm(x, (n,), w, 1e-6)),
        ("LayerNorm fwd", lambda: fnt.layer_norm(x, (n,), w, b), lambda: F.layer_norm(x, (n,), w, b)),
        ("RMSNorm fwd+bwd", grads(fnt.rms_norm, xl, wl), grads(lambda *t: F.rms_norm(t[0], (n,), t[1], 1e-6), xl, wl)),
        ("LayerNorm fwd+bwd", grads(lambda *t: fnt.layer_norm(t[0], (n,), *t[1:]), xl, wl, bl),
         grads(lambda *t: F.layer_norm(t[0], (n,), *t[1:]), xl, wl, bl)),
    ]
    with torch.no_grad():
        raw = per_call_us(lambda: rms_mod.rmsnorm_fwd(x, w, y, rstd, eps=1e-6), a.calls)
    print(f"  fnk kernel call rmsnorm_fwd (module attribute, no autograd): {raw:7.1f} us per call", flush=True)
    # Where a kernel call's host time goes: the Python side that builds libfnk's arguments, and libfnk's
    # fnk_instance_run with the same arguments (binding, the launch region, the launch).
    k = rms_mod.rmsnorm_fwd
    call = ((x, w, y, rstd), {"eps": 1e-6})
    prep = per_call_us(lambda: k._prepare(*call), a.calls)
    prepared = k._prepare(*call)
    run = per_call_us(lambda: k._run(*prepared), a.calls)
    stream = per_call_us(fnk._current_stream, a.calls)
    print(f"    of which: argument preparation {prep:.1f} us (the current stream {stream:.1f}), fnk_instance_run {run:.1f} us",
          flush=True)
    # The RMSNorm autograd.Function's own forward and backward, called without the autograd engine.
    ctx = Ctx()
    fwd_body = per_call_us(lambda: fnt._RMSNorm.forward(ctx, x, w, 1e-6), a.calls)
    bwd_body = per_call_us(lambda: fnt._RMSNorm.backward(ctx, dy), a.calls)
    print(f"  fnk.torch RMSNorm's forward body {fwd_body:.1f} us, backward body {bwd_body:.1f} us (no autograd)",
          flush=True)
    yl = fnt.rms_norm(xl, wl)
    fwd_graph = per_call_us(lambda: fnt.rms_norm(xl, wl), a.calls)
    bwd_engine = per_call_us(lambda: torch.autograd.grad(yl, (xl, wl), dy, retain_graph=True), a.calls)
    print(f"  through autograd: the forward recording its graph {fwd_graph:.1f} us, the backward by the engine "
          f"{bwd_engine:.1f} us", flush=True)
    if a.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.runcall(lambda: [fnt._RMSNorm.backward(ctx, dy) for _ in range(a.calls)])
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    for name, f_fnk, f_torch in pairs:
        tf, tt = per_call_us(f_fnk, a.calls), per_call_us(f_torch, a.calls)
        print(f"  {name:20} {m}x{n}: fnk.torch {tf:7.1f} us per call, torch eager {tt:7.1f}, "
              f"fnk / torch {tf / tt:5.2f}", flush=True)


if __name__ == "__main__":
    main()
