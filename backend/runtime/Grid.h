// The launch grid of a kernel: its launch region evaluated on the host (by
// the interpreter's evaluator, which the region's ops need nothing else for)
// from the tensor shapes and scalar values of one call.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/interp/Interpreter.h"
#include "ir/IR.h"
#include "support/Status.h"

namespace fnk::rt {

/// `args` as for interp::run (tensors supply their shapes only).
Status evalGrid(const ir::Function& fn, const std::vector<interp::Arg>& args, int64_t grid[3]);

}  // namespace fnk::rt
