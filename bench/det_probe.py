#!/usr/bin/env python3
"""fnk.torch's backwards (RMSNorm and LayerNorm, bf16; 2048x8192 unless
--shape says) as bench.py times them, by default, under
torch.use_deterministic_algorithms(True), and under it with
torch.utils.deterministic.fill_uninitialized_memory off, two rounds: what
the deterministic mode costs (docs/perf-notes.md, v26, v28).
    python3 bench/det_probe.py [--shape MxN ...]
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import fnk.torch as fnt  # noqa: E402  (bench puts python/ on the path)


def backward_us(f, leaves, dy):
    """(forward + backward) - forward, with fresh leaves, as bench.py times it."""
    return bench.time_backward(f, [leaf.detach().requires_grad_() for leaf in leaves], dy, 100)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", action="append", default=[], help="MxN (repeatable; default 2048x8192)")
    a = ap.parse_args()
    print(bench.device_id(), flush=True)
    for shape in a.shape or ["2048x8192"]:
        m, n = (int(d) for d in shape.split("x"))
        x, dy = (torch.randn(m, n, device=bench.DEV, dtype=torch.bfloat16) for _ in range(2))
        w, b = (torch.randn(n, device=bench.DEV, dtype=torch.bfloat16) for _ in range(2))
        for r in range(2):
            for det, fill in ((False, True), (True, True), (True, False)):
                torch.use_deterministic_algorithms(det)
                torch.utils.deterministic.fill_uninitialized_memory = fill
                rms = backward_us(fnt.rms_norm, (x, w), dy)
                ln = backward_us(lambda *t: fnt.layer_norm(t[0], (n,), *t[1:]), (x, w, b), dy)
                print(f"round {r} deterministic={det} fill={fill}: {m}x{n} backward RMSNorm {rms:.2f} us, "
                      f"LayerNorm {ln:.2f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
