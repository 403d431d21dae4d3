#include "ir/IR.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fnk::ir {

static const OpInfo kOpInfos[] = {
#define FNK_OP(name, mnemonic, minOps, maxOps, results, regions) {mnemonic, minOps, maxOps, results, regions},
#include "ir/Ops.def"
};

const OpInfo& opInfo(OpKind k) { return kOpInfos[static_cast<int>(k)]; }
const char* mnemonic(OpKind k) { return opInfo(k).mnemonic; }
bool lookupOpKind(std::string_view m, OpKind& out) {
  for (int i = 0; i < kNumOpKinds; ++i)
    if (m == kOpInfos[i].mnemonic) {
      out = static_cast<OpKind>(i);
      return true;
    }
  return false;
}

std::string attrStr(const Attr& a) {
  struct V {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const {
      if (std::isnan(v)) return "nan";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      char buf[64];
      // Shortest text that reads back as the same double.
      for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (std::strtod(buf, nullptr) == v) break;
      }
      std::string s = buf;
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return v; }
    std::string operator()(DType v) const { return std::string(dtypeName(v)); }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string r = "[";
      for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
      return r + "]";
    }
  };
  return std::visit(V{}, a);
}

void AttrDict::set(const std::string& key, Attr value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const auto& e, const std::string& k) { return e.first < k; });
  if (it != entries_.end() && it->first == key) it->second = std::move(value);
  else entries_.insert(it, {key, std::move(value)});
}
const Attr* AttrDict::get(const std::string& key) const {
  for (const auto& e : entries_)
    if (e.first == key) return &e.second;
  return nullptr;
}
int64_t AttrDict::getInt(const std::string& key, int64_t dflt) const {
  const Attr* a = get(key);
  if (a && std::holds_alternative<int64_t>(*a)) return std::get<int64_t>(*a);
  return dflt;
}
std::string AttrDict::getStr(const std::string& key) const {
  const Attr* a = get(key);
  if (a && std::holds_alternative<std::string>(*a)) return std::get<std::string>(*a);
  return {};
}
bool AttrDict::getBool(const std::string& key) const {
  const Attr* a = get(key);
  return a && std::holds_alternative<bool>(*a) && std::get<bool>(*a);
}

void Value::replaceAllUsesWith(Value* other) {
  if (other == this) return;
  auto users = users_;  // setOperand edits users_
  for (Operation* op : users)
    for (unsigned i = 0; i < op->numOperands(); ++i)
      if (op->operand(i) == this) op->setOperand(i, other);
}

static void removeUse(Value* v, Operation* op) {
  auto& u = const_cast<std::vector<Operation*>&>(v->users());
  auto it = std::find(u.begin(), u.end(), op);
  if (it != u.end()) u.erase(it);
}

Operation::~Operation() { dropOperands(); }

void Operation::addOperand(Value* v) {
  operands_.push_back(v);
  v->users_.push_back(this);
}
void Operation::setOperand(unsigned i, Value* v) {
  removeUse(operands_[i], this);
  operands_[i] = v;
  v->users_.push_back(this);
}
void Operation::dropOperands() {
  for (Value* v : operands_) removeUse(v, this);
  operands_.clear();
}
Value* Operation::addResult(Type t) {
  results_.push_back(std::make_unique<Value>(std::move(t), this, nullptr, numResults()));
  return results_.back().get();
}
Region& Operation::addRegion() {
  regions_.push_back(std::make_unique<Region>(this));
  return *regions_.back();
}

Value* Block::addArgument(Type t, std::string nameHint) {
  args_.push_back(std::make_unique<Value>(std::move(t), nullptr, this, numArguments()));
  args_.back()->nameHint = std::move(nameHint);
  return args_.back().get();
}
Operation* Block::append(std::unique_ptr<Operation> op) {
  op->parent_ = this;
  ops_.push_back(std::move(op));
  return ops_.back().get();
}
Block::~Block() {
  while (!ops_.empty()) ops_.pop_back();
}
Block::OpList::iterator Block::erase(OpList::iterator it) { return ops_.erase(it); }

Block& Region::addBlock() {
  blocks_.push_back(std::make_unique<Block>(this));
  return *blocks_.back();
}

std::vector<int64_t> Function::cluster() const {
  if (const Attr* a = attrs.get("cluster"))
    if (auto* v = std::get_if<std::vector<int64_t>>(a)) return *v;
  return {1, 1, 1};
}
int64_t Function::clusterCtas() const {
  int64_t n = 1;
  for (int64_t d : cluster()) n *= d;
  return n;
}
bool Function::addsAtomically(size_t param) const {
  if (body.empty()) return false;
  const Value* p = body.front().argument(static_cast<unsigned>(param));
  return anyOp(body.front(), [&](const Operation& op) { return op.kind() == OpKind::Atomic && op.operand(0) == p; });
}
bool Function::waitsOnOtherCtas() const {
  return !body.empty() && anyOp(body.front(), [](const Operation& op) { return op.kind() == OpKind::WaitGe; });
}
int Function::paramIndex(const std::string& n) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == n) return static_cast<int>(i);
  return -1;
}

Function* Module::lookup(const std::string& n) const {
  for (const auto& f : functions)
    if (f->name == n) return f.get();
  return nullptr;
}

Operation* Builder::create(OpKind kind, SourceRange loc, const std::vector<Value*>& operands,
                           const std::vector<Type>& resultTypes, AttrDict attrs) {
  auto op = std::make_unique<Operation>(kind, loc);
  for (Value* v : operands) op->addOperand(v);
  for (const Type& t : resultTypes) op->addResult(t);
  op->attrs() = std::move(attrs);
  for (int i = 0; i < opInfo(kind).numRegions; ++i) op->addRegion();
  return block_->append(std::move(op));
}

Value* Builder::constant(SourceRange loc, Type t, Attr value) {
  AttrDict a;
  a.set("value", std::move(value));
  return create(OpKind::Constant, loc, {}, {std::move(t)}, std::move(a))->result();
}

void forEachOp(const Block& blk, const std::function<void(const Operation&)>& fn) {
  for (const auto& op : blk.ops()) {
    fn(*op);
    for (unsigned r = 0; r < op->numRegions(); ++r)
      for (const auto& nb : op->region(r).blocks()) forEachOp(*nb, fn);
  }
}

bool anyOp(const Operation& op, const std::function<bool(const Operation&)>& pred) {
  if (pred(op)) return true;
  for (unsigned r = 0; r < op.numRegions(); ++r)
    for (const auto& nb : op.region(r).blocks())
      if (anyOp(*nb, pred)) return true;
  return false;
}

bool anyOp(const Block& blk, const std::function<bool(const Operation&)>& pred) {
  for (const auto& op : blk.ops())
    if (anyOp(*op, pred)) return true;
  return false;
}

}  // namespace fnk::ir
