// Kernels of a source text, specialized as the tools specialize them, for unit
// tests (tests/unit, tests/unit_gpu): the program, its diagnostics and the
// kernel cache that owns the instances, which live as long as this does.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "frontend/KernelCache.h"

namespace fnk::test {

struct SourceKernels {
  SourceManager sm;
  DiagEngine d{sm};
  Program p{sm, d, {}};
  KernelCache kc{p};
  SourceKernels(const char* name, const char* source) { EXPECT_TRUE(p.loadBuffer(name, source)) << d.str(); }
  /// Kernel `kernel` at `consts` (null, with a test failure, when it did not build).
  const ir::Function* get(const std::string& kernel, const ConstOverrides& consts = {}) {
    const ir::Function* f = kc.get(kernel, consts, d);
    EXPECT_TRUE(f) << d.str();
    return f;
  }
};

}  // namespace fnk::test
