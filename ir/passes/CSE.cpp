#include "ir/passes/CSE.h"

#include <unordered_map>

#include "ir/Pass.h"

namespace fnk::ir {

namespace {

/// Everything that makes two pure ops compute the same values, as one string:
/// exact, and cheap enough for the op counts of a kernel.
std::string opKey(const Operation& op) {
  std::string k = std::to_string(static_cast<int>(op.kind()));
  for (const Value* v : op.operands()) k += " " + std::to_string(reinterpret_cast<uintptr_t>(v));
  k += " :";
  for (unsigned i = 0; i < op.numResults(); ++i) k += " " + op.result(i)->type().str();
  for (const auto& [name, value] : op.attrs().entries())
    // The variant index keeps the string "f32" apart from the dtype f32.
    k += " " + name + "=" + std::to_string(value.index()) + ":" + attrStr(value);
  return k;
}

class CSE {
public:
  void runOnBlock(Block& b) {
    scopes_.emplace_back();
    for (auto it = b.ops().begin(); it != b.ops().end();) {
      Operation& op = **it;
      if (op.numRegions() == 0 && isPure(op.kind())) {
        std::string key = opKey(op);
        if (Operation* prev = lookup(key)) {
          for (unsigned i = 0; i < op.numResults(); ++i) op.result(i)->replaceAllUsesWith(prev->result(i));
          it = b.erase(it);
          continue;
        }
        scopes_.back().emplace(std::move(key), &op);
      }
      for (unsigned r = 0; r < op.numRegions(); ++r)
        for (auto& nb : op.region(r).blocks()) runOnBlock(*nb);
      ++it;
    }
    scopes_.pop_back();
  }

private:
  Operation* lookup(const std::string& key) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      if (auto f = s->find(key); f != s->end()) return f->second;
    return nullptr;
  }

  std::vector<std::unordered_map<std::string, Operation*>> scopes_;
};

}  // namespace

bool runCSE(Module& m, DiagEngine&) {
  for (auto& f : m.functions)
    for (Region* r : {&f->launch, &f->body})
      for (auto& b : r->blocks()) CSE().runOnBlock(*b);
  return true;
}

}  // namespace fnk::ir
