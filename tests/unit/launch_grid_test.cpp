// interp::launchGrid: the launch region evaluated from shapes alone, as the
// GPU runtime uses it for device tensors: the grid, a failed `requires` with
// the dims, and argument checks.
#include <gtest/gtest.h>

#include "backend/interp/Interpreter.h"
#include "frontend/KernelCache.h"

namespace fnk {
namespace {

const ir::Function* instantiate(Program& p, KernelCache& kc, DiagEngine& d, const char* file, const char* kernel,
                                ConstOverrides consts) {
  EXPECT_TRUE(p.loadFile(std::string(FNK_SOURCE_DIR) + "/" + file)) << d.str();
  const ir::Function* f = kc.get(kernel, consts, d);
  EXPECT_TRUE(f) << d.str();
  return f;
}

TEST(LaunchGrid, FromShapesAlone) {
  SourceManager sm;
  DiagEngine d(sm);
  Program p(sm, d, {});
  KernelCache kc(p);
  // The grid's second dim is P, bound by the partial sums' shape.
  const ir::Function* f = instantiate(p, kc, d, "stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd_split", {{"CLUSTER", "4"}, {"BLOCK_N", "256"}});
  ASSERT_TRUE(f);
  HostArray x{ir::DType::BF16, {37, 1000}, {}}, w{ir::DType::BF16, {1000}, {}}, r{ir::DType::F32, {37}, {}};
  HostArray part{ir::DType::F32, {5, 1000}, {}};
  int64_t g[3] = {0, 0, 0};
  Status s = interp::launchGrid(*f, {&x, &w, &x, &r, &x, &part}, g);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(g[0], 4);
  EXPECT_EQ(g[1], 5);
  EXPECT_EQ(g[2], 1);
  // 1100 columns need more than 4 x 256.
  HostArray x2{ir::DType::BF16, {37, 1100}, {}}, w2{ir::DType::BF16, {1100}, {}}, part2{ir::DType::F32, {5, 1100}, {}};
  s = interp::launchGrid(*f, {&x2, &w2, &x2, &r, &x2, &part2}, g);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "launch region: launch requirement 'N <= CLUSTER * BLOCK_N' does not hold for these "
                         "arguments (M = 37, N = 1100, P = 5)");
  // Shapes are checked as run() checks them.
  s = interp::launchGrid(*f, {&x, &w2, &x, &r, &x, &part}, g);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("argument 'w': dim N is 1100 here but 1000 from 'x'"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace fnk
