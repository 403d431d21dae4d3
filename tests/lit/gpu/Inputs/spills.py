"""Registers and spills (fnkc --resource-usage, i.e. ptxas -v) of every
launch fnk.torch makes (python/fnk/schedules.py) for rows of several widths,
bf16 and float32 (whose settings carry 'T': 'f32'): one line per distinct
kernel setting, "kernel {consts}: R registers, S bytes spilled"."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

fnkc, root = sys.argv[1], Path(sys.argv[2])
spec = importlib.util.spec_from_file_location("schedules", root / "python" / "fnk" / "schedules.py")
schedules = importlib.util.module_from_spec(spec)  # without the fnk package, which loads libfnk
spec.loader.exec_module(schedules)

files = {"rmsnorm": root / "stdlib" / "norm" / "rmsnorm.fnk", "layernorm": root / "stdlib" / "norm" / "layernorm.fnk"}
launches = {}
for dt in ("bf16", "f32"):
    for n in (7, 128, 512, 1000, 2048, 4096, 8192, 16384, 65536, 262144):
        # The backwards also as launched for few rows (m = 1: the row kernels without their L2 request).
        for launch in (schedules.rms_fwd(n, dtype=dt), schedules.rms_bwd(n, dtype=dt), schedules.rms_bwd(n, m=1, dtype=dt),
                       schedules.ln_fwd(n, dtype=dt), schedules.ln_bwd(n, dtype=dt),
                       schedules.ln_bwd(n, m=1, dtype=dt)):
            consts = {**launch.consts, **({"T": dt} if dt != "bf16" else {})}
            key = (launch.kernel, tuple(sorted(consts.items())))
            launches[key] = files["rmsnorm" if launch.kernel.startswith("rms") else "layernorm"]
for (kernel, consts), path in sorted(launches.items()):
    args = [fnkc, str(path), "-k", kernel, "--emit=cubin", "--resource-usage", "-o", "/dev/null"]
    for k, v in consts:
        args += ["-D", f"{k}={v}"]
    info = subprocess.run(args, capture_output=True, text=True, check=True).stderr
    regs = re.search(r"Used (\d+) registers", info).group(1)
    spilled = re.search(r"(\d+) bytes spill stores", info).group(1)
    print(f"{kernel} {dict(consts)}: {regs} registers, {spilled} bytes spilled")
