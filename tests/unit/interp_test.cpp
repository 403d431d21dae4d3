// The interpreter against float64 references and its error paths. Kernels are
// built by hand with ir::Builder so these tests do not depend on the front end.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/interp/Grid.h"
#include "backend/interp/Interpreter.h"
#include "ir/IR.h"

namespace fnk {
namespace {

using ir::DType;
using ir::OpKind;
using ir::Type;
using ir::Value;
using interp::HostTensor;

Type tile(DType t, std::vector<int64_t> s = {}) { return Type::tile(t, std::move(s)); }

// Builds a kernel: parameters, a launch region and a body, one op at a time.
struct KernelBuilder {
  std::unique_ptr<ir::Function> fn = std::make_unique<ir::Function>();
  ir::Builder b;
  std::vector<Value*> launchArgs, args;  // one per parameter

  KernelBuilder(std::string name, std::vector<ir::Param> params) {
    fn->name = std::move(name);
    fn->params = std::move(params);
    ir::Block& lb = fn->launch.addBlock();
    ir::Block& bb = fn->body.addBlock();
    for (const auto& p : fn->params) {
      launchArgs.push_back(lb.addArgument(p.type, p.name));
      args.push_back(bb.addArgument(p.type, p.name));
    }
    b.setInsertionBlock(&bb);
  }
  // Ends the launch region with a grid of (gx, 1, 1) where gx comes from `makeGx`.
  template <class F>
  void launch(F makeGx) {
    ir::Builder lb(&fn->launchBlock());
    Value* gx = makeGx(lb);
    Value* one = lb.constant({}, tile(DType::I32), int64_t{1});
    lb.create(OpKind::LaunchGrid, {}, {gx, one, one}, {});
  }
  void launchConst(int64_t gx) {
    launch([&](ir::Builder& lb) { return lb.constant({}, tile(DType::I32), gx); });
  }
  Value* op(OpKind k, std::vector<Value*> operands, Type t, ir::AttrDict a = {}) {
    return b.create(k, {}, operands, {std::move(t)}, std::move(a))->result();
  }
  void stmt(OpKind k, std::vector<Value*> operands, ir::AttrDict a = {}) { b.create(k, {}, operands, {}, std::move(a)); }
  Value* cst(DType t, ir::Attr v, std::vector<int64_t> shape = {}) { return b.constant({}, tile(t, shape), v); }
  Value* pid() { return op(OpKind::ProgramId, {}, tile(DType::I32), attrs({{"axis", int64_t{0}}})); }
  Value* arange(int64_t n) {
    return op(OpKind::Arange, {}, tile(DType::I32, {n}), attrs({{"start", int64_t{0}}, {"end", n}}));
  }
  void finish() { stmt(OpKind::Return, {}); }

  static ir::AttrDict attrs(std::vector<std::pair<std::string, ir::Attr>> kv) {
    ir::AttrDict d;
    for (auto& [k, v] : kv) d.set(k, v);
    return d;
  }
};

ir::Param tensorParam(std::string name, DType t, std::vector<std::string> dims, bool out = false) {
  return {std::move(name), Type::tensor(t, std::move(dims), out)};
}

HostTensor makeTensor(DType t, std::vector<int64_t> shape, double fill = 0) {
  HostTensor h;
  h.dtype = t;
  h.shape = std::move(shape);
  h.data.assign(static_cast<size_t>(h.numElements()), fill);
  return h;
}

// y[m, :] = x[m, :] * w / sqrt(mean(x[m, :]^2) + eps), one row per CTA,
// the row loaded as one BLOCK-wide tile with the automatic bounds mask.
std::unique_ptr<ir::Function> buildRmsNorm(int64_t block) {
  KernelBuilder k("rmsnorm", {tensorParam("x", DType::F32, {"M", "N"}), tensorParam("w", DType::F32, {"N"}),
                              tensorParam("y", DType::F32, {"M", "N"}, true), {"eps", Type::scalar(DType::F32)}});
  k.launch([&](ir::Builder& lb) {
    return lb.create(OpKind::Dim, {}, {k.launchArgs[0]}, {tile(DType::I32)}, KernelBuilder::attrs({{"axis", int64_t{0}}}))
        ->result();
  });
  Value *x = k.args[0], *w = k.args[1], *y = k.args[2], *eps = k.args[3];
  Type row = tile(DType::F32, {block});
  Value* m = k.pid();
  Value* cols = k.arange(block);
  Value* xv = k.op(OpKind::Load, {x, m, cols}, row);
  Value* sq = k.op(OpKind::Mul, {xv, xv}, row);
  Value* ss = k.op(OpKind::Reduce, {sq}, tile(DType::F32), KernelBuilder::attrs({{"axis", int64_t{0}}, {"kind", std::string("sum")}}));
  Value* n = k.op(OpKind::Dim, {x}, tile(DType::I32), KernelBuilder::attrs({{"axis", int64_t{1}}}));
  Value* nf = k.op(OpKind::Cast, {n}, tile(DType::F32));
  Value* mean = k.op(OpKind::Div, {ss, nf}, tile(DType::F32));
  Value* r = k.op(OpKind::Rsqrt, {k.op(OpKind::Add, {mean, eps}, tile(DType::F32))}, tile(DType::F32));
  Value* rb = k.op(OpKind::Broadcast, {r}, row);
  Value* wv = k.op(OpKind::Load, {w, cols}, row);
  Value* out = k.op(OpKind::Mul, {k.op(OpKind::Mul, {xv, rb}, row), wv}, row);
  k.stmt(OpKind::Store, {y, m, cols, out});
  k.finish();
  return std::move(k.fn);
}

TEST(Interp, RmsNormMatchesFloat64Reference) {
  auto fn = buildRmsNorm(1024);
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> dist(0.1, 2.0);
  for (int64_t M : {1, 3})
    for (int64_t N : {1, 7, 1000}) {
      HostTensor x = makeTensor(DType::F32, {M, N}), w = makeTensor(DType::F32, {N}), y = makeTensor(DType::F32, {M, N});
      // Random non-zero data with random signs, already f32 values.
      for (double& v : x.data) v = static_cast<float>(dist(rng) * (rng() % 2 ? 1 : -1));
      for (double& v : w.data) v = static_cast<float>(dist(rng));
      const double eps = static_cast<float>(1e-5);
      Status s = interp::run(*fn, {&x, &w, &y, eps}, {.poisonOutputs = true});
      ASSERT_TRUE(s) << s.message();
      for (int64_t i = 0; i < M; ++i) {
        double ss = 0;
        for (int64_t j = 0; j < N; ++j) ss += x.data[i * N + j] * x.data[i * N + j];
        double r = 1.0 / std::sqrt(ss / N + eps);
        for (int64_t j = 0; j < N; ++j) {
          double want = x.data[i * N + j] * r * w.data[j];
          ASSERT_NEAR(y.data[i * N + j], want, 4e-7 * std::fabs(want)) << "M=" << M << " N=" << N << " at " << i << "," << j;
          ASSERT_EQ(y.data[i * N + j], static_cast<float>(y.data[i * N + j])) << "result is not an f32 value";
        }
      }
    }
}

TEST(Interp, RmsNorm64x4096IsFast) {
  auto fn = buildRmsNorm(4096);
  HostTensor x = makeTensor(DType::F32, {64, 4096}, 0.5), w = makeTensor(DType::F32, {4096}, 2.0),
             y = makeTensor(DType::F32, {64, 4096});
  auto t0 = std::chrono::steady_clock::now();
  Status s = interp::run(*fn, {&x, &w, &y, 1e-6});
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(s) << s.message();
  EXPECT_NEAR(y.data[12345], 0.5 * 2.0 / std::sqrt(0.25 + 1e-6), 1e-6);
  EXPECT_LT(sec, 2.0) << "64x4096 rmsnorm took " << sec << " s";  // loose bound: the machine is shared
}

TEST(Interp, ArgumentMismatchesNameTheParameter) {
  auto fn = buildRmsNorm(1024);
  HostTensor x = makeTensor(DType::F32, {2, 1024}), w = makeTensor(DType::F32, {1024}), y = makeTensor(DType::F32, {2, 1024});
  HostTensor xb = makeTensor(DType::BF16, {2, 1024}), x1 = makeTensor(DType::F32, {1024}), w1000 = makeTensor(DType::F32, {1000});

  Status s = interp::run(*fn, {&xb, &w, &y, 1e-5});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "argument 'x': dtype is bf16 but the parameter is tensor<f32>[M, N]");
  s = interp::run(*fn, {&x1, &w, &y, 1e-5});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "argument 'x': shape [1024] has rank 1 but the parameter is tensor<f32>[M, N]");
  s = interp::run(*fn, {&x, &w1000, &y, 1e-5});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "argument 'w': dim N is 1000 here but 1024 from 'x'");
  s = interp::run(*fn, {&x, &w, &y});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "expected 4 arguments, got 3");
  s = interp::run(*fn, {&x, 1.0, &y, 1e-5});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "argument 'w': expected a tensor<f32>[N], got a scalar");
  s = interp::run(*fn, {&x, &w, &y, &x});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "argument 'eps': expected a scalar f32, got a tensor");
  HostTensor bad = x;
  bad.data.pop_back();
  s = interp::run(*fn, {&bad, &w, &y, 1e-5});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "argument 'x': shape [2, 1024] needs 2048 elements but the data has 2047");
}

TEST(Interp, LiteralDimsMustMatch) {
  KernelBuilder k("lit", {tensorParam("x", DType::F32, {"4"})});
  k.launchConst(1);
  k.finish();
  HostTensor x = makeTensor(DType::F32, {5});
  Status s = interp::run(*k.fn, {&x});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "argument 'x': dim 0 is 5 but the parameter tensor<f32>[4] requires 4");
}

TEST(Interp, MaskedLoadWithOther) {
  // y[i] = i < 5 ? x[i] : -1 for i in [0, 8), with x of 6 elements: index 5 is
  // masked off, 6 and 7 are out of bounds; both give `other`.
  KernelBuilder k("masked", {tensorParam("x", DType::F32, {"N"}), tensorParam("y", DType::F32, {"8"}, true)});
  k.launchConst(1);
  Type t8 = tile(DType::F32, {8});
  Value* i = k.arange(8);
  Value* mask = k.op(OpKind::Cmp, {i, k.cst(DType::I32, int64_t{5}, {8})}, tile(DType::I1, {8}),
                     KernelBuilder::attrs({{"pred", std::string("lt")}}));
  Value* other = k.cst(DType::F32, -1.0);  // a scalar, broadcast by the load
  Value* v = k.op(OpKind::Load, {k.args[0], i, mask, other}, t8,
                  KernelBuilder::attrs({{"mask", true}, {"other", true}}));
  k.stmt(OpKind::Store, {k.args[1], i, v});
  k.finish();
  HostTensor x = makeTensor(DType::F32, {6}), y = makeTensor(DType::F32, {8});
  for (int j = 0; j < 6; ++j) x.data[j] = 10 + j;
  Status s = interp::run(*k.fn, {&x, &y});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(y.data, (std::vector<double>{10, 11, 12, 13, 14, -1, -1, -1}));
}

TEST(Interp, ForLoopCarriesValues) {
  // acc = 0.5; for i in [0, 10) step 3: acc += i  ->  18.5; and a second
  // carried value counting iterations.
  KernelBuilder k("loop", {tensorParam("y", DType::F32, {"2"}, true)});
  k.launchConst(1);
  Value* lo = k.cst(DType::I32, int64_t{0});
  Value* hi = k.cst(DType::I32, int64_t{10});
  Value* step = k.cst(DType::I32, int64_t{3});
  Value* acc0 = k.cst(DType::F32, 0.5);
  Value* cnt0 = k.cst(DType::I32, int64_t{0});
  ir::Operation* loop = k.b.create(OpKind::For, {}, {lo, hi, step, acc0, cnt0}, {tile(DType::F32), tile(DType::I32)});
  ir::Block& body = loop->region(0).addBlock();
  Value* iv = body.addArgument(tile(DType::I32), "i");
  Value* acc = body.addArgument(tile(DType::F32), "acc");
  Value* cnt = body.addArgument(tile(DType::I32), "cnt");
  {
    ir::Builder bb(&body);
    Value* ivf = bb.create(OpKind::Cast, {}, {iv}, {tile(DType::F32)})->result();
    Value* acc2 = bb.create(OpKind::Add, {}, {acc, ivf}, {tile(DType::F32)})->result();
    Value* cnt2 = bb.create(OpKind::Add, {}, {cnt, bb.constant({}, tile(DType::I32), int64_t{1})}, {tile(DType::I32)})->result();
    bb.create(OpKind::Yield, {}, {acc2, cnt2}, {});
  }
  Value* zero = k.cst(DType::I32, int64_t{0});
  Value* one = k.cst(DType::I32, int64_t{1});
  k.stmt(OpKind::Store, {k.args[0], zero, loop->result(0)});
  k.stmt(OpKind::Store, {k.args[0], one, k.op(OpKind::Cast, {loop->result(1)}, tile(DType::F32))});
  k.finish();
  HostTensor y = makeTensor(DType::F32, {2});
  Status s = interp::run(*k.fn, {&y});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(y.data, (std::vector<double>{18.5, 4}));
}

TEST(Interp, ForLoopRejectsNonPositiveStep) {
  KernelBuilder k("loop0", {});
  k.launchConst(1);
  Value* z = k.cst(DType::I32, int64_t{0});
  ir::Operation* loop = k.b.create(OpKind::For, {}, {z, k.cst(DType::I32, int64_t{4}), z}, {});
  ir::Block& body = loop->region(0).addBlock();
  body.addArgument(tile(DType::I32), "i");
  ir::Builder(&body).create(OpKind::Yield, {}, {}, {});
  k.finish();
  Status s = interp::run(*k.fn, {});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("scf.for: step is 0; it must be positive"), std::string::npos) << s.message();
}

// Builds `scf.if cond { yield a } else { yield b }` with constant branches.
Value* ifConst(KernelBuilder& k, Value* cond, double a, double b) {
  ir::Operation* op = k.b.create(OpKind::If, {}, {cond}, {tile(DType::F32)});
  for (int r = 0; r < 2; ++r) {
    ir::Builder bb(&op->region(r).addBlock());
    bb.create(OpKind::Yield, {}, {bb.constant({}, tile(DType::F32), r == 0 ? a : b)}, {});
  }
  return op->result();
}

TEST(Interp, IfElseYieldsTheTakenBranch) {
  KernelBuilder k("branch", {tensorParam("y", DType::F32, {"G"}, true)});
  k.launch([&](ir::Builder& lb) {
    return lb.create(OpKind::Dim, {}, {k.launchArgs[0]}, {tile(DType::I32)}, KernelBuilder::attrs({{"axis", int64_t{0}}}))
        ->result();
  });
  Value* p = k.pid();
  Value* isZero = k.op(OpKind::Cmp, {p, k.cst(DType::I32, int64_t{0})}, tile(DType::I1), KernelBuilder::attrs({{"pred", std::string("eq")}}));
  k.stmt(OpKind::Store, {k.args[0], p, ifConst(k, isZero, 10, 20)});
  k.finish();
  HostTensor y = makeTensor(DType::F32, {3});
  Status s = interp::run(*k.fn, {&y});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(y.data, (std::vector<double>{10, 20, 20}));
}

TEST(Interp, SharedBufferStoreThenLoadAndPoison) {
  // Write s[0..4) = 2*i, then read all 8 elements reversed: the unwritten half
  // reads as the poison NaN.
  KernelBuilder k("smem", {tensorParam("y", DType::F32, {"8"}, true)});
  k.launchConst(1);
  Value* smem = k.op(OpKind::SharedAlloc, {}, Type::shared(DType::F32, {8}));
  Value* i4 = k.arange(4);
  Value* v = k.op(OpKind::Mul, {k.op(OpKind::Cast, {i4}, tile(DType::F32, {4})), k.cst(DType::F32, 2.0, {4})}, tile(DType::F32, {4}));
  k.stmt(OpKind::Store, {smem, i4, v});
  k.stmt(OpKind::Barrier, {});
  Value* i8 = k.arange(8);
  Value* rev = k.op(OpKind::Sub, {k.cst(DType::I32, int64_t{7}, {8}), i8}, tile(DType::I32, {8}));
  Value* r = k.op(OpKind::Load, {smem, rev}, tile(DType::F32, {8}));
  k.stmt(OpKind::Store, {k.args[0], i8, r});
  k.finish();
  HostTensor y = makeTensor(DType::F32, {8});
  Status s = interp::run(*k.fn, {&y});
  ASSERT_TRUE(s) << s.message();
  for (int j = 0; j < 4; ++j) EXPECT_TRUE(std::isnan(y.data[j])) << j;
  EXPECT_EQ(std::vector<double>(y.data.begin() + 4, y.data.end()), (std::vector<double>{6, 4, 2, 0}));
}

TEST(Interp, ClusterReduceGivesEveryCtaTheSum) {
  // Grid 4 in clusters of 2: CTA p contributes p + 1; each gets its cluster's
  // sum, and stores its cluster rank.
  KernelBuilder k("creduce", {tensorParam("y", DType::F32, {"4"}, true), tensorParam("rank", DType::I32, {"4"}, true)});
  k.fn->attrs.set("cluster", std::vector<int64_t>{2, 1, 1});
  k.launchConst(4);
  Value* p = k.pid();
  Value* v = k.op(OpKind::Add, {k.op(OpKind::Cast, {p}, tile(DType::F32)), k.cst(DType::F32, 1.0)}, tile(DType::F32));
  Value* sum = k.op(OpKind::ClusterReduce, {v}, tile(DType::F32), KernelBuilder::attrs({{"kind", std::string("sum")}}));
  Value* mx = k.op(OpKind::ClusterReduce, {v}, tile(DType::F32), KernelBuilder::attrs({{"kind", std::string("max")}}));
  k.stmt(OpKind::ClusterSync, {});
  k.stmt(OpKind::Store, {k.args[0], p, k.op(OpKind::Add, {sum, mx}, tile(DType::F32))});
  k.stmt(OpKind::Store, {k.args[1], p, k.op(OpKind::ClusterRank, {}, tile(DType::I32))});
  k.finish();
  HostTensor y = makeTensor(DType::F32, {4}), rank = makeTensor(DType::I32, {4});
  for (int rep = 0; rep < 20; ++rep) {  // repeat: thread interleavings vary
    Status s = interp::run(*k.fn, {&y, &rank});
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(y.data, (std::vector<double>{3 + 2, 3 + 2, 7 + 4, 7 + 4}));
    EXPECT_EQ(rank.data, (std::vector<double>{0, 1, 0, 1}));
  }
}

// Runs `fn` on another thread and fails (rather than hangs) if it does not finish.
Status runWithTimeout(const ir::Function& fn, std::vector<interp::Arg> args) {
  auto done = std::make_shared<std::promise<Status>>();
  auto fut = done->get_future();
  std::thread([&fn, args, done] { done->set_value(interp::run(fn, args)); }).detach();
  if (fut.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "the interpreter hung";
    std::abort();  // the detached thread still refers to fn
  }
  return fut.get();
}

TEST(Interp, ClusterBarrierOnlyRankZeroReachesIsAnError) {
  KernelBuilder k("deadlock", {});
  k.fn->attrs.set("cluster", std::vector<int64_t>{2, 1, 1});
  k.launchConst(2);
  Value* r = k.op(OpKind::ClusterRank, {}, tile(DType::I32));
  Value* isZero = k.op(OpKind::Cmp, {r, k.cst(DType::I32, int64_t{0})}, tile(DType::I1), KernelBuilder::attrs({{"pred", std::string("eq")}}));
  ir::Operation* iff = k.b.create(OpKind::If, {}, {isZero}, {});
  {
    ir::Builder t(&iff->region(0).addBlock());
    t.create(OpKind::ClusterSync, {}, {}, {});
    t.create(OpKind::Yield, {}, {}, {});
    ir::Builder(&iff->region(1).addBlock()).create(OpKind::Yield, {}, {}, {});
  }
  k.finish();
  for (int rep = 0; rep < 20; ++rep) {
    Status s = runWithTimeout(*k.fn, {});
    ASSERT_FALSE(s);
    EXPECT_EQ(s.message(),
              "CTA (0, 0, 0): gpu.cluster_sync: cluster barrier reached by 1 of 2 CTAs; "
              "CTA rank 1 of the cluster returned without reaching it");
  }
}

TEST(Interp, FailingCtaReleasesClusterWaitersAndIsReported) {
  // Rank 1 divides by zero before the sync that rank 0 waits at.
  KernelBuilder k("divfail", {tensorParam("x", DType::I32, {"2"})});
  k.fn->attrs.set("cluster", std::vector<int64_t>{2, 1, 1});
  k.launchConst(2);
  Value* p = k.pid();
  Value* xv = k.op(OpKind::Load, {k.args[0], p}, tile(DType::I32));
  k.op(OpKind::Div, {k.cst(DType::I32, int64_t{7}), xv}, tile(DType::I32));
  k.stmt(OpKind::ClusterSync, {});
  k.finish();
  HostTensor x = makeTensor(DType::I32, {2}, 1);
  x.data[1] = 0;
  Status s = runWithTimeout(*k.fn, {&x});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "CTA (1, 0, 0): tile.div: integer division by zero");
}

TEST(Interp, ClusterMustDivideGrid) {
  KernelBuilder k("cl", {});
  k.fn->attrs.set("cluster", std::vector<int64_t>{2, 1, 1});
  k.launchConst(3);
  k.finish();
  Status s = interp::run(*k.fn, {});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "cluster [2, 1, 1] does not divide grid [3, 1, 1]");
}

TEST(Interp, IntDivisionByZeroAndRemainder) {
  KernelBuilder k("idiv", {tensorParam("a", DType::I32, {"N"}), tensorParam("b", DType::I32, {"N"}),
                           tensorParam("q", DType::I32, {"N"}, true), tensorParam("r", DType::I32, {"N"}, true)});
  k.launchConst(1);
  Value* i = k.arange(4);
  Type t = tile(DType::I32, {4});
  Value* av = k.op(OpKind::Load, {k.args[0], i}, t);
  Value* bv = k.op(OpKind::Load, {k.args[1], i}, t);
  k.stmt(OpKind::Store, {k.args[2], i, k.op(OpKind::Div, {av, bv}, t)});
  k.stmt(OpKind::Store, {k.args[3], i, k.op(OpKind::Rem, {av, bv}, t)});
  k.finish();
  HostTensor a = makeTensor(DType::I32, {4}), b = makeTensor(DType::I32, {4});
  HostTensor q = makeTensor(DType::I32, {4}), r = makeTensor(DType::I32, {4});
  a.data = {7, -7, 7, -2147483648.0};
  b.data = {2, 2, -2, -1};
  Status s = interp::run(*k.fn, {&a, &b, &q, &r});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(q.data, (std::vector<double>{3, -3, -3, -2147483648.0}));  // truncation; INT_MIN / -1 wraps
  EXPECT_EQ(r.data, (std::vector<double>{1, -1, 1, 0}));
  b.data[2] = 0;
  s = interp::run(*k.fn, {&a, &b, &q, &r});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "CTA (0, 0, 0): tile.div: integer division by zero");
}

// y = op(x) elementwise over 8 elements, with chosen dtypes.
std::vector<double> unaryKernel(OpKind kind, DType in, DType out, std::vector<double> xs) {
  KernelBuilder k("u", {tensorParam("x", in, {"8"}), tensorParam("y", out, {"8"}, true)});
  k.launchConst(1);
  Value* i = k.arange(8);
  Value* x = k.op(OpKind::Load, {k.args[0], i}, tile(in, {8}));
  k.stmt(OpKind::Store, {k.args[1], i, k.op(kind, {x}, tile(out, {8}))});
  k.finish();
  HostTensor xt = makeTensor(in, {8}), yt = makeTensor(out, {8});
  xt.data = xs;
  Status s = interp::run(*k.fn, {&xt, &yt});
  EXPECT_TRUE(s) << s.message();
  return yt.data;
}

TEST(Interp, CastTruncatesSaturatesAndRounds) {
  const double nan = NAN;
  EXPECT_EQ(unaryKernel(OpKind::Cast, DType::F32, DType::I32, {2.7, -2.7, 3e9, -3e9, nan, 0.5, -0.5, 100}),
            (std::vector<double>{2, -2, 2147483647, -2147483648.0, 0, 0, 0, 100}));
  EXPECT_EQ(unaryKernel(OpKind::Cast, DType::F32, DType::U8, {-1, 300, 255.9, 1, 0, 2, 3, 4}),
            (std::vector<double>{0, 255, 255, 1, 0, 2, 3, 4}));
  EXPECT_EQ(unaryKernel(OpKind::Cast, DType::I32, DType::I8, {127, 128, 255, 256, -129, -1, 0, 1}),
            (std::vector<double>{127, -128, -1, 0, 127, -1, 0, 1}));
  EXPECT_EQ(unaryKernel(OpKind::Cast, DType::F32, DType::I1, {0, -0.0, 0.5, nan, 2, 0, 1, 0}),
            (std::vector<double>{0, 0, 1, 1, 1, 0, 1, 0}));
  // 1 + 2^-8 is a bf16 tie between 1 and 1 + 2^-7: to even gives 1.
  EXPECT_EQ(unaryKernel(OpKind::Cast, DType::F32, DType::BF16, {1 + 1.0 / 256, 1 + 3.0 / 256, 0, 0, 0, 0, 0, 0})[0], 1.0);
}

TEST(Interp, UnaryOpsRoundToTheirDType) {
  auto y = unaryKernel(OpKind::Sqrt, DType::F32, DType::F32, {2, 4, 0, 1, 9, 16, 0.25, 100});
  EXPECT_EQ(y[0], static_cast<double>(std::sqrt(2.0f)));
  auto n = unaryKernel(OpKind::Neg, DType::I8, DType::I8, {-128, 1, 0, 127, 5, 6, 7, 8});
  EXPECT_EQ(n[0], -128);  // wraps
  auto sg = unaryKernel(OpKind::Sigmoid, DType::F32, DType::F32, {0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(sg[0], 0.5);
}

TEST(Interp, ReduceAndTranspose) {
  // x is 2x3; y = reduce(transpose(x), axis 1, max) = column max (3 values),
  // z = reduce(x, axis 0, sum) over the original.
  KernelBuilder k("rt", {tensorParam("x", DType::F32, {"2", "3"}), tensorParam("y", DType::F32, {"3"}, true),
                         tensorParam("z", DType::F32, {"3"}, true)});
  k.launchConst(1);
  Value* r = k.op(OpKind::ExpandDims, {k.arange(2)}, tile(DType::I32, {2, 1}), KernelBuilder::attrs({{"axis", int64_t{1}}}));
  Value* c = k.op(OpKind::ExpandDims, {k.arange(3)}, tile(DType::I32, {1, 3}), KernelBuilder::attrs({{"axis", int64_t{0}}}));
  Value* xv = k.op(OpKind::Load, {k.args[0], r, c}, tile(DType::F32, {2, 3}));
  Value* xt = k.op(OpKind::Transpose, {xv}, tile(DType::F32, {3, 2}), KernelBuilder::attrs({{"perm", std::vector<int64_t>{1, 0}}}));
  Value* mx = k.op(OpKind::Reduce, {xt}, tile(DType::F32, {3}), KernelBuilder::attrs({{"axis", int64_t{1}}, {"kind", std::string("max")}}));
  Value* sm = k.op(OpKind::Reduce, {xv}, tile(DType::F32, {3}), KernelBuilder::attrs({{"axis", int64_t{0}}, {"kind", std::string("sum")}}));
  Value* i = k.arange(3);
  k.stmt(OpKind::Store, {k.args[1], i, mx});
  k.stmt(OpKind::Store, {k.args[2], i, sm});
  k.finish();
  HostTensor x = makeTensor(DType::F32, {2, 3}), y = makeTensor(DType::F32, {3}), z = makeTensor(DType::F32, {3});
  x.data = {1, 5, NAN, 4, 2, 3};
  Status s = interp::run(*k.fn, {&x, &y, &z});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(y.data, (std::vector<double>{4, 5, 3}));  // max ignores NaN like fmax
  EXPECT_EQ(z.data[0], 5);
  EXPECT_EQ(z.data[1], 7);
  EXPECT_TRUE(std::isnan(z.data[2]));
}

TEST(Interp, GridZeroRunsNothingAndPoisonShows) {
  KernelBuilder k("nothing", {tensorParam("y", DType::F32, {"2"}, true), {"g", Type::scalar(DType::I32)}});
  k.launch([&](ir::Builder&) { return k.launchArgs[1]; });
  k.stmt(OpKind::Store, {k.args[0], k.arange(2), k.cst(DType::F32, 1.0, {2})});
  k.finish();
  HostTensor y = makeTensor(DType::F32, {2}, 7);
  ASSERT_TRUE(interp::run(*k.fn, {&y, 0.0}));
  EXPECT_EQ(y.data, (std::vector<double>{7, 7}));
  Status s = interp::run(*k.fn, {&y, -1.0});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "grid dim 0 is -1");
  ASSERT_TRUE(interp::run(*k.fn, {&y, 1.0}));
  EXPECT_EQ(y.data, (std::vector<double>{1, 1}));
  ASSERT_TRUE(interp::run(*k.fn, {&y, 0.0}, {.poisonOutputs = true}));
  EXPECT_TRUE(std::isnan(y.data[0]) && std::isnan(y.data[1]));
}

TEST(Interp, ProgramIdInLaunchRegionIsAnError) {
  KernelBuilder k("badlaunch", {});
  k.launch([&](ir::Builder& lb) {
    return lb.create(OpKind::ProgramId, {}, {}, {tile(DType::I32)}, KernelBuilder::attrs({{"axis", int64_t{0}}}))->result();
  });
  k.finish();
  Status s = interp::run(*k.fn, {});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "launch region: tile.program_id: cannot run in the launch region "
                         "(it runs on the host, before any CTA)");
}

// GridTurns, the turns of a grid whose CTAs wait for each other: CTA 0 waits
// for a flag CTA 2 sets; CTA 1 has nothing to wait for. The turns go 0, 1,
// 2, then back to 0, which finds the flag set; no deadlock.
TEST(GridTurns, PassesTheTurnOnUntilTheWaitIsMet) {
  interp::detail::GridTurns turns(3);
  int flag = 0;  // only the CTA holding the turn touches it
  std::vector<std::string> order;
  Status waited = Status::ok();
  std::vector<std::thread> ctas;
  ctas.emplace_back([&] {
    turns.begin(0);
    order.push_back("0 looks");
    for (bool fruitless = false; flag < 1; fruitless = true)
      if (Status s = turns.pass(0, fruitless, [] { return std::string("CTA 0 waits for the flag"); }); !s) {
        waited = s;  // a wrong deadlock: stop waiting, so the test fails instead of hanging
        break;
      }
    order.push_back("0 goes on");
    turns.end(0);
  });
  ctas.emplace_back([&] {
    turns.begin(1);
    order.push_back("1 runs");
    turns.end(1);
  });
  ctas.emplace_back([&] {
    turns.begin(2);
    flag = 1;
    order.push_back("2 sets the flag");
    turns.end(2);
  });
  for (auto& t : ctas) t.join();
  EXPECT_TRUE(waited) << waited.message();
  EXPECT_EQ(order, (std::vector<std::string>{"0 looks", "1 runs", "2 sets the flag", "0 goes on"}));
  EXPECT_EQ(turns.why(), "");
}

// Every CTA waits for something none of them will do: each one's wait ends
// in the deadlock error (once every CTA has looked and found nothing changed)
// instead of blocking forever.
TEST(GridTurns, EveryCtaWaitingIsADeadlock) {
  for (int n : {1, 2, 5}) {
    interp::detail::GridTurns turns(n);
    std::vector<Status> results(static_cast<size_t>(n), Status::ok());
    std::vector<std::thread> ctas;
    for (int r = 0; r < n; ++r)
      ctas.emplace_back([&, r] {
        turns.begin(r);
        for (bool fruitless = false;; fruitless = true)
          if (Status s = turns.pass(r, fruitless, [r] { return "CTA " + std::to_string(r) + " waits"; }); !s) {
            results[static_cast<size_t>(r)] = s;
            break;
          }
        turns.end(r);
      });
    for (auto& t : ctas) t.join();
    for (int r = 0; r < n; ++r) {
      EXPECT_FALSE(results[static_cast<size_t>(r)]);
      EXPECT_TRUE(turns.deadlocked(r));
    }
    EXPECT_NE(turns.why().find("deadlock: every CTA still running waits for memory no CTA will change; CTA "),
              std::string::npos)
        << turns.why();
  }
}

}  // namespace
}  // namespace fnk
