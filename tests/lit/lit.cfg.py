# lit configuration for fnk's golden tests: IR or source in, one tool run,
# FileCheck lines out. Tests live beside this file and in tests/diag/.
import os
import lit.formats

config.name = "fnk"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".fnk", ".fnkir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fnk_bin_root, "tests", "lit-out")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "Inputs"]
config.substitutions.append(("%fnkc", os.path.join(config.fnk_bin_root, "fnkc")))
config.substitutions.append(("%fnk", os.path.join(config.fnk_bin_root, "fnk")))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("%python", "/usr/bin/python3"))
config.substitutions.append(("%stdlib", os.path.join(config.fnk_src_root, "stdlib")))
config.substitutions.append(("%libfnk", os.path.join(config.fnk_bin_root, "libfnk.so")))

# The GPU backend's emitters (fnkc --emit=ptx|header) are tested where the
# build has them; compiling a generated header needs CUDA's cuda.h.
if getattr(config, "fnk_gpu", "OFF") in ("ON", "1", "TRUE"):
    config.available_features.add("fnk-gpu")
if os.path.exists("/usr/local/cuda/bin/ptxas"):
    config.available_features.add("ptxas")
if os.path.exists("/usr/local/cuda/include/cuda.h"):
    config.available_features.add("cuda-headers")
