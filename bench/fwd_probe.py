#!/usr/bin/env python3
"""The RMSNorm (or, with --norm ln, LayerNorm) forward at the widths where torch.compile is ahead of fnk
(bench.py's sweep, docs/perf-notes.md "v28"): fnk.torch's launch, torch.compile
and candidate launches of the stdlib kernels, timed as bench.py times them
(CUDA-graph replays, L2 flushed, median), each output checked against torch
in float32. Rounds alternate the cases, so a drifting clock shows as spread.

    python3 bench/fwd_probe.py [--norm rms|ln] [--shape MxN ...] [--dtype bf16|f32] [--case N:KERNEL:K=V,...]
                               [--no-builtin] [--rounds R]

Without --shape, the sweep's widths at 64M elements. --case adds a launch of
an rmsnorm.fnk (layernorm.fnk) kernel at width N, or of a bench/variants.fnk
one named var.KERNEL (the built-in candidates are CANDIDATES, RMSNorm's);
its values are integers or true / false (HOLD=false).
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402

import fnk  # noqa: E402  (bench puts python/ on the path)
from fnk import schedules  # noqa: E402


def rows(n, rows_, warps):
    return ("rmsnorm_fwd_rows", {"BLOCK_N": n, "ROWS": rows_, "WARPS": warps})


def row(b, warps):
    return ("rmsnorm_fwd_row", {"BLOCK_N": b, "WARPS": warps})


def chunks(b, warps):
    return ("rmsnorm_fwd", {"BLOCK_N": b, "WARPS": warps})


# (width, dtype) -> launches besides fnk.torch's own: tiles of other shapes, whole rows at other warps, and the
# two-pass chunked row (rmsnorm_fwd: x read twice, the second time from L2; Inductor's schedule at 8192).
CANDIDATES = {
    (512, "bf16"): [rows(512, 8, 4), rows(512, 4, 2), rows(512, 16, 4), rows(512, 32, 16)],
    (1024, "bf16"): [rows(1024, 4, 4), rows(1024, 2, 2), rows(1024, 8, 4), rows(1024, 16, 16), row(1024, 2), row(1024, 4)],
    (5120, "bf16"): [row(8192, 8), row(8192, 16), chunks(1024, 4), chunks(1024, 8), chunks(1024, 16)],
    (8192, "bf16"): [row(8192, 4), row(8192, 16), chunks(2048, 8), chunks(2048, 16), chunks(4096, 16), chunks(1024, 8)],
    (12288, "bf16"): [chunks(4096, 8), chunks(4096, 16), chunks(2048, 16), chunks(2048, 8), row(16384, 16), row(16384, 32)],
    (16384, "bf16"): [chunks(4096, 16), chunks(8192, 16), chunks(2048, 16), row(16384, 16), row(16384, 32)],
    (32768, "bf16"): [chunks(4096, 16), chunks(8192, 16), chunks(2048, 16), chunks(8192, 32)],
    (8192, "f32"): [chunks(2048, 8), chunks(2048, 16), chunks(1024, 8), chunks(1024, 4), row(8192, 16), row(8192, 32)],
}


EPS = {"rms": 1e-6, "ln": 1e-5}  # bench.IMPLS's, which the references and fnk.torch's calls use


def parse_case(text):
    n, kernel, consts = text.split(":")
    value = {"true": True, "false": False}
    return int(n), (kernel, {k: value[v] if v in value else int(v) for k, v in (kv.split("=") for kv in consts.split(",") if kv)})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--norm", default="rms", choices=("rms", "ln"))
    ap.add_argument("--shape", action="append", default=[], help="MxN (repeatable); default the sweep's widths")
    ap.add_argument("--dtype", default="bf16", choices=("bf16", "f32"))
    ap.add_argument("--case", action="append", default=[], type=parse_case, metavar="N:KERNEL:K=V,...")
    ap.add_argument("--no-builtin", action="store_true", help="only --case's candidates")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[a.dtype]
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shape] or \
        [((1 << 26) // n, n) for n in (512, 1024, 5120, 8192, 12288, 16384, 32768)]
    print(bench.device_id(), flush=True)
    ln = a.norm == "ln"
    lib = fnk.load(bench.REPO / "stdlib" / "norm" / ("layernorm.fnk" if ln else "rmsnorm.fnk"))
    var = fnk.load(bench.REPO / "bench" / "variants.fnk")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    worst = 0.0
    fnk_f, ref_f = bench.IMPLS[a.norm]
    for m, n in shapes:
        ins = [t.detach() for t in bench.make(a.norm, (m, n), dt)]
        x, params = ins[0], ins[1:]
        y, stats = torch.empty_like(x), [torch.empty(m, device="cuda") for _ in range(2 if ln else 1)]
        ref = ref_f(*(t.float() for t in ins))
        own = schedules.ln_fwd(n, sms, dtype=a.dtype) if ln else schedules.rms_fwd(n, sms, dtype=a.dtype)
        comp = torch.compile(ref_f, dynamic=False)
        ours = lambda: fnk_f(*ins)  # noqa: E731
        cases = {f"fnk.torch ({own.kernel} {own.consts})": ours,
                 "torch.compile": lambda: comp(x, *params),
                 "copy (torch.mul)": lambda: torch.mul(x, 1.0, out=y)}
        launches = [] if a.no_builtin or ln else CANDIDATES.get((n, a.dtype), [])
        launches += [c for cn, c in a.case if cn == n]
        for kernel, consts in launches:
            def launch(kernel=kernel, consts=consts):
                mod, name = (var, kernel[4:]) if kernel.startswith("var.") else (lib, kernel)
                getattr(mod, name)(x, *params, y, *stats, eps=EPS[a.norm], T=a.dtype, **consts)
            y.fill_(float("nan"))
            try:
                launch()
            except Exception as e:  # noqa: BLE001 - a candidate the launch refuses is reported, not fatal
                print(f"  {m}x{n} {kernel} {consts}: refused: {str(e).splitlines()[0][:160]}", flush=True)
                continue
            err = bench.rel_err(y, ref)
            worst = max(worst, err)
            cases[f"{kernel} {consts} (err {err:.2g})"] = launch
        with torch.no_grad():
            worst = max(worst, bench.rel_err(ours(), ref), bench.rel_err(comp(x, *params), ref))
        del ref
        times = {k: [] for k in cases}
        for _ in range(a.rounds):
            with torch.no_grad():
                for name, fn in cases.items():
                    times[name].append(bench.time_graph(fn, a.reps))
        base = min(times["torch.compile"])
        print(f"{m}x{n} {a.dtype} (copy {min(times['copy (torch.mul)']):.2f} us):", flush=True)
        for name, ts in sorted(times.items(), key=lambda kv: min(kv[1])):
            print(f"  {' / '.join(f'{t:7.2f}' for t in ts)} us  torch.compile / it {base / min(ts):.3f}  {name}", flush=True)
    print(f"largest relative error against torch float32: {worst:.3g}")
    return 0 if worst <= bench.TOLERANCE[dt] else 1


if __name__ == "__main__":
    sys.exit(main())
