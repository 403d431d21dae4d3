"""The speed targets of issue 3, item 7 (shared/docs/PERFORMANCE.md): for each
bench workload, a floor on the fraction of the copy roofline fnk must reach
or a ceiling on its time. bench.py prints the verdict beside each row; free of
torch, so python/tests checks it without a GPU."""

# label -> ("roofline", fraction) or ("us", microseconds); workloads without one are left out
TARGETS = {
    "RMSNorm fwd 32768x8192": ("roofline", 0.95),
    "RMSNorm bwd 32768x8192": ("roofline", 0.90),
    "RMSNorm fwd 8192x65536": ("roofline", 0.85),
    "RMSNorm bwd 8192x65536": ("roofline", 0.85),
    "RMSNorm fwd 1024x262144": ("roofline", 0.85),
    "RMSNorm bwd 1024x262144": ("roofline", 0.85),
    "LayerNorm fwd 32768x8192": ("roofline", 0.95),
    "LayerNorm bwd 32768x8192": ("roofline", 0.90),
    "RMSNorm bwd 2048x8192": ("us", 30.0),
    "DiT LN+modulate fwd 56x1024x1024": ("us", 60.0),
    "DiT LN+modulate bwd 56x1024x1024": ("us", 100.0),
}


def verdict(label, fnk_us, roofline_us):
    """("≥ 95% ✓", True) and the like for a workload with a target; ("", None)
    without one or without a time for fnk (a failed run meets nothing)."""
    target = TARGETS.get(label)
    if target is None:
        return "", None
    kind, bound = target
    if kind == "roofline":
        text = f">= {bound:.0%}"
        met = bool(fnk_us) and roofline_us / fnk_us >= bound
    else:
        text = f"<= {bound:g} us"
        met = bool(fnk_us) and fnk_us <= bound
    return f"{text} {'met' if met else 'missed'}", met


def summary(verdicts):
    """'targets met: 6 of 11' over the rows that have a target."""
    judged = [m for m in verdicts if m is not None]
    return f"targets met: {sum(judged)} of {len(judged)}"
