"""Config sweep for fnk's kernels on the H200: the stdlib kernels called
directly on torch tensors with different tile widths, warps and cluster sizes,
each timed like bench.py (CUDA-graph replays, L2 flushed, median). It is how
fnk.torch's defaults are chosen; the results go in docs/perf-notes.md.

    python3 bench/tune.py [--out DIR]
"""
import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402

fnk = bench.fnk
REPO = bench.REPO
DEV = "cuda"


def cases():
    rms = fnk.load(REPO / "stdlib" / "norm" / "rmsnorm.fnk")
    dit = fnk.load(REPO / "examples" / "dit_modulate.fnk")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bf = torch.bfloat16

    M, N = 32768, 8192
    x, w = torch.randn(M, N, device=DEV, dtype=bf), torch.randn(N, device=DEV, dtype=bf)
    dy = torch.randn_like(x)
    y, rstd = torch.empty_like(x), torch.empty(M, device=DEV)
    dx = torch.empty_like(x)
    fwd_bytes = 2 * M * N * 2
    for bn in (1024, 2048, 4096, 8192):
        for wp in (4, 8, 16):
            yield ("RMSNorm fwd 32768x8192", f"BLOCK_N={bn} WARPS={wp}", fwd_bytes,
                   lambda bn=bn, wp=wp: rms.rmsnorm_fwd(x, w, y, rstd, eps=1e-6, BLOCK_N=bn, WARPS=wp))
    rstd.copy_(torch.rand(M, device=DEV) + 0.5)
    for p_mult in (1, 2, 4):
        part = torch.empty(p_mult * sms, N, device=DEV)
        for bn, wp in ((8192, 8), (8192, 16), (8192, 32), (4096, 16)):
            yield ("RMSNorm bwd 32768x8192 (dx, partials)", f"BLOCK_N={bn} WARPS={wp} P={p_mult}x{sms}", 3 * M * N * 2,
                   lambda bn=bn, wp=wp, part=part: rms.rmsnorm_bwd(x, w, dy, rstd, dx, part, BLOCK_N=bn, WARPS=wp))

    M2, N2 = 8192, 65536
    x2, w2 = torch.randn(M2, N2, device=DEV, dtype=bf), torch.randn(N2, device=DEV, dtype=bf)
    y2, r2 = torch.empty_like(x2), torch.empty(M2, device=DEV)
    for c, bn, wp in ((8, 8192, 8), (8, 8192, 16), (16, 4096, 8), (16, 4096, 4), (4, 16384, 16)):
        yield ("RMSNorm fwd 8192x65536 (cluster)", f"CLUSTER={c} BLOCK_N={bn} WARPS={wp}", 2 * M2 * N2 * 2,
               lambda c=c, bn=bn, wp=wp: rms.rmsnorm_fwd_split(x2, w2, y2, r2, eps=1e-6, BLOCK_N=bn, CLUSTER=c, WARPS=wp))
    for bn, wp in ((2048, 8), (4096, 16)):
        yield ("RMSNorm fwd 8192x65536 (chunked row)", f"BLOCK_N={bn} WARPS={wp}", 2 * M2 * N2 * 2,
               lambda bn=bn, wp=wp: rms.rmsnorm_fwd(x2, w2, y2, r2, eps=1e-6, BLOCK_N=bn, WARPS=wp))

    B, S, H = 56, 1024, 1024
    xd = torch.randn(B, S, H, device=DEV, dtype=bf)
    wd, bd = torch.randn(H, device=DEV, dtype=bf), torch.randn(H, device=DEV, dtype=bf)
    sc, sh = torch.randn(B, H, device=DEV, dtype=bf), torch.randn(B, H, device=DEV, dtype=bf)
    yd, md, rd = torch.empty_like(xd), torch.empty(B, S, device=DEV), torch.empty(B, S, device=DEV)
    for wp in (1, 2, 4, 8):
        yield ("DiT fwd 56x1024x1024", f"WARPS={wp}", 2 * B * S * H * 2,
               lambda wp=wp: dit.dit_modulate_fwd(xd, wd, bd, sc, sh, yd, md, rd, eps=1e-6, WARPS=wp))
    dyd, dxd = torch.randn_like(xd), torch.empty_like(xd)
    rd.copy_(torch.rand(B, S, device=DEV) + 0.5)
    for sb in (2, 4, 8):
        parts = [torch.empty(B, sb, H, device=DEV) for _ in range(4)]
        for wp in (4, 8):
            yield ("DiT bwd 56x1024x1024 (dx, partials)", f"SB={sb} WARPS={wp}", 3 * B * S * H * 2,
                   lambda wp=wp, parts=parts: dit.dit_modulate_bwd(xd, wd, bd, sc, dyd, md, rd, dxd, *parts, WARPS=wp))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/fnk-bench"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for workload, config, nbytes, fn in cases():
        try:
            us = bench.time_graph(fn, 20)
            rows.append((workload, config, us, nbytes / us / 1e3))
            print(f"  {workload:40} {config:32} {us:9.1f} us {nbytes / us / 1e3:6.0f} GB/s", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"  {workload:40} {config:32} failed: {str(e).splitlines()[0][:160]}", flush=True)
    with open(os.path.join(a.out, "tune.csv"), "w") as f:
        f.write("workload,config,us,GB/s\n")
        for r in rows:
            f.write(f"{r[0]},{r[1]},{r[2]:.2f},{r[3]:.1f}\n")
    print("\nbest per workload:")
    for wl in dict.fromkeys(r[0] for r in rows):
        best = min((r for r in rows if r[0] == wl), key=lambda r: r[2])
        print(f"  {wl:40} {best[1]:32} {best[2]:9.1f} us {best[3]:6.0f} GB/s")


if __name__ == "__main__":
    main()
