"""Compiles every kernel of stdlib/, examples/, bench/variants.fnk and the GPU
conformance kernels (tests/gpu/lang.fnk) to a cubin with fnkc (LLVM NVPTX,
then ptxas) at several const settings; prints FAIL lines and a count."""
import re
import subprocess
import sys
from pathlib import Path

fnkc, root = sys.argv[1], Path(sys.argv[2])
settings = [{}, {"T": "f32", "CLUSTER": "2"}]
done = total = 0
files = list((root / "stdlib").rglob("*.fnk")) + list((root / "examples").glob("*.fnk"))
files += [root / "bench" / "variants.fnk", root / "tests" / "gpu" / "lang.fnk"]
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
            total += 1
            p = subprocess.run(args, capture_output=True, text=True)
            if p.returncode:
                print(f"FAIL {f.name} {kernel} {consts}: {(p.stdout + p.stderr).strip()[:400]}")
            else:
                done += 1
print(f"assembled {done} of {total} kernels")
