"""What a shared library needs and exports, from `readelf --dynamic` and
`nm --dynamic --defined-only` of it: one line each, for FileCheck.
    so_check.py LIB ALLOWED_NEEDED... """
import re
import subprocess
import sys

lib, allowed = sys.argv[1], set(sys.argv[2:])
dynamic = subprocess.run(["readelf", "--dynamic", lib], capture_output=True, text=True, check=True).stdout
needed = set(re.findall(r"\(NEEDED\).*\[(.+)\]", dynamic))
print("needed beyond the allowed:", sorted(needed - allowed))
symbols = subprocess.run(["nm", "--dynamic", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
names = [line.split()[-1] for line in symbols.splitlines() if line.strip()]
print("exported beyond fnk_*:", sorted(n for n in names if not n.startswith("fnk_")))
print("exports fnk_instance_run:", "fnk_instance_run" in names, "fnk_tool_main:", "fnk_tool_main" in names)
