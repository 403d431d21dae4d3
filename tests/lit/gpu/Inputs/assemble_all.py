"""Compiles every kernel of stdlib/, examples/, bench/variants.fnk and the GPU
conformance kernels (tests/gpu/lang.fnk) to a cubin with fnkc (LLVM NVPTX,
then ptxas or nvJitLink) at several const settings, in parallel; prints FAIL
lines and a count. Also run by tests/gpu/run.sh (with and without the
lowering's experiment knobs, which the environment passes on to fnkc)."""
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

fnkc, root = sys.argv[1], Path(sys.argv[2])
settings = [{}, {"T": "f32", "CLUSTER": "2"}]
files = list((root / "stdlib").rglob("*.fnk")) + list((root / "examples").glob("*.fnk"))
files += [root / "bench" / "variants.fnk", root / "tests" / "gpu" / "lang.fnk"]
jobs = []
for f in sorted(files):
    text = f.read_text()
    for kernel, generics in re.findall(r"^kernel (\w+)(<[^>]*>)?", text, re.M):
        for s in settings:
            consts = {k: v for k, v in s.items() if re.search(rf"\b{k}:", generics or "")}
            if s and not consts:
                continue
            args = [fnkc, str(f), "-k", kernel, "--emit=cubin", "-o", "/dev/null"]
            for k, v in consts.items():
                args += ["-D", f"{k}={v}"]
            jobs.append((f.name, kernel, consts, args))


def assemble(job):
    name, kernel, consts, args = job
    p = subprocess.run(args, capture_output=True, text=True)
    return job, p.returncode, (p.stdout + p.stderr).strip()


done = 0
with ThreadPoolExecutor(max_workers=int(os.environ.get("FNK_JOBS", os.cpu_count() or 2))) as ex:
    for (name, kernel, consts, _), rc, text in ex.map(assemble, jobs):
        if rc:
            print(f"FAIL {name} {kernel} {consts}: {text[:400]}")
        else:
            done += 1
print(f"assembled {done} of {len(jobs)} kernels")
sys.exit(0 if done == len(jobs) else 1)
