"""fnk norms as PyTorch autograd functions.

    from fnk.torch import rms_norm, layer_norm
    y = rms_norm(x, weight, eps=1e-6)                  # like torch.nn.functional.rms_norm
    y = layer_norm(x, (n,), weight, bias, eps=1e-5)    # like torch.nn.functional.layer_norm

Forward and backward run the stdlib kernels (stdlib/norm/*.fnk) on CUDA
tensors (RMSNorm rows wider than 8192 spread over a cluster of CTAs), on the current stream, without copies for contiguous inputs. A
non-contiguous input is made contiguous first (one copy, as torch's own
kernels do). RMSNorm and LayerNorm modules wrap them for use in nn.Module
code. Only the last dimension is normalized.
"""
from pathlib import Path

import torch

from . import load

_STDLIB = Path(__file__).resolve().parents[2] / "stdlib" / "norm"
_modules = {}


def _module(name):
    if name not in _modules:
        _modules[name] = load(_STDLIB / f"{name}.fnk")
    return _modules[name]


_DTYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}


def _dtype(t):
    if t.dtype not in _DTYPES:
        raise TypeError(f"fnk.torch: unsupported dtype {t.dtype} (float32, bfloat16, float16)")
    return _DTYPES[t.dtype]


def _block(n):
    """The tile width: the row in one tile up to 8192 columns (one pass over x),
    chunks of 8192 beyond."""
    b = 256
    while b < n and b < 8192:
        b *= 2
    return b


def _split(n, backward=False):
    """(CLUSTER, BLOCK_N, WARPS) for rows wider than one tile: the row spread
    over a cluster, each CTA holding BLOCK_N columns at 32 per thread. From
    bench/tune.py on the H200 (docs/perf-notes.md, "GPU backend v3"): clusters
    of up to 8 CTAs of 8192 columns, then wider CTAs; the forward (x only, and
    read again after the reduction) takes up to 32768 columns per CTA
    (1024x262144: 8 x 32768 396 us, 16 x 16384 600), the backward, which also
    holds w and its dw partial, up to 16384 (8 x 32768 spills: 4790 us, 16 x
    16384 888)."""
    cap = 16384 if backward else 32768
    cluster = 2
    while cluster < 8 and cluster * 8192 < n:
        cluster *= 2
    while cluster < 16 and cluster * cap < n:
        cluster *= 2
    block = 256
    while block * cluster < n:
        block *= 2
    return cluster, block, max(4, min(32, block // 1024))


def _ln_fwd_block(n):
    """LayerNorm forward: the whole row up to 2048 columns, then 2048-wide
    chunks with one-pass statistics at 4 warps (bench/tune.py at 32768x8192 on
    the H200: 309 us, against 330 for a persistent whole-row kernel and 346
    for the statistics in two walks; docs/perf-notes.md)."""
    return min(_block(n), 2048)


def _bwd_warps(n):
    """bench/tune.py at 32768x8192 on the H200, backend v3: LayerNorm backward
    16 warps 536 us, 8 warps 546-562 (backend v1, RMSNorm: 16 warps 645, 8 681,
    32 742)."""
    return 16 if n >= 4096 else 8


def _partials(m, device, per_sm=1):
    """CTAs for a backward: per_sm per SM, never more than rows. The 16-warp
    row kernels fit one CTA per SM (bench/tune.py: 1, 2 and 4 per SM ran
    within 1% at 32768x8192, and more CTAs only add partial rows for the dw
    reduction to read); the cluster kernels want 4 (1024x262144: 1129 us at
    4 per SM, 1543 at 1)."""
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return max(1, min(m, per_sm * sms))


def _rows(x, n):
    if x.shape[-1] != n:
        raise ValueError(f"fnk.torch: normalized size {n} does not match the last dim of x {tuple(x.shape)}")
    if not x.is_cuda:
        raise ValueError("fnk.torch: x must be a CUDA tensor")
    return x.contiguous().view(-1, n)


def _bwd_rows_config(n):
    """The *_bwd_rows kernels' settings for rows of n <= 1024: a [ROWS, BLOCK_N]
    tile of 8192 elements (16 rows at most) over 8 warps."""
    block = _block(n)
    return dict(BLOCK_N=block, ROWS=min(16, 8192 // block), WARPS=8)


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        n = weight.numel()
        x2 = _rows(x, n)
        w = weight.contiguous()
        y = torch.empty_like(x2)
        rstd = torch.empty(x2.shape[0], device=x.device, dtype=torch.float32)
        mod = _module("rmsnorm")
        if n <= 8192:
            mod.rmsnorm_fwd_row(x2, w, y, rstd, eps=float(eps), BLOCK_N=_block(n), T=_dtype(x2))
        else:
            c, b, warps = _split(n)
            mod.rmsnorm_fwd_split(x2, w, y, rstd, eps=float(eps), BLOCK_N=b, CLUSTER=c, WARPS=warps, T=_dtype(x2))
        ctx.save_for_backward(x2, w, rstd)
        ctx.shape = x.shape
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, dy):
        x2, w, rstd = ctx.saved_tensors
        m, n = x2.shape
        dy2 = dy.contiguous().view(m, n).to(x2.dtype)
        dx = torch.empty_like(x2)
        mod = _module("rmsnorm")
        if n <= 1024:
            # Short rows, several per step (bench/tune.py: 131072x512 190 us
            # against 550 one row at a time, 65536x1024 159-192 against 301-312).
            partial = torch.empty(_partials(m, x2.device), n, device=x2.device, dtype=torch.float32)
            mod.rmsnorm_bwd_rows(x2, w, dy2, rstd, dx, partial, **_bwd_rows_config(n), T=_dtype(x2))
        elif n <= 8192:
            partial = torch.empty(_partials(m, x2.device), n, device=x2.device, dtype=torch.float32)
            mod.rmsnorm_bwd(x2, w, dy2, rstd, dx, partial, BLOCK_N=_block(n), WARPS=_bwd_warps(n), T=_dtype(x2))
        else:
            c, b, warps = _split(n, backward=True)
            # Clusters in all: 8 CTAs per SM for clusters of up to 8 (8192x65536:
            # 1145 us against 1211 at 4 per SM), 4 for 16 (1024x262144: 885 us
            # against 918 at 8).
            per_sm = 8 if c <= 8 else 4
            partial = torch.empty(max(1, _partials(m, x2.device, per_sm=per_sm) // c), n, device=x2.device,
                                  dtype=torch.float32)
            mod.rmsnorm_bwd_split(x2, w, dy2, rstd, dx, partial, BLOCK_N=b, CLUSTER=c, WARPS=warps, T=_dtype(x2))
        dw = torch.empty_like(w)
        mod.rmsnorm_bwd_dw(partial, dw, T=_dtype(w))
        return dx.view(ctx.shape), dw, None


class _LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        n = weight.numel()
        x2 = _rows(x, n)
        w, b = weight.contiguous(), bias.contiguous()
        m = x2.shape[0]
        y = torch.empty_like(x2)
        mean = torch.empty(m, device=x.device, dtype=torch.float32)
        rstd = torch.empty(m, device=x.device, dtype=torch.float32)
        block = _ln_fwd_block(n)
        _module("layernorm").layernorm_fwd(x2, w, b, y, mean, rstd, eps=float(eps), BLOCK_N=block,
                                           WARPS=4 if block < n else 8, T=_dtype(x2))
        ctx.save_for_backward(x2, w, mean, rstd)
        ctx.shape = x.shape
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, dy):
        x2, w, mean, rstd = ctx.saved_tensors
        m, n = x2.shape
        dy2 = dy.contiguous().view(m, n).to(x2.dtype)
        dx = torch.empty_like(x2)
        p = _partials(m, x2.device)
        dwp = torch.empty(p, n, device=x2.device, dtype=torch.float32)
        dbp = torch.empty(p, n, device=x2.device, dtype=torch.float32)
        mod = _module("layernorm")
        if n <= 1024:
            # As the RMSNorm backward (bench/tune.py on the H200: 131072x512
            # 193 us against 591 one row at a time, 65536x1024 194 against 311).
            mod.layernorm_bwd_rows(x2, w, dy2, mean, rstd, dx, dwp, dbp, **_bwd_rows_config(n), T=_dtype(x2))
        else:
            mod.layernorm_bwd(x2, w, dy2, mean, rstd, dx, dwp, dbp, BLOCK_N=_block(n), WARPS=_bwd_warps(n), T=_dtype(x2))
        dw, db = torch.empty_like(w), torch.empty_like(w)
        mod.layernorm_bwd_dwdb(dwp, dbp, dw, db, T=_dtype(w))
        return dx.view(ctx.shape), dw, db, None


def rms_norm(x, weight, eps=1e-6):
    """RMSNorm over the last dim with a weight of that size."""
    if weight is None:
        raise ValueError("fnk.torch.rms_norm needs a weight")
    if weight.dtype != x.dtype:
        raise TypeError(f"fnk.torch.rms_norm: weight is {weight.dtype} but x is {x.dtype}")
    return _RMSNorm.apply(x, weight, eps)


def layer_norm(x, normalized_shape, weight, bias, eps=1e-5):
    """LayerNorm over the last dim (normalized_shape must be that one dim)."""
    shape = tuple(normalized_shape) if not isinstance(normalized_shape, int) else (normalized_shape,)
    if len(shape) != 1:
        raise ValueError(f"fnk.torch.layer_norm normalizes the last dim only, got normalized_shape {shape}")
    if weight is None or bias is None:
        raise ValueError("fnk.torch.layer_norm needs a weight and a bias")
    if weight.dtype != x.dtype or bias.dtype != x.dtype:
        raise TypeError("fnk.torch.layer_norm: weight, bias and x must share a dtype")
    if weight.numel() != shape[0]:
        raise ValueError(f"fnk.torch.layer_norm: weight has {weight.numel()} elements, normalized_shape is {shape}")
    return _LayerNorm.apply(x, weight, bias, eps)


class RMSNorm(torch.nn.Module):
    """Drop-in for torch.nn.RMSNorm(n, eps) over the last dim."""

    def __init__(self, n, eps=1e-6, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(n, device=device, dtype=dtype))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


class LayerNorm(torch.nn.Module):
    """Drop-in for torch.nn.LayerNorm(n, eps) over the last dim."""

    def __init__(self, n, eps=1e-5, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(n, device=device, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.zeros(n, device=device, dtype=dtype))

    def forward(self, x):
        return layer_norm(x, (self.weight.numel(),), self.weight, self.bias, self.eps)
