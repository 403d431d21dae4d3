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

/// Identifies the code this backend generates for a given IR: a revision
/// string bumped with every change to the lowering, plus the values of the
/// environment knobs the lowering reads (FNK_NO_PREFETCH, ...). Module caches
/// key on it so that cubins of an older backend, or of another knob setting,
/// are never reused.
std::string loweringKey();

/// LLVM IR text of `fn` (before optimization when `opts.optimize` is false).
Status emitLLVM(const ir::Function& fn, const TargetOptions& opts, std::string& out);
/// PTX text of `fn`; the module holds one .entry named after the kernel.
Status emitPTX(const ir::Function& fn, const TargetOptions& opts, std::string& out);

}  // namespace fnk::nvptx
