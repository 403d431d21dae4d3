#include "backend/runtime/Cuda.h"

#include "backend/nvptx/Abi.h"

#include <dlfcn.h>

#include <mutex>

namespace fnk::rt {

namespace {

// The few driver types fnk needs, declared here so that no CUDA header is
// needed to build (their layout is the ABI of cuda.h 12/13).
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUevent = void*;

struct LaunchAttribute {
  int id;
  char pad[8 - sizeof(int)];
  union {
    char raw[64];
    struct {
      unsigned x, y, z;
    } clusterDim;
    int programmaticStreamSerializationAllowed;
    int cooperative;
  } value;
};
struct LaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  LaunchAttribute* attrs;
  unsigned numAttrs;
};
constexpr int kAttrCooperative = 2;
constexpr int kAttrClusterDimension = 4;
constexpr int kAttrProgrammaticStreamSerialization = 6;
constexpr int kDevAttrMultiprocessorCount = 16;

struct Driver {
  void* lib = nullptr;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc_v2)(unsigned long long*, size_t);
  CUresult (*cuMemFree_v2)(unsigned long long);
  CUresult (*cuMemcpyHtoD_v2)(unsigned long long, const void*, size_t);
  CUresult (*cuMemcpyDtoH_v2)(void*, unsigned long long, size_t);
  CUresult (*cuMemsetD8_v2)(unsigned long long, unsigned char, size_t);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuModuleGetGlobal_v2)(unsigned long long*, size_t*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**);
  CUresult (*cuLaunchKernelEx)(const LaunchConfig*, CUfunction, void**, void**);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime_v2)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy_v2)(CUevent);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  // Optional (Device::occupancy says 0 without them).
  CUresult (*cuFuncGetAttribute)(int*, int, CUfunction) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t) = nullptr;
  CUresult (*cuOccupancyMaxActiveClusters)(int*, CUfunction, const LaunchConfig*) = nullptr;
};

CUcontext g_ctx = nullptr;
constexpr int kNonPortableClusterSizeAllowed = 14;  // CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
constexpr int kMaxDynamicSharedSizeBytes = 8;       // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr CUresult kErrorNotFound = 500;            // CUDA_ERROR_NOT_FOUND
constexpr int kFuncAttrLocalSizeBytes = 3;          // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
constexpr int kFuncAttrNumRegs = 4;                 // CU_FUNC_ATTRIBUTE_NUM_REGS

Driver g;
std::string g_loadError;
Device g_device;
bool g_open = false;

template <class F>
bool resolve(F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(g.lib, name));
  if (!f) g_loadError = std::string("libcuda.so.1 lacks ") + name;
  return f != nullptr;
}

/// The cuLaunchKernelEx configuration of a launch; `attrs` holds the
/// attributes it points at: the cluster dims of a cluster launch,
/// programmatic stream serialization when `pdl` (nvptx::kPdlSymbol), and a
/// cooperative launch for a kernel whose CTAs wait for each other (the
/// driver's promise that all its CTAs are resident together, even beside
/// other streams' kernels; a grid too large for it is refused).
LaunchConfig launchConfig(const Kernel& k, const unsigned grid[3], unsigned block, const unsigned cluster[3],
                          void* stream, bool pdl, LaunchAttribute (&attrs)[3]) {
  unsigned n = 0;
  if (k.cooperative) {
    LaunchAttribute& a = attrs[n++] = LaunchAttribute{};
    a.id = kAttrCooperative;
    a.value.cooperative = 1;
  }
  if (cluster[0] * cluster[1] * cluster[2] > 1) {
    LaunchAttribute& a = attrs[n++] = LaunchAttribute{};
    a.id = kAttrClusterDimension;
    a.value.clusterDim.x = cluster[0];
    a.value.clusterDim.y = cluster[1];
    a.value.clusterDim.z = cluster[2];
  }
  if (pdl) {  // its launch may overlap the previous kernel's tail
    LaunchAttribute& a = attrs[n++] = LaunchAttribute{};
    a.id = kAttrProgrammaticStreamSerialization;
    a.value.programmaticStreamSerializationAllowed = 1;
  }
  return LaunchConfig{grid[0], grid[1], grid[2], block, 1, 1, k.dynamicShared, static_cast<CUstream>(stream), attrs, n};
}

/// An entry point fnk can do without: null when the driver lacks it.
template <class F>
bool optional(F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(g.lib, name));
  return true;
}

bool loadDriver() {
  g.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!g.lib) {
    g_loadError = std::string("no CUDA driver (dlopen libcuda.so.1: ") + dlerror() + ")";
    return false;
  }
#define R(n) resolve(g.n, #n)
  return R(cuInit) && R(cuDeviceGet) && R(cuDeviceGetCount) && R(cuDeviceGetName) && R(cuDevicePrimaryCtxRetain) &&
         R(cuCtxSetCurrent) && R(cuCtxSynchronize) && R(cuMemAlloc_v2) && R(cuMemFree_v2) && R(cuMemcpyHtoD_v2) &&
         R(cuMemcpyDtoH_v2) && R(cuMemsetD8_v2) && R(cuModuleLoadData) && R(cuModuleGetFunction) &&
         R(cuModuleGetGlobal_v2) && R(cuLaunchKernel) && R(cuLaunchKernelEx) && R(cuEventCreate) &&
         R(cuEventRecord) && R(cuEventSynchronize) &&
         R(cuEventElapsedTime_v2) && R(cuEventDestroy_v2) && R(cuGetErrorName) && R(cuGetErrorString) &&
         R(cuFuncSetAttribute) && optional(g.cuFuncGetAttribute, "cuFuncGetAttribute") &&
         optional(g.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
         optional(g.cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor") &&
         optional(g.cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters");
#undef R
}

}  // namespace

Status Device::check(int rc, const char* call, const std::string& kernel) {
  if (rc == 0) return Status::ok();
  const char* nm = nullptr;
  const char* msg = nullptr;
  if (g.cuGetErrorName) g.cuGetErrorName(rc, &nm);
  if (g.cuGetErrorString) g.cuGetErrorString(rc, &msg);
  std::string who = kernel.empty() ? "" : "kernel '" + kernel + "': ";
  return Status::error(who + call + " failed: " + (nm ? nm : "CUDA error " + std::to_string(rc)) +
                       (msg ? std::string(" (") + msg + ")" : ""));
}

Status Device::open(Device*& out) {
  static std::once_flag once;
  static Status opened = Status::ok();
  std::call_once(once, [] {
    if (!loadDriver()) {
      opened = Status::error(g_loadError);
      return;
    }
    if (Status s = g_device.check(g.cuInit(0), "cuInit", ""); !s) {
      opened = Status::error("no usable GPU: " + s.message());
      return;
    }
    int n = 0;
    if (g.cuDeviceGetCount(&n) != 0 || n == 0) {
      opened = Status::error("no GPU found by the CUDA driver");
      return;
    }
    CUdevice dev;
    CUcontext ctx;
    if (Status s = g_device.check(g.cuDeviceGet(&dev, 0), "cuDeviceGet", ""); !s) { opened = s; return; }
    if (Status s = g_device.check(g.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain", ""); !s) { opened = s; return; }
    if (Status s = g_device.check(g.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", ""); !s) { opened = s; return; }
    g_ctx = ctx;
    char name[256] = {0};
    g.cuDeviceGetName(name, sizeof name, dev);
    g_device.name_ = name;
    g_open = true;
  });
  if (!opened) return opened;
  // The context is current per thread, and callers open the device from
  // any thread (`fnk batch` runs each case on a fresh large-stack thread):
  // make it current on this one, so that allocations and copies before the
  // first load or launch find it.
  if (Status s = g_device.check(g.cuCtxSetCurrent(g_ctx), "cuCtxSetCurrent", ""); !s) return s;
  out = &g_device;
  return Status::ok();
}

Status Device::alloc(size_t bytes, DevPtr& out) { return check(g.cuMemAlloc_v2(&out, bytes ? bytes : 1), "cuMemAlloc", ""); }
Status Device::free(DevPtr p) { return check(g.cuMemFree_v2(p), "cuMemFree", ""); }
Status Device::copyToDevice(DevPtr dst, const void* src, size_t bytes) {
  return bytes ? check(g.cuMemcpyHtoD_v2(dst, src, bytes), "cuMemcpyHtoD", "") : Status::ok();
}
Status Device::copyToHost(void* dst, DevPtr src, size_t bytes) {
  return bytes ? check(g.cuMemcpyDtoH_v2(dst, src, bytes), "cuMemcpyDtoH", "") : Status::ok();
}
Status Device::fill(DevPtr dst, uint8_t byte, size_t bytes) {
  return bytes ? check(g.cuMemsetD8_v2(dst, byte, bytes), "cuMemsetD8", "") : Status::ok();
}

Status Device::moduleU32(void* m, const char* name, const std::string& kernel, uint32_t& value, bool& found) {
  unsigned long long p = 0;
  size_t n = 0;
  found = false;
  const CUresult rc = g.cuModuleGetGlobal_v2(&p, &n, static_cast<CUmodule>(m), name);
  if (rc == kErrorNotFound) return Status::ok();
  if (Status s = check(rc, "cuModuleGetGlobal", kernel); !s) return s;
  if (n != sizeof value) return Status::error("kernel '" + kernel + "': malformed " + name);
  if (Status s = check(g.cuMemcpyDtoH_v2(&value, p, sizeof value), "cuMemcpyDtoH", kernel); !s) return s;
  found = true;
  return Status::ok();
}

Status Device::load(const std::string& image, const std::string& kernel, int64_t clusterCtas, Kernel& out) {
  CUmodule m = nullptr;
  if (Status s = check(g.cuModuleLoadData(&m, image.c_str()), "cuModuleLoadData", kernel); !s) return s;
  CUfunction f = nullptr;
  if (Status s = check(g.cuModuleGetFunction(&f, m, kernel.c_str()), "cuModuleGetFunction", kernel); !s) return s;
  out.module = m;
  out.function = f;
  out.name = kernel;
  out.dynamicShared = 0;
  if (clusterCtas > 8)  // Hopper's portable limit
    if (Status s = check(g.cuFuncSetAttribute(f, kNonPortableClusterSizeAllowed, 1), "cuFuncSetAttribute", kernel); !s)
      return s;
  // A kernel compiled for programmatic dependent launch says so.
  uint32_t pdl = 0;
  bool found = false;
  if (Status s = moduleU32(m, nvptx::kPdlSymbol, kernel, pdl, found); !s) return s;
  out.pdl = found && pdl != 0;
  // A kernel past 48 KiB of shared memory exports how much it needs.
  uint32_t bytes = 0;
  if (Status s = moduleU32(m, nvptx::kDynamicSharedSymbol, kernel, bytes, found); !s || !found) return s;
  if (Status s = check(g.cuFuncSetAttribute(f, kMaxDynamicSharedSizeBytes, static_cast<int>(bytes)), "cuFuncSetAttribute",
                       kernel);
      !s)
    return s;
  out.dynamicShared = bytes;
  return Status::ok();
}

Status Device::launch(const Kernel& k, const unsigned grid[3], unsigned block, const unsigned cluster[3], void** params,
                      void* stream) {
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return Status::ok();  // an empty grid runs nothing
  LaunchAttribute attrs[3];
  const LaunchConfig cfg = launchConfig(k, grid, block, cluster, stream, k.pdl, attrs);
  if (cfg.numAttrs == 0)
    return check(g.cuLaunchKernel(k.function, grid[0], grid[1], grid[2], block, 1, 1, k.dynamicShared,
                                  static_cast<CUstream>(stream), params, nullptr),
                 "cuLaunchKernel", k.name);
  return check(g.cuLaunchKernelEx(&cfg, k.function, params, nullptr), "cuLaunchKernelEx", k.name);
}

Status Device::resources(const Kernel& k, int& registers, int& localBytes) {
  registers = localBytes = 0;
  if (!g.cuFuncGetAttribute) return Status::ok();
  if (Status s = check(g.cuFuncGetAttribute(&registers, kFuncAttrNumRegs, k.function), "cuFuncGetAttribute", k.name);
      !s)
    return s;
  return check(g.cuFuncGetAttribute(&localBytes, kFuncAttrLocalSizeBytes, k.function), "cuFuncGetAttribute", k.name);
}

Status Device::occupancy(const Kernel& k, const unsigned grid[3], unsigned block, const unsigned cluster[3],
                         Occupancy& out) {
  out = Occupancy{};
  if (Status s = resources(k, out.registers, out.localBytes); !s) return s;
  if (g.cuDeviceGetAttribute) {
    CUdevice dev = 0;
    if (Status s = check(g.cuDeviceGet(&dev, 0), "cuDeviceGet", k.name); !s) return s;
    if (Status s = check(g.cuDeviceGetAttribute(&out.sms, kDevAttrMultiprocessorCount, dev), "cuDeviceGetAttribute",
                         k.name);
        !s)
      return s;
  }
  if (g.cuOccupancyMaxActiveBlocksPerMultiprocessor)
    if (Status s = check(g.cuOccupancyMaxActiveBlocksPerMultiprocessor(&out.ctasPerSm, k.function,
                                                                       static_cast<int>(block), k.dynamicShared),
                         "cuOccupancyMaxActiveBlocksPerMultiprocessor", k.name);
        !s)
      return s;
  if (g.cuOccupancyMaxActiveClusters && cluster[0] * cluster[1] * cluster[2] > 1) {
    LaunchAttribute attrs[3];
    const LaunchConfig cfg = launchConfig(k, grid, block, cluster, nullptr, /*pdl=*/false, attrs);
    if (Status s = check(g.cuOccupancyMaxActiveClusters(&out.clusters, k.function, &cfg),
                         "cuOccupancyMaxActiveClusters", k.name);
        !s)
      return s;
  }
  return Status::ok();
}

Status Device::sync(const std::string& kernel) { return check(g.cuCtxSynchronize(), "cuCtxSynchronize", kernel); }

Status Device::time(const std::string& kernel, int launches, const std::function<Status()>& launch, std::vector<float>& ms) {
  std::vector<CUevent> ev(static_cast<size_t>(launches) + 1);
  for (auto& e : ev)
    if (Status s = check(g.cuEventCreate(&e, 0), "cuEventCreate", kernel); !s) return s;
  Status st = Status::ok();
  for (int i = 0; i < launches && st; ++i) {
    st = check(g.cuEventRecord(ev[i], nullptr), "cuEventRecord", kernel);
    if (st) st = launch();
  }
  if (st) st = check(g.cuEventRecord(ev[launches], nullptr), "cuEventRecord", kernel);
  if (st) st = check(g.cuEventSynchronize(ev[launches]), "cuEventSynchronize", kernel);
  if (st) st = sync(kernel);
  ms.clear();
  for (int i = 0; i < launches && st; ++i) {
    float t = 0;
    st = check(g.cuEventElapsedTime_v2(&t, ev[i], ev[i + 1]), "cuEventElapsedTime", kernel);
    ms.push_back(t);
  }
  for (auto& e : ev) g.cuEventDestroy_v2(e);
  return st;
}

}  // namespace fnk::rt
