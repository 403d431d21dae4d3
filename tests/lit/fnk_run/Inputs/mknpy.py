# Writes a .npy file of random non-zero values for fnk run tests:
#   mknpy.py PATH DTYPE SHAPE [SEED]   (SHAPE as "3,5"; "" for a scalar)
import sys

import numpy as np

path, dtype, shape = sys.argv[1], sys.argv[2], sys.argv[3]
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
dims = tuple(int(d) for d in shape.split(",") if d)
rng = np.random.default_rng(seed)
mag = rng.uniform(0.25, 2.0, size=dims)
sign = np.where(rng.random(size=dims) < 0.5, -1.0, 1.0)
v = mag * sign
if np.dtype(dtype).kind in "iu":
    v = np.rint(v * 10)
np.save(path, np.ascontiguousarray(v.astype(dtype)))
