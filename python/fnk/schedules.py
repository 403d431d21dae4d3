"""The launch schedules fnk.torch uses for the stdlib norms: for rows of n
columns, which kernel and which const generics, chosen by measurement on the
H200 (bench/tune.py; docs/perf-notes.md). Free of torch, so that tests can
enumerate them (tests/lit/gpu/spills.test checks their registers)."""
import functools
from typing import NamedTuple


class Launch(NamedTuple):
    kernel: str
    consts: dict
    per_sm: int = 1   # backward partial-sum rows: per_sm per SM (never more than the rows) ...
    cluster: int = 1  # ... over the CTAs of a cluster, which share one;
    grid: int = 0     # or, when set, exactly this many (the clusters resident at once)


# Clusters of 16 CTAs (one per SM) take most of a GPC each: the H200 holds 7
# of them at once (112 of its 132 SMs; `fnk run --bench` prints it), so a grid
# of P such clusters runs in ceil(P / 7) waves. The persistent kernels are
# launched as exactly the resident clusters, one wave that walks all rows:
# 1024x262144 forward P = 7 299 us, 14 302, 49 310, 8 467 (two waves, the
# second one cluster); backward (rmsnorm_bwd_split_smem) 620 against 643 at
# 49 (bench/tune.py, docs/perf-notes.md "GPU backend v6"). `resident(launch)`
# is how callers with a GPU ask (fnk.torch: Kernel.occupancy); without it,
# or when it says 0, the per-SM formulas below stand.
def _resident_grid(launch, resident):
    if launch.cluster < 16 or resident is None:
        return launch
    r = resident(launch)
    return launch._replace(grid=r) if r and r > 0 else launch


def block(n):
    """The tile width: the row in one tile up to 8192 columns (one pass over x),
    chunks of 8192 beyond."""
    b = 256
    while b < n and b < 8192:
        b *= 2
    return b


def exact_split(n):
    """(CLUSTER, BLOCK_N) for a row of 4097 to 65536 columns that is 3 or 5
    power-of-two slices of 1024 to 8192 columns (5120 = 5 x 1024, 6144 = 3 x
    2048, 10240 = 5 x 2048, 12288 = 3 x 4096; the widest slices), else None.
    Padded to a power of two, such rows leave a quarter or more of the lanes
    idle, and in a cluster of two the second CTA with a part of the work.
    fnk.torch's RMSNorm in bf16 on the H200 (backend v28), the forward and
    the backward in us, padded / exact: 13107x5120 105.8 / 77.3 and 189.7 /
    116.6; 10922x6144 84.0 / 72.3, 139.7 / 120.9; 6553x10240 103.6 / 72.2,
    198.5 / 124.7; 5461x12288 81.7 / 74.3, 146.7 / 116.9. Seven slices lost
    to the padding's 7/8 of the lanes (9362x7168 over 7 x 1024: 78.0 /
    118.2 against 73.0 / 107.8; 4681x14336 over 7 x 2048: the backward 122.5
    against 112.9), and narrower rows keep their padded tiles (26214x2560:
    the backward 152.0 one row per step, 170.6 over 5 x 512)."""
    if n <= 4096 or n > 65536:
        return None
    for b in (8192, 4096, 2048, 1024):
        if n % b == 0 and n // b in (3, 5):
            return n // b, b
    return None


def slices_of_1024(n, dtype, narrow=False):
    """(CLUSTER, 1024) for a backward's 16-bit row of whole 16-byte pieces
    that its power-of-two tile would leave idle in part: 4097-5119 columns
    (2 x 4096 or an 8192 tile at most 5/8 full) over 5 x 1024 (exact_split's
    slices for 5120), and where `narrow` (LayerNorm, whose 4096 row tile lost
    at 3/4 full too), 2049-3072 over 3 x 1024; else None. The backwards walk
    rows with every lane of their tile, so a padded lane costs as a full
    one; and a padded last slice costs the cluster more than its lanes (the
    5 x 1024 split alone: 98.3 us at 8000x4608 against 74.3 at 8000x5120,
    backend v41), so these launches win by less than the fill says; rows
    of whole 512s take tiles sized to them instead (sized, backend v42:
    4608 over 3 x 1536 85.0 us against 131.9 here), and these launches
    serve the rest of the two ranges. Backend v40, bf16, us (bench/bwd_probe.py; the padded launch and
    torch.compile in one process; 4608 and 3072 the widths measured, the
    rest of the two ranges interpolated):

    | rows x columns | 1024 slices | padded | other | torch.compile |
    |---|---|---|---|---|
    | RMSNorm 11000x4608 | 131.9 | 177.7 (2 x 4096) | 3 x 2048 152.2 | 172.5 |
    | LayerNorm 11000x4608 | 140.9 | 172.4 (8192 tile) | 3 x 2048 173.3 | 244.2 |
    | LayerNorm 16000x3072 | 99.8 | 146.1 (4096 tile) | | 182.8 |

    Where the tiles are 3/4 full they stay: RMSNorm 16000x3072 84.8 in
    its 4096 tile against 86.1 over 3 x 1024, 8000x6200 105.0 over 2 x
    4096 against 158.1 over 4 x 2048 and 175.1 over 7 x 1024 (LayerNorm's
    8192 tile 135.5 against 163.0 and 190.2). Rows off alignment keep the
    shifted splits (shifted_split)."""
    if dtype == "f32" or off_alignment(n, dtype):
        return None
    if 4096 < n < 5120 or (narrow and 2048 < n <= 3072):
        return -(-n // 1024), 1024
    return None


def sized(n, dtype):
    """Whether a row takes a tile sized to it instead of one padded to a power
    of two: 16-bit rows of 2049-8191 columns, whole pieces of 512 (a warp's
    32 lanes hold 512 columns in two 16-byte pieces each), not a power of
    two. The layout takes any multiple of 256 columns the warps divide, and
    since backend v42 a row over any count of warps folds by butterflies and
    one scratch round. The tile has no idle lane and the cluster no padded
    slice, which costs more than its lanes (backend v41). Backend v42, bf16,
    us, against the launch before (bench/bwd_probe.py and fwd_probe.py;
    torch.compile in the same process):

    | rows x columns | RMSNorm fwd | before | compile | LayerNorm fwd | before | compile |
    |---|---|---|---|---|---|---|
    | 20000x2560 | 51.9 (W5) | 66.0 | 76.0 | 65.2 (W5) | 80.9 | 158.9 |
    | 11000x4608 | 58.4 (W9) | 61.7 | 62.1 | 74.9 (W9) | 73.0 | 106.8 |
    | 9000x5632 | 55.0 (2 x 2816, W11) | 57.9 | 56.7 | 69.3 (W11) | 72.2 | 89.3 |
    | 9362x7168 | 68.4 (W7) | 71.6 | 67.3 | 82.5 (W14) | 89.6 | 109.9 |

    | rows x columns | RMSNorm bwd | before | compile | LayerNorm bwd | before | compile |
    |---|---|---|---|---|---|---|
    | 20000x2560 | 84.2 (row, W5) | 119.1 | 134.0 | 89.2 (row, W5) | 149.4 | 162.3 |
    | 16000x3072 | 78.8 (row, W6) | 84.6 | 139.9 | 84.3 (row, W6) | 99.7 | 185.7 |
    | 11000x4608 | 85.0 (3 x 1536, W3) | 132.5 | 176.3 | 94.0 (3 x 1536, W3) | 142.2 | 249.3 |
    | 9000x5632 | 82.0 (row, W11) | 132.9 | 192.8 | | | |

    Measured after the rule (its own launch / the one before / compile):
    RMSNorm backward 14000x3584 80.5 / 81.7 / 136.8, 7500x6656 80.6 / 98.1 /
    164.5; LayerNorm backward 9000x5632 86.3 / 138.1 / 214.8, 6800x7680 over
    3 x 2560 99.1 / 106.1 / 222.1; RMSNorm forward 16000x3072 in 3 warps
    50.8 (the copy: 50.7) / 55.0 / 65.1 (in 6 warps 54.1), 14000x3584 56.5 /
    56.8 / 61.9; LayerNorm forward 16000x3072 63.3 / 63.8 / 128.2,
    7500x6656 64.0 / 70.8 / 89.0. RMSNorm's 7680 backward keeps its 2 x
    4096 (82.4 against 89.4 over 3 x 2560), and 7168 backwards keep theirs
    (sized_bwd).

    The forwards hold 16 columns a thread (4608 in 9 warps: 58.4 against
    75.0 in 18; 2560 in 5: 51.9 against 62.5 in 10), RMSNorm's 32 where the
    row divides into 1024s (7168 in 7 warps: 68.4 against 75.6 in 14;
    LayerNorm's 14 warps there: sized_fwd_warps); RMSNorm's
    rows of an odd count of 512s past 4608 lost in the tile (5632: 61.0
    against the 2048 chunks' 57.9) and take two halves of it in as many
    warps (2 x 2816 in 11, 3 CTAs per SM: 55.0 and 55.3 in two rounds), up
    to 13/16 of 8192 (6656 and 7680 keep the padded tile, as before),
    LayerNorm's 4608 takes the tile at a loss of 2.6% to the chunks, for one
    rule. The backwards hold 16 columns a thread: the row kernel up to 4096
    columns (3072 in 6 warps, 78.8, against 94.1 in 12) and where no
    cluster of 3 divides the row into 512s (5632, one CTA per SM), else
    clusters of 3 (4608: 85.0 at 8 CTAs per SM, against the row kernel's
    92.1 in 9 warps and 2 x 2304's 99.4)."""
    return dtype != "f32" and 2048 < n < 8192 and n % 512 == 0 and n & (n - 1) != 0 and not exact_split(n)


def sized_fwd_warps(n, wide=True):
    """The warps of a forward's tile sized to n columns (sized): 16 columns
    a thread, or where `wide` (RMSNorm) 32 where 1024s divide the row.
    LayerNorm's row kernel asks ptxas for 3 CTAs per SM (CTAS), so at 7168
    columns it spills: 8 bytes at 40 registers in 14 warps (82.5 us at
    9362x7168), 28 at 80 in 7 (81.0); asked for 2 CTAs of 14 warps it spills
    none and runs 103.3 (the 1024 chunks 88.5; backend v42). The 14 warps
    stand, a known spill in tests/lit/gpu/spills.test."""
    return n // 1024 if wide and n % 1024 == 0 else n // 512


def sized_bwd(row_kernel, split_kernel, n, m, sms):
    """A backward's launch for a row that takes a tile sized to it (sized):
    16 columns a thread, in the row kernel (one row a step, 2 CTAs per SM up
    to 4096 columns, else one), or over clusters of 3 CTAs at 8 per SM where
    they divide the row into 512s past 4096 columns; None where the row
    kernel would take more than 13 warps (LayerNorm's 7168 in 14 spills 8
    bytes at the 128 registers a thread that 14 warps leave)."""
    pieces = n // 512
    if n > 4096 and pieces % 3 == 0:
        return Launch(split_kernel, {"BLOCK_N": n // 3, "CLUSTER": 3, "WARPS": pieces // 3}, per_sm=8, cluster=3)
    if pieces > 13:
        return None
    return Launch(row_kernel, {"BLOCK_N": n, "WARPS": pieces, "L2": _row_l2(m, sms)}, per_sm=2 if n < 4096 else 1)


def ragged_split(n, backward=False):
    """(CLUSTER, BLOCK_N) for a row wider than 8192 columns that is not a
    power of two: the narrowest slices of 2048 (up to 16384 columns; the
    backward's start at 4096 above 16384), 4096, 8192 or (the forward's)
    16384 columns that cover it in at most 16 CTAs with at most an eighth of
    their columns past the row, else None (some rows of 16385-57343
    columns). Padded to a power of two, such rows leave CTAs idle: the last
    CTA of 20000 over 4 x 8192 holds 3616 columns and the fourth none. In
    bf16 on the H200 (backend v32; bench/fwd_probe.py and bench/bwd_probe.py
    against torch.compile in one process), us, over these slices / over the
    padded split (torch.compile):

    | rows | RMSNorm fwd | RMSNorm bwd | slices |
    |---|---|---|---|
    | 4096x14000 | 65.2 / 68.0 (65.9) | 120.9 / 106.1: clusters of two kept | 7 x 2048 |
    | 4096x16000 | 72.8 / 71.4 (69.5) | clusters of two kept | 8 x 2048 |
    | 3276x20000 | 75.4 / 120.5 (74.6) | 126.7 / 275.7 (208.7) | 5 x 4096 |
    | 1600x40000 | 71.7 / 125.0 (94.9) | 130.5 / 279.1 (245.5) | 10 x 4096 (5 x 8192: 73.3, 151.4) |
    | 682x98304 | 78.6 / 122.4 (116.5) | 170.5 / 235.7 (273.6) | 12 x 8192 |
    | 342x196608 | 103.3 / 118.3 (116.2) | padded kept | 12 x 16384 |

    LayerNorm's backward over the same slices: 177.5 / 357.1 (275.0), 187.7
    / 360.6 (5 x 8192 238.7; 269.9), 249.8 / 599.3 for its row kernel
    (260.6); its forward in ln_fwd."""
    if n <= (16384 if backward else 8192) or n & (n - 1) == 0:
        return None
    for b in ((2048,) if n <= 16384 else ()) + (4096, 8192) + (() if backward else (16384,)):
        c = -(-n // b)
        if c <= 16 and 8 * (c * b - n) <= c * b:
            return c, b
    return None


def split(n, backward=False, dtype="f32"):
    """(CLUSTER, BLOCK_N, WARPS) for rows wider than one tile: the row spread
    over a cluster. From bench/tune.py on the H200 (docs/perf-notes.md, "GPU
    backend v3" and "v5"): clusters of up to 8 CTAs of 8192 columns, then
    16 CTAs of up to 16384 (1024x262144 forward: 16 x 16384 309 us, 8 x 32768
    382; backward: 8 x 32768 spills, 4790). The forward holds 32 columns per
    thread (x only); the backward, which also holds w and its dw partial, 16,
    capped at 16 warps (8192x65536: 8 x 8192 at 16 warps 868 us, at 8 916;
    1024x262144: 16 x 16384 at 16 warps 900, at 32 1199). The forward takes
    clusters of 16 CTAs of 8192 columns before slices of 16384 (backend v28:
    512x131072 75.8 us against 92.1 over 8 x 16384, 682x98304 122.3 against
    134.2; float32 256x131072 107.2 against 117.8, where 8 x 16384 also
    spilled 4 bytes). In 2-byte dtypes (measured in bf16 only), a row that
    exact_split cuts into 3 or 5 slices without padding takes those, at
    least 2 warps, and a ragged row the slices ragged_split covers it with."""
    cut = (exact_split(n) or ragged_split(n, backward)) if dtype != "f32" else None
    if cut:
        return cut[0], cut[1], max(2, cut[1] // (512 if backward else 1024))
    cluster = 2
    while cluster < 8 and cluster * 8192 < n:
        cluster *= 2
    if not backward and cluster * 8192 < n:  # the forward: 16 x 8192 before wider slices
        cluster = 16
    while cluster < 16 and cluster * 16384 < n:
        cluster *= 2
    width = 256
    while width * cluster < n:
        width *= 2
    warps = min(16, width // 512) if backward else min(32, width // 1024)
    return cluster, width, max(4, warps)


# The LayerNorm backward row kernel's warps (2048 < n <= 8192): bench/tune.py
# at 32768x8192 on the H200, backend v3: 16 warps 536 us, 8 546-562. RMSNorm's
# row kernel (up to 4096 columns) takes its own since backend v28 (rms_bwd).
BWD_ROW_WARPS = 16
REGS_PER_SM = 65536  # Hopper's register file per SM, in 32-bit registers


def rows_tile(n, warps, elems=4096):
    """The *_rows kernels' settings for rows of n <= 2048 columns: a [ROWS,
    BLOCK_N] tile of `elems` elements (BLOCK_N the row rounded up to a power
    of two, at least 32). From bench/tune.py on the H200 at 64M elements
    (docs/perf-notes.md, "GPU backend v5" and "v6"): the forwards at 4096
    elements and 4 warps (RMSNorm 512 columns 70 us against 73 for 8192-element
    tiles at 8 warps and 178 one row per CTA); the backwards in rms_bwd and
    ln_bwd."""
    b = 32
    while b < n:
        b *= 2
    return dict(BLOCK_N=b, ROWS=max(1, elems // b), WARPS=warps)


def off_alignment(n, dtype):
    """Whether a row of n elements of dtype is not a whole number of 16-byte
    pieces, so that most rows start off 16-byte alignment and the JIT
    compiles the code for tensors off alignment (design-notes)."""
    return n * (4 if dtype == "f32" else 2) % 16 != 0


# 16-bit elements per 16-byte piece: the shift of rows off alignment (VEC of
# rmsnorm_fwd, layernorm_fwd and the backward splits; std.norm.common's
# shift_start).
SHIFT_VEC = 8


def odd_chunks(n, short_to, wide_from):
    """The forwards' chunks for 16-bit rows off alignment wider than 2048
    columns, shifted onto 16-byte boundaries (VEC = 8: row r's walk starts
    (r * n) % 8 columns early, so x and y move in whole 16-byte pieces but at
    the row's two ends) and read twice, the second time from L2: 1024 wide
    at 4 warps up to `short_to` columns, 2048 wide at 4 warps above, and
    4096 wide at 16 warps from `wide_from` columns. The whole row in
    registers (rmsnorm_fwd_row, layernorm_fwd_row) or over a cluster (the
    splits) holds its elements' unaligned loads in flight at 80-128
    registers; the chunks hold a few. Backend v36 (bf16), us, v35's unshifted
    chunks beside it, and torch.compile in the same process:

    | rows x columns | RMSNorm | v35 | compile | LayerNorm | v35 | compile |
    |---|---|---|---|---|---|---|
    | 22369x3001 | 92.7 | 125.0 | 170.7 | 125.0 | 145.0 | 315.7 |
    | 13421x5001 | 85.0 | 134.6 | 164.6 | 113.0 | 166.8 | 189.5 |
    | 8000x7001 | 76.4 | | 127.5 | | | |
    | 8192x8191 | 95.1 | 109.3 | 107.5 | 115.2 | 134.8 | 145.1 |
    | 4096x16383 | 102.3 | 125.5 | 138.0 | 128.8 | 153.2 | 140.8 |
    | 1024x65537 | 114.0 | 159.4 | 194.2 | 140.4 | 194.5 | 243.6 |
    | 512x131071 | 111.9 | 158.8 | 142.9 | 166.1 | 191.9 | 199.5 |

    The other widths lost: 1024-wide chunks at 8192x8191 (RMSNorm 99.0) and
    at 4096x16383 (LayerNorm 147.5); 2048-wide ones at 13421x5001 (RMSNorm
    110.9, LayerNorm 165.5), 8000x7001 (RMSNorm 85.8), 8192x8191 (LayerNorm
    131.0) and 1024x65537 (115.8, 189.6); 4096-wide ones at 8192x8191
    (RMSNorm 122.4 at 8 warps, 141.1 at 16) and 4096x16383 (LayerNorm
    153.2); RMSNorm's 2048-wide ones there (114.7). So RMSNorm's chunks grow
    past 7168 and 8192 columns, LayerNorm's past 8192 and 16384."""
    if n <= short_to:
        return {"BLOCK_N": 1024, "WARPS": 4, "VEC": SHIFT_VEC}
    if n < wide_from:
        return {"BLOCK_N": 2048, "WARPS": 4, "VEC": SHIFT_VEC}
    return {"BLOCK_N": 4096, "WARPS": 16, "VEC": SHIFT_VEC}


# Forward splits for 16-bit rows that nearly fill their slices: kernel ->
# (lowest width, highest, CLUSTER, BLOCK_N, WARPS, CTAs per SM for P).
FILLED_SPLITS = {
    "rmsnorm_fwd_split": ((6145, 8192, 2, 4096, 8, 3), (13313, 16384, 2, 8192, 16, 1),
                          (15 * 8192 + 1, 16 * 8192, 16, 8192, 8, 8)),
    "layernorm_fwd_split": ((6657, 8192, 2, 4096, 8, 2), (13313, 16384, 2, 8192, 16, 1)),
}


def filled_split(kernel, n, sms, dtype):
    """A forward split (kernel: rmsnorm_fwd_split or layernorm_fwd_split) for
    a 16-bit row that fills its slices to more than 3/4 (RMSNorm's 2 x 4096)
    or 13/16 (15/16 for the 16 x 8192 one), else None. Rows off alignment
    (most of the splits here) shift the slices onto 16-byte boundaries (VEC
    = 8), or take a head tile where n + 7 columns do not fit them (HEAD =
    true, as the backwards' shifted_split); P the clusters of that many CTAs
    per SM, a multiple of 8 (one shift per cluster). The rows walked by
    clusters load w (and b) once and the next row ahead, where the chunks
    (odd_chunks) read each row twice and w per chunk at a shift that changes
    from row to row. Backend v39, bf16, us, against the chunks and
    torch.compile in one process (bench/fwd_probe.py):

    | rows x columns | RMSNorm | chunks | compile | LayerNorm | chunks | compile |
    |---|---|---|---|---|---|---|
    | 8000x7001 (2 x 4096) | 66.5 | 75.8 | 128.2 | 93.6 | 93.6 | 146.2 |
    | 8192x8191 (2 x 4096, head) | 75.0 | 95.4 | 107.9 | 105.1 | 115.6 | 145.9 |
    | 4096x16383 (2 x 8192, head) | 80.6 | 102.3 | 137.9 | 119.9 | 128.7 | 141.7 |
    | 512x131071 (16 x 8192, head) | 86.8 | 111.8 | 143.6 | | | |

    Slices the row fills less lost: 13421x5001 over 2 x 4096 RMSNorm 135.6
    (LayerNorm 183.0) against 83.9 (110.0), over 5 x 1024 95.4 (118.6);
    22369x3001 over 3 x 1024 92.4 against 90.4; 1024x65537 over 9 x 8192
    115.0 against 113.7; LayerNorm 8000x6500 98.7 against 91.3; the whole
    row in one tile with a head (one row per CTA, w off alignment per row)
    lost at every width (8192x8191 104-112). The bound between the fills
    measured is where the costs per row cross: the chunks' grows with the
    width (1.25-1.42 ns per 1000 columns above), the split's holds at
    8.3-10 ns (its rank 0 keeps a full slice): RMSNorm's 2 x 4096 won at
    8000x6500 (79%), 71.2 against 73.5 for the chunks (backend v40). Rows of
    whole pieces take it from rms_fwd only where it fills 3/4 to 13/16."""
    odd = off_alignment(n, dtype)
    for lo, hi, c, b, warps, per_sm in FILLED_SPLITS[kernel]:
        if lo <= n <= hi:
            p = max(SHIFT_VEC, per_sm * sms // c // SHIFT_VEC * SHIFT_VEC)
            consts = {"BLOCK_N": b, "CLUSTER": c, "WARPS": warps, "P": p}
            if odd:
                consts["VEC"] = SHIFT_VEC
            if needs_head(n, c, b, dtype):
                consts["HEAD"] = True
            return Launch(kernel, consts)
    return None


# The backward splits that shift their slices (VEC), or where the slices have
# no room for the shift take a head tile (HEAD; shifted_split).
SHIFTED_SPLITS = ("rmsnorm_bwd_split_acc", "layernorm_bwd_split_acc", "rmsnorm_bwd_split_smem")


def needs_head(n, c, b, dtype):
    """Whether a split of c slices of b columns over 16-bit rows of n off
    alignment has no room for the shift (n + 7 > c * b), so that its slices
    start late and a head tile holds the columns before them (HEAD = true)."""
    return dtype != "f32" and off_alignment(n, dtype) and n + SHIFT_VEC - 1 > c * b


def resident_at_128(launch):
    """How many of the launch's per_sm CTAs fit an SM at once at 128
    registers a thread: what ptxas can be asked for (CTAS) without spilling
    what the split kernels hold."""
    return min(launch.per_sm, REGS_PER_SM // (32 * launch.consts["WARPS"] * 128))


def shifted_split(launch, n, dtype):
    """A split backward (SHIFTED_SPLITS) for 16-bit rows off alignment with
    its clusters' slices shifted onto 16-byte boundaries (VEC = 8:
    std.norm.common's split_cols), where they have room for the shift (n +
    7 <= CLUSTER * BLOCK_N); P then becomes a multiple of 8 (partial_rows),
    so that every row a cluster walks has one shift, and the kernel asks for
    the code for aligned tensors (launch(aligned_code = VEC > 1)). Backend
    v36, 1024x65537 bf16 over 9 x 8192 columns: RMSNorm 385 us against 480
    unshifted (torch.compile 352), and 314 in the aligned code; LayerNorm 474
    against 603 (346); over clusters of two, 4096x12001 (2 x 8192, P = 64 for 66)
    RMSNorm 185 against 213 (238), LayerNorm 212 against 239 (248), and
    8192x5001 (2 x 4096) RMSNorm 191 against 211 (240). Rows without room
    for the shift (a third CTA for it lost: 8192x8191 RMSNorm 420 us over 3
    x 4096 against 212) start their slices on the boundary past the row's
    start instead, and the cluster's rank 0 holds the columns before it in
    a head tile (HEAD = true), asking ptxas for the CTAs per SM
    that fit at 128 registers (resident_at_128; unasked, 8 x 4096 at 8
    warps took 144 registers, one CTA per SM, where the unshifted kernel
    holds two). Backend v37, us, against the unshifted slices and
    torch.compile: RMSNorm 8192x8191 (2 x 4096) 153 against 212 (368),
    4096x16383 (2 x 8192) 171 against 232 (274), 2048x32767 (8 x 4096) 173
    against 292 (311); LayerNorm 4096x16383 197 against 256 (284-294),
    2048x32767 227 against 352 (322); over 16384-column slices, wide_slices."""
    c, b = launch.consts.get("CLUSTER", 0), launch.consts.get("BLOCK_N", 0)
    if dtype == "f32" or not off_alignment(n, dtype) or launch.kernel not in SHIFTED_SPLITS:
        return launch
    if not needs_head(n, c, b, dtype):
        return launch._replace(consts={**launch.consts, "VEC": SHIFT_VEC})
    return launch._replace(consts={**launch.consts, "VEC": SHIFT_VEC, "HEAD": True, "CTAS": resident_at_128(launch)})


def rms_fwd(n, sms=132, resident=None, dtype="bf16"):
    """Short rows several per CTA (rows_tile: 4096 elements at 4 warps; from
    257 to 1024 columns 8192 at 8 warps, rows in warps: 131072x512 69.4 us
    against 71.4, 65536x1024 70.2 against 70.6); rmsnorm_fwd_row up to 8192
    columns (x read again after the reduction: 96% of the copy bandwidth at
    32768x8192), then the cluster split, whose P clusters walk the rows: 12
    CTAs per SM in clusters of 8 (8192x65536: 564 us; 8 per SM 579, 4 641), 6
    in clusters of 16 (1024x262144: 309 us; 4 per SM 313, 3 334, 2 366), or
    for those, the clusters resident at once (_resident_grid: 299 us; 292
    since the kernel loads w once, backend v7). A float32 row of 4097 to 8192
    columns (32 KB) goes in two 4096-wide chunks instead, read twice (the
    second time from L2): 56 registers at 8 warps, four CTAs per SM, where the
    whole row takes 80 and three (32768x8192: 541.1-542.4 us against
    568.1-569.6; 16 warps 540.7-542.9; 8192-wide chunks 670-686; backend
    v20). 16-bit rows that would fill less than 13/16 of that power-of-two tile
    (and that exact_split does not cut) leave it: its time per row stays
    whatever the fill, so the bandwidth falls with it. They take the 2 x
    4096 split from 6145 columns (filled_split), else chunks 1024 wide at 4
    warps, or 2048 where a row's last 2048 would be more than half full.
    Backend v40, bf16, us, against the padded tile and torch.compile in one
    process (bench/fwd_probe.py):

    | rows x columns | now | padded tile | compile | other |
    |---|---|---|---|---|
    | 20000x2560 (1024 chunks) | 65.1 | 83.8 | 73.6 | |
    | 16000x3072 (1024 chunks) | 55.1 | 62.0 | 64.8 | |
    | 11000x4608 (1024 chunks) | 61.3 | 95.8 | 61.9 | 2048 chunks 68.0 |
    | 9000x5632 (2048 chunks) | 58.6 | 71.7 | 56.5 | 1024 chunks 63.2, 2 x 4096 77.9 |
    | 8000x6200 (2 x 4096) | 64.7 | 71.3 | 56.3 | 1024 / 2048 chunks 67.0 / 66.8 |

    At 13/16 and above the tile stays: 12000x3328 47.7 against 53.1 and
    53.4 for the chunks (torch.compile 52.5), 14000x3584 57.5 against 61.3,
    7500x6656 58.9 against 58.4 over 2 x 4096 (62.2 for 2048-wide chunks;
    torch.compile 51.8), 9362x7168 71.4 against 70.6, 6800x7680 55.6 against
    57.3, 6400x8184 55.8 against 58.1. bf16 ragged rows wider than
    8192 go over ragged_split's slices (split); those of
    16385-262143 columns it does not cover, in 4096-wide chunks at 16 warps
    (2684x25000 90.7 us against 101.9 over 4 x 8192; torch.compile 74.2;
    backend v32). 16-bit rows off 16-byte alignment wider than 2048 columns
    (an odd width, say) take the shifted splits where they fill their slices
    (filled_split), else chunks (odd_chunks)."""
    if 256 < n <= 1024:
        return Launch("rmsnorm_fwd_rows", rows_tile(n, 8, elems=8192))
    if n <= 2048:
        return Launch("rmsnorm_fwd_rows", rows_tile(n, 4))
    if dtype != "f32" and off_alignment(n, dtype):  # n > 2048 here
        return filled_split("rmsnorm_fwd_split", n, sms, dtype) or \
            Launch("rmsnorm_fwd", odd_chunks(n, short_to=7168, wide_from=8192))
    fills_13_16 = n * 16 >= block(n) * 13  # the one-row tile, padded to a power of two
    if sized(n, dtype):
        if n <= 4608 or n % 1024 == 0:
            return Launch("rmsnorm_fwd_row", {"BLOCK_N": n, "WARPS": sized_fwd_warps(n)})
        if not fills_13_16:  # 5632: two halves in n / 512 warps each, 3 CTAs per SM
            return Launch("rmsnorm_fwd_split", {"BLOCK_N": n // 2, "CLUSTER": 2, "WARPS": n // 512, "P": 3 * sms // 2})
    if n <= 8192 and not (dtype != "f32" and exact_split(n)):
        if dtype == "f32" and n > 4096:
            return Launch("rmsnorm_fwd", {"BLOCK_N": 4096, "WARPS": 8})
        if dtype != "f32" and not fills_13_16:
            return filled_split("rmsnorm_fwd_split", n, sms, dtype) or \
                Launch("rmsnorm_fwd", {"BLOCK_N": 2048 if n % 2048 > 1024 else 1024, "WARPS": 4})
        return Launch("rmsnorm_fwd_row", {"BLOCK_N": block(n)})
    if dtype != "f32" and 16384 < n < 16 * 16384 and not ragged_split(n) and n & (n - 1):
        # a ragged row no slices cover closely: the chunks, which beat the padded split at every ragged width
        # measured (backend v32: 3276x20000 80.0 us against 120.5 over 4 x 8192, 1600x40000 109.3 against
        # 125.0, 682x98304 121.2 against 122.4)
        return Launch("rmsnorm_fwd", {"BLOCK_N": 4096, "WARPS": 16})
    c, b, warps = split(n, dtype=dtype)
    consts = {"BLOCK_N": b, "CLUSTER": c, "WARPS": warps}
    # Clusters of 16 CTAs of 16384 columns: those resident at once, when the driver says (P is a const of the
    # kernel: the occupancy is asked of the P = 1 instance, the same registers), else 6 CTAs per SM's worth;
    # 8192-column CTAs in clusters of more than 8: 8 (512x131072: 75.4 us; 6: 76.7, 12: 78.0; backend v28;
    # 682x98304 over 12: 78.6, at P = 22 90.1, backend v32); others 12 (1600x40000 over 10 x 4096: 71.7).
    grid = _resident_grid(Launch("rmsnorm_fwd_split", {**consts, "P": 1}, cluster=c), resident).grid if b > 8192 else 0
    p = grid or max(1, (6 if b > 8192 else 12 if c <= 8 or b < 8192 else 8) * sms // c)
    return Launch("rmsnorm_fwd_split", {**consts, "P": p})


def _row_l2(m, sms):
    """The row backwards' L2 const: rows two steps ahead asked into L2 for m
    of 32 x sms rows or more (or m not known), none below (rms_bwd's
    measurements, at one CTA per SM: 32-row walks; the grids of 2 or 4 CTAs
    per SM since backend v28 were measured at 4096 rows without the request
    and at 16384-65536 with it, not in between)."""
    return 0 if m is not None and m < 32 * sms else 2


def rms_bwd(n, resident=None, m=None, sms=132, dtype="bf16", deterministic=False):
    """Short rows several per step, in 2048-element tiles with 4 CTAs per
    SM, at 4 warps up to 512 columns (131072x512 127 us with the rows in
    warps, against 134 at 8 warps, 149 for 4096-element tiles at 2 per SM
    and 521 one row at a time); then one row per step (rmsnorm_bwd), at 4
    warps and 4 CTAs per SM up to 2048 columns, at 8 and 2 up to 4096
    (backend v28, the whole backward with its dw sum, against the tiles at 8
    warps and 16-warp rows at one CTA per SM: 65536x1024 114.4 us against
    141.4, 43690x1536 112.3 against 140.3, 32768x2048 108.7 against 123.6,
    22369x3000 122.3 against 188.7, 16384x4096 104.4 against 129.2; at 4096
    rows 18.7, 23.2, 24.5-28, 33.7, 35.6 against 19.6, 25.6, 28.3, 40.3,
    40.5; torch.compile at 64M elements: 123.8 at 1024 columns, 137.3 at
    4096); the row walk at that occupancy hides its reduction behind the
    other CTAs' loads, where the tiles' bigger steps did not. float32 rows
    take twice the warps at half the CTAs per SM, the registers their
    elements need (32768x1024 110.7 us against 111.6 at bf16's setting and
    120.3 for the tiles; 16384x2048 118.6 against 125.9; 8192x4096 at 16
    warps, one CTA per SM, 124.3 against 127.4 at 8 and 2); then the
    cluster split: clusters of 4 and 8 CTAs walk 8 CTAs per SM's worth
    (8192x65536: 868 us at 8, 897 at 16, 912 at 4; 8192x32768 424 at 8, 417
    at 16, 431 at 4), clusters of two (8193-16384 columns, one 16-warp CTA
    per SM) one resident wave, as LayerNorm's (4096x16384: 102.7 us against
    120.5 at 8 per SM; 2048x16384 55.7 against 77.2, 16384x16384 382.8
    against 401.0, 4096x12288 112.1 against 137.1; backend v28). Slices of
    16384 columns keep dw in shared memory, with 6 CTAs per SM over the 16-CTA
    clusters (1024x262144: 639 us, against 661 at 4 and 668 at 8, and 900 for
    rmsnorm_bwd_split), or the clusters resident at once (_resident_grid:
    620 us; 580 since the kernel updates dw before its cluster reduction,
    backend v8; 556 since it loads w once, v11; 458 since w's slice sits in
    shared memory and the next row's loads take its registers, and 393 with
    the lowering's swizzle of shared f32 buffers, v17). One CTA per SM for
    the row kernel (1, 2 and 4 per SM ran within 1% at 32768x8192; more only add
    partial rows). The row kernel asks L2 for the row two steps ahead
    (rmsnorm_bwd's L2 = 2: 32768x8192 395.6 -> 392.2 us) unless its CTAs
    walk fewer than 32 rows each (m rows over sms CTAs): 2048x8192, 15-16
    rows each, 33.0-33.2 without against 33.4-33.9 with (backend v14).
    Rows of 4097 to 8192 columns go over clusters of two 4096-column CTAs
    instead, two 8-warp CTAs per SM, asking L2 two steps ahead at every walk
    length: 2048x8192 31.6 us against 34.0 for the row kernel, 4096x8192 55.4
    against 58.9, 32768x8192 381.7 against 391.7 (L2 = 0: 33.6, 58.0, 394.5;
    4 warps, 3 CTAs per SM or 16 warps slower; backend v16). The splits of
    up to 8192 columns per CTA add their dw partials into ACC_ROWS rows of
    sums (rmsnorm_bwd_split_acc, then rmsnorm_bwd_dw_take) instead of storing
    one row per cluster for rmsnorm_bwd_dw: 2048x8192 30.1-30.7 us against
    32.4-32.7, 8192x65536 806 against 816, 32768x8192 a tie (backend v19).
    Several clusters add to each row of sums in the order they finish, so dw
    can differ in its last bit from run to run; deterministic (fnk.torch
    under torch.use_deterministic_algorithms) stores one row per cluster
    instead (rmsnorm_bwd_split, the same consts: _storing), summed in row
    order; where the grid's per_sm CTAs fit an SM at once at 128 registers a
    thread (2 x 4096 columns, 8 warps; 5 x 1024, 2 warps), ptxas is asked for
    them (CTAS), as it happens to meet them unasked for the accumulating
    kernel (asked for 8 CTAs of 8 warps, 3 x 4096 spilled 628 bytes)."""
    launch = shifted_split(_rms_bwd(n, resident, m, sms, dtype), n, dtype)
    if deterministic and launch.kernel == "rmsnorm_bwd_split_acc":
        # per_sm CTAs where all fit at 128 registers a thread, what the accumulating kernel takes unasked
        return _storing(launch, CTAS=launch.per_sm if resident_at_128(launch) == launch.per_sm else 1)
    return launch


def _storing(launch, **consts):
    """The deterministic form of an accumulating split (a kernel named
    *_split_acc): the *_split kernel of the same consts and grid, which
    stores one partial row per cluster CTA for the plain sum kernel to add
    in row order, where the accumulating one's adds land in the order the
    clusters finish."""
    return launch._replace(kernel=launch.kernel.removesuffix("_acc"), consts={**launch.consts, **consts})


def _rms_bwd(n, resident, m, sms, dtype):
    if n <= 512:
        return Launch("rmsnorm_bwd_rows", rows_tile(n, 4, elems=2048), per_sm=4)
    # (at 15/16 of 2 x 4096 and above that split stays: 6800x7680 82.4 us against 89.4 over 3 x 2560, v42)
    if sized(n, dtype) and n * 16 < 15 * 8192 and (launch := sized_bwd("rmsnorm_bwd", "rmsnorm_bwd_split_acc", n, m, sms)):
        return launch
    if n <= 4096:
        warps, per_sm = (4, 4) if n <= 2048 else (8, 2)
        if dtype == "f32":  # twice the registers per element: twice the threads per row, half the CTAs per SM
            warps, per_sm = 2 * warps, per_sm // 2
        return Launch("rmsnorm_bwd", {"BLOCK_N": block(n), "WARPS": warps, "L2": _row_l2(m, sms)}, per_sm=per_sm)
    if slices_of_1024(n, dtype):  # as the exact 5 x 1024 of 5120 columns (below)
        return _rms_bwd(5120, resident, m, sms, dtype)
    if n <= 8192 and not (dtype != "f32" and exact_split(n)):
        return Launch("rmsnorm_bwd_split_acc", {"BLOCK_N": 4096, "CLUSTER": 2, "WARPS": 8, "L2": 2}, per_sm=2,
                      cluster=2)
    c, b, warps = split(n, backward=True, dtype=dtype)
    c, b = wide_slices(n, c, b, dtype) or (c, b)
    if b >= 16384:
        # float32 without the next row loaded ahead: with it ptxas spills 440 bytes, and 1024x262144 ran 2150 us
        # against 1225 (backend v21); nor with a head tile (120 bytes; 512x131071 281 us against 310, v37)
        head = needs_head(n, c, b, dtype)
        consts = {"BLOCK_N": b, "CLUSTER": c, "WARPS": warps, **({"PF": 0} if head or dtype == "f32" else {})}
        # with a head, one CTA per SM's worth of clusters, each walking more rows (512x131071 over 8 x 16384: 16
        # clusters, as timed in backend v37)
        return _resident_grid(Launch("rmsnorm_bwd_split_smem", consts, per_sm=1 if head else 6, cluster=c), resident)
    # exact slices of 1024 columns at 2 warps: 4 CTAs per SM's worth (13107x5120 117.3 us, 8: 122.5+)
    return Launch("rmsnorm_bwd_split_acc", {"BLOCK_N": b, "CLUSTER": c, "WARPS": warps},
                  per_sm=1 if c == 2 else 4 if warps == 2 else 8, cluster=c)


def ln_fwd(n, sms=132, resident=None, dtype="bf16"):
    """Short rows several per CTA (rows_tile: 131072x512 101 us against 224
    one row per CTA, 32768x2048 84 against 93); rows of 7169 to 8192
    columns one per CTA, three 8-warp CTAs per SM, each asking L2 for the row of the
    CTA one resident wave (3 x SMs) after it (layernorm_fwd_row, 32768x8192:
    256.4 us, against 270.7 for layernorm_fwd_staged's rows staged by bulk
    copies, backend v13); the other rows in chunks with one-pass statistics
    (layernorm_fwd; at 32768x8192, 2048 wide at 4 warps: 315 us, against 330
    for a persistent whole-row kernel with the row in registers and 346 for
    the statistics in two walks). float32 rows take the chunks at every width: the whole 8192-column
    row spills 720 bytes at its 80 registers, and ran 873.9 us at 32768x8192
    against 589.6 for 2048-wide chunks at 4 warps (4096 at 8 / 16 warps: 632.8
    / 658.2; backend v21). Rows of 6144 columns (exact_split, bf16) go over
    clusters of 3 CTAs instead (layernorm_fwd_split, backend v28: 10922x6144
    87.5 us, against 138.6 one padded 8192-wide row per CTA; 5 x 1024 for
    5120 lost to the chunks in backend v40, below); wider ones
    tied the chunks (6553x10240 91.0 against 90.1); the 1024-column slices
    hold w and b in registers, the 2048-column ones read them per row (HOLD,
    backend v31: 13107x5120 103.2 us held against 113.6, 10922x6144 84.4
    per row against 87.9). bf16 rows that fill clusters of 8192-column
    8-warp CTAs go over them, two CTAs per SM, w and b read per row so the
    next row's loads fit in the registers (backend v31, bench/fwd_probe.py
    --norm ln, against torch.compile in one process): 16384 columns over 2
    (4096x16384 76.4 us, against 90.6 for v30's 4 x 4096 at 4 warps;
    torch.compile 72.0), 32768 over 4, P = 1.5 x SMs (2048x32768 95.6,
    against 110.5 for the 4096-wide chunks at 16 warps; torch.compile 108.2),
    65536 over 8 (1024x65536 101.2, against 133.1 for v30's 8 x 8192 at 16
    warps; torch.compile 125.4), 131072 over 16 and 262144 over 16 CTAs of
    16384 columns at 16 warps, one per SM, as many clusters as are resident
    (_resident_grid; the H200's 7 per CTA per SM without the driver;
    512x131072 97.8 us at P = 14 against 110.6 at 66 and 156.3 for the
    chunks, torch.compile 129.9; 256x262144 116.5 at P = 7 against 134.4 at
    49 and 151.9, torch.compile 168.3). Padded to a power of two, ragged
    rows lost to the chunks by up to 2.3x (v30's 4 x 4096 and 8 x 8192
    included: 3276x20000 260.5 over 4 x 8192 against 112.4 for 4096-wide
    chunks at 16 warps; backend v31); they go over ragged_split's slices
    instead (backend v32, us): 8192 or 16384 columns as the rows that fill
    their clusters, P = 2 x SMs / CLUSTER for more than 8 (682x98304 over
    12 x 8192 135.2, against 164.2 for the chunks and torch.compile's
    139.4; 342x196608 over 12 x 16384 170.1, against 249.1 padded to 16 and
    torch.compile's 150.1), pairs of 4096 as 8192 (1600x40000 over 5 x 8192
    106.2, 109.2 over 10 x 4096, 122.5 for the chunks; torch.compile
    127.9), 2048 or 4096 at 4 warps with w and b held, 12 CTAs per SM's
    worth (4096x14000 over 7 x 2048 84.3 against 96.3 for the chunks and
    torch.compile's 92.8; 3276x20000 over 5 x 4096 96.6 against 110.8 and
    126.6; reading w and b per row lost there: 122.8). The rest take the
    chunks: 2048 wide at 4 warps below 16384 columns (3072x12288 56.1
    against 63.2 for 2 x 8192; torch.compile 53.0; 5461x12288 90.1 against
    90.6 over 6 x 2048), 4096 wide at 16 warps above. float32 rows
    of 4097-8192 columns take the 2048-wide chunks at 16 warps (32768x8192
    566.1 us against 591.4 at 4 warps; backend v30). 16-bit rows off
    16-byte alignment wider than 2048 columns take the shifted splits where
    they fill their slices (filled_split), else chunks (odd_chunks). Those
    of whole pieces of 2049-7168 columns but 6144 take 1024-wide chunks at 4
    warps, not 2048-wide ones or the one-row tile padded to 8192 (backend
    v40, bf16, us, torch.compile in the same process):

    | rows x columns | 1024 chunks | 2048 chunks | other | compile |
    |---|---|---|---|---|
    | 20000x2560 | 80.5 | 116.3 | | 158.6 |
    | 16000x3072 | 64.2 | 92.4 | | 128.7 |
    | 14000x3584 | 73.4 | 83.3 | | 113.3 |
    | 16384x4096 | 84.4 | 91.3 | | 96.2 |
    | 13107x5120 | 85.4 | | 5 x 1024 103.0 | 127.0 |
    | 9000x5632 | 72.3 | 78.4 | padded tile 122.5 | 89.5 |
    | 8000x6200 | 78.3 | 89.4 | padded tile 104.7, 2 x 4096 94.7 | 94.4 |
    | 9362x7168 | 89.5 | 100.7 | padded tile 104.3, 2 x 4096 95.7 | 109.3 |
    | 6800x7680 | 76.7 | 76.9 | padded tile 74.2 (kept) | 81.7 |"""
    if n <= 2048:
        return Launch("layernorm_fwd_rows", rows_tile(n, 4))
    if dtype != "f32" and off_alignment(n, dtype):  # n > 2048 here
        return filled_split("layernorm_fwd_split", n, sms, dtype) or \
            Launch("layernorm_fwd", odd_chunks(n, short_to=8192, wide_from=16384))
    def clusters(c, b, warps, p, **more):
        # layernorm_fwd_split over P clusters of c CTAs of b columns
        return Launch("layernorm_fwd_split", {"BLOCK_N": b, "CLUSTER": c, "WARPS": warps, "P": max(1, p), **more})

    if dtype == "f32":
        return Launch("layernorm_fwd", {"BLOCK_N": 2048, "WARPS": 16 if 4096 < n <= 8192 else 4})
    if 7168 < n <= 8192:
        return Launch("layernorm_fwd_row", {"BLOCK_N": 8192, "WARPS": 8, "CTAS": 3, "L2": 3 * sms})
    if sized(n, dtype):
        return Launch("layernorm_fwd_row", {"BLOCK_N": n, "WARPS": sized_fwd_warps(n, wide=False)})
    cut = exact_split(n) if n <= 8192 else None
    if cut and cut[1] >= 2048:  # 3 x 2048 (10922x6144 84.7 us against 86.6 for the chunks); 5 x 1024 lost to them
        c, b = cut
        return clusters(c, b, 4, 12 * sms // c, HOLD=False)
    if n <= 8192:
        return Launch("layernorm_fwd", {"BLOCK_N": 1024, "WARPS": 4})
    if n in (16384, 32768, 65536, 16 * 8192, 16 * 16384):  # rows that fill clusters of 8192 or 16384 columns
        b = 8192 if n <= 16 * 8192 else 16384
        cut = n // b, b
    else:  # ragged rows; rows of 3 or 5 slices wider than 8192 columns keep the chunks (above)
        cut = None if exact_split(n) else ragged_split(n)
        if cut and cut[1] == 4096 and cut[0] % 2 == 0:  # pairs of them as one (1600x40000: 106.2 us, 109.2 over 10)
            cut = cut[0] // 2, 8192
    if cut and cut[1] >= 8192:
        c, b = cut
        per_sm = 16384 // b  # two 8-warp CTAs per SM, or one of 16 warps
        wide = functools.partial(clusters, c, b, 16 // per_sm, CTAS=per_sm, HOLD=False)
        if c == 16:  # the 16-CTA clusters resident at once (asked of the P = 1 instance); the H200 holds 7 per CTA per SM
            p = _resident_grid(wide(1)._replace(cluster=16), resident).grid or per_sm * 7 * sms // 132
        else:  # 12 x 8192 (682x98304): 22 clusters, 135.2 us
            p = per_sm * sms // c if c > 8 else 3 * sms // 2 if c == 4 else sms
        return wide(p)
    if cut:  # ragged_split's 2048 or 4096 columns a CTA, w and b held
        c, b = cut
        return clusters(c, b, 4, 12 * sms // c)
    if n < 16384:
        return Launch("layernorm_fwd", {"BLOCK_N": 2048, "WARPS": 4})
    return Launch("layernorm_fwd", {"BLOCK_N": 4096, "WARPS": 16})


def ln_bwd(n, m=None, sms=132, dtype="bf16", deterministic=False):
    """As the RMSNorm backward. Short rows in 4096-element
    tiles with 2 CTAs per SM, rows in warps: at 8 warps up to 512 columns
    (131072x512 114 us, against 160 in the blocked layout and 521 one row at
    a time), at 4 up to 1024 (65536x1024 121, against 149 for 2048-element
    tiles); then one row per step (layernorm_bwd), at 8 warps and 2 CTAs per
    SM up to 2048 columns (backend v28, with the dw and db sums: 32768x2048
    119.3 us and 4096x2048 27.9, against 134.1 and 35.7 for 2048-element
    tiles at 4 warps, 4 per SM; float32 16384x2048 118.8 and 21845x1536
    125.3 against 126.6 and 132.4), and at 16 warps, one CTA per SM, beyond
    (32768x8192: 402 us, backend v8; 16384x4096 121.3, 4096x4096 41.5,
    against 114.3 and 44.9 at 4 warps, 2 per SM: a tie), asking L2 for the
    row two steps ahead as rms_bwd's row kernel does (386.0 us, backend v14). float32 rows
    of more than 4096 columns go without the next row loaded ahead and
    without the L2 request: with the row ahead ptxas spills 76-84 bytes, and
    32768x8192 ran 1266-1280 us against 911-912 (PF = 0 with the L2 request:
    1107; 32 warps: 1068; backend v21). Rows of 8193 to 65536 columns go
    over clusters of up to 8 CTAs of 8192 columns at 16 warps
    (layernorm_bwd_split_acc, as the RMSNorm split: dw and db added into rows
    of sums, then layernorm_bwd_dwdb_take), where layernorm_bwd walks each
    wide row's chunks twice in one CTA: dx, dw and db of 8192x65536 in 1069 us
    against 3916, 16384x16384 435 against 1285, float32 4096x65536 1099
    against 2445 (backend v22, the row's two cluster sums in one push). The
    next row is loaded ahead (PF = 1) in every dtype: dw and db sum in
    shared memory, which leaves the registers room for it (v21's partials in
    registers spilled 40 bytes for it in bf16: 1131 us, 1634 without the row
    ahead), and float32 also reads w's slice from shared memory on every row
    (WS = 1: 1099 against 1193 with w in registers, and 1416 for v21's
    registers at PF = 0; in bf16 WS = 1 is slower, 1161). Clusters of two run
    one resident wave (P = 66: 435 against 453 for 264), clusters of 8 walk 8
    CTAs per SM's worth (P = 131: 1069; 66: 1143; 16: 1834), and clusters of
    4 (16385-32768 columns) the same (16384x32768: P = 261 1038, 132 1105).
    In bf16, rows of 3 or 5 power-of-two slices (exact_split) go over
    clusters of that many CTAs of 16 columns a thread, at least 4 warps, 8
    CTAs per SM's worth (backend v28, with the dw and db sums: 13107x5120
    135.5 us, 10922x6144 130.0, 6553x10240 129.4, 5461x12288 140.9, against
    192.7, 157.1, 234.4, 201.5 padded). deterministic: the split stores its
    partial rows instead (layernorm_bwd_split), as rms_bwd's."""
    launch = shifted_split(_ln_bwd(n, m, sms, dtype), n, dtype)
    return _storing(launch) if deterministic and launch.kernel == "layernorm_bwd_split_acc" else launch


def wide_slices(n, c, b, dtype):
    """(CLUSTER, 16384) for a 16-bit row whose backward split (c CTAs of b
    columns) takes more than 8 CTAs of 8192 columns: the fewest 16384-wide
    slices that hold it (off alignment, shifted where they have room for the
    shift, else with a head tile: shifted_split); None for any other split.
    The backwards' 8192-column CTAs run 16 warps at one CTA per SM, and
    clusters of 9 to 16 of them leave SMs of a GPC idle; a third to half as
    many CTAs of 16384 columns (w and the column sums in shared memory) fill
    them better. Backend v36, the RMSNorm
    backward (rmsnorm_bwd_split_smem) against 8192-column slices, us:
    1024x65544 230 against 296 (5 x 16384 against 9 x 8192), 682x98304 150
    against 170 (6 against 12), shifted: 1024x65537 263 against 314 (5
    against 9), 682x98311 257 against 334, 512x131071 329 against 350 (9
    against 16); torch.compile 270, 273, 353, 398 and 331. LayerNorm
    (layernorm_bwd_split_acc, w's slice in shared memory, no row loaded
    ahead: at 16384 columns that spills), off alignment only (not measured
    on rows of whole pieces): 1024x65537 322 against 479 (5 against 9;
    torch.compile 344), 512x131071 419 against 438 (9 against 16; 345).
    Backend v37, 512x131071 over 8 x 16384 with a head tile instead of 9
    shifted: RMSNorm 281 (its row not loaded ahead, 16 clusters, each
    walking 32 rows) against 329, LayerNorm 299 against 418 (torch.compile
    328 and 344)."""
    if dtype == "f32" or b != 8192 or c <= 8:
        return None
    return -(-n // 16384), 16384


def _ln_bwd(n, m, sms, dtype):
    if n <= 1024:
        return Launch("layernorm_bwd_rows", rows_tile(n, 8 if n <= 512 else 4), per_sm=2)
    if n <= 2048:
        return Launch("layernorm_bwd", {"BLOCK_N": block(n), "WARPS": 8, "L2": _row_l2(m, sms)}, per_sm=2)
    if sized(n, dtype) and (launch := sized_bwd("layernorm_bwd", "layernorm_bwd_split_acc", n, m, sms)):
        return launch
    cut = exact_split(n) or slices_of_1024(n, dtype, narrow=True) if dtype != "f32" else None
    if cut:  # 16 columns a thread, at least 4 warps (13107x5120: 135.5 us at 4, 137.2 at 2)
        c, b = cut
        return Launch("layernorm_bwd_split_acc", {"BLOCK_N": b, "CLUSTER": c, "WARPS": max(4, b // 512)}, per_sm=8,
                      cluster=c)
    if 8192 < n <= 8 * 8192 or (dtype != "f32" and ragged_split(n, backward=True)):
        c, b, warps = split(n, backward=True, dtype=dtype)  # ragged_split's slices, else a power-of-two split
        wide = wide_slices(n, c, b, dtype) if off_alignment(n, dtype) else None
        if wide:
            c, b = wide
            return Launch("layernorm_bwd_split_acc", {"BLOCK_N": b, "CLUSTER": c, "WARPS": 16, "WS": 1, "PF": 0},
                          per_sm=8, cluster=c)
        consts = {"BLOCK_N": b, "CLUSTER": c, "WARPS": warps, **({"WS": 1} if dtype == "f32" else {})}
        return Launch("layernorm_bwd_split_acc", consts, per_sm=1 if c == 2 else 8, cluster=c)
    if dtype == "f32" and n > 4096:
        return Launch("layernorm_bwd", {"BLOCK_N": block(n), "WARPS": BWD_ROW_WARPS, "PF": 0, "L2": 0})
    return Launch("layernorm_bwd", {"BLOCK_N": block(n), "WARPS": BWD_ROW_WARPS, "L2": _row_l2(m, sms)})


# Rows of sums the accumulating splits add their dw partials into: 132
# clusters add 8 or 9 times per address at 16 (2048x8192 over four calls:
# 30.1-30.7 us at 16, 30.3-30.9 at 8, 30.4-31.0 at 6 and 11; backend v19).
ACC_ROWS = 16


def acc_rows(m, sms, launch):
    """Rows of the accumulating splits' sums (rmsnorm_bwd_split_acc's dw_acc,
    layernorm_bwd_split_acc's dw_acc and db_acc): ACC_ROWS, or the grid's
    clusters when fewer."""
    return min(ACC_ROWS, partial_rows(m, sms, launch))


def partial_rows(m, sms, launch):
    """Rows of a backward's partial-sum output (its grid's P): launch.grid
    when set, else launch.per_sm CTAs per SM divided among a cluster's CTAs;
    never more than the m rows. A kernel that walks one row per step gets the
    fewest P that leave each the same most rows (k = ceil(m / P) rows, then
    P = ceil(m / k)): no CTA waits longer, and fewer share the memory. At
    2048 rows the split takes 128 clusters of 16 rows, not 132 of which 68
    take a 16th: 30.14-30.82 us (mean 30.42) against 30.34-30.88 (mean
    30.60), lower in 7 of 8 rounds (bench/split_probe.py --grid-p, backend
    v20). A shifted split (shifted_split) takes a multiple of its VEC: the
    next one up where the grid allows (clusters as many rows each), else the
    one below, VEC at least (below VEC rows, some clusters walk none)."""
    p = max(1, min(m, launch.grid) if launch.grid else min(m, launch.per_sm * sms) // launch.cluster)
    if "ROWS" in launch.consts:  # row blocks per step: P as the formulas give it
        return p
    k = -(-m // p)  # the most rows a cluster walks
    fewest = -(-m // k)
    vec = launch.consts.get("VEC", 1)  # a shifted split: one shift per cluster (shifted_split)
    up = -(-fewest // vec) * vec  # as many rows each, if the grid allows it
    return up if up <= p else max(vec, fewest - fewest % vec)


def dit_fwd(b, s, h, sms=132):
    """The DiT example's forward (examples/dit_modulate.fnk) as bench/bench.py
    launches it over b batches of s rows of h. CTAs per batch: about 108 per
    SM in all, a few rows each (tune.py --variants at 56x1024x1024, the rows
    staged by bulk copies: SB = 256 65.6-66.5 us, 128: 67.5-68, 64: 73-74,
    448: 72-74; backend v9). Each CTA asks L2 for the first rows of the CTA
    6 x SMs places later (792 on the H200, about a third of the 2112 resident
    one-warp CTAs): 63.2 us against 63.8 without, 63.4 at 528 and 1056
    (backend v14)."""
    return Launch("dit_modulate_fwd", {"BLOCK_H": block(h), "SB": max(1, min(s, (108 * sms) // b)), "L2": 6 * sms})
