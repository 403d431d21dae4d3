// `fnkc --emit=header`: a self-contained C/C++ header for one specialized
// kernel, so a build system can compile kernels ahead of time and launch them
// without fnk at run time. The header embeds the cubin (or the PTX, when no
// assembler was found, for the driver to JIT) and defines
//
//   static CUresult fnk_<kernel>_launch(CUstream stream, <one typed argument
//                                       per ABI slot: CUdeviceptr per tensor,
//                                       int64_t per tensor dim, scalars>);
//
// which checks the symbolic dims agree and the kernel's `requires`, computes
// the grid from the launch region (translated to C), loads the module into the
// current context on first use and launches. It needs only cuda.h and libcuda.
#pragma once
#include <string>

#include "ir/IR.h"
#include "support/Status.h"

namespace fnk::cubin {

/// `image` is the cubin or PTX; `isPtx` says which.
Status emitHeader(const ir::Function& fn, const std::string& image, bool isPtx, const std::string& source,
                  std::string& out);

}  // namespace fnk::cubin
