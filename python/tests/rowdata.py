"""Inputs, references and the closeness test shared by the interpreter tests
of norm kernels against float64 NumPy (test_fnk.py, test_shifted.py,
test_variants.py, test_gpu_cases.py)."""
import numpy as np


def rows(m, n, seed):
    """x [m, n] whose rows' mean (3) is far from zero against their spread
    (2), for LayerNorm's one-pass statistics, and two vectors of n (w, b)."""
    r = np.random.default_rng(seed)
    x = (r.standard_normal((m, n)) * 2 + 3.0).astype(np.float32)
    return x, r.standard_normal(n).astype(np.float32), r.standard_normal(n).astype(np.float32)


def close(got, ref, what):
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4 * max(1.0, float(np.abs(ref).max())), err_msg=what)


def rms_bwd_ref(x, w, dy, rstd):
    """RMSNorm's dx and dw in float64, from the arrays a kernel was given
    (rstd as passed: dx = r * g - x * r^3 / N * sum(g * x), g = dy * w)."""
    x64, r = np.asarray(x, np.float64), np.asarray(rstd, np.float64)
    g = np.asarray(dy, np.float64) * w
    dx = g * r[:, None] - x64 * ((g * x64).sum(axis=1) * r ** 3 / x64.shape[1])[:, None]
    return dx, (dy * x64 * r[:, None]).sum(axis=0)
