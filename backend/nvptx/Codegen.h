// The NVPTX code generator: one specialized kernel (ir::Function after the
// pipeline) -> LLVM IR -> optimized by LLVM's O3 pipeline -> PTX text, for
// sm_90a (PTX 8.0) by default. The parameter ABI is in backend/nvptx/Abi.h.
#pragma once
#include <string>

#include "ir/IR.h"
#include "support/Status.h"

namespace fnk::nvptx {

struct TargetOptions {
  std::string arch = "sm_90a";
  std::string features = "+ptx80";
  bool optimize = true;
};

/// LLVM IR text of `fn` (before optimization when `opts.optimize` is false).
Status emitLLVM(const ir::Function& fn, const TargetOptions& opts, std::string& out);
/// PTX text of `fn`; the module holds one .entry named after the kernel.
Status emitPTX(const ir::Function& fn, const TargetOptions& opts, std::string& out);

}  // namespace fnk::nvptx
