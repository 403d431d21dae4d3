"""The norms' walks shifted onto 16-byte boundaries (VEC > 1: std.norm.common's
shift_start and split_cols), in the interpreter against float64 NumPy: row r
starts (r * N) % VEC elements past a boundary and its walk starts that many
columns early, so its first tile holds columns below 0, which must be masked
out of every sum and store. Rows of odd width come up at every shift; their
mean is far from zero (LayerNorm's one-pass statistics). The GPU checks the
same kernels against the interpreter (tests/gpu/cases.py)."""
import functools
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fnk  # noqa: E402
from rowdata import close, rms_bwd_ref, rows  # noqa: E402

NORM = Path(__file__).resolve().parents[2] / "stdlib" / "norm"


@pytest.fixture(scope="module")
def rms():
    return fnk.load(NORM / "rmsnorm.fnk")


@pytest.fixture(scope="module")
def ln():
    return fnk.load(NORM / "layernorm.fnk")


def ln_stats(x64):
    return x64.mean(axis=1), 1 / np.sqrt(x64.var(axis=1) + 1e-5)


@pytest.mark.parametrize("n", [7, 130, 1003])
@pytest.mark.parametrize("vec", [8, 4, 1])
def test_forwards_shifted(rms, ln, n, vec):
    """rmsnorm_fwd and layernorm_fwd in 64-wide chunks walked from column -(row * N) % VEC (VEC = 1: from 0);
    n = 7 takes the one-tile path, which does not shift."""
    check_forwards(rms.rmsnorm_fwd, ln.layernorm_fwd, *rows(9, n, n + vec), BLOCK_N=64, WARPS=2, VEC=vec, T="f32")


@pytest.mark.parametrize("n,head,cluster", [(1, False, 4), (7, False, 4), (300, False, 4), (1003, False, 8),
                                            (1, True, 2), (7, True, 2), (250, True, 2), (255, True, 2), (256, True, 2)])
@pytest.mark.parametrize("vec", [8, 4])
def test_forward_splits_shifted(rms, ln, n, head, cluster, vec):
    """rmsnorm_fwd_split and layernorm_fwd_split (w and b held, and read per row) over P = 8 clusters of
    128-column slices, shifted (split_cols: (pid * N) % VEC columns early, one shift per cluster) where
    N + VEC - 1 columns fit them, else with a head tile (HEAD = true: slices start on the boundary past the
    row's start, rank 0 holding the columns before it), at every shift, rows of one column (shorter than the
    head) among them: y and the statistics against float64."""
    consts = dict(BLOCK_N=128, CLUSTER=cluster, WARPS=2, L2=0, P=8, VEC=vec, HEAD=head, T="f32")
    x, w, b = rows(37, n, 5 * n + vec + int(head))
    check_forwards(rms.rmsnorm_fwd_split, ln.layernorm_fwd_split, x, w, b, **consts)
    check_forwards(None, functools.partial(ln.layernorm_fwd_split, HOLD=False), x, w, b, **consts)


def check_forwards(rms_fwd, ln_fwd, x, w, b, **consts):
    """Runs an RMSNorm (unless rms_fwd is None) and a LayerNorm forward over x (rows far from zero mean) and
    checks y and the statistics against float64."""
    m = x.shape[0]
    x64 = x.astype(np.float64)
    if rms_fwd is not None:
        y, rstd = np.full_like(x, np.nan), np.full(m, np.nan, np.float32)
        rms_fwd(x, w, y, rstd, eps=1e-6, **consts)
        r64 = 1 / np.sqrt((x64 * x64).mean(axis=1) + 1e-6)
        close(rstd, r64, "rms rstd")
        close(y, x64 * r64[:, None] * w, "rms y")
    y, mean, rstd = np.full_like(x, np.nan), np.full(m, np.nan, np.float32), np.full(m, np.nan, np.float32)
    ln_fwd(x, w, b, y, mean, rstd, eps=1e-5, **consts)
    mu64, r64 = ln_stats(x64)
    close(mean, mu64, "ln mean")
    close(rstd, r64, "ln rstd")
    close(y, (x64 - mu64[:, None]) * r64[:, None] * w + b, "ln y")


def grads(m, n, seed):
    x, w, _ = rows(m, n, seed)
    dy = np.random.default_rng(seed + 1).standard_normal((m, n)).astype(np.float32)
    return x, w, dy, x.astype(np.float64), dy.astype(np.float64), w.astype(np.float64)


@pytest.mark.parametrize("n", [7, 300, 1003])
@pytest.mark.parametrize("kernel", ["rmsnorm_bwd_split_acc", "rmsnorm_bwd_split", "rmsnorm_bwd_split_smem"])
def test_rms_split_shifted(rms, n, kernel):
    """rmsnorm_bwd_split_acc (adding into R rows of sums, zeros on entry), rmsnorm_bwd_split and
    rmsnorm_bwd_split_smem (one partial row per cluster) with clusters whose slices start (pid * N) % 8
    columns early (P a multiple of 8, so every row a cluster walks has that shift): dx, and dw's column
    sums, against float64."""
    x, w, dy, x64, dy64, w64 = grads(37, n, 7 * n)
    cluster = 8 if n > 500 else 4  # N + VEC - 1 columns over CLUSTER slices of 128
    consts = dict(BLOCK_N=128, CLUSTER=cluster, WARPS=2, L2=0, VEC=8, T="f32")
    check_rms_split(rms, kernel, consts, x, w, dy, x64, dy64, w64)


def check_rms_split(rms, kernel, consts, x, w, dy, x64, dy64, w64):
    """Runs an RMSNorm backward split over P = 8 clusters (kernel: rmsnorm_bwd_split_acc into 3 rows of zeros,
    else one partial row per cluster) and checks dx and dw's column sums against float64."""
    n = x.shape[1]
    r64 = 1 / np.sqrt((x64 * x64).mean(axis=1) + 1e-6)
    rstd = r64.astype(np.float32)
    dx = np.full_like(x, np.nan)
    if kernel.endswith("_acc"):
        sums = np.zeros((3, n), np.float32)
        rms.rmsnorm_bwd_split_acc(x, w, dy, rstd, dx, sums, P=8, **consts)
    else:
        sums = np.full((8, n), np.nan, np.float32)
        getattr(rms, kernel)(x, w, dy, rstd, dx, sums, **consts)
    ref_dx, ref_dw = rms_bwd_ref(x64, w64, dy64, r64)
    close(dx, ref_dx, "dx")
    close(sums.sum(axis=0), ref_dw, "dw")


@pytest.mark.parametrize("n", [7, 250, 255, 256])
@pytest.mark.parametrize("vec", [8, 4])
@pytest.mark.parametrize("kernel", ["rmsnorm_bwd_split_acc", "rmsnorm_bwd_split", "rmsnorm_bwd_split_smem"])
def test_rms_split_head(rms, n, vec, kernel):
    """HEAD = true: the cluster's slices start t = (VEC - (pid * N) % VEC) % VEC columns late (split_cols) and
    rank 0 holds the t columns before them in a head tile (head_mask), on rows that fill the slices (N up to
    CLUSTER * BLOCK_N = 256, where the early shift has no room), at every shift: dx and dw against float64."""
    x, w, dy, x64, dy64, w64 = grads(37, n, 13 * n + vec)
    consts = dict(BLOCK_N=128, CLUSTER=2, WARPS=2, L2=0, VEC=vec, HEAD=True, T="f32")
    check_rms_split(rms, kernel, consts, x, w, dy, x64, dy64, w64)


def test_shifted_split_needs_one_shift_per_cluster(rms):
    """P not a multiple of VEC would give a cluster rows at different shifts: refused, naming the rule, at
    compile time where P is a const (rmsnorm_bwd_split_acc), at the launch where it is a dim of the partial
    sums (rmsnorm_bwd_split)."""
    x, w, dy, *_ = grads(37, 300, 5)
    rstd, dx, acc = np.ones(37, np.float32), np.full_like(x, np.nan), np.zeros((3, 300), np.float32)
    consts = dict(BLOCK_N=128, CLUSTER=4, WARPS=2, L2=0, VEC=8, T="f32")
    with pytest.raises(fnk.CompileError, match=r"requirement 'P % VEC == 0' is false"):
        rms.rmsnorm_bwd_split_acc(x, w, dy, rstd, dx, acc, P=6, **consts)
    partial = np.full((6, 300), np.nan, np.float32)
    with pytest.raises(fnk.ArgumentError, match=r"'P % VEC == 0' does not hold .*P = 6"):
        rms.rmsnorm_bwd_split(x, w, dy, rstd, dx, partial, **consts)
    assert np.isnan(dx).all() and not acc.any() and np.isnan(partial).all(), "a refused launch wrote its outputs"


@pytest.mark.parametrize("n,head", [(7, False), (1003, False), (7, True), (250, True), (256, True)])
@pytest.mark.parametrize("ws,pf", [(0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("acc", [True, False])
def test_ln_split_shifted(ln, n, head, ws, pf, acc):
    """layernorm_bwd_split_acc and layernorm_bwd_split shifted as test_rms_split_shifted's, and with a head
    tile as test_rms_split_head's (HEAD = true, rows that fill 2 x 128): dx, and dw and db summed over their rows,
    against float64 (w's slice in registers and in shared memory)."""
    m = 37
    x, w, dy, x64, dy64, w64 = grads(m, n, 11 * n + int(head))
    mu64, r64 = ln_stats(x64)
    dx = np.full_like(x, np.nan)
    cluster = 2 if head else 8 if n > 500 else 4
    consts = dict(BLOCK_N=128, CLUSTER=cluster, WARPS=2, L2=0, WS=ws, PF=pf, VEC=8, HEAD=head, T="f32")
    stats = (mu64.astype(np.float32), r64.astype(np.float32))
    if acc:
        dw, db = np.zeros((3, n), np.float32), np.zeros((3, n), np.float32)
        ln.layernorm_bwd_split_acc(x, w, dy, *stats, dx, dw, db, P=8, **consts)
    else:
        dw, db = np.full((8, n), np.nan, np.float32), np.full((8, n), np.nan, np.float32)
        ln.layernorm_bwd_split(x, w, dy, *stats, dx, dw, db, **consts)
    xhat = (x64 - mu64[:, None]) * r64[:, None]
    g = dy64 * w64
    a = (g * xhat).mean(axis=1)
    c = g.mean(axis=1)
    close(dx, r64[:, None] * (g - xhat * a[:, None] - c[:, None]), "dx")
    close(dw.sum(axis=0), (dy64 * xhat).sum(axis=0), "dw")
    close(db.sum(axis=0), dy64.sum(axis=0), "db")
