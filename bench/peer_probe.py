"""Looks inside the peers: what torch.compile (Inductor + Triton) generates for
the norm workloads, and what the hardware counters say about fnk and it.

  python3 bench/peer_probe.py [--only NAME]

runs each case twice per implementation, the second call between
cudaProfilerStart/Stop, so that `ncu --profile-from-start off` sees just it.
The generated code lands in TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR
(tests/gpu/probe.sh keeps it).
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (workload definitions)


def cases():
    """bench.MAIN's bf16 workloads: (label, kind, shape, backward)."""
    return [(label, kind, shape, bwd) for label, kind, shape, dtype, bwd in bench.MAIN if dtype == torch.bfloat16]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="the workloads whose label contains this")
    a = ap.parse_args()
    for name, kind, shape, bwd in cases():
        if a.only and a.only not in name:
            continue
        fnk_f, ref_f = bench.IMPLS[kind]
        ins = bench.make(kind, shape, torch.bfloat16)
        comp = torch.compile(ref_f, dynamic=False)
        for impl, f in (("fnk", fnk_f), ("compile", comp)):
            def call():
                y = f(*ins)
                if bwd:
                    torch.autograd.grad(y, ins, torch.ones_like(y))
            call()  # compile / autotune outside the range
            torch.cuda.synchronize()
            # ncu --profile-from-start off: only this call's kernels, from
            # every thread (autograd runs the backward on its own thread).
            torch.cuda.profiler.start()
            torch.cuda.nvtx.range_push(f"probe {name} {impl}")
            call()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            torch.cuda.profiler.stop()
        print("done", name, flush=True)


if __name__ == "__main__":
    main()
