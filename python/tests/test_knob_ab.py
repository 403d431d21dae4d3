"""bench/knob_ab.py's joining of tune.py runs, without a GPU: best times per
setting, the on/off ratio, the spread between runs, configs missing from a run
left out."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import knob_ab  # noqa: E402


def test_compare_takes_the_best_of_each_setting(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text('workload,config,us,GB/s\n"RMSNorm bwd 2048x8192 (dx, partials)",pf P=132,35.0,2900\n')
    assert knob_ab.read_times(csv) == {("RMSNorm bwd 2048x8192 (dx, partials)", "pf P=132"): 35.0}
    assert knob_ab.read_times(tmp_path / "none.csv") == {}  # a run that died before its first config
    a, b = ("LN", "x"), ("LN", "y")
    off = [{a: 100.0, b: 50.0}, {a: 102.0, b: 51.0}]
    on = [{a: 90.0}, {a: 91.0, b: 40.0}]
    rows = knob_ab.compare(off, on)
    assert [r[:2] for r in rows] == [("LN", "x")]  # b was not timed in every run
    _, _, best_off, best_on, ratio, spread = rows[0]
    assert (best_off, best_on) == (100.0, 90.0)
    assert abs(ratio - 0.9) < 1e-12 and abs(spread - 0.02) < 1e-12
    assert "FNK_FULL_TILES=1" in knob_ab.table("FNK_FULL_TILES", rows).splitlines()[0]
    assert "FNK_MINCTAS=16" in knob_ab.table("FNK_MINCTAS", rows, "0", "16").splitlines()[0]
