"""Bench: RMSNorm / LayerNorm forward at 32768x8192 bf16, fnk against torch
eager and torch.compile (the torch peers run in this process; fnk in its own,
each timed with CUDA events, median). Usage: bench.py FNK OUTDIR [M N]"""
import os
import re
import subprocess
import sys

import numpy as np


def fnk_bench(fnk, root, outdir, file, kernel, ins, outs, consts):
    cmd = [fnk, "run", os.path.join(root, file), "-k", kernel, "--device", "gpu", "--bench", "--arg", "eps=1e-5"]
    for k, v in consts.items():
        cmd += ["-D", f"{k}={v}"]
    for k, p in ins.items():
        cmd += ["--in", f"{k}={p}"]
    for k in outs:
        cmd += ["--out", f"{k}={os.path.join(outdir, 'bench_' + k + '.npy')}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    m = re.search(r"median ([0-9.]+) us.* ([0-9]+) GB/s", p.stdout)
    if p.returncode or not m:
        return None, (p.stdout + p.stderr)[-800:]
    return float(m.group(1)), p.stdout.strip()


def torch_bench(fn, args, iters=100):
    import torch
    for _ in range(10):
        fn(*args)
    torch.cuda.synchronize()
    st = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    for i in range(iters):
        st[i].record()
        fn(*args)
    st[iters].record()
    torch.cuda.synchronize()
    ts = sorted(st[i].elapsed_time(st[i + 1]) * 1e3 for i in range(iters))
    return ts[len(ts) // 2]


def main():
    fnk, outdir = sys.argv[1], sys.argv[2]
    M, N = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (32768, 8192)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    rng = np.random.default_rng(7)
    paths = {}
    for name, shape in (("x", (M, N)), ("w", (N,)), ("b", (N,))):
        paths[name] = os.path.join(outdir, f"bench_in_{name}.npy")
        np.save(paths[name], rng.standard_normal(shape, dtype=np.float32))
    bytes_rms = 2 * M * N * 2 + N * 2          # x read, y written, w read (bf16)
    bytes_ln = 2 * M * N * 2 + 2 * N * 2
    rows = []
    fnk_best = {}
    for kernel, file, ins, outs, nbytes in (
            ("rmsnorm_fwd", "stdlib/norm/rmsnorm.fnk", ("x", "w"), ("y", "rstd"), bytes_rms),
            ("layernorm_fwd", "stdlib/norm/layernorm.fnk", ("x", "w", "b"), ("y", "mean", "rstd"), bytes_ln)):
        for bn in [int(v) for v in os.environ.get("FNK_BENCH_BLOCKS", "1024,2048,4096").split(",")]:
            us, text = fnk_bench(fnk, root, outdir, file, kernel, {k: paths[k] for k in ins}, outs, {"BLOCK_N": bn, "T": "bf16"})
            print(f"fnk {kernel} BLOCK_N={bn}: " + (text if us else "FAILED " + text), flush=True)
            if us:
                rows.append((kernel, f"fnk BLOCK_N={bn}", us, nbytes / us / 1e3))
                fnk_best[kernel] = min(fnk_best.get(kernel, 1e30), us)
    try:
        if os.environ.get("FNK_BENCH_TORCH", "1") == "0":
            raise RuntimeError("FNK_BENCH_TORCH=0")
        import torch
        import torch.nn.functional as F
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        rms = lambda x, w: F.rms_norm(x, (N,), w, 1e-5)
        ln = lambda x, w, b: F.layer_norm(x, (N,), w, b, 1e-5)
        for kernel, f, args, nbytes in (("rmsnorm_fwd", rms, (x, w), bytes_rms), ("layernorm_fwd", ln, (x, w, b), bytes_ln)):
            us = torch_bench(f, args)
            rows.append((kernel, "torch eager", us, nbytes / us / 1e3))
            try:
                us = torch_bench(torch.compile(f), args)
                rows.append((kernel, "torch.compile", us, nbytes / us / 1e3))
            except Exception as e:  # noqa: BLE001
                print(f"torch.compile {kernel} failed: {e}")
        print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    except Exception as e:  # noqa: BLE001
        print(f"SKIP torch peers: {e}")
    print(f"\n{'workload':15} {'impl':20} {'us':>9} {'GB/s':>7} {'fnk best / this':>16}   ({M}x{N} bf16)")
    for kernel, impl, us, gbs in rows:
        ratio = fnk_best.get(kernel, float('nan')) / us
        print(f"{kernel:15} {impl:20} {us:9.1f} {gbs:7.0f} {ratio:16.2f}")
    for k in os.listdir(outdir):
        if k.startswith("bench_"):
            os.remove(os.path.join(outdir, k))


if __name__ == "__main__":
    main()
