"""Runs every GPU case with `fnk run --device gpu --check`, in parallel
processes, and prints PASS/FAIL lines and a summary table. Usage:
  run_checks.py FNK OUTDIR [--quick | --knob]
(--knob: the fewer shapes of run.sh's knob steps, tests/gpu/cases.py)
FNK_CHECK_ONLY=a,b keeps the cases whose kernel name contains a or b."""
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import cases  # noqa: E402


def run_case(fnk, root, outdir, idx, case):
    T, shape, file, kernel, ins, outs, scalars, dims = case[:8]
    consts = case[8] if len(case) > 8 else {}
    d = tempfile.mkdtemp(prefix=f"c{idx}_", dir=outdir)
    cmd = [fnk, "run", os.path.join(root, file), "-k", kernel, "-D", f"T={T}", "--device", "gpu", "--check"]
    for name, v in consts.items():
        cmd += ["-D", f"{name}={v}"]
    for name, a in ins.items():
        p = os.path.join(d, name + ".npy")
        np.save(p, a.astype(np.int32 if a.dtype.kind in "iu" else np.float32))  # i32 tensors take i32 data
        cmd += ["--in", f"{name}={p}"]
    for name in outs:
        cmd += ["--out", f"{name}={os.path.join(d, name + '_out.npy')}"]
    for name, v in scalars.items():
        cmd += ["--arg", f"{name}={v}"]
    for name, v in dims.items():
        cmd += ["--dim", f"{name}={v}"]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        rc, text = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, text = -1, "timeout"
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    os.rmdir(d)
    errs = [l.split("max_abs_err ")[1].split(" ")[0] for l in text.splitlines() if "max_abs_err" in l]
    return (T, shape, kernel, rc, text, errs, time.time() - t0)


def main():
    fnk, outdir = sys.argv[1], sys.argv[2]
    quick = "--quick" in sys.argv
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.makedirs(outdir, exist_ok=True)
    all_ = list(cases.all_cases(quick, knob="--knob" in sys.argv))
    only = [k for k in os.environ.get("FNK_CHECK_ONLY", "").split(",") if k]
    if only:
        all_ = [c for c in all_ if any(k in c[3] for k in only)]
        if not all_:  # a filter that selects nothing must not pass as "0/0"
            print(f"FAIL: FNK_CHECK_ONLY={os.environ['FNK_CHECK_ONLY']} selects no case")
            return 1
    log = open(os.path.join(outdir, "checks.log"), "w")
    results = []
    # One process per case, FNK_JOBS at once. On the 16-core GPU machine run.sh took 474 s at 12 and 531 s at
    # 16, one per core (two runs on two cards, not an A/B; each process also holds a CUDA context on the one
    # GPU; backend v14), so 12 stays: 429-435 s with the 1103 checks of backend v15.
    with ThreadPoolExecutor(max_workers=int(os.environ.get("FNK_JOBS", "12"))) as ex:
        futs = [ex.submit(run_case, fnk, root, outdir, i, c) for i, c in enumerate(all_)]
        for f in futs:
            T, shape, kernel, rc, text, errs, dt = f.result()
            status = "PASS" if rc == 0 else "FAIL"
            line = f"{status} {kernel} T={T} {shape} max_abs_err=[{', '.join(errs)}] ({dt:.1f}s)"
            print(line, flush=True)
            log.write(line + "\n" + ("" if rc == 0 else text + "\n"))
            results.append((kernel, T, status, text if rc else ""))
    log.close()
    # table: kernel x dtype -> passed/total
    table = {}
    for kernel, T, status, _ in results:
        p, t = table.get((kernel, T), (0, 0))
        table[(kernel, T)] = (p + (status == "PASS"), t + 1)
    print("\n%-26s %-5s %s" % ("kernel", "dtype", "passed"))
    for (kernel, T), (p, t) in sorted(table.items()):
        print("%-26s %-5s %d/%d%s" % (kernel, T, p, t, "" if p == t else "  <-- FAIL"))
    fails = [r for r in results if r[2] == "FAIL"]
    for kernel, T, _, text in fails[:5]:
        print(f"--- first failure output: {kernel} {T}\n{text[-1500:]}")
    print(f"\nchecks: {len(results) - len(fails)}/{len(results)} passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
