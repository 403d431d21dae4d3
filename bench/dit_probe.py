#!/usr/bin/env python3
"""Where the DiT forward's time goes against its same-bytes copy: in one
process, torch's copy (the bench's `copy` column), the example's forward as
the bench launches it, and fnk copies of the same bytes (the example's
schedule with its arithmetic left out, and plain row loads and stores in
CTAs of one or more rows), each checked (the forwards against torch in
float32, the copies exactly). Backend v18 (docs/perf-notes.md): torch 59.3,
the example 63.0, its schedule as a copy 61.9, one-row CTAs 59.9 us; v26:
torch 59.0, one-step tiles of one 16-byte chunk per thread 59.4. With
--once each case runs once outside any graph, for ncu:
    python3 bench/dit_probe.py [--reps N]
    ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        python3 bench/dit_probe.py --once
and, as the bench's harness leaves the L2 (the flush's dirty lines):
    ncu --cache-control none ... python3 bench/dit_probe.py --once --flush
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import tune  # noqa: E402

import fnk  # noqa: E402  (bench puts python/ on the path)
from fnk import schedules  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--once", action="store_true", help="each case once, no timing (for ncu)")
    ap.add_argument("--flush", action="store_true",
                    help="with --once: flush L2 as the bench does (a 256 MB memset) just before each case, for ncu "
                         "--cache-control none")
    ap.add_argument("--only", action="append", default=[], help="cases whose name contains this (repeatable)")
    a = ap.parse_args()
    print(bench.device_id(), flush=True)
    dit = fnk.load(bench.REPO / "examples" / "dit_modulate.fnk")
    var = fnk.load(bench.REPO / "bench" / "variants.fnk")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    B, S, H = 56, 1024, 1024
    t = tune.dit_tensors(B, S, H)
    x, w, b, scale, shift, y, mean, rstd = t
    ref = bench.dit_ref(*(v.float() for v in t[:5]))  # float32
    F = torch.nn.functional
    x2, y2 = x.view(B * S, H), y.view(B * S, H)

    def fwd(**c):
        return lambda: dit.dit_modulate_fwd(*t, eps=1e-6, **c), lambda: tune.rel_err(y, ref)

    def copied():
        return float((y != x).sum())  # a copy must match exactly

    cases = [
        ("torch copy (mul by 1)", lambda: torch.mul(x, 1.0, out=y), copied),
        ("example as the bench launches it", *fwd(**schedules.dit_fwd(B, S, H, sms).consts)),
        ("example SB=256 L2=0", *fwd(SB=256)),
        ("example SB=256 L2=6*SMs STAGES=4", *fwd(SB=256, L2=6 * sms, STAGES=4)),
    ]
    # Probes (wrong by design, each checked against its own torch reference): the example without its
    # modulation vectors (a = 1.5, c = 0.25), and without its row statistics (y = x * a + c).
    sc = 1 + scale.float()[:, None, :]
    ref_novec = F.layer_norm(x.float(), (H,), eps=1e-6) * 1.5 + 0.25
    ref_nostat = x.float() * (w.float() * sc) + (b.float() * sc + shift.float()[:, None, :])
    for l2 in (6 * sms, 0):
        cases.append((f"probe dit_fwd_novec SB=256 L2={l2}",
                      lambda l2=l2: var.dit_fwd_novec(x, y, mean, rstd, eps=1e-6, SB=256, L2=l2),
                      lambda: tune.rel_err(y, ref_novec)))
        cases.append((f"probe dit_fwd_nostat SB=256 L2={l2}",
                      lambda l2=l2: var.dit_fwd_nostat(*t, eps=1e-6, SB=256, L2=l2),
                      lambda: tune.rel_err(y, ref_nostat)))
    for sb, st in ((256, 3), (256, 4), (128, 3)):
        cases.append((f"fnk copy_staged SB={sb} STAGES={st}",
                      lambda sb=sb, st=st: var.copy_staged(x, y, SB=sb, STAGES=st), copied))
    for p, wp in ((16 * sms, 1), (8 * sms, 2), (4 * sms, 4), (32 * sms, 1), (B * S // 4, 1), (B * S, 1)):
        cases.append((f"fnk copy_rows P={p} WARPS={wp}",
                      lambda p=p, wp=wp: var.copy_rows(x2, y2, P=p, WARPS=wp), copied))
    for rows, wp in ((1, 1), (1, 2), (1, 4), (2, 4), (2, 8), (4, 16)):
        cases.append((f"fnk copy_tile ROWS={rows} WARPS={wp}",
                      lambda rows=rows, wp=wp: var.copy_tile(x2, y2, ROWS=rows, WARPS=wp), copied))
    if a.only:
        cases = [c for c in cases if any(o in c[0] for o in a.only)]
    bad = 0
    for name, fn, check in cases:
        y.fill_(float("nan"))
        if a.once:
            print(f"  {name}", flush=True)
            if a.flush:
                bench.flush_l2()
            fn()
            torch.cuda.synchronize()
            continue
        us = bench.time_graph(fn, a.reps)
        y.fill_(float("nan"))
        fn()
        err = check()
        ok = err <= tune.TOLERANCE
        bad += not ok
        print(f"  {name:44} {us:8.2f} us  {2 * x.numel() * 2 / us / 1e3:6.0f} GB/s  err {err:.3g}"
              f"{'' if ok else '  MISMATCH'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
