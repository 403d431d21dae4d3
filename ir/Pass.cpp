#include "ir/Pass.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "ir/Knobs.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/passes/CSE.h"
#include "ir/passes/Canonicalize.h"
#include "ir/passes/DCE.h"
#include "ir/passes/Layout.h"
#include "ir/passes/Schedule.h"
#include "ir/passes/Version.h"

#pragma GCC diagnostic error "-Wswitch"

namespace fnk::ir {

const std::vector<PassInfo>& allPasses() {
  static const std::vector<PassInfo> passes = {
      {"canonicalize", "fold constants and remove identities (x*1, x+0, same-type casts, double negation)",
       runCanonicalize},
      {"cse", "merge pure ops with equal kind, operands, attributes and result types", runCSE},
      {"dce", "remove pure ops whose results are unused", runDCE},
      {"schedule", "move pure ops that do not need a reduction's result above it when fewer values then live across it",
       runSchedule},
      {"version", "copy a kernel body for full tiles (N == BLOCK_N), where its `arange(0, BLOCK_N) < N` masks are true",
       runVersion},
      {"layout", "annotate tile-valued ops with their thread layout (blocked + vec, or uniform); GPU only", runLayout},
  };
  return passes;
}

const PassInfo* findPass(std::string_view name) {
  for (const PassInfo& p : allPasses())
    if (name == p.name) return &p;
  return nullptr;
}

namespace {

/// Runs passes one at a time with the pipeline's checks, printing and timing.
class PipelineRunner {
public:
  PipelineRunner(Module& m, DiagEngine& diags, const PipelineOptions& opts)
      : m_(m), diags_(diags), opts_(opts), out_(opts.dump ? *opts.dump : std::cerr) {}

  bool start() {
    if (!opts_.printAfter.empty() && !findPass(opts_.printAfter)) {
      diags_.error({}, "unknown pass '" + opts_.printAfter + "' in --print-after");
      return false;
    }
    if (opts_.verifyEach && !verify(m_, diags_)) {
      diags_.error({}, "input IR does not verify");
      return false;
    }
    return true;
  }

  bool run(const char* name) {
    if (failed_) return false;
    ran_.push_back(name);
    const PassInfo* p = findPass(name);
    auto t0 = std::chrono::steady_clock::now();
    bool ok = p && p->run(m_, diags_);
    times_.emplace_back(name, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!ok) {
      diags_.error({}, std::string("pass '") + name + "' failed");
      failed_ = true;
      return false;
    }
    if (opts_.verifyEach && !verify(m_, diags_)) {
      diags_.error({}, std::string("IR does not verify after pass '") + name + "'");
      failed_ = true;
      return false;
    }
    if (opts_.printAfter == name) {
      out_ << "// -----// IR after " << name << " //----- //\n";
      print(out_, m_);
    }
    return true;
  }

  bool finish() {
    // A pass that exists but is not in this pipeline printed nothing: say so.
    if (!failed_ && !opts_.printAfter.empty() &&
        std::find(ran_.begin(), ran_.end(), opts_.printAfter) == ran_.end())
      diags_.warning({}, "pass '" + opts_.printAfter + "' did not run in this pipeline, so --print-after printed nothing" +
                             (opts_.printAfter == "schedule" ? " (FNK_SCHEDULE=0 leaves it out)"
                              : opts_.printAfter == "version"  ? " (FNK_FULL_TILES=0 leaves it out)"
                              : opts_.printAfter == "layout" ? " (it runs with a GPU --emit; --pass=layout prints its result)"
                                                             : ""));
    if (opts_.timePasses) {
      double total = 0;
      char line[96];
      out_ << "===-- pass timing --===\n";
      for (const auto& [name, ms] : times_) {
        std::snprintf(line, sizeof line, "%10.3f ms  %s\n", ms, name.c_str());
        out_ << line;
        total += ms;
      }
      std::snprintf(line, sizeof line, "%10.3f ms  total\n", total);
      out_ << line;
    }
    return !failed_;
  }

private:
  Module& m_;
  DiagEngine& diags_;
  const PipelineOptions& opts_;
  std::ostream& out_;
  std::vector<std::pair<std::string, double>> times_;
  std::vector<std::string> ran_;
  bool failed_ = false;
};

}  // namespace

bool runPipeline(Module& m, DiagEngine& diags, const PipelineOptions& opts) {
  PipelineRunner p(m, diags, opts);
  if (!p.start()) return false;
  // Versioning on full tiles first, so that canonicalize folds the masks it
  // makes constant. On since backend v10 timed it on the H200: the padded
  // kernels 3-16% faster with full rows (the LayerNorm forward's masked form
  // 307 -> 286 us, the DiT forward 66.6 -> 64.5), the others within noise;
  // FNK_FULL_TILES=0 leaves it out.
  if (knob(Knob::FullTiles, true)) p.run("version");
  // Canonical forms first (ARCHITECTURE.md, decision 4): once x*1 is x and
  // constant arithmetic is folded, CSE can see that two computations agree.
  p.run("canonicalize");
  // CSE after canonicalize, because folding turns different-looking ops into
  // equal constants that CSE then merges.
  p.run("cse");
  // DCE last: canonicalize and CSE leave behind ops whose results lost their
  // last use (the inputs of folded arithmetic).
  p.run("dce");
  // Scheduling around reductions, on the cleaned-up IR (what CSE merged is
  // one value, what DCE removed is not live). On by default since backend v9
  // timed it (docs/perf-notes.md): rmsnorm_bwd_rows 13-17% faster at 512 to
  // 4096 columns, the other kernels it changes within 2%; FNK_SCHEDULE=0
  // leaves it out.
  if (knob(Knob::Schedule, true)) p.run("schedule");
  // Layout assignment last: it annotates every tile value that survives, so
  // it comes after the cleanups above and before any lowering. The backend
  // computes the same layouts itself; the annotations are for the reader
  // (--emit=ir and --print-after=layout with a GPU output).
  if (opts.layouts) p.run("layout");
  return p.finish();
}

bool runPass(Module& m, std::string_view name, DiagEngine& diags) {
  const PassInfo* p = findPass(name);
  if (!p) {
    diags.error({}, "unknown pass '" + std::string(name) + "'");
    return false;
  }
  // Passes assume verified IR; checking first keeps bad input from reaching them.
  if (!verify(m, diags)) return false;
  if (!p->run(m, diags)) return false;
  if (!verify(m, diags)) {
    diags.error({}, "IR does not verify after pass '" + std::string(name) + "'");
    return false;
  }
  return true;
}

bool isPure(OpKind k) {
  switch (k) {
    case OpKind::Constant: case OpKind::ProgramId: case OpKind::NumPrograms: case OpKind::Dim:
    case OpKind::Arange: case OpKind::Broadcast: case OpKind::ExpandDims: case OpKind::Reshape:
    case OpKind::Transpose: case OpKind::Cast: case OpKind::Add: case OpKind::Sub: case OpKind::Mul:
    case OpKind::Div: case OpKind::Rem: case OpKind::Pow: case OpKind::Min: case OpKind::Max:
    case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Shl: case OpKind::Shr:
    case OpKind::Cmp: case OpKind::Neg: case OpKind::Not: case OpKind::Exp: case OpKind::Exp2:
    case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Tanh:
    case OpKind::Erf: case OpKind::Sigmoid: case OpKind::Abs: case OpKind::Select: case OpKind::Fma:
    case OpKind::Reduce: case OpKind::ClusterRank: case OpKind::ClusterSize:
      return true;
    // Memory, allocation (each alloc is a distinct buffer), synchronization,
    // collectives (every CTA of the cluster must take part), control flow and
    // terminators.
    case OpKind::Load: case OpKind::Store: case OpKind::Prefetch: case OpKind::Atomic: case OpKind::SharedAlloc: case OpKind::Barrier:
    case OpKind::Fence: case OpKind::WaitGe: case OpKind::CopyAsync: case OpKind::AsyncWait: case OpKind::CopyBulk: case OpKind::BulkWait:
    case OpKind::StoreBulk: case OpKind::BulkStoreWait:
    case OpKind::ClusterSync: case OpKind::ClusterReduce: case OpKind::For: case OpKind::If:
    case OpKind::Yield: case OpKind::LaunchCheck: case OpKind::LaunchGrid: case OpKind::Return:
      return false;
  }
  return false;
}

Operation* insertBefore(Block& b, Block::OpList::iterator pos, std::unique_ptr<Operation> op) {
  // Block::append is the one way to set an op's parent; move it into place after.
  Operation* raw = b.append(std::move(op));
  b.ops().splice(pos, b.ops(), std::prev(b.ops().end()));
  return raw;
}

}  // namespace fnk::ir
