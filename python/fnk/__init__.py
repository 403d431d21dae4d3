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
import array
import ctypes
import json
import struct

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


_dtype_names = {}  # NumPy or torch dtype -> fnk dtype name, filled on first sight


def _fnk_dtype_of(array):
    dt = array.dtype
    name = _dtype_names.get(dt)
    if name is None:
        name = _NUMPY_DTYPES.get(str(dt).replace("torch.", ""))
        if name is None:
            raise ArgumentError(f"unsupported element type {dt}")
        _dtype_names[dt] = name
    return name


_MISSING = object()
_WORD, _DOUBLE = struct.Struct("<q"), struct.Struct("<d")


def _double_bits(v):
    """The bits of a float as an IEEE double, as a signed 64-bit word."""
    return _WORD.unpack(_DOUBLE.pack(v))[0]


def _error(msg):
    """The exception for a libfnk error message: a located diagnostic is a compile error."""
    return (CompileError if msg and ": error: " in msg else ArgumentError)(msg)


_raw_stream = None


def _current_stream():
    """Device 0's current CUDA stream, where fnk launches, as a pointer
    (torch's current_stream() object costs several microseconds a call)."""
    global _raw_stream
    import torch
    if _raw_stream is None:
        get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _raw_stream = (lambda: get(0)) if get else (lambda: torch.cuda.current_stream(0).cuda_stream)
    return _raw_stream()


class Kernel:
    """One kernel of a module; call it like a function."""

    def __init__(self, module, sig):
        self._module = module
        self.name = sig["name"]
        self.params = sig["params"]
        self.consts = sig["consts"]
        self.__doc__ = self.signature()
        # What every call needs, worked out once: a call's host time is most of a small launch's.
        self._index = {p["name"]: i for i, p in enumerate(self.params)}
        self._const_names = {c["name"] for c in self.consts}
        self._kernel_bytes = self.name.encode()
        self._scalar = [p["kind"] == "scalar" for p in self.params]
        # Each dtype const's tensor parameters, whose arrays set it when the call leaves it unset.
        self._dtype_params = [(c["name"], [i for i, p in enumerate(self.params)
                                           if p["kind"] == "tensor" and p["dtype"] == c["name"]])
                              for c in self.consts if c["kind"] == "dtype"]
        self._instances = {}  # the call's consts (name, text) -> libfnk's instance handle

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
        """The call's values in parameter order, and its consts as texts."""
        n = len(self.params)
        if len(args) > n:
            raise ArgumentError(f"{self.name}() takes {n} arguments, got {len(args)}")
        values = list(args) + [_MISSING] * (n - len(args))
        consts = {}
        for k, v in kwargs.items():
            if k in self._const_names:
                consts[k] = _const_text(v)
            elif k in self._index:
                i = self._index[k]
                if values[i] is not _MISSING:
                    raise ArgumentError(f"{self.name}(): '{k}' given twice")
                values[i] = v
            else:
                raise ArgumentError(f"{self.name}() has no parameter or const '{k}' ({self.signature()})")
        missing = [p["name"] for p, v in zip(self.params, values) if v is _MISSING]
        if missing:
            raise ArgumentError(f"{self.name}(): missing argument(s) {', '.join(missing)} ({self.signature()})")
        # An unset dtype const follows the arrays passed for parameters of that type.
        for name, idx in self._dtype_params:
            if name not in consts:
                for i in idx:
                    if hasattr(values[i], "dtype"):
                        consts[name] = _fnk_dtype_of(values[i])
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
        without a GPU. Each launch compiles the variant it runs (of a kernel
        with two bodies, a full tile's or a masked one; the code for tensors
        off 16-byte alignment or not): the figures of the
        variant that holds fewest CTAs (more registers, more local memory)."""
        return json.loads(self._module._kernel_text(lib.fnk_kernel_occupancy, self.name, consts))

    def __call__(self, *args, **kwargs):
        self._run(*self._prepare(args, kwargs))

    def _prepare(self, args, kwargs):
        """The arguments of lib.fnk_instance_run for one call, the error slot
        it fills, and the words array its second argument points into (which
        must outlive the call)."""
        values, consts = self._bind(args, kwargs)
        device = None
        words = []
        for i, v in enumerate(values):
            if self._scalar[i]:
                if not isinstance(v, (int, float, bool)):
                    raise ArgumentError(f"{self.name}(): '{self.params[i]['name']}' is a scalar, got {type(v).__name__}")
                words.append(_double_bits(float(v)))
                continue
            dev, ptr, shape, strides, dtype = _describe(v, self.params[i]["name"], self.name, self.params[i]["out"])
            if device is None:
                device = dev
            elif device != dev:
                raise ArgumentError(f"{self.name}(): '{self.params[i]['name']}' is on {dev} but earlier tensors are "
                                    f"on {device}")
            words += (ptr, _lib.DTYPE_CODES[dtype], len(shape), *shape, *strides)
        cwords = array.array("q", words)
        err = ctypes.c_void_p()
        return (self._instance(consts), cwords.buffer_info()[0], len(words), 1 if device == "cuda" else 0,
                _current_stream() if device == "cuda" else None, ctypes.byref(err)), err, cwords

    def _instance(self, consts):
        """libfnk's handle of this kernel at `consts` (instantiated on first use)."""
        key = tuple(consts.items())
        inst = self._instances.get(key)
        if inst is None:
            err = ctypes.c_void_p()
            inst = lib.fnk_instance_get(self._module._handle, self._kernel_bytes, c_strings(list(consts)),
                                        c_strings(list(consts.values())), len(key), ctypes.byref(err))
            if not inst:
                raise _error(take_string(err.value))
            self._instances[key] = inst
        return inst

    def _run(self, run_args, err, words):
        """One launch from _prepare's arguments (`words` is held here until it returns)."""
        if lib.fnk_instance_run(*run_args) != 0:
            raise _error(take_string(err.value))


def _describe(v, pname, kname, is_out):
    """(device, data pointer, shape, strides in elements, fnk dtype) of a NumPy array or torch tensor."""
    mod = type(v).__module__
    if mod.startswith("torch"):
        device = v.get_device()
        if device < 0:
            raise ArgumentError(f"{kname}(): '{pname}' is a CPU torch tensor; pass a CUDA tensor or a NumPy array")
        if device != 0:  # libfnk holds the first device's context (rt::Device::open)
            raise ArgumentError(f"{kname}(): '{pname}' is on cuda:{device}, but fnk runs on CUDA device 0")
        return "cuda", v.data_ptr(), v.shape, v.stride(), _fnk_dtype_of(v)
    import numpy as np
    if not isinstance(v, np.ndarray):
        raise ArgumentError(f"{kname}(): '{pname}' must be a NumPy array or a torch tensor, got {type(v).__name__}")
    if is_out and not v.flags.writeable:
        raise ArgumentError(f"{kname}(): output '{pname}' is read-only")
    size = v.dtype.itemsize
    if any(s % size for s in v.strides):
        raise ArgumentError(f"{kname}(): '{pname}' has strides that are not a multiple of its element size")
    return "cpu", v.ctypes.data, v.shape, [s // size for s in v.strides], _fnk_dtype_of(v)


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
