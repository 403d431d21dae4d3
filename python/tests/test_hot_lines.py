"""tests/gpu/hot_lines.py: the per-line stall summary of ncu's source page,
on a trimmed copy of what ncu printed for layernorm_bwd in backend v8 (the
tune.py and ncu lines around the CSV included, as `stalls.sh --lines` captures them)."""
import csv
import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "gpu"))
import hot_lines  # noqa: E402

PAGE = '''==PROF== Connected to process 489 (/usr/bin/python3.12)
  LayerNorm bwd 32768x8192 (dx, partials)  stdlib WARPS=16 P=1x                 610.4 us   2639 GB/s err 0.00285
"Kernel Name","layernorm_bwd",
"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_barrier","stall_long_sb","stall_long_sb (Not Issued)"
"0x7f5523","      LDG.E.CONSTANT R10, desc[UR22][R10.64]","51","524288","0","40","20"
"0x7f5524","      LDG.E.128 R56, desc[UR22][R6.64]","181","524288","0","150","90"
"0x7f5525","@!P5  R2UR UR5, R10","15505","524288","0","15400","9000"
"0x7f5526","      BAR.SYNC.DEFER_BLOCKING 0x0","248","524288","240","0","0"
"0x7f5527","      UMOV UR8, 0x400","4431","524288","4400","0","0"
"0x7f5528","      EXIT","0","2112","0","0","0"
==PROF== Disconnected from process 489
'''


def test_hottest_line_and_its_reasons():
    executed, total, hot = hot_lines.summarize(hot_lines.read_lines(csv.reader(io.StringIO(PAGE))), top=3)
    assert executed == 5 * 524288 + 2112
    assert total == 51 + 181 + 15505 + 248 + 4431
    share, index, src, why, prev = hot[0]
    assert src == "@!P5  R2UR UR5, R10" and index == 2
    assert share == pytest.approx(15505 / total)
    assert why[0] == (15400.0, "long_sb")  # the "(Not Issued)" columns are not reasons of their own
    assert prev.startswith("LDG.E.128")
    assert [h[2] for h in hot[1:]] == ["UMOV UR8, 0x400", "BAR.SYNC.DEFER_BLOCKING 0x0"]
    assert hot[1][3] == [(4400.0, "barrier")]  # reasons with no samples are left out


def test_lines_without_samples_are_not_listed():
    _, _, hot = hot_lines.summarize(hot_lines.read_lines(csv.reader(io.StringIO(PAGE))), top=50)
    assert len(hot) == 5


def test_not_a_source_page():
    with pytest.raises(ValueError, match="no 'Address' header"):
        hot_lines.read_lines(csv.reader(io.StringIO("==PROF== nothing profiled\n")))
    no_samples = '"Address","Source","Instructions Executed"\n"0x1","EXIT","1"\n'
    with pytest.raises(ValueError, match="SourceCounters"):
        hot_lines.read_lines(csv.reader(io.StringIO(no_samples)))


# Two lines of the 1024x262144 backward's page in backend v16 (the
# wavefront columns as ncu names them; the counts are its own).
CONFLICTS = '''"Kernel Name","rmsnorm_bwd_split_smem",
"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","L1 Wavefronts Shared","L1 Wavefronts Shared Ideal","stall_short_sb"
"0x1","      LDS.128 R56, [R92+0x10]","900","262144","2097152","1048576","800"
"0x2","      LDS.128 R52, [R123+0x12010]","300","262144","1048576","1048576","200"
"0x3","      FFMA R68, R53, UR39, R60","500","262144","0","0","400"
'''


def test_bank_conflicts():
    lines = hot_lines.read_lines(csv.reader(io.StringIO(CONFLICTS)))
    waves, ideal, worst = hot_lines.bank_conflicts(lines)
    assert (waves, ideal) == (3 * 1048576, 2 * 1048576)
    assert worst == [(1048576.0, 0, "LDS.128 R56, [R92+0x10]")]  # the conflict-free load is not listed
    assert hot_lines.bank_conflicts(hot_lines.read_lines(csv.reader(io.StringIO(PAGE)))) is None


def test_cli(tmp_path, capsys):
    page = tmp_path / "page.csv"
    page.write_text(PAGE)
    assert hot_lines.main([str(page), "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "stall samples" in out and "R2UR UR5, R10" in out and "long_sb 15400" in out
    assert "shared memory" not in out  # the page has no wavefront columns
    assert hot_lines.main([str(tmp_path / "missing.csv")]) == 1
    assert "missing.csv" in capsys.readouterr().err
    page.write_text(CONFLICTS)
    assert hot_lines.main([str(page)]) == 0
    out = capsys.readouterr().out
    assert "3145728 wavefronts, 2097152 ideal (1.50x)" in out and "1048576 excess  line 0: LDS.128 R56" in out
