"""The Python package on the interpreter path: NumPy arrays in, results checked
against float64 NumPy references on ragged shapes, errors as exceptions."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fnk  # noqa: E402
from fnk._lib import c_strings  # noqa: E402
from rowdata import rms_bwd_ref  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RMSNORM = REPO / "stdlib" / "norm" / "rmsnorm.fnk"
LAYERNORM = REPO / "stdlib" / "norm" / "layernorm.fnk"


def rng():
    seed = np.random.SeedSequence().entropy
    print("seed", seed)
    return np.random.default_rng(seed)


@pytest.fixture(scope="module")
def rms():
    return fnk.load(RMSNORM)


@pytest.mark.parametrize("m,n", [(1, 1), (3, 7), (5, 1000), (2, 4096)])
def test_rmsnorm_fwd_f32(rms, m, n):
    r = rng()
    x = r.standard_normal((m, n)).astype(np.float32) + 0.1
    w = r.standard_normal(n).astype(np.float32)
    y = np.full((m, n), np.nan, np.float32)
    rstd = np.full(m, np.nan, np.float32)
    rms.rmsnorm_fwd(x, w, y, rstd, eps=1e-6, BLOCK_N=256)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    ref_r = 1 / np.sqrt((x64 * x64).mean(axis=1) + 1e-6)
    np.testing.assert_allclose(rstd, ref_r, rtol=1e-5)
    np.testing.assert_allclose(y, x64 * ref_r[:, None] * w64, rtol=1e-4, atol=1e-5)


def test_bf16_default_rounds_inputs_and_outputs(rms):
    # T defaults to bf16 when forced: float32 arrays are rounded on the way in and out.
    r = rng()
    x = r.standard_normal((3, 100)).astype(np.float32)
    w = np.ones(100, np.float32)
    y = np.zeros((3, 100), np.float32)
    rstd = np.zeros(3, np.float32)
    rms.rmsnorm_fwd(x, w, y, rstd, eps=1e-6, T="bf16")
    as_bf16 = (y.view(np.uint32) & 0xFFFF) == 0
    assert as_bf16.all(), "outputs of a bf16 kernel must be bf16 values"
    xb = x.view(np.uint32)  # reference on bf16-rounded inputs (round to nearest even)
    xb = ((xb + 0x7FFF + ((xb >> 16) & 1)) & 0xFFFF0000).view(np.float32).astype(np.float64)
    ref = xb / np.sqrt((xb * xb).mean(axis=1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(y, ref, rtol=2 ** -7, atol=1e-6)


def test_dtype_const_follows_arrays(rms):
    # T defaults to bf16; x is float32, so T becomes f32 without being named
    # (with bf16 the result below would be off by ~1e-3, not 1e-6).
    assert "T: dtype = bf16" in rms.rmsnorm_fwd.signature()
    assert "tensor<bf16>" in rms.rmsnorm_fwd.ir()
    x = np.linspace(-1, 1, 14, dtype=np.float32).reshape(2, 7)
    y = np.zeros_like(x)
    rms.rmsnorm_fwd(x, np.ones(7, np.float32), y, np.zeros(2, np.float32), eps=0.0)
    ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True))
    np.testing.assert_allclose(y, ref, rtol=1e-6)


def test_non_contiguous_input_and_keywords(rms):
    r = rng()
    big = r.standard_normal((6, 64)).astype(np.float32)
    x = big[::2, ::2]  # strided view
    assert not x.flags.c_contiguous
    w = r.standard_normal(32).astype(np.float32)
    y = np.zeros((3, 32), np.float32)
    rstd = np.zeros(3, np.float32)
    rms.rmsnorm_fwd(x=x, w=w, y=y, rstd=rstd, eps=1e-5)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_layernorm_fwd_bwd(rms):
    ln = fnk.load(LAYERNORM)
    r = rng()
    m, n, rows = 5, 300, 2
    x = (r.standard_normal((m, n)) * 2 + 0.5).astype(np.float32)
    w = r.standard_normal(n).astype(np.float32)
    b = r.standard_normal(n).astype(np.float32)
    dy = r.standard_normal((m, n)).astype(np.float32)
    y = np.zeros((m, n), np.float32)
    mean, rstd = np.zeros(m, np.float32), np.zeros(m, np.float32)
    ln.layernorm_fwd(x, w, b, y, mean, rstd, eps=1e-5, BLOCK_N=128)
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1)
    rs = 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    xhat = (x64 - mu[:, None]) * rs[:, None]
    np.testing.assert_allclose(y, xhat * w + b, rtol=1e-4, atol=1e-4)
    p = -(-m // rows)
    dx = np.zeros((m, n), np.float32)
    dwp, dbp = np.zeros((p, n), np.float32), np.zeros((p, n), np.float32)
    ln.layernorm_bwd(x, w, dy, mean, rstd, dx, dwp, dbp, BLOCK_N=128)
    dw, db = np.zeros(n, np.float32), np.zeros(n, np.float32)
    ln.layernorm_bwd_dwdb(dwp, dbp, dw, db, BLOCK_N=64, BLOCK_P=2)
    g = dy.astype(np.float64) * w
    ref_dx = rs[:, None] * (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True))
    np.testing.assert_allclose(dx, ref_dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, (dy * xhat).sum(axis=0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, dy.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel,consts", [("layernorm_fwd_staged", dict(WARPS=4, S=3, P=2)),
                                           ("layernorm_fwd_row", dict(WARPS=4)), ("layernorm_fwd_row", dict(WARPS=4, L2=2)),
                                           ("layernorm_fwd_row", dict(WARPS=4, L2=9))])
@pytest.mark.parametrize("m,n,block", [(7, 256, 256), (5, 200, 256), (3, 1, 8)])
def test_layernorm_fwd_one_round_statistics(kernel, consts, m, n, block):
    """The one-round statistics (sums of x - x[row, 0]) of the staged and the
    whole-row forwards stay accurate on rows whose mean is far above their
    spread, full and padded; the whole-row one asking L2 for the row L2 CTAs
    ahead (past the last row: nothing)."""
    r = rng()
    ln = fnk.load(LAYERNORM)
    x = (1000.0 + r.standard_normal((m, n))).astype(np.float32)
    w, b = r.standard_normal(n).astype(np.float32), r.standard_normal(n).astype(np.float32)
    y = np.full((m, n), np.nan, np.float32)
    mean, rstd = np.full(m, np.nan, np.float32), np.full(m, np.nan, np.float32)
    getattr(ln, kernel)(x, w, b, y, mean, rstd, eps=1e-5, T="f32", BLOCK_N=block, **consts)
    x64 = x.astype(np.float64)
    mu, var = x64.mean(axis=1), x64.var(axis=1)
    ref_r = 1 / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(mean, mu, rtol=1e-6)
    np.testing.assert_allclose(rstd, ref_r, rtol=1e-4)
    np.testing.assert_allclose(y, (x64 - mu[:, None]) * ref_r[:, None] * w + b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel", ["ln_fwd_latecopy", "ln_fwd_wsmem", "ln_fwd_2round", "ln_fwd_bstore"])
@pytest.mark.parametrize("m,n,block,s,p", [(7, 256, 256, 2, 3), (11, 200, 256, 3, 2), (5, 256, 256, 4, 2), (2, 9, 16, 3, 4)])
def test_staged_layernorm_forward_variants(kernel, m, n, block, s, p):
    """bench/variants.fnk's staged LayerNorm forwards (the next row's copy
    after the statistics, w and b in shared memory, two reduction rounds, y
    out by bulk stores) against NumPy float64: full and padded rows, rings
    deeper than some CTAs' rows, more CTAs than rows, rows of mean 3."""
    v = fnk.load(REPO / "bench" / "variants.fnk")
    r = rng()
    x = (3.0 + r.standard_normal((m, n))).astype(np.float32)
    w, b = r.standard_normal(n).astype(np.float32), r.standard_normal(n).astype(np.float32)
    y = np.full((m, n), np.nan, np.float32)
    mean, rstd = np.full(m, np.nan, np.float32), np.full(m, np.nan, np.float32)
    getattr(v, kernel)(x, w, b, y, mean, rstd, eps=1e-5, T="f32", BLOCK_N=block, WARPS=4, S=s, P=p)
    x64 = x.astype(np.float64)
    mu, ref_r = x64.mean(axis=1), 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, ref_r, rtol=1e-4)
    np.testing.assert_allclose(y, (x64 - mu[:, None]) * ref_r[:, None] * w + b, rtol=1e-4, atol=1e-4)


def test_ptx_of_an_instance(rms):
    """Kernel.ptx: the instance's PTX in a build with the GPU backend, else a
    CompileError that says the backend is missing; bad consts fail alike."""
    try:
        ptx = rms.rmsnorm_fwd_rows.ptx(BLOCK_N=512, ROWS=8, WARPS=4)
    except fnk.CompileError as e:
        assert "the GPU backend is not part of this build" in str(e)
    else:
        assert ".entry rmsnorm_fwd_rows" in ptx and ".maxntid 128" in ptx and ".target sm_90a" in ptx
    with pytest.raises(fnk.CompileError, match="WARPS|warps"):
        rms.rmsnorm_fwd_rows.ptx(WARPS=64)


def test_occupancy_of_an_instance(rms):
    """Kernel.occupancy: on a GPU, what the driver says (tests/gpu/test_torch.py
    checks the values); without the backend or a driver, a CompileError that
    says which is missing; bad consts fail with the located diagnostic first."""
    try:
        o = rms.rmsnorm_fwd_split.occupancy(BLOCK_N=4096, CLUSTER=2, WARPS=4, P=1)
    except fnk.CompileError as e:
        assert "the GPU backend is not part of this build" in str(e) or "no CUDA driver" in str(e)
    else:
        assert set(o) == {"registers", "local_bytes", "ctas_per_sm", "clusters", "sms"} and o["clusters"] >= 1
    with pytest.raises(fnk.CompileError, match="warps must be between 1 and 32"):
        rms.rmsnorm_fwd_split.occupancy(WARPS=64, P=1)


def test_compile_error_carries_located_diagnostic():
    with pytest.raises(fnk.CompileError) as e:
        fnk.compile("kernel k(x: tensor<f32>[N]) {\n    let a = arange(0, 4) + arange(0, 8);\n}\n", name="bad.fnk")
    msg = str(e.value)
    assert "bad.fnk:2:" in msg and ": error:" in msg and "do not broadcast" in msg and "^" in msg


def test_argument_errors_name_the_parameter(rms):
    x = np.ones((2, 8), np.float32)
    with pytest.raises(fnk.ArgumentError, match="'w'"):
        rms.rmsnorm_fwd(x, np.ones(9, np.float32), np.zeros((2, 8), np.float32), np.zeros(2, np.float32), eps=1.0)
    with pytest.raises(fnk.ArgumentError, match="missing"):
        rms.rmsnorm_fwd(x, eps=1.0)
    with pytest.raises(fnk.ArgumentError, match="no parameter or const 'epsilon'"):
        rms.rmsnorm_fwd(x, x, x, x, epsilon=1.0)
    with pytest.raises(fnk.ArgumentError, match="read-only"):
        y = np.zeros((2, 8), np.float32)
        y.flags.writeable = False
        rms.rmsnorm_fwd(x, np.ones(8, np.float32), y, np.zeros(2, np.float32), eps=1.0)
    with pytest.raises(AttributeError, match="no kernel 'nope'"):
        rms.nope


def test_instance_words_are_checked(rms):
    """fnk_instance_run (api/fnk.h) reads its arguments from one array of
    words; words that end early, run on, or hold a bad dtype code or rank are
    refused with a message, and well-formed words run the kernel."""
    import ctypes
    from fnk import _lib
    kernel = rms.rmsnorm_fwd
    inst = kernel._instance({"T": "f32"})
    assert inst == kernel._instance({"T": "f32"})  # one handle per instance
    x, w = np.arange(16, dtype=np.float32).reshape(2, 8) + 1, np.ones(8, np.float32)
    y, rstd = np.full((2, 8), np.nan, np.float32), np.full(2, np.nan, np.float32)

    def tensor(a, code=_lib.DTYPE_CODES["f32"], rank=None):
        rank = a.ndim if rank is None else rank
        return [a.ctypes.data, code, rank, *a.shape[:rank], *(s // a.itemsize for s in a.strides[:rank])]

    good = tensor(x) + tensor(w) + tensor(y) + tensor(rstd) + [fnk._double_bits(1e-6)]

    def run(words):
        err = ctypes.c_void_p()
        cw = (ctypes.c_int64 * max(1, len(words)))(*words)
        rc = _lib.lib.fnk_instance_run(inst, cw, len(words), 0, None, ctypes.byref(err))
        return rc, _lib.take_string(err.value)

    assert run(good) == (0, None)
    ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6)
    assert np.allclose(y, ref, rtol=1e-5)
    for words, msg in [(good[:-1], "do not match"), (good + [0], "do not match"), (good[:3], "do not match"),
                       ([], "do not match"),
                       (tensor(x, code=99) + good[len(tensor(x)):], "unknown dtype code 99"),
                       (tensor(x, code=-1) + good[len(tensor(x)):], "unknown dtype code -1"),
                       ([x.ctypes.data, 0, 9] + good[3:], "bad rank 9"),
                       ([x.ctypes.data, 0, -1] + good[3:], "bad rank -1")]:
        rc, err = run(words)
        assert rc == 1 and msg in err, (words, err)
    err = ctypes.c_void_p()
    assert _lib.lib.fnk_instance_run(None, None, 0, 0, None, ctypes.byref(err)) == 1
    assert "null instance" in _lib.take_string(err.value)
    with pytest.raises(fnk.CompileError):
        kernel._instance({"T": "f32", "BLOCK_N": "0x"})


def test_named_arguments_through_fnk_run(rms):
    """fnk_run (api/fnk.h), the C entry that binds arguments by name (the
    package itself calls fnk_instance_run): arguments in any order run the
    kernel, and a wrong name or a missing argument is refused by name."""
    import ctypes
    from fnk import _lib

    class Tensor(ctypes.Structure):  # fnk_tensor
        _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_char_p), ("rank", ctypes.c_int32),
                    ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64))]

    class Arg(ctypes.Structure):  # fnk_arg
        _fields_ = [("name", ctypes.c_char_p), ("is_tensor", ctypes.c_int32), ("tensor", Tensor),
                    ("scalar", ctypes.c_double)]

    x, w = np.arange(16, dtype=np.float32).reshape(2, 8) + 1, np.linspace(0.5, 2, 8).astype(np.float32)
    y, rstd = np.full((2, 8), np.nan, np.float32), np.full(2, np.nan, np.float32)
    keep = []

    def tensor(name, a):
        shape = (ctypes.c_int64 * a.ndim)(*a.shape)
        keep.append(shape)  # strides NULL: row-major
        return Arg(name.encode(), 1, Tensor(a.ctypes.data, b"f32", a.ndim, shape, None), 0.0)

    def run(args):
        arr = (Arg * len(args))(*args)
        names, values = c_strings(["T"]), c_strings(["f32"])
        err = ctypes.c_void_p()
        rc = _lib.lib.fnk_run(ctypes.c_void_p(rms._handle), b"rmsnorm_fwd", names, values, 1, arr, len(args), 0, None,
                              ctypes.byref(err))
        return rc, _lib.take_string(err.value)

    eps = Arg(b"eps", 0, Tensor(), 1e-6)
    assert run([eps, tensor("rstd", rstd), tensor("y", y), tensor("w", w), tensor("x", x)]) == (0, None)
    ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(y, ref, rtol=1e-5)
    rc, err = run([eps, tensor("rstd", rstd), tensor("y", y), tensor("w", w), tensor("z", x)])
    assert rc == 1 and "'z'" in err, err
    rc, err = run([eps, tensor("rstd", rstd), tensor("y", y), tensor("w", w)])
    assert rc == 1 and "'x'" in err, err


def test_torch_tensor_on_another_device_is_refused(rms):
    """libfnk runs on CUDA device 0: a torch tensor elsewhere is refused by
    name before anything runs (here a stand-in with what the package reads of
    a torch tensor; tests/gpu/test_torch.py has the real one on two GPUs)."""
    class Tensor:
        __module__ = "torch"

        def __init__(self, device):
            self.device_index = device

        def get_device(self):
            return self.device_index

    with pytest.raises(fnk.ArgumentError, match="'x' is on cuda:1, but fnk runs on CUDA device 0"):
        rms.rmsnorm_fwd(Tensor(1), Tensor(1), Tensor(1), Tensor(1), eps=1.0)
    with pytest.raises(fnk.ArgumentError, match="'x' is a CPU torch tensor"):
        rms.rmsnorm_fwd(Tensor(-1), Tensor(0), Tensor(0), Tensor(0), eps=1.0)


def test_load_errors():
    with pytest.raises(fnk.CompileError, match="cannot read"):
        fnk.load("/nonexistent/file.fnk")


@pytest.mark.parametrize("m,n,cluster,block", [(3, 1000, 4, 256), (5, 64, 2, 32), (2, 7, 4, 2), (4, 300, 16, 32)])
def test_rmsnorm_split_rows_over_a_cluster(rms, m, n, cluster, block):
    r = rng()
    x = r.standard_normal((m, n)).astype(np.float32)
    w = r.standard_normal(n).astype(np.float32)
    dy = r.standard_normal((m, n)).astype(np.float32)
    y, rstd = np.full((m, n), np.nan, np.float32), np.full(m, np.nan, np.float32)
    x64 = x.astype(np.float64)
    rr = 1 / np.sqrt((x64 ** 2).mean(axis=1) + 1e-6)
    for p in (1, 2, 128):  # P clusters walk the rows
        y[:], rstd[:] = np.nan, np.nan
        rms.rmsnorm_fwd_split(x, w, y, rstd, eps=1e-6, BLOCK_N=block, CLUSTER=cluster, P=p)
        np.testing.assert_allclose(y, x64 * rr[:, None] * w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(rstd, rr, rtol=1e-6)
    g = dy * w.astype(np.float64)
    r32 = rstd.astype(np.float64)
    ref = g * r32[:, None] - x64 * ((g * x64).sum(axis=1) * r32 ** 3 / n)[:, None]
    for kernel in (rms.rmsnorm_bwd_split, rms.rmsnorm_bwd_split_smem):
        dx, part, dw = np.full((m, n), np.nan, np.float32), np.zeros((3, n), np.float32), np.zeros(n, np.float32)
        kernel(x, w, dy, rstd, dx, part, BLOCK_N=block, CLUSTER=cluster)
        rms.rmsnorm_bwd_dw(part, dw)
        np.testing.assert_allclose(dx, ref, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(dw, (dy * x64 * r32[:, None]).sum(axis=0), rtol=1e-4, atol=1e-5)


def test_split_requires_the_row_to_fit(rms):
    x = np.ones((2, 100), np.float32)
    with pytest.raises(fnk.ArgumentError, match="N <= CLUSTER \\* BLOCK_N"):
        rms.rmsnorm_fwd_split(x, np.ones(100, np.float32), np.zeros_like(x), np.zeros(2, np.float32), eps=1.0,
                              BLOCK_N=16, CLUSTER=4)


def test_fma_broadcasts_promotes_and_rounds_once():
    mod = fnk.compile("""
kernel k(a: tensor<f32>[N], c: tensor<f32>[M, N], y: out tensor<f32>[M, N], z: out tensor<i32>[N]) launch(grid = 1) {
    let i = arange(0, 8);
    let rows = arange(0, 4);
    store(y[rows[:, None], i[None, :]], fma(load(a[i]), 3, load(c[rows[:, None], i[None, :]])));
    store(z[i], fma(i, 3, 1));
}
""", name="fma.fnk")
    r = rng()
    a = r.standard_normal(8).astype(np.float32)
    c = r.standard_normal((4, 8)).astype(np.float32)
    y, z = np.zeros((4, 8), np.float32), np.zeros(8, np.int32)
    mod.k(a, c, y, z)
    exact = a.astype(np.float64) * 3 + c.astype(np.float64)
    np.testing.assert_array_equal(y, exact.astype(np.float32))  # one rounding: the f32 nearest the exact value
    np.testing.assert_array_equal(z, np.arange(8) * 3 + 1)


def test_atomics_in_the_interpreter():
    """atomic_add: repeated indices add up, masked and out-of-bounds elements
    are skipped, the tensor's contents on entry count (it is not poisoned
    like other outputs), the old values come back, and the CTA that takes
    the last ticket sees every other CTA's additions (tests/gpu/lang.fnk's
    lang_atomic; the GPU runs the same kernel in tests/gpu/cases.py)."""
    m = fnk.load(REPO / "tests" / "gpu" / "lang.fnk")
    r = np.random.default_rng(3)
    M, G, NB = 13, 4, 16
    x = r.standard_normal((M, 64)).astype(np.float32)
    bins = r.integers(0, NB, (M, 64)).astype(np.int32)
    hist = np.full(NB, 0.5, np.float32)  # the contents on entry count
    count, total = np.zeros(NB, np.int32), np.zeros(1, np.float32)
    ticket, mean, seen = np.zeros(1, np.int32), np.zeros(1, np.float32), np.zeros(G, np.int32)
    m.lang_atomic(x, bins, hist, count, total, ticket, mean, seen)
    ref = np.full(NB, 0.5)
    np.add.at(ref, bins, x.astype(np.float64))
    np.testing.assert_allclose(hist, ref, rtol=1e-5, atol=1e-5)
    assert (count == np.bincount(bins.ravel(), minlength=NB)).all()
    assert ticket[0] == G and list(seen) == [256, 256, 256, 64]
    np.testing.assert_allclose(total[0], x.sum(dtype=np.float64), rtol=1e-5)
    np.testing.assert_allclose(mean[0], x.mean(dtype=np.float64), rtol=1e-5)


def test_ctas_that_wait_for_each_other():
    """wait_ge and atomic_add(release = true) (tests/gpu/lang.fnk's
    lang_wait; the GPU runs it in tests/gpu/cases.py): suffix sums of the
    blocks passed down a chain that starts at the last CTA, then a grid-wide
    barrier after which every CTA reads the total; one CTA and many."""
    m = fnk.load(REPO / "tests" / "gpu" / "lang.fnk")
    r = np.random.default_rng(5)
    for n in (100, 1000, 10000):
        G = -(-n // 256)
        x = (r.standard_normal(n) + 2.0).astype(np.float32)
        suffix, flag = np.zeros(G, np.float32), np.zeros(G, np.int32)
        total, arrived = np.zeros(1, np.float32), np.zeros(1, np.int32)
        y, z = np.zeros(n, np.float32), np.zeros(n, np.float32)
        m.lang_wait(x, suffix, flag, total, arrived, y, z)
        blocks = np.array([x[i * 256:(i + 1) * 256].astype(np.float64).sum() for i in range(G)])
        ref_suffix = np.cumsum(blocks[::-1])[::-1]
        after = np.repeat(np.append(ref_suffix[1:], 0.0), 256)[:n]
        np.testing.assert_allclose(suffix, ref_suffix, rtol=1e-5)
        np.testing.assert_allclose(y, x + after, rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(z, x / x.astype(np.float64).sum(), rtol=1e-5)
        assert (flag == 1).all() and arrived[0] == G


def test_a_wait_no_cta_ends_is_reported():
    """A grid whose every CTA waits for more than all of them add is a
    deadlock the interpreter names instead of hanging on."""
    m = fnk.load(REPO / "tests" / "lit" / "fnk_run" / "Inputs" / "waits.fnk")
    x, count, y = np.ones(200, np.float32), np.zeros(1, np.int32), np.zeros(200, np.float32)
    with pytest.raises(fnk.FnkError, match=r"deadlock: every CTA still running waits .* >= 5, which holds 4"):
        m.wait_deadlock(x, count, y)


def test_contiguous_atomic_adds():
    """tests/gpu/lang.fnk's lang_red (the vector-red path on the GPU):
    adds over ragged, masked and shifted rows onto nonzero contents."""
    m = fnk.load(REPO / "tests" / "gpu" / "lang.fnk")
    r = np.random.default_rng(4)
    for M, N in ((7, 250), (5, 257), (8, 256)):
        x = r.standard_normal((M, N)).astype(np.float32)
        acc = r.standard_normal((M, N)).astype(np.float32)
        colsum = r.standard_normal(N).astype(np.float32)
        xt = np.where(np.arange(N) < 256, x.astype(np.float64), 0.0)  # the tile's 256 columns
        ref = acc.astype(np.float64) + xt
        ref += np.where(np.arange(N) % 8 < 4, 2.0 * xt, 0.0)
        ref[:, 1:] += xt[:, :-1]
        ref_cs = colsum.astype(np.float64) + xt.sum(0)
        m.lang_red(x, acc, colsum)
        np.testing.assert_allclose(acc, ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(colsum, ref_cs, rtol=1e-5, atol=1e-5)


def test_copy_async_in_the_interpreter():
    """tests/gpu/lang.fnk's lang_copy_async and lang_pipeline against NumPy:
    ragged rows, a masked and shifted copy (zeros where masked off or past
    the end), and an S-stage ring whose copies retire S - 1 behind."""
    m = fnk.load(REPO / "tests" / "gpu" / "lang.fnk")
    r = np.random.default_rng(5)
    for M, N in ((3, 500), (2, 512), (1, 7)):
        x = r.standard_normal((M, N)).astype(np.float32)
        y = np.zeros((M, N), np.float32)
        m.lang_copy_async(x, y)
        shifted = np.zeros((M, N))
        shifted[:, :-1] = x[:, 1:]
        shifted[:, np.arange(N) % 3 == 0] = 0.0
        np.testing.assert_allclose(y, 2.0 * x + shifted, rtol=1e-6, atol=1e-6)
    for M, N, S in ((9, 300, 3), (1, 256, 2), (5, 40, 4)):
        x = r.standard_normal((M, N)).astype(np.float32)
        y = np.zeros(N, np.float32)
        m.lang_pipeline(x, y, S=S)
        np.testing.assert_allclose(y, x.sum(0, dtype=np.float64), rtol=1e-5, atol=1e-5)


def test_copy_async_read_before_its_wait_sees_the_old_contents():
    """The interpreter writes a copy's destination at the wait that retires
    it (the latest point the GPU may): reading the buffer earlier is a race,
    and here it reads what was there before."""
    k = fnk.compile("""
kernel k(x: tensor<f32>[N], y: out tensor<f32>[N, 2]) launch(grid = 1, warps = 1) {
    let i = arange(0, 32);
    let buf = shared<f32>[32];
    store(buf[i], zeros(32) - 1.0);
    barrier();
    copy_async(buf[i], x[i]);
    store(y[i, 0], load(buf[i]));
    wait_async();
    barrier();
    store(y[i, 1], load(buf[i]));
}
""", name="race.fnk")
    x = np.arange(32, dtype=np.float32)
    y = np.zeros((32, 2), np.float32)
    k.k(x, y)
    assert (y[:, 0] == -1).all() and (y[:, 1] == x).all()


def test_copy_bulk_in_the_interpreter():
    """tests/gpu/lang.fnk's lang_bulk (an S-stage ring of rows filled by
    copy_bulk, each row weighted by its index) against NumPy: a ragged last
    block and a shifted source read zeros past the row's end."""
    m = fnk.load(REPO / "tests" / "gpu" / "lang.fnk")
    r = np.random.default_rng(6)
    for M, N, S, shift in ((9, 300, 3, 0), (1, 256, 2, 0), (6, 700, 3, 3), (2, 512, 5, 0)):
        x = r.standard_normal((M, N)).astype(np.float32)
        y = np.full(N, np.nan, np.float32)
        m.lang_bulk(x, y, S=S, SHIFT=shift)
        xs = np.zeros((M, N + 512))
        xs[:, :N] = x
        ref = ((np.arange(M) + 1.0)[:, None] * xs[:, shift:shift + N]).sum(0)
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


BULK_RULES = """
kernel k<MODE: int = 0>(x: tensor<f32>[N], y: out tensor<f32>[N]) launch(grid = 1, warps = 1) {
    let i = arange(0, 32);
    let buf = shared<f32>[2, 32];
    store(buf[0, i], zeros(32) - 1.0);
    if MODE != 1 {
        copy_bulk(buf[0, i], x[i]);
    }
    if MODE == 2 {
        copy_bulk(buf[0, i], x[i]);
    }
    store(y[i], load(buf[0, i]));
    if MODE != 3 {
        wait_bulk(buf[0, i]);
    }
    if MODE == 4 {
        wait_bulk(buf[1 + N, i]);
    }
}
"""


def test_copy_bulk_lands_at_its_wait_and_misuse_is_an_error():
    """A bulk copy writes its slot at the wait_bulk on it (a read before sees
    the old contents); a wait with no copy in flight (on the GPU it would never
    end), a second copy into a slot whose copy is in flight, a copy never
    waited for and a slot out of range are errors naming the slot."""
    k = fnk.compile(BULK_RULES, name="bulk.fnk")
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    k.k(x, y)
    assert (y == -1).all()
    for mode, message in ((1, "has no copy_bulk in flight"), (2, "while its previous copy_bulk is in flight"),
                          (3, "never waited for (wait_bulk)"), (4, "slot index 33 is out of range for dim 0")):
        with pytest.raises(fnk.FnkError, match=re.escape(message)):
            k.k(x, y, MODE=mode)


def test_store_bulk_in_the_interpreter():
    """tests/gpu/lang.fnk's lang_bulk_store (rows scaled by their index + 1,
    through a ring of shared slots, out by store_bulk) against NumPy: ragged
    last blocks store nothing past N, shifted runs read further into the slot."""
    m = fnk.load(REPO / "tests" / "gpu" / "lang.fnk")
    r = np.random.default_rng(8)
    for M, N, R, shift in ((9, 300, 2, 0), (3, 256, 1, 0), (6, 700, 2, 3), (4, 257, 3, 8)):
        x = r.standard_normal((M, N)).astype(np.float32)
        y = np.full((M, N), np.nan, np.float32)
        m.lang_bulk_store(x, y, R=R, SHIFT=shift)
        np.testing.assert_allclose(y, x * (np.arange(M) + 1.0)[:, None], rtol=1e-6)


BULK_STORE_RULES = """
kernel k<MODE: int = 0>(x: tensor<f32>[N], y: out tensor<f32>[N]) launch(grid = 1, warps = 1) {
    let i = arange(0, 32);
    let buf = shared<f32>[2, 32];
    store(buf[0, i], load(x[i]) * 2.0);
    if MODE == 4 {
        copy_bulk(buf[0, i], x[i]);
    }
    if MODE == 5 {
        copy_async(buf[0, i], x[i]);
    }
    store_bulk(y[i], buf[0, i]);
    if MODE == 1 {
        store(buf[0, i], zeros(32));
    }
    if MODE == 3 {
        copy_bulk(buf[0, i], x[i]);
    }
    if MODE != 2 {
        wait_bulk_stores();
    }
    if MODE == 3 || MODE == 4 {
        wait_bulk(buf[0, i]);
    }
    if MODE == 5 {
        wait_async();
    }
}
"""


def test_store_bulk_writes_at_once_and_misuse_is_an_error():
    """A bulk store writes the tensor when it runs; writing its slot before
    wait_bulk_stores (a store or a copy into it: on the GPU the copy may not
    have read it yet), storing from a slot a copy_bulk or copy_async is
    still filling, and ending the kernel with a store still reading its slot
    are errors."""
    k = fnk.compile(BULK_STORE_RULES, name="bulk_store.fnk")
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    k.k(x, y)
    np.testing.assert_array_equal(y, 2 * x)
    for mode, message in ((1, "tile.store: writes slot 0 of the shared buffer"),
                          (2, "the kernel ended with a store_bulk from slot 0"),
                          (3, "while a store_bulk still reads it; wait_bulk_stores first"),
                          (4, "while a copy_bulk into it is in flight; wait_bulk on the slot first"),
                          (5, "while a copy_async into it is in flight; wait_async first")):
        with pytest.raises(fnk.FnkError, match=re.escape(message)):
            k.k(x, y, MODE=mode)


def test_atomic_add_returns_the_old_values():
    k = fnk.compile("""
kernel k(c: out tensor<i32>[N], old: out tensor<i32>[N, 4]) launch(grid = 1) {
    let i = arange(0, 4);
    store(old[0, i], atomic_add(c[i * 0], 1));
    store(old[1, i], atomic_add(c[i], 10, mask = i < 2));
    store(old[2, i], atomic_add(c[i + N - 1], 100));
}
""", name="old.fnk")
    c = np.array([1, 2, 3], np.int32)
    old = np.zeros((3, 4), np.int32)
    k.k(c, old)
    assert old.tolist() == [[1, 2, 3, 4], [5, 2, 0, 0], [3, 0, 0, 0]]
    assert c.tolist() == [15, 12, 103]


def test_backward_through_a_shared_memory_ring():
    """bench/variants.fnk's rms_bwd_ring (x and dy staged by copy_async in an
    S-stage ring) against NumPy, for rings longer than some CTAs' row count."""
    v = fnk.load(REPO / "bench" / "variants.fnk")
    r = np.random.default_rng(6)
    for M, N, P, S in ((37, 1000, 5, 3), (9, 700, 4, 4), (3, 64, 2, 2)):
        x, w, dy = (r.standard_normal(s).astype(np.float32) for s in ((M, N), N, (M, N)))
        rstd = (1 / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1) + 1e-6)).astype(np.float32)
        ref_dx, ref_dw = rms_bwd_ref(x, w, dy, rstd)
        dx, part = np.full_like(x, np.nan), np.full((P, N), np.nan, np.float32)
        v.rms_bwd_ring(x, w, dy, rstd, dx, part, BLOCK_N=1024, WARPS=4, S=S, T="f32")
        np.testing.assert_allclose(dx, ref_dx, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(part.sum(axis=0), ref_dw, rtol=1e-4, atol=1e-4)


def test_cluster_split_rings():
    """bench/variants.fnk's rms_fwd_split_ring and rms_bwd_split_ring (rows
    staged ahead in shared memory by copy_async, rows split over a cluster of
    4) against NumPy, with fewer rows than ring stages for some clusters."""
    v = fnk.load(REPO / "bench" / "variants.fnk")
    r = np.random.default_rng(7)
    M, N, P = 7, 1000, 3
    x, w, dy = (r.standard_normal(s).astype(np.float32) for s in ((M, N), N, (M, N)))
    x64 = x.astype(np.float64)
    rstd = 1 / np.sqrt((x64 ** 2).mean(axis=1) + 1e-6)
    y, rs = np.full_like(x, np.nan), np.full(M, np.nan, np.float32)
    v.rms_fwd_split_ring(x, w, y, rs, 1e-6, BLOCK_N=256, CLUSTER=4, WARPS=2, S=3, P=P, T="f32")
    np.testing.assert_allclose(y, x64 * rstd[:, None] * w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(rs, rstd, rtol=1e-5)
    rstd32 = rstd.astype(np.float32)
    ref_dx, ref_dw = rms_bwd_ref(x, w, dy, rstd32)
    dx, part = np.full_like(x, np.nan), np.full((P, N), np.nan, np.float32)
    v.rms_bwd_split_ring(x, w, dy, rstd32, dx, part, BLOCK_N=256, CLUSTER=4, WARPS=2, S=2, T="f32")
    np.testing.assert_allclose(dx, ref_dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(part.sum(axis=0), ref_dw, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n,p,r_,block,cluster", [(7, 1000, 3, 2, 256, 4), (2, 300, 5, 4, 128, 4),
                                                     (40, 8192, 16, 16, 4096, 2), (9, 77, 4, 3, 64, 2)])
def test_split_backward_into_rows_of_sums(rms, m, n, p, r_, block, cluster):
    """stdlib rmsnorm_bwd_split_acc (each CTA's dw partial added into row p % R
    of dw_acc) then rmsnorm_bwd_dw_take (dw = the R rows' sums, dw_acc back at
    zero) against NumPy float64, twice on the same workspace: the second call
    must see zeros. Clusters with no row (p > m), ragged rows, R not dividing P."""
    r = rng()
    acc = np.zeros((r_, n), np.float32)
    for _ in range(2):
        x, w, dy = (r.standard_normal(s).astype(np.float32) for s in ((m, n), n, (m, n)))
        rstd = (1 / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1) + 1e-6)).astype(np.float32)
        ref_dx, ref_dw = rms_bwd_ref(x, w, dy, rstd)
        dx, dw = np.full_like(x, np.nan), np.full(n, np.nan, np.float32)
        rms.rmsnorm_bwd_split_acc(x, w, dy, rstd, dx, acc, BLOCK_N=block, CLUSTER=cluster, WARPS=2, P=p, T="f32")
        np.testing.assert_allclose(dx, ref_dx, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(acc.sum(axis=0), ref_dw, rtol=1e-4, atol=1e-4)
        rms.rmsnorm_bwd_dw_take(acc, dw, T="f32")
        np.testing.assert_allclose(dw, ref_dw, rtol=1e-4, atol=1e-4)
        assert not acc.view(np.uint32).any(), "rmsnorm_bwd_dw_take leaves dw_acc at +0.0"


@pytest.mark.parametrize("m,n,cluster,block,p,ws", [(5, 1000, 2, 512, 3, 0), (7, 300, 4, 128, 2, 1),
                                                     (4, 2049, 2, 1100, 4, 1), (3, 64, 4, 16, 5, 0)])
def test_layernorm_split_backward(m, n, cluster, block, p, ws):
    """stdlib layernorm_bwd_split_acc (dw and db summed in shared memory, w's
    slice there too with WS = 1; the row's two cluster sums) then
    layernorm_bwd_dwdb_take against NumPy float64: dx, dw and db, the sums
    left at +0.0; clusters with no row, ragged rows."""
    ln = fnk.load(LAYERNORM)
    r = rng()
    x = (r.standard_normal((m, n)) + 0.5).astype(np.float32)
    w, dy = r.standard_normal(n).astype(np.float32), r.standard_normal((m, n)).astype(np.float32)
    x64 = x.astype(np.float64)
    mu, r64 = x64.mean(axis=1), 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    dx, dw, db = np.full_like(x, np.nan), np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    accs = [np.zeros((3, n), np.float32) for _ in range(2)]
    ln.layernorm_bwd_split_acc(x, w, dy, mu.astype(np.float32), r64.astype(np.float32), dx, *accs, BLOCK_N=block,
                               CLUSTER=cluster, WARPS=2, P=p, WS=ws, T="f32")
    ln.layernorm_bwd_dwdb_take(*accs, dw, db, T="f32")
    xhat = (x64 - mu[:, None]) * r64[:, None]
    g = dy * w.astype(np.float64)
    ref = r64[:, None] * (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True))
    np.testing.assert_allclose(dx, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, (dy * xhat).sum(axis=0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, dy.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-4)
    assert not any(a.view(np.uint32).any() for a in accs), "layernorm_bwd_dwdb_take leaves the sums at +0.0"


def test_cluster_reductions_pushed_together():
    """tests/gpu/lang.fnk's lang_cluster_siblings (three f32 cluster sums of
    three kinds that the GPU pushes together, and an i32 count) against NumPy:
    clusters of 4 rows, the second one's last two rows past G reading zeros."""
    m = fnk.load(REPO / "tests" / "gpu" / "lang.fnk")
    x = rng().standard_normal((6, 64)).astype(np.float32)
    s, c = np.full((6, 9), np.nan, np.float32), np.full((6, 3), -7, np.int32)
    m.lang_cluster_siblings(x, s, c)
    xp = np.concatenate([x, np.zeros((2, 64), np.float32)])
    for g in range(6):
        rows = xp[(g // 4) * 4:(g // 4) * 4 + 4]
        for k in range(3):
            np.testing.assert_allclose(s[g, 3 * k], (rows.astype(np.float64) * (k + 1)).sum(), rtol=1e-5, atol=1e-5)
            assert s[g, 3 * k + 1] == rows.max()
            np.testing.assert_allclose(s[g, 3 * k + 2], rows.min() - k, rtol=1e-6)
            assert c[g, k] == (rows > 0).sum() + k


@pytest.mark.parametrize("n", [512, 300])
def test_cluster_reduce_of_warp_partials(n):
    """tests/gpu/lang.fnk's lang_warp_push (CTA sums whose one use is a
    cluster.reduce, which the GPU pushes warp by warp: a sum beside a max, and
    a grouped sum of squares) against float64, on whole and ragged rows."""
    lang = fnk.load(REPO / "tests" / "gpu" / "lang.fnk")
    x = rng().standard_normal((8, n)).astype(np.float32)
    s = np.full((8, 9), np.nan, np.float32)
    lang.lang_warp_push(x, s)
    x64 = x.astype(np.float64)
    cluster, pair = np.arange(8) // 4 * 4, np.arange(8) // 2 * 2
    sums, squares, peaks = x64.sum(axis=1), (x64 * x64).sum(axis=1), x64.max(axis=1)
    for k in range(3):
        np.testing.assert_allclose(s[:, 3 * k], sum(sums[cluster + i] for i in range(4)) * (k + 1), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(s[:, 3 * k + 1], np.max([peaks[cluster + i] for i in range(4)], axis=0) - k, rtol=1e-6)
        np.testing.assert_allclose(s[:, 3 * k + 2], squares[pair] + squares[pair + 1], rtol=1e-5)


def test_stream_changes_no_result():
    """tests/gpu/lang.fnk's lang_stream (loads and stores with stream = true
    and keep = true, cache hints on the GPU) against NumPy, on whole and
    ragged rows."""
    m = fnk.load(REPO / "tests" / "gpu" / "lang.fnk")
    for n in (1024, 1000):
        x = rng().standard_normal((5, n)).astype(np.float32)
        y = np.full_like(x, np.nan)
        m.lang_stream(x, y)
        np.testing.assert_array_equal(y, np.where(x > -0.5, x * np.float32(3) + np.float32(1), x * np.float32(2)))


def test_split_backward_into_no_rows_is_refused(rms):
    """A dw_acc without rows would make every CTA's row index p % 0: the
    launch requirement refuses it before anything runs, and names R."""
    x = np.ones((4, 100), np.float32)
    with pytest.raises(fnk.ArgumentError, match=r"R >= 1.*R = 0"):
        rms.rmsnorm_bwd_split_acc(x, x[0], x, np.ones(4, np.float32), np.empty_like(x), np.zeros((0, 100), np.float32),
                                  BLOCK_N=64, CLUSTER=2, WARPS=1, P=2, T="f32")


@pytest.mark.parametrize("kernel,consts", [("rms_bwd_split_l2pipe", {}), ("rms_bwd_split_bulk", {"S": 2})])
def test_cluster_split_backward_variants(kernel, consts):
    """bench/variants.fnk's split backwards against NumPy, rows split over a
    cluster of 4, clusters with one row, several rows and none:
    rms_bwd_split_l2pipe (the next row's partial dot between this row's
    cluster push and its sum's use; x and dy read again for dx) and
    rms_bwd_split_bulk (x and dy a row ahead in a two-slot ring of bulk
    copies, dw in shared memory)."""
    v = fnk.load(REPO / "bench" / "variants.fnk")
    r = np.random.default_rng(8)
    for M, N, P in ((7, 1000, 3), (2, 300, 3), (5, 1024, 1)):
        x, w, dy = (r.standard_normal(s).astype(np.float32) for s in ((M, N), N, (M, N)))
        rstd = (1 / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1) + 1e-6)).astype(np.float32)
        ref_dx, ref_dw = rms_bwd_ref(x, w, dy, rstd)
        dx, part = np.full_like(x, np.nan), np.full((P, N), np.nan, np.float32)
        getattr(v, kernel)(x, w, dy, rstd, dx, part, BLOCK_N=256, CLUSTER=4, WARPS=2, **consts, T="f32")
        np.testing.assert_allclose(dx, ref_dx, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(part.sum(axis=0), ref_dw, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("b_,s,h,block,sb,l2", [(3, 7, 24, 32, 4, 0), (2, 5, 16, 16, 6, 0), (4, 2, 30, 32, 4, 0),
                                                (2, 9, 20, 32, 3, 0), (3, 7, 24, 32, 2, 2), (2, 9, 20, 32, 3, 1)])
def test_dit_backward_in_one_kernel(b_, s, h, block, sb, l2):
    """examples/dit_modulate.fnk's backward (dx; then each batch's last CTA
    reads the sums its CTAs added, and the last batch writes dw and db)
    against NumPy float64, twice on the same workspace: its tickets and sums
    must be back at zero after each call. Padded rows, more CTAs than rows;
    with rows L2 steps ahead prefetched (past the batch's end: nothing)."""
    k = fnk.load(REPO / "examples" / "dit_modulate.fnk").dit_modulate_bwd
    r = rng()
    x = r.standard_normal((b_, s, h)).astype(np.float32)
    w, bias = r.standard_normal(h).astype(np.float32), r.standard_normal(h).astype(np.float32)
    scale = (0.1 * r.standard_normal((b_, h))).astype(np.float32)
    dy = r.standard_normal((b_, s, h)).astype(np.float32)
    x64 = x.astype(np.float64)
    mean, rstd = x64.mean(axis=2), 1 / np.sqrt(x64.var(axis=2) + 1e-5)
    xh = (x64 - mean[..., None]) * rstd[..., None]
    sc = 1 + scale.astype(np.float64)
    g = dy * sc[:, None, :] * w
    dx_ref = rstd[..., None] * (g - g.mean(-1, keepdims=True) - xh * (g * xh).mean(-1, keepdims=True))
    s0, s1 = dy.sum(axis=1, dtype=np.float64), (dy * xh).sum(axis=1)
    accb, acc, ticket = np.zeros((b_, 2, h), np.float32), np.zeros((2, h), np.float32), np.zeros(b_ + 1, np.int32)
    for _ in range(2):
        dx = np.full_like(x, np.nan)
        dscale, dshift = np.full((b_, h), np.nan, np.float32), np.full((b_, h), np.nan, np.float32)
        dw, db = np.full(h, np.nan, np.float32), np.full(h, np.nan, np.float32)
        k(x, w, bias, scale, dy, mean.astype(np.float32), rstd.astype(np.float32), dx,
          dscale, dshift, dw, db, accb, acc, ticket, T="f32", BLOCK_H=block, WARPS=2, SB=sb, L2=l2)
        np.testing.assert_allclose(dx, dx_ref, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(dscale, w * s1 + bias * s0, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(dshift, s0, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(dw, (sc * s1).sum(0), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(db, (sc * s0).sum(0), rtol=1e-4, atol=1e-4)
        assert not acc.any() and not ticket.any() and not accb.any()


def test_tools_in_libfnk():
    """fnk and fnkc are launchers for libfnk's fnk_tool_main: the same tools
    through the library, and an unknown tool name is exit status 2."""
    import ctypes
    from fnk._lib import lib
    main = lib.fnk_tool_main
    main.restype = ctypes.c_int
    main.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]

    def run(tool, *args):
        argv = (ctypes.c_char_p * (len(args) + 1))(tool, *[a.encode() for a in args])
        return main(tool, len(args) + 1, argv)

    assert run(b"fnkc", "--version") == 0
    assert run(b"fnkc", str(RMSNORM), "-k", "rmsnorm_fwd", "--emit=none") == 0
    assert run(b"fnkc", str(RMSNORM), "-k", "no_such_kernel") == 1
    assert run(b"fnk", "version") == 0
    assert run(b"nope") == 2


@pytest.mark.parametrize("rows", [4, 8, 12])
def test_cluster_reduce_over_rank_groups(rows):
    """cluster.reduce(..., group = 2) in clusters of 4 (tests/gpu/lang.fnk's
    lang_cluster_group, which the GPU checks run too): each pair of ranks
    gets its own sum and max, beside a whole-cluster sum, against float64."""
    lang = fnk.load(REPO / "tests" / "gpu" / "lang.fnk")
    x = rng().standard_normal((rows, 64)).astype(np.float32)
    y, s = np.full((rows, 64), np.nan, np.float32), np.full((rows, 6), np.nan, np.float32)
    lang.lang_cluster_group(x, y, s)
    x64 = x.astype(np.float64)
    pair, cluster = np.arange(rows) // 2 * 2, np.arange(rows) // 4 * 4
    np.testing.assert_allclose(y, x64[pair] + x64[pair + 1], rtol=1e-6, atol=1e-6)
    sums = x64.sum(axis=1)
    for k in range(2):
        np.testing.assert_allclose(s[:, 3 * k], sums[pair] + sums[pair + 1] + 2 * k, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(s[:, 3 * k + 1], np.maximum(x64[pair].max(1), x64[pair + 1].max(1)) - k, rtol=1e-6)
        np.testing.assert_allclose(s[:, 3 * k + 2], sum(sums[cluster + i] for i in range(4)), rtol=1e-5, atol=1e-5)


def test_one_module_from_many_threads():
    """ctypes lets go of the GIL during a call, so threads can be inside libfnk
    with one module at once: instantiating, keying and running it together
    must give each its own right result (unguarded, the module's caches broke:
    std::bad_alloc aborted the process in 3 of 3 runs of this test)."""
    import threading
    failures = []

    def work(mod, seed):
        try:
            r = np.random.default_rng(seed)
            for j in range(6):
                n = int(r.integers(5, 300))
                x = r.standard_normal((3, n)).astype(np.float32)
                y, rstd = np.empty_like(x), np.empty(3, np.float32)
                mod.rmsnorm_fwd(x, np.ones(n, np.float32), y, rstd, eps=1e-6, BLOCK_N=(64, 128, 256, 512)[j % 4])
                ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6)
                np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            failures.append(repr(e))

    for trial in range(20):
        mod = fnk.load(RMSNORM)  # fresh caches, so the threads instantiate together
        threads = [threading.Thread(target=work, args=(mod, 100 * trial + i)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not failures, failures[:3]
