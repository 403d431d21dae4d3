"""The launch schedules fnk.torch uses for the stdlib norms: for rows of n
columns, which kernel and which const generics, chosen by measurement on the
H200 (bench/tune.py; docs/perf-notes.md). Free of torch, so that tests can
enumerate them (tests/lit/gpu/spills.test checks their registers)."""
from typing import NamedTuple


class Launch(NamedTuple):
    kernel: str
    consts: dict
    per_sm: int = 1   # backward partial-sum rows: per_sm per SM (never more than the rows) ...
    cluster: int = 1  # ... over the CTAs of a cluster, which share one


def block(n):
    """The tile width: the row in one tile up to 8192 columns (one pass over x),
    chunks of 8192 beyond."""
    b = 256
    while b < n and b < 8192:
        b *= 2
    return b


def split(n, backward=False):
    """(CLUSTER, BLOCK_N, WARPS) for rows wider than one tile: the row spread
    over a cluster. From bench/tune.py on the H200 (docs/perf-notes.md, "GPU
    backend v3" and "v5"): clusters of up to 8 CTAs of 8192 columns, then
    16 CTAs of up to 16384 (1024x262144 forward: 16 x 16384 309 us, 8 x 32768
    382; backward: 8 x 32768 spills, 4790). The forward holds 32 columns per
    thread (x only); the backward, which also holds w and its dw partial, 16,
    capped at 16 warps (8192x65536: 8 x 8192 at 16 warps 868 us, at 8 916;
    1024x262144: 16 x 16384 at 16 warps 900, at 32 1199)."""
    cluster = 2
    while cluster < 8 and cluster * 8192 < n:
        cluster *= 2
    while cluster < 16 and cluster * 16384 < n:
        cluster *= 2
    width = 256
    while width * cluster < n:
        width *= 2
    warps = min(16, width // 512) if backward else min(32, width // 1024)
    return cluster, width, max(4, warps)


def bwd_warps(n, layernorm=False):
    """bench/tune.py at 32768x8192 on the H200, backend v3: LayerNorm backward
    16 warps 536 us, 8 warps 546-562 (backend v1, RMSNorm: 16 warps 645, 8 681,
    32 742); the LayerNorm backward at 32768x2048 (v5): 16 warps 193 us, 8
    197 (and 8 spill), 4 199."""
    return 16 if n >= (2048 if layernorm else 4096) else 8


def bwd_rows_config(n):
    """The *_bwd_rows kernels' settings for rows of n <= 1024: a [ROWS, BLOCK_N]
    tile of 8192 elements (16 rows at most) over 8 warps."""
    b = block(n)
    return dict(BLOCK_N=b, ROWS=min(16, 8192 // b), WARPS=8)


def rms_fwd(n, sms=132):
    """rmsnorm_fwd_row up to 8192 columns (x read again after the reduction:
    96% of the copy bandwidth at 32768x8192), then the cluster split, whose
    P clusters walk the rows: 12 CTAs per SM in clusters of 8 (8192x65536: 564
    us; 8 per SM 579, 4 641), 6 in clusters of 16 (1024x262144: 309 us; 4 per
    SM 313, 3 334, 2 366)."""
    if n <= 8192:
        return Launch("rmsnorm_fwd_row", {"BLOCK_N": block(n)})
    c, b, warps = split(n)
    p = max(1, (12 if c <= 8 else 6) * sms // c)
    return Launch("rmsnorm_fwd_split", {"BLOCK_N": b, "CLUSTER": c, "WARPS": warps, "P": p})


def rms_bwd(n):
    """Short rows several per step (131072x512 190 us against 550 one row at a
    time, 65536x1024 159-192 against 301-312); one row per step up to 8192;
    then the cluster split, with 8 clusters per SM for clusters of up to 8 CTAs
    (8192x65536: 868 us at 8, 897 at 16, 912 at 4). Slices of 16384 columns
    keep dw in shared memory, with 6 CTAs per SM over the 16-CTA clusters
    (1024x262144: 639 us, against 661 at 4 and 668 at 8, and 900 for
    rmsnorm_bwd_split). One CTA per SM for the row kernels (1, 2 and 4 per SM
    ran within 1% at 32768x8192; more only add partial rows)."""
    if n <= 1024:
        return Launch("rmsnorm_bwd_rows", bwd_rows_config(n))
    if n <= 8192:
        return Launch("rmsnorm_bwd", {"BLOCK_N": block(n), "WARPS": bwd_warps(n)})
    c, b, warps = split(n, backward=True)
    if b >= 16384:
        return Launch("rmsnorm_bwd_split_smem", {"BLOCK_N": b, "CLUSTER": c, "WARPS": warps}, per_sm=6, cluster=c)
    return Launch("rmsnorm_bwd_split", {"BLOCK_N": b, "CLUSTER": c, "WARPS": warps}, per_sm=8, cluster=c)


def ln_fwd(n):
    """The whole row up to 2048 columns, then 2048-wide chunks with one-pass
    statistics at 4 warps (32768x8192: 309 us, against 330 for a persistent
    whole-row kernel and 346 for the statistics in two walks)."""
    b = min(block(n), 2048)
    return Launch("layernorm_fwd", {"BLOCK_N": b, "WARPS": 4 if b < n else 8})


def ln_bwd(n):
    """As the RMSNorm backward (131072x512 193 us against 591 one row at a
    time, 65536x1024 194 against 311), without a split."""
    if n <= 1024:
        return Launch("layernorm_bwd_rows", bwd_rows_config(n))
    return Launch("layernorm_bwd", {"BLOCK_N": block(n), "WARPS": bwd_warps(n, layernorm=True)})


def partial_rows(m, sms, launch):
    """Rows of a backward's partial-sum output (its grid's P): launch.per_sm
    CTAs per SM, never more than the m rows, divided among a cluster's CTAs."""
    return max(1, min(m, launch.per_sm * sms) // launch.cluster)
