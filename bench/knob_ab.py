"""A/B of a compiler knob (an environment variable read once per process, such
as FNK_FULL_TILES or FNK_SCHEDULE) on bench/tune.py configs: tune.py runs in
fresh processes with the knob off and on, alternating (off, on, off, on: a
drift of the clocks between runs shows as a spread), and one table compares
the best time of each setting per config.

    python3 bench/knob_ab.py FNK_FULL_TILES [--rounds 2] [--variants] --only "LayerNorm fwd" ...

Off is the value 0 and on 1 unless --off and --on say otherwise (FNK_MINCTAS
--on 16). The cache of compiled kernels is keyed on the knobs (ir::knobKey,
nvptx::loweringKey), so each setting compiles its own kernels."""
import argparse
import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def read_times(path):
    """{(workload, config): us} from a tune.py CSV; {} when the run wrote none
    (it failed before its first config)."""
    if not os.path.exists(path):
        return {}
    with open(path, newline="") as f:
        return {(r["workload"], r["config"]): float(r["us"]) for r in csv.DictReader(f)}


def compare(runs_off, runs_on):
    """Rows (workload, config, best off, best on, on/off, spread) for the
    configs every run timed; spread is the largest (max - min) / min of one
    setting's runs, the noise against which on/off is read."""
    keys = set.intersection(*(set(r) for r in runs_off + runs_on)) if runs_off and runs_on else set()
    rows = []
    for k in sorted(keys):
        off = [r[k] for r in runs_off]
        on = [r[k] for r in runs_on]
        spread = max((max(v) - min(v)) / min(v) for v in (off, on))
        rows.append((k[0], k[1], min(off), min(on), min(on) / min(off), spread))
    return rows


def table(knob, rows, off="0", on="1"):
    lines = [f"{'workload':42s} {'config':44s} {knob + '=' + off:>10s} {knob + '=' + on:>10s} {'on/off':>7s} {'spread':>7s}"]
    for w, c, off, on, ratio, spread in rows:
        lines.append(f"{w:42.42s} {c:44.44s} {off:10.1f} {on:10.1f} {ratio:7.3f} {spread * 100:6.1f}%")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("knob")
    ap.add_argument("--rounds", type=int, default=2, help="runs per setting, alternating")
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--off", default="0", help="the knob's value for the first setting (default 0)")
    ap.add_argument("--on", default="1", help="and for the second (default 1; e.g. FNK_MINCTAS --on 16)")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--out", default=os.environ.get("OUT"), help="where tune.py's runs go (default: a new temporary folder)")
    a = ap.parse_args()
    a.out = a.out or tempfile.mkdtemp(prefix="knob_ab")
    runs = {a.off: [], a.on: []}
    failed = 0
    for i in range(a.rounds):
        for value in (a.off, a.on):
            out = os.path.join(a.out, f"{a.knob}_{value}_{i}")
            cmd = [sys.executable, str(HERE / "tune.py"), "--out", out] + (["--variants"] if a.variants else [])
            for o in a.only:
                cmd += ["--only", o]
            rc = subprocess.run(cmd, env={**os.environ, a.knob: value}, stdout=subprocess.DEVNULL).returncode
            if rc != 0:  # a config that failed or mismatched: tune.py said which on stderr; the others count
                print(f"tune.py with {a.knob}={value} (round {i}) exited {rc}", file=sys.stderr)
                failed += 1
            runs[value].append(read_times(os.path.join(out, "variants.csv" if a.variants else "tune.csv")))
    rows = compare(runs[a.off], runs[a.on])
    print(table(a.knob, rows, a.off, a.on))
    if not rows:
        print("no config was timed in every run", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
