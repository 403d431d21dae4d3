"""The GPU checks' cases (tests/gpu/cases.py) of every stdlib norm kernel, the
DiT example and bench/variants.fnk's norm candidates, over ragged shapes in
bf16 and float32 at the consts fnk.torch and the GPU checks use, run in the
interpreter (`fnk run`) against float64 NumPy. The GPU checks compare the GPU
with the interpreter; this makes sure the interpreter is right on those very
cases first, so that a kernel wrong in both (a LayerNorm head tile longer than
a one-column row, backend v39) does not pass there."""
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from knob_runs import REPO, tool
from rowdata import rms_bwd_ref

sys.path.insert(0, str(REPO / "tests" / "gpu"))
import cases  # noqa: E402
import run_checks  # noqa: E402


def as_t(a, T):
    """a rounded to dtype T as `fnk run` reads a float32 .npy into a T tensor (round to nearest even), as float64."""
    a = np.asarray(a, np.float32).copy()
    if T == "bf16":
        u = a.view(np.uint32)
        u += 0x7FFF + ((u >> 16) & 1)
        u &= 0xFFFF0000
    elif T == "f16":
        a = a.astype(np.float16).astype(np.float32)
    return a.astype(np.float64)


def references(kernel, T, ins, outs, scalars):
    """{output: float64 reference} for the outputs of `kernel` this test checks; a summed output (partial rows,
    rows of sums) maps to its column sums under the key 'NAME:sum'."""
    t = {k: (as_t(v, T) if k in ("x", "w", "b", "dy", "scale", "shift") else np.asarray(v, np.float64))
         for k, v in ins.items()}
    if family(kernel) == "dit":
        return dit_references(kernel, t, scalars)
    if family(kernel) == "copy":
        return {"y": t["x"]}
    rms = family(kernel) == "rms"
    ref = {}
    if "_fwd" in kernel:
        x, w, eps = t["x"], t["w"], scalars["eps"]
        if rms:
            r = 1 / np.sqrt((x * x).mean(axis=1) + eps)
            ref.update(y=x * r[:, None] * w, rstd=r)
        else:
            mu, r = x.mean(axis=1), 1 / np.sqrt(x.var(axis=1) + eps)
            ref.update(y=(x - mu[:, None]) * r[:, None] * w + t["b"], mean=mu, rstd=r)
    elif "dx" in outs:
        x, w, dy, r = t["x"], t["w"], t["dy"], t["rstd"]
        g = dy * w
        if rms:
            xhat = x * r[:, None]
            ref["dx"] = rms_bwd_ref(x, w, dy, r)[0]
        else:
            xhat = (x - t["mean"][:, None]) * r[:, None]
            ref["dx"] = (g - g.mean(axis=1)[:, None] - xhat * (g * xhat).mean(axis=1)[:, None]) * r[:, None]
        for o in outs:  # partial rows or rows of sums (zeroed by fnk run): their column sums
            if o.startswith("dw_"):
                ref[o + ":sum"] = (dy * xhat).sum(axis=0)
            elif o.startswith("db_"):
                ref[o + ":sum"] = dy.sum(axis=0)
    elif kernel.endswith("_take"):  # the rows of sums summed into dw (db) and left at zero
        ref["dw"], ref["dw_acc"] = t["dw_acc"].sum(axis=0), np.zeros_like(t["dw_acc"])
        if "db_acc" in t:
            ref["db"], ref["db_acc"] = t["db_acc"].sum(axis=0), np.zeros_like(t["db_acc"])
    else:  # rmsnorm_bwd_dw, layernorm_bwd_dwdb: partial rows summed
        ref["dw"] = t["partial" if "partial" in t else "dw_partial"].sum(axis=0)
        if "db_partial" in t:
            ref["db"] = t["db_partial"].sum(axis=0)
    return ref


def family(kernel):
    """Which reference a kernel of the cases (stdlib, the DiT example, bench/variants.fnk's candidates) takes:
    rms, ln, dit or copy; None for the variants whose partial outputs this test does not model."""
    for prefix, fam in (("rmsnorm_", "rms"), ("rms_", "rms"), ("layernorm_", "ln"), ("ln_", "ln"),
                        ("dit_modulate_", "dit"), ("dit_fwd_", "dit"), ("copy_", "copy")):
        if kernel.startswith(prefix):
            return fam
    return None


def dit_references(kernel, t, scalars):
    """examples/dit_modulate.fnk: h = LayerNorm(x) * w + b over H, y = h * (1 + scale[b]) + shift[b]; the
    backward's dx, dscale, dshift, dw, db, and its counters and sums back at zero."""
    x, w, b, s1 = t["x"], t["w"], t["b"], 1 + t["scale"][:, None, :]
    if "_fwd" in kernel:
        mu, r = x.mean(axis=2), 1 / np.sqrt(x.var(axis=2) + scalars["eps"])
        h = (x - mu[..., None]) * r[..., None] * w + b
        return {"y": h * s1 + t["shift"][:, None, :], "mean": mu, "rstd": r}
    dy, r = t["dy"], t["rstd"][..., None]
    xhat = (x - t["mean"][..., None]) * r
    dh = dy * s1
    g = dh * w
    dx = (g - g.mean(axis=2, keepdims=True) - xhat * (g * xhat).mean(axis=2, keepdims=True)) * r
    return {"dx": dx, "dscale": (dy * (xhat * w + b)).sum(axis=1), "dshift": dy.sum(axis=1),
            "dw": (dh * xhat).sum(axis=(0, 1)), "db": dh.sum(axis=(0, 1)), "accb": 0.0, "acc": 0.0, "ticket": 0.0}


def check(fnk, case):
    """Runs one case in the interpreter; '' if every checked output is within tolerance, else what is wrong."""
    T, shape, file, kernel, ins, outs, scalars = case[:7]
    d = tempfile.mkdtemp(prefix="fnkcase_")
    try:
        opts = run_checks.case_options(str(REPO), d, case, mode=())
        p = subprocess.run([fnk, "run"] + opts, capture_output=True, text=True, timeout=600)
        if p.returncode:
            return f"fnk run failed: {p.stderr.strip()[:300]}"
        tol = 1e-4 if T == "f32" else 2e-2
        refs = references(kernel, T, ins, outs, scalars)
        if not refs:
            return "no output of it is checked here"
        bad = []
        for name, want in refs.items():
            out, _, how = name.partition(":")
            got = np.load(os.path.join(d, out + "_out.npy")).astype(np.float64)
            if how == "sum":
                got = got.sum(axis=0)
            err = np.abs(got - want).max() / max(1.0, np.abs(want).max())
            if not err <= tol:  # NaN fails too
                bad.append(f"{name} relative error {err:.3g}")
        return "; ".join(bad)
    finally:
        shutil.rmtree(d)


NORM_CASES = [c for c in cases.all_cases() if c[2].startswith(("stdlib/norm/", "examples/dit", "bench/variants"))
              and family(c[3])]


@pytest.mark.parametrize("kernel", sorted({c[3] for c in NORM_CASES}))
def test_norm_cases_against_float64(kernel):
    fnk = tool("fnk")
    mine = [c for c in NORM_CASES if c[3] == kernel]
    with ThreadPoolExecutor(max_workers=2) as ex:
        results = list(ex.map(lambda c: check(fnk, c), mine))
    wrong = [f"{c[0]} {c[1]} {c[8] if len(c) > 8 else {}}: {r}" for c, r in zip(mine, results) if r]
    assert not wrong, f"{len(wrong)} of {len(mine)} cases wrong:\n" + "\n".join(wrong[:10])
