// The IR verifier: a well-formed kernel passes, and every rule has a case
// that breaks it and expects its message.
#include <gtest/gtest.h>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

namespace fnk::ir {
namespace {

// A module of one kernel with these parameters (among them %n: i32), a grid
// of n CTAs, and its body open: body ops are spliced in at line 9; the launch
// region uses %0, so printed numbering in the body starts at %1.
std::string kernelHead(const std::string& params) {
  return "module @m\n\nkernel @k(" + params + ")\n"
         "launch {\n  %0 = tile.constant {value = 1} : i32\n  func.launch_grid %n, %0, %0\n}\nbody {\n";
}

const std::string kHead =
    kernelHead("%x: tensor<f32>[N, 64], %y: out tensor<f32>[N, 64], %n: i32, %f: f32, %c: i1");

struct Checked {
  SourceManager sm;
  std::unique_ptr<DiagEngine> diags;
  std::unique_ptr<Module> module;
  bool ok = false;

  std::string errors() const {
    std::string s;
    for (const Diagnostic& d : diags->diagnostics()) {
      LineCol lc = sm.lineCol(d.range.begin);
      s += std::to_string(lc.line) + ":" + std::to_string(lc.col) + ": " + d.message + "\n";
    }
    return s;
  }
};

std::unique_ptr<Checked> check(const std::string& text) {
  auto c = std::make_unique<Checked>();
  int id = c->sm.addBuffer("test.fnkir", text);
  c->diags = std::make_unique<DiagEngine>(c->sm);
  c->module = parseIR(c->sm, id, *c->diags);
  EXPECT_TRUE(c->module) << c->diags->str();
  if (c->module) c->ok = verify(*c->module, *c->diags);
  EXPECT_EQ(c->ok, !c->diags->hasErrors());
  return c;
}

std::unique_ptr<Checked> checkBody(const std::string& ops, const std::string& tail = "  func.return\n}\n") {
  return check(kHead + ops + tail);
}

// Body ops spliced after `head` that the verifier accepts.
void expectAccepted(const std::string& head, const std::string& ops) {
  auto r = check(head + ops + "  func.return\n}\n");
  EXPECT_TRUE(r->ok) << r->errors();
}

// A rule's cases: body ops spliced after `head`, each rejected with its
// located message.
struct Rejected {
  const char* ops;
  const char* error;
};
void expectRejected(const std::string& head, std::initializer_list<Rejected> cases) {
  for (const Rejected& c : cases) {
    SCOPED_TRACE(c.ops);
    auto r = check(head + c.ops + "  func.return\n}\n");
    EXPECT_FALSE(r->ok);
    EXPECT_NE(r->errors().find(std::string(c.error) + "\n"), std::string::npos) << r->errors();
  }
}

TEST(IRVerifier, AcceptsAWellFormedKernel) {
  auto c = checkBody(
      "  %1 = tile.program_id {axis = 0} : i32\n"
      "  %2 = tile.arange {end = 64, start = 0} : tile<i32>[64]\n"
      "  %3 = tile.expand_dims %2 {axis = 1} : tile<i32>[64, 1]\n"
      "  %4 = tile.expand_dims %2 {axis = 0} : tile<i32>[1, 64]\n"
      "  %5 = tile.constant {value = true} : tile<i1>[64, 64]\n"
      "  %6 = tile.load %x, %3, %4, %5, %f {mask = true, other = true} : tile<f32>[64, 64]\n"
      "  %7 = tile.transpose %6 {perm = [1, 0]} : tile<f32>[64, 64]\n"
      "  %8 = tile.reduce %7 {axis = 1, kind = \"sum\"} : tile<f32>[64]\n"
      "  %9 = tile.reshape %8 : tile<f32>[8, 8]\n"
      "  %10 = tile.exp %9 : tile<f32>[8, 8]\n"
      "  %11 = tile.dim %x {axis = 0} : i32\n"
      "  %12 = tile.constant {value = 0} : i32\n"
      "  %13 = scf.for %12, %11, %n, %f : f32 {\n"
      "    ^bb(%14: i32, %15: f32):\n"
      "    %16 = tile.add %15, %f : f32\n"
      "    scf.yield %16\n"
      "  }\n"
      "  %17 = scf.if %c : f32 {\n    scf.yield %13\n  } {\n    scf.yield %f\n  }\n"
      "  %18 = gpu.shared_alloc : shared<f32>[64, 64]\n"
      "  tile.store %18, %3, %4, %6\n"
      "  %19 = tile.broadcast %17 : tile<f32>[64, 64]\n"
      "  tile.store %y, %3, %4, %19, %5 {mask = true}\n"
      "  %20 = gpu.cluster_reduce %10 {kind = \"max\"} : tile<f32>[8, 8]\n"
      "  gpu.cluster_sync\n");
  EXPECT_TRUE(c->ok) << c->errors();
}

struct Case {
  const char* ops;    // body ops, starting on line 9
  const char* error;  // the first error, "line:col: message"
};

TEST(IRVerifier, ReportsEachRule) {
  const Case cases[] = {
      // arity from Ops.def
      {"  %1 = tile.add %f : f32\n", "9:3: tile.add expects 2 operands, got 1"},
      {"  tile.add %f, %f\n", "9:3: tile.add expects 1 result, got 0"},
      {"  tile.store %y\n", "9:3: tile.store expects at least 2 operands, got 1"},
      {"  %1 = scf.if %c : f32 {\n    scf.yield %f\n  }\n", "9:3: scf.if expects 2 regions, got 1"},
      // elementwise binary
      {"  %1 = tile.constant {value = 1.0} : tile<f32>[128]\n  %2 = tile.constant {value = 1.0} : tile<bf16>[128]\n"
       "  %3 = tile.add %1, %2 : tile<f32>[128]\n",
       "11:3: tile.add operands have different types: tile<f32>[128] and tile<bf16>[128]"},
      {"  %1 = tile.mul %f, %f : f64\n", "9:3: tile.mul result type f64 does not match expected f32"},
      {"  %1 = tile.sub %x, %x : f32\n", "9:3: tile.sub operand 0 must be a tile or scalar, got tensor<f32>[N, 64]"},
      {"  %1 = tile.and %f, %f : f32\n", "9:3: tile.and needs integer operands, got f32"},
      // cmp
      {"  %1 = tile.cmp %f, %f {pred = \"lt\"} : f32\n", "9:3: tile.cmp result type f32 does not match expected i1"},
      {"  %1 = tile.cmp %f, %f {pred = \"lte\"} : i1\n",
       "9:3: tile.cmp has invalid pred 'lte' (expected one of lt, le, gt, ge, eq, ne)"},
      {"  %1 = tile.cmp %f, %f : i1\n", "9:3: tile.cmp needs a 'pred' attribute (one of lt, le, gt, ge, eq, ne)"},
      // unary
      {"  %1 = tile.exp %n : i32\n", "9:3: tile.exp needs a float operand, got i32"},
      {"  %1 = tile.not %f : f32\n", "9:3: tile.not needs an integer or i1 operand, got f32"},
      {"  %1 = tile.neg %f : i32\n", "9:3: tile.neg result type i32 does not match expected f32"},
      // select, fma
      {"  %1 = tile.select %n, %f, %f : f32\n", "9:3: tile.select condition must be an i1 tile, got i32"},
      {"  %1 = tile.constant {value = true} : tile<i1>[4]\n  %2 = tile.select %1, %f, %f : f32\n",
       "10:3: tile.select condition tile<i1>[4] must have the shape of f32"},
      {"  %1 = tile.fma %f, %f, %n : f32\n", "9:3: tile.fma operands have different types: f32 and i32"},
      // shape ops
      {"  %1 = tile.cast %f : tile<f16>[2]\n", "9:3: tile.cast result tile<f16>[2] must have the operand's shape (f32)"},
      {"  %1 = tile.constant {value = 0} : tile<i32>[3]\n  %2 = tile.broadcast %1 : tile<i32>[4]\n",
       "10:3: tile.broadcast cannot broadcast tile<i32>[3] to tile<i32>[4]"},
      {"  %1 = tile.broadcast %f : tile<f16>[4]\n",
       "9:3: tile.broadcast result tile<f16>[4] must be a tile of the operand's dtype f32"},
      {"  %1 = tile.expand_dims %f {axis = 1} : tile<f32>[1]\n", "9:3: tile.expand_dims axis 1 is out of range for f32"},
      {"  %1 = tile.expand_dims %f {axis = 0} : tile<f32>[2]\n",
       "9:3: tile.expand_dims result type tile<f32>[2] does not match expected tile<f32>[1]"},
      {"  %1 = tile.arange {end = 8, start = 0} : tile<i32>[8]\n  %2 = tile.reshape %1 : tile<i32>[3, 3]\n",
       "10:3: tile.reshape cannot reshape tile<i32>[8] to tile<i32>[3, 3]: element counts differ"},
      {"  %1 = tile.constant {value = 0} : tile<i32>[2, 3]\n  %2 = tile.transpose %1 {perm = [0, 0]} : tile<i32>[2, 2]\n",
       "10:3: tile.transpose perm [0, 0] is not a permutation of the axes of tile<i32>[2, 3]"},
      // reduce
      {"  %1 = tile.reduce %f {axis = 0, kind = \"sum\"} : f32\n", "9:3: tile.reduce axis 0 is out of range for f32"},
      {"  %1 = tile.constant {value = 0} : tile<i32>[2]\n  %2 = tile.reduce %1 {axis = 0, kind = \"prod\"} : i32\n",
       "10:3: tile.reduce has invalid kind 'prod' (expected one of sum, max, min)"},
      {"  %1 = tile.constant {value = 0} : tile<i32>[2, 3]\n  %2 = tile.reduce %1 {axis = 0, kind = \"max\"} : tile<i32>[2]\n",
       "10:3: tile.reduce result tile<i32>[2] must have shape 3 (tile<i32>[2, 3] without axis 0)"},
      // arange, dim, grid queries
      {"  %1 = tile.arange {end = 4, start = 4} : tile<i32>[1]\n", "9:3: tile.arange start 4 must be less than end 4"},
      {"  %1 = tile.arange {end = 4, start = 1} : tile<i32>[4]\n",
       "9:3: tile.arange result type tile<i32>[4] does not match expected tile<i32>[3]"},
      {"  %1 = tile.dim %f {axis = 0} : i32\n", "9:3: tile.dim operand must be a tensor, got f32"},
      {"  %1 = tile.dim %x {axis = 2} : i32\n", "9:3: tile.dim axis 2 is out of range for tensor<f32>[N, 64]"},
      {"  %1 = tile.dim %x {axis = 0} : i64\n", "9:3: tile.dim result must be i32, got i64"},
      {"  %1 = tile.program_id {axis = 3} : i32\n", "9:3: tile.program_id axis 3 is not 0, 1 or 2"},
      {"  %1 = tile.num_programs {axis = 0} : f32\n", "9:3: tile.num_programs result must be i32, got f32"},
      {"  %1 = tile.program_id : i32\n", "9:3: tile.program_id needs an integer 'axis' attribute"},
      // constant
      {"  %1 = tile.constant {value = true} : f32\n", "9:3: tile.constant value true does not match result type f32"},
      {"  %1 = tile.constant {value = 1.5} : i32\n", "9:3: tile.constant value 1.5 does not match result type i32"},
      {"  %1 = tile.constant {value = 1} : i1\n", "9:3: tile.constant value 1 does not match result type i1"},
      {"  %1 = tile.constant : i32\n", "9:3: tile.constant needs a 'value' attribute"},
      // load
      {"  %1 = tile.load %f, %n : f32\n", "9:3: tile.load operand 0 must be a tensor or shared buffer, got f32"},
      {"  %1 = tile.load %x, %n : f32\n",
       "9:3: tile.load of tensor<f32>[N, 64] expects 3 operands (memory, indices), got 2"},
      {"  %1 = tile.load %x, %n, %f : f32\n", "9:3: tile.load index 1 must be an i32 or i64 tile, got f32"},
      {"  %1 = tile.load %x, %n, %n, %n {mask = true} : f32\n", "9:3: tile.load mask must be an i1 tile, got i32"},
      {"  %1 = tile.load %x, %n, %n, %n {other = true} : f32\n",
       "9:3: tile.load other value must be a f32 tile, got i32"},
      {"  %1 = tile.load %x, %n, %n : f16\n", "9:3: tile.load result type f16 does not match expected f32"},
      {"  %1 = tile.arange {end = 3, start = 0} : tile<i32>[3]\n  %2 = tile.arange {end = 4, start = 0} : tile<i32>[4]\n"
       "  %3 = tile.load %x, %1, %2 : tile<f32>[3]\n",
       "11:3: tile.load index shapes 3 and 4 do not broadcast"},
      {"  %1 = tile.arange {end = 4, start = 0} : tile<i32>[4]\n  %2 = tile.load %x, %1, %n : f32\n",
       "10:3: tile.load result type f32 does not match expected tile<f32>[4]"},
      // store
      {"  tile.store %x, %n, %n, %f\n", "9:3: store to input tensor '%x'"},
      // atomic: a store's operands, its value's type as the result, kind add
      {"  %1 = tile.atomic %x, %n, %n, %f {kind = \"add\"} : f32\n", "9:3: store to input tensor '%x'"},
      {"  %1 = tile.atomic %y, %n, %n, %f {kind = \"add\"} : i32\n",
       "9:3: tile.atomic result type i32 does not match expected f32"},
      {"  %1 = tile.atomic %y, %n, %n, %f {kind = \"max\"} : f32\n",
       "9:3: tile.atomic has invalid kind 'max' (expected one of add)"},
      {"  tile.store %y, %n, %n, %n\n",
       "9:3: tile.store value i32 must be f32 (dtype of out tensor<f32>[N, 64], shape of the indices)"},
      {"  %1 = tile.constant {value = 0.0} : tile<f32>[2]\n  tile.store %y, %n, %n, %1\n",
       "10:3: tile.store value tile<f32>[2] must be f32 (dtype of out tensor<f32>[N, 64], shape of the indices)"},
      {"  tile.store %y, %n, %n, %f, %n {mask = true}\n", "9:3: tile.store mask must be an i1 tile, got i32"},
      {"  tile.store %y, %n, %n, %f, %c\n",
       "9:3: tile.store of out tensor<f32>[N, 64] expects 4 operands (memory, indices, value), got 5"},
      // scf.for
      {"  scf.for %f, %n, %n {\n    ^bb(%1: i32):\n    scf.yield\n  }\n", "9:3: scf.for lower bound must be i32, got f32"},
      {"  %1 = scf.for %n, %n, %n : f32 {\n    ^bb(%2: i32):\n    scf.yield\n  }\n",
       "9:3: scf.for has 0 initial values but 1 results"},
      {"  %1 = scf.for %n, %n, %n, %f : f32 {\n    ^bb(%2: i32):\n    scf.yield %f\n  }\n",
       "9:3: scf.for body takes 1 arguments, expected 2 (induction variable and carried values)"},
      {"  %1 = scf.for %n, %n, %n, %f : i32 {\n    ^bb(%2: i32, %3: f32):\n    scf.yield %3\n  }\n",
       "9:3: scf.for carried value 0 has initial type f32, result type i32 and body argument type f32"},
      {"  %1 = scf.for %n, %n, %n, %f : f32 {\n    ^bb(%2: i32, %3: f32):\n    scf.yield %2\n  }\n",
       "9:3: scf.for body yields i32 as value 0, expected f32"},
      {"  %1 = scf.for %n, %n, %n, %f : f32 {\n    ^bb(%2: i32, %3: f32):\n    %4 = tile.neg %3 : f32\n  }\n",
       "9:3: scf.for body must end in scf.yield"},
      {"  %1 = scf.for %n, %n, %n, %f : f32 {\n    ^bb(%2: f32, %3: f32):\n    scf.yield %3\n  }\n",
       "9:3: scf.for induction variable must be i32, got f32"},
      // scf.if
      {"  scf.if %n {\n    scf.yield\n  } {\n    scf.yield\n  }\n", "9:3: scf.if condition must be an i1 scalar, got i32"},
      {"  %1 = scf.if %c : f32 {\n    scf.yield %f\n  } {\n    scf.yield %n\n  }\n",
       "9:3: scf.if else region yields i32 as value 0, expected f32"},
      {"  scf.if %c {\n    scf.yield\n  } {\n  }\n", "9:3: scf.if else region must end in scf.yield"},
      // terminators and placement
      {"  func.return\n  %1 = tile.neg %f : f32\n", "9:3: func.return must be the last op of its block"},
      {"  scf.if %c {\n    func.return\n  } {\n    scf.yield\n  }\n", "10:5: func.return must end a kernel's body region"},
      // gpu ops
      {"  %1 = gpu.cluster_reduce %f {kind = \"avg\"} : f32\n",
       "9:3: gpu.cluster_reduce has invalid kind 'avg' (expected one of sum, max, min)"},
      {"  %1 = gpu.shared_alloc : tile<f32>[4]\n", "9:3: gpu.shared_alloc result must be a shared buffer, got tile<f32>[4]"},
      {"  %1 = gpu.cluster_rank : i64\n", "9:3: gpu.cluster_rank result must be i32, got i64"},
      // types
      {"  %1 = tile.constant {value = 0} : tile<i32>[0]\n",
       "9:3: tile.constant result type tile<i32>[0] has a non-positive dimension"},
      {"  %1 = tile.constant {value = 0} : tile<i32>[65536, 65536]\n",
       "9:3: tile.constant result type tile<i32>[65536, 65536] has more than 2^31 elements"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.ops);
    auto r = check(kHead + std::string(c.ops) + "  func.return\n}\n");
    if (!r->module) continue;
    // Errors of enclosing ops may come first; the rule's own must be there.
    std::string errs = r->errors();
    EXPECT_NE(errs.find(std::string(c.error) + "\n"), std::string::npos) << errs;
  }
}

TEST(IRVerifier, AtomicsAddToFewDtypes) {
  const std::string head =
      kernelHead("%y: out tensor<f32>[N], %h: out tensor<bf16>[N], %n: i32, %f: f32, %b: bf16");
  expectAccepted(head, "  %1 = tile.atomic %y, %n, %f {kind = \"add\"} : f32\n  gpu.fence\n");
  auto bad = check(head + "  %1 = tile.atomic %h, %n, %b {kind = \"add\"} : bf16\n  func.return\n}\n");
  EXPECT_FALSE(bad->ok);
  EXPECT_NE(bad->errors().find("9:3: tile.atomic adds to i32, u32, i64, f32 or f64 memory, not out tensor<bf16>[N]\n"),
            std::string::npos)
      << bad->errors();
}

TEST(IRVerifier, PrefetchesGlobalTensorsOnly) {
  const std::string head =
      kernelHead("%x: tensor<f32>[N], %n: i32") +
      "  %1 = gpu.shared_alloc : shared<f32>[64]\n  %2 = tile.arange {start = 0, end = 64} : tile<i32>[64]\n"
      "  %3 = tile.arange {start = 0, end = 32} : tile<i32>[32]\n  %4 = tile.constant {value = true} : i1\n";
  expectAccepted(head, "  tile.prefetch %x, %2\n  tile.prefetch %x, %2, %4 {mask = true}\n");
  expectRejected(head, {
      {"  tile.prefetch %1, %2\n", "13:3: tile.prefetch prefetches global tensors only, got shared<f32>[64]"},
      {"  tile.prefetch %x, %2, %3\n", "13:3: tile.prefetch of tensor<f32>[N] expects 2 operands (memory, indices), got 3"},
      {"  tile.prefetch %x, %2, %3 {mask = true}\n", "13:3: tile.prefetch mask must be an i1 tile, got tile<i32>[32]"},
  });
}

TEST(IRVerifier, WaitGeOnOneElementOfAGlobalIntTensor) {
  const std::string head =
      kernelHead("%c: tensor<i32>[N], %f: tensor<f32>[N], %n: i32") +
      "  %1 = gpu.shared_alloc : shared<i32>[64]\n  %2 = tile.arange {start = 0, end = 64} : tile<i32>[64]\n"
      "  %3 = tile.constant {value = 0} : i32\n  %4 = tile.constant {value = 1} : i64\n";
  expectAccepted(head, "  gpu.wait_ge %c, %3, %n\n");
  expectRejected(head, {
      {"  gpu.wait_ge %1, %3, %n\n", "13:3: gpu.wait_ge waits on a global tensor, got shared<i32>[64]"},
      {"  gpu.wait_ge %f, %3, %n\n", "13:3: gpu.wait_ge waits on i32 or u32 memory, not tensor<f32>[N]"},
      {"  gpu.wait_ge %c, %2, %n\n", "13:3: gpu.wait_ge waits on one element: its indices must be scalars, not of shape [64]"},
      {"  gpu.wait_ge %c, %3, %4\n", "13:3: gpu.wait_ge value i64 must be a scalar i32"},
      {"  gpu.wait_ge %c, %3\n", "13:3: gpu.wait_ge of tensor<i32>[N] expects 3 operands (memory, indices, value), got 2"},
  });
  // Not in a clustered kernel: its CTAs run as one grid at once.
  std::string clustered = head;
  clustered.replace(clustered.find(")\nlaunch"), 1, ") {cluster = [2, 1, 1]}");
  auto r = check(clustered + "  gpu.wait_ge %c, %3, %n\n  func.return\n}\n");
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->errors().find("13:3: gpu.wait_ge in a kernel launched in clusters of 2 CTAs"), std::string::npos)
      << r->errors();
}

TEST(IRVerifier, CopyAsyncFromATensorIntoSharedMemory) {
  const std::string head =
      kernelHead("%x: tensor<f32>[N], %h: tensor<bf16>[N], %n: i32") +
      "  %1 = gpu.shared_alloc : shared<f32>[64]\n  %2 = tile.arange {start = 0, end = 64} : tile<i32>[64]\n";
  expectAccepted(head, "  tile.copy_async %1, %x, %2, %2 {mask = false}\n  gpu.async_wait {pending = 0}\n");
  expectRejected(head, {
      {"  tile.copy_async %1, %h, %2, %2 {mask = false}\n",
       "11:3: tile.copy_async copies tensor<bf16>[N] into shared<f32>[64]: dtypes differ"},
      {"  tile.copy_async %x, %x, %2, %2 {mask = false}\n",
       "11:3: tile.copy_async destination must be a shared buffer, got tensor<f32>[N]"},
      {"  tile.copy_async %1, %x, %2 {mask = false}\n",
       "11:3: tile.copy_async takes 4 operands (destination, source, 1 + 1 indices), got 3"},
      {"  gpu.async_wait {pending = 99}\n", "11:3: gpu.async_wait pending must be 0 to 63, got 99"},
  });
}

TEST(IRVerifier, CopyBulkMovesOneRunIntoASlot) {
  const std::string head =
      kernelHead("%x: tensor<f32>[M, N], %h: tensor<bf16>[M, N], %n: i32") +
      "  %1 = gpu.shared_alloc : shared<f32>[2, 64]\n  %2 = tile.arange {start = 0, end = 64} : tile<i32>[64]\n"
      "  %3 = tile.broadcast %n : tile<i32>[64]\n";
  expectAccepted(head, "  tile.copy_bulk %1, %x, %3, %2, %3, %2\n  gpu.bulk_wait %1, %n\n");
  expectRejected(head, {
      {"  tile.copy_bulk %1, %h, %3, %2, %3, %2\n",
       "12:3: tile.copy_bulk copies tensor<bf16>[M, N] into shared<f32>[2, 64]: dtypes differ"},
      {"  tile.copy_bulk %1, %x, %3, %2, %3\n",
       "12:3: tile.copy_bulk takes 6 operands (destination, source, 2 + 2 indices), got 5"},
      {"  %4 = tile.broadcast %3 : tile<i32>[2, 64]\n  tile.copy_bulk %1, %x, %4, %4, %4, %4\n",
       "13:3: tile.copy_bulk copies one 1-D run, not a tile of shape 2x64"},
      {"  gpu.bulk_wait %x, %n\n", "12:3: gpu.bulk_wait waits on a shared buffer, got tensor<f32>[M, N]"},
      {"  gpu.bulk_wait %1\n", "12:3: gpu.bulk_wait takes the buffer and 1 slot indices, got 0"},
      {"  gpu.bulk_wait %1, %2\n", "12:3: gpu.bulk_wait slot index 0 must be an i32 or i64 scalar, got tile<i32>[64]"},
  });
}

TEST(IRVerifier, StoreBulkMovesOneRunOutOfASlot) {
  const std::string head =
      kernelHead("%x: tensor<f32>[M, N], %y: out tensor<f32>[M, N], %h: out tensor<bf16>[M, N], %n: i32") +
      "  %1 = gpu.shared_alloc : shared<f32>[2, 64]\n  %2 = tile.arange {start = 0, end = 64} : tile<i32>[64]\n"
      "  %3 = tile.broadcast %n : tile<i32>[64]\n";
  expectAccepted(head, "  tile.store_bulk %y, %1, %3, %2, %3, %2\n  gpu.bulk_store_wait {pending = 0}\n");
  expectRejected(head, {
      {"  tile.store_bulk %1, %y, %3, %2, %3, %2\n",
       "12:3: tile.store_bulk destination must be a tensor, got shared<f32>[2, 64]"},
      {"  tile.store_bulk %y, %x, %3, %2, %3, %2\n",
       "12:3: tile.store_bulk source must be a shared buffer, got tensor<f32>[M, N]"},
      {"  tile.store_bulk %x, %1, %3, %2, %3, %2\n", "12:3: store to input tensor '%x'"},
      {"  tile.store_bulk %h, %1, %3, %2, %3, %2\n",
       "12:3: tile.store_bulk copies shared<f32>[2, 64] into out tensor<bf16>[M, N]: dtypes differ"},
      {"  %4 = tile.broadcast %3 : tile<i32>[2, 64]\n  tile.store_bulk %y, %1, %4, %4, %4, %4\n",
       "13:3: tile.store_bulk copies one 1-D run, not a tile of shape 2x64"},
      {"  gpu.bulk_store_wait {pending = 64}\n", "12:3: gpu.bulk_store_wait pending must be 0 to 63, got 64"},
  });
}

TEST(IRVerifier, ChecksKernelStructure) {
  // launch region without its terminator
  auto a = check("module @m\n\nkernel @k(%n: i32)\nlaunch {\n  %0 = tile.neg %n : i32\n}\nbody {\n  func.return\n}\n");
  EXPECT_EQ(a->errors(), "5:3: launch region of kernel '@k' must end in func.launch_grid\n");
  auto b = check("module @m\n\nkernel @k(%n: i32, %f: f32)\nlaunch {\n  func.launch_grid %n, %f, %n\n}\nbody {\n}\n");
  EXPECT_EQ(b->errors(),
            "5:3: func.launch_grid grid size 1 must be i32, got f32\n"
            "3:1: body region of kernel '@k' must end in func.return\n");
  auto c = check("module @m\n\nkernel @k(%s: shared<f32>[4]) {warps = 0}\nlaunch {\n}\nbody {\n}\n");
  EXPECT_NE(c->errors().find("3:1: parameter '%s' must be a tensor or a scalar, got shared<f32>[4]\n"
                             "3:1: kernel attribute 'warps' must be a positive integer, got 0\n"),
            std::string::npos)
      << c->errors();
  // A kernel with no parameters and these attributes: does the verifier's
  // report on them say `msg`?
  auto attrsReport = [](const std::string& attrs, const std::string& msg) -> ::testing::AssertionResult {
    const std::string errs = check("module @m\n\nkernel @k() {" + attrs + "}\nlaunch {\n}\nbody {\n}\n")->errors();
    if (errs.find(msg) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "'" << msg << "' not in: " << errs;
  };
  // launch(prefetch = D) travels as a kernel attribute: 0 to kMaxPrefetch.
  EXPECT_TRUE(attrsReport("prefetch = 9", "3:1: kernel attribute 'prefetch' must be an integer from 0 to 8, got 9\n"));
  EXPECT_TRUE(
      attrsReport("prefetch = \"two\"", "3:1: kernel attribute 'prefetch' must be an integer from 0 to 8, got two\n"));
  // launch(ctas_per_sm = K): 1 to kMaxCtasPerSm, K CTAs of its warps within the SM's 2048 threads.
  EXPECT_TRUE(attrsReport("ctas_per_sm = 3, warps = 32",
                          "3:1: kernel attribute 'ctas_per_sm' must be an integer from 1 to 32 whose CTAs fit the "
                          "SM's 2048 threads, got 3\n"));
  EXPECT_FALSE(attrsReport("ctas_per_sm = 2, warps = 32", "ctas_per_sm"));
  // launch(aligned_code = true): a bool.
  EXPECT_TRUE(attrsReport("aligned_code = 1", "3:1: kernel attribute 'aligned_code' must be a bool, got 1\n"));
  EXPECT_FALSE(attrsReport("aligned_code = true", "aligned_code"));
  auto d = check("module @m\n\nkernel @k()\nlaunch {\n  scf.yield\n}\nbody {\n  func.return\n}\n");
  EXPECT_EQ(d->errors().substr(0, d->errors().find('\n')), "5:3: scf.yield must be inside scf.for or scf.if");
}

// Cluster barriers every CTA of a cluster reaches alike (ClusterUniform.h):
// a cluster.reduce under a condition on the CTA's rank is reported at the
// reduce with a note at the scf.if; one steered by another cluster.reduce's
// result or by program_id along an unclustered axis is fine.
TEST(IRVerifier, ClusterBarriersReachedAlike) {
  auto kernel = [](const std::string& cond) {
    return "module @m\n\nkernel @k(%x: tensor<f32>[M]) {cluster = [2, 1, 1], warps = 4}\nlaunch {\n"
           "  %0 = tile.constant {value = 2} : i32\n  func.launch_grid %0, %0, %0\n}\nbody {\n"
           "  %1 = gpu.cluster_rank : i32\n  %2 = tile.program_id {axis = 1} : i32\n"
           "  %3 = tile.load %x, %2 : f32\n  %4 = gpu.cluster_reduce %3 {kind = \"sum\"} : f32\n"
           "  %5 = tile.constant {value = 0} : i32\n  %6 = tile.constant {value = 0.0} : f32\n" +
           cond +
           "  %8 = scf.if %7 : f32 {\n    %9 = gpu.cluster_reduce %3 {kind = \"max\"} : f32\n    scf.yield %9\n"
           "  } {\n    scf.yield %3\n  }\n  func.return\n}\n";
  };
  auto rank = check(kernel("  %7 = tile.cmp %1, %5 {pred = \"eq\"} : i1\n"));
  EXPECT_EQ(rank->errors(),
            "17:5: cluster.reduce is not reached alike by every CTA of the cluster: a CTA that skips it, or "
            "reaches it a different number of times, leaves the others waiting forever on the GPU\n");
  for (const char* uniform : {"  %7 = tile.cmp %4, %6 {pred = \"gt\"} : i1\n",   // a cluster.reduce's result
                              "  %7 = tile.cmp %2, %5 {pred = \"gt\"} : i1\n"}) {  // program_id(1): not clustered
    auto ok = check(kernel(uniform));
    EXPECT_EQ(ok->errors(), "") << uniform;
  }
}

TEST(IRVerifier, ChecksBuiltIR) {
  // Things the parser cannot produce: a use that does not dominate, a block
  // whose arguments disagree with the parameters.
  SourceManager sm;
  DiagEngine diags(sm);
  Module m;
  auto f = std::make_unique<Function>();
  f->name = "k";
  f->params.push_back({"n", Type::scalar(DType::I32)});
  Block& launch = f->launch.addBlock();
  Value* n = launch.addArgument(Type::scalar(DType::I32), "n");
  Builder b(&launch);
  b.create(OpKind::LaunchGrid, {}, {n, n, n}, {});
  Block& body = f->body.addBlock();
  body.addArgument(Type::scalar(DType::F32), "n");
  b.setInsertionBlock(&body);
  b.create(OpKind::Neg, {}, {n}, {n->type()});  // n lives in the launch region
  b.create(OpKind::Return, {}, {}, {});
  m.functions.push_back(std::move(f));
  EXPECT_FALSE(verify(m, diags));
  ASSERT_EQ(diags.diagnostics().size(), 2u);
  EXPECT_EQ(diags.diagnostics()[0].message, "body block argument 0 has type f32 but parameter '%n' is i32");
  EXPECT_EQ(diags.diagnostics()[1].message,
            "tile.neg uses %n, which is not defined before it in an enclosing block");
}

}  // namespace
}  // namespace fnk::ir
