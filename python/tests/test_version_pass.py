"""The version pass (on by default; FNK_FULL_TILES=0 leaves it out; ir/passes/Version.cpp) copies a kernel body
for full tiles (N == BLOCK_N), where its padding masks are constant; it must
change no result. Norm kernels that mask their rows' padding run in the
interpreter once without the pass and once with it, each in its own process
(the knob is read once), at full and padded widths: outputs bitwise equal, and
the pass must have versioned them (their IR has the new branch only with it)."""
import numpy as np
import pytest
from knob_runs import REPO, kernel_ir, run_code

RUN = r'''
import sys
import numpy as np
sys.path.insert(0, {python!r})
import fnk
ln = fnk.load({layernorm!r})
dit = fnk.load({dit!r})
r = np.random.default_rng(11)
out = {{}}
for n in (256, 200):  # the full tile and a padded one
    m = 5
    x = (r.standard_normal((m, n)) + 3.0).astype(np.float32)
    w, b = r.standard_normal(n).astype(np.float32), r.standard_normal(n).astype(np.float32)
    for kernel, consts in (("layernorm_fwd", dict(BLOCK_N=256, WARPS=4)), ("layernorm_fwd_rows", dict(BLOCK_N=256, ROWS=2, WARPS=4)),
                           ("layernorm_fwd_staged", dict(BLOCK_N=256, WARPS=4, S=3, P=2))):
        y, mean, rstd = np.full((m, n), np.nan, np.float32), np.full(m, np.nan, np.float32), np.full(m, np.nan, np.float32)
        getattr(ln, kernel)(x, w, b, y, mean, rstd, eps=1e-5, T="f32", **consts)
        out.update({{f"{{kernel}}_{{n}}_y": y, f"{{kernel}}_{{n}}_mean": mean, f"{{kernel}}_{{n}}_rstd": rstd}})
    out.update({{f"x_{{n}}": x, f"w_{{n}}": w, f"b_{{n}}": b}})
    B, S = 2, 3
    xd = r.standard_normal((B, S, n)).astype(np.float32)
    sc, sh = (0.1 * r.standard_normal((B, n))).astype(np.float32), r.standard_normal((B, n)).astype(np.float32)
    y, mean, rstd = np.full((B, S, n), np.nan, np.float32), np.full((B, S), np.nan, np.float32), np.full((B, S), np.nan, np.float32)
    dit.dit_modulate_fwd(xd, w, b, sc, sh, y, mean, rstd, eps=1e-5, BLOCK_H=256, SB=2, WARPS=2, T="f32")
    out.update({{f"dit_{{n}}_y": y, f"dit_{{n}}_mean": mean}})
np.savez({path!r}, **out)
'''


def run(tmp_path, version):
    path = tmp_path / f"out{version}.npz"
    code = RUN.format(python=str(REPO / "python"), layernorm=str(REPO / "stdlib" / "norm" / "layernorm.fnk"),
                      dit=str(REPO / "examples" / "dit_modulate.fnk"), path=str(path))
    return run_code(code, "FNK_FULL_TILES", version, path)


@pytest.mark.parametrize("kernel", ["layernorm_fwd", "layernorm_fwd_rows", "layernorm_fwd_staged"])
def test_version_adds_the_full_tile_branch(kernel):
    """Without this the test below could pass with a pass that did nothing:
    with the pass the body compares N with BLOCK_N, and its full branch has
    fewer selects than the padded one."""
    def ir(version):
        text = kernel_ir(REPO / "stdlib" / "norm" / "layernorm.fnk", kernel, "FNK_FULL_TILES", version)
        return text[text.index("body {"):]
    off, on = ir("0"), ir("1")
    assert '{pred = "eq"}' in on and on.count("scf.if") > off.count("scf.if")
    assert on.count("tile.select") < 2 * off.count("tile.select")


def test_version_changes_no_result(tmp_path):
    off, on = run(tmp_path, "0"), run(tmp_path, "1")
    assert off.keys() == on.keys()
    for k in off:
        np.testing.assert_array_equal(on[k], off[k], err_msg=k)
    # and right: every LayerNorm forward against float64, at the full width and the padded one
    for n in (256, 200):
        x, w, b = (off[f"{k}_{n}"].astype(np.float64) for k in ("x", "w", "b"))
        mu, var = x.mean(axis=1), x.var(axis=1)
        ref = (x - mu[:, None]) / np.sqrt(var[:, None] + 1e-5) * w + b
        for kernel in ("layernorm_fwd", "layernorm_fwd_rows", "layernorm_fwd_staged"):
            np.testing.assert_allclose(on[f"{kernel}_{n}_y"], ref, rtol=1e-4, atol=1e-4, err_msg=kernel)
            np.testing.assert_allclose(on[f"{kernel}_{n}_mean"], mu, rtol=1e-5, atol=1e-5, err_msg=kernel)
