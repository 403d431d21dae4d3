// libfnk's C ABI (api/fnk.h) over the C++ front end, pipeline and interpreter.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "api/fnk.h"
#include "backend/interp/Binding.h"
#include "frontend/KernelCache.h"
#include "ir/Printer.h"
#include "support/Elements.h"
#include "support/Stack.h"
#ifdef FNK_HAVE_GPU
#include "backend/nvptx/Codegen.h"
#include "backend/runtime/Launch.h"
#endif

using namespace fnk;

struct fnk_module {
  // Callers may use one module from several threads at once (Python's ctypes
  // lets go of the GIL during a call): `mu` guards what calls change, the
  // instantiation cache with its diagnostics and the maps below. Kernels run
  // outside it, so interpreter runs and launches of one module overlap.
  std::mutex mu;
  SourceManager sm;
  DiagEngine diags{sm};
  std::unique_ptr<Program> program;
  std::unique_ptr<KernelCache> kernels;
#ifdef FNK_HAVE_GPU
  // Loaded kernels by instantiation and body (rt::launchBody). The instances
  // live as long as the module, so a launch finds its kernel without
  // re-keying it: keying prints and hashes the IR, 18-32 us per call for the
  // norm kernels.
  std::map<std::pair<const ir::Function*, rt::Variant>, rt::Kernel> loaded;
#endif
  // fnk_instance_get's handles, one per instance, freed with the module.
  std::map<const ir::Function*, std::unique_ptr<fnk_instance>> instances;
};

struct fnk_instance {
  fnk_module* module;
  const ir::Function* fn;
};

namespace {

/// The most dims a tensor argument may have (fnk_arg's and fnk_instance_run's).
constexpr int64_t kMaxRank = 8;

char* dupString(const std::string& s) {
  char* r = static_cast<char*>(std::malloc(s.size() + 1));
  if (r) std::memcpy(r, s.c_str(), s.size() + 1);
  return r;
}

void setError(char** error, const std::string& msg) {
  if (error) *error = dupString(msg);
}

std::string jsonString(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      r += buf;
    } else r += c;
  }
  return r + "\"";
}

fnk_module* loadWith(const std::function<bool(fnk_module&)>& parse, const char* const* includes, int32_t nInclude,
                     char** error) {
  auto m = std::make_unique<fnk_module>();
  FrontendOptions fo;
  for (int32_t i = 0; i < nInclude; ++i)
    if (includes && includes[i]) fo.includeDirs.push_back(includes[i]);
  m->program = std::make_unique<Program>(m->sm, m->diags, fo);
  bool ok = false;
  runWithLargeStack([&] {
    ok = parse(*m);
    ok = ok && checkKernelsWithDefaults(*m->program, m->diags);
  });
  if (!ok) {
    setError(error, m->diags.str());
    return nullptr;
  }
  m->kernels = std::make_unique<KernelCache>(*m->program);
  return m.release();
}

/// The ir::Function for `kernel` with `consts`, instantiated once and cached.
const ir::Function* instantiate(fnk_module* m, const char* kernel, const char* const* names, const char* const* values,
                                int32_t n, char** error) {
  if (!kernel) {
    setError(error, "no kernel name given");
    return nullptr;
  }
  ConstOverrides consts;
  for (int32_t i = 0; i < n; ++i) {
    if (!names || !values || !names[i] || !values[i]) {
      setError(error, "const-generic names and values must not be null");
      return nullptr;
    }
    consts[names[i]] = values[i];
  }
  std::lock_guard<std::mutex> lock(m->mu);
  m->diags.clear();
  const ir::Function* f = m->kernels->get(kernel, consts, m->diags);
  if (!f) setError(error, m->diags.str());
  return f;
}

/// Element access for caller memory of any supported dtype.
struct MemView {
  char* base;
  ir::DType dtype;
  std::vector<int64_t> shape, strides;

  double get(int64_t off) const { return loadElement(base + off * elementBytes(dtype), dtype); }
  void set(int64_t off, double v) const { storeElement(base + off * elementBytes(dtype), dtype, v); }
  /// Calls f(linear row-major index, element offset) for every element.
  template <typename F>
  void forEach(F&& f) const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<int64_t> idx(shape.size(), 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0;
      for (size_t k = 0; k < shape.size(); ++k) off += idx[k] * strides[k];
      f(i, off);
      for (size_t k = shape.size(); k-- > 0;) {
        if (++idx[k] < shape[k]) break;
        idx[k] = 0;
      }
    }
  }
};

bool makeView(const fnk_arg& a, MemView& v, std::string& err) {
  const fnk_tensor& t = a.tensor;
  auto dt = t.dtype ? ir::parseDType(t.dtype) : std::nullopt;
  if (!dt) {
    err = std::string("'") + a.name + "': unknown dtype '" + (t.dtype ? t.dtype : "(null)") + "'";
    return false;
  }
  if (t.rank < 0 || t.rank > kMaxRank || (t.rank > 0 && !t.shape)) {
    err = std::string("'") + a.name + "': bad rank or missing shape";
    return false;
  }
  v.base = static_cast<char*>(t.data);
  v.dtype = *dt;
  v.shape.assign(t.shape, t.shape + t.rank);
  int64_t n = 1;
  for (int64_t d : v.shape) {
    if (d < 0) {
      err = std::string("'") + a.name + "': negative dimension";
      return false;
    }
    n *= d;
  }
  if (!v.base && n > 0) {
    err = std::string("'") + a.name + "': null data pointer";
    return false;
  }
  v.strides.assign(v.shape.size(), 1);
  if (t.strides) v.strides.assign(t.strides, t.strides + t.rank);
  else
    for (size_t k = v.shape.size(); k-- > 1;) v.strides[k - 1] = v.strides[k] * v.shape[k];
  return true;
}

/// Binds every argument: scalars directly, each tensor through `tensor`,
/// which gets the tensor's view of caller memory and binds it. Returns
/// false with `error` set on the first problem, before anything runs.
bool bindAll(interp::ArgBinder& binder, const fnk_arg* args, int32_t nArgs, char** error,
             const std::function<Status(int32_t, const fnk_arg&, const MemView&)>& tensor) {
  std::string err;
  for (int32_t i = 0; i < nArgs; ++i) {
    const fnk_arg& a = args[i];
    if (!a.name) err = "argument " + std::to_string(i) + " has no name";
    else if (!a.is_tensor) {
      if (Status s = binder.bindScalar(a.name, a.scalar); !s) err = s.message();
    } else {
      MemView v;
      if (makeView(a, v, err))
        if (Status s = tensor(i, a, v); !s) err = s.message();
    }
    if (!err.empty()) {
      setError(error, err);
      return false;
    }
  }
  return true;
}

int32_t finishBinding(const interp::ArgBinder& binder, std::vector<interp::Arg>& bound, char** error) {
  if (Status s = binder.finish(bound); !s) {
    setError(error, s.message());
    return 1;
  }
  return 0;
}

/// Host memory runs in the interpreter: values are copied in (rounded to the
/// parameter dtype) and outputs copied back in their memory's dtype.
int32_t runOnCpu(const ir::Function& fn, const fnk_arg* args, int32_t nArgs, char** error) {
  interp::ArgBinder binder(fn);
  std::vector<HostArray> arrays(static_cast<size_t>(nArgs));
  std::vector<MemView> views(static_cast<size_t>(nArgs));
  bool ok = bindAll(binder, args, nArgs, error, [&](int32_t i, const fnk_arg& a, const MemView& v) {
    views[i] = v;
    HostArray& h = arrays[i];
    h.dtype = ir::isFloat(v.dtype) && v.dtype != ir::DType::F64 ? ir::DType::F32 : v.dtype;
    h.shape = v.shape;
    h.data.resize(static_cast<size_t>(h.numElements()));
    v.forEach([&](int64_t li, int64_t off) { h.data[li] = v.get(off); });
    return binder.bindTensor(a.name, h);
  });
  std::vector<interp::Arg> bound;
  if (!ok || finishBinding(binder, bound, error)) return 1;
  interp::RunOptions ro;
  ro.poisonOutputs = true;
  if (Status s = interp::run(fn, bound, ro); !s) {
    setError(error, "kernel '" + fn.name + "': " + s.message());
    return 1;
  }
  for (int32_t i = 0; i < nArgs; ++i) {
    if (!args[i].is_tensor || !fn.params[fn.paramIndex(args[i].name)].type.isOut) continue;
    views[i].forEach([&](int64_t li, int64_t off) { views[i].set(off, arrays[i].data[li]); });
  }
  return 0;
}

#ifdef FNK_HAVE_GPU
/// The module's loaded kernel for instance `fn` as `v` asks (rt::launchVariant):
/// compiled (through the disk cache) and loaded on the first use, kept for
/// the module's life.
Status loadedKernel(fnk_module& m, const ir::Function& fn, rt::Variant v, rt::Device& dev, const rt::Kernel*& out) {
  std::lock_guard<std::mutex> lock(m.mu);  // a map entry is never erased, so `out` outlives the lock
  auto it = m.loaded.find({&fn, v});
  if (it == m.loaded.end()) {
    rt::Kernel k;
    if (Status s = rt::compileAndLoad(fn, dev, k, nullptr, v); !s) return s;
    it = m.loaded.emplace(std::pair{&fn, v}, k).first;
  }
  out = &it->second;
  return Status::ok();
}

/// Device tensors are used in place: they must hold the parameter's dtype,
/// be row-major contiguous and aligned to their element size (the kernel ABI,
/// backend/nvptx/Abi.h). Nothing is copied; the launch goes on `stream`.
int32_t runOnGpu(fnk_module& m, const ir::Function& fn, const fnk_arg* args, int32_t nArgs, void* stream, char** error) {
  rt::Device* dev = nullptr;
  if (Status s = rt::Device::open(dev); !s) {
    setError(error, s.message());
    return 1;
  }
  interp::ArgBinder binder(fn);
  std::vector<HostArray> shapes(static_cast<size_t>(nArgs));
  std::vector<rt::DevPtr> bufs(fn.params.size(), 0);
  bool ok = bindAll(binder, args, nArgs, error, [&](int32_t i, const fnk_arg& a, const MemView& v) {
    int64_t expect = 1;
    for (size_t k = v.shape.size(); k-- > 0;) {
      if (v.shape[k] > 1 && v.strides[k] != expect)
        return Status::error(std::string("'") + a.name + "' must be contiguous on the GPU (row-major); call .contiguous()");
      expect *= v.shape[k];
    }
    if (reinterpret_cast<uintptr_t>(v.base) % static_cast<uintptr_t>(elementBytes(v.dtype)))
      return Status::error(std::string("'") + a.name + "' is not aligned to its element size");
    shapes[i].dtype = v.dtype;
    shapes[i].shape = v.shape;
    if (Status s = binder.bindShape(a.name, shapes[i]); !s) return s;
    bufs[static_cast<size_t>(fn.paramIndex(a.name))] = reinterpret_cast<rt::DevPtr>(v.base);
    return Status::ok();
  });
  std::vector<interp::Arg> bound;
  if (!ok || finishBinding(binder, bound, error)) return 1;
  const rt::Kernel* k = nullptr;
  Status s = loadedKernel(m, fn, rt::launchVariant(fn, bound, bufs), *dev, k);
  if (s) s = rt::launch(*dev, fn, *k, bound, bufs, stream);
  if (!s) {
    setError(error, s.message());
    return 1;
  }
  return 0;
}
#endif

/// Runs instance `fn` of `m` once on `device` (fnk_run and fnk_instance_run).
int32_t runInstance(fnk_module& m, const ir::Function& fn, const fnk_arg* args, int32_t nArgs, int32_t device,
                    void* stream, char** error) {
  if (device == FNK_DEVICE_GPU) {
#ifdef FNK_HAVE_GPU
    return runOnGpu(m, fn, args, nArgs, stream, error);
#else
    (void)m;
    setError(error, "kernel '" + fn.name + "': the GPU backend is not part of this build");
    return 1;
#endif
  }
  if (device != FNK_DEVICE_CPU) {
    setError(error, "unknown device " + std::to_string(device));
    return 1;
  }
  (void)stream;
  int32_t rc = 1;
  runWithLargeStack([&] { rc = runOnCpu(fn, args, nArgs, error); });
  return rc;
}

/// The element types by their FNK_DTYPE_* code.
constexpr const char* kDTypeByCode[] = {"f32", "f64", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "u32", "bool"};

/// fnk_instance_run's words as fnk_arg's, named after `fn`'s parameters (the
/// shapes and strides point into `words`); an empty string, or what is wrong.
std::string decodeWords(const ir::Function& fn, const int64_t* words, int32_t nWords, std::vector<fnk_arg>& args) {
  auto mismatch = [&] {
    return "kernel '" + fn.name + "': " + std::to_string(nWords) + " argument words do not match its parameters";
  };
  args.assign(fn.params.size(), fnk_arg{});
  int64_t at = 0;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Param& p = fn.params[i];
    fnk_arg& a = args[i];
    a.name = p.name.c_str();
    if (!p.type.isTensor()) {
      if (at + 1 > nWords) return mismatch();
      std::memcpy(&a.scalar, &words[at++], sizeof a.scalar);
      continue;
    }
    if (at + 3 > nWords) return mismatch();
    const int64_t code = words[at + 1], rank = words[at + 2];
    if (code < 0 || code >= static_cast<int64_t>(std::size(kDTypeByCode)))
      return "'" + p.name + "': unknown dtype code " + std::to_string(code);
    if (rank < 0 || rank > kMaxRank) return "'" + p.name + "': bad rank " + std::to_string(rank);
    if (at + 3 + 2 * rank > nWords) return mismatch();
    a.is_tensor = 1;
    a.tensor.data = reinterpret_cast<void*>(static_cast<uintptr_t>(words[at]));
    a.tensor.dtype = kDTypeByCode[code];
    a.tensor.rank = static_cast<int32_t>(rank);
    a.tensor.shape = words + at + 3;
    a.tensor.strides = words + at + 3 + rank;
    at += 3 + 2 * rank;
  }
  return at == nWords ? std::string() : mismatch();
}

}  // namespace

extern "C" {

int32_t fnk_abi_version(void) { return FNK_ABI_VERSION; }
const char* fnk_version(void) { return FNK_VERSION; }
void fnk_string_free(char* s) { std::free(s); }

fnk_module* fnk_module_load(const char* path, const char* const* include_dirs, int32_t n_include, char** error) {
  if (!path) {
    setError(error, "no path given");
    return nullptr;
  }
  std::string p = path;
  return loadWith([&](fnk_module& m) { return m.program->loadFile(p); }, include_dirs, n_include, error);
}

fnk_module* fnk_module_compile(const char* name, const char* source, const char* const* include_dirs,
                               int32_t n_include, char** error) {
  if (!source) {
    setError(error, "no source given");
    return nullptr;
  }
  std::string n = name ? name : "<source>", s = source;
  return loadWith([&](fnk_module& m) { return m.program->loadBuffer(n, s); }, include_dirs, n_include, error);
}

void fnk_module_free(fnk_module* m) { delete m; }

char* fnk_module_signature(const fnk_module* m, char** error) {
  if (!m) {
    setError(error, "null module");
    return nullptr;
  }
  std::ostringstream js;
  js << "{\"kernels\":[";
  bool firstK = true;
  for (const auto& d : m->program->root()->decls) {
    if (!d->isKernel) continue;
    js << (firstK ? "" : ",") << "{\"name\":" << jsonString(d->name) << ",\"consts\":[";
    firstK = false;
    for (size_t i = 0; i < d->generics.size(); ++i) {
      const auto& g = d->generics[i];
      js << (i ? "," : "") << "{\"name\":" << jsonString(g.name) << ",\"kind\":" << jsonString(g.kind)
         << ",\"default\":" << (g.hasDefault ? jsonString(g.defaultText) : "null") << "}";
    }
    js << "],\"params\":[";
    for (size_t i = 0; i < d->params.size(); ++i) {
      const auto& p = d->params[i];
      bool tensor = p.type.kind == ast::TypeExpr::Kind::Tensor;
      js << (i ? "," : "") << "{\"name\":" << jsonString(p.name) << ",\"kind\":\"" << (tensor ? "tensor" : "scalar")
         << "\",\"out\":" << (p.isOut ? "true" : "false") << ",\"dtype\":" << jsonString(p.type.dtype) << ",\"dims\":[";
      for (size_t k = 0; k < p.type.dims.size(); ++k) js << (k ? "," : "") << jsonString(p.type.dims[k]);
      js << "]}";
    }
    js << "]}";
  }
  js << "]}";
  return dupString(js.str());
}

namespace {
/// The text `emit` makes of the kernel instance, or null with the error.
char* instanceText(fnk_module* m, const char* kernel, const char* const* const_names, const char* const* const_values,
                   int32_t n_consts, char** error, const std::function<Status(const ir::Function&, std::string&)>& emit) {
  if (!m) {
    setError(error, "null module");
    return nullptr;
  }
  const ir::Function* f = instantiate(m, kernel, const_names, const_values, n_consts, error);
  if (!f) return nullptr;
  std::string text;
  if (Status s = emit(*f, text); !s) {
    setError(error, "kernel '" + f->name + "': " + s.message());
    return nullptr;
  }
  return dupString(text);
}
}  // namespace

char* fnk_kernel_ir(fnk_module* m, const char* kernel, const char* const* const_names, const char* const* const_values,
                    int32_t n_consts, char** error) {
  return instanceText(m, kernel, const_names, const_values, n_consts, error, [](const ir::Function& f, std::string& out) {
    std::ostringstream os;
    ir::print(os, f);
    out = os.str();
    return Status::ok();
  });
}

char* fnk_kernel_ptx(fnk_module* m, const char* kernel, const char* const* const_names, const char* const* const_values,
                     int32_t n_consts, char** error) {
  return instanceText(m, kernel, const_names, const_values, n_consts, error, [](const ir::Function& f, std::string& out) {
#ifdef FNK_HAVE_GPU
    return nvptx::emitPTX(f, nvptx::TargetOptions{}, out);
#else
    (void)f, (void)out;
    return Status::error("the GPU backend is not part of this build");
#endif
  });
}

char* fnk_kernel_occupancy(fnk_module* m, const char* kernel, const char* const* const_names,
                           const char* const* const_values, int32_t n_consts, char** error) {
  return instanceText(m, kernel, const_names, const_values, n_consts, error, [m](const ir::Function& f, std::string& out) {
#ifdef FNK_HAVE_GPU
    rt::Device* dev = nullptr;
    if (Status s = rt::Device::open(dev); !s) return s;
    // One cluster's worth of CTAs: the driver's count does not depend on the grid beyond that.
    std::vector<int64_t> c = f.cluster();
    c.resize(3, 1);
    const unsigned cluster[3] = {static_cast<unsigned>(c[0]), static_cast<unsigned>(c[1]), static_cast<unsigned>(c[2])};
    // A launch runs one variant, compiled alone (rt::launchVariant: a
    // versioned kernel's body, the code for tensors off alignment or not), and they can differ in
    // registers: the occupancy of the variant that holds fewest CTAs, so
    // that a grid sized by it fits whichever runs.
    rt::Occupancy o;
    const std::vector<rt::Variant> variants = rt::launchVariants(f);
    for (size_t i = 0; i < variants.size(); ++i) {
      const rt::Kernel* k = nullptr;
      if (Status s = loadedKernel(*m, f, variants[i], *dev, k); !s) return s;
      rt::Occupancy b;
      if (Status s = dev->occupancy(*k, cluster, static_cast<unsigned>(32 * f.warps()), cluster, b); !s) return s;
      if (i == 0) {
        o = b;
        continue;
      }
      o.registers = std::max(o.registers, b.registers);
      o.localBytes = std::max(o.localBytes, b.localBytes);
      o.ctasPerSm = std::min(o.ctasPerSm, b.ctasPerSm);
      o.clusters = std::min(o.clusters, b.clusters);
    }
    std::ostringstream os;
    os << "{\"registers\":" << o.registers << ",\"local_bytes\":" << o.localBytes << ",\"ctas_per_sm\":" << o.ctasPerSm
       << ",\"clusters\":" << o.clusters << ",\"sms\":" << o.sms << "}";
    out = os.str();
    return Status::ok();
#else
    (void)m, (void)f, (void)out;
    return Status::error("the GPU backend is not part of this build");
#endif
  });
}

int32_t fnk_run(fnk_module* m, const char* kernel, const char* const* const_names, const char* const* const_values,
                int32_t n_consts, const fnk_arg* args, int32_t n_args, int32_t device, void* stream, char** error) {
  if (!m) {
    setError(error, "null module");
    return 1;
  }
  if (n_args < 0 || (n_args > 0 && !args)) {
    setError(error, "bad argument list");
    return 1;
  }
  const ir::Function* f = instantiate(m, kernel, const_names, const_values, n_consts, error);
  if (!f) return 1;
  return runInstance(*m, *f, args, n_args, device, stream, error);
}

fnk_instance* fnk_instance_get(fnk_module* m, const char* kernel, const char* const* const_names,
                               const char* const* const_values, int32_t n_consts, char** error) {
  if (!m) {
    setError(error, "null module");
    return nullptr;
  }
  const ir::Function* f = instantiate(m, kernel, const_names, const_values, n_consts, error);
  if (!f) return nullptr;
  std::lock_guard<std::mutex> lock(m->mu);
  std::unique_ptr<fnk_instance>& slot = m->instances[f];
  if (!slot) slot = std::make_unique<fnk_instance>(fnk_instance{m, f});
  return slot.get();
}

int32_t fnk_instance_run(fnk_instance* inst, const int64_t* words, int32_t n_words, int32_t device, void* stream,
                         char** error) {
  if (!inst) {
    setError(error, "null instance");
    return 1;
  }
  if (n_words < 0 || (n_words > 0 && !words)) {
    setError(error, "bad argument words");
    return 1;
  }
  std::vector<fnk_arg> args;
  if (std::string err = decodeWords(*inst->fn, words, n_words, args); !err.empty()) {
    setError(error, err);
    return 1;
  }
  return runInstance(*inst->module, *inst->fn, args.data(), static_cast<int32_t>(args.size()), device, stream, error);
}

}  // extern "C"
