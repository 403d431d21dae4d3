#include "ir/passes/Version.h"

#include "ir/Pass.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

namespace fnk::ir {

namespace {

/// `v` through broadcasts and expand_dims: the value they repeat.
Value* unbroadcast(Value* v) {
  for (const Operation* d = v->definingOp(); d && (d->kind() == OpKind::Broadcast || d->kind() == OpKind::ExpandDims);
       d = v->definingOp())
    v = d->operand(0);
  return v;
}

/// C when `v` is arange(0, C), possibly broadcast or expanded; 0 otherwise.
int64_t arangeLength(Value* v) {
  const Operation* d = unbroadcast(v)->definingOp();
  if (!d || d->kind() != OpKind::Arange || d->attrs().getInt("start", -1) != 0) return 0;
  return d->attrs().getInt("end", 0);
}

/// Where a run-time extent n comes from, when a launch fixes it: an integer
/// parameter (an argument of the body's entry block), or dim `axis` of a
/// tensor parameter (tile.dim in the entry block). Null otherwise: a value
/// computed from program ids or loads, which one branch per launch could
/// not decide.
struct ExtentSource {
  const Value* param = nullptr;
  int64_t axis = -1;  // -1: the integer parameter itself
};
ExtentSource extentSource(const Value* n, const Block& entry) {
  int64_t axis = -1;
  if (const Operation* d = n->definingOp(); d && d->kind() == OpKind::Dim && d->parentBlock() == &entry) {
    axis = d->attrs().getInt("axis", -1);
    n = d->operand(0);
  }
  if (n->definingOp() || n->ownerBlock() != &entry || (axis < 0 && !isInt(n->type().dtype))) return {};
  return {n, axis};
}

/// A compare the full tile makes true: `arange(0, C) < n`, n a run-time
/// extent (extentSource). Its (n, C), or {nullptr, 0}.
std::pair<Value*, int64_t> fullTileCompare(const Operation& op, const Block& entry) {
  if (op.kind() != OpKind::Cmp || op.attrs().getStr("pred") != "lt") return {nullptr, 0};
  const int64_t c = arangeLength(op.operand(0));
  Value* n = unbroadcast(op.operand(1));
  if (c <= 0 || !n->type().isTile() || !n->type().shape.empty() || !isInt(n->type().dtype)) return {nullptr, 0};
  return extentSource(n, entry).param ? std::pair{n, c} : std::pair<Value*, int64_t>{nullptr, 0};
}

/// Appends a copy of `op` (its regions too) to `dst`, its operands through
/// `map` and its results added to it. With `fold`, the compares in it are
/// replaced by constant true tiles.
void cloneInto(Block& dst, const Operation& op, std::unordered_map<const Value*, Value*>& map,
               const std::unordered_set<const Operation*>& fold) {
  if (fold.count(&op)) {
    auto c = std::make_unique<Operation>(OpKind::Constant, op.loc());
    c->attrs().set("value", true);
    map[op.result()] = c->addResult(op.result()->type());
    dst.append(std::move(c));
    return;
  }
  auto c = std::make_unique<Operation>(op.kind(), op.loc());
  for (Value* v : op.operands()) {
    auto it = map.find(v);
    c->addOperand(it == map.end() ? v : it->second);
  }
  for (unsigned i = 0; i < op.numResults(); ++i) map[op.result(i)] = c->addResult(op.result(i)->type());
  c->attrs() = op.attrs();
  for (unsigned r = 0; r < op.numRegions(); ++r) {
    Region& region = c->addRegion();
    for (const auto& blk : op.region(r).blocks()) {
      Block& nb = region.addBlock();
      for (unsigned a = 0; a < blk->numArguments(); ++a) map[blk->argument(a)] = nb.addArgument(blk->argument(a)->type());
      for (const auto& inner : blk->ops()) cloneInto(nb, *inner, map, fold);
    }
  }
  dst.append(std::move(c));
}

void versionKernel(Function& f) {
  if (f.body.empty()) return;
  Block& body = f.body.front();
  if (!body.terminator() || body.terminator()->kind() != OpKind::Return) return;
  // An early return inside a branch or loop could not move into the new if.
  bool earlyReturn = false;
  for (const auto& op : body.ops())
    if (op.get() != body.terminator())
      earlyReturn |= anyOp(*op, [](const Operation& o) { return o.kind() == OpKind::Return; });
  if (earlyReturn) return;

  std::map<std::pair<Value*, int64_t>, std::vector<const Operation*>> groups;
  forEachOp(body, [&](const Operation& op) {
    auto key = fullTileCompare(op, body);
    if (key.first) groups[key].push_back(&op);
  });
  if (groups.empty()) return;
  auto best = groups.begin();
  for (auto it = groups.begin(); it != groups.end(); ++it)
    if (it->second.size() > best->second.size()) best = it;
  const auto [n, c] = best->first;
  const std::unordered_set<const Operation*> fold(best->second.begin(), best->second.end());

  // The ops after n's definition (all of them for a parameter) move, but for
  // shared allocations: they stay before the branch, one buffer for both (a
  // copy would be a second buffer, twice the shared memory). One inside a
  // loop or branch could not stay: then nothing is versioned.
  auto first = body.ops().begin();
  if (const Operation* def = n->definingOp())
    while (first != body.ops().end() && (first++)->get() != def) {
    }
  const auto last = std::prev(body.ops().end());  // the terminator stays
  std::vector<Block::OpList::iterator> moving;
  for (auto it = first; it != last; ++it) {
    if ((*it)->kind() == OpKind::SharedAlloc) continue;
    if (anyOp(**it, [](const Operation& o) { return o.kind() == OpKind::SharedAlloc; })) return;
    moving.push_back(it);
  }
  if (moving.empty()) return;

  auto iff = std::make_unique<Operation>(OpKind::If, n->definingOp() ? n->definingOp()->loc() : f.loc);
  std::unordered_map<const Value*, Value*> full, plain;
  Block& thenBlk = iff->addRegion().addBlock();
  Block& elseBlk = iff->addRegion().addBlock();
  for (auto it : moving) cloneInto(thenBlk, **it, full, fold);
  for (auto it : moving) cloneInto(elseBlk, **it, plain, {});
  for (Block* blk : {&thenBlk, &elseBlk}) blk->append(std::make_unique<Operation>(OpKind::Yield, iff->loc()));

  // The originals go, last first: an op's users come after it (or are
  // nested in it), so none is left when it goes.
  for (auto r = moving.rbegin(); r != moving.rend(); ++r) body.erase(*r);
  // if n == C { full } else { plain }, before the terminator.
  auto cst = std::make_unique<Operation>(OpKind::Constant, iff->loc());
  cst->attrs().set("value", c);
  Value* cv = cst->addResult(n->type());
  auto cmp = std::make_unique<Operation>(OpKind::Cmp, iff->loc());
  cmp->addOperand(n);
  cmp->addOperand(cv);
  cmp->attrs().set("pred", std::string("eq"));
  Value* cond = cmp->addResult(Type::tile(DType::I1, {}));
  iff->addOperand(cond);
  for (auto* op : {&cst, &cmp, &iff}) insertBefore(body, std::prev(body.ops().end()), std::move(*op));
}

}  // namespace

LaunchBranch launchBranch(const Function& f) {
  if (f.body.empty()) return {};
  const Block& body = f.body.front();
  for (const auto& op : body.ops()) {
    if (op->kind() != OpKind::If || op->numResults() != 0) continue;
    const Operation* cmp = op->operand(0)->definingOp();
    if (!cmp || cmp->kind() != OpKind::Cmp || cmp->attrs().getStr("pred") != "eq") continue;
    const Operation* c = cmp->operand(1)->definingOp();
    const int64_t* full = c && c->kind() == OpKind::Constant ? std::get_if<int64_t>(c->attrs().get("value")) : nullptr;
    if (!full) continue;
    const ExtentSource n = extentSource(cmp->operand(0), body);
    if (!n.param) continue;
    return {op.get(), n.param->index(), n.axis, *full};
  }
  return {};
}

bool runVersion(Module& m, DiagEngine&) {
  for (auto& f : m.functions) versionKernel(*f);
  return true;
}

}  // namespace fnk::ir
