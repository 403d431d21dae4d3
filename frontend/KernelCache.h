// Kernels of one loaded program, instantiated on demand and kept: each
// (kernel, const values) pair is elaborated, verified and run through the pass
// pipeline once. Shared by libfnk's C ABI and `fnk repl`.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "frontend/Elaborate.h"
#include "ir/IR.h"

namespace fnk {

class KernelCache {
public:
  explicit KernelCache(const Program& program) : program_(program) {}
  /// The instantiated kernel, or null with the diagnostics left in `diags`.
  const ir::Function* get(const std::string& kernel, const ConstOverrides& consts, DiagEngine& diags);

private:
  const Program& program_;
  std::map<std::string, std::unique_ptr<ir::Module>> instances_;
};

}  // namespace fnk
