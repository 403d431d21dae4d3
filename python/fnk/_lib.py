"""Finds and loads libfnk (api/fnk.h) through ctypes."""
import ctypes
import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]


def _candidates():
    env = os.environ.get("FNK_BUILD_DIR")
    if env:
        yield Path(env) / "libfnk.so"
    yield _REPO / "build" / "libfnk.so"


# Imports of std.* resolve against this checkout's stdlib unless told otherwise.
os.environ.setdefault("FNK_STDLIB", str(_REPO / "stdlib"))


def _load():
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.is_file():
            return ctypes.CDLL(str(path))
    raise ImportError(
        "fnk: cannot find libfnk.so (looked in: " + ", ".join(tried) + "); "
        "build fnk first (scripts/demo.sh or cmake --build build), or set FNK_BUILD_DIR"
    )


lib = _load()
_c_char_pp = ctypes.POINTER(ctypes.c_char_p)
_err = ctypes.POINTER(ctypes.c_char_p)

lib.fnk_abi_version.restype = ctypes.c_int32
ABI_VERSION = 3  # checked before any other symbol is looked up: an older libfnk lacks some
if lib.fnk_abi_version() != ABI_VERSION:
    raise ImportError(f"fnk: libfnk ABI {lib.fnk_abi_version()} does not match the package's {ABI_VERSION}")
lib.fnk_version.restype = ctypes.c_char_p
lib.fnk_string_free.argtypes = [ctypes.c_void_p]
lib.fnk_module_load.restype = ctypes.c_void_p
lib.fnk_module_load.argtypes = [ctypes.c_char_p, _c_char_pp, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
lib.fnk_module_compile.restype = ctypes.c_void_p
lib.fnk_module_compile.argtypes = [ctypes.c_char_p, ctypes.c_char_p, _c_char_pp, ctypes.c_int32,
                                   ctypes.POINTER(ctypes.c_void_p)]
lib.fnk_module_free.argtypes = [ctypes.c_void_p]
lib.fnk_module_signature.restype = ctypes.c_void_p
lib.fnk_module_signature.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
for _text_of_instance in (lib.fnk_kernel_ir, lib.fnk_kernel_ptx, lib.fnk_kernel_occupancy):
    _text_of_instance.restype = ctypes.c_void_p
    _text_of_instance.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _c_char_pp, _c_char_pp, ctypes.c_int32,
                                  ctypes.POINTER(ctypes.c_void_p)]

lib.fnk_instance_get.restype = ctypes.c_void_p
lib.fnk_instance_get.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _c_char_pp, _c_char_pp, ctypes.c_int32,
                                 ctypes.POINTER(ctypes.c_void_p)]
lib.fnk_instance_run.restype = ctypes.c_int32
lib.fnk_instance_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                 ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
# fnk_instance_run's dtype codes (api/fnk.h, FNK_DTYPE_*).
DTYPE_CODES = {name: i for i, name in enumerate(("f32", "f64", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "u32",
                                                 "bool"))}


def take_string(ptr):
    """Copies and frees a malloc'ed C string returned by libfnk."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib.fnk_string_free(ptr)


def c_strings(items):
    arr = (ctypes.c_char_p * max(1, len(items)))()
    for i, s in enumerate(items):
        arr[i] = s.encode()
    return arr
