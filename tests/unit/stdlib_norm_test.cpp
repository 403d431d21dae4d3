// The stdlib norm kernels and the examples built on them, compiled from source
// through the library (Program, elaborateModule, ir::runPipeline) and run in
// the interpreter against float64 references written here as plain loops.
// Shapes are ragged (N = 1, 7, 1000, 4096; M = 1, 3, 64), inputs are fresh
// random non-zero values, and outputs are poisoned with NaN before each run so
// an element a kernel forgets to write fails the comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/interp/Interpreter.h"
#include "frontend/Elaborate.h"
#include "frontend/Program.h"
#include "ir/Pass.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"
#include "support/HostArray.h"

namespace fnk {
namespace {

using ir::DType;

// --- compiling ---------------------------------------------------------------

std::string srcPath(const std::string& rel) { return std::string(FNK_SOURCE_DIR) + "/" + rel; }

// One elaborated, verified and optimized kernel together with the sources its
// locations point into.
struct Compiled {
  std::unique_ptr<SourceManager> sm = std::make_unique<SourceManager>();
  std::unique_ptr<DiagEngine> diags = std::make_unique<DiagEngine>(*sm);
  std::unique_ptr<Program> program;
  std::unique_ptr<ir::Module> module;
  const ir::Function* fn = nullptr;
  std::string error;
};

// Kernels are instantiated once per (file, kernel, consts) and reused.
const Compiled& compile(const std::string& file, const std::string& kernel, const ConstOverrides& consts) {
  static std::map<std::string, std::unique_ptr<Compiled>> cache;
  std::string key = file + "|" + kernel;
  for (const auto& [k, v] : consts) key += "|" + k + "=" + v;
  auto& slot = cache[key];
  if (slot) return *slot;
  slot = std::make_unique<Compiled>();
  Compiled& c = *slot;
  FrontendOptions fo;
  fo.stdlibDir = srcPath("stdlib");
  c.program = std::make_unique<Program>(*c.sm, *c.diags, fo);
  if (c.program->loadFile(srcPath(file))) c.module = elaborateModule(*c.program, consts, *c.diags, kernel);
  if (c.module && !ir::verify(*c.module, *c.diags)) c.module.reset();
  std::ostringstream dump;
  ir::PipelineOptions po;
  po.dump = &dump;
  if (c.module && !ir::runPipeline(*c.module, *c.diags, po)) c.module.reset();
  if (c.module && c.module->functions.size() == 1) c.fn = c.module->functions.front().get();
  if (!c.fn) c.error = "cannot compile " + key + ":\n" + c.diags->str() + dump.str();
  return c;
}

// --- data ----------------------------------------------------------------------

// Rounding written out here rather than taken from support/Float.h, so the
// reference does not share code with the interpreter.
double toF32(double v) { return static_cast<double>(static_cast<float>(v)); }
double toBf16(double v) {  // round to nearest even; the inputs here are finite
  uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(v));
  bits += 0x7FFF + ((bits >> 16) & 1);
  bits &= 0xFFFF0000u;
  return static_cast<double>(std::bit_cast<float>(bits));
}
double roundTo(double v, DType t) { return t == DType::BF16 ? toBf16(v) : toF32(v); }

HostArray makeArray(DType t, std::vector<int64_t> shape) {
  HostArray a;
  a.dtype = t;
  a.shape = std::move(shape);
  a.data.assign(static_cast<size_t>(a.numElements()), 0.0);
  return a;
}

// Random values of magnitude in [lo, hi] with random sign (never zero), plus
// `offset`, rounded to `t`.
HostArray randomArray(std::mt19937& rng, DType t, std::vector<int64_t> shape, double lo = 0.25, double hi = 2.0,
                      double offset = 0.0) {
  HostArray a = makeArray(t, std::move(shape));
  std::uniform_real_distribution<double> mag(lo, hi);
  std::bernoulli_distribution sign(0.5);
  for (double& v : a.data) {
    double x = offset + (sign(rng) ? 1.0 : -1.0) * mag(rng);
    x = roundTo(x, t);
    if (x == 0.0) x = roundTo(0.5, t);
    v = x;
  }
  return a;
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The tile width of the whole-row kernels: the smallest power of two that holds N.
int rowBlock(int64_t n) {
  int block = 1;
  while (block < n) block *= 2;
  return block;
}

// --- running -----------------------------------------------------------------

using Tensors = std::map<std::string, HostArray*>;
using Scalars = std::map<std::string, double>;

// Runs `c`'s kernel with arguments matched to its parameters by name.
::testing::AssertionResult runKernel(const Compiled& c, const Tensors& tensors, const Scalars& scalars = {}) {
  if (!c.fn) return ::testing::AssertionFailure() << c.error;
  std::vector<interp::Arg> args;
  for (const auto& p : c.fn->params) {
    if (p.type.isTensor()) {
      auto it = tensors.find(p.name);
      if (it == tensors.end()) return ::testing::AssertionFailure() << "test gives no tensor for '" << p.name << "'";
      args.emplace_back(it->second);
    } else {
      auto it = scalars.find(p.name);
      if (it == scalars.end()) return ::testing::AssertionFailure() << "test gives no scalar for '" << p.name << "'";
      args.emplace_back(it->second);
    }
  }
  interp::RunOptions ro;
  ro.poisonOutputs = true;
  Status s = interp::run(*c.fn, args, ro);
  if (!s) return ::testing::AssertionFailure() << "kernel '" << c.fn->name << "' failed: " << s.message();
  return ::testing::AssertionSuccess();
}

// --- comparing -----------------------------------------------------------------

double bf16Ulp(double v) {
  int e = 0;
  std::frexp(std::max(std::fabs(v), 1e-30), &e);  // |v| = m * 2^e, m in [0.5, 1)
  return std::ldexp(1.0, e - 8);                    // 8 significant bits
}

// Element i passes when |got - ref| <= tol(ref) + atol * max|ref| + 1e-6 * mag[i]:
// tol is 1e-5 * |ref| for f32 and 2 ulps of bf16 for bf16. The other two terms
// admit the f32 rounding of the kernels' intermediates where an output cancels:
// a small fraction of the array's scale, and, where the caller gives it, a
// multiple (~16 f32 ulps) of mag[i], the sum of the magnitudes of the terms that
// make up element i (so a near-zero difference of large terms is judged against
// those terms, not against itself). NaN never passes.
::testing::AssertionResult near(const std::string& name, const HostArray& got, const std::vector<double>& ref,
                                DType t, const std::vector<double>& mag = {}) {
  if (got.data.size() != ref.size())
    return ::testing::AssertionFailure() << name << ": " << got.data.size() << " elements, expected " << ref.size();
  double scale = 0;
  for (double r : ref) scale = std::max(scale, std::fabs(r));
  const double atol = (t == DType::BF16 ? 1e-5 : 1e-6) * scale;
  size_t bad = 0, first = 0;
  double worst = 0;
  size_t worstAt = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double tol = (t == DType::BF16 ? 2 * bf16Ulp(ref[i]) : 1e-5 * std::fabs(ref[i])) + atol;
    if (!mag.empty()) tol += 1e-6 * mag[i];
    double err = std::fabs(got.data[i] - ref[i]);
    if (!(err <= tol)) {
      if (bad++ == 0) first = i;
      double rel = std::isnan(err) ? INFINITY : err / tol;
      if (rel > worst || bad == 1) worst = rel, worstAt = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << name << ": " << bad << " of " << ref.size() << " elements off; first ["
                                       << first << "] got " << got.data[first] << " expected " << ref[first]
                                       << "; worst [" << worstAt << "] got " << got.data[worstAt] << " expected "
                                       << ref[worstAt] << " (" << worst << "x tolerance)";
}

std::string dtypeText(DType t) { return t == DType::BF16 ? "bf16" : "f32"; }

// --- RMSNorm and LayerNorm over x[M, N] -----------------------------------------

struct NormCase {
  int64_t M, N;
  DType T;
  int blockN;  // 0: the kernel's default
  int rows;    // rows per backward CTA, which sets P = cdiv(M, rows); 0: 4
};

std::string caseName(const ::testing::TestParamInfo<NormCase>& info) {
  const NormCase& c = info.param;
  std::ostringstream os;  // (not string +: GCC 12 warns falsely on "lit" + std::string&&)
  os << "M" << c.M << "_N" << c.N << "_" << dtypeText(c.T) << "_B" << c.blockN << "_R" << c.rows;
  return os.str();
}

std::vector<NormCase> normCases() {
  std::vector<NormCase> out;
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t m : {1, 3, 64})
      for (int64_t n : {1, 7, 1000, 4096}) {
        // M = 64 keeps the default BLOCK_N (1024: N = 4096 takes 4 chunks);
        // the others walk N in chunks of 256 (4 for N = 7) so the chunk loops
        // run several times, the last one ragged.
        int block = m == 64 ? 0 : (n <= 7 ? 4 : 256);
        // ROWS = 1 at M = 64 in f32 gives P = 64 partials, two BLOCK_P = 32
        // chunks in the dw reduction; elsewhere the default 4 (M = 3: masked rows).
        int rows = (m == 64 && t == DType::F32) ? 1 : 0;
        out.push_back({m, n, t, block, rows});
      }
  return out;
}

ConstOverrides consts(DType t, std::initializer_list<std::pair<const char*, int>> ints) {
  ConstOverrides c{{"T", dtypeText(t)}};
  for (auto [k, v] : ints)
    if (v > 0) c[k] = std::to_string(v);
  return c;
}

// The *_rows kernels: the row in one tile, two rows per step (so that ROWS
// does not divide most M).
ConstOverrides rowsConsts(const NormCase& c) { return consts(c.T, {{"BLOCK_N", rowBlock(c.N)}, {"ROWS", 2}}); }

uint32_t seedFor(int family, const NormCase& c) {
  return static_cast<uint32_t>(family * 1000003u + c.M * 7919u + c.N * 31u + (c.T == DType::BF16) * 5u + c.blockN +
                               c.rows * 13u);
}

class NormTest : public ::testing::TestWithParam<NormCase> {};

// float64 statistics of one row of n values: RMSNorm's rstd, and LayerNorm's
// two-pass mean and rstd (with the mean of |x|, the scale of the mean's error).
double rmsRstd(const double* x, int64_t n, double eps) {
  double ss = 0;
  for (int64_t j = 0; j < n; ++j) ss += x[j] * x[j];
  return 1.0 / std::sqrt(ss / n + eps);
}

struct LnStats {
  double mean, meanAbs, rstd;
};

LnStats lnStats(const double* x, int64_t n, double eps) {
  double s = 0, sAbs = 0, ss = 0;
  for (int64_t j = 0; j < n; ++j) s += x[j], sAbs += std::fabs(x[j]);
  const double mu = s / n;
  for (int64_t j = 0; j < n; ++j) ss += (x[j] - mu) * (x[j] - mu);
  return {mu, sAbs / n, 1.0 / std::sqrt(ss / n + eps)};
}

// Forward RMSNorm reference: returns y and rstd.
void rmsnormRef(const HostArray& x, const HostArray& w, double eps, int64_t M, int64_t N, std::vector<double>& y,
                std::vector<double>& rstd) {
  y.assign(M * N, 0);
  rstd.assign(M, 0);
  for (int64_t i = 0; i < M; ++i) {
    double r = rmsRstd(&x.data[i * N], N, eps);
    rstd[i] = r;
    for (int64_t j = 0; j < N; ++j) y[i * N + j] = x.data[i * N + j] * r * w.data[j];
  }
}

// One RMSNorm forward kernel against the float64 reference.
void checkRmsnormFwd(const NormCase& c, const char* kernel, const ConstOverrides& k, uint32_t seed) {
  SCOPED_TRACE(std::string(kernel) + " seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const double eps = toF32(1e-6);
  HostArray x = randomArray(rng, c.T, {c.M, c.N}), w = randomArray(rng, c.T, {c.N}, 0.5, 1.5);
  HostArray y = makeArray(c.T, {c.M, c.N}), rstd = makeArray(DType::F32, {c.M});
  const Compiled& fwd = compile("stdlib/norm/rmsnorm.fnk", kernel, k);
  ASSERT_TRUE(runKernel(fwd, {{"x", &x}, {"w", &w}, {"y", &y}, {"rstd", &rstd}}, {{"eps", eps}}));
  std::vector<double> yRef, rRef;
  rmsnormRef(x, w, eps, c.M, c.N, yRef, rRef);
  EXPECT_TRUE(near("y", y, yRef, c.T));
  EXPECT_TRUE(near("rstd", rstd, rRef, DType::F32));
}

TEST_P(NormTest, RmsnormFwd) {
  const NormCase c = GetParam();
  checkRmsnormFwd(c, "rmsnorm_fwd", consts(c.T, {{"BLOCK_N", c.blockN}}), seedFor(1, c));
}

// The whole-row kernel, with the smallest power-of-two tile that holds the row.
TEST_P(NormTest, RmsnormFwdRow) {
  const NormCase c = GetParam();
  checkRmsnormFwd(c, "rmsnorm_fwd_row", consts(c.T, {{"BLOCK_N", rowBlock(c.N)}}), seedFor(11, c));
}

// One RMSNorm backward kernel (dx and dw partials), then rmsnorm_bwd_dw,
// against the float64 reference.
void checkRmsnormBwd(const NormCase& c, const char* kernel, const ConstOverrides& k, uint32_t seed) {
  SCOPED_TRACE(std::string(kernel) + " seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t M = c.M, N = c.N, rows = c.rows > 0 ? c.rows : 4, P = cdiv(M, rows);
  HostArray x = randomArray(rng, c.T, {M, N}), w = randomArray(rng, c.T, {N}, 0.5, 1.5);
  HostArray dy = randomArray(rng, c.T, {M, N});
  // rstd as the forward would save it: f32.
  HostArray rstd = makeArray(DType::F32, {M});
  for (int64_t i = 0; i < M; ++i) rstd.data[i] = toF32(rmsRstd(&x.data[i * N], N, 1e-6));
  HostArray dx = makeArray(c.T, {M, N}), partial = makeArray(DType::F32, {P, N}), dw = makeArray(c.T, {N});
  const Compiled& bwd = compile("stdlib/norm/rmsnorm.fnk", kernel, k);
  ASSERT_TRUE(runKernel(bwd, {{"x", &x}, {"w", &w}, {"dy", &dy}, {"rstd", &rstd}, {"dx", &dx}, {"dw_partial", &partial}}));
  const Compiled& red = compile("stdlib/norm/rmsnorm.fnk", "rmsnorm_bwd_dw", consts(c.T, {}));
  ASSERT_TRUE(runKernel(red, {{"partial", &partial}, {"dw", &dw}}));

  // dx = r * dy * w - x * r^3 / N * sum_j(dy * w * x);  dw = sum_i dy * x * r.
  std::vector<double> dxRef(M * N), dwRef(N, 0.0), dxMag(M * N), dwMag(N, 0.0);
  for (int64_t i = 0; i < M; ++i) {
    double r = rstd.data[i], dot = 0, dotMag = 0;
    for (int64_t j = 0; j < N; ++j) {
      dot += dy.data[i * N + j] * w.data[j] * x.data[i * N + j];
      dotMag += std::fabs(dy.data[i * N + j] * w.data[j] * x.data[i * N + j]);
    }
    for (int64_t j = 0; j < N; ++j) {
      double xv = x.data[i * N + j], g = dy.data[i * N + j] * w.data[j];
      dxRef[i * N + j] = r * g - xv * r * r * r / N * dot;
      dxMag[i * N + j] = std::fabs(r * g) + std::fabs(xv) * r * r * r / N * dotMag;
      dwRef[j] += dy.data[i * N + j] * xv * r;
      dwMag[j] += std::fabs(dy.data[i * N + j] * xv * r);
    }
  }
  EXPECT_TRUE(near("dx", dx, dxRef, c.T, dxMag));
  EXPECT_TRUE(near("dw", dw, dwRef, c.T, dwMag));
}

TEST_P(NormTest, RmsnormBwd) {
  const NormCase c = GetParam();
  checkRmsnormBwd(c, "rmsnorm_bwd", consts(c.T, {{"BLOCK_N", c.blockN}}), seedFor(2, c));
}

// One LayerNorm forward kernel against the float64 reference; the values sit
// around `offset`, so the mean is far from zero and the variance must not be
// computed as E[x^2] - E[x]^2 (two passes, or one shifted by a value of the
// row, E[(x - k)^2] - E[x - k]^2).
void checkLayernormFwd(const NormCase& c, const char* kernel, const ConstOverrides& k, uint32_t seed, double offset) {
  SCOPED_TRACE(std::string(kernel) + " seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t M = c.M, N = c.N;
  const double eps = toF32(1e-5);
  HostArray x = randomArray(rng, c.T, {M, N}, 0.25, 2.0, offset);
  HostArray w = randomArray(rng, c.T, {N}, 0.5, 1.5), b = randomArray(rng, c.T, {N}, 0.1, 1.0);
  HostArray y = makeArray(c.T, {M, N}), mean = makeArray(DType::F32, {M}), rstd = makeArray(DType::F32, {M});
  ASSERT_TRUE(runKernel(compile("stdlib/norm/layernorm.fnk", kernel, k),
                        {{"x", &x}, {"w", &w}, {"b", &b}, {"y", &y}, {"mean", &mean}, {"rstd", &rstd}},
                        {{"eps", eps}}));
  std::vector<double> yRef(M * N), muRef(M), rRef(M), yMag(M * N), muMag(M);
  for (int64_t i = 0; i < M; ++i) {
    const LnStats st = lnStats(&x.data[i * N], N, eps);
    const double mu = st.mean, r = st.rstd;
    muRef[i] = mu;
    muMag[i] = st.meanAbs;
    rRef[i] = r;
    for (int64_t j = 0; j < N; ++j) {
      yRef[i * N + j] = (x.data[i * N + j] - mu) * r * w.data[j] + b.data[j];
      yMag[i * N + j] = (std::fabs(x.data[i * N + j]) + std::fabs(mu)) * r * std::fabs(w.data[j]) + std::fabs(b.data[j]);
    }
  }
  EXPECT_TRUE(near("y", y, yRef, c.T, yMag));
  EXPECT_TRUE(near("mean", mean, muRef, DType::F32, muMag));
  EXPECT_TRUE(near("rstd", rstd, rRef, DType::F32));
}

TEST_P(NormTest, LayernormFwd) {
  const NormCase c = GetParam();
  checkLayernormFwd(c, "layernorm_fwd", consts(c.T, {{"BLOCK_N", c.blockN}}), seedFor(3, c), 1.5);
}

// The whole-row kernel (one-round statistics, x read again for the output),
// asking L2 for the row 3 CTAs ahead: past the last row it asks for nothing.
TEST_P(NormTest, LayernormFwdRow) {
  const NormCase c = GetParam();
  checkLayernormFwd(c, "layernorm_fwd_row", consts(c.T, {{"BLOCK_N", rowBlock(c.N)}, {"WARPS", 4}, {"L2", 3}}),
                    seedFor(17, c), 1.5);
}

// The chunked path's one-pass statistics (64-wide chunks, so every N > 64
// takes it), on rows whose mean is ~50x their spread: without the shift by
// x[row, 0] (E[x^2] - E[x]^2) the variance would lose its digits.
TEST_P(NormTest, LayernormFwdFarMean) {
  const NormCase c = GetParam();
  checkLayernormFwd(c, "layernorm_fwd", consts(c.T, {{"BLOCK_N", 64}, {"WARPS", 2}}), seedFor(12, c), 64.0);
}

// One LayerNorm backward kernel (dx and dw/db partials), then
// layernorm_bwd_dwdb, against the float64 reference.
void checkLayernormBwd(const NormCase& c, const char* kernel, const ConstOverrides& k, uint32_t seed) {
  SCOPED_TRACE(std::string(kernel) + " seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t M = c.M, N = c.N, rows = c.rows > 0 ? c.rows : 4, P = cdiv(M, rows);
  HostArray x = randomArray(rng, c.T, {M, N}, 0.25, 2.0, 1.5), w = randomArray(rng, c.T, {N}, 0.5, 1.5);
  HostArray dy = randomArray(rng, c.T, {M, N});
  HostArray mean = makeArray(DType::F32, {M}), rstd = makeArray(DType::F32, {M});
  for (int64_t i = 0; i < M; ++i) {
    const LnStats st = lnStats(&x.data[i * N], N, 1e-5);
    mean.data[i] = toF32(st.mean);
    rstd.data[i] = toF32(st.rstd);
  }
  HostArray dx = makeArray(c.T, {M, N}), pw = makeArray(DType::F32, {P, N}), pb = makeArray(DType::F32, {P, N});
  HostArray dw = makeArray(c.T, {N}), db = makeArray(c.T, {N});
  const Compiled& bwd = compile("stdlib/norm/layernorm.fnk", kernel, k);
  ASSERT_TRUE(runKernel(bwd, {{"x", &x}, {"w", &w}, {"dy", &dy}, {"mean", &mean}, {"rstd", &rstd}, {"dx", &dx},
                              {"dw_partial", &pw}, {"db_partial", &pb}}));
  const Compiled& red = compile("stdlib/norm/layernorm.fnk", "layernorm_bwd_dwdb", consts(c.T, {}));
  ASSERT_TRUE(runKernel(red, {{"dw_partial", &pw}, {"db_partial", &pb}, {"dw", &dw}, {"db", &db}}));

  // xhat = (x - mean) * rstd, g = dy * w:
  // dx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat)); dw = sum_i dy * xhat; db = sum_i dy.
  std::vector<double> dxRef(M * N), dwRef(N, 0.0), dbRef(N, 0.0);
  std::vector<double> dxMag(M * N), dwMag(N, 0.0), dbMag(N, 0.0);
  for (int64_t i = 0; i < M; ++i) {
    double mu = mean.data[i], r = rstd.data[i], sg = 0, sgx = 0, sgMag = 0, sgxMag = 0;
    for (int64_t j = 0; j < N; ++j) {
      double xhat = (x.data[i * N + j] - mu) * r, g = dy.data[i * N + j] * w.data[j];
      sg += g;
      sgx += g * xhat;
      sgMag += std::fabs(g);
      sgxMag += std::fabs(g) * (std::fabs(x.data[i * N + j]) + std::fabs(mu)) * r;
    }
    for (int64_t j = 0; j < N; ++j) {
      double xhat = (x.data[i * N + j] - mu) * r, g = dy.data[i * N + j] * w.data[j];
      double xhatMag = (std::fabs(x.data[i * N + j]) + std::fabs(mu)) * r;
      dxRef[i * N + j] = r * (g - sg / N - xhat * sgx / N);
      dxMag[i * N + j] = r * (std::fabs(g) + sgMag / N + xhatMag * sgxMag / N);
      dwRef[j] += dy.data[i * N + j] * xhat;
      dwMag[j] += std::fabs(dy.data[i * N + j]) * xhatMag;
      dbRef[j] += dy.data[i * N + j];
      dbMag[j] += std::fabs(dy.data[i * N + j]);
    }
  }
  EXPECT_TRUE(near("dx", dx, dxRef, c.T, dxMag));
  EXPECT_TRUE(near("dw", dw, dwRef, c.T, dwMag));
  EXPECT_TRUE(near("db", db, dbRef, c.T, dbMag));
}

TEST_P(NormTest, LayernormBwd) {
  const NormCase c = GetParam();
  checkLayernormBwd(c, "layernorm_bwd", consts(c.T, {{"BLOCK_N", c.blockN}}), seedFor(4, c));
}

// The forwards that take several rows per CTA ([ROWS, BLOCK_N] tiles), ROWS
// not dividing M; each check names its kernel.
TEST_P(NormTest, FwdRows) {
  const NormCase c = GetParam();
  checkRmsnormFwd(c, "rmsnorm_fwd_rows", rowsConsts(c), seedFor(15, c));
  checkLayernormFwd(c, "layernorm_fwd_rows", rowsConsts(c), seedFor(16, c), 1.5);
}

// The backwards that take several rows per step ([ROWS, BLOCK_N] tiles),
// ROWS not dividing M; each check names its kernel.
TEST_P(NormTest, BwdRows) {
  const NormCase c = GetParam();
  checkRmsnormBwd(c, "rmsnorm_bwd_rows", rowsConsts(c), seedFor(13, c));
  checkLayernormBwd(c, "layernorm_bwd_rows", rowsConsts(c), seedFor(14, c));
}

// A cluster of CTAs shares each row (cluster.reduce over the partial sums).
TEST_P(NormTest, WideRmsnormFwd) {
  const NormCase c = GetParam();
  uint32_t seed = seedFor(5, c);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const double eps = toF32(1e-6);
  // M = 3 uses a cluster of 2, the others the default 4; with BLOCK_N = 256
  // and N = 4096 each CTA walks 4 chunks, with N = 1000 one CTA gets 2.
  int cluster = c.M == 3 ? 2 : 0;
  HostArray x = randomArray(rng, c.T, {c.M, c.N}), w = randomArray(rng, c.T, {c.N}, 0.5, 1.5);
  HostArray y = makeArray(c.T, {c.M, c.N}), rstd = makeArray(DType::F32, {c.M});
  const Compiled& k = compile("examples/wide_rmsnorm.fnk", "wide_rmsnorm_fwd",
                              consts(c.T, {{"BLOCK_N", c.blockN == 4 ? 2 : c.blockN}, {"CLUSTER", cluster}}));
  ASSERT_TRUE(runKernel(k, {{"x", &x}, {"w", &w}, {"y", &y}, {"rstd", &rstd}}, {{"eps", eps}}));
  std::vector<double> yRef, rRef;
  rmsnormRef(x, w, eps, c.M, c.N, yRef, rRef);
  EXPECT_TRUE(near("y", y, yRef, c.T));
  EXPECT_TRUE(near("rstd", rstd, rRef, DType::F32));
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormTest, ::testing::ValuesIn(normCases()), caseName);

// --- DiT modulate over x[B, S, H] ---------------------------------------------

struct DitCase {
  int64_t B, S, H;
  DType T;
  int blockH;  // 0: default (1024)
  int rows;    // rows per backward CTA, which sets SB = cdiv(S, rows); 0: 8
};

std::string ditName(const ::testing::TestParamInfo<DitCase>& info) {
  const DitCase& c = info.param;
  std::ostringstream os;
  os << "B" << c.B << "_S" << c.S << "_H" << c.H << "_" << dtypeText(c.T) << "_BH" << c.blockH << "_R" << c.rows;
  return os.str();
}

std::vector<DitCase> ditCases() {
  std::vector<DitCase> out;
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t b : {1, 2})
      for (int64_t s : {1, 5, 17})
        for (int64_t h : {7, 64, 1000}) {
          // B = 2 uses the smallest power of two >= H, B = 1 the default 1024.
          int bh = b == 2 ? static_cast<int>(std::bit_ceil(static_cast<uint64_t>(h))) : 0;
          // ROWS = 1 at S = 17 gives SB = 17 CTAs per batch, one row each.
          // Else the default 8 (S = 17: SB = 3, the CTAs with 6, 6 and 5 rows;
          // S = 1 and 5: one CTA per batch).
          int rows = (s == 17 && b == 2) ? 1 : 0;
          out.push_back({b, s, h, t, bh, rows});
        }
  return out;
}

uint32_t ditSeed(int family, const DitCase& c) {
  return static_cast<uint32_t>(family * 1000003u + c.B * 7919u + c.S * 101u + c.H * 31u + (c.T == DType::BF16) * 5u +
                               c.blockH + c.rows * 13u);
}

class DitTest : public ::testing::TestWithParam<DitCase> {};

struct DitInputs {
  HostArray x, w, b, scale, shift;
  DitInputs(std::mt19937& rng, const DitCase& c)
      : x(randomArray(rng, c.T, {c.B, c.S, c.H}, 0.25, 2.0, 1.0)),
        w(randomArray(rng, c.T, {c.H}, 0.5, 1.5)),
        b(randomArray(rng, c.T, {c.H}, 0.1, 1.0)),
        scale(randomArray(rng, c.T, {c.B, c.H}, 0.05, 0.5)),
        shift(randomArray(rng, c.T, {c.B, c.H}, 0.1, 1.0)) {}
};

TEST_P(DitTest, Fwd) {
  const DitCase c = GetParam();
  uint32_t seed = ditSeed(1, c);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t B = c.B, S = c.S, H = c.H;
  const double eps = toF32(1e-6);
  DitInputs in(rng, c);
  HostArray y = makeArray(c.T, {B, S, H}), mean = makeArray(DType::F32, {B, S}), rstd = makeArray(DType::F32, {B, S});
  // SB = 3 CTAs per batch: several rows each, ragged when 3 does not divide S.
  const Compiled& k =
      compile("examples/dit_modulate.fnk", "dit_modulate_fwd", consts(c.T, {{"BLOCK_H", c.blockH}, {"SB", 3}}));
  ASSERT_TRUE(runKernel(k,
                        {{"x", &in.x}, {"w", &in.w}, {"b", &in.b}, {"scale", &in.scale}, {"shift", &in.shift},
                         {"y", &y}, {"mean", &mean}, {"rstd", &rstd}},
                        {{"eps", eps}}));
  // h = LayerNorm(x) * w + b; y = h * (1 + scale[b]) + shift[b].
  std::vector<double> yRef(B * S * H), muRef(B * S), rRef(B * S), yMag(B * S * H), muMag(B * S);
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t s = 0; s < S; ++s) {
      const double* xr = &in.x.data[(bi * S + s) * H];
      const LnStats st = lnStats(xr, H, eps);
      const double mu = st.mean, r = st.rstd;
      muRef[bi * S + s] = mu;
      muMag[bi * S + s] = st.meanAbs;
      rRef[bi * S + s] = r;
      for (int64_t j = 0; j < H; ++j) {
        double h = (xr[j] - mu) * r * in.w.data[j] + in.b.data[j];
        yRef[(bi * S + s) * H + j] = h * (1.0 + in.scale.data[bi * H + j]) + in.shift.data[bi * H + j];
        double hMag = (std::fabs(xr[j]) + std::fabs(mu)) * r * std::fabs(in.w.data[j]) + std::fabs(in.b.data[j]);
        yMag[(bi * S + s) * H + j] =
            hMag * (1.0 + std::fabs(in.scale.data[bi * H + j])) + std::fabs(in.shift.data[bi * H + j]);
      }
    }
  EXPECT_TRUE(near("y", y, yRef, c.T, yMag));
  EXPECT_TRUE(near("mean", mean, muRef, DType::F32, muMag));
  EXPECT_TRUE(near("rstd", rstd, rRef, DType::F32));
}

TEST_P(DitTest, Bwd) {
  const DitCase c = GetParam();
  uint32_t seed = ditSeed(2, c);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t B = c.B, S = c.S, H = c.H, rows = c.rows > 0 ? c.rows : 8, SB = cdiv(S, rows);
  DitInputs in(rng, c);
  HostArray dy = randomArray(rng, c.T, {B, S, H});
  HostArray mean = makeArray(DType::F32, {B, S}), rstd = makeArray(DType::F32, {B, S});
  for (int64_t row = 0; row < B * S; ++row) {
    const LnStats st = lnStats(&in.x.data[row * H], H, 1e-6);
    mean.data[row] = toF32(st.mean);
    rstd.data[row] = toF32(st.rstd);
  }
  HostArray dx = makeArray(c.T, {B, S, H});
  HostArray dscale = makeArray(c.T, {B, H}), dshift = makeArray(c.T, {B, H});
  HostArray dw = makeArray(c.T, {H}), db = makeArray(c.T, {H});
  // One kernel: each CTA adds its column sums to accb[b]; the batch's last
  // CTA (by ticket) writes dscale and dshift and adds to acc; the last batch
  // writes dw and db. accb, acc and ticket start at zero and end there.
  HostArray accb = makeArray(DType::F32, {B, 2, H}), acc = makeArray(DType::F32, {2, H});
  HostArray ticket = makeArray(DType::I32, {B + 1});
  for (HostArray* a : {&accb, &acc, &ticket}) std::fill(a->data.begin(), a->data.end(), 0.0);
  const Compiled& bwd =
      compile("examples/dit_modulate.fnk", "dit_modulate_bwd", consts(c.T, {{"BLOCK_H", c.blockH}, {"SB", SB}}));
  ASSERT_TRUE(runKernel(bwd, {{"x", &in.x},
                              {"w", &in.w},
                              {"b", &in.b},
                              {"scale", &in.scale},
                              {"dy", &dy},
                              {"mean", &mean},
                              {"rstd", &rstd},
                              {"dx", &dx},
                              {"dscale", &dscale},
                              {"dshift", &dshift},
                              {"dw", &dw},
                              {"db", &db},
                              {"accb", &accb},
                              {"acc", &acc},
                              {"ticket", &ticket}}));
  for (HostArray* a : {&accb, &acc, &ticket})
    EXPECT_TRUE(std::all_of(a->data.begin(), a->data.end(), [](double v) { return v == 0.0; }));

  // xhat = (x - mean) * rstd, h = xhat * w + b, dh = dy * (1 + scale[b]), g = dh * w:
  // dx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat));
  // dscale[b] = sum_s dy * h, dshift[b] = sum_s dy, dw = sum_{b,s} dh * xhat, db = sum_{b,s} dh.
  std::vector<double> dxRef(B * S * H), dscaleRef(B * H, 0.0), dshiftRef(B * H, 0.0), dwRef(H, 0.0), dbRef(H, 0.0);
  std::vector<double> dxMag(B * S * H), dscaleMag(B * H, 0.0), dshiftMag(B * H, 0.0), dwMag(H, 0.0), dbMag(H, 0.0);
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t row = bi * S + s;
      const double mu = mean.data[row], r = rstd.data[row];
      std::vector<double> xhat(H), g(H), xhatMag(H);
      double sg = 0, sgx = 0, sgMag = 0, sgxMag = 0;
      for (int64_t j = 0; j < H; ++j) {
        xhat[j] = (in.x.data[row * H + j] - mu) * r;
        xhatMag[j] = (std::fabs(in.x.data[row * H + j]) + std::fabs(mu)) * r;
        double dyv = dy.data[row * H + j], dh = dyv * (1.0 + in.scale.data[bi * H + j]);
        g[j] = dh * in.w.data[j];
        sg += g[j];
        sgx += g[j] * xhat[j];
        sgMag += std::fabs(g[j]);
        sgxMag += std::fabs(g[j]) * xhatMag[j];
        double h = xhat[j] * in.w.data[j] + in.b.data[j];
        double hMag = xhatMag[j] * std::fabs(in.w.data[j]) + std::fabs(in.b.data[j]);
        dscaleRef[bi * H + j] += dyv * h;
        dscaleMag[bi * H + j] += std::fabs(dyv) * hMag;
        dshiftRef[bi * H + j] += dyv;
        dshiftMag[bi * H + j] += std::fabs(dyv);
        dwRef[j] += dh * xhat[j];
        dwMag[j] += std::fabs(dh) * xhatMag[j];
        dbRef[j] += dh;
        dbMag[j] += std::fabs(dh);
      }
      for (int64_t j = 0; j < H; ++j) {
        dxRef[row * H + j] = r * (g[j] - sg / H - xhat[j] * sgx / H);
        dxMag[row * H + j] = r * (std::fabs(g[j]) + sgMag / H + xhatMag[j] * sgxMag / H);
      }
    }
  EXPECT_TRUE(near("dx", dx, dxRef, c.T, dxMag));
  EXPECT_TRUE(near("dscale", dscale, dscaleRef, c.T, dscaleMag));
  EXPECT_TRUE(near("dshift", dshift, dshiftRef, c.T, dshiftMag));
  EXPECT_TRUE(near("dw", dw, dwRef, c.T, dwMag));
  EXPECT_TRUE(near("db", db, dbRef, c.T, dbMag));
}

INSTANTIATE_TEST_SUITE_P(Shapes, DitTest, ::testing::ValuesIn(ditCases()), ditName);

}  // namespace
}  // namespace fnk
