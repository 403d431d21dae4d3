"""fnk norms as PyTorch autograd functions.

    from fnk.torch import rms_norm, layer_norm
    y = rms_norm(x, weight, eps=1e-6)                  # like torch.nn.functional.rms_norm
    y = layer_norm(x, (n,), weight, bias, eps=1e-5)    # like torch.nn.functional.layer_norm

Forward and backward run the stdlib kernels (stdlib/norm/*.fnk) on CUDA
tensors (rows wider than 8192 spread over a cluster of CTAs: RMSNorm both
ways, LayerNorm's backward up to 65536 columns, in bf16 and f16 up to
131072 where schedules.ragged_split covers a ragged row, and its bf16 and
f16 forward at the powers of two from 16384 to 262144 and the ragged rows
ragged_split covers), on the current stream, without
copies for contiguous inputs. A
non-contiguous input is made contiguous first (one copy, as torch's own
kernels do). RMSNorm and LayerNorm modules wrap them for use in nn.Module
code. Only the last dimension is normalized.

Gradients are the same bits from run to run under
torch.use_deterministic_algorithms(True): the wide-row backwards then keep
one row of dw (and db) partials per cluster, summed in row order, instead
of 16 rows of sums that several clusters add to in whatever order they
finish. By default dw and db can differ in their last bit between runs;
dx and the forward never do. Outputs come unfilled even where that mode
fills new memory (torch.utils.deterministic.fill_uninitialized_memory):
fnk kernels write every element of an output before anything reads it.
"""
import contextlib
import functools
import math
from pathlib import Path

import torch

from . import CompileError, load, schedules

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


def _torch_fills_new_memory():
    """Whether torch.empty fills what it returns: with NaN under
    torch.use_deterministic_algorithms (fill_uninitialized_memory), one more
    pass over each output (2048x8192 RMSNorm backward: 46 us against 32)."""
    return torch.are_deterministic_algorithms_enabled() and torch.utils.deterministic.fill_uninitialized_memory


def _unfilled(shape, dtype, device):
    """A tensor on storage made directly, which torch does not fill."""
    storage = torch.UntypedStorage(math.prod(shape) * dtype.itemsize, device=device)
    return torch.empty(0, dtype=dtype, device=device).set_(storage, 0, shape)


def _new(shape, dtype, device):
    """A tensor that an fnk kernel fills: every element written before any is
    read (the interpreter poisons outputs to hold kernels to that), so never
    filled by torch."""
    if _torch_fills_new_memory():
        return _unfilled(shape, dtype, device)
    return torch.empty(shape, dtype=dtype, device=device)


def _new_like(t):
    """_new for a contiguous tensor's shape, dtype and device."""
    if _torch_fills_new_memory():
        return _unfilled(t.shape, t.dtype, t.device)
    return torch.empty_like(t)


@functools.lru_cache(maxsize=None)
def _sms(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


@functools.lru_cache(maxsize=None)
def _resident_clusters(module, kernel, consts, dtype):
    """Clusters of this kernel instance the GPU holds at once (0 if the driver
    cannot say): what schedules size persistent cluster grids by."""
    try:
        return getattr(_module(module), kernel).occupancy(**dict(consts), T=dtype)["clusters"]
    except CompileError:
        return 0


def _resident(module, dtype):
    """The `resident(launch)` callback schedules take, for `module`'s kernels at `dtype`."""
    return lambda launch: _resident_clusters(module, launch.kernel, tuple(sorted(launch.consts.items())), dtype)


# A call's schedule depends only on its shape, dtype, device and mode, so each
# is worked out once: eager calls are bound by their host time at small sizes.
@functools.lru_cache(maxsize=1024)
def _fwd_call(module, n, device, dtype):
    """The forward's kernel of `module` (rmsnorm or layernorm) and its consts."""
    if module == "rmsnorm":
        launch = schedules.rms_fwd(n, _sms(device), _resident(module, dtype), dtype=dtype)
    else:
        launch = schedules.ln_fwd(n, _sms(device), _resident(module, dtype), dtype=dtype)
    return getattr(_module(module), launch.kernel), {**launch.consts, "T": dtype}


@functools.lru_cache(maxsize=1024)
def _bwd_plan(module, n, m, device, dtype, deterministic):
    """(launch, its partial rows P, its accumulated rows R) of `module`'s backward."""
    sms = _sms(device)
    if module == "rmsnorm":
        launch = schedules.rms_bwd(n, _resident(module, dtype), m=m, sms=sms, dtype=dtype, deterministic=deterministic)
    else:
        launch = schedules.ln_bwd(n, m=m, sms=sms, dtype=dtype, deterministic=deterministic)
    return launch, schedules.partial_rows(m, sms, launch), schedules.acc_rows(m, sms, launch)


def _rows(x, n):
    if x.shape[-1] != n:
        raise ValueError(f"fnk.torch: normalized size {n} does not match the last dim of x {tuple(x.shape)}")
    if not x.is_cuda:
        raise ValueError("fnk.torch: x must be a CUDA tensor")
    return x.contiguous().view(-1, n)


class _ZeroedRows:
    """f32 rows that kernels leave at zero after each use (the accumulating
    backwards' dw_acc and db_acc: the take kernels empty them), and the stream and
    event of their last use. Two streams must not use them at the same time,
    so a use on another stream waits for the last one to finish; inside CUDA
    graph capture it cannot, and the graph's replays must not overlap another
    stream's backward of the same width. One event serves every use: a wait
    takes the event's last record at the time it is enqueued, and later
    records do not move it."""

    def __init__(self, device, rows, n):
        self.rows = torch.zeros(rows, n, device=device, dtype=torch.float32)
        self._stream = None
        self._event = torch.cuda.Event()

    def acquire(self):
        """The rows, ordered after their last use when that was on another stream."""
        stream = torch.cuda.current_stream(self.rows.device)
        if self._stream is not None and self._stream != stream and not torch.cuda.is_current_stream_capturing():
            stream.wait_event(self._event)
        return self.rows

    def release(self):
        """After the kernels that use the rows are launched on the current stream."""
        if torch.cuda.is_current_stream_capturing():
            return
        self._stream = torch.cuda.current_stream(self.rows.device)
        self._event.record(self._stream)


_workspaces = {}  # (device, rows, n, part) -> _ZeroedRows, created once


def _zeroed_rows(device, rows, n, part="dw"):
    """The zeroed rows of sums for `part` (dw, or db) of a backward's split."""
    key = (device, rows, n, part)
    if key not in _workspaces:
        _workspaces[key] = _ZeroedRows(device, rows, n)
    return _workspaces[key]


@contextlib.contextmanager
def _zeroed(*parts):
    """The rows of each _ZeroedRows in parts, acquired for the kernels launched
    in the block and released after it; rows a failed launch may have left
    sums in are zeroed again."""
    rows = [part.acquire() for part in parts]
    try:
        yield rows
    except BaseException:
        for r in rows:
            r.zero_()
        raise
    finally:
        for part in parts:
            part.release()


def _backward_sums(mod, plan, device, row_args, grads, take, total, dt):
    """A backward's row kernel and the kernel that finishes its column sums
    into grads (dw, or dw and db). An accumulating split (plan's kernel
    *_split_acc) adds its partials into zeroed rows of sums, one set per
    gradient, that `take` sums into grads and leaves at zero; any other row
    kernel stores one partial row per CTA (per cluster CTA for a split:
    deterministic), which `total` sums in row order."""
    launch, p, r = plan
    kernel = getattr(mod, launch.kernel)
    n = grads[0].numel()
    if launch.kernel.endswith("_split_acc"):
        with _zeroed(*(_zeroed_rows(device, r, n, part) for part in ("dw", "db")[:len(grads)])) as sums:
            kernel(*row_args, *sums, **launch.consts, P=p, T=dt)
            take(*sums, *grads, T=dt)
        return
    partials = [_new((p, n), torch.float32, device) for _ in grads]
    kernel(*row_args, *partials, **launch.consts, T=dt)
    total(*partials, *grads, T=dt)


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        n = weight.numel()
        x2 = _rows(x, n)
        w = weight.contiguous()
        y = _new_like(x2)
        device = x2.device
        rstd = _new((x2.shape[0],), torch.float32, device)
        kernel, consts = _fwd_call("rmsnorm", n, device, _dtype(x2))
        kernel(x2, w, y, rstd, eps=float(eps), **consts)
        ctx.save_for_backward(x2, w, rstd)
        ctx.shape = x.shape
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, dy):
        x2, w, rstd = ctx.saved_tensors
        m, n = x2.shape
        device = x2.device
        dy2 = dy.contiguous().view(m, n).to(x2.dtype)
        dx = _new_like(x2)
        mod = _module("rmsnorm")
        dt = _dtype(x2)
        plan = _bwd_plan("rmsnorm", n, m, device, dt, torch.are_deterministic_algorithms_enabled())
        dw = _new_like(w)
        _backward_sums(mod, plan, device, (x2, w, dy2, rstd, dx), (dw,), mod.rmsnorm_bwd_dw_take, mod.rmsnorm_bwd_dw,
                       dt)
        return dx.view(ctx.shape), dw, None


class _LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        n = weight.numel()
        x2 = _rows(x, n)
        w, b = weight.contiguous(), bias.contiguous()
        m = x2.shape[0]
        y = _new_like(x2)
        device = x2.device
        mean = _new((m,), torch.float32, device)
        rstd = _new((m,), torch.float32, device)
        kernel, consts = _fwd_call("layernorm", n, device, _dtype(x2))
        kernel(x2, w, b, y, mean, rstd, eps=float(eps), **consts)
        ctx.save_for_backward(x2, w, mean, rstd)
        ctx.shape = x.shape
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, dy):
        x2, w, mean, rstd = ctx.saved_tensors
        m, n = x2.shape
        device = x2.device
        dy2 = dy.contiguous().view(m, n).to(x2.dtype)
        dx = _new_like(x2)
        dt = _dtype(x2)
        plan = _bwd_plan("layernorm", n, m, device, dt, torch.are_deterministic_algorithms_enabled())
        mod = _module("layernorm")
        dw, db = _new_like(w), _new_like(w)
        _backward_sums(mod, plan, device, (x2, w, dy2, mean, rstd, dx), (dw, db), mod.layernorm_bwd_dwdb_take,
                       mod.layernorm_bwd_dwdb, dt)
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
