#include "ir/passes/DCE.h"

#include "ir/Pass.h"

namespace fnk::ir {

namespace {

bool hasOnlyPureOps(const Operation& op) {
  for (unsigned r = 0; r < op.numRegions(); ++r)
    for (const auto& b : op.region(r).blocks())
      for (const auto& inner : b->ops())
        if (!(isPure(inner->kind()) || inner->kind() == OpKind::Yield ||
              ((inner->kind() == OpKind::For || inner->kind() == OpKind::If) && hasOnlyPureOps(*inner))))
          return false;
  return true;
}

bool isDead(const Operation& op) {
  for (unsigned i = 0; i < op.numResults(); ++i)
    if (op.result(i)->hasUses()) return false;
  if (isPure(op.kind())) return true;
  // A loop runs a bounded number of times, so an effect-free one without used
  // results computes nothing anyone sees.
  return (op.kind() == OpKind::For || op.kind() == OpKind::If) && hasOnlyPureOps(op);
}

/// One backward sweep: users come after their operands' definitions, so
/// walking last to first frees whole chains at once. Nested regions are
/// cleaned before their op is judged.
bool sweepBlock(Block& b) {
  bool changed = false;
  auto it = b.ops().end();
  while (it != b.ops().begin()) {
    --it;
    Operation& op = **it;
    for (unsigned r = 0; r < op.numRegions(); ++r)
      for (auto& nb : op.region(r).blocks()) changed |= sweepBlock(*nb);
    if (isDead(op)) {
      it = b.erase(it);
      changed = true;
    }
  }
  return changed;
}

}  // namespace

bool runDCE(Module& m, DiagEngine&) {
  for (auto& f : m.functions)
    for (Region* r : {&f->launch, &f->body})
      for (auto& b : r->blocks())
        while (sweepBlock(*b)) {
        }
  return true;
}

}  // namespace fnk::ir
