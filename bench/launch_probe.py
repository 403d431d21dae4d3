#!/usr/bin/env python3
"""One norm kernel launch alone, timed by `fnk run --bench` (the median of 100
event-timed launches back to back; no fnk.torch around it, no dw sum after
it), over rows of several widths, each case at its own consts and, with
--env, again under a knob: how a launch's time follows the row's width, with
nothing else in the way. docs/perf-notes.md backend v41 (the 5 x 1024
backward split over its last slice's fill) came from it:

    python3 bench/launch_probe.py --rows 8000 \\
        --case 4608:rmsnorm_bwd_split_acc:BLOCK_N=1024,CLUSTER=5,WARPS=2,P=105 \\
        --case 5120:rmsnorm_bwd_split_acc:BLOCK_N=1024,CLUSTER=5,WARPS=2,P=105 \\
        --case 4608:rmsnorm_bwd_split_acc:BLOCK_N=1536,CLUSTER=3,WARPS=6,P=176 \\
        --env FNK_PARTIAL_CHUNKS=1

A case is N:KERNEL:K=V,...: a kernel of stdlib/norm (rmsnorm.fnk or
layernorm.fnk, by its name), its consts (T=bf16 unless given), and dim.NAME=V
for a dim only its outputs carry (the partial rows P of a backward;
R = 8 rows of sums for the *_acc kernels unless given). The inputs are
random: x, dy, w and b normal, mean 0.1 and rstd 1-2. With --device
cpu the cases run once in the interpreter, untimed (the probe's own check).
With --lines DIR each case runs once under ncu's source page instead, and
tests/gpu/hot_lines.py prints the SASS lines its warps wait at most and why.
"""
import argparse
import functools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "gpu"))
import hot_lines  # noqa: E402  (ncu's source page summarized)
import run_checks  # noqa: E402  (the `fnk run` options of a case, as the GPU checks build them)

FAMILIES = {  # kernel name prefix: (inputs, outputs, scalars), the longest prefix first
    "rmsnorm_bwd_split_acc": (["x", "w", "dy", "rstd"], ["dx", "dw_acc"], {}),
    "rmsnorm_bwd": (["x", "w", "dy", "rstd"], ["dx", "dw_partial"], {}),
    "rmsnorm_fwd": (["x", "w"], ["y", "rstd"], {"eps": 1e-6}),
    "layernorm_bwd_split_acc": (["x", "w", "dy", "mean", "rstd"], ["dx", "dw_acc", "db_acc"], {}),
    "layernorm_bwd": (["x", "w", "dy", "mean", "rstd"], ["dx", "dw_partial", "db_partial"], {}),
    "layernorm_fwd": (["x", "w", "b"], ["y", "mean", "rstd"], {"eps": 1e-5}),
}


def parse_case(text):
    """N:KERNEL:K=V,... -> (n, kernel, consts, dims)."""
    try:
        n, kernel, rest = text.split(":", 2)
        pairs = [kv.split("=", 1) for kv in rest.split(",") if kv]
        if any(len(p) != 2 for p in pairs):
            raise ValueError
        n = int(n)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N:KERNEL:K=V,..., got {text!r}")
    family = next((f for f in FAMILIES if kernel.startswith(f)), None)
    if family is None:
        raise argparse.ArgumentTypeError(f"{kernel}: not a kernel of stdlib/norm this probe knows "
                                         f"({', '.join(FAMILIES)})")
    consts = {"T": "bf16", **{k: v for k, v in pairs if not k.startswith("dim.")}}
    dims = {k[4:]: v for k, v in pairs if k.startswith("dim.")}
    if kernel.endswith("_acc"):
        dims.setdefault("R", "8")
    return n, kernel, consts, dims


@functools.lru_cache(maxsize=2)
def arrays(rows, n):
    """Every input a norm kernel takes, for rows x n, random and the same for every case of that shape
    (float32; fnk rounds them to T): made once per shape, not per case and setting."""
    rng = np.random.default_rng(n)
    a = {"x": rng.standard_normal((rows, n)), "dy": rng.standard_normal((rows, n)), "w": rng.standard_normal(n),
         "b": rng.standard_normal(n), "mean": np.full(rows, 0.1), "rstd": 1.0 + rng.random(rows)}
    return {k: v.astype(np.float32) for k, v in a.items()}


def run_case(fnk, d, rows, case, env, device, lines=None):
    """(us, GB/s) of one case under `env` ((None, None): run untimed on the CPU), or [what went wrong].
    With `lines` (a CSV path), one launch under ncu's source page instead, summarized by hot_lines."""
    n, kernel, consts, dims = case
    ins, outs, scalars = next(v for f, v in FAMILIES.items() if kernel.startswith(f))
    file = "stdlib/norm/" + ("rmsnorm.fnk" if kernel.startswith("rms") else "layernorm.fnk")
    rest = {k: v for k, v in consts.items() if k != "T"}
    given = {k: arrays(rows, n)[k] for k in ins}
    checks_case = (consts["T"], f"M={rows} N={n}", file, kernel, given, outs, scalars, dims, rest)
    mode = ("--device", "gpu") + (() if lines else ("--bench",)) if device == "gpu" else ()
    cmd = [fnk, "run"] + run_checks.case_options(str(REPO), d, checks_case, mode)
    if lines:  # the clocks left alone (the device's METHOD.md)
        cmd = ["ncu", "--clock-control", "none", "-k", kernel, "-c", "1", "--section", "SourceCounters",
               "--page", "source", "--print-source", "sass", "--csv"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env}, timeout=600)
    if p.returncode != 0:
        return (p.stdout + p.stderr).strip().splitlines()[-1:] or [f"exit {p.returncode}"]
    if lines:
        with open(lines, "w") as f:
            f.write(p.stdout)
        return None, None
    if device != "gpu":
        return None, None
    m = re.search(r"median ([0-9.]+) us.*?([0-9.]+) GB/s", p.stdout)
    return (float(m.group(1)), float(m.group(2))) if m else [f"no timing in: {p.stdout.strip()[:200]}"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", required=True, type=parse_case, metavar="N:KERNEL:K=V,...")
    ap.add_argument("--rows", type=int, default=8000)
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="also run every case with this variable set (repeatable: one setting each)")
    ap.add_argument("--device", default="gpu", choices=("gpu", "cpu"))
    ap.add_argument("--fnk", default=os.environ.get("FNK", str(REPO / "build" / "fnk")))
    ap.add_argument("--lines", metavar="DIR",
                    help="instead of timing, each case's one launch under ncu's source page into DIR, and the SASS "
                         "lines its warps wait at most (tests/gpu/hot_lines.py)")
    a = ap.parse_args(argv)
    if a.lines and a.device != "gpu":
        ap.error("--lines profiles GPU launches (--device gpu)")
    settings = [{}] + [dict([e.split("=", 1)]) for e in a.env]
    if a.device == "gpu":  # which card, for the record (perf-notes name each run's)
        try:
            print(subprocess.run(["nvidia-smi", "--query-gpu=name,uuid,clocks.sm,clocks.mem", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30).stdout.strip())
        except (OSError, subprocess.SubprocessError):
            print("(no nvidia-smi: the card is not named)")
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        print(f"{'N':>7} {'kernel':26} {'consts':44} {'setting':22} {'us':>8} {'GB/s':>6}")
        for case in a.case:
            for env in settings:
                n, kernel, consts, dims = case
                csv_path = None
                if a.lines:
                    os.makedirs(a.lines, exist_ok=True)
                    tag = "_".join([str(n), kernel] + [f"{k}{v}" for k, v in {**consts, **dims, **env}.items()])
                    csv_path = os.path.join(a.lines, re.sub(r"[^A-Za-z0-9_]", "_", tag) + ".csv")
                r = run_case(a.fnk, d, a.rows, case, env, a.device, csv_path)
                shown = ",".join(f"{k}={v}" for k, v in {**consts, **{f'dim.{k}': v for k, v in dims.items()}}.items()
                                 if k != "T" or v != "bf16")
                setting = " ".join(f"{k}={v}" for k, v in env.items()) or "(default)"
                if isinstance(r, list):
                    failed += 1
                    print(f"{n:7d} {kernel:26} {shown:44} {setting:22} FAILED: {r[0]}")
                elif csv_path:
                    print(f"{n:7d} {kernel:26} {shown:44} {setting:22} {'ncu':>8}")
                    hot_lines.main([csv_path, "--top", "8"])
                elif r[0] is None:
                    print(f"{n:7d} {kernel:26} {shown:44} {setting:22} {'ran':>8}")
                else:
                    print(f"{n:7d} {kernel:26} {shown:44} {setting:22} {r[0]:8.1f} {r[1]:6.0f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
