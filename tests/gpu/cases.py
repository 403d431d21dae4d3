"""GPU test cases: every stdlib kernel and example, with input makers.

Each case is (file, kernel, inputs, outputs, scalars, dims[, consts]) for a
shape (all_cases() puts the dtype and a shape label in front); inputs are float64 numpy arrays (written as float32/int .npy; fnk
rounds them to the parameter dtype). Inputs are fresh random values, never
zeros; rstd/mean inputs of backward kernels are computed from x so they are
realistic."""
import numpy as np


def cdiv(a, b):
    return (a + b - 1) // b


def _rstd(x, eps=1e-5):
    return 1.0 / np.sqrt((x * x).mean(-1) + eps)


def _mean_rstd(x, eps=1e-5):
    mu = x.mean(-1)
    return mu, 1.0 / np.sqrt(((x - mu[..., None]) ** 2).mean(-1) + eps)


def rmsnorm_cases(rng, M, N):
    x = rng.standard_normal((M, N))
    w = rng.standard_normal(N)
    dy = rng.standard_normal((M, N))
    P = cdiv(M, 4)
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_fwd", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {})
    if N <= 8192:  # the whole-row kernel's domain (fnk.torch uses it up to 8192)
        row = {"BLOCK_N": max(256, 1 << (N - 1).bit_length())}
        yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_fwd_row", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {}, row)
        if N <= 1024:  # one warp (the reduction's butterfly-only path), up to 32 elements per lane
            yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_fwd_row", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {},
                   {**row, "WARPS": 1})
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd", {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
           ["dx", "dw_partial"], {}, {"P": P})
    if M > 8:  # one tile per row, x and dy of the row two steps ahead asked into L2 (the default)
        yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd", {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
               ["dx", "dw_partial"], {}, {"P": P}, {"BLOCK_N": max(256, 1 << (N - 1).bit_length())})
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd_dw", {"partial": rng.standard_normal((P, N))}, ["dw"], {}, {})
    # The rows of sums rmsnorm_bwd_split_acc leaves (dw_acc's contents on entry: fnk run --in for an output the
    # kernel adds to atomically), summed into dw and emptied: 16 rows as fnk.torch takes them, and 3.
    for r in (16, 3):
        yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd_dw_take", {"dw_acc": rng.standard_normal((r, N))},
               ["dw", "dw_acc"], {}, {})
    mu, r = _mean_rstd(x)
    b = rng.standard_normal(N)
    yield ("stdlib/norm/layernorm.fnk", "layernorm_fwd", {"x": x, "w": w, "b": b}, ["y", "mean", "rstd"],
           {"eps": 1e-5}, {})
    # The chunked path (256-wide chunks: every N > 256) on rows whose mean is far from zero,
    # for its one-pass statistics.
    yield ("stdlib/norm/layernorm.fnk", "layernorm_fwd", {"x": x + 20.0, "w": w, "b": b},
           ["y", "mean", "rstd"], {"eps": 1e-5}, {}, {"BLOCK_N": 256, "WARPS": 4})
    # rmsnorm_fwd's chunked walk with Inductor's cache hints (bench/variants.fnk, backend v30).
    for hints in (1, 2):
        yield ("bench/variants.fnk", "rms_fwd_chunks_hint", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {},
               {"BLOCK_N": 256, "WARPS": 4, "HINTS": hints})
    # The chunks shifted onto 16-byte boundaries (VEC = 8, fnk.torch's for 16-bit rows of odd width): every
    # row of an odd N at its own shift, and rows of whole pieces at none.
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_fwd", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {},
           {"BLOCK_N": 256, "WARPS": 4, "VEC": 8})
    yield ("stdlib/norm/layernorm.fnk", "layernorm_fwd", {"x": x + 20.0, "w": w, "b": b}, ["y", "mean", "rstd"],
           {"eps": 1e-5}, {}, {"BLOCK_N": 256, "WARPS": 4, "VEC": 8})
    if N <= 8192:  # the persistent forwards whose rows arrive by bulk copies (full rows and padded ones)
        blk = max(256, 1 << (N - 1).bit_length())
        # The whole-row forward (fnk.torch's from 4097 to 8192 columns), asking L2 for the row 5 CTAs ahead.
        yield ("stdlib/norm/layernorm.fnk", "layernorm_fwd_row", {"x": x + 3.0, "w": w, "b": b},
               ["y", "mean", "rstd"], {"eps": 1e-5}, {}, {"BLOCK_N": blk, "L2": 5})
        for blk_n in sorted({blk, 2 * blk}):
            yield ("stdlib/norm/layernorm.fnk", "layernorm_fwd_staged", {"x": x + 3.0, "w": w, "b": b},
                   ["y", "mean", "rstd"], {"eps": 1e-5}, {}, {"BLOCK_N": blk_n, "WARPS": 4, "S": 3, "P": 2})
        # Its variants at one tile width (full rows at N = 4096 and 8192, padded ones below): w and b loaded per
        # row (bulk1), y out by bulk stores (bstore), w and b in shared memory (wsmem), the next row's copy after
        # the statistics (latecopy, at the tightest ring too), one row per CTA (row2).
        for kernel, ring in (("ln_fwd_bulk1", {"S": 3, "P": 2}), ("ln_fwd_bstore", {"S": 3, "P": 2}),
                             ("ln_fwd_wsmem", {"S": 3, "P": 3}), ("ln_fwd_latecopy", {"S": 2, "P": 3}),
                             ("ln_fwd_latecopy", {"S": 3, "P": 3}), ("ln_fwd_row2", {})):
            yield ("bench/variants.fnk", kernel, {"x": x + 3.0, "w": w, "b": b}, ["y", "mean", "rstd"],
                   {"eps": 1e-5}, {}, {"BLOCK_N": blk, "WARPS": 4, **ring})
    yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd", {"x": x, "w": w, "dy": dy, "mean": mu, "rstd": r},
           ["dx", "dw_partial", "db_partial"], {}, {"P": P})
    if M > 8:  # one tile per row, x and dy of the row two steps ahead asked into L2 (the default)
        yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd", {"x": x, "w": w, "dy": dy, "mean": mu, "rstd": r},
               ["dx", "dw_partial", "db_partial"], {}, {"P": P}, {"BLOCK_N": max(256, 1 << (N - 1).bit_length())})
    yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd_dwdb",
           {"dw_partial": rng.standard_normal((P, N)), "db_partial": rng.standard_normal((P, N))}, ["dw", "db"], {}, {})
    for r in (16, 3):  # layernorm_bwd_split_acc's rows of sums, taken as rmsnorm_bwd_dw_take's are
        yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd_dwdb_take",
               {"dw_acc": rng.standard_normal((r, N)), "db_acc": rng.standard_normal((r, N))},
               ["dw", "db", "dw_acc", "db_acc"], {}, {})
    yield ("examples/wide_rmsnorm.fnk", "wide_rmsnorm_fwd", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {})
    # Rows spread over a cluster: 4 CTAs of N/4 columns (at least 64).
    yield from split_cases(x, w, dy, cluster=4, min_block=64, fwd_p=2)


def split_cases(x, w, dy, cluster, min_block, fwd_p, sized=None):
    """The cluster split kernels, each CTA holding N / cluster columns (at
    least min_block): the forward with fwd_p clusters walking the rows (the
    next row prefetched), the backwards with P = 2. `sized`: consts (BLOCK_N,
    WARPS) for the plain splits instead of the power-of-two slice; the shifted
    and head forms keep theirs."""
    N = x.shape[-1]
    split = {"CLUSTER": cluster, "BLOCK_N": max(min_block, 1 << (max(1, cdiv(N, cluster)) - 1).bit_length())}
    plain = {**split, **(sized or {})}
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_fwd_split", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {},
           {**plain, "P": fwd_p})
    for kernel in ("rmsnorm_bwd_split", "rmsnorm_bwd_split_smem"):
        yield ("stdlib/norm/rmsnorm.fnk", kernel, {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
               ["dx", "dw_partial"], {}, {"P": 2}, plain)
    # Three clusters adding their partials into two rows of sums (fnk run zeroes an atomically added output).
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd_split_acc", {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
           ["dx", "dw_acc"], {}, {"R": 2}, {**plain, "P": 3})
    # The splits' slices shifted onto 16-byte boundaries (VEC = 8, fnk.torch's for 16-bit rows of odd width
    # where the slices have room): 8 clusters, so that every shift of a row of odd width comes up.
    shifted = {**split, "BLOCK_N": max(min_block, 1 << (cdiv(N + 7, cluster) - 1).bit_length()), "VEC": 8}
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd_split_acc", {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
           ["dx", "dw_acc"], {}, {"R": 2}, {**shifted, "P": 8})
    for kernel in ("rmsnorm_bwd_split", "rmsnorm_bwd_split_smem"):
        yield ("stdlib/norm/rmsnorm.fnk", kernel, {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
               ["dx", "dw_partial"], {}, {"P": 8}, shifted)
    # Slices without room for the shift (HEAD = true, fnk.torch's where N + 7 > CLUSTER * BLOCK_N): they start
    # on the 16-byte boundary past the row's start, and rank 0 holds the columns before it in a head tile.
    head = {**split, "VEC": 8, "HEAD": "true"}
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd_split_acc", {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
           ["dx", "dw_acc"], {}, {"R": 2}, {**head, "P": 8})
    for kernel in ("rmsnorm_bwd_split", "rmsnorm_bwd_split_smem"):
        yield ("stdlib/norm/rmsnorm.fnk", kernel, {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
               ["dx", "dw_partial"], {}, {"P": 8}, head)
    b = np.random.default_rng(x.shape[-1]).standard_normal(x.shape[-1])
    # w and b held, and read per row at two CTAs per SM (fnk.torch's for 6144 columns and rows that fill clusters).
    for per_row in ({}, {"HOLD": "false", "CTAS": 2}):
        yield ("stdlib/norm/layernorm.fnk", "layernorm_fwd_split", {"x": x + 3.0, "w": w, "b": b},
               ["y", "mean", "rstd"], {"eps": 1e-5}, {}, {**plain, "P": fwd_p, **per_row})
    # The forwards shifted and with a head tile, as the backwards below (fnk.torch's for 16-bit rows of odd width).
    for form in (shifted, head):
        yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_fwd_split", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {},
               {**form, "P": 8})
        for per_row in ({}, {"HOLD": "false"}):
            yield ("stdlib/norm/layernorm.fnk", "layernorm_fwd_split", {"x": x + 3.0, "w": w, "b": b},
                   ["y", "mean", "rstd"], {"eps": 1e-5}, {}, {**form, "P": 8, **per_row})
    mu, r = _mean_rstd(x)
    # With the next row loaded ahead (fnk.torch's) and without; w's slice in registers (fnk.torch's in bf16) and
    # in shared memory (in float32).
    for pf, ws in ((0, 0), (1, 0), (1, 1)):
        yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd_split_acc",
               {"x": x, "w": w, "dy": dy, "mean": mu, "rstd": r}, ["dx", "dw_acc", "db_acc"], {}, {"R": 2},
               {**plain, "P": 3, "PF": pf, "WS": ws})
    for pf, ws in ((1, 0), (0, 1)):  # shifted, as fnk.torch takes it over 8192- and 16384-column slices
        yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd_split_acc",
               {"x": x, "w": w, "dy": dy, "mean": mu, "rstd": r}, ["dx", "dw_acc", "db_acc"], {}, {"R": 2},
               {**shifted, "P": 8, "PF": pf, "WS": ws})
    # Its deterministic form (fnk.torch under torch.use_deterministic_algorithms): one stored row per cluster CTA.
    for pf, ws in ((1, 0), (1, 1)):
        yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd_split",
               {"x": x, "w": w, "dy": dy, "mean": mu, "rstd": r}, ["dx", "dw_partial", "db_partial"], {}, {"P": 3},
               {**plain, "PF": pf, "WS": ws})
    # Both with a head tile (HEAD = true), as the RMSNorm splits above.
    yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd_split_acc",
           {"x": x, "w": w, "dy": dy, "mean": mu, "rstd": r}, ["dx", "dw_acc", "db_acc"], {}, {"R": 2},
           {**head, "P": 8})
    yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd_split",
           {"x": x, "w": w, "dy": dy, "mean": mu, "rstd": r}, ["dx", "dw_partial", "db_partial"], {}, {"P": 8}, head)
    # The rings of bench/variants.fnk (copy_async): x (and dy) staged rows ahead in shared memory.
    yield ("bench/variants.fnk", "rms_fwd_split_ring", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {},
           {**plain, "P": fwd_p, "S": 3})
    yield ("bench/variants.fnk", "rms_bwd_split_ring", {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
           ["dx", "dw_partial"], {}, {"P": 2}, {**plain, "S": 2})
    # The same through bulk copies (copy_bulk), rings deeper than some CTAs' rows, and pipelined by hand
    # around the cluster reduction (run.sh checks it again with FNK_CLUSTER_DEFER=1).
    for kernel in ("rms_bwd_split_bulk", "rms_bwd_split_pipe"):
        for st in (2, 3):
            yield ("bench/variants.fnk", kernel, {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
                   ["dx", "dw_partial"], {}, {"P": 2}, {**plain, "S": st})
    # Pipelined the same way without the ring: the row read again from L2 for dx.
    yield ("bench/variants.fnk", "rms_bwd_split_l2pipe", {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
           ["dx", "dw_partial"], {}, {"P": 2}, plain)


def sized_cases(rng, M, N, warps, cluster, slice_warps):
    """Tiles sized to the row, not padded to a power of two: BLOCK_N the row
    rounded up to whole warps of 16-byte pieces (256 columns), held by WARPS
    warps (BLOCK_N / 256 a multiple of warps), in the row kernels; then the
    split kernels over `cluster` slices sized the same way, in slice_warps
    warps (perf-notes v41: a padded last slice slows the whole backward)."""
    x, w, dy = rng.standard_normal((M, N)), rng.standard_normal(N), rng.standard_normal((M, N))
    mu, r = _mean_rstd(x)
    row = {"BLOCK_N": cdiv(N, 256) * 256, "WARPS": warps}
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_fwd_row", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {}, row)
    yield ("stdlib/norm/layernorm.fnk", "layernorm_fwd_row", {"x": x + 3.0, "w": w, "b": w[::-1].copy()},
           ["y", "mean", "rstd"], {"eps": 1e-5}, {}, {**row, "L2": 5})
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd", {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
           ["dx", "dw_partial"], {}, {"P": 2}, row)
    yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd", {"x": x, "w": w, "dy": dy, "mean": mu, "rstd": r},
           ["dx", "dw_partial", "db_partial"], {}, {"P": 2}, row)
    sized = {"BLOCK_N": cdiv(cdiv(N, cluster), 256) * 256, "WARPS": slice_warps}
    # The plain splits only: the shifted and head forms (VEC = 8) take power-of-two slices.
    yield from (c for c in split_cases(x, w, dy, cluster=cluster, min_block=1024, fwd_p=2, sized=sized)
                if "VEC" not in c[-1])


def dit_cases(rng, B, S, H):
    x = rng.standard_normal((B, S, H))
    w, b = rng.standard_normal(H), rng.standard_normal(H)
    scale, shift = 0.1 * rng.standard_normal((B, H)), rng.standard_normal((B, H))
    dy = rng.standard_normal((B, S, H))
    mu, r = _mean_rstd(x)
    SB = cdiv(S, 8)
    # SB = 3 CTAs per batch walk its rows (ragged unless 3 divides S), two warps each.
    yield ("examples/dit_modulate.fnk", "dit_modulate_fwd",
           {"x": x, "w": w, "b": b, "scale": scale, "shift": shift}, ["y", "mean", "rstd"], {"eps": 1e-5}, {},
           {"SB": 3, "WARPS": 2})
    # One-warp CTAs (the default): the reductions finish in the butterfly, without scratch; two stages.
    yield ("examples/dit_modulate.fnk", "dit_modulate_fwd",
           {"x": x, "w": w, "b": b, "scale": scale, "shift": shift}, ["y", "mean", "rstd"], {"eps": 1e-5}, {},
           {"WARPS": 1, "SB": 2, "STAGES": 2})
    # The same asking L2 for the first rows of the CTA 3 places later (into the next batch, past the last one).
    yield ("examples/dit_modulate.fnk", "dit_modulate_fwd",
           {"x": x, "w": w, "b": b, "scale": scale, "shift": shift}, ["y", "mean", "rstd"], {"eps": 1e-5}, {},
           {"WARPS": 1, "SB": 2, "STAGES": 3, "L2": 3})
    # The rows staged in shared memory by bulk copies, rings deeper than some CTAs' rows, in the
    # tightest tile (BLOCK_H the width rounded up to a power of two: full rows take the unmasked branch).
    for file, kernel, stages in (("examples/dit_modulate.fnk", "dit_modulate_fwd", 2),
                                 ("examples/dit_modulate.fnk", "dit_modulate_fwd", 4),
                                 ("bench/variants.fnk", "dit_fwd_bulk2", 3),
                                 ("bench/variants.fnk", "dit_fwd_bstore", 3)):
        yield (file, kernel,
               {"x": x, "w": w, "b": b, "scale": scale, "shift": shift}, ["y", "mean", "rstd"], {"eps": 1e-5}, {},
               {"SB": 3, "STAGES": stages, "BLOCK_H": max(256, 1 << (H - 1).bit_length())})
    # The copies bench/dit_probe.py times beside the DiT forward.
    yield ("bench/variants.fnk", "copy_staged", {"x": x}, ["y"], {}, {},
           {"SB": 3, "BLOCK_H": max(256, 1 << (H - 1).bit_length())})
    yield ("bench/variants.fnk", "copy_rows", {"x": x.reshape(B * S, H)}, ["y"], {}, {},
           {"P": 5, "BLOCK_N": max(256, 1 << (H - 1).bit_length())})
    # One kernel: the batch's last CTA reads the sums its CTAs added, the last batch writes dw and db
    # (accb, acc and the tickets start and end at 0); SB = 3 CTAs per batch, ragged unless 3 divides S.
    yield ("examples/dit_modulate.fnk", "dit_modulate_bwd",
           {"x": x, "w": w, "b": b, "scale": scale, "dy": dy, "mean": mu, "rstd": r},
           ["dx", "dscale", "dshift", "dw", "db", "accb", "acc", "ticket"], {}, {"BT": B + 1}, {"SB": 3})
    # The same with x and dy prefetched into L2 two steps ahead (past the batch's end: nothing asked).
    yield ("examples/dit_modulate.fnk", "dit_modulate_bwd",
           {"x": x, "w": w, "b": b, "scale": scale, "dy": dy, "mean": mu, "rstd": r},
           ["dx", "dscale", "dshift", "dw", "db", "accb", "acc", "ticket"], {}, {"BT": B + 1}, {"SB": 3, "L2": 2})
    # The two kernels it replaced: partial rows, then their sums.
    yield ("bench/variants.fnk", "dit_bwd_parts",
           {"x": x, "w": w, "scale": scale, "dy": dy, "mean": mu, "rstd": r},
           ["dx", "ps0", "ps1"], {}, {"SB": SB})
    # The backward with x and dy staged by bulk copies, rings deeper than some CTAs' rows.
    for stages, warps in ((3, 2), (4, 4)):
        yield ("bench/variants.fnk", "dit_bwd_staged",
               {"x": x, "w": w, "b": b, "scale": scale, "dy": dy, "mean": mu, "rstd": r},
               ["dx", "pscale", "pshift", "pw", "pb"], {}, {"SB": SB},
               {"STAGES": stages, "WARPS": warps, "BLOCK_H": max(256, 1 << (H - 1).bit_length())})
    p = {k: rng.standard_normal((B, SB, H)) for k in ("ps0", "ps1")}
    # dw, db through atomics and a last-CTA ticket per 32-column block (acc and ticket start and end at 0).
    yield ("bench/variants.fnk", "dit_bwd_parts_reduce", {"w": w, "b": b, "scale": scale, **p},
           ["dscale", "dshift", "dw", "db", "acc", "ticket"], {}, {"C": cdiv(H, 32)})


def wide_cases(rng, M, N):
    """Tiles of several chunks per thread (backend v1, docs/perf-notes.md "GPU
    backend v1: wide tiles"): the one-test-per-access vector path and its
    per-chunk fallback (ragged N), loads hoisted above reductions, the row
    loop's prefetch, outer-axis reductions in registers, the cluster reduce
    with the deferred wait."""
    x = rng.standard_normal((M, N))
    w = rng.standard_normal(N)
    dy = rng.standard_normal((M, N))
    P = cdiv(M, 2)
    wide = {"BLOCK_N": 8192}
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_fwd", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {}, wide)
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd", {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
           ["dx", "dw_partial"], {}, {"P": P}, wide)
    mu, r = _mean_rstd(x)
    b = rng.standard_normal(N)
    yield ("stdlib/norm/layernorm.fnk", "layernorm_fwd", {"x": x, "w": w, "b": b}, ["y", "mean", "rstd"],
           {"eps": 1e-5}, {}, wide)
    yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd", {"x": x, "w": w, "dy": dy, "mean": mu, "rstd": r},
           ["dx", "dw_partial", "db_partial"], {}, {"P": P}, wide)
    # Wider than one tile: the chunked loops with 4-chunk tiles.
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_fwd", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {},
           {"BLOCK_N": 4096})
    yield ("examples/wide_rmsnorm.fnk", "wide_rmsnorm_fwd", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {},
           {"BLOCK_N": 4096, "CLUSTER": 2})
    # Outer-axis reductions held in registers: [BLOCK_P, BLOCK_N] with BLOCK_N = T * V.
    Pp = 13
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd_dw", {"partial": rng.standard_normal((Pp, N))}, ["dw"], {}, {},
           {"BLOCK_N": 1024, "BLOCK_P": 8})
    yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd_dwdb",
           {"dw_partial": rng.standard_normal((Pp, N)), "db_partial": rng.standard_normal((Pp, N))}, ["dw", "db"], {},
           {}, {"BLOCK_N": 1024, "BLOCK_P": 8})
    # Cluster kernels with 2-chunk tiles per CTA.
    yield from split_cases(x, w, dy, cluster=2, min_block=4096, fwd_p=3)


def wide_dit_cases(rng, B, S, H):
    for c in dit_cases(rng, B, S, H):
        base, consts = c[:6], (c[6] if len(c) > 6 else {})
        if consts.get("WARPS") == 1 or c[1] in ("copy_staged", "copy_rows"):
            continue  # one warp over 4096 columns is 128 elements per lane: not a schedule anyone would run
        if c[1] == "dit_bwd_parts_reduce":
            yield base[:5] + ({"C": cdiv(H, 1024)},) + ({**consts, "BLOCK_N": 1024, "BLOCK_P": 4},)
        else:
            yield base + ({**consts, "BLOCK_H": 4096},)


def tile_cases(rng, M, N):
    """Several rows per CTA as one [ROWS, N] tile (rmsnorm_bwd_rows,
    layernorm_bwd_rows, and dit_fwd_tile in bench/variants.fnk): row
    statistics broadcast back over their rows by remat (folded again from the
    reduction's scratch, per-row values read again), M not a multiple of ROWS."""
    x = rng.standard_normal((M, N))
    w = rng.standard_normal(N)
    dy = rng.standard_normal((M, N))
    row = {"BLOCK_N": max(256, 1 << (N - 1).bit_length()), "ROWS": 2, "WARPS": 4}
    yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd_rows", {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
           ["dx", "dw_partial"], {}, {"P": 3}, row)
    mu, r = _mean_rstd(x)
    yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd_rows", {"x": x, "w": w, "dy": dy, "mean": mu, "rstd": r},
           ["dx", "dw_partial", "db_partial"], {}, {"P": 3}, row)
    # Rows in warps (ROWS >= WARPS, N a multiple of 256): the row sums stay in
    # the lanes; 6 rows over 4 warps leave padding rows.
    if N % 256 == 0 and N <= 1024:
        for rows in (8, 6):
            wr = dict(row, ROWS=rows)
            yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd_rows", {"x": x, "w": w, "dy": dy, "rstd": _rstd(x)},
                   ["dx", "dw_partial"], {}, {"P": 2}, wr)
            yield ("stdlib/norm/layernorm.fnk", "layernorm_bwd_rows",
                   {"x": x, "w": w, "dy": dy, "mean": mu, "rstd": r}, ["dx", "dw_partial", "db_partial"], {}, {"P": 2}, wr)
            yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_fwd_rows", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {}, wr)
            yield ("stdlib/norm/layernorm.fnk", "layernorm_fwd_rows", {"x": x, "w": w, "b": rng.standard_normal(N)},
                   ["y", "mean", "rstd"], {"eps": 1e-5}, {}, wr)
    # The forwards at two rows and at fnk.torch's 4096-element tiles.
    b = row["BLOCK_N"]
    for consts in (row, {"BLOCK_N": b, "ROWS": max(1, 4096 // b), "WARPS": 4}):
        yield ("stdlib/norm/rmsnorm.fnk", "rmsnorm_fwd_rows", {"x": x, "w": w}, ["y", "rstd"], {"eps": 1e-5}, {},
               consts)
        yield ("stdlib/norm/layernorm.fnk", "layernorm_fwd_rows", {"x": x, "w": w, "b": rng.standard_normal(N)},
               ["y", "mean", "rstd"], {"eps": 1e-5}, {}, consts)
    B, S = 2, M
    xd = rng.standard_normal((B, S, N))
    yield ("bench/variants.fnk", "dit_fwd_tile",
           {"x": xd, "w": w, "b": rng.standard_normal(N), "scale": 0.1 * rng.standard_normal((B, N)),
            "shift": rng.standard_normal((B, N))}, ["y", "mean", "rstd"], {"eps": 1e-5}, {},
           {"BLOCK_H": row["BLOCK_N"], "ROWS": 4, "WARPS": 4})


def lang_cases(rng):
    """tests/gpu/lang.fnk: the language's constructs beyond the norms' (shared
    buffers, shapes, math, integers, casts, reductions, control flow, masks,
    3-D grids, clusters), on ragged shapes; every output element is written."""
    f = "tests/gpu/lang.fnk"
    x2 = rng.standard_normal((37, 70))
    yield (f, "lang_shared_transpose", {"x": x2}, ["y"], {}, {})
    yield (f, "lang_shapes", {"a": rng.standard_normal(32), "b": rng.standard_normal(64)}, ["y", "z"], {}, {})
    x1 = rng.standard_normal(1000) * 2.0
    yield (f, "lang_math", {"x": x1}, ["y"], {}, {})
    yield (f, "lang_int", {"x": x1}, ["y"], {}, {})
    divisors = rng.choice([-9, -3, -1, 1, 2, 7, 13], 1000).astype(np.float64)
    for d in (7, -3, -1):
        yield (f, "lang_int_div", {"x": x1, "dv": divisors}, ["y"], {"d": d, "m1": -1}, {})
    yield (f, "lang_casts", {"x": x1}, ["y"], {}, {})
    yield (f, "lang_reduce", {"x": rng.standard_normal((37, 64))}, ["rows_out", "cols_out", "all_out"], {}, {"P": 3})
    for rows, p in ((6, 7), (8, 5)):  # rows in warps, with and without padding rows
        yield (f, "lang_warp_rows", {"x": rng.standard_normal((37, 256)), "r": rng.standard_normal(37)},
               ["y", "stats", "cols_out", "all_out"], {}, {"P": p}, {"ROWS": rows})
    yield (f, "lang_control", {"x": rng.standard_normal((7, 300))}, ["y", "s"], {}, {})
    yield (f, "lang_grid3", {"x": rng.standard_normal((2, 3, 5))}, ["y"], {}, {})
    yield (f, "lang_cluster", {"x": rng.standard_normal((6, 64))}, ["y", "z", "s"], {}, {})
    yield (f, "lang_cluster_siblings", {"x": rng.standard_normal((6, 64))}, ["s", "c"], {}, {})
    yield (f, "lang_cluster_group", {"x": rng.standard_normal((8, 64))}, ["y", "s"], {}, {})
    for n in (512, 300):  # whole rows and ragged ones (masked elements)
        yield (f, "lang_warp_push", {"x": rng.standard_normal((8, n))}, ["s"], {}, {})
    for n in (1024, 1000):  # whole rows (every 16-byte access hinted) and ragged ones
        yield (f, "lang_stream", {"x": rng.standard_normal((5, n))}, ["y"], {}, {})
    xr, dyr = rng.standard_normal((37, 1000)), rng.standard_normal((37, 1000))
    # The backward through a shared-memory ring (copy_async), rings longer than some CTAs' rows.
    yield ("bench/variants.fnk", "rms_bwd_ring", {"x": xr, "w": rng.standard_normal(1000), "dy": dyr, "rstd": _rstd(xr)},
           ["dx", "dw_partial"], {}, {"P": 5}, {"BLOCK_N": 1024, "WARPS": 4, "S": 3})
    yield ("bench/variants.fnk", "rms_bwd_ring", {"x": xr, "w": rng.standard_normal(1000), "dy": dyr, "rstd": _rstd(xr)},
           ["dx", "dw_partial"], {}, {"P": 16}, {"BLOCK_N": 1024, "WARPS": 8, "S": 4})
    yield ("bench/variants.fnk", "rms_bwd_ring", {"x": xr, "w": rng.standard_normal(1000), "dy": dyr, "rstd": _rstd(xr)},
           ["dx", "dw_partial"], {}, {"P": 5}, {"BLOCK_N": 1024, "WARPS": 4, "S": 3, "SYNC": 0})
    # The same ring filled by bulk copies (copy_bulk).
    for p, wp, st in ((5, 4, 3), (16, 8, 4), (5, 4, 2)):
        yield ("bench/variants.fnk", "rms_bwd_bulk", {"x": xr, "w": rng.standard_normal(1000), "dy": dyr, "rstd": _rstd(xr)},
               ["dx", "dw_partial"], {}, {"P": p}, {"BLOCK_N": 1024, "WARPS": wp, "S": st})
    # Atomics: M = 13 rows over G = 4 CTAs, the last ragged; 16 bins (i32 input).
    yield (f, "lang_atomic", {"x": rng.standard_normal((13, 64)), "bins": rng.integers(0, 16, (13, 64))},
           ["hist", "count", "total", "ticket", "mean", "seen"], {}, {"NB": 16, "G": 4})
    # CTAs that wait for each other (wait_ge, atomic_add(release = true)): a chain from the last CTA down,
    # then a grid-wide barrier; one CTA, a ragged last block, and 40 CTAs.
    for n in (100, 1000, 10000):
        yield (f, "lang_wait", {"x": rng.standard_normal(n) + 2.0}, ["suffix", "flag", "total", "arrived", "y", "z"],
               {}, {"G": cdiv(n, 256)})
    # The short backward in one kernel (bench/variants.fnk): rows, a grid-wide barrier, the partial rows summed;
    # P = 5 with ragged rows and a partial last column block, P = 16 over whole 8192-wide rows (all 16 partial
    # rows in one masked 256-row load). Its own generator, so the cases after it keep their inputs.
    g = np.random.default_rng(77)
    for m, n, p, bn, wp, bp in ((37, 1000, 5, 1024, 4, 32), (40, 8192, 16, 8192, 16, 256)):
        xg = g.standard_normal((m, n))
        yield ("bench/variants.fnk", "rms_bwd_gridsync",
               {"x": xg, "w": g.standard_normal(n), "dy": g.standard_normal((m, n)), "rstd": _rstd(xg)},
               ["dx", "dw", "dw_partial", "count"], {}, {"P": p}, {"BLOCK_N": bn, "WARPS": wp, "BLOCK_P": bp})
    # copy_async: ragged and aligned rows (16-byte cp.async), odd N (misaligned rows: element copies).
    for n in (500, 512, 7, 257):
        yield (f, "lang_copy_async", {"x": rng.standard_normal((3, n))}, ["y"], {}, {})
    for m, n, s in ((9, 300, 3), (1, 256, 2), (20, 1000, 4)):
        yield (f, "lang_pipeline", {"x": rng.standard_normal((m, n))}, ["y"], {}, {}, {"S": s})
    # copy_bulk: aligned rows (bulk), a ragged last block (bulk prefix, zeros after), odd N and shifted
    # starts (misaligned: element copies; SHIFT = 8 is aligned for both dtypes, 4 for f32 only), and rings
    # deeper than the rows.
    for m, n, s, shift in ((9, 300, 3, 0), (1, 256, 2, 0), (20, 1000, 4, 4), (5, 257, 2, 0), (6, 700, 3, 3),
                           (7, 1000, 3, 8), (2, 512, 5, 0)):
        yield (f, "lang_bulk", {"x": rng.standard_normal((m, n))}, ["y"], {}, {}, {"S": s, "SHIFT": shift})
    # store_bulk: aligned rows (bulk), ragged last blocks (a bulk prefix, nothing past N), odd N (element
    # stores), runs shifted in their slot (SHIFT = 8 aligned for both dtypes, 4 for f32 only), one slot.
    for m, n, ring, shift in ((9, 300, 2, 0), (3, 256, 1, 0), (20, 1000, 3, 4), (5, 257, 2, 0), (6, 700, 2, 3),
                              (7, 1000, 2, 8)):
        yield (f, "lang_bulk_store", {"x": rng.standard_normal((m, n))}, ["y"], {}, {}, {"R": ring, "SHIFT": shift})
    # Contiguous atomic adds (vector red where aligned): N = 250 and 257 ragged and misaligned.
    for n in (250, 257, 256):
        yield (f, "lang_red", {"x": rng.standard_normal((7, n))}, ["acc", "colsum"], {}, {})
    yield (f, "lang_big_shared", {"x": rng.standard_normal(40000)}, ["y"], {}, {})   # 128 KiB: dynamic
    yield (f, "lang_big_shared", {"x": rng.standard_normal(3000)}, ["y"], {}, {}, {"SIZE": 1024})  # static
    # 996 f32: swizzled buffers not a whole number of 8-element groups; allocated exact, a's element 992
    # would live at 996, b's first (lowering v1.28 pads them)
    yield (f, "lang_big_shared", {"x": rng.standard_normal(3000)}, ["y"], {}, {}, {"SIZE": 996})


def all_cases(quick=False, knob=False):
    """Every case as (T, label, file, kernel, inputs, outputs, scalars, dims[, consts]). bench/variants.fnk's
    candidate schedules only in bf16, the dtype tune.py times them in: in f32 they took 277 of run.sh's 1374
    checks (backend v14) and repeat lowering paths the stdlib's and the examples' f32 cases cover. `knob`: the
    shapes of run.sh's knob steps, one ragged and one full tile of each family (a knob changes how a kernel is
    lowered, not which shapes it takes), and rows of 1003 columns, off 16-byte alignment with whole chunks
    (FNK_UNALIGNED), a quarter of the cases; `quick` fewer still, without the DiT's."""
    for case in _cases(quick, knob):
        if not (case[0] == "f32" and case[2] == "bench/variants.fnk"):
            yield case


def _cases(quick, knob):
    rng = np.random.default_rng(1234)
    # 1003: rows off 16-byte alignment with whole chunks (2 bytes off in bf16, 4 in f32)
    Ns = [1000, 4096] if quick else [1000, 1003, 8192] if knob else [1, 7, 1000, 1003, 4096, 8192]
    Ms = [3] if quick else [7] if knob else [1, 7, 64]
    for T in ("bf16", "f32"):
        for N in Ns:
            for M in Ms:
                for c in rmsnorm_cases(rng, M, N):
                    yield (T, f"M={M} N={N}") + c
        if not quick:
            for (B, S, H) in [(2, 9, 1000), (2, 3, 1003), (1, 3, 1024)] if knob else [(2, 5, 7), (2, 9, 1000), (1, 3, 1024)]:
                for c in dit_cases(rng, B, S, H):
                    yield (T, f"B={B} S={S} H={H}") + c
        for N in ([8192] if quick else [1000, 1003, 8192] if knob else [1000, 4100, 8192]):
            for M in ([3] if quick or knob else [1, 5]):
                for c in wide_cases(rng, M, N):
                    yield (T, f"wide M={M} N={N}") + c
        if not (quick or knob):
            # Ragged rows over clusters of any size (schedules.ragged_split): 5 x 4096 and 12 x 8192, the last
            # CTA partly past the row; and over 1024-column slices (schedules.slices_of_1024's backwards): 5 x 1024
            # and 3 x 1024, the last CTA half empty.
            for (M, N, cluster, block) in [(5, 20000, 5, 4096), (3, 98304, 12, 4096), (5, 4608, 5, 1024),
                                           (7, 2560, 3, 1024)]:
                x, w, dy = rng.standard_normal((M, N)), rng.standard_normal(N), rng.standard_normal((M, N))
                for c in split_cases(x, w, dy, cluster=cluster, min_block=block, fwd_p=2):
                    yield (T, f"ragged cluster={cluster} M={M} N={N}") + c
            # Tiles sized to the row (not a power of two), full and ragged: 5632 in 11 warps (two 16-byte pieces a
            # lane) and over 2 x 2816 in 11; 4608 in 18 warps and over 3 x 1536 in 6; 3000 in a 3072 tile of 12
            # warps and over 2 x 1536 in 3 (two pieces a lane). Then schedules.sized's own launches (backend v42):
            # 4608 in 9 and over 3 x 1536 in 3, 2560 in 5, 7168 in 14; and 1000 in a 1024 tile of 6 warps, 256
            # chunks over 192 threads (the fold v42 mended read only the first chunk's partials).
            for (M, N, warps, cluster, slice_warps) in [(5, 5632, 11, 2, 11), (3, 5600, 11, 2, 11),
                                                         (5, 4608, 18, 3, 6), (7, 3000, 12, 2, 3),
                                                         (5, 4608, 9, 3, 3), (7, 2560, 5, 2, 5), (3, 7168, 14, 2, 7),
                                                         (5, 1000, 6, 2, 1)]:
                for c in sized_cases(rng, M, N, warps, cluster, slice_warps):
                    yield (T, f"sized M={M} N={N}") + c
        for (M, N) in ([(7, 1000)] if quick else [(7, 1000), (5, 8192)] if knob else
                       [(7, 1000), (5, 8192), (9, 64), (7, 768)]):
            for c in tile_cases(rng, M, N):
                yield (T, f"tile M={M} N={N}") + c
        for c in lang_cases(rng):
            yield (T, "lang") + c
        if not quick:
            for (B, S, H) in [(2, 9, 1000), (1, 5, 4096)]:
                for c in wide_dit_cases(rng, B, S, H):
                    yield (T, f"wide B={B} S={S} H={H}") + c
