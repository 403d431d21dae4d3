"""Config sweep for fnk's kernels on the H200: the stdlib kernels called
directly on torch tensors with different tile widths, warps and cluster sizes,
each timed like bench.py (CUDA-graph replays, L2 flushed, median). It is how
fnk.torch's defaults are chosen; the results go in docs/perf-notes.md.

    python3 bench/tune.py [--variants] [--only TEXT] [--reps N] [--out DIR]

--variants times bench/variants.fnk's candidate schedules against the stdlib
kernels instead; --only keeps the configs whose "workload config" contains
TEXT. Every output that has a torch reference is judged against it.
"""
import argparse
import csv
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402

fnk = bench.fnk
schedules = bench.schedules
REPO = bench.REPO
DEV = "cuda"


def dit_tensors(B, S, H):
    """x, w, b, scale, shift (bf16, random) and y, mean, rstd for the DiT kernels."""
    bf = torch.bfloat16
    x = torch.randn(B, S, H, device=DEV, dtype=bf)
    w, b = torch.randn(H, device=DEV, dtype=bf), torch.randn(H, device=DEV, dtype=bf)
    scale, shift = torch.randn(B, H, device=DEV, dtype=bf), torch.randn(B, H, device=DEV, dtype=bf)
    return x, w, b, scale, shift, torch.empty_like(x), torch.empty(B, S, device=DEV), torch.empty(B, S, device=DEV)


rel_err = bench.rel_err
# Candidates whose output is further than this from the reference are marked
# MISMATCH, left out of "best", and make the run exit 1 (bf16 outputs).
TOLERANCE = bench.TOLERANCE[torch.bfloat16]
CHECKS = {}  # workload -> () -> relative error of the output the last config wrote


def rms_dx_ref(x, w, dy, rstd):
    """RMSNorm's dx in float32: r * g - x * r^3 / N * sum(g * x), g = dy * w."""
    g = dy.float() * w.float()
    r = rstd[:, None]
    return g * r - x.float() * r ** 3 / x.shape[-1] * (g * x.float()).sum(-1, keepdim=True)


def rms_bwd_inputs(M, N):
    """bf16 x, w, dy of an RMSNorm backward, dx to fill, rstd of x, and dx's reference."""
    bf = torch.bfloat16
    x, w = torch.randn(M, N, device=DEV, dtype=bf), torch.randn(N, device=DEV, dtype=bf)
    dy, dx = torch.randn_like(x), torch.empty_like(x)
    rstd = torch.rsqrt(x.float().pow(2).mean(1) + 1e-6)
    return x, w, dy, dx, rstd, rms_dx_ref(x, w, dy, rstd)


def ln_dx_ref(x, g, mean, rstd):
    """LayerNorm's dx in float32 from g = dy * (what scales xhat): rstd * (g - mean(g) - xhat * mean(g * xhat))."""
    xh = (x.float() - mean[..., None]) * rstd[..., None]
    return rstd[..., None] * (g - g.mean(-1, keepdim=True) - xh * (g * xh).mean(-1, keepdim=True))


def dit_sweep(dit, fwd_configs, bwd_configs, tag="", var=None, reduce_tiles=lambda sb: ((32, 8),), extra_fwd=(),
              extra_bwd=(), wave_bwd=()):
    """The DiT forward at each (SB, WARPS) of fwd_configs and the extra_fwd (config, call(*tensors)) candidates, then
    the one-kernel backward at each (SB, WARPS) of bwd_configs (dx, dscale, dshift, dw and db judged against float32
    sums). With var (bench/variants.fnk), also the two-kernel backward it replaced (dit_bwd_parts at each SB of
    bwd_configs, and its reduce at each reduce_tiles(sb) (BLOCK_N, BLOCK_P)) and the extra_bwd (config, SB, call)
    candidates of that kind (dx judged), and the wave_bwd (tag, kernel, consts) ones at SB = bench.one_wave."""
    B, S, H = 56, 1024, 1024
    t = dit_tensors(B, S, H)
    xd, wd, bd, sc, sh, yd, md, rd = t
    F = torch.nn.functional
    ref_y = F.layer_norm(xd.float(), (H,), wd.float(), bd.float(), 1e-6) * (1 + sc.float()[:, None, :]) + sh.float()[:, None, :]
    CHECKS["DiT fwd 56x1024x1024"] = lambda: rel_err(yd, ref_y)
    fwd = 2 * B * S * H * 2
    for sb, wp in fwd_configs:
        yield ("DiT fwd 56x1024x1024", f"{tag}SB={sb} WARPS={wp}", fwd,
               lambda sb=sb, wp=wp: dit.dit_modulate_fwd(*t, eps=1e-6, SB=sb, WARPS=wp))
    for config, call in extra_fwd:
        yield ("DiT fwd 56x1024x1024", config, fwd, lambda call=call: call(*t))
    del ref_y
    dyd, dxd = torch.randn_like(xd), torch.empty_like(xd)
    md.copy_(torch.randn(B, S, device=DEV) * 0.1)
    rd.copy_(torch.rand(B, S, device=DEV) + 0.5)
    scf = 1 + sc.float()
    ref_dx = ln_dx_ref(xd, dyd.float() * scf[:, None, :] * wd.float(), md, rd)
    xh = (xd.float() - md[..., None]) * rd[..., None]
    s0, s1 = dyd.float().sum(1), (dyd.float() * xh).sum(1)
    del xh
    refs = (ref_dx, wd.float() * s1 + bd.float() * s0, s0, (scf * s1).sum(0), (scf * s0).sum(0))
    bf = torch.bfloat16
    outs = [torch.empty(B, H, device=DEV, dtype=bf) for _ in range(2)] + [torch.empty(H, device=DEV, dtype=bf) for _ in range(2)]
    ws = (torch.zeros(B, 2, H, device=DEV), torch.zeros(2, H, device=DEV), torch.zeros(B + 1, device=DEV, dtype=torch.int32))
    bwd = 3 * B * S * H * 2
    CHECKS["DiT bwd 56x1024x1024"] = lambda: max(rel_err(o, r) for o, r in zip([dxd] + outs, refs))
    for sb, wp, *more in bwd_configs:  # (SB, WARPS[, {other constant: value}])
        extra = more[0] if more else {}
        yield ("DiT bwd 56x1024x1024", f"{tag}SB={sb} WARPS={wp}" + "".join(f" {k}={v}" for k, v in extra.items()), bwd,
               lambda sb=sb, wp=wp, extra=extra: dit.dit_modulate_bwd(xd, wd, bd, sc, dyd, md, rd, dxd, *outs, *ws, SB=sb,
                                                                      WARPS=wp, **extra))
    if var is None:
        return
    CHECKS["DiT bwd 56x1024x1024 (dx, partials)"] = lambda: rel_err(dxd, ref_dx)
    for sb in dict.fromkeys(sb for sb, *_ in bwd_configs):
        parts = [torch.empty(B, sb, H, device=DEV) for _ in range(2)]  # dit_bwd_parts' s0, s1
        parts4 = [torch.empty(B, sb, H, device=DEV) for _ in range(4)]  # the other variants' pscale, pshift, pw, pb
        for wp in (wp for sb_, wp, *more in bwd_configs if sb_ == sb and not more):
            yield ("DiT bwd 56x1024x1024 (dx, partials)", f"parts SB={sb} WARPS={wp}", bwd,
                   lambda wp=wp, parts=parts: var.dit_bwd_parts(xd, wd, sc, dyd, md, rd, dxd, *parts, WARPS=wp))
        for config, esb, call in extra_bwd:
            if esb == sb:
                yield ("DiT bwd 56x1024x1024 (dx, partials)", config, bwd,
                       lambda call=call, parts=parts4: call(xd, wd, bd, sc, dyd, md, rd, dxd, *parts))
        def reduce_err(parts=parts):
            p0, p1 = parts[0].sum(1), parts[1].sum(1)
            return max(rel_err(outs[0], wd.float() * p1 + bd.float() * p0), rel_err(outs[1], p0),
                       rel_err(outs[2], (scf * p1).sum(0)), rel_err(outs[3], (scf * p0).sum(0)))
        CHECKS["DiT bwd reduce 56x1024x1024"] = reduce_err
        for bn, bp in reduce_tiles(sb):
            rws = (torch.zeros(2, H, device=DEV), torch.zeros(-(-H // bn), device=DEV, dtype=torch.int32))
            yield ("DiT bwd reduce 56x1024x1024", f"SB={sb} BLOCK_N={bn} BLOCK_P={bp}", 2 * B * sb * H * 4,
                   lambda parts=parts, bn=bn, bp=bp, rws=rws:
                   var.dit_bwd_parts_reduce(wd, bd, sc, *parts, *outs, *rws, BLOCK_N=bn, BLOCK_P=bp))
    # SB and the partials are settled at the config's first call (tune.py times 3 calls before capturing a graph).
    wave_parts = {}
    def at_one_wave(tag, k, c):
        if tag not in wave_parts:
            sb = bench.one_wave(k, B, **c)
            print(f"  ({tag}: SB = {sb}, one wave)", flush=True)
            wave_parts[tag] = [torch.empty(B, sb, H, device=DEV) for _ in range(4)]
        k(xd, wd, bd, sc, dyd, md, rd, dxd, *wave_parts[tag], **c)
    for tag, k, c in wave_bwd:
        config = f"{tag} SB=wave " + " ".join(f"{n}={v}" for n, v in c.items())
        yield ("DiT bwd 56x1024x1024 (dx, partials)", config, bwd, lambda config=config, k=k, c=c: at_one_wave(config, k, c))


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
    ref_y = torch.nn.functional.rms_norm(x.float(), (N,), w.float(), 1e-6)
    CHECKS["RMSNorm fwd 32768x8192"] = lambda: rel_err(y, ref_y)
    for bn in (1024, 2048, 4096, 8192):
        for wp in (4, 8, 16):
            yield ("RMSNorm fwd 32768x8192", f"BLOCK_N={bn} WARPS={wp}", fwd_bytes,
                   lambda bn=bn, wp=wp: rms.rmsnorm_fwd(x, w, y, rstd, eps=1e-6, BLOCK_N=bn, WARPS=wp))
    rstd.copy_(torch.rand(M, device=DEV) + 0.5)
    ref_dx = rms_dx_ref(x, w, dy, rstd)
    CHECKS["RMSNorm bwd 32768x8192 (dx, partials)"] = lambda: rel_err(dx, ref_dx)
    CHECKS["RMSNorm bwd 2048x8192 (dx, partials)"] = lambda: rel_err(dx[:2048], ref_dx[:2048])
    for p_mult in (1, 2, 4):
        part = torch.empty(p_mult * sms, N, device=DEV)
        for bn, wp in ((8192, 8), (8192, 16), (8192, 32), (4096, 16)):
            yield ("RMSNorm bwd 32768x8192 (dx, partials)", f"BLOCK_N={bn} WARPS={wp} P={p_mult}x{sms}", 3 * M * N * 2,
                   lambda bn=bn, wp=wp, part=part: rms.rmsnorm_bwd(x, w, dy, rstd, dx, part, BLOCK_N=bn, WARPS=wp))

    M2, N2 = 8192, 65536
    x2, w2 = torch.randn(M2, N2, device=DEV, dtype=bf), torch.randn(N2, device=DEV, dtype=bf)
    y2, r2 = torch.empty_like(x2), torch.empty(M2, device=DEV)
    ref_y2 = torch.nn.functional.rms_norm(x2.float(), (N2,), w2.float(), 1e-6)
    for name in ("RMSNorm fwd 8192x65536 (cluster)", "RMSNorm fwd 8192x65536 (chunked row)"):
        CHECKS[name] = lambda: rel_err(y2, ref_y2)
    for c, bn, wp in ((8, 8192, 8), (8, 8192, 16), (16, 4096, 8), (16, 4096, 4), (4, 16384, 16)):
        yield ("RMSNorm fwd 8192x65536 (cluster)", f"CLUSTER={c} BLOCK_N={bn} WARPS={wp}", 2 * M2 * N2 * 2,
               lambda c=c, bn=bn, wp=wp: rms.rmsnorm_fwd_split(x2, w2, y2, r2, eps=1e-6, BLOCK_N=bn, CLUSTER=c, WARPS=wp))
    for bn, wp in ((2048, 8), (4096, 16), (8192, 16), (8192, 8)):
        yield ("RMSNorm fwd 8192x65536 (chunked row)", f"BLOCK_N={bn} WARPS={wp}", 2 * M2 * N2 * 2,
               lambda bn=bn, wp=wp: rms.rmsnorm_fwd(x2, w2, y2, r2, eps=1e-6, BLOCK_N=bn, WARPS=wp))

    del ref_y2
    xf, wf = x.float(), w.float()
    yf, rf = torch.empty_like(xf), torch.empty(M, device=DEV)  # rf: rstd above stays the backward's input
    CHECKS["RMSNorm fwd f32 32768x8192 (row)"] = lambda: rel_err(yf, ref_y)
    for wp in (8, 16):
        yield ("RMSNorm fwd f32 32768x8192 (row)", f"WARPS={wp}", 2 * M * N * 4,
               lambda wp=wp: rms.rmsnorm_fwd_row(xf, wf, yf, rf, eps=1e-6, BLOCK_N=8192, WARPS=wp))
    del xf, yf
    Ms = 2048
    xs, dys, dxs = x[:Ms], dy[:Ms], dx[:Ms]
    for p, wp in ((66, 16), (132, 16), (264, 16), (132, 8), (264, 8)):
        part = torch.empty(p, N, device=DEV)
        yield ("RMSNorm bwd 2048x8192 (dx, partials)", f"P={p} WARPS={wp}", 3 * Ms * N * 2,
               lambda wp=wp, part=part: rms.rmsnorm_bwd(xs, w, dys, rstd[:Ms], dxs, part, BLOCK_N=8192, WARPS=wp))

    del ref_y, ref_dx
    # Backward grids around one wave of 4-warp CTAs (6 per SM at 80 registers: SB = 14 at B = 56 on 132 SMs), and
    # x and dy prefetched into L2 L2 rows ahead (backend v13).
    yield from dit_sweep(dit, ((32, 2), (64, 1), (64, 2), (64, 4), (128, 2)),
                         ((12, 4), (14, 4), (16, 4), (9, 8)) + tuple((14, 4, {"L2": d}) for d in (2, 3, 4, 6)))


def variant_cases():
    """bench/variants.fnk: candidate schedules against the stdlib ones."""
    var = fnk.load(REPO / "bench" / "variants.fnk")
    rms = fnk.load(REPO / "stdlib" / "norm" / "rmsnorm.fnk")
    ln = fnk.load(REPO / "stdlib" / "norm" / "layernorm.fnk")
    dit = fnk.load(REPO / "examples" / "dit_modulate.fnk")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bf = torch.bfloat16
    M, N = 32768, 8192
    x, w, b = (torch.randn(M, N, device=DEV, dtype=bf), torch.randn(N, device=DEV, dtype=bf),
               torch.randn(N, device=DEV, dtype=bf))
    y, rstd, mean = torch.empty_like(x), torch.empty(M, device=DEV), torch.empty(M, device=DEV)
    fwd = 2 * M * N * 2
    F = torch.nn.functional
    ref_rms = F.rms_norm(x.float(), (N,), w.float(), 1e-6)
    ref_ln = F.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-6)
    CHECKS["RMSNorm fwd 32768x8192"] = lambda: rel_err(y, ref_rms)
    CHECKS["LayerNorm fwd 32768x8192"] = lambda: rel_err(y, ref_ln)
    yield ("RMSNorm fwd 32768x8192", "stdlib BLOCK_N=2048 WARPS=8", fwd,
           lambda: rms.rmsnorm_fwd(x, w, y, rstd, eps=1e-6, BLOCK_N=2048, WARPS=8))
    for wp in (4, 8):
        yield ("RMSNorm fwd 32768x8192", f"stdlib BLOCK_N=8192 WARPS={wp}", fwd,
               lambda wp=wp: rms.rmsnorm_fwd(x, w, y, rstd, eps=1e-6, BLOCK_N=8192, WARPS=wp))
    for wp in (4, 8):
        yield ("RMSNorm fwd 32768x8192", f"stdlib row WARPS={wp}", fwd,
               lambda wp=wp: rms.rmsnorm_fwd_row(x, w, y, rstd, eps=1e-6, BLOCK_N=8192, WARPS=wp))
    yield ("RMSNorm fwd 32768x8192", "rows WARPS=8 ROWS=4", fwd,
           lambda: var.rms_fwd_rows(x, w, y, rstd, eps=1e-6, WARPS=8, ROWS=4))
    # float32 rows (32 KB): whole, or in chunks read twice (fnk.torch's since backend v20: 4096 at 8 warps).
    xf, wf = x.float(), w.float()
    yf, rf = torch.empty_like(xf), torch.empty(M, device=DEV)
    ref_f = F.rms_norm(xf, (N,), wf, 1e-6)
    CHECKS["RMSNorm fwd f32 32768x8192"] = lambda: rel_err(yf, ref_f)
    for wp in (8, 16, 32):
        yield ("RMSNorm fwd f32 32768x8192", f"stdlib row WARPS={wp}", 2 * M * N * 4,
               lambda wp=wp: rms.rmsnorm_fwd_row(xf, wf, yf, rf, eps=1e-6, BLOCK_N=8192, WARPS=wp))
    for bn, wp in ((2048, 4), (2048, 8), (4096, 4), (4096, 8), (4096, 16), (8192, 8), (8192, 16)):
        yield ("RMSNorm fwd f32 32768x8192", f"stdlib chunked BLOCK_N={bn} WARPS={wp}", 2 * M * N * 4,
               lambda bn=bn, wp=wp: rms.rmsnorm_fwd(xf, wf, yf, rf, eps=1e-6, BLOCK_N=bn, WARPS=wp))
    # float32 LayerNorm rows: the whole-row kernel spills 720 bytes in f32; chunks (fnk.torch's since backend v20).
    bf_ = b.float()
    mf = torch.empty(M, device=DEV)
    ref_lf = F.layer_norm(xf, (N,), wf, bf_, 1e-6)
    CHECKS["LayerNorm fwd f32 32768x8192"] = lambda: rel_err(yf, ref_lf)
    yield ("LayerNorm fwd f32 32768x8192", "stdlib row WARPS=8 CTAS=3", 2 * M * N * 4,
           lambda: ln.layernorm_fwd_row(xf, wf, bf_, yf, mf, rf, eps=1e-6, BLOCK_N=8192, WARPS=8, CTAS=3, L2=3 * sms))
    for bn, wp in ((2048, 4), (4096, 8), (4096, 16)):
        yield ("LayerNorm fwd f32 32768x8192", f"stdlib chunked BLOCK_N={bn} WARPS={wp}", 2 * M * N * 4,
               lambda bn=bn, wp=wp: ln.layernorm_fwd(xf, wf, bf_, yf, mf, rf, eps=1e-6, BLOCK_N=bn, WARPS=wp))
    del xf, yf
    for bn, wp in ((2048, 4), (2048, 2), (2048, 8), (1024, 4), (4096, 4), (4096, 8), (8192, 8)):
        yield ("LayerNorm fwd 32768x8192", f"stdlib BLOCK_N={bn} WARPS={wp}", fwd,
               lambda bn=bn, wp=wp: ln.layernorm_fwd(x, w, b, y, mean, rstd, eps=1e-6, BLOCK_N=bn, WARPS=wp))
    for p, wp, pf in ((sms, 16, 1), (sms, 16, 2), (sms, 16, 3), (2 * sms, 8, 2)):
        yield ("LayerNorm fwd 32768x8192", f"pf P={p} WARPS={wp} PF={pf}", fwd,
               lambda p=p, wp=wp, pf=pf: var.ln_fwd_pf(x, w, b, y, mean, rstd, eps=1e-6, P=p, WARPS=wp, PF=pf))
    # The stdlib's whole-row forward (fnk.torch's at 8192 columns: 8 warps, 3 CTAs per SM, the row of the CTA one
    # resident wave later asked into L2) and around it; (16, 3) and (16, 4): Inductor's LayerNorm forward runs
    # 16-warp CTAs at 24 registers, four to an SM (docs/perf-notes.md, backend v2 and v8).
    for wp, ctas, per_sm in ((8, 3, 3), (8, 3, 0), (8, 3, 6), (8, 3, 9), (8, 2, 2), (8, 2, 4), (16, 2, 2), (16, 2, 1),
                             (16, 1, 0), (16, 3, 0), (16, 4, 0)):
        yield ("LayerNorm fwd 32768x8192", f"row WARPS={wp} CTAS={ctas} L2={per_sm * sms}", fwd,
               lambda wp=wp, ctas=ctas, l2=per_sm * sms:
               ln.layernorm_fwd_row(x, w, b, y, mean, rstd, eps=1e-6, WARPS=wp, CTAS=ctas, L2=l2))
    for wp in (8, 16):
        yield ("LayerNorm fwd 32768x8192", f"reload WARPS={wp}", fwd,
               lambda wp=wp: var.ln_fwd_reload(x, w, b, y, mean, rstd, eps=1e-6, WARPS=wp))
        yield ("LayerNorm fwd 32768x8192", f"reload3 WARPS={wp}", fwd,
               lambda wp=wp: var.ln_fwd_reload3(x, w, b, y, mean, rstd, eps=1e-6, WARPS=wp))
    for ctas in (2, 3, 4):  # x read three times (the last two from L2), few registers: more CTAs per SM
        yield ("LayerNorm fwd 32768x8192", f"reload3 WARPS=16 CTAS={ctas}", fwd,
               lambda ctas=ctas: var.ln_fwd_reload3(x, w, b, y, mean, rstd, eps=1e-6, WARPS=16, CTAS=ctas))
    # One row per CTA as rmsnorm_fwd_row, one reduction round, x read again (backend v9).
    for wp, ctas in ((16, 2), (8, 3), (8, 4), (16, 1)):
        yield ("LayerNorm fwd 32768x8192", f"row2 WARPS={wp} CTAS={ctas}", fwd,
               lambda wp=wp, ctas=ctas: var.ln_fwd_row2(x, w, b, y, mean, rstd, eps=1e-6, WARPS=wp, CTAS=ctas))
    # The persistent forwards whose rows arrive S - 1 ahead in shared memory by bulk copies (copy_bulk): the
    # stdlib's kernel and its variants, each at its (WARPS, CTAS per SM, S) settings.
    staged = (
        ("staged", ln.layernorm_fwd_staged,
         ((8, 2, 3), (8, 2, 2), (8, 2, 4), (8, 2, 6), (16, 1, 3), (8, 1, 4), (8, 1, 3), (8, 1, 5), (8, 1, 6), (8, 1, 8),
          (16, 1, 2), (16, 1, 4), (16, 1, 5), (16, 1, 8), (32, 1, 3), (32, 1, 4), (16, 2, 3), (32, 2, 3), (16, 1, 6),
          (16, 2, 2))),
        # w and b loaded with each row and one reduction round (fewer registers)
        ("bulk1", var.ln_fwd_bulk1, ((8, 2, 3), (8, 2, 4), (8, 3, 3), (16, 2, 3), (16, 2, 4), (8, 4, 2), (4, 4, 3), (4, 6, 2))),
        # mean and variance in two reduction rounds (backend v9's form, without its hand-written full-row branch)
        ("2round", var.ln_fwd_2round, ((8, 1, 4), (8, 1, 3), (8, 1, 8), (8, 2, 3), (16, 1, 4))),
        # y out by bulk stores from a ring of two shared rows (store_bulk; backend v10)
        ("bstore", var.ln_fwd_bstore, ((16, 1, 4), (16, 1, 3), (16, 1, 8), (8, 1, 4), (8, 2, 3))),
        # the next row's copy issued after this row's statistics: one CTA barrier fewer per row (backend v11)
        ("latecopy", var.ln_fwd_latecopy, ((16, 1, 4), (16, 1, 3), (16, 1, 5), (16, 1, 8), (8, 1, 4))),
        # w and b in shared memory, two 16-warp CTAs per SM (backend v11)
        ("wsmem", var.ln_fwd_wsmem, ((16, 2, 3), (16, 2, 2), (16, 2, 4), (16, 1, 4), (8, 2, 3))),
    )
    for tag, kern, settings in staged:
        for wp, ctas, st in settings:
            yield ("LayerNorm fwd 32768x8192", f"{tag} WARPS={wp} CTAS={ctas} S={st} P={ctas * sms}", fwd,
                   lambda kern=kern, wp=wp, ctas=ctas, st=st: kern(x, w, b, y, mean, rstd, eps=1e-6, WARPS=wp,
                                                                   CTAS=ctas, S=st, P=ctas * sms))
    mean.copy_(torch.randn(M, device=DEV) * 0.1)
    rstd.copy_(torch.rand(M, device=DEV) + 0.5)
    dyl, dxl = torch.randn_like(x), torch.empty_like(x)
    dwp, dbp = torch.empty(sms, N, device=DEV), torch.empty(sms, N, device=DEV)
    ref_ln_dx = ln_dx_ref(x, dyl.float() * w.float(), mean, rstd)
    CHECKS["LayerNorm bwd 32768x8192 (dx, partials)"] = lambda: rel_err(dxl, ref_ln_dx)
    for wp in (8, 16, 32):
        yield ("LayerNorm bwd 32768x8192 (dx, partials)", f"stdlib WARPS={wp} P=1x", 3 * M * N * 2,
               lambda wp=wp: ln.layernorm_bwd(x, w, dyl, mean, rstd, dxl, dwp, dbp, BLOCK_N=8192, WARPS=wp))
        yield ("LayerNorm bwd 32768x8192 (dx, partials)", f"wrow WARPS={wp} P=1x", 3 * M * N * 2,
               lambda wp=wp: var.ln_bwd_wrow(x, w, dyl, mean, rstd, dxl, dwp, dbp, BLOCK_N=8192, WARPS=wp))
    for l2 in (0, 3):  # x and dy asked into L2 L2 rows ahead: the default 2, none, 3 (backend v14)
        yield ("LayerNorm bwd 32768x8192 (dx, partials)", f"stdlib WARPS=16 P=1x L2={l2}", 3 * M * N * 2,
               lambda l2=l2: ln.layernorm_bwd(x, w, dyl, mean, rstd, dxl, dwp, dbp, BLOCK_N=8192, WARPS=16, L2=l2))
    # float32 rows: with the next row loaded ahead (PF = 1, fnk.torch's) ptxas spills 76-84 bytes at 16 warps and
    # 68 at 32; PF = 0 spills nothing (tests/lit/gpu/spills.test; backend v21).
    xf, wf, dyf, dxf = x.float(), w.float(), dyl.float(), torch.empty(M, N, device=DEV)
    ref_lf = ln_dx_ref(xf, dyf * wf, mean, rstd)
    CHECKS["LayerNorm bwd f32 32768x8192 (dx, partials)"] = lambda: rel_err(dxf, ref_lf)
    for wp, pf, l2 in ((16, 1, 2), (16, 0, 2), (16, 0, 3), (16, 0, 0), (32, 0, 2), (32, 1, 2)):
        yield ("LayerNorm bwd f32 32768x8192 (dx, partials)", f"stdlib WARPS={wp} PF={pf} L2={l2} P=1x", 3 * M * N * 4,
               lambda wp=wp, pf=pf, l2=l2: ln.layernorm_bwd(xf, wf, dyf, mean, rstd, dxf, dwp, dbp, BLOCK_N=8192,
                                                            WARPS=wp, PF=pf, L2=l2))
    del xf, dyf, dxf
    yield from ln_split_cases(ln, sms, var)
    # w held in registers (stdlib) or read per row (wrow) at 4096 columns too.
    M4, N4 = 65536, 4096
    x4, dy4, dx4 = (torch.randn(M4, N4, device=DEV, dtype=bf) for _ in range(3))
    w4 = torch.randn(N4, device=DEV, dtype=bf)
    mean4, rstd4 = torch.randn(M4, device=DEV) * 0.1, torch.rand(M4, device=DEV) + 0.5
    dwp4, dbp4 = torch.empty(sms, N4, device=DEV), torch.empty(sms, N4, device=DEV)
    ref4 = ln_dx_ref(x4, dy4.float() * w4.float(), mean4, rstd4)
    CHECKS[f"LayerNorm bwd {M4}x{N4} (dx, partials)"] = lambda: rel_err(dx4, ref4)
    for wp in (8, 16):
        yield (f"LayerNorm bwd {M4}x{N4} (dx, partials)", f"stdlib WARPS={wp} P=1x", 3 * M4 * N4 * 2,
               lambda wp=wp: ln.layernorm_bwd(x4, w4, dy4, mean4, rstd4, dx4, dwp4, dbp4, BLOCK_N=N4, WARPS=wp))
        yield (f"LayerNorm bwd {M4}x{N4} (dx, partials)", f"wrow WARPS={wp} P=1x", 3 * M4 * N4 * 2,
               lambda wp=wp: var.ln_bwd_wrow(x4, w4, dy4, mean4, rstd4, dx4, dwp4, dbp4, BLOCK_N=N4, WARPS=wp))
    # backend v7's layernorm_bwd (dw, db after the sums, no prefetch) at 4096 columns
    yield (f"LayerNorm bwd {M4}x{N4} (dx, partials)", "pf WARPS=16 PF=0 P=1x", 3 * M4 * N4 * 2,
           lambda: var.ln_bwd_pf(x4, w4, dy4, mean4, rstd4, dx4, dwp4, dbp4, BLOCK_N=N4, WARPS=16, PF=0))
    del x4, dy4, dx4, ref4
    for pf in (0, 1):
        yield ("LayerNorm bwd 32768x8192 (dx, partials)", f"wl WARPS=16 PF={pf} P=1x", 3 * M * N * 2,
               lambda pf=pf: var.ln_bwd_wl(x, w, dyl, mean, rstd, dxl, dwp, dbp, WARPS=16, PF=pf))
    yield ("LayerNorm bwd 32768x8192 (dx, partials)", "smem WARPS=16 P=1x", 3 * M * N * 2,
           lambda: var.ln_bwd_smem(x, w, dyl, mean, rstd, dxl, dwp, dbp, WARPS=16))
    for wp, pf in ((16, 0), (16, 1), (16, 2), (32, 0), (32, 1)):
        yield ("LayerNorm bwd 32768x8192 (dx, partials)", f"pf WARPS={wp} PF={pf} P=1x", 3 * M * N * 2,
               lambda wp=wp, pf=pf: var.ln_bwd_pf(x, w, dyl, mean, rstd, dxl, dwp, dbp, WARPS=wp, PF=pf))
    for wp in (8, 16):
        yield ("LayerNorm bwd 32768x8192 (dx, partials)", f"reload WARPS={wp} P=1x", 3 * M * N * 2,
               lambda wp=wp: var.ln_bwd_reload(x, w, dyl, mean, rstd, dxl, dwp, dbp, WARPS=wp))
    dy, dx = torch.randn_like(x), torch.empty_like(x)
    rstd.copy_(torch.rand(M, device=DEV) + 0.5)
    ref_rms_dx = rms_dx_ref(x, w, dy, rstd)
    CHECKS["RMSNorm bwd 32768x8192 (dx, partials)"] = lambda: rel_err(dx, ref_rms_dx)
    part = torch.empty(sms, N, device=DEV)
    for wp in (16, 32):
        yield ("RMSNorm bwd 32768x8192 (dx, partials)", f"stdlib WARPS={wp} P=1x", 3 * M * N * 2,
               lambda wp=wp: rms.rmsnorm_bwd(x, w, dy, rstd, dx, part, BLOCK_N=8192, WARPS=wp))
    for l2 in (0, 3):  # x and dy asked into L2 L2 rows ahead: the default 2, none, 3 (backend v14)
        yield ("RMSNorm bwd 32768x8192 (dx, partials)", f"stdlib WARPS=16 P=1x L2={l2}", 3 * M * N * 2,
               lambda l2=l2: rms.rmsnorm_bwd(x, w, dy, rstd, dx, part, BLOCK_N=8192, WARPS=16, L2=l2))
    for wp, pf in ((16, 1), (16, 2), (32, 1)):
        yield ("RMSNorm bwd 32768x8192 (dx, partials)", f"pf WARPS={wp} PF={pf} P=1x", 3 * M * N * 2,
               lambda wp=wp, pf=pf: var.rms_bwd_pf(x, w, dy, rstd, dx, part, WARPS=wp, PF=pf))
    for wp in (8, 16):
        yield ("RMSNorm bwd 32768x8192 (dx, partials)", f"reload WARPS={wp} P=1x", 3 * M * N * 2,
               lambda wp=wp: var.rms_bwd_reload(x, w, dy, rstd, dx, part, WARPS=wp))
    del x, y, dy, dx, dyl, dxl, ref_rms, ref_ln, ref_ln_dx, ref_rms_dx
    rows_fwd = [(f"rows WARPS=2 ROWS={r}", lambda *t, r=r: var.dit_fwd_rows(*t, eps=1e-6, WARPS=2, ROWS=r)) for r in (4, 8)]
    tile_fwd = [(f"tile ROWS={r} WARPS={wp}", lambda *t, r=r, wp=wp: var.dit_fwd_tile(*t, eps=1e-6, ROWS=r, WARPS=wp))
                for r, wp in ((2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 4), (4, 2))]
    pf_fwd = [(f"pf SB={sb} WARPS={wp} PF={pf}", lambda *t, sb=sb, wp=wp, pf=pf: var.dit_fwd_pf(*t, eps=1e-6, SB=sb, WARPS=wp, PF=pf))
              for sb, wp, pf in ((64, 2, 1), (64, 2, 2), (64, 2, 3), (64, 2, 4), (32, 2, 3), (64, 4, 2), (128, 1, 2))]
    # The stdlib forward's 2-warp CTAs take 96 registers: 10 resident per SM, so SB = 64 (3584 CTAs) runs in
    # about 2.7 waves; ctas_per_sm asks ptxas for fewer registers and more CTAs (written after backend v8's
    # device time, not yet run).
    pf_fwd += [(f"pf SB={sb} WARPS={wp} PF=1 CTAS={ct}",
                lambda *t, sb=sb, wp=wp, ct=ct: var.dit_fwd_pf(*t, eps=1e-6, SB=sb, WARPS=wp, PF=1, CTAS=ct))
               for sb, wp, ct in ((64, 2, 12), (64, 2, 16), (32, 2, 16), (32, 4, 8), (24, 2, 10))]
    # The example's grid (SB = 256, 16 one-warp CTAs per SM) with its rows loaded ahead in registers instead of
    # staged by bulk copies (backend v21; PF = 1 spills 8 bytes at 128 registers, PF = 3 needs 168: 12 per SM).
    pf_fwd += [(f"pf SB={sb} WARPS={wp} PF={pf} CTAS={ct}",
                lambda *t, sb=sb, wp=wp, pf=pf, ct=ct: var.dit_fwd_pf(*t, eps=1e-6, SB=sb, WARPS=wp, PF=pf, CTAS=ct))
               for sb, wp, pf, ct in ((256, 1, 1, 16), (256, 1, 0, 16), (256, 1, 3, 12), (128, 1, 1, 16))]
    # The example's forward (rows staged by bulk copies) at other grids, warps and ring depths.
    pf_fwd += [(f"staged SB={sb} WARPS={wp} STAGES={st}",
                lambda *t, sb=sb, wp=wp, st=st: dit.dit_modulate_fwd(*t, eps=1e-6, SB=sb, WARPS=wp, STAGES=st))
               for sb, wp, st in ((64, 2, 4), (128, 1, 2), (128, 1, 3), (128, 1, 4), (128, 1, 6), (256, 1, 3),
                                  (256, 1, 4), (448, 1, 3), (64, 1, 4), (96, 1, 4),
                                  # whole waves of 12 resident CTAs per SM (163 registers): 1, 2, 3, 4 waves
                                  (28, 1, 3), (28, 1, 4), (28, 1, 6), (56, 1, 3), (56, 1, 4), (84, 1, 3), (113, 1, 3),
                                  # and of 16 (128 registers, the example's launch bound since backend v11): 1, 2, 4 waves
                                  (37, 1, 3), (37, 1, 4), (37, 1, 6), (75, 1, 3), (75, 1, 4), (150, 1, 3),
                                  # shorter CTAs, a shorter drain at the end (2 and 1 rows each; backend v13)
                                  (384, 1, 3), (512, 1, 2), (512, 1, 3), (1024, 1, 2))]
    # The first rows of the CTA L2 places later asked into L2 (16 one-warp CTAs per SM: 2112 resident; backend v13).
    pf_fwd += [(f"staged SB=256 WARPS=1 STAGES={st} L2={l2}",
                lambda *t, st=st, l2=l2: dit.dit_modulate_fwd(*t, eps=1e-6, SB=256, WARPS=1, STAGES=st, L2=l2))
               for st, l2 in ((3, 528), (3, 792), (3, 1056), (3, 1320), (3, 2112), (4, 1056))]
    # Shorter CTAs again, each asking for its successor's rows (v13 without: SB = 512 66.2-66.8, 1024 80.7). Still
    # slower (backend v14: 512 66.2-67.0, 1024 79.6-80.4, against 62.9-63.1 at 256): at one row per CTA the
    # modulation vectors' loads are four times the row's bytes.
    pf_fwd += [(f"staged SB={sb} WARPS=1 STAGES={st} L2={l2}",
                lambda *t, sb=sb, st=st, l2=l2: dit.dit_modulate_fwd(*t, eps=1e-6, SB=sb, WARPS=1, STAGES=st, L2=l2))
               for sb, st, l2 in ((256, 2, 792), (512, 2, 792), (512, 2, 1584), (512, 3, 792), (512, 3, 1584),
                                  (1024, 2, 1056), (1024, 2, 2112), (1024, 2, 4224))]
    pf_fwd += [(f"bstore SB={sb} WARPS=1 STAGES={st}",
                lambda *t, sb=sb, st=st: var.dit_fwd_bstore(*t, eps=1e-6, SB=sb, WARPS=1, STAGES=st))
               for sb, st in ((256, 3), (256, 4), (128, 3), (113, 3))]
    pf_fwd += [(f"bulk2 SB={sb} WARPS={wp} STAGES={st}",
                lambda *t, sb=sb, wp=wp, st=st: var.dit_fwd_bulk2(*t, eps=1e-6, SB=sb, WARPS=wp, STAGES=st))
               for sb, wp, st in ((256, 1, 3), (128, 1, 3), (64, 1, 3), (48, 1, 4), (128, 2, 3), (64, 2, 3),
                                  (64, 2, 4), (48, 2, 4), (32, 2, 6))]
    pf_fwd += [(f"1pass SB={sb} WARPS={wp}", lambda *t, sb=sb, wp=wp: var.dit_fwd_1pass(*t, eps=1e-6, SB=sb, WARPS=wp))
               for sb, wp in ((64, 2), (32, 2), (128, 2), (32, 4), (64, 4))]
    pf_fwd += [(f"wr SB={sb} ROWS={r} WARPS={wp}",
                lambda *t, sb=sb, r=r, wp=wp: var.dit_fwd_wr(*t, eps=1e-6, SB=sb, ROWS=r, WARPS=wp))
               for sb, r, wp in ((16, 4, 4), (32, 4, 4), (8, 4, 4), (32, 2, 2), (64, 2, 2), (16, 8, 8), (32, 8, 4))]
    pf_bwd = [(f"pf SB={sb} WARPS={wp} PF={pf}", sb, lambda *t, wp=wp, pf=pf: var.dit_bwd_pf(*t, WARPS=wp, PF=pf))
              for sb, wp, pf in ((8, 4, 1), (8, 4, 2), (8, 4, 3), (16, 2, 2), (16, 4, 2), (14, 4, 1), (14, 4, 2), (14, 2, 1))]
    pf_bwd += [(f"rows SB={sb} ROWS={r} WARPS={wp}", sb, lambda *t, r=r, wp=wp: var.dit_bwd_rows(*t, ROWS=r, WARPS=wp))
               for sb, r, wp in ((8, 2, 4), (16, 2, 4), (8, 4, 8), (16, 4, 8), (8, 8, 16), (8, 4, 4), (16, 4, 4),
                                 (8, 8, 8), (8, 2, 2), (16, 8, 4))]
    # x and dy staged by bulk copies STAGES - 1 rows ahead (backend v10): 448-896 CTAs, all resident.
    pf_bwd += [(f"staged SB={sb} WARPS={wp} STAGES={st}", sb,
                lambda *t, wp=wp, st=st: var.dit_bwd_staged(*t, WARPS=wp, STAGES=st))
               for sb, wp, st in ((8, 4, 4), (16, 4, 4), (16, 4, 3), (8, 2, 4), (16, 2, 4), (8, 4, 6), (14, 4, 3), (14, 2, 4))]
    pf_bwd += [(f"wr SB={sb} ROWS={r} WARPS={wp}", sb, lambda *t, r=r, wp=wp: var.dit_bwd_wr(*t, ROWS=r, WARPS=wp))
               for sb, r, wp in ((8, 4, 4), (16, 4, 4), (8, 2, 2), (16, 2, 2), (8, 8, 8))]
    # Backward grids of SB CTAs per batch: at 2 and 4 warps (159 and 80 registers) 6 CTAs fit per SM, 792 at once, so
    # SB = 14 is one full wave and 15, 16 and 32 leave a partial last one (backend v12: 99-100 us at 14, 123.7 at 8,
    # 127.7 at 16 for the two-kernel backward's first kernel); 8 warps (57 registers) hold 4 per SM, SB = 9.
    # The two-kernel variants swept above at 8 and 16 CTAs per batch, again at one wave: SB from the driver's CTAs per
    # SM for each (backend v12; ptxas: rows 2x4 157 registers, 3 per SM; rows 2x8 111, 2; wr 2x2 249, 4; pf 120, 4).
    yield from dit_sweep(dit, ((64, 2),), tuple((sb, wp) for sb in (8, 9, 12, 13, 14, 15, 16, 32) for wp in (2, 4, 8)),
                         tag="stdlib ", var=var,
                         extra_fwd=rows_fwd + tile_fwd + pf_fwd,
                         extra_bwd=pf_bwd,
                         wave_bwd=(("rows", var.dit_bwd_rows, {"ROWS": 2, "WARPS": 4}),
                                   ("rows", var.dit_bwd_rows, {"ROWS": 2, "WARPS": 8}),
                                   ("wr", var.dit_bwd_wr, {"ROWS": 2, "WARPS": 2}),
                                   ("pf", var.dit_bwd_pf, {"WARPS": 4, "PF": 1}),
                                   ("staged", var.dit_bwd_staged, {"WARPS": 4, "STAGES": 3})),
                         reduce_tiles=lambda sb: ((32, 8), (16, 8), (64, 8), (128, 8), (32, 4)) if sb == 8 else ((32, 8),))
    yield from short_fwd_cases(rms, ln)
    yield from short_bwd_cases(rms, ln, sms)
    yield from rows_variant_cases(rms, var, sms)
    yield from split2_variant_cases(rms, sms)
    yield from ln_rows_variant_cases(ln, sms)
    yield from wide_variant_cases(rms, var, sms)
    yield from ring_variant_cases(rms, var, sms)
    yield from f32_wide_bwd_cases(rms)


def short_fwd_cases(rms, ln):
    """The forwards of short rows (64M elements, as bench.py's sweep): one row
    per CTA (rmsnorm_fwd_row, layernorm_fwd) against [ROWS, N] tiles."""
    bf = torch.bfloat16
    F = torch.nn.functional
    for N in (128, 512, 1024, 2048):
        M = (1 << 26) // N
        x, w, b = (torch.randn(M, N, device=DEV, dtype=bf), torch.randn(N, device=DEV, dtype=bf),
                   torch.randn(N, device=DEV, dtype=bf))
        y, mean, rstd = torch.empty_like(x), torch.empty(M, device=DEV), torch.empty(M, device=DEV)
        nbytes = 2 * M * N * 2
        rw, lw = f"RMSNorm fwd {M}x{N}", f"LayerNorm fwd {M}x{N}"
        CHECKS[rw] = lambda y=y, ref=F.rms_norm(x.float(), (N,), w.float(), 1e-6): rel_err(y, ref)
        CHECKS[lw] = lambda y=y, ref=F.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-6): rel_err(y, ref)
        bn = max(256, N)
        yield (rw, f"stdlib row BLOCK_N={bn}", nbytes,
               lambda x=x, w=w, y=y, rstd=rstd, bn=bn: rms.rmsnorm_fwd_row(x, w, y, rstd, eps=1e-6, BLOCK_N=bn))
        yield (lw, f"stdlib BLOCK_N={bn}", nbytes,
               lambda x=x, w=w, b=b, y=y, mean=mean, rstd=rstd, bn=bn:
               ln.layernorm_fwd(x, w, b, y, mean, rstd, eps=1e-6, BLOCK_N=bn))
        for elems, wp in ((4096, 4), (8192, 8), (8192, 4), (16384, 8)):
            rows = max(1, elems // N)
            yield (rw, f"rows ROWS={rows} WARPS={wp}", nbytes,
                   lambda x=x, w=w, y=y, rstd=rstd, rows=rows, wp=wp:
                   rms.rmsnorm_fwd_rows(x, w, y, rstd, eps=1e-6, BLOCK_N=N, ROWS=rows, WARPS=wp))
            yield (lw, f"rows ROWS={rows} WARPS={wp}", nbytes,
                   lambda x=x, w=w, b=b, y=y, mean=mean, rstd=rstd, rows=rows, wp=wp:
                   ln.layernorm_fwd_rows(x, w, b, y, mean, rstd, eps=1e-6, BLOCK_N=N, ROWS=rows, WARPS=wp))
        del x, y


def short_bwd_cases(rms, ln, sms):
    """The *_bwd_rows kernels at smaller tiles and several CTAs per SM."""
    bf = torch.bfloat16
    for N in (512, 1024, 2048):
        M = (1 << 26) // N
        x, w = torch.randn(M, N, device=DEV, dtype=bf), torch.randn(N, device=DEV, dtype=bf)
        dy, dx = torch.randn_like(x), torch.empty_like(x)
        mean, rstd = x.float().mean(1), torch.rsqrt(x.float().var(1, unbiased=False) + 1e-5)
        rw, lw = f"RMSNorm bwd {M}x{N} (dx, partials)", f"LayerNorm bwd {M}x{N} (dx, partials)"
        CHECKS[rw] = lambda dx=dx, ref=rms_dx_ref(x, w, dy, rstd): rel_err(dx, ref)
        CHECKS[lw] = lambda dx=dx, ref=ln_dx_ref(x, dy.float() * w.float(), mean, rstd): rel_err(dx, ref)
        for elems, wp, per_sm in ((4096, 4, 2), (4096, 4, 4), (8192, 8, 2), (4096, 8, 2), (4096, 8, 3), (4096, 8, 4),
                                  (2048, 4, 4), (2048, 8, 4), (8192, 4, 2), (4096, 2, 8), (2048, 2, 8)):
            rows, p = max(1, elems // N), per_sm * sms
            part, part2 = torch.empty(p, N, device=DEV), torch.empty(p, N, device=DEV)
            yield (rw, f"rows ROWS={rows} WARPS={wp} P={p}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, rows=rows, wp=wp:
                   rms.rmsnorm_bwd_rows(x, w, dy, rstd, dx, part, BLOCK_N=N, ROWS=rows, WARPS=wp))
            yield (lw, f"rows ROWS={rows} WARPS={wp} P={p}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, mean=mean, rstd=rstd, dx=dx, part=part, part2=part2, rows=rows, wp=wp:
                   ln.layernorm_bwd_rows(x, w, dy, mean, rstd, dx, part, part2, BLOCK_N=N, ROWS=rows, WARPS=wp))
        del x, dy, dx


def rows_variant_cases(rms, var, sms):
    """rmsnorm_bwd_rows ([ROWS, N] tiles) against rmsnorm_bwd, which walks one row at a time."""
    # The whole 2048x8192 backward (dx and dw): two kernels (the rows, then rmsnorm_bwd_dw), with the rows as
    # fnk.torch runs them (rmsnorm_bwd_split over clusters of two since backend v16) and by the row kernel before
    # it, against one kernel whose CTAs meet at a grid-wide barrier (wait_ge) and then sum the partial rows.
    x, w, dy, dx, rstd, ref = rms_bwd_inputs(2048, 8192)
    wl, nbytes = "RMSNorm bwd 2048x8192 (dx, dw)", 3 * 2048 * 8192 * 2
    dw = torch.empty(8192, device=DEV, dtype=x.dtype)
    ref_dw = (dy.float() * x.float() * rstd[:, None]).sum(0)
    CHECKS[wl] = lambda: max(rel_err(dx, ref), rel_err(dw, ref_dw))
    part = torch.empty(sms, 8192, device=DEV)
    yield (wl, f"two kernels split CLUSTER=2 BLOCK_N=4096 WARPS=8 P={sms}", nbytes,
           lambda part=part: (rms.rmsnorm_bwd_split(x, w, dy, rstd, dx, part, BLOCK_N=4096, CLUSTER=2, WARPS=8, L2=2),
                              rms.rmsnorm_bwd_dw(part, dw)))
    yield (wl, f"two kernels row P={sms} WARPS=16", nbytes,
           lambda part=part: (rms.rmsnorm_bwd(x, w, dy, rstd, dx, part, BLOCK_N=8192, WARPS=16, L2=0),
                              rms.rmsnorm_bwd_dw(part, dw)))
    # The split rows adding their partial rows into R rows of sums (vector reds), then the kernel that takes
    # them (fnk.torch's since backend v19, R = 16). acc stays at zero between calls.
    for r in (4, 8, 16):
        acc = torch.zeros(r, 8192, device=DEV)
        yield (wl, f"two kernels split acc R={r}", nbytes,
               lambda acc=acc: (rms.rmsnorm_bwd_split_acc(x, w, dy, rstd, dx, acc, BLOCK_N=4096, CLUSTER=2, WARPS=8,
                                                          L2=2, P=sms), rms.rmsnorm_bwd_dw_take(acc, dw)))
    count = torch.zeros(2, device=DEV, dtype=torch.int32)  # the kernel leaves it at zero
    for p, wp, bd, bp in ((sms, 16, 64, 32), (sms, 16, 64, 256), (sms, 16, 32, 256), (sms, 16, 64, 128),
                          (sms, 8, 32, 256), (128, 16, 64, 128)):  # 128 CTAs: 16 rows each, none with 15
        part = torch.empty(p, 8192, device=DEV)
        yield (wl, f"gridsync P={p} WARPS={wp} BLOCK_D={bd} BLOCK_P={bp}", nbytes,
               lambda part=part, wp=wp, bd=bd, bp=bp: var.rms_bwd_gridsync(x, w, dy, rstd, dx, dw, part, count,
                                                                          BLOCK_N=8192, WARPS=wp, BLOCK_D=bd, BLOCK_P=bp))
    for M, N in ((2048, 8192), (65536, 1024), (131072, 512), (32768, 2048), (16384, 4096)):
        x, w, dy, dx, rstd, ref = rms_bwd_inputs(M, N)
        wl = f"RMSNorm bwd {M}x{N} (dx, partials)"
        CHECKS[wl] = lambda dx=dx, ref=ref: rel_err(dx, ref)
        nbytes = 3 * M * N * 2
        std_warps = 16 if N >= 4096 else 8
        part = torch.empty(sms, N, device=DEV)
        yield (wl, f"stdlib WARPS={std_warps} P={sms}", nbytes,
               lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, wp=std_warps, n=N:
               rms.rmsnorm_bwd(x, w, dy, rstd, dx, part, BLOCK_N=n, WARPS=wp))
        if N >= 4096:  # fnk.torch's row backward without its default L2 request two rows ahead (backend v14)
            yield (wl, f"stdlib WARPS={std_warps} P={sms} L2=0", nbytes,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, wp=std_warps, n=N:
                   rms.rmsnorm_bwd(x, w, dy, rstd, dx, part, BLOCK_N=n, WARPS=wp, L2=0))
        configs = {8192: ((2, 16, sms),), 4096: ((2, 16, sms),), 2048: ((4, 8, sms), (8, 8, sms)),
                   1024: ((8, 8, sms), (16, 8, sms)), 512: ((16, 8, sms), (32, 8, sms))}[N]
        if N == 8192:  # deeper prefetch: more rows in flight per SM
            for wp, p, pf in ((16, sms, 1), (16, sms, 2), (16, sms, 3), (8, 2 * sms, 2), (32, sms, 1)):
                part = torch.empty(p, N, device=DEV)
                yield (wl, f"pf WARPS={wp} P={p} PF={pf}", nbytes,
                       lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, wp=wp, pf=pf:
                       var.rms_bwd_pf(x, w, dy, rstd, dx, part, WARPS=wp, PF=pf))
        if N == 8192:  # split over a cluster: more rows in flight per SM
            # (2, 4096, 8, 2), fnk.torch's since backend v16, is timed with its neighbours in split2_variant_cases.
            for c, bn, wp, per_sm in ((2, 4096, 8, 1), (2, 4096, 16, 1), (4, 2048, 8, 2), (4, 2048, 4, 4)):
                part = torch.empty(max(1, per_sm * sms // c), N, device=DEV)
                yield (wl, f"split CLUSTER={c} BLOCK_N={bn} WARPS={wp} P={part.shape[0]}", nbytes,
                       lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, c=c, bn=bn, wp=wp:
                       rms.rmsnorm_bwd_split(x, w, dy, rstd, dx, part, BLOCK_N=bn, CLUSTER=c, WARPS=wp))
        for rows, wp, p in configs:
            part = torch.empty(p, N, device=DEV)
            yield (wl, f"rows ROWS={rows} WARPS={wp} P={p}", nbytes,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, rows=rows, wp=wp, n=N:
                   rms.rmsnorm_bwd_rows(x, w, dy, rstd, dx, part, BLOCK_N=n, ROWS=rows, WARPS=wp))


def split2_variant_cases(rms, sms):
    """8192-column rows over clusters of two 4096-column CTAs, two CTAs per SM
    (rmsnorm_bwd_split, fnk.torch's choice since backend v16), against the
    row kernel fnk.torch launched before (one 16-warp CTA per SM, L2 = 0
    below 32 rows per CTA): at 2048x8192 31.6 against 33.3-34.1 us. Walk
    lengths around the short-walk rule, and L2 distances, CTAs per SM and
    warps around that one point."""
    N = 8192
    for M in (2048, 4096, 32768):
        x, w, dy, dx, rstd, ref = rms_bwd_inputs(M, N)
        wl = f"RMSNorm bwd {M}x{N} (dx, partials) split2"
        CHECKS[wl] = lambda dx=dx, ref=ref: rel_err(dx, ref)
        part = torch.empty(sms, N, device=DEV)
        l2 = 0 if M < 32 * sms else 2
        yield (wl, f"stdlib WARPS=16 P={sms} L2={l2}", 3 * M * N * 2,
               lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, l2=l2:
               rms.rmsnorm_bwd(x, w, dy, rstd, dx, part, BLOCK_N=N, WARPS=16, L2=l2))
        configs = [(8, 2, l2) for l2 in (0, 1, 2, 3)] + [(4, 2, 2), (4, 4, 2), (8, 3, 2), (16, 2, 2)]
        for wp, per_sm, l2 in (configs if M == 2048 else [(8, 2, 2), (8, 2, 0)]):
            part = torch.empty(per_sm * sms // 2, N, device=DEV)
            yield (wl, f"split CLUSTER=2 BLOCK_N=4096 WARPS={wp} P={part.shape[0]} L2={l2}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, wp=wp, l2=l2:
                   rms.rmsnorm_bwd_split(x, w, dy, rstd, dx, part, BLOCK_N=4096, CLUSTER=2, WARPS=wp, L2=l2))
        del x, dy, dx


def ring_variant_cases(rms, var, sms):
    """rms_bwd_ring (x and dy staged by copy_async in an S-stage shared-memory
    ring) against the stdlib row kernel, whose prefetch holds one row ahead in
    registers."""
    for M in (2048, 32768):
        N = 8192
        x, w, dy, dx, rstd, ref = rms_bwd_inputs(M, N)
        wl = f"RMSNorm bwd {M}x{N} (dx, partials) ring"
        CHECKS[wl] = lambda dx=dx, ref=ref: rel_err(dx, ref)
        part = torch.empty(sms, N, device=DEV)
        yield (wl, f"stdlib WARPS=16 P={sms}", 3 * M * N * 2,
               lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part:
               rms.rmsnorm_bwd(x, w, dy, rstd, dx, part, BLOCK_N=N, WARPS=16))
        for wp, st, sync in ((16, 2, 1), (16, 3, 1), (16, 6, 1), (16, 2, 0), (16, 3, 0), (16, 4, 0), (16, 6, 0)):
            yield (wl, f"ring WARPS={wp} S={st} SYNC={sync} P={sms}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, wp=wp, st=st, sync=sync:
                   var.rms_bwd_ring(x, w, dy, rstd, dx, part, BLOCK_N=N, WARPS=wp, S=st, SYNC=sync))
        for wp, st in ((16, 2), (16, 3), (16, 4), (16, 6), (32, 3)):  # the ring filled by bulk copies
            yield (wl, f"bulk WARPS={wp} S={st} P={sms}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, wp=wp, st=st:
                   var.rms_bwd_bulk(x, w, dy, rstd, dx, part, BLOCK_N=N, WARPS=wp, S=st))
        del x, dy, dx, ref


def f32_wide_bwd_cases(rms):
    """The float32 RMSNorm backward at 1024x262144 (rmsnorm_bwd_split_smem, 16 x 16384): with the next row
    loaded ahead (PF = 1, the default) ptxas spills 440 bytes, without it none (tests/lit/gpu/spills.test;
    backend v20 found it, v21 measures it)."""
    M, N = 1024, 262144
    x, w = torch.randn(M, N, device=DEV), torch.randn(N, device=DEV)
    dy, dx = torch.randn_like(x), torch.empty_like(x)
    rstd = torch.rand(M, device=DEV) + 0.5
    ref = rms_dx_ref(x, w, dy, rstd)
    wl = f"RMSNorm bwd f32 {M}x{N} (dx, partials)"
    CHECKS[wl] = lambda: rel_err(dx, ref)
    for p, pf in ((7, 1), (7, 0), (14, 0), (14, 1)):
        part = torch.empty(p, N, device=DEV)
        yield (wl, f"split_smem CLUSTER=16 BLOCK_N=16384 WARPS=16 P={p} PF={pf}", 3 * M * N * 4,
               lambda part=part, pf=pf: rms.rmsnorm_bwd_split_smem(x, w, dy, rstd, dx, part, BLOCK_N=16384, CLUSTER=16,
                                                                 WARPS=16, PF=pf, T="f32"))


def ln_split_cases(ln, sms, var=None):
    """The LayerNorm backward (dx, dw and db: both kernels) on rows wider than
    one tile: layernorm_bwd walking each row's chunks, then layernorm_bwd_dwdb,
    against layernorm_bwd_split_acc over clusters of 8192-column CTAs adding
    into 16 rows of sums, then layernorm_bwd_dwdb_take (backend v21). The
    row kernel in float32 also with the next row ahead (PF = 1) and the L2
    request (v21's item 1b: a tie on these rows). The split's settings: the
    next row ahead or not (PF), w's slice in shared memory or registers (WS;
    dw and db sum in shared memory since v22). With var, also a probe with
    one cluster reduction per row (wrong dx: it bounds what merging the two
    would gain)."""
    for M, N, dt in ((4096, 65536, torch.float32), (8192, 65536, torch.bfloat16), (16384, 16384, torch.bfloat16),
                     (16384, 32768, torch.bfloat16), (8192, 65536, torch.float16)):
        x, dy = torch.randn(M, N, device=DEV).to(dt), torch.randn(M, N, device=DEV).to(dt)
        w, dx = torch.randn(N, device=DEV).to(dt), torch.empty(M, N, device=DEV, dtype=dt)
        mean, rstd = torch.randn(M, device=DEV) * 0.1, torch.rand(M, device=DEV) + 0.5
        dw, db = torch.empty(N, device=DEV, dtype=dt), torch.empty(N, device=DEV, dtype=dt)
        ref = ln_dx_ref(x, dy.float() * w.float(), mean, rstd)
        xh = (x.float() - mean[:, None]) * rstd[:, None]
        ref_dw, ref_db = (dy.float() * xh).sum(0), dy.float().sum(0)
        del xh
        tag = {torch.float32: "f32 ", torch.float16: "f16 "}.get(dt, "")
        wl = f"LayerNorm bwd {tag}{M}x{N} (dx, dw, db)"
        CHECKS[wl] = lambda dx=dx, ref=ref, dw=dw, db=db, ref_dw=ref_dw, ref_db=ref_db: max(
            rel_err(dx, ref), rel_err(dw, ref_dw), rel_err(db, ref_db))
        nbytes = 3 * M * N * x.element_size()
        dwp, dbp = torch.empty(sms, N, device=DEV), torch.empty(sms, N, device=DEV)
        rows = ([{"PF": 0, "L2": 0}, {"PF": 1, "L2": 2}, {"PF": 0, "L2": 2}] if dt == torch.float32 else [{}])
        for row in ({"BLOCK_N": 8192, "WARPS": 16, **r} for r in rows):
            yield (wl, f"row {row} + dwdb", nbytes,
                   lambda x=x, w=w, dy=dy, mean=mean, rstd=rstd, dx=dx, dwp=dwp, dbp=dbp, dw=dw, db=db, row=row:
                   (ln.layernorm_bwd(x, w, dy, mean, rstd, dx, dwp, dbp, **row),
                    ln.layernorm_bwd_dwdb(dwp, dbp, dw, db)))
        c, b, wp = schedules.split(N, backward=True)
        # fnk.torch's grid (ln_bwd's: one resident wave of 16-warp CTAs for clusters of two, 8 CTAs per SM's worth
        # for larger ones), 4 per SM's worth, and one wave
        torch_p = schedules.partial_rows(M, sms, schedules.ln_bwd(N, m=M, sms=sms))
        # fnk.torch's setting (backend v22: dw and db summed in shared memory, the next row ahead, w's slice in
        # shared memory too in float32), then other grids and settings
        settings = {(torch_p, 1, ws) for ws in (0, 1)} | {(torch_p, 0, 0), (4 * sms // c, 1, 0), (sms // c, 1, 0)}
        for p, pf, ws in sorted(settings):
            accs = [torch.zeros(16, N, device=DEV) for _ in range(2)]
            yield (wl, f"split_acc CLUSTER={c} BLOCK_N={b} WARPS={wp} P={p} PF={pf} WS={ws} + take", nbytes,
                   lambda x=x, w=w, dy=dy, mean=mean, rstd=rstd, dx=dx, dw=dw, db=db, accs=accs, c=c, b=b, wp=wp, p=p,
                   pf=pf, ws=ws: (ln.layernorm_bwd_split_acc(x, w, dy, mean, rstd, dx, *accs, BLOCK_N=b, CLUSTER=c,
                                                             WARPS=wp, P=p, PF=pf, WS=ws),
                                  ln.layernorm_bwd_dwdb_take(*accs, dw, db)))
        if var is not None:  # the probe: one cluster reduction per row instead of two (dx wrong, MISMATCH expected)
            accs = [torch.zeros(16, N, device=DEV) for _ in range(2)]
            yield (wl, f"probe ln_bwd_split_1red CLUSTER={c} P={torch_p} + take", nbytes,
                   lambda x=x, w=w, dy=dy, mean=mean, rstd=rstd, dx=dx, dw=dw, db=db, accs=accs, c=c, b=b, wp=wp,
                   p=torch_p: (var.ln_bwd_split_1red(x, w, dy, mean, rstd, dx, *accs, BLOCK_N=b, CLUSTER=c, WARPS=wp,
                                                     P=p),
                               ln.layernorm_bwd_dwdb_take(*accs, dw, db)))
        del x, dy, dx, ref


def ln_rows_variant_cases(ln, sms):
    """layernorm_bwd_rows ([ROWS, N] tiles) against layernorm_bwd, short rows."""
    bf = torch.bfloat16
    for M, N in ((131072, 512), (65536, 1024), (32768, 2048)):
        x, w = torch.randn(M, N, device=DEV, dtype=bf), torch.randn(N, device=DEV, dtype=bf)
        dy, dx = torch.randn_like(x), torch.empty_like(x)
        mean, rstd = x.float().mean(1), torch.rsqrt(x.float().var(1, unbiased=False) + 1e-5)
        ref = ln_dx_ref(x, dy.float() * w.float(), mean, rstd)
        wl = f"LayerNorm bwd {M}x{N} (dx, partials)"
        CHECKS[wl] = lambda dx=dx, ref=ref: rel_err(dx, ref)
        dwp, dbp = torch.empty(sms, N, device=DEV), torch.empty(sms, N, device=DEV)
        # 2048 columns: 8 warps is fnk.torch's choice and spills 8 bytes at 80 registers (ptxas -v;
        # tests/lit/gpu/spills.test); 16 warps take 63 without, 4 take 161.
        for wp in ((8, 16, 4) if N == 2048 else (8,)):
            yield (wl, f"stdlib WARPS={wp} P={sms}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, mean=mean, rstd=rstd, dx=dx, dwp=dwp, dbp=dbp, n=N, wp=wp:
                   ln.layernorm_bwd(x, w, dy, mean, rstd, dx, dwp, dbp, BLOCK_N=n, WARPS=wp))
        for rows in (4, 8, 16) if N <= 1024 else (2, 4):
            yield (wl, f"rows ROWS={rows} WARPS=8 P={sms}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, mean=mean, rstd=rstd, dx=dx, dwp=dwp, dbp=dbp, n=N, rows=rows:
                   ln.layernorm_bwd_rows(x, w, dy, mean, rstd, dx, dwp, dbp, BLOCK_N=n, ROWS=rows, WARPS=8))
        del x, dy, dx, ref


def wide_variant_cases(rms, var, sms):
    """Rows too wide for one CTA: the chunked row kernel, the cluster split
    (one row per cluster), and the persistent split (P clusters walk the rows)."""
    bf = torch.bfloat16
    F = torch.nn.functional
    for M, N in ((8192, 65536), (1024, 262144)):
        x, w = torch.randn(M, N, device=DEV, dtype=bf), torch.randn(N, device=DEV, dtype=bf)
        y, rstd = torch.empty_like(x), torch.empty(M, device=DEV)
        ref = F.rms_norm(x.float(), (N,), w.float(), 1e-6)
        fwd = f"RMSNorm fwd {M}x{N}"
        CHECKS[fwd] = lambda y=y, ref=ref: rel_err(y, ref)
        nbytes = 2 * M * N * 2
        if N <= 65536:
            yield (fwd, "stdlib chunked BLOCK_N=8192 WARPS=16", nbytes,
                   lambda x=x, w=w, y=y, rstd=rstd: rms.rmsnorm_fwd(x, w, y, rstd, eps=1e-6, BLOCK_N=8192, WARPS=16))
        # The split: P clusters walk the rows (P = M: one row per cluster).
        splits = ((((8, 8192, 8), (8, 12, 16)), ((16, 4096, 4), (4, 8)), ((4, 16384, 16), (4,))) if N <= 65536 else
                  (((16, 16384, 16), (4, 6, 8)), ((8, 32768, 32), (M * 8 // sms,))))
        for (c, bn, wp), per_sm in splits:
            for ps in per_sm:
                p = max(1, ps * sms // c)
                for l2 in (2, 0) if ps == per_sm[0] else (2,):  # L2: rows asked into L2 that many steps ahead (default 2)
                    yield (fwd, f"split CLUSTER={c} BLOCK_N={bn} WARPS={wp} P={p}" + (f" L2={l2}" if l2 != 2 else ""), nbytes,
                           lambda x=x, w=w, y=y, rstd=rstd, c=c, bn=bn, wp=wp, p=p, l2=l2:
                           rms.rmsnorm_fwd_split(x, w, y, rstd, eps=1e-6, BLOCK_N=bn, CLUSTER=c, WARPS=wp, P=p, L2=l2))
        if N <= 65536:  # w read on every row (before backend v7) against once
            yield (fwd, "split_wrow CLUSTER=8 BLOCK_N=8192 WARPS=8 P=198", nbytes,
                   lambda x=x, w=w, y=y, rstd=rstd:
                   var.rms_fwd_split_wrow(x, w, y, rstd, eps=1e-6, BLOCK_N=8192, CLUSTER=8, WARPS=8, P=198))
        if N > 65536:
            # P a multiple of the clusters resident at once (7 of 16 CTAs at one CTA per SM on the
            # H200: `fnk run --bench`), so that no wave of clusters runs partly empty.
            for c, bn, wp, ps in ((16, 16384, 16, (7, 14, 21, 28, 35, 42, 56)), (16, 16384, 32, (7, 14)),
                                  (8, 32768, 32, (16, 32, 48))):
                for p in ps:
                    yield (fwd, f"split CLUSTER={c} BLOCK_N={bn} WARPS={wp} P={p}", nbytes,
                           lambda x=x, w=w, y=y, rstd=rstd, c=c, bn=bn, wp=wp, p=p:
                           rms.rmsnorm_fwd_split(x, w, y, rstd, eps=1e-6, BLOCK_N=bn, CLUSTER=c, WARPS=wp, P=p))
            # x staged S - 1 rows ahead in shared memory (copy_async) instead of one in registers.
            for st, p in ((2, 7), (3, 7), (5, 7), (3, 14)):
                yield (fwd, f"split_ring CLUSTER=16 BLOCK_N=16384 WARPS=16 P={p} S={st}", nbytes,
                       lambda x=x, w=w, y=y, rstd=rstd, st=st, p=p:
                       var.rms_fwd_split_ring(x, w, y, rstd, eps=1e-6, S=st, P=p))
            # w read on every row (the stdlib kernel before backend v7 loads it once).
            yield (fwd, "split_wrow CLUSTER=16 BLOCK_N=16384 WARPS=16 P=7", nbytes,
                   lambda x=x, w=w, y=y, rstd=rstd:
                   var.rms_fwd_split_wrow(x, w, y, rstd, eps=1e-6, BLOCK_N=16384, CLUSTER=16, WARPS=16, P=7))
            # x read again from L2 after the reduce, fewer registers: two 8-warp CTAs per SM.
            for wp, ctas, ps in ((16, 1, (7, 14)), (8, 2, (14, 28, 42))):
                for p in ps:
                    yield (fwd, f"split_reload WARPS={wp} CTAS={ctas} P={p}", nbytes,
                           lambda x=x, w=w, y=y, rstd=rstd, wp=wp, ctas=ctas, p=p:
                           var.rms_fwd_split_reload(x, w, y, rstd, eps=1e-6, WARPS=wp, CTAS=ctas, P=p))
        chunks = (((4, 16384, 4096, 8), (8, 8192, 4096, 8)) if N <= 65536 else
                  ((8, 32768, 8192, 16), (16, 16384, 4096, 8)))
        for c, bn, ch, wp in chunks:
            yield (fwd, f"split_chunks CLUSTER={c} BLOCK_N={bn} CHUNK={ch} WARPS={wp}", nbytes,
                   lambda x=x, w=w, y=y, rstd=rstd, c=c, bn=bn, ch=ch, wp=wp:
                   var.rms_fwd_split_chunks(x, w, y, rstd, eps=1e-6, CHUNK=ch, BLOCK_N=bn, CLUSTER=c, WARPS=wp))
        del ref
        dy, dx = torch.randn_like(x), torch.empty_like(x)
        rstd.copy_(torch.rand(M, device=DEV) + 0.5)
        bwd = f"RMSNorm bwd {M}x{N} (dx, partials)"
        ref = rms_dx_ref(x, w, dy, rstd)
        CHECKS[bwd] = lambda dx=dx, ref=ref: rel_err(dx, ref)
        bsplits = ((8, 8192, 8), (8, 8192, 16), (4, 16384, 16)) if N <= 65536 else ((16, 16384, 16), (16, 16384, 32))
        # dw and w in shared memory (the stdlib's kernel for 16384-wide slices), the next row's loads in
        # registers (PF = 1, the default) or not; the row L2 steps ahead asked into L2 (L2 = 0, the default)
        for c, bn, wp in bsplits if bsplits[0][1] >= 16384 else ():
            for p, pf, l2 in (((7, 1, 0), (14, 1, 0), (28, 1, 0), (7, 1, 1), (7, 1, 2), (7, 0, 1), (14, 0, 1), (49, 0, 1))
                              if wp == 16 else ((7, 0, 0), (14, 0, 0))):  # 32 warps: 64 registers, spills
                part = torch.empty(p, N, device=DEV)
                yield (bwd, f"split_smem CLUSTER={c} BLOCK_N={bn} WARPS={wp} P={part.shape[0]} PF={pf} L2={l2}", 3 * M * N * 2,
                       lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, c=c, bn=bn, wp=wp, pf=pf, l2=l2:
                       rms.rmsnorm_bwd_split_smem(x, w, dy, rstd, dx, part, BLOCK_N=bn, CLUSTER=c, WARPS=wp, PF=pf, L2=l2))
        for p, pf in (((7, 0), (7, 1)) if N > 65536 else ()):  # w loaded with x and dy, the partial before dw's update
            part = torch.empty(p, N, device=DEV)
            yield (bwd, f"split_wfirst CLUSTER=16 BLOCK_N=16384 WARPS=16 P={p} PF={pf}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, pf=pf:
                   var.rms_bwd_split_wfirst(x, w, dy, rstd, dx, part, BLOCK_N=16384, CLUSTER=16, WARPS=16, PF=pf))
        for p in ((7, 14) if N > 65536 else ()):  # backend v7's order: dw after the cluster reduction
            part = torch.empty(p, N, device=DEV)
            yield (bwd, f"split_late CLUSTER=16 BLOCK_N=16384 WARPS=16 P={p}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part:
                   var.rms_bwd_split_late(x, w, dy, rstd, dx, part, BLOCK_N=16384, CLUSTER=16, WARPS=16))
        for p, st in (((7, 2), (14, 2)) if N > 65536 else ()):  # x and dy a row ahead in shared memory (copy_async)
            part = torch.empty(p, N, device=DEV)
            yield (bwd, f"split_ring CLUSTER=16 BLOCK_N=16384 WARPS=16 P={p} S={st}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, st=st:
                   var.rms_bwd_split_ring(x, w, dy, rstd, dx, part, BLOCK_N=16384, CLUSTER=16, WARPS=16, S=st))
        # x and dy staged by bulk copies (dw in shared memory): 16 x 16384 with S = 2 (192 KiB),
        # 8 x 8192 with S = 2 to 4
        for c, bn, wp, p, st in (((16, 16384, 16, 7, 2), (16, 16384, 32, 7, 2)) if N > 65536 else
                                 ((8, 8192, 16, 132, 2), (8, 8192, 16, 132, 3), (8, 8192, 8, 264, 3),
                                  (8, 8192, 16, 66, 4))):
            part = torch.empty(p, N, device=DEV)
            yield (bwd, f"split_bulk CLUSTER={c} BLOCK_N={bn} WARPS={wp} P={p} S={st}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, c=c, bn=bn, wp=wp, st=st:
                   var.rms_bwd_split_bulk(x, w, dy, rstd, dx, part, BLOCK_N=bn, CLUSTER=c, WARPS=wp, S=st))
        # The bulk ring pipelined by hand around the cluster reduction (the next row's partial dot before
        # this row's dx): with FNK_CLUSTER_DEFER=1 the reduction's wait moves to dx (bench/knob_ab.py).
        for c, bn, wp, p, st in (((16, 16384, 16, 7, 2), (16, 16384, 32, 7, 2)) if N > 65536 else
                                 ((8, 8192, 16, 132, 2), (8, 8192, 16, 132, 3), (8, 8192, 16, 66, 4))):
            part = torch.empty(p, N, device=DEV)
            yield (bwd, f"split_pipe CLUSTER={c} BLOCK_N={bn} WARPS={wp} P={p} S={st}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, c=c, bn=bn, wp=wp, st=st:
                   var.rms_bwd_split_pipe(x, w, dy, rstd, dx, part, BLOCK_N=bn, CLUSTER=c, WARPS=wp, S=st))
        # Pipelined without the ring, the row read again from L2 for dx (backend v11; FNK_NO_HOIST=1 keeps it
        # from spilling: bench/knob_ab.py FNK_NO_HOIST --variants --only split_l2pipe).
        for p in ((7, 14) if N > 65536 else ()):
            part = torch.empty(p, N, device=DEV)
            yield (bwd, f"split_l2pipe CLUSTER=16 BLOCK_N=16384 WARPS=16 P={p}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part:
                   var.rms_bwd_split_l2pipe(x, w, dy, rstd, dx, part, BLOCK_N=16384, CLUSTER=16, WARPS=16))
        for p in ((7, 14) if N > 65536 else ()):
            part = torch.empty(p, N, device=DEV)
            yield (bwd, f"split_reload WARPS=16 CTAS=1 P={p}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part:
                   var.rms_bwd_split_reload(x, w, dy, rstd, dx, part, WARPS=16, CTAS=1))
        # The slice in CHUNK-wide pieces, x and dy read again from L2.
        bchunks = (((8, 8192, 4096, 8, 2), (8, 8192, 4096, 8, 4), (4, 16384, 4096, 8, 3)) if N <= 65536 else
                   ((16, 16384, 4096, 8, 2), (16, 16384, 4096, 8, 3), (16, 16384, 8192, 16, 2)))
        for c, bn, ch, wp, per_sm in bchunks:
            part = torch.empty(max(1, per_sm * sms // c), N, device=DEV)
            yield (bwd, f"split_chunks CLUSTER={c} BLOCK_N={bn} CHUNK={ch} WARPS={wp} P={part.shape[0]}", 3 * M * N * 2,
                   lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, c=c, bn=bn, ch=ch, wp=wp:
                   var.rms_bwd_split_chunks(x, w, dy, rstd, dx, part, CHUNK=ch, BLOCK_N=bn, CLUSTER=c, WARPS=wp))
        for c, bn, wp in bsplits[:1]:  # w read in the loop, the registers spent on the next row's prefetch
            for per_sm, pf in ((4, 0), (4, 1), (8, 1)):
                part = torch.empty(max(1, per_sm * sms // c), N, device=DEV)
                yield (bwd, f"split_wl CLUSTER={c} BLOCK_N={bn} WARPS={wp} P={part.shape[0]} PF={pf}", 3 * M * N * 2,
                       lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, c=c, bn=bn, wp=wp, pf=pf:
                       var.rms_bwd_split_wl(x, w, dy, rstd, dx, part, BLOCK_N=bn, CLUSTER=c, WARPS=wp, PF=pf))
        for c, bn, wp in bsplits:
            for per_sm, l2 in ((2, 2), (4, 2), (8, 2), (16, 2), (8, 0), (8, 1)):  # L2 = 2: the kernel's default
                part = torch.empty(max(1, per_sm * sms // c), N, device=DEV)
                yield (bwd, f"split CLUSTER={c} BLOCK_N={bn} WARPS={wp} P={part.shape[0]}" + (f" L2={l2}" if l2 != 2 else ""),
                       3 * M * N * 2, lambda x=x, w=w, dy=dy, rstd=rstd, dx=dx, part=part, c=c, bn=bn, wp=wp, l2=l2:
                       rms.rmsnorm_bwd_split(x, w, dy, rstd, dx, part, BLOCK_N=bn, CLUSTER=c, WARPS=wp, L2=l2))
        # The dw reduce over fnk.torch's partial rows (rmsnorm_bwd_dw).
        p = 49 if N > 65536 else sms
        if N <= 65536:  # the 2048x8192 backward's reduce (132 partial rows of 8192)
            part8, dw8 = torch.randn(sms, 8192, device=DEV), torch.empty(8192, device=DEV, dtype=bf)
            CHECKS[f"RMSNorm bwd dw {sms}x8192"] = lambda dw=dw8, ref=part8.sum(0): rel_err(dw, ref)
            for bn, bp in ((64, 32), (32, 32), (32, 64), (16, 128), (32, 128), (16, 256), (8, 256), (64, 64)):
                yield (f"RMSNorm bwd dw {sms}x8192", f"BLOCK_N={bn} BLOCK_P={bp}", sms * 8192 * 4,
                       lambda part=part8, dw=dw8, bn=bn, bp=bp: rms.rmsnorm_bwd_dw(part, dw, BLOCK_N=bn, BLOCK_P=bp))
            for bn, bp, wp in ((64, 8, 4), (128, 8, 4), (64, 16, 4), (32, 16, 2), (64, 4, 2)):
                yield (f"RMSNorm bwd dw {sms}x8192", f"acc BLOCK_N={bn} BLOCK_P={bp} WARPS={wp}", sms * 8192 * 4,
                       lambda part=part8, dw=dw8, bn=bn, bp=bp, wp=wp: var.rms_dw_acc(part, dw, BLOCK_N=bn, BLOCK_P=bp, WARPS=wp))
            for bn, wp in ((16, 4), (8, 4), (32, 8), (8, 2)):
                yield (f"RMSNorm bwd dw {sms}x8192", f"t BLOCK_N={bn} WARPS={wp}", sms * 8192 * 4,
                       lambda part=part8, dw=dw8, bn=bn, wp=wp: var.rms_dw_t(part, dw, BLOCK_N=bn, WARPS=wp))
        part, dw = torch.randn(p, N, device=DEV), torch.empty(N, device=DEV, dtype=bf)
        CHECKS[f"RMSNorm bwd dw {p}x{N}"] = lambda dw=dw, ref=part.sum(0): rel_err(dw, ref)
        for bn, bp in ((64, 32), (64, 64), (128, 16), (256, 8), (512, 4)):
            yield (f"RMSNorm bwd dw {p}x{N}", f"BLOCK_N={bn} BLOCK_P={bp}", p * N * 4,
                   lambda part=part, dw=dw, bn=bn, bp=bp: rms.rmsnorm_bwd_dw(part, dw, BLOCK_N=bn, BLOCK_P=bp))
        del x, y, dy, dx, ref


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/fnk-bench"))
    ap.add_argument("--variants", action="store_true", help="bench/variants.fnk against the stdlib instead")
    ap.add_argument("--only", action="append", default=[],
                    help="run only configs whose 'workload config' contains this (repeatable: any of them)")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print(bench.device_id(), flush=True)
    rows, bad = [], 0
    for workload, config, nbytes, fn in (variant_cases() if a.variants else cases()):
        if a.only and not any(o in f"{workload} {config}" for o in a.only):
            continue
        try:
            us = bench.time_graph(fn, a.reps)
            note = ""
            if workload in CHECKS:
                err = CHECKS[workload]()
                note = f" err {err:.3g}" + (" MISMATCH" if err > TOLERANCE else "")
            print(f"  {workload:40} {config:32} {us:9.1f} us {nbytes / us / 1e3:6.0f} GB/s{note}", flush=True)
            if note.endswith("MISMATCH"):
                bad += 1
            elif not config.startswith("probe "):  # a timing probe computes a wrong answer by design: never the best
                rows.append((workload, config, us, nbytes / us / 1e3))
        except Exception as e:  # noqa: BLE001 - a config that fails is reported, and fails the run
            bad += 1
            print(f"  {workload:40} {config:32} failed: {str(e).splitlines()[0][:160]}", flush=True)
    with open(os.path.join(a.out, "variants.csv" if a.variants else "tune.csv"), "w", newline="") as f:
        w = csv.writer(f)  # workload names hold commas ("(dx, partials)")
        w.writerow(["workload", "config", "us", "GB/s"])
        for r in rows:
            w.writerow([r[0], r[1], f"{r[2]:.2f}", f"{r[3]:.1f}"])
    print("\nbest per workload:")
    for wl in dict.fromkeys(r[0] for r in rows):
        best = min((r for r in rows if r[0] == wl), key=lambda r: r[2])
        print(f"  {wl:40} {best[1]:32} {best[2]:9.1f} us {best[3]:6.0f} GB/s")
    if bad:
        print(f"{bad} configs failed or mismatched")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
