"""Running fnk with an IR knob set (FNK_SCHEDULE, FNK_FULL_TILES): the knobs are
read once per process, so each setting runs in a process of its own."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def run_code(code, knob, value, out_path):
    """Runs `code` (which writes an .npz to `out_path`) with `knob`=`value`; its arrays."""
    p = subprocess.run([sys.executable, "-c", code], env={**os.environ, knob: value}, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return dict(np.load(out_path))


def tool(name):
    """The path of the build's `name` (fnk, fnkc): FNK_BUILD_DIR's, else build/'s."""
    for d in (os.environ.get("FNK_BUILD_DIR"), str(REPO / "build")):
        if d and (Path(d) / name).is_file():
            return str(Path(d) / name)
    pytest.fail(f"no {name} beside libfnk (set FNK_BUILD_DIR)")


def fnkc():
    return tool("fnkc")


def kernel_ir(path, kernel, knob, value):
    """fnkc --emit=ir of one kernel with `knob`=`value`."""
    p = subprocess.run([fnkc(), str(path), "-k", kernel, "--emit=ir"], env={**os.environ, knob: value},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout
