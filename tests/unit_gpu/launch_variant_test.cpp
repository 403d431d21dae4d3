// rt::launchVariant's choice of the code for tensors off 16-byte alignment
// (nvptx::TargetOptions::unaligned) from a launch's tensors, and that the
// choice reaches the code: the JIT's route to joinedStore and elementsOf,
// which FNK_UNALIGNED=1 (lit: unaligned.test) bypasses. No GPU needed: nothing is loaded or launched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "backend/nvptx/Codegen.h"
#include "backend/runtime/Launch.h"
#include "tests/unit/SourceKernels.h"

namespace fnk {
namespace {

const char* kSource = R"(
kernel scale<T: dtype = bf16>(x: tensor<T>[M, N], y: out tensor<T>[M, N]) launch(grid = M, warps = 4) {
    let row = program_id(0);
    let cols = arange(0, 1024);
    store(y[row, cols], (load(x[row, cols]).to(f32) * 2.0).to(T));
}

kernel flat(x: tensor<f32>[N], y: out tensor<f32>[N]) launch(grid = 1, warps = 4) {
    let cols = arange(0, 512);
    store(y[cols], load(x[cols]) * 2.0);
}

kernel row_sums(x: tensor<f32>[M, N], s: out tensor<f32>[M, N]) launch(grid = M, warps = 4) {
    let row = program_id(0);
    store(s[row, 0], sum(load(x[row, arange(0, 1024)])));
}

kernel pick(x: tensor<f32>[M, N], y: out tensor<f32>[M, N]) launch(grid = M, warps = 4) {
    let row = program_id(0);
    store(y[row, 0], load(x[row, 0]) * 2.0);
}

kernel shifted<VEC: int = 8>(x: tensor<bf16>[M, N], y: out tensor<bf16>[M, N])
    launch(grid = M, warps = 4, aligned_code = VEC > 1) {
    let row = program_id(0);
    let cols = arange(0, 1024) - (row * N) % VEC;
    store(y[row, cols], (load(x[row, cols]).to(f32) * 2.0).to(bf16));
}
)";

struct Kernels : test::SourceKernels {
  Kernels() : SourceKernels("variant.fnk", kSource) {}
  /// Kernel `name` at `consts`; the test stops where it did not build.
  const ir::Function& kernel(const char* name, const ConstOverrides& consts = {}) {
    const ir::Function* f = get(name, consts);
    if (!f) throw std::runtime_error(std::string("kernel '") + name + "' did not build");
    return *f;
  }
};

/// Two tensors of `shape` and `dtype`, as a launch binds x and y.
struct Launch {
  HostArray x, y;
  std::vector<interp::Arg> args;
  Launch(ir::DType dtype, std::vector<int64_t> shape) {
    x.dtype = y.dtype = dtype;
    x.shape = y.shape = std::move(shape);
    args = {&x, &y};
  }
};

TEST(LaunchVariant, RowsOffSixteenBytes) {
  Kernels k;
  const ir::Function& bf16 = k.kernel("scale");
  EXPECT_FALSE(rt::offAlignment(bf16, Launch(ir::DType::BF16, {4, 1024}).args));
  EXPECT_TRUE(rt::offAlignment(bf16, Launch(ir::DType::BF16, {4, 1023}).args));  // 2046 bytes a row
  EXPECT_TRUE(rt::offAlignment(bf16, Launch(ir::DType::BF16, {4, 1020}).args));  // 2040: off by 8
  const ir::Function& f32 = k.kernel("scale", {{"T", "f32"}});
  EXPECT_FALSE(rt::offAlignment(f32, Launch(ir::DType::F32, {4, 1020}).args));  // 4080 bytes
  EXPECT_TRUE(rt::offAlignment(f32, Launch(ir::DType::F32, {4, 1003}).args));
  // One row: a rank-1 tensor's rows do not move its chunks off alignment.
  EXPECT_FALSE(rt::offAlignment(k.kernel("flat"), Launch(ir::DType::F32, {1003}).args));
}

TEST(LaunchVariant, AddressesOffSixteenBytes) {
  Kernels k;
  const ir::Function& fn = k.kernel("scale");
  const Launch l(ir::DType::BF16, {4, 1024});
  EXPECT_FALSE(rt::offAlignment(fn, l.args, {0x10000, 0x20000}));
  EXPECT_TRUE(rt::offAlignment(fn, l.args, {0x10000, 0x20002}));  // y 2 bytes in (a view)
  EXPECT_TRUE(rt::offAlignment(fn, l.args, {0x10002, 0x20000}));  // x, which is only loaded, counts too
}

TEST(LaunchVariant, FollowsTheTensorsUnlessForced) {
  if (std::getenv("FNK_UNALIGNED")) GTEST_SKIP() << "FNK_UNALIGNED is set: it decides, not the launch";
  Kernels k;
  const ir::Function& fn = k.kernel("scale");
  EXPECT_FALSE(rt::launchVariant(fn, Launch(ir::DType::BF16, {4, 1024}).args).unaligned);
  EXPECT_TRUE(rt::launchVariant(fn, Launch(ir::DType::BF16, {4, 1023}).args).unaligned);
  // The occupancy a grid is sized by covers both forms.
  const std::vector<rt::Variant> all = rt::launchVariants(fn);
  EXPECT_EQ(std::count_if(all.begin(), all.end(), [](const rt::Variant& v) { return v.unaligned; }), 1);
  EXPECT_EQ(all.size(), 2u);
  // A kernel whose only vector access is a load: its rows off alignment take the variant.
  const ir::Function& sums = k.kernel("row_sums");
  EXPECT_TRUE(nvptx::alignmentMatters(sums));
  EXPECT_TRUE(rt::launchVariant(sums, Launch(ir::DType::F32, {4, 1003}).args).unaligned);
  // A kernel of scalar accesses alone has no code the variant changes: no second variant.
  const ir::Function& pick = k.kernel("pick");
  EXPECT_FALSE(nvptx::alignmentMatters(pick));
  EXPECT_TRUE(nvptx::alignmentMatters(fn));
  EXPECT_FALSE(rt::launchVariant(pick, Launch(ir::DType::F32, {4, 1003}).args).unaligned);
  EXPECT_EQ(rt::launchVariants(pick).size(), 1u);
  // A kernel that asks for the aligned code (launch(aligned_code = true)) gets it off alignment too, and no
  // second variant; the same kernel without the request (VEC = 1) follows its tensors.
  const ir::Function& shifted = k.kernel("shifted");
  EXPECT_TRUE(shifted.alignedCode());
  EXPECT_FALSE(nvptx::alignmentMatters(shifted));
  EXPECT_FALSE(rt::launchVariant(shifted, Launch(ir::DType::BF16, {4, 1023}).args).unaligned);
  EXPECT_EQ(rt::launchVariants(shifted).size(), 1u);
  const ir::Function& unshifted = k.kernel("shifted", {{"VEC", "1"}});
  EXPECT_FALSE(unshifted.alignedCode());
  EXPECT_TRUE(rt::launchVariant(unshifted, Launch(ir::DType::BF16, {4, 1023}).args).unaligned);
}

TEST(LaunchVariant, TheChoiceReachesTheCode) {
  if (std::getenv("FNK_UNALIGNED")) GTEST_SKIP() << "FNK_UNALIGNED is set: it decides, not the options";
  Kernels k;
  const ir::Function& fn = k.kernel("scale");
  nvptx::TargetOptions opts;
  std::string plain, joined;
  ASSERT_TRUE(nvptx::emitPTX(fn, opts, plain));
  opts.unaligned = true;
  ASSERT_TRUE(nvptx::emitPTX(fn, opts, joined));
  EXPECT_EQ(plain.find("shfl.sync.up"), std::string::npos);
  EXPECT_NE(joined.find("vote.sync.all"), std::string::npos);
  EXPECT_NE(joined.find("shfl.sync.up.b32"), std::string::npos);
  EXPECT_NE(joined.find("st.global.v4.b32"), std::string::npos);
  // A kernel's code (`emit`: emitLLVM or emitPTX) without and with the option.
  using Emit = Status (*)(const ir::Function&, const nvptx::TargetOptions&, std::string&);
  auto both = [&](const char* name, Emit emit) {
    std::pair<std::string, std::string> out;
    EXPECT_TRUE(emit(k.kernel(name), nvptx::TargetOptions{}, out.first));
    EXPECT_TRUE(emit(k.kernel(name), opts, out.second));
    return out;
  };
  // A load's whole chunks off alignment skip the per-element bounds tests (elementsOf).
  const auto [sumsPlain, sumsUnaligned] = both("row_sums", nvptx::emitLLVM);
  EXPECT_EQ(sumsPlain.find("e.valid:"), std::string::npos);
  EXPECT_NE(sumsUnaligned.find("e.valid:"), std::string::npos);
  // Where alignmentMatters says no, the option changes nothing.
  const auto [pickPlain, pickUnaligned] = both("pick", nvptx::emitPTX);
  EXPECT_EQ(pickPlain, pickUnaligned);
}

}  // namespace
}  // namespace fnk
