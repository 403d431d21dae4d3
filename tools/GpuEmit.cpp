#include "tools/GpuEmit.h"

#include "backend/cubin/Cubin.h"
#include "backend/cubin/Header.h"
#include "backend/nvptx/Codegen.h"
#include "ir/passes/Layout.h"
#include "ir/passes/Version.h"
#include "support/Diagnostics.h"

namespace fnk::tools {

std::string gpuArch() { return nvptx::TargetOptions{}.arch; }

Status emitGpu(ir::Module& m, const std::string& kind, std::string& out, const std::string& source,
               std::string* usage, int body, bool unaligned) {
  if (m.functions.size() != 1) {
    std::string names;
    for (const auto& f : m.functions) names += (names.empty() ? "" : ", ") + f->name;
    return Status::error("--emit=" + kind + " compiles one kernel; choose it with -k (" + names + ")");
  }
  const ir::Function& fn = *m.functions.front();
  nvptx::TargetOptions opts;
  opts.body = body;
  opts.unaligned = unaligned;
  const std::string& arch = opts.arch;
  if (kind != "llvm" && kind != "ptx" && kind != "cubin" && kind != "header")
    return Status::error("unknown GPU output '" + kind + "'");
  if (body >= 0 && kind == "header")
    return Status::error("--body goes with --emit=llvm, ptx or cubin: a header launches any shape, so it holds both bodies");
  if (body >= 0 && !ir::launchBranch(fn).iff)
    return Status::error("kernel '" + fn.name + "' has one body: no full-tile test to decide (the version pass)");
  if (kind == "llvm" && !usage) return nvptx::emitLLVM(fn, opts, out);
  std::string ptx;
  if (Status s = nvptx::emitPTX(fn, opts, ptx); !s) return s;
  // The cubin, when the output is one or embeds one, or when asked for its resources.
  std::string image;
  const bool assembled = (kind == "cubin" || kind == "header" || usage) && cubin::haveAssembler();
  if (kind == "cubin" || assembled)
    if (Status s = cubin::assemble(ptx, arch, fn.name, image, usage); !s) return s;
  if (usage && !assembled) *usage = "no assembler (ptxas or nvJitLink) to report resources\n";
  if (kind == "llvm") return nvptx::emitLLVM(fn, opts, out);
  if (kind == "ptx") out = std::move(ptx);
  else if (kind == "cubin") out = std::move(image);
  else return cubin::emitHeader(fn, assembled ? image : ptx, !assembled, source, out);  // PTX: the driver JITs it
  return Status::ok();
}

}  // namespace fnk::tools
