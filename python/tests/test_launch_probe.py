"""bench/launch_probe.py without a GPU: its case syntax, and every norm family
it knows run in the interpreter with the inputs and outputs it passes (so
that a GPU call spent on it does not end at a wrong argument)."""
import argparse
import os
import sys
from pathlib import Path

import pytest

from knob_runs import tool

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import launch_probe  # noqa: E402


def test_cases_parse_with_their_dims_and_defaults():
    n, kernel, consts, dims = launch_probe.parse_case("4608:rmsnorm_bwd_split_acc:BLOCK_N=1536,CLUSTER=3,dim.R=4")
    assert (n, kernel) == (4608, "rmsnorm_bwd_split_acc")
    assert consts == {"T": "bf16", "BLOCK_N": "1536", "CLUSTER": "3"} and dims == {"R": "4"}
    assert launch_probe.parse_case("300:layernorm_bwd_split_acc:T=f32")[2:] == ({"T": "f32"}, {"R": "8"})
    for bad in ("4608:rmsnorm_bwd", "x:rmsnorm_fwd:A=1", "10:rmsnorm_fwd:A", "10:softmax:A=1"):
        with pytest.raises(argparse.ArgumentTypeError):
            launch_probe.parse_case(bad)


def test_every_family_runs_in_the_interpreter(capsys):
    cases = ["300:rmsnorm_fwd:BLOCK_N=128", "300:rmsnorm_fwd_row:BLOCK_N=512",
             "300:rmsnorm_bwd:BLOCK_N=512,dim.P=2", "300:rmsnorm_bwd_split:BLOCK_N=256,CLUSTER=2,dim.P=2",
             "4608:rmsnorm_bwd_split_acc:BLOCK_N=1536,CLUSTER=3,WARPS=6,P=2",
             "300:layernorm_fwd_row:BLOCK_N=512", "300:layernorm_bwd:BLOCK_N=512,dim.P=2",
             "300:layernorm_bwd_split_acc:BLOCK_N=256,CLUSTER=2,P=2"]
    argv = ["--device", "cpu", "--fnk", tool("fnk"), "--rows", "3"] + [a for c in cases for a in ("--case", c)]
    assert launch_probe.main(argv) == 0, capsys.readouterr().out
    assert capsys.readouterr().out.count(" ran") == len(cases)


def test_a_launch_that_fails_is_reported_and_fails_the_run(capsys):
    argv = ["--device", "cpu", "--fnk", tool("fnk"), "--rows", "3",
            "--case", "300:rmsnorm_bwd_split:BLOCK_N=64,CLUSTER=2,dim.P=2"]  # 128 columns cannot hold 300
    assert launch_probe.main(argv) == 1
    assert "FAILED" in capsys.readouterr().out


def test_lines_runs_the_launch_under_ncu_and_summarizes_its_page(tmp_path, monkeypatch, capsys):
    # A stand-in for ncu (no GPU here): it checks that it wraps one `fnk run --device gpu` launch (no --bench)
    # with the source page asked for, and prints a page of two SASS lines.
    fake = tmp_path / "ncu"
    fake.write_text('#!/bin/sh\ncase "$*" in *"--page source"*"fnk run"*"--device gpu"*) ;; *) exit 3;; esac\n'
                    'case "$*" in *--bench*) exit 4;; esac\n'
                    'echo \'"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed",'
                    '"stall_long_sb"\'\n'
                    'echo \'"0x1","      LDG.E.128 R4, desc[UR4][R2.64]","10","64","0"\'\n'
                    'echo \'"0x2","      FADD R5, R4, R4","90","64","90"\'\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    argv = ["--fnk", "fnk", "--rows", "3", "--lines", str(tmp_path / "lines"),
            "--case", "300:rmsnorm_fwd_row:BLOCK_N=512"]
    assert launch_probe.main(argv) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "90.0%" in out and "FADD R5, R4, R4" in out and "long_sb 90" in out
    assert len(list((tmp_path / "lines").glob("*.csv"))) == 1
