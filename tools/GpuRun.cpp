#include "tools/GpuRun.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "backend/cubin/Cubin.h"
#include "backend/nvptx/Abi.h"
#include "backend/nvptx/Codegen.h"
#include "backend/runtime/Cuda.h"
#include "backend/runtime/Grid.h"
#include "support/Float.h"

namespace fnk::tools {

namespace {

// Element bytes of a dtype in device memory (bool as one byte).
size_t elemBytes(ir::DType t) { return t == ir::DType::I1 ? 1 : static_cast<size_t>(ir::byteSize(t)); }

void toDevice(const HostArray& a, std::vector<uint8_t>& out) {
  size_t n = a.data.size(), w = elemBytes(a.dtype);
  out.resize(n * w);
  uint8_t* p = out.data();
  for (size_t i = 0; i < n; ++i, p += w) {
    double v = a.data[i];
    switch (a.dtype) {
      case ir::DType::I1: case ir::DType::I8: case ir::DType::U8: { int8_t x = static_cast<int8_t>(static_cast<int64_t>(v)); std::memcpy(p, &x, 1); break; }
      case ir::DType::I16: { int16_t x = static_cast<int16_t>(v); std::memcpy(p, &x, 2); break; }
      case ir::DType::I32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
      case ir::DType::U32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); break; }
      case ir::DType::I64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
      case ir::DType::F16: { uint16_t x = f16Bits(v); std::memcpy(p, &x, 2); break; }
      case ir::DType::BF16: { uint16_t x = bf16Bits(v); std::memcpy(p, &x, 2); break; }
      case ir::DType::F32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
      case ir::DType::F64: std::memcpy(p, &v, 8); break;
    }
  }
}

void fromDevice(const std::vector<uint8_t>& in, HostArray& a) {
  size_t n = a.data.size(), w = elemBytes(a.dtype);
  const uint8_t* p = in.data();
  for (size_t i = 0; i < n; ++i, p += w) {
    double v = 0;
    switch (a.dtype) {
      case ir::DType::I1: v = *p != 0; break;
      case ir::DType::I8: v = static_cast<int8_t>(*p); break;
      case ir::DType::U8: v = *p; break;
      case ir::DType::I16: { int16_t x; std::memcpy(&x, p, 2); v = x; break; }
      case ir::DType::I32: { int32_t x; std::memcpy(&x, p, 4); v = x; break; }
      case ir::DType::U32: { uint32_t x; std::memcpy(&x, p, 4); v = x; break; }
      case ir::DType::I64: { int64_t x; std::memcpy(&x, p, 8); v = static_cast<double>(x); break; }
      case ir::DType::F16: { uint16_t x; std::memcpy(&x, p, 2); v = f16FromBits(x); break; }
      case ir::DType::BF16: { uint16_t x; std::memcpy(&x, p, 2); v = bf16FromBits(x); break; }
      case ir::DType::F32: { float x; std::memcpy(&x, p, 4); v = x; break; }
      case ir::DType::F64: std::memcpy(&v, p, 8); break;
    }
    a.data[i] = v;
  }
}

// Tolerance for --check, relative to max(1, max |ref|) of the output.
double tolerance(ir::DType t) {
  switch (t) {
    case ir::DType::BF16: return 2e-2;
    case ir::DType::F16: return 4e-3;
    case ir::DType::F32: return 1e-4;
    case ir::DType::F64: return 1e-4;  // transcendentals go through f32 approximations
    default: return 0;
  }
}

}  // namespace

Status runGpu(const ir::Function& fn, std::vector<interp::Arg>& args, const GpuRunOptions& opts, std::ostream& out) {
  rt::Device* dev = nullptr;
  if (Status s = rt::Device::open(dev); !s) return s;
  auto t0 = std::chrono::steady_clock::now();
  nvptx::TargetOptions topts;
  std::string ptx, image;
  if (Status s = nvptx::emitPTX(fn, topts, ptx); !s) return s;
  if (cubin::haveAssembler()) {
    if (Status s = cubin::assemble(ptx, topts.arch, fn.name, image); !s) return s;
  } else {
    image = ptx;  // the driver JIT-compiles PTX
  }
  rt::Kernel k;
  if (Status s = dev->load(image, fn.name, k); !s) return s;
  double compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  int64_t grid[3];
  if (Status s = rt::evalGrid(fn, args, grid); !s) return s;
  auto c = fn.cluster();
  c.resize(3, 1);
  unsigned g[3], cl[3];
  for (int i = 0; i < 3; ++i) {
    g[i] = static_cast<unsigned>(grid[i]);
    cl[i] = static_cast<unsigned>(c[i]);
    if (g[i] % cl[i]) return Status::error("kernel '" + fn.name + "': cluster dims do not divide the grid");
  }

  // Device buffers and the parameter block.
  std::vector<rt::DevPtr> bufs(fn.params.size(), 0);
  std::vector<size_t> bytes(fn.params.size(), 0);
  auto release = [&] {
    for (rt::DevPtr p : bufs)
      if (p) (void)dev->free(p);
  };
  double traffic = 0;
  std::vector<uint8_t> host;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (!fn.params[i].type.isTensor()) continue;
    HostArray* a = std::get<HostArray*>(args[i]);
    bytes[i] = a->data.size() * elemBytes(a->dtype);
    traffic += static_cast<double>(bytes[i]);
    Status s = dev->alloc(bytes[i], bufs[i]);
    if (s && fn.params[i].type.isOut) s = dev->fill(bufs[i], 0xFF, bytes[i]);  // poison: NaN / -1
    if (s && !fn.params[i].type.isOut) {
      toDevice(*a, host);
      s = dev->copyToDevice(bufs[i], host.data(), bytes[i]);
    }
    if (!s) {
      release();
      return s;
    }
  }
  std::vector<nvptx::AbiSlot> abi = nvptx::kernelAbi(fn);
  std::vector<uint64_t> storage(abi.size());
  std::vector<void*> params(abi.size());
  for (size_t j = 0; j < abi.size(); ++j) {
    const nvptx::AbiSlot& s = abi[j];
    void* p = &storage[j];
    switch (s.kind) {
      case nvptx::AbiKind::Ptr: std::memcpy(p, &bufs[s.param], 8); break;
      case nvptx::AbiKind::I64:
        if (s.dim >= 0) {
          int64_t d = std::get<HostArray*>(args[s.param])->shape[s.dim];
          std::memcpy(p, &d, 8);
        } else {
          int64_t v = static_cast<int64_t>(std::get<double>(args[s.param]));
          std::memcpy(p, &v, 8);
        }
        break;
      case nvptx::AbiKind::I32: {
        int32_t v = static_cast<int32_t>(static_cast<int64_t>(std::get<double>(args[s.param])));
        std::memcpy(p, &v, 4);
        break;
      }
      case nvptx::AbiKind::F32: {
        float v = static_cast<float>(std::get<double>(args[s.param]));
        std::memcpy(p, &v, 4);
        break;
      }
      case nvptx::AbiKind::F64: {
        double v = std::get<double>(args[s.param]);
        std::memcpy(p, &v, 8);
        break;
      }
    }
    params[j] = p;
  }
  const unsigned block = static_cast<unsigned>(32 * fn.warps());
  Status st = dev->launch(k, g, block, cl, params.data());
  if (st) st = dev->sync(fn.name);
  for (size_t i = 0; st && i < fn.params.size(); ++i) {
    if (!fn.params[i].type.isOut) continue;
    HostArray* a = std::get<HostArray*>(args[i]);
    host.resize(bytes[i]);
    st = dev->copyToHost(host.data(), bufs[i], bytes[i]);
    if (st) fromDevice(host, *a);
  }
  if (st && opts.bench) {
    std::vector<float> ms;
    auto once = [&] { return dev->launch(k, g, block, cl, params.data()); };
    for (int i = 0; st && i < opts.warmup; ++i) st = once();
    if (st) st = dev->time(fn.name, opts.iters, once, ms);
    if (st && !ms.empty()) {
      std::sort(ms.begin(), ms.end());
      double med = ms[ms.size() / 2] * 1e3, mn = ms.front() * 1e3;
      std::ostringstream os;
      os << std::fixed << std::setprecision(1) << "bench " << fn.name << ": median " << med << " us, min " << mn
         << " us, " << std::setprecision(0) << traffic / (med * 1e-6) / 1e9 << " GB/s (" << std::setprecision(1)
         << traffic / 1e6 << " MB moved), grid " << g[0] << "x" << g[1] << "x" << g[2] << ", " << block
         << " threads, compile " << compileMs << " ms, " << dev->name() << "\n";
      out << os.str();
    }
  }
  release();
  if (!st) return st;

  if (opts.check) {
    std::vector<HostArray> refs(fn.params.size());
    std::vector<interp::Arg> refArgs = args;
    for (size_t i = 0; i < fn.params.size(); ++i)
      if (fn.params[i].type.isOut) {
        refs[i] = *std::get<HostArray*>(args[i]);
        refArgs[i] = &refs[i];
      }
    interp::RunOptions ro;
    ro.poisonOutputs = true;
    if (Status s = interp::run(fn, refArgs, ro); !s) return Status::error("--check: the interpreter failed: " + s.message());
    bool ok = true;
    for (size_t i = 0; i < fn.params.size(); ++i) {
      if (!fn.params[i].type.isOut) continue;
      const HostArray& gpu = *std::get<HostArray*>(args[i]);
      const HostArray& ref = refs[i];
      double maxErr = 0, scale = 1;
      int64_t bad = 0;
      for (size_t e = 0; e < ref.data.size(); ++e) {
        double r = ref.data[e], x = gpu.data[e];
        if (std::isnan(r) != std::isnan(x)) ++bad;
        else if (!std::isnan(r)) maxErr = std::max(maxErr, std::fabs(r - x));
        if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
      }
      double tol = tolerance(ref.dtype) * scale;
      bool pass = bad == 0 && maxErr <= tol;
      ok &= pass;
      std::ostringstream os;
      os << "check " << fn.params[i].name << ": max_abs_err " << std::scientific << std::setprecision(3) << maxErr
         << " (tol " << tol << ", " << ref.data.size() << " elements" << (bad ? ", " + std::to_string(bad) + " NaN mismatches" : "")
         << ") " << (pass ? "ok" : "MISMATCH") << "\n";
      out << os.str();
    }
    if (!ok) return Status::error("kernel '" + fn.name + "': --check found outputs that differ from the interpreter");
  }
  return Status::ok();
}

}  // namespace fnk::tools
