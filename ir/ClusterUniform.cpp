#include "ir/ClusterUniform.h"

#include <algorithm>
#include <unordered_set>

namespace fnk::ir {

namespace {

/// Which values can differ between the CTAs of one cluster ("varying").
class ClusterVarying {
public:
  explicit ClusterVarying(const Function& f) : cluster_(f.cluster()), ctas_(f.clusterCtas()) {}

  /// Marks the values of `blk` and its nested blocks; loop-carried values
  /// need a fixpoint, so it repeats until nothing changes.
  void run(const Block& blk) {
    do changed_ = false, visit(blk);
    while (changed_);
  }

  bool varying(const Value* v) const { return set_.count(v) != 0; }

private:
  void mark(const Value* v) { changed_ |= set_.insert(v).second; }

  bool anyVarying(const std::vector<Value*>& vs) const {
    return std::any_of(vs.begin(), vs.end(), [&](const Value* v) { return varying(v); });
  }

  void visit(const Block& blk) {
    for (const auto& op : blk.ops()) {
      switch (op->kind()) {
        case OpKind::ClusterRank: mark(op->result()); break;
        case OpKind::ProgramId: {
          const int64_t axis = op->attrs().getInt("axis", 0);
          if (axis >= 0 && axis < static_cast<int64_t>(cluster_.size()) && cluster_[axis] > 1) mark(op->result());
          break;
        }
        case OpKind::ClusterReduce:  // the same value in every CTA of the cluster, or of its rank group
          if (op->attrs().getInt("group", ctas_) < ctas_) mark(op->result());
          break;
        case OpKind::For: visitFor(*op); break;
        case OpKind::If: visitIf(*op); break;
        default:
          if (anyVarying(op->operands()))
            for (unsigned i = 0; i < op->numResults(); ++i) mark(op->result(i));
      }
    }
  }

  // scf.for lo, hi, step, init...: the induction variable varies with the
  // bounds; a carried value and the loop's result with its init, its yield,
  // or the trip count (the bounds).
  void visitFor(const Operation& op) {
    if (op.numRegions() < 1 || op.region(0).empty() || op.numOperands() < 3) return;  // not well formed
    const Block& body = op.region(0).front();
    const bool bounds = varying(op.operand(0)) || varying(op.operand(1)) || varying(op.operand(2));
    if (bounds && body.numArguments() > 0) mark(body.argument(0));
    const Operation* yield = body.terminator();
    for (unsigned i = 1; i < body.numArguments(); ++i) {
      const unsigned k = i - 1;
      const bool v = bounds || (3 + k < op.numOperands() && varying(op.operand(3 + k))) ||
                     (yield && k < yield->numOperands() && varying(yield->operand(k)));
      if (v) {
        mark(body.argument(i));
        if (k < op.numResults()) mark(op.result(k));
      }
    }
    visit(body);
  }

  // scf.if cond: a result varies with the condition or with what either
  // branch yields for it.
  void visitIf(const Operation& op) {
    const bool cond = op.numOperands() > 0 && varying(op.operand(0));
    for (unsigned r = 0; r < op.numRegions(); ++r) {
      if (op.region(r).empty()) continue;
      const Block& b = op.region(r).front();
      visit(b);
      const Operation* yield = b.terminator();
      for (unsigned k = 0; k < op.numResults(); ++k)
        if (cond || (yield && k < yield->numOperands() && varying(yield->operand(k)))) mark(op.result(k));
    }
  }

  const std::vector<int64_t> cluster_;
  const int64_t ctas_;
  std::unordered_set<const Value*> set_;
  bool changed_ = false;
};

/// Reports the cluster barriers of `blk` reached under `guard` (the innermost
/// scf.if or scf.for whose condition or bounds vary), recursing into regions.
void report(const Block& blk, const ClusterVarying& cv, const Operation* guard, DiagEngine& diags, bool& ok) {
  for (const auto& op : blk.ops()) {
    const OpKind k = op->kind();
    if (guard && (k == OpKind::ClusterSync || k == OpKind::ClusterReduce)) {
      const char* what = k == OpKind::ClusterSync ? "cluster.sync()" : "cluster.reduce";
      Diagnostic& d = diags.error(op->loc(), std::string(what) +
                                                 " is not reached alike by every CTA of the cluster: a CTA that skips "
                                                 "it, or reaches it a different number of times, leaves the others "
                                                 "waiting forever on the GPU");
      DiagEngine::note(d, guard->loc(),
                       guard->kind() == OpKind::If
                           ? "this condition depends on the CTA's place in its cluster (cluster.rank(), "
                             "program_id along an axis the cluster spans, or a cluster.reduce over part of it)"
                           : "this loop's bounds depend on the CTA's place in its cluster (cluster.rank(), "
                             "program_id along an axis the cluster spans, or a cluster.reduce over part of it)");
      ok = false;
      continue;
    }
    const Operation* inner = guard;
    if (!inner && k == OpKind::If && op->numOperands() > 0 && cv.varying(op->operand(0))) inner = op.get();
    if (!inner && k == OpKind::For && op->numOperands() >= 3 &&
        (cv.varying(op->operand(0)) || cv.varying(op->operand(1)) || cv.varying(op->operand(2))))
      inner = op.get();
    for (unsigned r = 0; r < op->numRegions(); ++r)
      if (!op->region(r).empty()) report(op->region(r).front(), cv, inner, diags, ok);
  }
}

}  // namespace

bool checkClusterUniform(const Function& f, DiagEngine& diags) {
  if (f.body.empty() || f.cluster().size() != 3 || f.clusterCtas() <= 1) return true;
  const Block& body = f.body.front();
  if (!anyOp(body, [](const Operation& o) {
        return o.kind() == OpKind::ClusterSync || o.kind() == OpKind::ClusterReduce;
      }))
    return true;
  ClusterVarying cv(f);
  cv.run(body);
  bool ok = true;
  report(body, cv, nullptr, diags, ok);
  return ok;
}

}  // namespace fnk::ir
