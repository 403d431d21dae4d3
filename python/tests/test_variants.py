"""Candidate schedules of bench/variants.fnk in the interpreter against
float64 NumPy, on ragged rows whose mean is far from zero (the GPU checks them
against the interpreter in tests/gpu/cases.py)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fnk  # noqa: E402
from rowdata import close, rows  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def var():
    return fnk.load(REPO / "bench" / "variants.fnk")


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
