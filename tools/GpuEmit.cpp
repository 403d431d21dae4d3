#include "tools/GpuEmit.h"

#include "backend/cubin/Cubin.h"
#include "backend/cubin/Header.h"
#include "backend/nvptx/Codegen.h"
#include "ir/passes/Layout.h"
#include "support/Diagnostics.h"

namespace fnk::tools {

Status emitGpu(ir::Module& m, const std::string& kind, std::string& out, const std::string& arch,
               const std::string& source) {
  if (m.functions.size() != 1) {
    std::string names;
    for (const auto& f : m.functions) names += (names.empty() ? "" : ", ") + f->name;
    return Status::error("--emit=" + kind + " compiles one kernel; choose it with -k (" + names + ")");
  }
  const ir::Function& fn = *m.functions.front();
  nvptx::TargetOptions opts;
  opts.arch = arch;
  if (kind == "llvm") return nvptx::emitLLVM(fn, opts, out);
  std::string ptx;
  if (Status s = nvptx::emitPTX(fn, opts, ptx); !s) return s;
  if (kind == "ptx") {
    out = std::move(ptx);
    return Status::ok();
  }
  if (kind == "cubin") return cubin::assemble(ptx, arch, fn.name, out);
  if (kind == "header") {
    // Without an assembler the header carries the PTX for the driver to JIT.
    std::string image;
    bool isPtx = !cubin::haveAssembler();
    if (isPtx) image = ptx;
    else if (Status s = cubin::assemble(ptx, arch, fn.name, image); !s) return s;
    return cubin::emitHeader(fn, image, isPtx, source, out);
  }
  return Status::error("unknown GPU output '" + kind + "'");
}

}  // namespace fnk::tools
