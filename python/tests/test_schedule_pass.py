"""The schedule pass (on by default; FNK_SCHEDULE=0 leaves it out;
ir/passes/Schedule.cpp) reorders pure ops around reductions; it must change
no result. Kernels written in the textbook order (bench/variants.fnk: dw's
and db's updates after the row sums) run in the interpreter once without the
pass and once with it, each in its own process (the knob is read once):
outputs bitwise equal, and dx equal to a float64 NumPy reference, on ragged
rows."""
import numpy as np
import pytest
from knob_runs import REPO, kernel_ir, run_code

RUN = r'''
import sys
import numpy as np
sys.path.insert(0, {python!r})
import fnk
var = fnk.load({variants!r})
r = np.random.default_rng(7)
m, n, p = 9, 1000, 4
x, dy = r.standard_normal((m, n)).astype(np.float32), r.standard_normal((m, n)).astype(np.float32)
w = r.standard_normal(n).astype(np.float32)
mean, rstd = (r.standard_normal(m) * 0.1).astype(np.float32), (r.random(m) + 0.5).astype(np.float32)
out = {{}}
dx, dwp, dbp = np.full((m, n), np.nan, np.float32), np.full((p, n), np.nan, np.float32), np.full((p, n), np.nan, np.float32)
var.ln_bwd_pf(x, w, dy, mean, rstd, dx, dwp, dbp, BLOCK_N=1024, WARPS=4, PF=1, T="f32")
out.update(ln_dx=dx, ln_dw=dwp, ln_db=dbp)
dx, dwp = np.full((m, n), np.nan, np.float32), np.full((p, n), np.nan, np.float32)
var.rms_bwd_pf(x, w, dy, rstd, dx, dwp, BLOCK_N=1024, WARPS=4, PF=1, T="f32")
out.update(rms_dx=dx, rms_dw=dwp)
np.savez({path!r}, **out)
'''


def run(tmp_path, schedule):
    path = tmp_path / f"out{schedule}.npz"
    code = RUN.format(python=str(REPO / "python"), variants=str(REPO / "bench" / "variants.fnk"), path=str(path))
    return run_code(code, "FNK_SCHEDULE", schedule, path)


@pytest.mark.parametrize("kernel", ["ln_bwd_pf", "rms_bwd_pf"])
def test_schedule_moves_the_updates(kernel):
    """Without this the test below could pass with a pass that did nothing:
    the kernels' IR differs with it, and the loop's last accumulator update
    comes before its last row sum only with it."""
    def ir(schedule):
        text = kernel_ir(REPO / "bench" / "variants.fnk", kernel, "FNK_SCHEDULE", schedule)
        body = text[text.index("scf.for"):]
        return body[:body.index("scf.yield")]
    off, on = ir("0"), ir("1")
    assert off != on
    last_reduce = lambda text: text.rindex("tile.reduce")  # LayerNorm's updates move above its second sum only
    last_add = lambda text: text.rindex("tile.add %")
    assert last_add(off) > last_reduce(off)
    assert last_add(on) < last_reduce(on)


def test_schedule_changes_no_result(tmp_path):
    off, on = run(tmp_path, "0"), run(tmp_path, "1")
    assert off.keys() == on.keys()
    for k in off:
        assert np.array_equal(off[k], on[k], equal_nan=False), k
    # and both are right: LayerNorm's dx against float64
    r = np.random.default_rng(7)
    m, n = 9, 1000
    x, dy = r.standard_normal((m, n)), r.standard_normal((m, n))
    w = r.standard_normal(n)
    mean, rstd = r.standard_normal(m) * 0.1, r.random(m) + 0.5
    x, dy, w = (a.astype(np.float32).astype(np.float64) for a in (x, dy, w))
    mean, rstd = mean.astype(np.float32).astype(np.float64), rstd.astype(np.float32).astype(np.float64)
    xh = (x - mean[:, None]) * rstd[:, None]
    g = dy * w
    ref = rstd[:, None] * (g - g.mean(1, keepdims=True) - xh * (g * xh).mean(1, keepdims=True))
    np.testing.assert_allclose(on["ln_dx"], ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(on["ln_dw"].sum(0), (dy * xh).sum(0), rtol=1e-4, atol=1e-3)
