"""Inputs and the closeness test shared by the interpreter tests of norm
kernels against float64 NumPy (test_shifted.py, test_variants.py)."""
import numpy as np


def rows(m, n, seed):
    """x [m, n] whose rows' mean (3) is far from zero against their spread
    (2), for LayerNorm's one-pass statistics, and two vectors of n (w, b)."""
    r = np.random.default_rng(seed)
    x = (r.standard_normal((m, n)) * 2 + 3.0).astype(np.float32)
    return x, r.standard_normal(n).astype(np.float32), r.standard_normal(n).astype(np.float32)


def close(got, ref, what):
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4 * max(1.0, float(np.abs(ref).max())), err_msg=what)
