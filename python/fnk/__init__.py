"""fnk from Python: load or compile fnk source and call its kernels.

    import fnk, numpy as np
    mod = fnk.load("stdlib/norm/rmsnorm.fnk")
    mod.rmsnorm_fwd(x, w, y, rstd, eps=1e-6, BLOCK_N=1024)

Tensors go positionally or by parameter name; scalars and const-generic
parameters by keyword. NumPy arrays run in the CPU interpreter (the reference
semantics); outputs are written into the arrays passed for `out` parameters.
A dtype const parameter (`T: dtype`) left unset is taken from the first array
passed for a parameter of that type. Errors raise fnk.CompileError (with the
full located diagnostic) or fnk.ArgumentError before anything runs.
"""
import ctypes
import json

from . import _lib
from ._lib import lib, take_string, c_strings

__all__ = ["load", "compile", "Module", "Kernel", "CompileError", "ArgumentError", "FnkError", "version"]


class FnkError(Exception):
    """Base of fnk's errors."""


class CompileError(FnkError):
    """The source has errors; the message is the full diagnostic text."""


class ArgumentError(FnkError):
    """A kernel call's arguments do not fit its parameters."""


def version():
    return lib.fnk_version().decode()


_NUMPY_DTYPES = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint32": "u32", "bool": "bool",
}


def _const_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    name = getattr(value, "name", None) or str(value).replace("torch.", "")
    return _NUMPY_DTYPES.get(name, name)


def _fnk_dtype_of(array):
    name = str(array.dtype).replace("torch.", "")
    if name not in _NUMPY_DTYPES:
        raise ArgumentError(f"unsupported element type {array.dtype}")
    return _NUMPY_DTYPES[name]


class Kernel:
    """One kernel of a module; call it like a function."""

    def __init__(self, module, sig):
        self._module = module
        self.name = sig["name"]
        self.params = sig["params"]
        self.consts = sig["consts"]
        self.__doc__ = self.signature()

    def signature(self):
        consts = ", ".join(c["name"] + ": " + c["kind"] + (" = " + c["default"] if c["default"] else "")
                           for c in self.consts)
        params = ", ".join(p["name"] + ": " + ("out " if p["out"] else "") +
                           (f"tensor<{p['dtype']}>[{', '.join(p['dims'])}]" if p["kind"] == "tensor" else p["dtype"])
                           for p in self.params)
        return f"kernel {self.name}<{consts}>({params})"

    def __repr__(self):
        return f"<fnk {self.signature()}>"

    def _bind(self, args, kwargs):
        names = [p["name"] for p in self.params]
        const_names = {c["name"] for c in self.consts}
        if len(args) > len(names):
            raise ArgumentError(f"{self.name}() takes {len(names)} arguments, got {len(args)}")
        values = dict(zip(names, args))
        consts = {}
        for k, v in kwargs.items():
            if k in const_names:
                consts[k] = _const_text(v)
            elif k in names:
                if k in values:
                    raise ArgumentError(f"{self.name}(): '{k}' given twice")
                values[k] = v
            else:
                raise ArgumentError(f"{self.name}() has no parameter or const '{k}' ({self.signature()})")
        missing = [n for n in names if n not in values]
        if missing:
            raise ArgumentError(f"{self.name}(): missing argument(s) {', '.join(missing)} ({self.signature()})")
        # An unset dtype const follows the arrays passed for parameters of that type.
        for c in self.consts:
            if c["kind"] == "dtype" and c["name"] not in consts:
                for p in self.params:
                    if p["kind"] == "tensor" and p["dtype"] == c["name"] and hasattr(values[p["name"]], "dtype"):
                        consts[c["name"]] = _fnk_dtype_of(values[p["name"]])
                        break
        return values, consts

    def ir(self, **consts):
        """The kernel's tile IR for these const-generic values."""
        return self._module._kernel_text(lib.fnk_kernel_ir, self.name, consts)

    def ptx(self, **consts):
        """The kernel's PTX for sm_90a at these const-generic values, as
        `fnkc --emit=ptx` writes it (builds with the GPU backend)."""
        return self._module._kernel_text(lib.fnk_kernel_ptx, self.name, consts)

    def occupancy(self, **consts):
        """What the driver says of the kernel at these const-generic values on
        the GPU: a dict of registers and local_bytes (per thread), ctas_per_sm,
        clusters (resident on the device at once; 0 for kernels without
        clusters) and sms. Compiles and loads the kernel; raises CompileError
        without a GPU. For a kernel with two bodies (a full tile's and a
        masked one), each launch compiles the one it runs: the figures of the
        body that holds fewer CTAs (more registers, more local memory)."""
        return json.loads(self._module._kernel_text(lib.fnk_kernel_occupancy, self.name, consts))

    def __call__(self, *args, **kwargs):
        values, consts = self._bind(args, kwargs)
        device = None
        keep = []  # ctypes buffers that must outlive the call
        cargs = (_lib.fnk_arg * len(self.params))()
        for i, p in enumerate(self.params):
            v = values[p["name"]]
            a = cargs[i]
            a.name = p["name"].encode()
            if p["kind"] == "scalar":
                if not isinstance(v, (int, float, bool)):
                    raise ArgumentError(f"{self.name}(): '{p['name']}' is a scalar, got {type(v).__name__}")
                a.is_tensor = 0
                a.scalar = float(v)
                continue
            a.is_tensor = 1
            dev, ptr, shape, strides, dtype = _describe(v, p["name"], self.name, p["out"])
            if device is None:
                device = dev
            elif device != dev:
                raise ArgumentError(f"{self.name}(): '{p['name']}' is on {dev} but earlier tensors are on {device}")
            shp = (ctypes.c_int64 * max(1, len(shape)))(*shape)
            strd = (ctypes.c_int64 * max(1, len(strides)))(*strides)
            keep += [shp, strd]
            a.tensor = _lib.fnk_tensor(ptr, dtype.encode(), len(shape), shp, strd)
        stream = None
        if device == "cuda":
            import torch
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        names = list(consts)
        err = ctypes.c_void_p()
        rc = lib.fnk_run(self._module._handle, self.name.encode(), c_strings(names),
                         c_strings([consts[n] for n in names]), len(names), cargs, len(self.params),
                         1 if device == "cuda" else 0, stream, ctypes.byref(err))
        if rc != 0:
            msg = take_string(err.value)
            cls = CompileError if msg and ": error: " in msg else ArgumentError
            raise cls(msg)


def _describe(v, pname, kname, is_out):
    """(device, data pointer, shape, strides in elements, fnk dtype) of a NumPy array or torch tensor."""
    mod = type(v).__module__
    if mod.startswith("torch"):
        if not v.is_cuda:
            raise ArgumentError(f"{kname}(): '{pname}' is a CPU torch tensor; pass a CUDA tensor or a NumPy array")
        return "cuda", v.data_ptr(), list(v.shape), list(v.stride()), _fnk_dtype_of(v)
    import numpy as np
    if not isinstance(v, np.ndarray):
        raise ArgumentError(f"{kname}(): '{pname}' must be a NumPy array or a torch tensor, got {type(v).__name__}")
    if is_out and not v.flags.writeable:
        raise ArgumentError(f"{kname}(): output '{pname}' is read-only")
    size = v.dtype.itemsize
    if any(s % size for s in v.strides):
        raise ArgumentError(f"{kname}(): '{pname}' has strides that are not a multiple of its element size")
    return "cpu", v.ctypes.data, list(v.shape), [s // size for s in v.strides], _fnk_dtype_of(v)


class Module:
    """A loaded fnk module; its kernels are attributes."""

    def __init__(self, handle):
        self._handle = handle
        err = ctypes.c_void_p()
        sig = take_string(lib.fnk_module_signature(handle, ctypes.byref(err)))
        if sig is None:
            raise FnkError(take_string(err.value))
        self.kernels = {k["name"]: Kernel(self, k) for k in json.loads(sig)["kernels"]}

    def __getattr__(self, name):
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"module has no kernel '{name}' (kernels: {', '.join(kernels)})")

    def __dir__(self):
        return list(super().__dir__()) + list(self.kernels)

    def _kernel_text(self, emit, kernel, consts):
        """emit (fnk_kernel_ir, fnk_kernel_ptx or fnk_kernel_occupancy) for `kernel` at `consts`."""
        texts = {k: _const_text(v) for k, v in consts.items()}
        names = list(texts)
        err = ctypes.c_void_p()
        text = take_string(emit(self._handle, kernel.encode(), c_strings(names), c_strings([texts[n] for n in names]),
                                len(names), ctypes.byref(err)))
        if text is None:
            raise CompileError(take_string(err.value))
        return text

    def __del__(self):
        if getattr(self, "_handle", None):
            lib.fnk_module_free(self._handle)
            self._handle = None


def _includes(include):
    include = [str(p) for p in (include or [])]
    return c_strings(include), len(include)


def load(path, include=None):
    """Loads and checks a .fnk file."""
    inc, n = _includes(include)
    err = ctypes.c_void_p()
    h = lib.fnk_module_load(str(path).encode(), inc, n, ctypes.byref(err))
    if not h:
        raise CompileError(take_string(err.value))
    return Module(h)


def compile(source, name="<source>", include=None):
    """Checks fnk source text and returns its module."""
    inc, n = _includes(include)
    err = ctypes.c_void_p()
    h = lib.fnk_module_compile(name.encode(), source.encode(), inc, n, ctypes.byref(err))
    if not h:
        raise CompileError(take_string(err.value))
    return Module(h)
