#include "ir/passes/Schedule.h"

#include <algorithm>
#include <cstdint>
#include <cstddef>
#include <iterator>
#include <numeric>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/Pass.h"

namespace fnk::ir {

namespace {

/// What keeping `v` live costs: its tile's elements (1 for a scalar); memory
/// references (tensors, shared buffers) are addresses, live anyway.
int64_t weight(const Value* v) {
  if (!v->type().isTile()) return 0;
  int64_t n = 1;
  for (int64_t d : v->type().shape) n *= d;
  return n;
}

/// The op of block `b` that is `op` or holds it in a region; null when `op`
/// is not inside `b`.
const Operation* ancestorIn(const Block& b, const Operation* op) {
  while (op && op->parentBlock() != &b) {
    const Block* pb = op->parentBlock();
    const Region* r = pb ? pb->parentRegion() : nullptr;
    op = r ? r->parentOp() : nullptr;
  }
  return op;
}

bool isReduction(const Operation& op) {
  return op.kind() == OpKind::Reduce || op.kind() == OpKind::ClusterReduce;
}

bool movable(const Operation& op) { return isPure(op.kind()) && op.numRegions() == 0 && !isReduction(op); }

/// Disjoint sets over candidate indices: connected candidates move together.
struct Groups {
  std::vector<size_t> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t find(size_t i) { return parent[i] == i ? i : parent[i] = find(parent[i]); }
  void join(size_t a, size_t b) { parent[find(a)] = find(b); }
};

class Scheduler {
public:
  explicit Scheduler(Block& b) : b_(b) {}

  /// Moves the best subset of the candidates after the reduction at `r`
  /// above it.
  void at(Block::OpList::iterator r) {
    std::unordered_map<const Operation*, size_t> pos;
    size_t n = 0;
    for (const auto& op : b_.ops()) pos[op.get()] = n++;
    const size_t rPos = pos.at(r->get());

    std::unordered_set<const Value*> before;  // defined in the block ahead of the reduction
    for (unsigned a = 0; a < b_.numArguments(); ++a) before.insert(b_.argument(a));
    for (auto it = b_.ops().begin(); it != r; ++it)
      for (unsigned i = 0; i < (*it)->numResults(); ++i) before.insert((*it)->result(i));

    // Candidates: pure ops after the reduction whose operands are all
    // available before it (from ahead in the block, from outside it, or from
    // an earlier candidate).
    std::vector<Block::OpList::iterator> cand;
    std::unordered_map<const Value*, size_t> candOf;
    for (auto it = std::next(r); it != b_.ops().end(); ++it) {
      const Operation& op = **it;
      if (!movable(op)) continue;
      bool ok = true;
      for (const Value* v : op.operands()) {
        const bool inBlock = v->definingOp() ? v->definingOp()->parentBlock() == &b_ : v->ownerBlock() == &b_;
        ok = ok && (!inBlock || before.count(v) || candOf.count(v));
      }
      if (!ok) continue;
      for (unsigned i = 0; i < op.numResults(); ++i) candOf[op.result(i)] = cand.size();
      cand.push_back(it);
    }
    if (cand.empty()) return;

    Groups groups(cand.size());
    for (size_t c = 0; c < cand.size(); ++c)
      for (const Value* v : (*cand[c])->operands())
        if (auto f = candOf.find(v); f != candOf.end()) groups.join(c, f->second);
    std::vector<size_t> roots;  // one per group
    std::vector<size_t> groupOf(cand.size());
    for (size_t c = 0; c < cand.size(); ++c) {
      const size_t root = groups.find(c);
      auto f = std::find(roots.begin(), roots.end(), root);
      groupOf[c] = static_cast<size_t>(f - roots.begin());
      if (f == roots.end()) roots.push_back(root);
    }

    // Tile elements live across the reduction when the groups in `chosen`
    // move above it: values from ahead in the block or from a moved op with
    // a use after the reduction that does not move. Each value's uses after
    // the reduction are found once: as the candidate groups they fall in, or
    // as a use outside every candidate (which keeps it live whatever moves).
    struct Uses {
      int64_t weight = 0;
      bool pinned = false;           // used after the reduction outside the candidates
      std::vector<size_t> groups;    // the candidates' groups that use it after the reduction
      size_t definedBy = SIZE_MAX;   // its candidate's group, for a candidate's result
    };
    std::unordered_map<const Operation*, size_t> candIndex;
    for (size_t c = 0; c < cand.size(); ++c) candIndex[cand[c]->get()] = c;
    std::vector<Uses> uses;
    auto collect = [&](const Value* v, size_t definedBy) {
      Uses u;
      u.weight = weight(v);
      u.definedBy = definedBy;
      for (const Operation* user : v->users()) {
        const Operation* a = ancestorIn(b_, user);
        if (!a || pos.at(a) <= rPos) continue;
        if (auto f = candIndex.find(a); f != candIndex.end()) u.groups.push_back(groupOf[f->second]);
        else u.pinned = true;
      }
      if (u.weight > 0 && (u.pinned || !u.groups.empty())) uses.push_back(std::move(u));
    };
    for (const Value* v : before) collect(v, SIZE_MAX);
    for (size_t c = 0; c < cand.size(); ++c)
      for (unsigned i = 0; i < (*cand[c])->numResults(); ++i) collect((*cand[c])->result(i), groupOf[c]);
    auto cost = [&](const std::vector<bool>& chosen) {
      int64_t total = 0;
      for (const Uses& u : uses) {
        // a candidate's result is live across only if its op moves
        if (u.definedBy != SIZE_MAX && !chosen[u.definedBy]) continue;
        bool live = u.pinned;
        for (size_t g : u.groups) live = live || !chosen[g];
        total += live ? u.weight : 0;
      }
      return total;
    };

    // Every subset of up to 10 groups; beyond that, each group alone and all
    // of them. Ties keep the smaller move (the empty one first).
    const size_t g = roots.size();
    std::vector<bool> best(g, false);
    int64_t bestCost = cost(best);
    size_t bestMoved = 0;
    auto consider = [&](const std::vector<bool>& chosen) {
      const int64_t c = cost(chosen);
      const size_t m = static_cast<size_t>(std::count(chosen.begin(), chosen.end(), true));
      if (c < bestCost || (c == bestCost && m < bestMoved)) best = chosen, bestCost = c, bestMoved = m;
    };
    if (g <= 10) {
      for (uint32_t mask = 1; mask < (1u << g); ++mask) {
        std::vector<bool> chosen(g);
        for (size_t k = 0; k < g; ++k) chosen[k] = (mask >> k) & 1u;
        consider(chosen);
      }
    } else {
      for (size_t k = 0; k < g; ++k) {
        std::vector<bool> one(g, false);
        one[k] = true;
        consider(one);
      }
      consider(std::vector<bool>(g, true));
    }
    // In block order, so that each moved op still follows its operands.
    for (size_t c = 0; c < cand.size(); ++c)
      if (best[groupOf[c]]) b_.ops().splice(r, b_.ops(), cand[c]);
  }

private:
  Block& b_;
};

void scheduleBlock(Block& b) {
  for (auto it = b.ops().begin(); it != b.ops().end(); ++it) {
    for (unsigned r = 0; r < (*it)->numRegions(); ++r)
      for (auto& nb : (*it)->region(r).blocks()) scheduleBlock(*nb);
    if (isReduction(**it)) Scheduler(b).at(it);
  }
}

}  // namespace

bool runSchedule(Module& m, DiagEngine&) {
  for (auto& f : m.functions)
    for (auto& b : f->body.blocks()) scheduleBlock(*b);
  return true;
}

}  // namespace fnk::ir
