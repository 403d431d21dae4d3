// From a specialized kernel to a launch, shared by `fnk run --device gpu` and
// libfnk (Python/torch): compile once (in-memory and on-disk module cache),
// then launch with device buffers, the shapes and scalars that bound them,
// on a given stream.
//
// The disk cache lives in $FNK_CACHE_DIR (default ~/.cache/fnk). An entry's key
// hashes the kernel's IR text (which fixes the source and the const values),
// the target and the compiler version. Entries carry a length and a checksum; a
// corrupt or truncated one is detected and rebuilt. Writers write a private
// temporary file and rename it into place, so two processes compiling the same
// kernel at once both end with a whole entry.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/interp/Interpreter.h"
#include "backend/runtime/Cuda.h"
#include "ir/IR.h"

namespace fnk::rt {

struct CompileInfo {
  double ms = 0;        // wall time of this call
  bool fromDisk = false;
};

/// Which body of `fn` a launch with `args` (as for planLaunch) runs, for
/// nvptx::TargetOptions::body: 1 the full tile's, 0 the other, -1 both (the
/// kernel is not versioned, or FNK_JIT_ONE_BODY=0).
int launchBody(const ir::Function& fn, const std::vector<interp::Arg>& args);

/// What a JIT launch compiles `fn` as: the body (launchBody) and whether its
/// tensors may be off 16-byte alignment (nvptx::TargetOptions::unaligned).
struct Variant {
  int body = -1;
  bool unaligned = false;
  auto operator<=>(const Variant&) const = default;
};

/// Whether a launch with `args` has a tensor off 16-byte alignment: its rows
/// (the innermost dim, at rank 2 or more) are not a multiple of 16 bytes, or
/// its address in `bufs` (where given) is not 16-byte aligned.
bool offAlignment(const ir::Function& fn, const std::vector<interp::Arg>& args, const std::vector<DevPtr>& bufs = {});

/// The Variant a launch with `args` (and `bufs`, as planLaunch takes them)
/// compiles: the code for tensors off alignment where offAlignment and that
/// code differs (nvptx::alignmentMatters), or as FNK_UNALIGNED forces.
Variant launchVariant(const ir::Function& fn, const std::vector<interp::Arg>& args,
                      const std::vector<DevPtr>& bufs = {});
/// Every Variant launchVariant can pick for `fn`, for what must hold for all
/// of its launches (the occupancy a grid is sized by): each body ({0, 1} for
/// a versioned kernel unless FNK_JIT_ONE_BODY=0, else {-1}) with and
/// without the code for tensors off alignment (unless FNK_UNALIGNED forces
/// one, or that code is the same: nvptx::alignmentMatters).
std::vector<Variant> launchVariants(const ir::Function& fn);

/// The loaded kernel for `fn`, compiling it if no cache has it, as `v` asks
/// (body -1: both bodies, as `fnkc` builds them). A body that spills
/// registers is compared with both bodies, and `out` is whichever spills less.
Status compileAndLoad(const ir::Function& fn, Device& dev, Kernel& out, CompileInfo* info = nullptr, Variant v = {});

/// A launch worked out from the arguments: the grid, the cluster, the CTA size
/// and the parameter block (one 8-byte slot per ABI parameter).
struct LaunchPlan {
  unsigned grid[3] = {0, 0, 0}, cluster[3] = {1, 1, 1}, threads = 0;
  std::vector<uint64_t> storage;
};

/// Checks the grid and cluster of `fn` for `args` and fills `out`. `args` are
/// as for interp::run: tensors supply their shapes (data may be empty),
/// scalars their values; `bufs[i]` is the device address of tensor parameter i.
Status planLaunch(const ir::Function& fn, const std::vector<interp::Arg>& args, const std::vector<DevPtr>& bufs,
                  LaunchPlan& out);

/// Launches `k` as planned: no host-side checks (repeated launches, timing)
/// but one, that a kernel whose CTAs wait for each other fits the GPU at once.
Status launch(Device& dev, const Kernel& k, const LaunchPlan& plan, void* stream = nullptr);

/// planLaunch, then launch: one launch of `k` (compiled from `fn`).
Status launch(Device& dev, const ir::Function& fn, const Kernel& k, const std::vector<interp::Arg>& args,
              const std::vector<DevPtr>& bufs, void* stream = nullptr);

}  // namespace fnk::rt
