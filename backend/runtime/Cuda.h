// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that
// fnk builds and starts on machines without a driver. Entry points are
// resolved by the exact symbols cuda.h's macros name (cuMemAlloc_v2, ...):
// shared/docs/TOOLCHAIN.md explains why cuGetProcAddress is a trap here.
// Every failing call becomes a Status that names the call, the CUDA error and
// the kernel it was for.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "support/Status.h"

namespace fnk::rt {

using DevPtr = unsigned long long;

struct Kernel {
  void* module = nullptr;    // CUmodule
  void* function = nullptr;  // CUfunction
  std::string name;
  unsigned dynamicShared = 0;  // bytes of dynamic shared memory each launch passes (nvptx::kDynamicSharedSymbol)
  bool pdl = false;            // launched with programmatic stream serialization (nvptx::kPdlSymbol)
  /// For a kernel whose CTAs wait for each other (wait_ge): how many of its
  /// CTAs the GPU holds at once (CTAs per SM x SMs), which bounds its grid;
  /// 0 for other kernels, or when the driver cannot say.
  int64_t residentCtas = 0;
  bool cooperative = false;  // launched cooperatively (its CTAs wait for each other)
};

/// What the driver reports of a loaded kernel at a launch shape; 0 where it
/// cannot say (an older driver).
struct Occupancy {
  int registers = 0;   // per thread
  int localBytes = 0;  // per thread: register spills and local arrays
  int ctasPerSm = 0;   // CTAs resident on one SM at once
  int clusters = 0;    // clusters resident on the device at once (cluster launches)
  int sms = 0;         // the device's SMs
};

class Device {
public:
  /// The first GPU, with its primary context current on this thread. A
  /// machine without libcuda.so.1 or without a GPU gets a clear error. The
  /// other methods use the context current on the calling thread, so a
  /// thread opens the device before it calls them (every caller opens it
  /// per launch: PyTorch's autograd threads, `fnk batch`'s case threads).
  static Status open(Device*& out);

  std::string name() const { return name_; }
  Status alloc(size_t bytes, DevPtr& out);
  Status free(DevPtr p);
  Status copyToDevice(DevPtr dst, const void* src, size_t bytes);
  Status copyToHost(void* dst, DevPtr src, size_t bytes);
  Status fill(DevPtr dst, uint8_t byte, size_t bytes);
  /// Loads a cubin or PTX image, finds `kernel` in it, and sets what its
  /// launches need on the function, once: clusters of more than 8 CTAs
  /// (`clusterCtas`, up to 16 on Hopper), and the dynamic shared memory the
  /// module exports (nvptx::kDynamicSharedSymbol, kept in out.dynamicShared).
  Status load(const std::string& image, const std::string& kernel, int64_t clusterCtas, Kernel& out);
  /// Launches with `block` threads on `stream` (null: the default stream);
  /// cluster dims > 1 use cuLaunchKernelEx.
  Status launch(const Kernel& k, const unsigned grid[3], unsigned block, const unsigned cluster[3], void** params,
                void* stream = nullptr);
  /// Registers and local memory per thread of `k` (0 and 0 when the driver
  /// cannot say).
  Status resources(const Kernel& k, int& registers, int& localBytes);
  /// Registers, local memory and occupancy of `k` launched as `grid` CTAs of
  /// `block` threads in clusters of `cluster`: what limits how many run at
  /// once (a cluster of 16 CTAs needs 16 free SMs of one GPC).
  Status occupancy(const Kernel& k, const unsigned grid[3], unsigned block, const unsigned cluster[3],
                   Occupancy& out);
  /// Waits for the device; a fault in `kernel` is reported with its name.
  Status sync(const std::string& kernel);
  /// Times `launches` back-to-back launches of `launch`, each between two
  /// events; returns the milliseconds of each.
  Status time(const std::string& kernel, int launches, const std::function<Status()>& launch, std::vector<float>& ms);

private:
  Status check(int rc, const char* call, const std::string& kernel);
  /// The .u32 global `name` of module `m` (a CUmodule) into `value`; `found`
  /// false, and no error, when the module has none.
  Status moduleU32(void* m, const char* name, const std::string& kernel, uint32_t& value, bool& found);
  std::string name_;
};

}  // namespace fnk::rt
