"""fnk.torch on CUDA tensors against torch's own norms: values and gradients
on ragged shapes, bf16 and f32, narrow rows and rows spread over a cluster,
non-contiguous inputs, and use inside an nn.Module. Skips without a GPU."""
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import fnk  # noqa: E402
import fnk.torch as fnt  # noqa: E402
import torch.nn.functional as F  # noqa: E402

TOL = {torch.float32: (2e-5, 2e-4), torch.bfloat16: (2e-2, 3e-2)}


def close(a, b, dtype, what):
    rtol, atol = TOL[dtype]
    scale = max(1.0, b.float().abs().max().item())
    err = (a.float() - b.float()).abs().max().item()
    assert err <= atol * scale + rtol * scale, f"{what}: max error {err:.3g} (scale {scale:.3g})"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (64, 1000), (4099, 256), (5, 4096), (37, 5120), (2, 3, 8192), (9, 12288),
                                   (4, 20000), (3, 65536), (9, 262144),
                                   # ragged rows: over 7 x 2048, 10 x 4096, 12 x 8192, 12 x 16384; chunks (17000)
                                   (5, 14000), (6, 40000), (3, 98304), (2, 196608), (3, 17000),
                                   # 16-bit rows off alignment (backend v36-v37): shifted chunks forward;
                                   # backward over 2 x 4096, 2 x 8192 and 8 x 16384 with a head tile (no
                                   # room for the shift), 2 x 4096, 2 x 8192 and 5 x 16384 shifted, with
                                   # fewer rows than clusters and (8191, 16383) more
                                   (2, 8191), (3, 5001), (3, 12001), (2, 65537), (2, 131071), (300, 8191),
                                   (200, 16383),
                                   # rows of whole pieces the one-row tile would pad: tiles sized to the row
                                   # (4608, 2560: backend v42; 5632 over 2 x 2816), 2 x 4096 (6200), the tile
                                   # kept at 15/16 (7680)
                                   (41, 4608), (50, 2560), (9, 5632), (300, 6200), (7, 7680)])
def test_rms_norm_matches_torch(shape, dtype):
    g = torch.Generator(device="cuda").manual_seed(sum(shape))
    x = torch.randn(*shape, device="cuda", generator=g).to(dtype).requires_grad_()
    w = (torch.rand(shape[-1], device="cuda", generator=g) + 0.5).to(dtype).requires_grad_()
    dy = torch.randn(*shape, device="cuda", generator=g).to(dtype)
    y = fnt.rms_norm(x, w, 1e-6)
    ref = F.rms_norm(x.float(), (shape[-1],), w.float(), 1e-6)
    close(y, ref, dtype, "y")
    dx, dw = torch.autograd.grad(y, (x, w), dy)
    rdx, rdw = torch.autograd.grad(ref, (x, w), dy.float())
    close(dx, rdx, dtype, "dx")
    close(dw, rdw, dtype, "dw")


@pytest.mark.parametrize("norm", ["rms", "ln"])
@pytest.mark.parametrize("m,n", [(2048, 8192), (37, 6000), (37, 20000), (40, 65536)])
def test_norm_backward_workspace_on_two_streams(norm, m, n):
    """The splits add their dw (and db) partials into workspaces of zeroed
    rows that their take kernels empty after each use: three backwards in a
    row, the third on another stream, each gradient against torch (a
    workspace left dirty adds the last call's sums to the next)."""
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = torch.randn(m, n, device="cuda", generator=g).requires_grad_()
    w = (torch.rand(n, device="cuda", generator=g) + 0.5).requires_grad_()
    if norm == "rms":
        params, ref_f, fnk_f = (x, w), lambda: F.rms_norm(x, (n,), w, 1e-6), lambda: fnt.rms_norm(x, w, 1e-6)
    else:
        b = torch.randn(n, device="cuda", generator=g).requires_grad_()
        params = (x, w, b)
        ref_f, fnk_f = lambda: F.layer_norm(x, (n,), w, b, 1e-5), lambda: fnt.layer_norm(x, (n,), w, b, 1e-5)
    ref = ref_f()
    side = torch.cuda.Stream()
    for i in range(3):
        dy = torch.randn(m, n, device="cuda", generator=g)
        want = torch.autograd.grad(ref, params, dy, retain_graph=True)
        stream = side if i == 2 else torch.cuda.current_stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            got = torch.autograd.grad(fnk_f(), params, dy)
        torch.cuda.current_stream().wait_stream(stream)
        for name, a, e in zip(("dx", "dw", "db"), got, want):
            close(a, e, torch.float32, f"{name}, call {i}")


# 65537: the shifted splits (rmsnorm_bwd_split_smem, layernorm_bwd_split), P a multiple of 8; 8191: the
# storing split with a head tile (rmsnorm_bwd_split, HEAD = true)
@pytest.mark.parametrize("norm,m,n", [("rms", 2048, 8192), ("rms", 40, 65536), ("ln", 4096, 16384), ("rms", 40, 65537),
                                      ("ln", 40, 65537), ("rms", 300, 8191), ("ln", 200, 16383)])
def test_deterministic_gradients(norm, m, n):
    """Under torch.use_deterministic_algorithms(True) the wide-row backwards
    keep one row of partials per cluster, summed in order (by default several
    clusters add to each of 16 rows in the order they finish): the backward
    launches the kernel that sums partial rows, not the take of the rows of
    sums (by default the bits differ only now and then, so equal runs alone
    would not show the mode was taken), three backwards give the same bits,
    and they match torch."""
    g = torch.Generator(device="cuda").manual_seed(m * n)
    x = torch.randn(m, n, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
    w = (torch.rand(n, device="cuda", generator=g) + 0.5).to(torch.bfloat16).requires_grad_()
    dy = torch.randn(m, n, device="cuda", generator=g).to(torch.bfloat16)
    if norm == "rms":
        params, fnk_f = (x, w), lambda: fnt.rms_norm(x, w, 1e-6)
        ref = F.rms_norm(x.float(), (n,), w.float(), 1e-6)
    else:
        b = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
        params, fnk_f = (x, w, b), lambda: fnt.layer_norm(x, (n,), w, b, 1e-5)
        ref = F.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
    want = torch.autograd.grad(ref, params, dy.float())
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        runs = [torch.autograd.grad(fnk_f(), params, dy) for _ in range(3)]
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            torch.autograd.grad(fnk_f(), params, dy)
            torch.cuda.synchronize()
    finally:
        torch.use_deterministic_algorithms(was)
    kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    sums = "rmsnorm_bwd_dw" if norm == "rms" else "layernorm_bwd_dwdb"
    assert any(k.startswith(sums) for k in kernels) and not any("take" in k for k in kernels), kernels
    for name, *got in zip(("dx", "dw", "db"), *runs):
        assert all(torch.equal(got[0], a) for a in got[1:]), f"{name} differs between runs"
    for name, a, e in zip(("dx", "dw", "db"), runs[0], want):
        close(a, e, torch.bfloat16, name)


@pytest.mark.parametrize("norm", ["rms", "ln"])
def test_deterministic_outputs_are_not_filled(norm):
    """Under torch.use_deterministic_algorithms torch.empty fills new memory
    with NaN (torch.utils.deterministic.fill_uninitialized_memory), one more
    pass over each output; fnk.torch's outputs skip it, since fnk kernels
    write every element first. The forward and backward launch fnk kernels
    and no fill, and give the same y and dx as without the mode."""
    m, n = 37, 6000
    g = torch.Generator(device="cuda").manual_seed(11)
    x = torch.randn(m, n, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
    w = (torch.rand(n, device="cuda", generator=g) + 0.5).to(torch.bfloat16).requires_grad_()
    b = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
    dy = torch.randn(m, n, device="cuda", generator=g).to(torch.bfloat16)
    params = (x, w) if norm == "rms" else (x, w, b)

    def run():
        y = fnt.rms_norm(x, w, 1e-6) if norm == "rms" else fnt.layer_norm(x, (n,), w, b, 1e-5)
        return y.detach(), torch.autograd.grad(y, params, dy)[0]

    want = run()
    was, fill = torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        run()  # compiled and cached outside the profile
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            got = run()
            torch.cuda.synchronize()
    finally:
        torch.use_deterministic_algorithms(was)
        torch.utils.deterministic.fill_uninitialized_memory = fill
    kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert any("norm" in k for k in kernels), f"the profile shows no fnk kernel: {kernels}"
    assert not [k for k in kernels if "fill" in k.lower()], f"outputs were filled: {kernels}"
    for name, a, e in zip(("y", "dx"), got, want):
        assert torch.equal(a, e), f"{name} differs with the deterministic mode"


def test_tensor_on_another_device_is_refused():
    """libfnk runs on CUDA device 0: a tensor on another device is refused
    before anything runs, with the parameter and the device named."""
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs two GPUs; this machine has {torch.cuda.device_count()}")
    x = torch.randn(4, 64, device="cuda:1")
    w = torch.ones(64, device="cuda:1")
    with pytest.raises(fnk.ArgumentError, match=r"'x' is on cuda:1, but fnk runs on CUDA device 0"):
        fnt.rms_norm(x, w)


def test_rms_norm_backward_workspace_waits_for_the_other_stream():
    """A backward on a second stream waits for the first stream's last use of
    the shared workspace: stream a is held up by a long kernel before its
    backward, so stream b's backward, launched after it, must not be done
    until a's is. Without that wait b would finish at once, and two backwards
    running together would add into the same rows of sums."""
    m, n = 64, 6000  # rmsnorm_bwd_split_acc's columns (4097-8192)
    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(m, n, device="cuda", generator=g).requires_grad_()
    w = (torch.rand(n, device="cuda", generator=g) + 0.5).requires_grad_()
    dy = torch.randn(m, n, device="cuda", generator=g)
    rdx, rdw = torch.autograd.grad(F.rms_norm(x, (n,), w, 1e-6), (x, w), dy)
    torch.autograd.grad(fnt.rms_norm(x, w, 1e-6), (x, w), dy)  # compiled and loaded before the race
    a, b = torch.cuda.Stream(), torch.cuda.Stream()
    for s in (a, b):
        s.wait_stream(torch.cuda.current_stream())
    torch.cuda.synchronize()
    with torch.cuda.stream(a):
        torch.cuda._sleep(200_000_000)  # ~0.1 s at the H200's clocks
        got_a = torch.autograd.grad(fnt.rms_norm(x, w, 1e-6), (x, w), dy)
    with torch.cuda.stream(b):
        got_b = torch.autograd.grad(fnt.rms_norm(x, w, 1e-6), (x, w), dy)
    time.sleep(0.02)
    assert not a.query(), "the sleep no longer holds stream a: make it longer"
    assert not b.query(), "stream b's backward did not wait for stream a's use of the workspace"
    torch.cuda.synchronize()
    for name, (dx, dw) in (("a", got_a), ("b", got_b)):
        close(dx, rdx, torch.float32, f"dx, stream {name}")
        close(dw, rdw, torch.float32, f"dw, stream {name}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (64, 1000), (4099, 256), (300, 5000), (37, 5120), (2, 5, 8192),
                                   (9, 6144), (4, 20000), (5, 16000), (7, 10240), (3, 65536), (2, 131072),
                                   (3, 100000), (2, 200000), (5, 14000), (6, 40000), (3, 98304), (2, 196608),
                                   # 16-bit rows off alignment (backend v36-v37), as in
                                   # test_rms_norm_matches_torch (16383, 131071: splits with a head tile)
                                   (2, 8191), (3, 5001), (3, 12001), (2, 65537), (2, 98311), (200, 16383),
                                   (20, 131071),
                                   # rows of whole pieces the one-row tile would pad: tiles sized to the row
                                   # (2560, 4608 over 3 x 1536, 7168 in 14 warps: backend v42), the chunks
                                   # forward and the 8192 row backward (6200)
                                   (50, 2560), (41, 4608), (300, 6200), (9, 7168)])
def test_layer_norm_matches_torch(shape, dtype):
    g = torch.Generator(device="cuda").manual_seed(7 + sum(shape))
    n = shape[-1]
    x = (torch.randn(*shape, device="cuda", generator=g) * 2 + 0.3).to(dtype).requires_grad_()
    w = torch.randn(n, device="cuda", generator=g).to(dtype).requires_grad_()
    b = torch.randn(n, device="cuda", generator=g).to(dtype).requires_grad_()
    dy = torch.randn(*shape, device="cuda", generator=g).to(dtype)
    y = fnt.layer_norm(x, (n,), w, b, 1e-5)
    ref = F.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
    close(y, ref, dtype, "y")
    got = torch.autograd.grad(y, (x, w, b), dy)
    want = torch.autograd.grad(ref, (x, w, b), dy.float())
    for name, a, e in zip(("dx", "dw", "db"), got, want):
        close(a, e, dtype, name)


def test_occupancy_of_a_cluster_kernel():
    """What fnk.torch sizes the 16-CTA cluster grids by: the driver's count of
    resident clusters, at least one, and no more than the SMs allow."""
    rms = fnk.load(Path(__file__).resolve().parents[2] / "stdlib" / "norm" / "rmsnorm.fnk")
    o = rms.rmsnorm_fwd_split.occupancy(BLOCK_N=16384, CLUSTER=16, WARPS=16, P=1)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert o["sms"] == sms and o["registers"] > 0 and o["ctas_per_sm"] >= 1
    assert 1 <= o["clusters"] <= o["ctas_per_sm"] * sms // 16
    assert rms.rmsnorm_fwd_row.occupancy()["clusters"] == 0  # no clusters


def test_non_contiguous_input_and_module():
    x = torch.randn(16, 2048, device="cuda")[:, ::2]
    assert not x.is_contiguous()
    m = fnt.RMSNorm(1024).cuda()
    close(m(x), F.rms_norm(x, (1024,), m.weight, 1e-6), torch.float32, "module")
    seq = torch.nn.Sequential(torch.nn.Linear(1024, 1024, device="cuda"), fnt.LayerNorm(1024, device="cuda"))
    seq(torch.randn(4, 1024, device="cuda")).sum().backward()
    assert seq[1].weight.grad is not None and torch.isfinite(seq[1].weight.grad).all()


def test_errors_are_clear():
    x = torch.randn(4, 8, device="cuda")
    with pytest.raises(ValueError, match="normalized size"):
        fnt.rms_norm(x, torch.ones(9, device="cuda"))
    with pytest.raises(TypeError, match="weight is torch.bfloat16 but x is torch.float32"):
        fnt.rms_norm(x, torch.ones(8, device="cuda", dtype=torch.bfloat16))
    mod = fnk.load(Path(__file__).resolve().parents[2] / "stdlib" / "norm" / "rmsnorm.fnk")
    y, r = torch.empty_like(x), torch.empty(4, device="cuda")
    with pytest.raises(fnk.ArgumentError, match="contiguous"):
        mod.rmsnorm_fwd(torch.randn(4, 16, device="cuda")[:, ::2], torch.ones(8, device="cuda"), y, r, eps=1e-6)
    with pytest.raises(fnk.ArgumentError, match="'w'"):
        mod.rmsnorm_fwd(x, torch.ones(9, device="cuda"), y, r, eps=1e-6)
