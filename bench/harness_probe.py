#!/usr/bin/env python3
"""How much of a backward's time under bench.py's harness comes from what the
forward leaves in L2. bench.py times a backward as (forward + backward) -
forward, the two captured back to back in one graph, so the backward finds
whatever of x the forward left in L2 (since backend v29 the whole-row
forwards mark x keep = true). This times fnk.torch's backward that way and
with a 256 MB write between the forward and the backward, for each workload:

    python3 bench/harness_probe.py [--shape KIND:MxN ...] [--reps N]

KIND is rms or ln. Run it with FNK_NO_STREAM=1 (the forwards without their
keep = true) and without, in fresh processes, to see what the hint changes.
The flush between them inside the graph is the 256 MB write alone (the
evict_last reset of bench.flush_l2 cannot be captured), so lines a kernel
marked evict_last survive it.
"""
import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", action="append", default=[], metavar="KIND:MxN")
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    shapes = [(s.split(":")[0], tuple(int(v) for v in s.split(":")[1].split("x"))) for s in a.shape] or \
        [("rms", (2048, 8192)), ("rms", (32768, 8192)), ("ln", (32768, 8192))]
    print(bench.device_id(), f"FNK_NO_STREAM={os.environ.get('FNK_NO_STREAM', '0')}", flush=True)
    for kind, shape in shapes:
        f = bench.IMPLS[kind][0]
        ins = [t.detach().requires_grad_() for t in bench.make(kind, shape, torch.bfloat16)]
        dy = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
        grad = lambda: torch.autograd.grad(f(*ins), ins, dy)  # noqa: E731
        fwd = bench.time_graph(lambda: f(*ins), a.reps)
        both = bench.time_graph(grad, a.reps)

        def flushed():
            y = f(*ins)
            bench.flush_l2(in_graph=True)
            return torch.autograd.grad(y, ins, dy)
        fwd_flush = bench.time_graph(lambda: (f(*ins), bench.flush_l2(in_graph=True)), a.reps)
        both_flush = bench.time_graph(flushed, a.reps)
        print(f"  {kind} {shape[0]}x{shape[1]}: forward {fwd:7.2f} us, backward as the bench takes it "
              f"{both - fwd:7.2f} us, with a 256 MB write between them {both_flush - fwd_flush:7.2f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
