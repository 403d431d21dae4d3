"""fnk.torch's launch choices (fnk.schedules) run in the interpreter: for rows
of 1 to 262144 columns, the kernel and const generics it picks for each norm's
forward and backward (and the partial rows it sizes) give the float64 NumPy
answer on a few ragged rows. The GPU runs the same launches through torch in
tests/gpu/test_torch.py; this checks them where there is no GPU."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fnk  # noqa: E402
from fnk import schedules  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SMS = 132  # the H200's; partial rows follow it as on the GPU
WIDTHS = [1, 7, 128, 129, 512, 1000, 2048, 2049, 4096, 5000, 8192, 8193, 16385, 65536, 131072, 262144]
M = 5  # ragged against every ROWS the schedules pick


@pytest.fixture(scope="module")
def mods():
    return fnk.load(REPO / "stdlib" / "norm" / "rmsnorm.fnk"), fnk.load(REPO / "stdlib" / "norm" / "layernorm.fnk")


def arrays(n, seed):
    r = np.random.default_rng(seed)
    x = (r.standard_normal((M, n)) + 0.5).astype(np.float32)
    return x, r.standard_normal(n).astype(np.float32), r.standard_normal((M, n)).astype(np.float32), r


def close(got, ref, what):
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4 * max(1.0, float(np.abs(ref).max())), err_msg=what)


@pytest.mark.parametrize("n", WIDTHS)
def test_rmsnorm_launches(mods, n):
    check_rmsnorm(mods[0], n)


def test_rmsnorm_resident_grid(mods):
    """Clusters of 16 are launched as the clusters the GPU holds at once when
    the caller can say (here 3, fewer than the rows: each walks two); other
    launches do not ask."""
    asked = []

    def resident(launch):
        asked.append(launch)
        return 3

    fwd, bwd = check_rmsnorm(mods[0], 262144, resident)
    assert fwd.consts["P"] == 3 and schedules.partial_rows(M, SMS, bwd) == 3
    assert [(a.kernel, a.cluster) for a in asked] == [("rmsnorm_fwd_split", 16), ("rmsnorm_bwd_split_smem", 16)]
    assert schedules.rms_fwd(262144, SMS, lambda launch: 0).consts["P"] == 6 * SMS // 16  # the driver cannot say
    asked.clear()
    schedules.rms_fwd(65536, SMS, resident), schedules.rms_bwd(65536, resident)
    assert asked == []


def test_row_backwards_ask_l2_for_long_walks():
    """The row backwards (RMSNorm and LayerNorm) ask L2 for rows two steps ahead when their CTAs
    walk 32 rows or more each, not for short walks, and by default when the
    rows are not known; the other backwards take no such const."""
    assert schedules.rms_bwd(4096, m=32 * SMS, sms=SMS).consts["L2"] == 2
    assert schedules.rms_bwd(4096, m=32 * SMS - 1, sms=SMS).consts["L2"] == 0
    assert schedules.rms_bwd(4096).consts["L2"] == 2
    assert schedules.rms_bwd(1024, m=32 * SMS, sms=SMS).consts["L2"] == 2
    assert schedules.ln_bwd(2048, m=8, sms=SMS).consts["L2"] == 0
    assert "L2" not in schedules.rms_bwd(512, m=8, sms=SMS).consts
    assert "L2" not in schedules.rms_bwd(65536, m=8, sms=SMS).consts
    assert schedules.ln_bwd(8192, m=32 * SMS, sms=SMS).consts["L2"] == 2
    assert schedules.ln_bwd(4096, m=SMS, sms=SMS).consts["L2"] == 0


def test_rmsnorm_backward_of_4097_to_8192_columns_over_clusters_of_two():
    """Rows of 5121-8192 columns: rmsnorm_bwd_split_acc over clusters of two
    4096-column CTAs, two CTAs per SM (so up to SMS clusters, each adding its
    partial row into one of ACC_ROWS rows of sums, or of as many as there are
    clusters), L2 asked two steps ahead whatever the walk's length; 4096
    columns stay one CTA per row (narrower rows of whole pieces: 5 x 1024,
    test_rows_off_their_padded_tiles)."""
    for n, m in ((8192, 2048), (8192, 32768), (5128, 8), (6000, None)):  # odd widths shift (below)
        b = schedules.rms_bwd(n, m=m, sms=SMS)
        assert (b.kernel, b.cluster, b.consts) == (
            "rmsnorm_bwd_split_acc", 2, {"BLOCK_N": 4096, "CLUSTER": 2, "WARPS": 8, "L2": 2})
        clusters = {2048: 128, 32768: SMS, 8: 4, None: SMS}[m]  # as few as leave each the same most rows
        assert schedules.partial_rows(m or 10 ** 6, SMS, b) == clusters
        assert schedules.acc_rows(m or 10 ** 6, SMS, b) == min(schedules.ACC_ROWS, clusters)
    assert schedules.rms_bwd(4096, m=2048, sms=SMS).kernel == "rmsnorm_bwd"


def test_float32_forward_of_4097_to_8192_columns_in_chunks():
    """A float32 row of 4097-8192 columns goes in two 4096-wide chunks
    (rmsnorm_fwd); bf16 and f16 rows that fill 13/16 of the 8192-column
    tile stay whole (rmsnorm_fwd_row)."""
    for n in (4097, 6000, 8192):
        assert schedules.rms_fwd(n, SMS, dtype="f32") == schedules.Launch("rmsnorm_fwd", {"BLOCK_N": 4096, "WARPS": 8})
    for n in (6656, 7680, 8192):  # 16-bit rows of whole 16-byte pieces (odd widths: test_rows_off_alignment...)
        for dt in ("bf16", "f16"):
            assert schedules.rms_fwd(n, SMS, dtype=dt).kernel == "rmsnorm_fwd_row"
    assert schedules.rms_fwd(4096, SMS, dtype="f32").kernel == "rmsnorm_fwd_row"


def test_rows_that_would_not_fill_the_one_row_tile():
    """16-bit rows of whole 16-byte pieces that would fill less than 13/16 of
    RMSNorm's one-row tile (padded to a power of two; its time per row stays
    whatever the fill) take chunks 1024 wide at 4 warps, 2048 wide where a
    row's last 2048 columns would be more than half full, or from 6145
    columns the 2 x 4096 split; LayerNorm's take 1024-wide chunks at 4 warps
    from 2049 to 7168 columns but 6144 (3 x 2048), the one-row tile above
    (backend v40); exact splits, float32 and rows of whole 512s (tiles sized
    to them: test_rows_of_whole_512s_take_tiles_sized_to_them) keep theirs."""
    def chunks(b):
        return {"BLOCK_N": b, "WARPS": 4}
    split = {"BLOCK_N": 4096, "CLUSTER": 2, "WARPS": 8, "P": 192}
    for n, rms in ((2056, chunks(1024)), (2304, chunks(1024)), (3320, chunks(2048)), (4104, chunks(1024)),
                   (5640, chunks(2048)), (6000, chunks(2048)), (6152, split), (6648, split)):
        for dt in ("bf16", "f16"):
            launch = schedules.rms_fwd(n, SMS, dtype=dt)
            assert (launch.kernel, launch.consts) == ("rmsnorm_fwd_split" if rms is split else "rmsnorm_fwd", rms), n
            if n % 512:
                assert schedules.ln_fwd(n, SMS, dtype=dt) == schedules.Launch("layernorm_fwd", chunks(1024)), n
    for n in (3328, 6656, 8184, 8192):
        assert schedules.rms_fwd(n, SMS).consts == {"BLOCK_N": 8192 if n > 4096 else 4096}, n
    for n in (4096, 5120):
        assert schedules.ln_fwd(n, SMS) == schedules.Launch("layernorm_fwd", chunks(1024)), n
    for n in (7176, 7680, 8192):
        assert schedules.ln_fwd(n, SMS).consts["BLOCK_N"] == 8192, n
    assert schedules.rms_fwd(5120, SMS).consts["CLUSTER"] == 5 and schedules.ln_fwd(6144, SMS).consts["CLUSTER"] == 3
    assert schedules.rms_fwd(6000, SMS, dtype="f32").consts == {"BLOCK_N": 4096, "WARPS": 8}


def test_rows_of_whole_512s_take_tiles_sized_to_them():
    """16-bit rows of 2049-8191 columns that are whole 512s but not a power
    of two nor an exact split take tiles sized to the row, not padded
    (backend v42, schedules.sized): the forwards the row kernel at 32
    columns a thread where 1024s divide the row, else 16 (RMSNorm's rows of
    an odd count of 512s past 4608 and rows past 7168 keep theirs); the
    backwards 16 columns a thread in the row kernel, or over clusters of 3
    past 4096 columns where 3 divides the row's 512s."""
    fwd = {2560: 5, 3072: 3, 3584: 7, 4608: 9, 5632: 11, 6656: 13, 7168: 7}
    for n, warps in fwd.items():
        for dt in ("bf16", "f16"):
            ln = schedules.ln_fwd(n, SMS, dtype=dt)
            assert (ln.kernel, ln.consts) == ("layernorm_fwd_row", {"BLOCK_N": n, "WARPS": n // 512}), n
            rms = schedules.rms_fwd(n, SMS, dtype=dt)
            if n <= 4608 or n % 1024 == 0:
                assert (rms.kernel, rms.consts) == ("rmsnorm_fwd_row", {"BLOCK_N": n, "WARPS": warps}), n
            elif n == 5632:  # in the tile it lost: two halves in 11 warps each
                assert (rms.kernel, rms.consts) == ("rmsnorm_fwd_split", {"BLOCK_N": 2816, "CLUSTER": 2,
                                                                          "WARPS": 11, "P": 198}), rms
            else:  # 6656: the padded tile kept from 13/16
                assert rms.consts == {"BLOCK_N": 8192}, rms
    for n in (2560, 3072, 3584, 4608, 5632, 6656, 7168, 7680):
        for norm, bwd in (("rmsnorm", schedules.rms_bwd), ("layernorm", schedules.ln_bwd)):
            launch = bwd(n, m=10000, dtype="bf16")
            if n == 7168 or (n == 7680 and norm == "rmsnorm"):  # 14 warps would spill; RMSNorm's 2 x 4096 at 15/16
                assert launch.consts["BLOCK_N"] in (4096, 8192), launch
            elif n > 4096 and n // 512 % 3 == 0:
                assert launch == schedules.Launch(f"{norm}_bwd_split_acc", {"BLOCK_N": n // 3, "CLUSTER": 3,
                                                  "WARPS": n // 1536}, per_sm=8, cluster=3), launch
            else:
                assert launch == schedules.Launch(f"{norm}_bwd", {"BLOCK_N": n, "WARPS": n // 512, "L2": 2},
                                                  per_sm=2 if n < 4096 else 1), launch
            if launch.kernel.endswith("_bwd"):
                assert bwd(n, m=10, dtype="bf16").consts.get("L2", 0) == 0
    for n in (2048, 4096, 5120, 6144, 8192, 2304, 6200):  # powers of two, exact splits, not whole 512s
        assert not schedules.sized(n, "bf16"), n
    assert not schedules.sized(4608, "f32") and schedules.rms_fwd(4608, SMS, dtype="f32").consts["BLOCK_N"] == 4096


def test_rows_off_alignment_take_the_shifted_chunks_or_splits():
    """16-bit rows wider than 2048 columns that are not a whole number of
    16-byte pieces (n % 8 != 0) take the forwards' chunks, shifted onto
    16-byte boundaries (VEC = 8) and read twice, in place of the whole row in
    registers or over a cluster (backend v36, schedules.odd_chunks): 1024
    wide at 4 warps up to 7168 (RMSNorm) or 8192 (LayerNorm) columns, then
    2048 wide at 4 warps, 4096 wide at 16 from 8192 (RMSNorm) or 16384
    (LayerNorm) columns; except rows that fill more than 13/16 of 2 x 4096 or
    2 x 8192 columns (RMSNorm's 2 x 4096: 3/4, backend v40), and RMSNorm's
    that fill 15/16 of 16 x 8192, which go over those slices shifted, or with
    a head tile where the shift has no room (backend v39,
    schedules.filled_split), P clusters a multiple of 8. Rows
    of whole pieces, float32 and rows of up to 2048 columns keep their
    schedules."""
    short, narrow, wide = ({"BLOCK_N": b, "WARPS": w, "VEC": 8} for b, w in ((1024, 4), (2048, 4), (4096, 16)))
    for n, rms, ln in ((2049, short, short), (3001, short, short), (5001, short, short), (6143, short, short),
                       (16388, wide, wide), (32767, wide, wide), (65537, wide, wide), (262143, wide, wide)):
        for dt in ("bf16", "f16"):
            assert schedules.rms_fwd(n, SMS, dtype=dt) == schedules.Launch("rmsnorm_fwd", rms), (n, dt)
            assert schedules.ln_fwd(n, SMS, dtype=dt) == schedules.Launch("layernorm_fwd", ln), (n, dt)

    def split(c, b, warps, p, head=False):
        return {"BLOCK_N": b, "CLUSTER": c, "WARPS": warps, "P": p, "VEC": 8, **({"HEAD": True} if head else {})}
    for n, (rms, ln) in ((6145, (split(2, 4096, 8, 192), short)), (6655, (split(2, 4096, 8, 192), short))):
        for dt in ("bf16", "f16"):  # RMSNorm's 2 x 4096 from 3/4 (backend v40), LayerNorm's from 13/16
            assert schedules.rms_fwd(n, SMS, dtype=dt) == schedules.Launch("rmsnorm_fwd_split", rms), (n, dt)
            assert schedules.ln_fwd(n, SMS, dtype=dt) == schedules.Launch("layernorm_fwd", ln), (n, dt)
    for n, rms, ln in ((6657, split(2, 4096, 8, 192), split(2, 4096, 8, 128)),
                       (8185, split(2, 4096, 8, 192), split(2, 4096, 8, 128)),  # n + 7 = 2 x 4096: room
                       (8191, split(2, 4096, 8, 192, True), split(2, 4096, 8, 128, True)),
                       (13313, split(2, 8192, 16, 64), split(2, 8192, 16, 64)),
                       (16383, split(2, 8192, 16, 64, True), split(2, 8192, 16, 64, True))):
        for dt in ("bf16", "f16"):
            assert schedules.rms_fwd(n, SMS, dtype=dt) == schedules.Launch("rmsnorm_fwd_split", rms), (n, dt)
            assert schedules.ln_fwd(n, SMS, dtype=dt) == schedules.Launch("layernorm_fwd_split", ln), (n, dt)
    assert schedules.rms_fwd(131071, SMS) == schedules.Launch("rmsnorm_fwd_split", split(16, 8192, 8, 64, True))
    assert schedules.ln_fwd(131071, SMS) == schedules.Launch("layernorm_fwd", wide)
    assert schedules.rms_fwd(8191, 100).consts["P"] == 144  # 3 x 100 / 2 = 150 CTAs per cluster rank, down to 8s
    assert [schedules.off_alignment(n, dt) for n, dt in ((8191, "bf16"), (8200, "bf16"), (8194, "f32"), (8196, "f32"))] \
        == [True, False, True, False]
    for n in (16384, 65536):
        assert schedules.rms_fwd(n, SMS).kernel != "rmsnorm_fwd" and schedules.ln_fwd(n, SMS).kernel != "layernorm_fwd"
    assert schedules.rms_fwd(8200, SMS).kernel == "rmsnorm_fwd_split" and "VEC" not in schedules.rms_fwd(8200, SMS).consts
    assert schedules.rms_fwd(8191, SMS, dtype="f32") == schedules.Launch("rmsnorm_fwd", {"BLOCK_N": 4096, "WARPS": 8})
    assert schedules.rms_fwd(3584, SMS).kernel == "rmsnorm_fwd_row"
    assert schedules.rms_fwd(2047, SMS).kernel == "rmsnorm_fwd_rows"


def test_odd_widths_shift_the_splits_that_have_room():
    """The accumulating backwards of 16-bit rows off alignment shift their
    clusters' slices onto 16-byte boundaries (VEC = 8) where n + 7 columns
    fit them, with P a multiple of 8 (backend v36: 1024x65537 over 9 x 8192,
    RMSNorm 385 us against 480, LayerNorm 474 against 603; 4096x12001 over
    2 x 8192 185 against 213 and 212 against 239); slices without room, rows
    of whole pieces and float32 keep theirs; the deterministic form shifts
    as the accumulating one."""
    both = (schedules.rms_bwd, schedules.ln_bwd)
    for m, n, scheds in ((1024, 65537, both), (37, 65537, both), (3, 65537, both), (4096, 40001, both),
                         (4096, 12001, both), (8192, 5001, (schedules.rms_bwd,))):
        for sched in scheds:
            launch = sched(n, m=m, sms=SMS)
            assert launch.kernel in schedules.SHIFTED_SPLITS and launch.consts["VEC"] == 8, (sched, n, launch)
            assert n + 7 <= launch.consts["CLUSTER"] * launch.consts["BLOCK_N"]
            p = schedules.partial_rows(m, SMS, launch)
            assert p % 8 == 0 and p >= 8, (m, n, p)
            assert sched(n, m=m, sms=SMS, deterministic=True).consts["VEC"] == 8
    for n, dt in ((65536, "bf16"), (65537, "f32")):
        for sched in (schedules.rms_bwd, schedules.ln_bwd):
            assert "VEC" not in sched(n, m=1024, sms=SMS, dtype=dt).consts, (sched, n, dt)
    assert "VEC" not in schedules.ln_bwd(8191, m=1024, sms=SMS).consts  # the row kernel


def test_odd_widths_without_room_take_a_head_tile():
    """The accumulating backwards of 16-bit rows off alignment whose slices
    have no room for the shift (n + 7 > CLUSTER * BLOCK_N) start them on the
    boundary past the row's start, with a head tile (HEAD = true, VEC = 8),
    asking ptxas for the CTAs that fit at 128 registers (backend v37:
    RMSNorm 8192x8191 161.5 us against 212.9); the deterministic forms keep
    the head; rows with room shift instead; float32 keeps its slices."""
    for sched, cases in ((schedules.rms_bwd, ((8191, 2), (8186, 2), (16383, 1), (32767, 2), (65535, 2))),
                         (schedules.ln_bwd, ((16383, 1), (32767, 2), (65535, 2)))):
        for n, ctas in cases:
            launch = sched(n, m=1024, sms=SMS)
            assert launch.kernel in schedules.SHIFTED_SPLITS, (n, launch)
            assert (launch.consts["VEC"], launch.consts["HEAD"], launch.consts["CTAS"]) == (8, True, ctas), (n, launch)
            assert n + 7 > launch.consts["CLUSTER"] * launch.consts["BLOCK_N"] >= n
            assert schedules.partial_rows(1024, SMS, launch) % 8 == 0
            det = sched(n, m=1024, sms=SMS, deterministic=True)
            assert det.kernel == launch.kernel.removesuffix("_acc") and det.consts["HEAD"] is True, (n, det)
        for n in (8185, 12001):
            assert "HEAD" not in sched(n, m=1024, sms=SMS).consts, n
        assert "HEAD" not in sched(16383, m=1024, sms=SMS, dtype="f32").consts


def test_rows_past_eight_slices_of_8192_take_slices_of_16384():
    """A 16-bit row whose ragged split takes more than 8 CTAs of 8192 columns
    goes backward over the fewest 16384-column slices that hold it (and its
    shift, off alignment): RMSNorm always (rmsnorm_bwd_split_smem; backend
    v36: 1024x65544 230 us against 296, 682x98304 150 against 170),
    LayerNorm off alignment (layernorm_bwd_split_acc, w in shared memory, no
    row ahead: 1024x65537 372 against 479). Off alignment without room for
    the shift, the same count with a head tile (backend v37: 512x131071
    over 8 x 16384, RMSNorm without the row ahead). float32 and rows within
    8 slices keep theirs."""
    for n, c, vec in ((65544, 5, None), (98304, 6, None), (65537, 5, 8), (98311, 7, 8), (131071, 8, 8)):
        head = {"HEAD": True, "CTAS": 1} if n == 131071 else {}
        launch = schedules.rms_bwd(n, m=1024, sms=SMS)
        assert (launch.kernel, launch.cluster, launch.consts["BLOCK_N"], launch.consts["CLUSTER"]) == \
            ("rmsnorm_bwd_split_smem", c, 16384, c), (n, launch)
        assert launch.consts.get("VEC") == vec and launch.consts.get("HEAD") == head.get("HEAD"), (n, launch)
        assert launch.consts.get("PF", 1) == (0 if head else 1), (n, launch)
        if head:  # one CTA per SM's worth of clusters, as timed
            assert schedules.partial_rows(1024, SMS, launch) == 16
        ln = schedules.ln_bwd(n, m=1024, sms=SMS)
        if vec:
            assert ln == schedules.Launch("layernorm_bwd_split_acc", {"BLOCK_N": 16384, "CLUSTER": c, "WARPS": 16,
                                                                      "WS": 1, "PF": 0, "VEC": 8, **head},
                                          per_sm=8, cluster=c), (n, ln)
        else:
            assert ln.consts["BLOCK_N"] == 8192, (n, ln)
    for n in (65536, 40001):
        assert schedules.rms_bwd(n, m=1024, sms=SMS).kernel == "rmsnorm_bwd_split_acc", n


def test_float32_takes_the_settings_that_do_not_spill():
    """float32 LayerNorm rows of 4097-8192 columns go in 2048-wide chunks at
    16 warps (the whole-row kernel spills 720 bytes there), and the 16384-wide RMSNorm
    backward slices run without the next row loaded ahead (PF = 1 spills 440
    bytes), as does the LayerNorm row backward beyond 4096 columns (PF = 1
    spills 76-84 bytes; without the L2 request too); bf16 keeps all three
    (tests/lit/gpu/spills.test)."""
    for n in (4097, 8192):
        assert schedules.ln_fwd(n, SMS, dtype="f32") == schedules.Launch("layernorm_fwd", {"BLOCK_N": 2048, "WARPS": 16})
    for n in (7176, 8192):
        assert schedules.ln_fwd(n, SMS, dtype="bf16").kernel == "layernorm_fwd_row"
    for n in (4097, 8192, 131073, 262144):
        ln = {dt: schedules.ln_bwd(n, m=32768, sms=SMS, dtype=dt) for dt in ("bf16", "f32")}
        assert ln["f32"].consts == {**ln["bf16"].consts, "PF": 0, "L2": 0}
    assert "PF" not in schedules.ln_bwd(4096, dtype="f32").consts
    wide = {dt: schedules.rms_bwd(262144, dtype=dt) for dt in ("bf16", "f32")}
    assert wide["f32"].kernel == wide["bf16"].kernel == "rmsnorm_bwd_split_smem"
    assert wide["f32"].consts["PF"] == 0 and "PF" not in wide["bf16"].consts


def test_layernorm_backward_of_wide_rows_over_clusters():
    """Rows of 8193-65536 columns take the LayerNorm split (sums added into
    rows), in either dtype: clusters of up to 8 CTAs of 8192 columns at 16
    warps, or in bf16 the slices ragged_split covers a ragged row above
    16384 columns with (up to 16 CTAs of 4096 or 8192 columns, 16 columns a
    thread), then up to 131072 columns; the rows around that range stay with
    layernorm_bwd."""
    for n, dt, cut in ((8200, "bf16", (2, 8192)), (20000, "f32", (4, 8192)), (65536, "bf16", (8, 8192)),
                       (20000, "bf16", (5, 4096)), (40000, "bf16", (10, 4096)), (98304, "bf16", (12, 8192)),
                       (131064, "bf16", (16, 8192))):  # odd widths past 8 slices: test_rows_past_eight_slices...
        s = schedules.ln_bwd(n, m=4096, sms=SMS, dtype=dt)
        c, b = cut
        consts = {"BLOCK_N": b, "CLUSTER": c, "WARPS": b // 512, **({"WS": 1} if dt == "f32" else {})}
        assert s == schedules.Launch("layernorm_bwd_split_acc", consts, per_sm=1 if c == 2 else 8, cluster=c), (n, dt)
        assert schedules.acc_rows(4096, SMS, s) == schedules.ACC_ROWS
    for n, dt in ((8192, "bf16"), (65537, "f32"), (131073, "bf16"), (98304, "f32")):
        assert schedules.ln_bwd(n, dtype=dt).kernel == "layernorm_bwd", (n, dt)


def test_short_row_backwards_walk_one_row_per_step():
    """From 513 (RMSNorm) or 1025 (LayerNorm) columns to 4096 the backwards
    walk one row per step at several CTAs per SM: RMSNorm at 4 warps and 4
    per SM up to 2048 columns, 8 and 2 beyond (float32: twice the warps,
    half the CTAs); LayerNorm at 8 and 2 up to 2048, 16 and 1 beyond
    (backend v28); narrower rows go in [ROWS, N] tiles."""
    for n, rms, ln in ((512, None, None), (513, (4, 4), None), (1024, (4, 4), None), (1025, (4, 4), (8, 2)),
                       (2048, (4, 4), (8, 2)), (2049, (8, 2), (16, 1)), (4096, (8, 2), (16, 1))):
        for bwd, want, row in ((schedules.rms_bwd, rms, "rmsnorm_bwd"), (schedules.ln_bwd, ln, "layernorm_bwd")):
            s = bwd(n, m=32768, sms=SMS)
            if want is None:
                assert s.kernel == row + "_rows", (n, s)
            else:
                assert (s.kernel, s.consts["WARPS"], s.per_sm, s.consts["BLOCK_N"]) == (row, *want, schedules.block(n))
                p = schedules.partial_rows(32768, SMS, s)  # per_sm x SMs CTAs' walk, balanced
                assert p <= want[1] * SMS and -(-32768 // p) == -(-32768 // (want[1] * SMS))
        if rms is not None:
            f32 = schedules.rms_bwd(n, m=32768, sms=SMS, dtype="f32")
            assert (f32.consts["WARPS"], f32.per_sm) == (2 * rms[0], rms[1] // 2)


def test_split_backwards_of_two_cta_clusters_run_one_wave():
    """The backward splits over clusters of two CTAs (8193-16384 columns,
    one 16-warp CTA per SM) run one resident wave, RMSNorm's as LayerNorm's:
    SMs / 2 clusters (2048x16384 55.7 us against 77.2 at 8 CTAs per SM's
    worth, backend v28); wider splits walk 8 CTAs per SM's worth."""
    for n in (8200, 16384, 16392, 65536):  # odd widths round P to a multiple of 8 (shifted_split)
        for bwd in (schedules.rms_bwd, schedules.ln_bwd):
            s = bwd(n, m=4096, sms=SMS)
            assert s.kernel.endswith("_split_acc") and s.per_sm == (1 if s.cluster == 2 else 8), (n, s)
            if s.cluster == 2:
                assert schedules.partial_rows(4096, SMS, s) == SMS // 2


@pytest.mark.parametrize("n,cut", [(5120, (5, 1024)), (6144, (3, 2048)), (10240, (5, 2048)), (12288, (3, 4096))])
def test_rows_of_exact_slices(mods, n, cut):
    """Rows of 4097-65536 columns that are 3 or 5 power-of-two slices go over
    clusters of that many CTAs in bf16, both ways (LayerNorm's forward up to
    8192 columns), RMSNorm and LayerNorm, without padding; those
    launches give the float64 answers in the interpreter; float32 and other
    widths (powers of two, 7 slices, narrower rows) keep the padded splits."""
    assert schedules.exact_split(n) == cut
    launches = [*check_rmsnorm(mods[0], n, schedule_dtype="bf16"), *check_layernorm(mods[1], n, schedule_dtype="bf16")]
    for launch in launches:
        if launch.kernel == "layernorm_fwd":  # 8193-12288 columns: the chunks tied the split (backend v28);
            assert n > 8192 or n == 5120  # 5 x 1024 lost to them (backend v40)
            continue
        assert (launch.consts["CLUSTER"], launch.consts["BLOCK_N"]) == cut, launch
    f32 = (schedules.rms_fwd(n, dtype="f32"), schedules.rms_bwd(n, dtype="f32"), schedules.ln_fwd(n, dtype="f32"),
           schedules.ln_bwd(n, dtype="f32"))
    for launch in f32:  # float32: padded, over clusters of 1, 2, 4 ... CTAs
        assert launch.consts.get("CLUSTER", 1) not in (3, 5), launch
    for other in (2560, 4096, 5000, 7168, 8192, 14336, 16384, 65536, 5 * 16384):
        assert schedules.exact_split(other) is None


@pytest.mark.parametrize("n", [2056, 2560, 3072, 4104, 4608, 5632, 6200, 7168])
def test_rows_off_their_padded_tiles(mods, n):
    """16-bit rows of whole pieces that padded power-of-two tiles would leave
    idle in part (backend v40): the forwards in chunks or over 2 x 4096
    (test_rows_that_would_not_fill_the_one_row_tile), the backwards of
    4097-5119 columns over 5 x 1024 and LayerNorm's of 2049-3072 over 3 x
    1024 (schedules.slices_of_1024); rows of whole 512s in tiles sized to
    them (backend v42, schedules.sized). Those launches give the float64
    answers in the interpreter."""
    rms, ln = check_rmsnorm(mods[0], n, schedule_dtype="bf16"), check_layernorm(mods[1], n, schedule_dtype="bf16")
    if schedules.sized(n, "bf16"):  # at least the forward of LayerNorm sized to the row
        assert ln[0].consts["BLOCK_N"] == n
        return
    slices = {"rms": (5, 1024) if 4096 < n < 5120 else None,
              "ln": (5, 1024) if 4096 < n < 5120 else (3, 1024) if n <= 3072 else None}
    for launch, cut in ((rms[1], slices["rms"]), (ln[1], slices["ln"])):
        if cut:
            assert launch.kernel.endswith("_bwd_split_acc") and launch.cluster == cut[0], launch
            assert (launch.consts["CLUSTER"], launch.consts["BLOCK_N"]) == cut, launch
        else:
            assert launch.consts.get("BLOCK_N", 0) * launch.consts.get("CLUSTER", 1) >= 4096, launch
            assert launch.consts.get("BLOCK_N") != 1024, launch
    assert schedules.slices_of_1024(4609, "bf16") is None and schedules.slices_of_1024(4608, "f32") is None
    assert schedules.slices_of_1024(3072, "bf16") is None  # RMSNorm's 4096 row tile tied 3 x 1024


def test_wide_layernorm_forward_by_width():
    """bf16 LayerNorm rows that fill clusters of 8192-column CTAs (16384,
    32768, 65536, 131072 columns) go over them at 8 warps, two per SM, w and
    b read per row (HOLD false), and 262144 over 16 CTAs of 16384, the 16-CTA
    clusters as many as are resident (backend v31); ragged rows over the
    slices ragged_split gives: 8192 or 16384 columns as those, 2048 or 4096
    at 4 warps with w and b held (backend v32); the rest take the chunks,
    2048 wide at 4 warps below 16384 columns and 4096 wide at 16 above. The
    exact 3 x 2048 slices read w and b per row; 5120 columns take 1024-wide
    chunks, which beat 5 x 1024 (backend v40)."""
    def got(n):
        f = schedules.ln_fwd(n, SMS)
        c = f.consts
        return (f.kernel, c.get("CLUSTER", 1), c["BLOCK_N"], c["WARPS"], c.get("CTAS", 0), c.get("HOLD", True),
                c.get("P", 0))
    chunks, chunks16 = ("layernorm_fwd", 1, 2048, 4, 0, True, 0), ("layernorm_fwd", 1, 4096, 16, 0, True, 0)
    assert got(10240) == got(12288) == got(12296) == chunks  # 5 x 2048 and 3 x 4096 tied the chunks (backend v28)
    assert got(16385) == got(17000) == got(262145) == chunks16  # no slices within an eighth of the row
    assert got(14000) == ("layernorm_fwd_split", 7, 2048, 4, 0, True, 12 * SMS // 7)
    assert got(20000) == ("layernorm_fwd_split", 5, 4096, 4, 0, True, 12 * SMS // 5)
    assert got(40000) == ("layernorm_fwd_split", 5, 8192, 8, 2, False, SMS)  # 10 x 4096 as 5 x 8192
    assert got(98304) == ("layernorm_fwd_split", 12, 8192, 8, 2, False, 2 * SMS // 12)
    assert got(196608) == ("layernorm_fwd_split", 12, 16384, 16, 1, False, SMS // 12)
    assert got(16384) == ("layernorm_fwd_split", 2, 8192, 8, 2, False, SMS)
    assert got(32768) == ("layernorm_fwd_split", 4, 8192, 8, 2, False, 3 * SMS // 2)
    assert got(65536) == ("layernorm_fwd_split", 8, 8192, 8, 2, False, SMS)
    assert got(131072) == ("layernorm_fwd_split", 16, 8192, 8, 2, False, 14)  # 7 clusters per CTA per SM
    assert got(262144) == ("layernorm_fwd_split", 16, 16384, 16, 1, False, 7)
    resident = schedules.ln_fwd(131072, SMS, resident=lambda launch: 12)  # the driver's count when it gives one
    assert resident.consts["P"] == 12
    assert got(5120) == ("layernorm_fwd", 1, 1024, 4, 0, True, 0)  # the chunks beat 5 x 1024 (backend v40)
    assert got(6144)[:6] == ("layernorm_fwd_split", 3, 2048, 4, 0, False)
    for n in (16384, 20000):
        assert schedules.ln_fwd(n, SMS, dtype="f32").consts == {"BLOCK_N": 2048, "WARPS": 4}


@pytest.mark.parametrize("n,fwd,bwd", [
    (10000, (5, 2048), None), (14000, (7, 2048), None), (16383, (8, 2048), None), (16385, None, None),
    (20000, (5, 4096), (5, 4096)), (25000, None, None), (40000, (10, 4096), (10, 4096)),
    (65537, (9, 8192), (9, 8192)), (98304, (12, 8192), (12, 8192)), (131073, (9, 16384), None),
    (196608, (12, 16384), None), (262145, None, None), (8192, None, None), (65536, None, None)])
def test_ragged_split(n, fwd, bwd):
    """The narrowest slices (2048 columns up to 16384, then 4096, 8192 and
    the forward's 16384) that cover a ragged row in at most 16 CTAs with at
    most an eighth of their columns idle; the backward keeps its clusters of
    two up to 16384 columns, and powers of two keep their splits."""
    assert schedules.ragged_split(n) == fwd
    assert schedules.ragged_split(n, backward=True) == bwd
    for cut in (fwd, bwd):
        if cut:
            c, b = cut
            assert c <= 16 and n <= c * b and 8 * (c * b - n) <= c * b and (b == 2048 or n > 16384)


def test_ragged_split_everywhere():
    """At every width from 8193 to 262144 (a stride that meets every
    residue of 2048): ragged_split gives None for powers of two, else slices
    that cover the row in 2 to 16 CTAs with at most an eighth of their
    columns idle, and no narrower slice of its list would also do; where it
    gives None, no slice of its list qualifies."""
    for backward in (False, True):
        widths = ((2048,) if not backward else ()) + (4096, 8192) + ((16384,) if not backward else ())
        for n in [*range(8193, 262145, 61), 16384, 131072, 262144]:
            cut = schedules.ragged_split(n, backward)
            allowed = [b for b in widths if b == 2048 and n <= 16384 or b > 2048]
            if backward and n <= 16384:
                allowed = []
            fits = [b for b in allowed if -(-n // b) <= 16 and 8 * (-(-n // b) * b - n) <= -(-n // b) * b]
            if n & (n - 1) == 0 or not fits:
                assert cut is None, (n, backward, cut)
                continue
            c, b = cut
            assert b == fits[0] and c == -(-n // b) and 2 <= c <= 16 and (c - 1) * b < n <= c * b, (n, backward, cut)


def test_ragged_rows_over_balanced_clusters():
    """bf16 RMSNorm rows take ragged_split's slices both ways (the forward
    at 1024 columns a warp, 12 CTAs per SM's worth of clusters but 8 for
    8192-column CTAs in clusters of more than 8; the backward at 512 a warp,
    8 CTAs per SM's worth, but 16384-column slices past 8 of 8192: test_rows_past_eight_slices...); ragged
    rows of 16385-262143 columns it does not cover take the 4096-wide chunks forward (backend v32); float32
    keeps the padded splits."""
    def fwd(n):
        f = schedules.rms_fwd(n, SMS)
        return f.kernel, f.consts.get("CLUSTER", 1), f.consts["BLOCK_N"], f.consts["WARPS"], f.consts.get("P", 0)
    assert fwd(14000) == ("rmsnorm_fwd_split", 7, 2048, 2, 12 * SMS // 7)
    assert fwd(20000) == ("rmsnorm_fwd_split", 5, 4096, 4, 12 * SMS // 5)
    assert fwd(40000) == ("rmsnorm_fwd_split", 10, 4096, 4, 12 * SMS // 10)
    assert fwd(98304) == ("rmsnorm_fwd_split", 12, 8192, 8, 8 * SMS // 12)
    assert fwd(196608) == ("rmsnorm_fwd_split", 12, 16384, 16, 6 * SMS // 12)
    assert fwd(17000) == fwd(25000) == ("rmsnorm_fwd", 1, 4096, 16, 0)
    assert schedules.rms_fwd(20000, SMS, dtype="f32").consts["CLUSTER"] == 4
    for n, (c, b) in ((20000, (5, 4096)), (40000, (10, 4096))):
        s = schedules.rms_bwd(n, m=4096, sms=SMS)
        assert s == schedules.Launch("rmsnorm_bwd_split_acc", {"BLOCK_N": b, "CLUSTER": c, "WARPS": b // 512},
                                     per_sm=8, cluster=c), n
    assert schedules.rms_bwd(14000, m=4096, sms=SMS).cluster == 2
    assert schedules.rms_bwd(20000, m=4096, sms=SMS, dtype="f32").cluster == 4


def test_forward_splits_take_16_by_8192_before_wider_slices():
    """The RMSNorm forward spreads rows of 65537-131072 columns over 16 CTAs
    of 8192 columns, 8 CTAs per SM's worth of clusters, before it widens the
    slices to 16384 (backend v28); the backward keeps 8 x 16384. (bf16's
    ragged rows there take ragged_split's slices.)"""
    for n in (65537, 131072):
        f = schedules.rms_fwd(n, SMS, dtype="f32" if n == 65537 else "bf16")
        got = (f.consts["CLUSTER"], f.consts["BLOCK_N"], f.consts["WARPS"], f.consts["P"])
        assert got == (16, 8192, 8, 8 * SMS // 16)
        assert schedules.rms_bwd(n, dtype="f32").consts["CLUSTER"] == 8
    assert schedules.rms_fwd(131073, SMS, dtype="f32").consts["BLOCK_N"] == 16384


def test_partial_rows_balanced():
    """Grids of one row per step take the fewest CTAs (or clusters) that leave
    each the same most rows; grids of row blocks (ROWS) keep the formula's."""
    split = schedules.rms_bwd(8192, m=2048, sms=SMS)
    for m in (1, 7, 131, 132, 133, 2048, 4096, 32768, 10 ** 6):
        p, formula = schedules.partial_rows(m, SMS, split), max(1, min(m, 2 * SMS) // 2)
        most = -(-m // formula)
        assert p <= formula and -(-m // p) == most and (p == 1 or -(-m // (p - 1)) > most), (m, p)
    assert schedules.partial_rows(2048, SMS, split) == 128
    rows = schedules.rms_bwd(512, m=2048, sms=SMS)
    assert "ROWS" in rows.consts and schedules.partial_rows(2048, SMS, rows) == min(2048, 4 * SMS)


def check_rmsnorm(rms, n, resident=None, schedule_dtype="f32"):
    """fnk.torch's RMSNorm launches for rows of n (as scheduled for
    schedule_dtype) in the interpreter, in float32, against float64."""
    x, w, dy, _ = arrays(n, n)
    fwd = schedules.rms_fwd(n, SMS, resident, dtype=schedule_dtype)
    y, rstd = np.full_like(x, np.nan), np.full(M, np.nan, np.float32)
    getattr(rms, fwd.kernel)(x, w, y, rstd, eps=1e-6, **fwd.consts, T="f32")
    x64 = x.astype(np.float64)
    r64 = 1 / np.sqrt((x64 ** 2).mean(axis=1) + 1e-6)
    close(y, x64 * r64[:, None] * w, f"{fwd.kernel} y")
    close(rstd, r64, f"{fwd.kernel} rstd")

    bwd = schedules.rms_bwd(n, resident, dtype=schedule_dtype)
    dx = np.full_like(x, np.nan)
    dw = np.full(n, np.nan, np.float32)
    p = schedules.partial_rows(M, SMS, bwd)
    if bwd.kernel == "rmsnorm_bwd_split_acc":  # as fnk.torch: partials added into zeroed rows, then taken
        acc = np.zeros((schedules.acc_rows(M, SMS, bwd), n), np.float32)
        rms.rmsnorm_bwd_split_acc(x, w, dy, rstd, dx, acc, **bwd.consts, P=p, T="f32")
        rms.rmsnorm_bwd_dw_take(acc, dw, T="f32")
        assert not acc.any(), "rmsnorm_bwd_dw_take leaves dw_acc at zero"
    else:
        part = np.full((p, n), np.nan, np.float32)
        getattr(rms, bwd.kernel)(x, w, dy, rstd, dx, part, **bwd.consts, T="f32")
        rms.rmsnorm_bwd_dw(part, dw, T="f32")
    rr = rstd.astype(np.float64)
    g = dy * w.astype(np.float64)
    close(dx, g * rr[:, None] - x64 * ((g * x64).sum(axis=1) * rr ** 3 / n)[:, None], f"{bwd.kernel} dx")
    close(dw, (dy * x64 * rr[:, None]).sum(axis=0), f"{bwd.kernel} dw")
    return fwd, bwd


@pytest.mark.parametrize("n", WIDTHS)
def test_layernorm_launches(mods, n):
    check_layernorm(mods[1], n)


@pytest.mark.parametrize("n", [16000, 16384, 20000, 32768, 65536, 131072, 262144])
def test_wide_bf16_layernorm_launches(mods, n):
    """The bf16 schedules of wide LayerNorm rows (clusters of 2, 4, 8 and 16
    CTAs, w and b read per row, at the widths that fill them; the chunks at
    ragged ones) in the interpreter."""
    check_layernorm(mods[1], n, schedule_dtype="bf16")


@pytest.mark.parametrize("n", [14000, 20000, 40000, 98304, 196608])
def test_ragged_bf16_launches(mods, n):
    """The bf16 schedules of ragged rows over ragged_split's slices
    (clusters of 5 to 12 CTAs, the last one's columns partly past the row),
    RMSNorm and LayerNorm both ways, in the interpreter."""
    launches = [*check_rmsnorm(mods[0], n, schedule_dtype="bf16"), *check_layernorm(mods[1], n, schedule_dtype="bf16")]
    cut = schedules.ragged_split(n)
    assert any(launch.consts.get("CLUSTER") == cut[0] for launch in launches), launches


def check_layernorm(ln, n, schedule_dtype="f32"):
    """fnk.torch's LayerNorm launches for rows of n (as scheduled for
    schedule_dtype) in the interpreter, in float32, against float64."""
    x, w, dy, r = arrays(n, n + 1)
    b = r.standard_normal(n).astype(np.float32)
    fwd = schedules.ln_fwd(n, dtype=schedule_dtype)
    y, mean, rstd = np.full_like(x, np.nan), np.full(M, np.nan, np.float32), np.full(M, np.nan, np.float32)
    getattr(ln, fwd.kernel)(x, w, b, y, mean, rstd, eps=1e-5, **fwd.consts, T="f32")
    x64 = x.astype(np.float64)
    mu, r64 = x64.mean(axis=1), 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    xhat = (x64 - mu[:, None]) * r64[:, None]
    close(y, xhat * w + b, f"{fwd.kernel} y")
    close(mean, mu, f"{fwd.kernel} mean")
    close(rstd, r64, f"{fwd.kernel} rstd")

    bwd = schedules.ln_bwd(n, dtype=schedule_dtype)
    p = schedules.partial_rows(M, SMS, bwd)
    dx = np.full_like(x, np.nan)
    dw, db = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    if bwd.kernel == "layernorm_bwd_split_acc":  # as fnk.torch: partials added into zeroed rows, then taken
        accs = [np.zeros((schedules.acc_rows(M, SMS, bwd), n), np.float32) for _ in range(2)]
        ln.layernorm_bwd_split_acc(x, w, dy, mean, rstd, dx, *accs, **bwd.consts, P=p, T="f32")
        ln.layernorm_bwd_dwdb_take(*accs, dw, db, T="f32")
        assert not any(a.any() for a in accs), "layernorm_bwd_dwdb_take leaves dw_acc and db_acc at zero"
    else:
        dwp, dbp = np.full((p, n), np.nan, np.float32), np.full((p, n), np.nan, np.float32)
        getattr(ln, bwd.kernel)(x, w, dy, mean, rstd, dx, dwp, dbp, **bwd.consts, T="f32")
        ln.layernorm_bwd_dwdb(dwp, dbp, dw, db, T="f32")
    g = dy * w.astype(np.float64)
    ref = r64[:, None] * (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True))
    close(dx, ref, f"{bwd.kernel} dx")
    close(dw, (dy * xhat).sum(axis=0), f"{bwd.kernel} dw")
    close(db, dy.astype(np.float64).sum(axis=0), f"{bwd.kernel} db")
    return fwd, bwd


def test_deterministic_backwards_store_their_partial_rows():
    """fnk.torch under torch.use_deterministic_algorithms: the splits that
    add into rows of sums store one row per cluster CTA instead
    (rmsnorm_bwd_split, layernorm_bwd_split: the same consts and grid, and
    for RMSNorm ptxas asked for the grid's CTAs per SM where they fit one at
    once); every other launch is unchanged."""
    for n in WIDTHS + [5120, 12288]:
        for m in (2048, 32768):
            for bwd in (schedules.rms_bwd, schedules.ln_bwd):
                plain, det = bwd(n, m=m, sms=SMS), bwd(n, m=m, sms=SMS, deterministic=True)
                if plain.kernel == "rmsnorm_bwd_split_acc":
                    # two 8-warp CTAs per SM (2 x 4096), four 2-warp (5 x 1024); 16 warps, or 8 x 8, fill one
                    ctas = {(2, 4096): 2, (5, 1024): 4}.get((plain.cluster, plain.consts["BLOCK_N"]), 1)
                    assert det == plain._replace(kernel="rmsnorm_bwd_split", consts={**plain.consts, "CTAS": ctas})
                elif plain.kernel == "layernorm_bwd_split_acc":
                    assert det == plain._replace(kernel="layernorm_bwd_split")
                else:
                    assert det == plain
                assert schedules.partial_rows(m, SMS, det) == schedules.partial_rows(m, SMS, plain)


@pytest.mark.parametrize("norm,n", [("rms", 6000), ("ln", 8193)])
def test_deterministic_partial_rows(mods, norm, n):
    """The deterministic wide-row backwards as fnk.torch runs them, at 40
    rows (20 clusters, more than ACC_ROWS): the split storing one partial
    row per cluster CTA into poisoned rows, then the partial rows summed in
    order. dx, dw (and db) against float64."""
    rms, ln = mods
    m = 40
    r = np.random.default_rng(n)
    x = (r.standard_normal((m, n)) + 0.5).astype(np.float32)
    w, dy = r.standard_normal(n).astype(np.float32), r.standard_normal((m, n)).astype(np.float32)
    x64, g = x.astype(np.float64), dy * w.astype(np.float64)
    dx = np.full_like(x, np.nan)
    if norm == "rms":
        bwd = schedules.rms_bwd(n, m=m, sms=SMS, dtype="f32", deterministic=True)
        p = schedules.partial_rows(m, SMS, bwd)
        assert bwd.kernel == "rmsnorm_bwd_split" and p == 20
        r64 = 1 / np.sqrt((x64 ** 2).mean(axis=1) + 1e-6)
        part, dw = np.full((p, n), np.nan, np.float32), np.full(n, np.nan, np.float32)
        rms.rmsnorm_bwd_split(x, w, dy, r64.astype(np.float32), dx, part, **bwd.consts, T="f32")
        rms.rmsnorm_bwd_dw(part, dw, T="f32")
        close(dx, g * r64[:, None] - x64 * ((g * x64).sum(axis=1) * r64 ** 3 / n)[:, None], "dx")
        close(dw, (dy * x64 * r64[:, None]).sum(axis=0), "dw")
        return
    bwd = schedules.ln_bwd(n, m=m, sms=SMS, dtype="f32", deterministic=True)
    p = schedules.partial_rows(m, SMS, bwd)
    assert bwd.kernel == "layernorm_bwd_split" and p == 20
    mu, r64 = x64.mean(axis=1), 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    xhat = (x64 - mu[:, None]) * r64[:, None]
    dwp, dbp = np.full((p, n), np.nan, np.float32), np.full((p, n), np.nan, np.float32)
    dw, db = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    ln.layernorm_bwd_split(x, w, dy, mu.astype(np.float32), r64.astype(np.float32), dx, dwp, dbp, **bwd.consts, T="f32")
    ln.layernorm_bwd_dwdb(dwp, dbp, dw, db, T="f32")
    ref = r64[:, None] * (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True))
    close(dx, ref, "dx")
    close(dw, (dy * xhat).sum(axis=0), "dw")
    close(db, dy.astype(np.float64).sum(axis=0), "db")
