#include "backend/runtime/Launch.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

#include "backend/cubin/Cubin.h"
#include "backend/nvptx/Abi.h"
#include "backend/nvptx/Codegen.h"
#include "ir/Printer.h"
#include "support/DiskCache.h"

namespace fnk::rt {

namespace fs = std::filesystem;

namespace {

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

struct MemoryCache {
  std::mutex mu;
  std::map<std::string, Kernel> kernels;  // key -> loaded kernel
};
MemoryCache& memoryCache() {
  static MemoryCache c;
  return c;
}

}  // namespace

std::string cacheDir() {
  if (const char* e = std::getenv("FNK_CACHE_DIR")) return std::string(e) == "off" ? "" : e;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/fnk";
  return "";
}

Status compileAndLoad(const ir::Function& fn, Device& dev, Kernel& out, CompileInfo* info) {
  auto t0 = std::chrono::steady_clock::now();
  nvptx::TargetOptions topts;
  std::ostringstream ir;
  ir::print(ir, fn);
  std::string key = hex(fnv1a64(ir.str() + "|" + topts.arch + "|" + topts.features + "|" FNK_VERSION "|" +
                                nvptx::loweringKey())) +
                    hex(fnv1a64(ir.str(), 88172645463325252ull));
  CompileInfo local;
  CompileInfo& ci = info ? *info : local;
  {
    std::lock_guard<std::mutex> lock(memoryCache().mu);
    if (auto it = memoryCache().kernels.find(key); it != memoryCache().kernels.end()) {
      out = it->second;
      ci.fromMemory = true;
      return Status::ok();
    }
  }
  std::string dir = cacheDir(), image;
  fs::path entry = dir.empty() ? fs::path() : fs::path(dir) / (fn.name + "-" + key + ".cubin");
  if (!dir.empty() && readCacheEntry(entry.string(), image)) ci.fromDisk = true;
  if (!ci.fromDisk) {
    std::string ptx;
    if (Status s = nvptx::emitPTX(fn, topts, ptx); !s) return s;
    if (cubin::haveAssembler()) {
      if (Status s = cubin::assemble(ptx, topts.arch, fn.name, image); !s) return s;
      if (!dir.empty()) writeCacheEntry(entry.string(), image);
    } else {
      image = ptx;  // the driver JIT-compiles PTX; nothing worth caching on disk
    }
  }
  Status s = dev.load(image, fn.name, out);
  if (!s && ci.fromDisk) {
    // A stale entry that the driver rejects is rebuilt once.
    std::error_code ec;
    fs::remove(entry, ec);
    return compileAndLoad(fn, dev, out, info);
  }
  if (!s) return s;
  ci.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(memoryCache().mu);
  memoryCache().kernels[key] = out;
  return Status::ok();
}

Status launch(Device& dev, const ir::Function& fn, const Kernel& k, const std::vector<interp::Arg>& args,
              const std::vector<DevPtr>& bufs, void* stream) {
  int64_t grid[3];
  if (Status s = interp::launchGrid(fn, args, grid); !s) return Status::error("kernel '" + fn.name + "': " + s.message());
  for (int i = 0; i < 3; ++i)
    if (grid[i] > (i == 0 ? INT32_MAX : 65535))
      return Status::error("kernel '" + fn.name + "': grid dim " + std::to_string(i) + " is " + std::to_string(grid[i]) +
                           ", more than the GPU allows");
  auto c = fn.cluster();
  c.resize(3, 1);
  unsigned g[3], cl[3];
  for (int i = 0; i < 3; ++i) {
    g[i] = static_cast<unsigned>(grid[i]);
    cl[i] = static_cast<unsigned>(c[i]);
    if (g[i] % cl[i])
      return Status::error("kernel '" + fn.name + "': grid dim " + std::to_string(i) + " (" + std::to_string(g[i]) +
                           ") is not a multiple of the cluster dim " + std::to_string(cl[i]));
  }
  std::vector<nvptx::AbiSlot> abi = nvptx::kernelAbi(fn);
  std::vector<uint64_t> storage(abi.size());
  std::vector<void*> params(abi.size());
  for (size_t j = 0; j < abi.size(); ++j) {
    const nvptx::AbiSlot& s = abi[j];
    void* p = &storage[j];
    const interp::Arg& a = args[s.param];
    switch (s.kind) {
      case nvptx::AbiKind::Ptr: std::memcpy(p, &bufs[s.param], 8); break;
      case nvptx::AbiKind::I64: {
        int64_t v = s.dim >= 0 ? std::get<HostArray*>(a)->shape[s.dim] : static_cast<int64_t>(std::get<double>(a));
        std::memcpy(p, &v, 8);
        break;
      }
      case nvptx::AbiKind::I32: {
        int32_t v = static_cast<int32_t>(static_cast<int64_t>(std::get<double>(a)));
        std::memcpy(p, &v, 4);
        break;
      }
      case nvptx::AbiKind::F32: {
        float v = static_cast<float>(std::get<double>(a));
        std::memcpy(p, &v, 4);
        break;
      }
      case nvptx::AbiKind::F64: std::memcpy(p, &std::get<double>(a), 8); break;
    }
    params[j] = p;
  }
  return dev.launch(k, g, static_cast<unsigned>(32 * fn.warps()), cl, params.data(), stream);
}

}  // namespace fnk::rt
