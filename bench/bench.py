"""fnk against PyTorch on the norm workloads of shared/docs/PERFORMANCE.md.

    python3 bench/bench.py [--out DIR] [--quick] [--no-sweep]

Every implementation runs in this one process on the same CUDA tensors: fnk
(the stdlib kernels through the fnk package, on torch tensors, no copies),
torch eager and torch.compile. Each call is captured once in a CUDA graph and
replayed; the L2 is flushed (evict_last lines reset, then a 256 MB write:
flush_l2) before every timed replay, and
the time is the median of the replays' CUDA-event times. The roofline is the
device-to-device copy bandwidth measured in this run. Bytes count each tensor
read or written once (x, y, dy, dx, w ...; small vectors too). fnk's outputs
are checked against torch's before timing.

Each main workload also times a plain elementwise pass over the same big
tensors (same_bytes_copy): the shape's own ceiling under this harness, which
for small shapes sits well above bytes / roofline.

Prints one table (us, GB/s, fraction of the roofline and of that copy, fnk's
speedup over each peer), writes bench.csv, and, with matplotlib, bandwidth-vs-N plots
(bw_fwd.png, bw_bwd.png; otherwise bench/plot.py draws them from the CSV).
"""
import argparse
import ctypes
import csv
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import fnk  # noqa: E402
import fnk.torch as fnt  # noqa: E402
from fnk import schedules  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import targets  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# One compiled function per peer serves every shape; without this dynamo gives
# up after 8 shapes and silently runs eager.
torch._dynamo.config.cache_size_limit = 256  # (recompile_limit in newer torch is the same setting)
DEV = "cuda"


def device_id():
    """The card's name and UUID, printed with every table: device calls land
    on different H200s, which differ by a few percent on one kernel
    (docs/perf-notes.md, GPU backend v10), so numbers compare within a card."""
    p = torch.cuda.get_device_properties(0)
    return f"{p.name} {getattr(p, 'uuid', '?')}"


_flush = None  # the 256 MB flush_l2 writes, and the driver's cuCtxResetPersistingL2Cache, made at first use
_reset = None


def flush_l2(in_graph=False):
    """Empties L2 of the workload's lines: first every line marked evict_last
    (`prefetch`, `keep = true`, Triton's eviction_policy='evict_last') back to
    normal priority (cuCtxResetPersistingL2Cache), since a plain write keeps
    those, then a 256 MB write. Without the reset, the lines a kernel marked
    in one replay survived into the next: the 2048x8192 RMSNorm backward, whose
    rows are asked into L2 with evict_last, timed 29.4 us against 30.8-30.9
    with it (docs/perf-notes.md, backend v29). in_graph: only the write, as a
    node of a graph being captured (which cannot synchronize)."""
    global _flush, _reset
    if _flush is None:
        _flush = torch.empty(256 << 20, dtype=torch.uint8, device=DEV)
    if not in_graph:
        if _reset is None:
            _reset = ctypes.CDLL("libcuda.so.1").cuCtxResetPersistingL2Cache
        torch.cuda.synchronize()  # the reset is not stream-ordered: nothing may be in flight
        if _reset() != 0:
            raise RuntimeError("cuCtxResetPersistingL2Cache failed")
    _flush.zero_()  # after the reset, so that the GPU is busy while the timed replay is queued


def time_graph(fn, reps):
    """Median microseconds of `fn` replayed from a CUDA graph, L2 flushed before each replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    # Replays for 20 ms before timing: a JIT compile or torch.compile's autotuning
    # just before leaves the GPU idle, and the first workload of a run timed
    # 3-4% slower than in later runs (clocks still ramping).
    t_end = time.time() + 0.02
    while time.time() < t_end:
        g.replay()
        torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush_l2()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    times.sort()
    return times[len(times) // 2]


def time_backward(f, leaves, dy, reps):
    """Median microseconds of f's autograd backward on `leaves` (tensors that
    require grad) with upstream gradient dy. Autograd's backward runs on the
    forward's streams, so it is captured together with its forward: the
    backward's time is (forward + backward) - forward, both with autograd
    recording."""
    total = time_graph(lambda: torch.autograd.grad(f(*leaves), leaves, dy), reps)
    return total - time_graph(lambda: f(*leaves), reps)


def copy_bandwidth():
    """4 GiB device-to-device copy by an SM kernel (a copy_ captured in a graph
    becomes a copy-engine memcpy node, measured here at only ~2.7 TB/s)."""
    src = torch.empty(1 << 30, dtype=torch.float32, device=DEV)
    dst = torch.empty_like(src)
    us = time_graph(lambda: torch.mul(src, 1.0, out=dst), 10)
    return 2 * src.numel() * 4 / us / 1e3  # GB/s, read + write


# ------------------------------------------------------------------ workloads
def rms_ref(x, w, eps=1e-6):
    return F.rms_norm(x, (x.shape[-1],), w, eps)


def ln_ref(x, w, b, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


class _Dit(torch.autograd.Function):
    """examples/dit_modulate.fnk as an autograd function (one kernel each way)."""
    _mod = None

    @staticmethod
    def module():
        if _Dit._mod is None:
            _Dit._mod = fnk.load(REPO / "examples" / "dit_modulate.fnk")
        return _Dit._mod

    _ws = {}

    @staticmethod
    def workspace(B, H):
        """dit_modulate_bwd's batch sums, dw/db sums and tickets: zeroed once here, left at zero by every call, so one
        per shape serves every backward on this stream."""
        if (B, H) not in _Dit._ws:
            _Dit._ws[B, H] = (torch.zeros(B, 2, H, device=DEV), torch.zeros(2, H, device=DEV),
                              torch.zeros(B + 1, device=DEV, dtype=torch.int32))
        return _Dit._ws[B, H]

    _sb = {}

    @staticmethod
    def bwd_ctas(x):
        """CTAs per batch for the backward: as many as are resident at once (one wave; tune.py --variants at
        56x1024x1024, backend v12: SB = 14 104.5 us, 15 (a partial second wave) 120)."""
        B, _, H = x.shape
        key = (B, H, x.dtype)
        if key not in _Dit._sb:
            # Asked of the kernel's default SB (the grid does not change its registers): on the H200 the instance
            # launched, so no extra compile.
            _Dit._sb[key] = one_wave(_Dit.module().dit_modulate_bwd, B, BLOCK_H=schedules.block(H), T=fnt._dtype(x))
        return _Dit._sb[key]

    @staticmethod
    def forward(ctx, x, w, b, scale, shift, eps):
        m = _Dit.module()
        B, S, H = x.shape
        y = torch.empty_like(x)
        mean = torch.empty(B, S, device=DEV, dtype=torch.float32)
        rstd = torch.empty_like(mean)
        launch = schedules.dit_fwd(B, S, H, fnt._sms(x.device))
        getattr(m, launch.kernel)(x, w, b, scale, shift, y, mean, rstd, eps=eps, **launch.consts)
        ctx.save_for_backward(x, w, b, scale, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, b, scale, mean, rstd = ctx.saved_tensors
        m = _Dit.module()
        B, S, H = x.shape
        dx = torch.empty_like(x)
        dscale, dshift = torch.empty_like(scale), torch.empty_like(scale)
        dw, db = torch.empty_like(w), torch.empty_like(b)
        m.dit_modulate_bwd(x, w, b, scale, dy.contiguous(), mean, rstd, dx, dscale, dshift, dw, db, *_Dit.workspace(B, H),
                           BLOCK_H=schedules.block(H), SB=_Dit.bwd_ctas(x))
        return dx, dw, db, dscale, dshift, None


def dit_fnk(x, w, b, scale, shift):
    return _Dit.apply(x, w, b, scale, shift, 1e-6)


def dit_ref(x, w, b, scale, shift):
    h = F.layer_norm(x, (x.shape[-1],), w, b, 1e-6)
    return h * (1 + scale[:, None, :]) + shift[:, None, :]


def make(kind, shape, dtype):
    g = torch.Generator(device=DEV).manual_seed(0)
    def r(*s, scale=1.0):
        return (torch.randn(*s, device=DEV, generator=g) * scale).to(dtype).requires_grad_()
    if kind in ("rms", "ln"):
        M, N = shape
        ins = [r(M, N), r(N, scale=0.5) + 1]
        ins[1] = ins[1].detach().requires_grad_()
        if kind == "ln":
            ins.append(r(N))
        return ins
    B, S, H = shape
    return [r(B, S, H), (r(H, scale=0.1) + 1).detach().requires_grad_(), r(H), r(B, H, scale=0.1), r(B, H)]


IMPLS = {
    "rms": (lambda x, w: fnt.rms_norm(x, w, 1e-6), rms_ref),
    "ln": (lambda x, w, b: fnt.layer_norm(x, (x.shape[-1],), w, b, 1e-5), ln_ref),
    "dit": (dit_fnk, dit_ref),
}


def nbytes(kind, shape, dtype, bwd):
    e = torch.tensor([], dtype=dtype).element_size()
    big = 1
    for d in shape:
        big *= d
    rows = big // shape[-1]
    n = shape[-1]
    vecs = {"rms": 1, "ln": 2, "dit": 2}[kind]
    if kind == "dit":
        vecs_b = 2 * shape[0] * n  # scale, shift
    else:
        vecs_b = 0
    stats = rows * 4 * (2 if kind != "rms" else 1)  # f32 mean/rstd: written forward, read backward
    if not bwd:  # x read, y written, weights read
        return 2 * big * e + vecs * n * e + vecs_b * e + stats
    # x, dy read, dx written, weights read and grads written
    return 3 * big * e + 2 * vecs * n * e + 2 * vecs_b * e + stats


def one_wave(kernel, batches, **consts):
    """CTAs per batch that fill the GPU once (every CTA resident at once) for this kernel instance, as the driver
    counts them (Kernel.occupancy: it compiles and loads the instance, so ask it of instances that will run)."""
    occ = kernel.occupancy(**consts)
    if occ["ctas_per_sm"] <= 0:
        raise RuntimeError(f"the driver places no CTA of {kernel.name} {consts}")
    return max(1, occ["ctas_per_sm"] * occ["sms"] // batches)


def same_bytes_copy(shape, dtype, bwd, reps):
    """Microseconds of torch elementwise passes that move a workload's big
    tensors and do nothing else, timed as the workload is: the forward's x
    read and y written (torch.mul by 1, as the roofline's 4 GiB copy), the
    backward's x and dy read and dx written (torch.add), the latter as
    (forward + backward) - forward like the backwards. The shape's own
    ceiling under this harness: a small working set pays the launch ramp,
    the tail and the L2's dirty lines that the 4 GiB copy amortizes."""
    g = torch.Generator(device=DEV).manual_seed(1)
    x = torch.randn(shape, device=DEV, generator=g).to(dtype)
    y = torch.empty_like(x)
    fwd = lambda: torch.mul(x, 1.0, out=y)
    if not bwd:
        return time_graph(fwd, reps)
    dy, dx = torch.randn_like(x), torch.empty_like(x)
    return time_graph(lambda: (fwd(), torch.add(x, dy, out=dx)), reps) - time_graph(fwd, reps)


def rel_err(out, ref):
    """Largest |out - ref| over max(1, max |ref|): how fnk's outputs are judged."""
    return (out.float() - ref.float()).abs().max().item() / max(1.0, ref.float().abs().max().item())


def run_one(kind, shape, dtype, bwd, reps):
    """{impl: us} for fnk, eager and compile on one workload."""
    fnk_f, ref_f = IMPLS[kind]
    ins = make(kind, shape, dtype)
    results, errs = {}, {}
    impls = {"fnk": fnk_f, "torch eager": ref_f, "torch.compile": torch.compile(ref_f, dynamic=False)}
    y_ref = ref_f(*ins)
    dy = torch.randn_like(y_ref)
    grads_ref = torch.autograd.grad(y_ref, ins, dy) if bwd else None
    y_ref = y_ref.detach()
    for name, f in impls.items():
        try:
            # Timed calls use fresh leaves (same storage): a leaf whose
            # gradient accumulator was made on the default stream, outside the
            # capture, would break the CUDA-graph capture of the backward.
            tins = [t.detach().requires_grad_() for t in ins]
            y = f(*ins)
            if name == "fnk":
                errs["y"] = rel_err(y, y_ref)
                if bwd:
                    gs = torch.autograd.grad(y, ins, dy, retain_graph=True)
                    errs["grads"] = max(rel_err(a, b) for a, b in zip(gs, grads_ref))
            if bwd:
                del y
                results[name] = time_backward(f, tins, dy, reps)
            else:
                del y
                with torch.no_grad():
                    results[name] = time_graph(lambda: f(*tins), reps)
        except Exception as e:  # noqa: BLE001 - a peer that fails is reported, not fatal
            print(f"  {name} failed on {kind} {shape}: {str(e).splitlines()[0][:200]}", flush=True)
    return results, errs


MAIN = [  # (label, kind, shape, dtype, backward): PERFORMANCE.md's workloads, and two wide LayerNorm forwards
    ("RMSNorm fwd 32768x8192", "rms", (32768, 8192), torch.bfloat16, False),
    ("RMSNorm bwd 32768x8192", "rms", (32768, 8192), torch.bfloat16, True),
    ("RMSNorm fwd f32 32768x8192", "rms", (32768, 8192), torch.float32, False),
    ("RMSNorm fwd 8192x65536", "rms", (8192, 65536), torch.bfloat16, False),
    ("RMSNorm bwd 8192x65536", "rms", (8192, 65536), torch.bfloat16, True),
    ("RMSNorm fwd 1024x262144", "rms", (1024, 262144), torch.bfloat16, False),
    ("RMSNorm bwd 1024x262144", "rms", (1024, 262144), torch.bfloat16, True),
    ("LayerNorm fwd 32768x8192", "ln", (32768, 8192), torch.bfloat16, False),
    ("LayerNorm bwd 32768x8192", "ln", (32768, 8192), torch.bfloat16, True),
    ("LayerNorm fwd 4096x16384", "ln", (4096, 16384), torch.bfloat16, False),  # wide LayerNorm rows: no target,
    ("LayerNorm fwd 1024x65536", "ln", (1024, 65536), torch.bfloat16, False),  # torch.compile beside (backend v30)
    ("RMSNorm bwd 2048x8192", "rms", (2048, 8192), torch.bfloat16, True),
    ("DiT LN+modulate fwd 56x1024x1024", "dit", (56, 1024, 1024), torch.bfloat16, False),
    ("DiT LN+modulate bwd 56x1024x1024", "dit", (56, 1024, 1024), torch.bfloat16, True),
]


# Largest error of fnk against torch, relative to max(1, max |torch|), that the
# bench accepts; above it the row is marked and the bench exits 1, so a fast
# wrong kernel cannot pass as a result.
TOLERANCE = {torch.bfloat16: 2e-2, torch.float32: 1e-4}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/fnk-bench"))
    ap.add_argument("--quick", action="store_true", help="fewer replays and sweep points")
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--budget", type=float, default=420,
                    help="seconds from the start; sweep points that would end past it are skipped")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="time only the workloads whose label contains TEXT (repeatable)")
    a = ap.parse_args()
    main_rows = [m for m in MAIN if not a.only or any(t in m[0] for t in a.only)]
    if not main_rows:
        sys.exit(f"--only {a.only} selects none of: " + "; ".join(m[0] for m in MAIN))
    os.makedirs(a.out, exist_ok=True)
    reps = 20 if a.quick else 50
    t0 = time.time()
    # A second of copies first, so the roofline is measured at working clocks.
    warm = torch.empty(1 << 28, device=DEV)
    while time.time() - t0 < 1.0:
        warm.mul_(1.0)
    torch.cuda.synchronize()
    roof = copy_bandwidth()
    print(f"{device_id()}  torch {torch.__version__}  copy roofline {roof:.0f} GB/s", flush=True)
    rows, mismatches = [], []
    for label, kind, shape, dtype, bwd in main_rows:
        res, errs = run_one(kind, shape, dtype, bwd, reps)
        res["copy, same bytes"] = same_bytes_copy(shape, dtype, bwd, reps)
        b = nbytes(kind, shape, dtype, bwd)
        bad = [k for k, v in errs.items() if not v <= TOLERANCE[dtype]]
        if bad:
            mismatches.append(f"{label}: fnk {', '.join(bad)} off by {max(errs[k] for k in bad):.3g}")
        if "fnk" not in res:  # fnk raised (run_one printed why): a failure, not a blank cell
            mismatches.append(f"{label}: fnk failed")
        rows.append((label, kind, shape, str(dtype).replace("torch.", ""), bwd, b, res, errs))
        print(f"  {label}: " + ", ".join(f"{k} {v:.1f} us" for k, v in res.items()) +
              (f"  (fnk err {', '.join(f'{k} {v:.2g}' for k, v in errs.items())})" if errs else ""), flush=True)
    sweep = []
    if not a.no_sweep:
        # 8191: a row of odd width, off 16-byte alignment in seven rows of eight (perf-notes v32, item 4); 4608 and
        # 6200: rows of whole 16-byte pieces a one-row tile would pad to 8192 (v40, item 3)
        ns = [1024, 4096, 16384, 65536, 262144] if a.quick else [512, 1024, 2048, 3072, 4096, 4608, 5120, 6200, 8191,
                                                                  8192, 12288, 16384, 20000, 32768, 40000, 65536,
                                                                  98304, 131072, 262144]
        last = 0.0  # seconds the previous point took: a point that would end past the budget is skipped
        for bwd in (False, True):
            for n in ns:
                if time.time() - t0 + last > a.budget:
                    print(f"  sweep {'bwd' if bwd else 'fwd'} N={n} skipped: it would end past the "
                          f"{a.budget:.0f} s budget", flush=True)
                    continue
                started = time.time()
                m = max(1, (1 << 26) // n)
                res, errs = run_one("rms", (m, n), torch.bfloat16, bwd, max(10, reps // 3))
                label = f"sweep {'bwd' if bwd else 'fwd'} N={n}"
                bad = [k for k, v in errs.items() if not v <= TOLERANCE[torch.bfloat16]]
                if bad or "fnk" not in res:
                    mismatches.append(f"{label}: fnk " + (f"{', '.join(bad)} off" if bad else "failed"))
                b = nbytes("rms", (m, n), torch.bfloat16, bwd)
                sweep.append((bwd, n, m, b, res))
                last = time.time() - started
                print(f"  {label}: " + ", ".join(f"{k} {b / v / 1e3:.0f} GB/s" for k, v in res.items()), flush=True)
    write_outputs(a.out, roof, rows, sweep)
    if not a.no_sweep:
        print(f"sweep (bench.csv, plots): {len(sweep)} of {2 * len(ns)} points timed"
              + (", the rest past the budget" if len(sweep) < 2 * len(ns) else ""))
    print(f"bench took {time.time() - t0:.0f} s")
    for m in mismatches:
        print(f"MISMATCH {m}")
    sys.exit(1 if mismatches else 0)


def write_outputs(out, roof, rows, sweep):
    with open(os.path.join(out, "bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "impl", "us", "GB/s", "fraction_of_roofline", "roofline_GB/s"])
        for label, kind, shape, dt, bwd, b, res, _ in rows:
            for impl, us in res.items():
                w.writerow([label, impl, f"{us:.2f}", f"{b / us / 1e3:.1f}", f"{b / us / 1e3 / roof:.3f}", f"{roof:.0f}"])
        for bwd, n, m, b, res in sweep:
            for impl, us in res.items():
                w.writerow([f"sweep RMSNorm {'bwd' if bwd else 'fwd'} N={n} M={m}", impl, f"{us:.2f}",
                            f"{b / us / 1e3:.1f}", f"{b / us / 1e3 / roof:.3f}", f"{roof:.0f}"])
    print(f"\n{'workload (bf16 unless noted)':34} {'roofline':>8} {'copy':>8} {'fnk':>8} {'eager':>8} {'compile':>8}"
          f" {'fnk GB/s':>8} {'of roof':>7} {'of copy':>7} {'vs eager':>8} {'vs comp.':>8}  target (us)")
    verdicts = []
    for label, kind, shape, dt, bwd, b, res, errs in rows:
        floor = b / roof / 1e3
        f, e, c, cp = (res.get(k) for k in ("fnk", "torch eager", "torch.compile", "copy, same bytes"))
        fmt = lambda v: f"{v:8.1f}" if v else f"{'-':>8}"
        ratio = lambda p: f"{p / f:7.2f}x" if p and f else f"{'-':>8}"
        text, met = targets.verdict(label, f, floor)
        verdicts.append(met)
        print(f"{label:34} {floor:8.1f} {fmt(cp)} {fmt(f)} {fmt(e)} {fmt(c)} "
              f"{(b / f / 1e3 if f else 0):8.0f} {(b / f / 1e3 / roof if f else 0):6.0%} "
              f"{(cp / f if f and cp else 0):6.0%} {ratio(e)} {ratio(c)}  {text}")
    print("(copy: torch elementwise passes moving the same big tensors, timed the same way (same_bytes_copy); "
          "of copy: its time over fnk's;\n vs eager / vs comp.: the peer's time over fnk's, above 1 means fnk is "
          "faster; target: issue 3, item 7)")
    print(targets.summary(verdicts))
    try:
        import plot  # bench/ is on the path (targets)
        plot.draw(os.path.join(out, "bench.csv"), out)
    except ImportError as e:
        print(f"SKIP plots: {e}; run: python3 bench/plot.py {os.path.join(out, 'bench.csv')} DIR")


if __name__ == "__main__":
    main()
