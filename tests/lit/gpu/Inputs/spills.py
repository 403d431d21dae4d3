"""Registers and spills (fnkc --resource-usage, i.e. ptxas -v) of every
launch fnk.torch makes (python/fnk/schedules.py, and the split backwards'
take kernels), and of the DiT example as bench/bench.py launches it, for
rows of several widths, bf16 and float32 (whose settings carry 'T': 'f32'):
one line per distinct kernel setting, "kernel {consts}: R registers, S
bytes spilled". With --bodies, instead, a line for each body
alone of the settings the version pass gave two ("kernel {consts} [full]:
..." and "[partial]"), as the JIT compiles them by default."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

fnkc, root = sys.argv[1], Path(sys.argv[2])
bodies = "--bodies" in sys.argv[3:]
spec = importlib.util.spec_from_file_location("schedules", root / "python" / "fnk" / "schedules.py")
schedules = importlib.util.module_from_spec(spec)  # without the fnk package, which loads libfnk
spec.loader.exec_module(schedules)

files = {"rmsnorm": root / "stdlib" / "norm" / "rmsnorm.fnk", "layernorm": root / "stdlib" / "norm" / "layernorm.fnk"}
launches = {}
for dt in ("bf16", "f32"):
    # (3001, 8191 and 65537: 16-bit rows off alignment, in chunks: schedules.odd_chunks; 8191, 16383, 32767 and
    # 131071 backward: the splits with a head tile; 2560, 4608 and 6200: rows of whole pieces off the padded
    # tiles, forward in chunks and over 2 x 4096, backward over 3 or 5 x 1024)
    for n in (7, 128, 512, 1000, 2048, 2560, 3001, 3072, 4096, 4608, 5120, 5632, 6200, 7168, 7680, 8191, 8192, 12288, 14000,
              16383, 16384, 20000,
              32767, 40000, 65536, 65537, 98304, 131071, 131072, 196608, 262144):
        # The backwards also as launched for few rows (m = 1: the row kernels without their L2 request).
        # And under torch.use_deterministic_algorithms (deterministic=True).
        for launch in (schedules.rms_fwd(n, dtype=dt), schedules.rms_bwd(n, dtype=dt), schedules.rms_bwd(n, m=1, dtype=dt),
                       schedules.rms_bwd(n, dtype=dt, deterministic=True),
                       schedules.ln_fwd(n, dtype=dt), schedules.ln_bwd(n, dtype=dt),
                       schedules.ln_bwd(n, m=1, dtype=dt), schedules.ln_bwd(n, dtype=dt, deterministic=True)):
            consts = {**launch.consts, **({"T": dt} if dt != "bf16" else {})}
            if "VEC" in consts and launch.kernel.endswith("_split_acc"):
                # a shifted accumulating split's P const, a multiple of VEC, as fnk.torch passes it (4096 rows)
                consts["P"] = schedules.partial_rows(4096, 132, launch)
            key = (launch.kernel, tuple(sorted(consts.items())))
            launches[key] = files["rmsnorm" if launch.kernel.startswith("rms") else "layernorm"]
    # the backwards' second kernels, launched with T alone (python/fnk/torch.py): the splits' takes and the
    # sums of partial rows
    for kernel, module in (("rmsnorm_bwd_dw_take", "rmsnorm"), ("layernorm_bwd_dwdb_take", "layernorm"),
                           ("rmsnorm_bwd_dw", "rmsnorm"), ("layernorm_bwd_dwdb", "layernorm")):
        launches[(kernel, (("T", dt),) if dt != "bf16" else ())] = files[module]
# The DiT example as bench/bench.py launches it at 56x1024x1024 on the H200's
# 132 SMs (the backward's SB, one wave, does not change its code).
dit = root / "examples" / "dit_modulate.fnk"
launch = schedules.dit_fwd(56, 1024, 1024)
launches[(launch.kernel, tuple(sorted(launch.consts.items())))] = dit
launches[("dit_modulate_bwd", (("BLOCK_H", 1024),))] = dit


def usage(path, kernel, consts, body=None):
    """(registers, spilled bytes) of one setting's cubin; None when --body is refused because the kernel has one
    body. Any other failure stops the script, so that a body that no longer compiles is not mistaken for one that
    does not exist."""
    args = [fnkc, str(path), "-k", kernel, "--emit=cubin", "--resource-usage", "-o", "/dev/null"]
    args += ["--body", body] if body else []
    for k, v in consts:
        args += ["-D", f"{k}={str(v).lower() if isinstance(v, bool) else v}"]  # fnkc spells bools true and false
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode and body and "has one body" in p.stderr:
        return None
    if p.returncode:
        sys.exit(f"fnkc failed on {kernel} {dict(consts)}{f' --body={body}' if body else ''}:\n{p.stderr}")
    return re.search(r"Used (\d+) registers", p.stderr).group(1), re.search(r"(\d+) bytes spill stores", p.stderr).group(1)


for (kernel, consts), path in sorted(launches.items()):
    for body in ("full", "partial") if bodies else (None,):
        u = usage(path, kernel, consts, body)
        if u is None:
            break
        print(f"{kernel} {dict(consts)}{f' [{body}]' if body else ''}: {u[0]} registers, {u[1]} bytes spilled")
