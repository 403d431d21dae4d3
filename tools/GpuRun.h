// `fnk run --device gpu`: compiles the kernel to PTX (backend/nvptx), to a
// cubin when ptxas or nvJitLink is there (else the driver JIT-compiles the
// PTX), copies the bound arguments to the device in their parameter dtypes
// (bf16/f16 as their bits), launches, and copies the outputs back into the
// same HostArrays the interpreter would have filled. --check also runs the
// interpreter on the same inputs and prints the max abs error per output;
// --bench prints the median of many event-timed launches and GB/s counting
// each tensor argument once (inputs read, outputs written), then what the
// driver says limits the kernel's occupancy (registers, local bytes, CTAs per
// SM, clusters resident at once).
#pragma once
#include <iosfwd>
#include <vector>

#include "backend/interp/Interpreter.h"
#include "ir/IR.h"
#include "support/Status.h"

namespace fnk::tools {

struct GpuRunOptions {
  bool check = false;
  bool bench = false;
  int warmup = 10;
  int iters = 100;
};

/// Runs `fn` on the GPU with `args` (as interp::run takes them; outputs are
/// written in place). Reports go to `out`. A check that fails is an error.
Status runGpu(const ir::Function& fn, std::vector<interp::Arg>& args, const GpuRunOptions& opts, std::ostream& out);

}  // namespace fnk::tools
