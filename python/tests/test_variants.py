"""Candidate schedules of bench/variants.fnk in the interpreter against
float64 NumPy, on ragged rows whose mean is far from zero (the GPU checks them
against the interpreter in tests/gpu/cases.py)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fnk  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def var():
    return fnk.load(REPO / "bench" / "variants.fnk")


def rows(m, n, seed):
    r = np.random.default_rng(seed)
    x = (r.standard_normal((m, n)) * 2 + 3.0).astype(np.float32)
    return x, r.standard_normal(n).astype(np.float32), r.standard_normal(n).astype(np.float32)


def close(got, ref, what):
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4 * max(1.0, float(np.abs(ref).max())), err_msg=what)


@pytest.mark.parametrize("n", [7, 1003])
@pytest.mark.parametrize("xpad,ypad", [(0, 0), (5, 0), (0, 5), (5, 5)])
def test_rms_fwd_row_padded(var, n, xpad, ypad):
    """bench/align_probe.py's kernel: rows of n inside rows padded by xpad (x) and ypad (y) columns, which
    it leaves as they were."""
    x, w, _ = rows(4, n + xpad, n + xpad + ypad)
    w = w[:n].copy()
    y, rstd = np.full((4, n + ypad), np.nan, np.float32), np.full(4, np.nan, np.float32)
    var.rms_fwd_row_padded(x, w, y, rstd, eps=1e-6, BLOCK_N=1024, WARPS=2, T="f32")
    x64 = x[:, :n].astype(np.float64)
    r64 = 1 / np.sqrt((x64 * x64).mean(axis=1) + 1e-6)
    close(rstd, r64, "rstd")
    close(y[:, :n], x64 * r64[:, None] * w, "y")
    assert np.isnan(y[:, n:]).all(), "the padding of y was written"


@pytest.mark.parametrize("n", [7, 256, 1000])
@pytest.mark.parametrize("hints", [0, 1, 2])
def test_rms_fwd_chunks_hint(var, n, hints):
    x, w, _ = rows(5, n, n + hints)
    y, rstd = np.full_like(x, np.nan), np.full(5, np.nan, np.float32)
    var.rms_fwd_chunks_hint(x, w, y, rstd, eps=1e-6, BLOCK_N=128, WARPS=2, HINTS=hints, T="f32")
    x64 = x.astype(np.float64)
    r64 = 1 / np.sqrt((x64 * x64).mean(axis=1) + 1e-6)
    close(rstd, r64, "rstd")
    close(y, x64 * r64[:, None] * w, "y")


@pytest.mark.parametrize("n", [7, 130, 1003])
@pytest.mark.parametrize("vec", [8, 4])
def test_norm_fwd_shift(var, n, vec):
    """rms_fwd_shift, rms_fwd_row_shift and ln_fwd_shift: chunks (or the row's one tile) walked from column -(row * N) % VEC, so that every row's
    columns below 0 fall in its first chunk, masked out (rows of odd width start at every shift)."""
    m = 9
    x, w, b = rows(m, n, n + vec)
    x64 = x.astype(np.float64)
    y, rstd = np.full_like(x, np.nan), np.full(m, np.nan, np.float32)
    var.rms_fwd_shift(x, w, y, rstd, eps=1e-6, BLOCK_N=64, WARPS=2, VEC=vec, T="f32")
    r64 = 1 / np.sqrt((x64 * x64).mean(axis=1) + 1e-6)
    close(rstd, r64, "rms rstd")
    close(y, x64 * r64[:, None] * w, "rms y")
    y, rstd = np.full_like(x, np.nan), np.full(m, np.nan, np.float32)
    var.rms_fwd_row_shift(x, w, y, rstd, eps=1e-6, BLOCK_N=2048, WARPS=2, VEC=vec, T="f32")
    close(rstd, r64, "rms row rstd")
    close(y, x64 * r64[:, None] * w, "rms row y")
    y, mean, rstd = np.full_like(x, np.nan), np.full(m, np.nan, np.float32), np.full(m, np.nan, np.float32)
    var.ln_fwd_shift(x, w, b, y, mean, rstd, eps=1e-5, BLOCK_N=64, WARPS=2, VEC=vec, T="f32")
    mu64 = x64.mean(axis=1)
    r64 = 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    close(mean, mu64, "ln mean")
    close(rstd, r64, "ln rstd")
    close(y, (x64 - mu64[:, None]) * r64[:, None] * w + b, "ln y")


@pytest.mark.parametrize("n", [7, 1003, 300])
def test_rms_bwd_shift_split_acc(var, n):
    """rms_bwd_shift_split_acc: clusters whose slices start (pid * N) % VEC columns early (P a multiple of
    VEC, so every row a cluster walks has that shift); dx per row, dw's column sums over the R rows of
    dw_acc (which the kernel adds to: zeros on entry here), against float64."""
    m, R = 37, 3
    x, w, _ = rows(m, n, 7 * n)
    dy = np.random.default_rng(n).standard_normal((m, n)).astype(np.float32)
    x64, dy64, w64 = x.astype(np.float64), dy.astype(np.float64), w.astype(np.float64)
    r64 = 1 / np.sqrt((x64 * x64).mean(axis=1) + 1e-6)
    rstd = r64.astype(np.float32)
    dx, acc = np.full_like(x, np.nan), np.zeros((R, n), np.float32)
    cluster = 8 if n > 500 else 4  # N + VEC - 1 columns over CLUSTER slices of 128
    var.rms_bwd_shift_split_acc(x, w, dy, rstd, dx, acc, BLOCK_N=128, CLUSTER=cluster, WARPS=2, L2=0, P=8, VEC=8,
                                T="f32")
    g = dy64 * w64
    k = (g * x64).sum(axis=1) * r64 ** 3 / n
    close(dx, g * r64[:, None] - x64 * k[:, None], "dx")
    close(acc.sum(axis=0), (dy64 * x64 * r64[:, None]).sum(axis=0), "dw")
    with pytest.raises(fnk.ArgumentError, match="P % VEC == 0"):  # rows of one cluster at different shifts
        var.rms_bwd_shift_split_acc(x, w, dy, rstd, dx, acc, BLOCK_N=128, CLUSTER=cluster, WARPS=2, L2=0, P=6,
                                    VEC=8, T="f32")


@pytest.mark.parametrize("n", [7, 1003])
@pytest.mark.parametrize("ws", [0, 1])
def test_ln_bwd_shift_split_acc(var, n, ws):
    """ln_bwd_shift_split_acc, as test_rms_bwd_shift_split_acc: dx, and dw and db summed over dw_acc's and
    db_acc's rows, against float64 (w's slice in registers and in shared memory)."""
    m, R = 37, 3
    x, w, _ = rows(m, n, 11 * n)
    dy = np.random.default_rng(n + 1).standard_normal((m, n)).astype(np.float32)
    x64, dy64, w64 = x.astype(np.float64), dy.astype(np.float64), w.astype(np.float64)
    mu64 = x64.mean(axis=1)
    r64 = 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    dx = np.full_like(x, np.nan)
    dw, db = np.zeros((R, n), np.float32), np.zeros((R, n), np.float32)
    var.ln_bwd_shift_split_acc(x, w, dy, mu64.astype(np.float32), r64.astype(np.float32), dx, dw, db,
                               BLOCK_N=128, CLUSTER=8 if n > 500 else 4, WARPS=2, L2=0, WS=ws, P=8, VEC=8, T="f32")
    xhat = (x64 - mu64[:, None]) * r64[:, None]
    g = dy64 * w64
    a = (g * xhat).mean(axis=1)
    c = g.mean(axis=1)
    close(dx, r64[:, None] * (g - xhat * a[:, None] - c[:, None]), "dx")
    close(dw.sum(axis=0), (dy64 * xhat).sum(axis=0), "dw")
    close(db.sum(axis=0), dy64.sum(axis=0), "db")
