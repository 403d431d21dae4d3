// PTX -> cubin. Uses `ptxas` (FNK_PTXAS, else /usr/local/cuda/bin/ptxas, else
// PATH); when no ptxas is found, nvJitLink loaded with dlopen
// (libnvJitLink.so.13, resolved through its versioned symbols, see
// shared/docs/TOOLCHAIN.md). Neither is needed to build fnk.
#pragma once
#include <string>

#include "support/Status.h"

namespace fnk::cubin {

/// Assembles `ptx` for `arch` (e.g. "sm_90a") into a cubin image. `name` is
/// used in messages (the kernel). `log` receives the assembler's messages.
Status assemble(const std::string& ptx, const std::string& arch, const std::string& name, std::string& cubin,
                std::string* log = nullptr);

/// Whether some assembler is available (for --device gpu, which can also hand
/// PTX to the driver's JIT).
bool haveAssembler();

}  // namespace fnk::cubin
