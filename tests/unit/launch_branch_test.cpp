// ir::launchBranch: the version pass's `if n == C` as a launch decides it
// (the JIT compiles only the body the launch runs unless FNK_JIT_ONE_BODY=0,
// backend/runtime/Launch.cpp; `fnkc --body` the same, tests/lit/gpu/body.test).
#include <gtest/gtest.h>

#include "tests/unit/SourceKernels.h"
#include "ir/passes/Version.h"

namespace fnk {
namespace {

// A row's centred variance, masked to the row's width: by a dim of x, or by
// an integer parameter; and a kernel without a mask.
const char* kSource = R"(
kernel by_dim(x: tensor<f32>[M, N], y: out tensor<f32>[M, N]) launch(grid = M, warps = 4) {
    let row = program_id(0);
    let cols = arange(0, 256);
    let xv = load(x[row, cols], mask = cols < N);
    let d = where(cols < N, xv - sum(xv) / N, 0.0);
    store(y[row, cols], d * rsqrt(sum(d * d) / N + 1e-5), mask = cols < N);
}

kernel by_scalar(x: tensor<f32>[L], y: out tensor<f32>[L], n: i32) launch(grid = 1, warps = 4) {
    let cols = arange(0, 128);
    let xv = load(x[cols], mask = cols < n);
    store(y[cols], where(cols < n, xv - sum(xv) / n, 0.0), mask = cols < n);
}

kernel plain(x: tensor<f32>[N], y: out tensor<f32>[N]) launch(grid = 1, warps = 4) {
    let cols = arange(0, 256);
    store(y[cols], load(x[cols]) * 2.0);
}
)";

struct Kernels : test::SourceKernels {
  Kernels() : SourceKernels("branch.fnk", kSource) {}
  /// launchBranch of kernel `name` (iff null when the kernel failed to build).
  ir::LaunchBranch branch(const char* name) {
    const ir::Function* f = get(name);
    return f ? ir::launchBranch(*f) : ir::LaunchBranch{};
  }
};

TEST(LaunchBranch, ADimOfATensorParameter) {
  Kernels k;  // owns the kernel that b.iff points into
  const ir::LaunchBranch b = k.branch("by_dim");
  ASSERT_TRUE(b.iff);
  EXPECT_EQ(b.iff->kind(), ir::OpKind::If);
  EXPECT_EQ(b.param, 0u);  // x
  EXPECT_EQ(b.axis, 1);    // N
  EXPECT_EQ(b.full, 256);
}

TEST(LaunchBranch, AnIntegerParameter) {
  Kernels k;
  const ir::LaunchBranch b = k.branch("by_scalar");
  ASSERT_TRUE(b.iff);
  EXPECT_EQ(b.param, 2u);  // n
  EXPECT_EQ(b.axis, -1);
  EXPECT_EQ(b.full, 128);
}

TEST(LaunchBranch, NoneWithoutAMask) {
  Kernels k;
  EXPECT_EQ(k.branch("plain").iff, nullptr);
  EXPECT_TRUE(k.d.str().empty()) << k.d.str();  // it built; it has no branch
}

}  // namespace
}  // namespace fnk
