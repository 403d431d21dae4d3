// The GPU paths of the command-line tools, kept out of fnkc.cpp and fnk.cpp so
// those stay small: `fnkc --emit=llvm|ptx|cubin` and `fnk run --device gpu`
// (tools/GpuRun.cpp). Built only when FNK_GPU is on (FNK_HAVE_GPU).
#pragma once
#include <string>

#include "ir/IR.h"
#include "support/Status.h"

namespace fnk::tools {

/// The one architecture the backend emits for (nvptx::TargetOptions): what
/// `fnkc --arch` accepts.
std::string gpuArch();

/// Emits `kind` (llvm, ptx or cubin) for the one kernel of `m` (after the
/// pipeline) into `out`, for gpuArch().
/// `header` writes a C/C++ launch header (backend/cubin/Header.h); `source`
/// names the input file in its comment.
/// With `usage`, the assembler's report of the kernel's resources (ptxas -v:
/// registers, spill bytes, shared memory) goes there, assembling the PTX for
/// it when `kind` itself needs no cubin.
/// `body` (nvptx::TargetOptions::body: -1 both, 1 the full tile's, 0 the
/// other) picks the body of a versioned kernel, as the JIT does from a
/// launch's shapes (rt::launchBody); a kernel with one body refuses 0
/// and 1, and so does a header (it launches any shape). `unaligned`
/// (nvptx::TargetOptions::unaligned) compiles the code for tensors off
/// 16-byte alignment, as the JIT does for launches whose rows need it.
Status emitGpu(ir::Module& m, const std::string& kind, std::string& out, const std::string& source = {},
               std::string* usage = nullptr, int body = -1, bool unaligned = false);

}  // namespace fnk::tools
