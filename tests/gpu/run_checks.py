"""Runs every GPU case with `fnk run --device gpu --check` (through `fnk
batch`, FNK_CHECK_BATCH cases per process; 0: a process per case), in
parallel processes, and prints PASS/FAIL lines and a summary table. Usage:
  run_checks.py FNK OUTDIR [--quick | --knob]
(--knob: the fewer shapes of run.sh's knob steps, tests/gpu/cases.py)
FNK_CHECK_ONLY=a,b keeps the cases whose kernel name contains a or b."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import cases  # noqa: E402


def case_options(root, d, case, mode=("--device", "gpu", "--check")):
    """`fnk run` options of one case (after `fnk run`), its inputs written into directory d; `mode`: where
    and how it runs (() for the interpreter)."""
    T, shape, file, kernel, ins, outs, scalars, dims = case[:8]
    consts = case[8] if len(case) > 8 else {}
    opts = [os.path.join(root, file), "-k", kernel, "-D", f"T={T}", *mode]
    for name, v in consts.items():
        opts += ["-D", f"{name}={v}"]
    for name, a in ins.items():
        p = os.path.join(d, name + ".npy")
        np.save(p, a.astype(np.int32 if a.dtype.kind in "iu" else np.float32))  # i32 tensors take i32 data
        opts += ["--in", f"{name}={p}"]
    for name in outs:
        opts += ["--out", f"{name}={os.path.join(d, name + '_out.npy')}"]
    for name, v in scalars.items():
        opts += ["--arg", f"{name}={v}"]
    for name, v in dims.items():
        opts += ["--dim", f"{name}={v}"]
    return opts


def result(case, rc, text, dt):
    errs = [l.split("max_abs_err ")[1].split(" ")[0] for l in text.splitlines() if "max_abs_err" in l]
    return (case[0], case[1], case[3], rc, text, errs, dt, case[8] if len(case) > 8 else {})


def run_case(fnk, root, outdir, idx, case):
    """One case in a `fnk run` process of its own."""
    d = tempfile.mkdtemp(prefix=f"c{idx}_", dir=outdir)
    cmd = [fnk, "run"] + case_options(root, d, case)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        rc, text = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, text = -1, "timeout"
    shutil.rmtree(d)
    return result(case, rc, text, time.time() - t0)


MARK = re.compile(r"^fnk batch: case (\d+) rc=(-?\d+) ms=(\d+)$")


def run_batch(fnk, root, outdir, idx, batch):
    """Cases in one `fnk batch` process (one CUDA context, compiled kernels kept). A case that fails there, or
    that the process never reported (a crash, a timeout), runs again in a process of its own, and that run is
    its verdict when a case before it in the batch failed alone too (a GPU fault poisons the context for the
    cases after it). A case that fails in the batch but passes alone, with no such failure before it, fails:
    the batch itself went wrong, and re-running alone must not hide that."""
    d = tempfile.mkdtemp(prefix=f"b{idx}_", dir=outdir)
    lines = []
    for j, case in enumerate(batch):
        cd = os.path.join(d, str(j))
        os.mkdir(cd)
        lines.append(" ".join(shlex.quote(o) for o in case_options(root, cd, case)))  # fnk batch splits as a shell
    listing = os.path.join(d, "cases.txt")
    with open(listing, "w") as f:
        f.write("\n".join(lines) + "\n")
    reported = {}
    try:
        p = subprocess.run([fnk, "batch", listing], capture_output=True, text=True, timeout=60 + 30 * len(batch))
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
    text = []
    for line in out.splitlines():
        m = MARK.match(line)
        if m:
            reported[int(m.group(1)) - 1] = (int(m.group(2)), "\n".join(text), int(m.group(3)) / 1e3)
            text = []
        else:
            text.append(line)
    results, failed_before = [], False
    for j, case in enumerate(batch):
        rc, t, dt = reported.get(j, (None, "", 0.0))
        if rc == 0:
            results.append(result(case, rc, t, dt))
            continue
        alone = run_case(fnk, root, outdir, f"{idx}_{j}", case)
        if alone[3] == 0 and not failed_before:
            how = "not reported" if rc is None else f"rc={rc}"
            alone = result(case, -2, f"failed in `fnk batch` ({how}) but passed alone, with no failure before it in "
                                     f"the batch: a fault of the batch\n--- in the batch:\n{t}\n--- alone:\n{alone[4]}",
                           alone[6])
        failed_before |= alone[3] != 0
        results.append(alone)
    shutil.rmtree(d)
    return results


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
    # FNK_JOBS processes at once. On the 16-core GPU machine run.sh took 474 s at 12 and 531 s at 16, one per
    # core (two runs on two cards, not an A/B; each process also holds a CUDA context on the one GPU; backend
    # v14), so 12 stays. With one process per case (FNK_CHECK_BATCH=0) a case took 2.2-2.7 s even at M = N = 1,
    # the process and its CUDA context, not the kernel (backend v23); by default the cases go FNK_CHECK_BATCH
    # at a time (those of one kernel together, so that they share its compiled kernels) through `fnk batch`.
    per = int(os.environ.get("FNK_CHECK_BATCH", "24"))
    with ThreadPoolExecutor(max_workers=int(os.environ.get("FNK_JOBS", "12"))) as ex:
        if per > 0:
            order = sorted(all_, key=lambda c: (c[2], c[3], c[0]))
            futs = [ex.submit(run_batch, fnk, root, outdir, i, order[i:i + per]) for i in range(0, len(order), per)]
        else:
            futs = [ex.submit(lambda *a: [run_case(*a)], fnk, root, outdir, i, c) for i, c in enumerate(all_)]
        for r in (r for f in futs for r in f.result()):
            T, shape, kernel, rc, text, errs, dt, consts = r
            status = "PASS" if rc == 0 else "FAIL"
            line = f"{status} {kernel} T={T} {shape} {consts or ''} max_abs_err=[{', '.join(errs)}] ({dt:.1f}s)"
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
