#include "ir/passes/Canonicalize.h"

#include <cmath>
#include <optional>

#include "ir/Pass.h"
#include "support/Float.h"

namespace fnk::ir {

namespace {

/// A constant operand's value, normalized to its dtype as the interpreter
/// holds it: integers wrapped to the dtype's width (zero-extended for
/// unsigned, 0/1 for i1), floats rounded to the dtype.
struct Num {
  int64_t i = 0;
  double f = 0;
};

int64_t wrapInt(DType t, uint64_t v) {
  int bits = bitWidth(t);
  if (bits >= 64) return static_cast<int64_t>(v);
  uint64_t mask = (uint64_t(1) << bits) - 1;
  v &= mask;
  if (isSigned(t) && (v >> (bits - 1)) & 1) v |= ~mask;  // sign-extend
  return static_cast<int64_t>(v);
}

double roundFloat(DType t, double v) { return roundToDType(v, t); }

std::optional<Num> constantValue(const Value* v) {
  const Operation* def = v->definingOp();
  if (!def || def->kind() != OpKind::Constant) return std::nullopt;
  const Attr* a = def->attrs().get("value");
  if (!a) return std::nullopt;
  DType t = v->type().dtype;
  Num n;
  if (auto* b = std::get_if<bool>(a)) n.i = *b;
  else if (auto* i = std::get_if<int64_t>(a)) n.i = *i, n.f = static_cast<double>(*i);
  else if (auto* d = std::get_if<double>(a)) n.f = *d;
  else return std::nullopt;
  if (isInt(t)) n.i = wrapInt(t, static_cast<uint64_t>(n.i));
  else n.f = roundFloat(t, n.f);
  return n;
}

bool isConstant(const Value* v, double want) {
  auto n = constantValue(v);
  if (!n) return false;
  if (isInt(v->type().dtype)) return n->i == static_cast<int64_t>(want);
  return n->f == want && std::signbit(n->f) == std::signbit(want);
}

Attr cmpResult(const std::string& pred, auto a, auto b) {
  bool r = pred == "lt" ? a < b : pred == "le" ? a <= b : pred == "gt" ? a > b
         : pred == "ge" ? a >= b : pred == "eq" ? a == b : a != b;
  return r;
}

/// Folds integer (and i1) elementwise ops; nullopt when the result is not
/// exactly defined.
std::optional<Attr> foldInt(const Operation& op, DType t, int64_t a, int64_t b) {
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  int64_t minVal = isSigned(t) ? wrapInt(t, uint64_t(1) << (bitWidth(t) - 1)) : 0;
  auto wrap = [&](uint64_t v) -> Attr {
    if (t == DType::I1) return (v & 1) != 0;
    return wrapInt(t, v);
  };
  // i1 is boolean: only logic and comparison fold, as 0/1 arithmetic would wrap oddly.
  if (t == DType::I1 && op.kind() != OpKind::And && op.kind() != OpKind::Or && op.kind() != OpKind::Xor &&
      op.kind() != OpKind::Not && op.kind() != OpKind::Cmp)
    return std::nullopt;
  switch (op.kind()) {
    case OpKind::Add: return wrap(ua + ub);
    case OpKind::Sub: return wrap(ua - ub);
    case OpKind::Mul: return wrap(ua * ub);
    case OpKind::Div:
    case OpKind::Rem:
      if (b == 0 || (isSigned(t) && a == minVal && b == -1)) return std::nullopt;
      if (!isSigned(t)) return wrap(op.kind() == OpKind::Div ? ua / ub : ua % ub);
      return wrap(static_cast<uint64_t>(op.kind() == OpKind::Div ? a / b : a % b));
    case OpKind::Min: return wrap(static_cast<uint64_t>(a < b ? a : b));
    case OpKind::Max: return wrap(static_cast<uint64_t>(a < b ? b : a));
    case OpKind::And: return wrap(ua & ub);
    case OpKind::Or: return wrap(ua | ub);
    case OpKind::Xor: return wrap(ua ^ ub);
    case OpKind::Shl:
    case OpKind::Shr:
      if (b < 0 || b >= bitWidth(t)) return std::nullopt;
      if (op.kind() == OpKind::Shl) return wrap(ua << b);
      return wrap(isSigned(t) ? static_cast<uint64_t>(a >> b) : ua >> b);
    case OpKind::Cmp: return cmpResult(op.attrs().getStr("pred"), a, b);
    case OpKind::Neg: return wrap(uint64_t(0) - ua);
    case OpKind::Not: return wrap(~ua);
    case OpKind::Abs:
      if (!isSigned(t)) return wrap(ua);
      if (a == minVal) return std::nullopt;
      return wrap(static_cast<uint64_t>(a < 0 ? -a : a));
    default: return std::nullopt;
  }
}

/// Folds float ops that round exactly once: computing in double and rounding
/// to the dtype is what the interpreter does (docs/ir.md), and is correctly
/// rounded for these ops.
std::optional<Attr> foldFloat(const Operation& op, DType t, double a, double b) {
  auto r = [&](double v) -> Attr { return roundFloat(t, v); };
  switch (op.kind()) {
    case OpKind::Add: return r(a + b);
    case OpKind::Sub: return r(a - b);
    case OpKind::Mul: return r(a * b);
    case OpKind::Div: return r(a / b);
    case OpKind::Neg: return r(-a);
    case OpKind::Abs: return r(std::fabs(a));
    case OpKind::Min:
    case OpKind::Max:
      // NaN and signed-zero handling of min/max differ between targets: leave them.
      if (std::isnan(a) || std::isnan(b) || (a == 0 && b == 0)) return std::nullopt;
      return r(op.kind() == OpKind::Min ? std::fmin(a, b) : std::fmax(a, b));
    case OpKind::Cmp: return cmpResult(op.attrs().getStr("pred"), a, b);
    default: return std::nullopt;
  }
}

bool isFoldable(OpKind k) {
  switch (k) {
    case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
    case OpKind::Min: case OpKind::Max: case OpKind::And: case OpKind::Or: case OpKind::Xor:
    case OpKind::Shl: case OpKind::Shr: case OpKind::Cmp: case OpKind::Neg: case OpKind::Not:
    case OpKind::Abs:
      return true;
    default: return false;
  }
}

class Canonicalizer {
public:
  bool changed = false;

  void runOnBlock(Block& b) {
    for (auto it = b.ops().begin(); it != b.ops().end();) {
      Operation& op = **it;
      for (unsigned r = 0; r < op.numRegions(); ++r)
        for (auto& nb : op.region(r).blocks()) runOnBlock(*nb);
      if (Value* repl = simplify(b, it)) {
        op.result()->replaceAllUsesWith(repl);
        it = b.erase(it);
        changed = true;
      } else {
        ++it;
      }
    }
  }

private:
  /// The value that replaces the op at `it`'s single result, or null. May
  /// insert a new constant before the op.
  Value* simplify(Block& b, Block::OpList::iterator it) {
    Operation& op = **it;
    if (op.numResults() != 1 || op.numRegions() != 0) return nullptr;
    const Type& rt = op.result()->type();
    auto sameAsResult = [&](Value* v) { return v->type() == rt ? v : nullptr; };
    switch (op.kind()) {
      case OpKind::Cast:
        if (Value* v = sameAsResult(op.operand(0))) return v;
        return foldCast(b, it);
      case OpKind::Reshape:
        return sameAsResult(op.operand(0));
      case OpKind::Broadcast:
        if (Value* v = sameAsResult(op.operand(0))) return v;
        if (op.operand(0)->definingOp() && op.operand(0)->definingOp()->kind() == OpKind::Constant)
          if (const Attr* a = op.operand(0)->definingOp()->attrs().get("value")) return makeConstant(b, it, *a);
        return nullptr;
      case OpKind::Neg:
      case OpKind::Not: {
        Operation* inner = op.operand(0)->definingOp();
        if (inner && inner->kind() == op.kind()) return sameAsResult(inner->operand(0));
        break;
      }
      case OpKind::Mul:
        if (isConstant(op.operand(1), 1)) return op.operand(0);
        if (isConstant(op.operand(0), 1)) return op.operand(1);
        break;
      case OpKind::Div:
        if (isConstant(op.operand(1), 1)) return op.operand(0);
        break;
      case OpKind::Add: {
        double zero = isFloat(rt.dtype) ? -0.0 : 0.0;
        if (rt.dtype != DType::I1) {
          if (isConstant(op.operand(1), zero)) return op.operand(0);
          if (isConstant(op.operand(0), zero)) return op.operand(1);
        }
        break;
      }
      case OpKind::Sub:
        if (rt.dtype != DType::I1 && isConstant(op.operand(1), 0.0)) return op.operand(0);
        break;
      case OpKind::And:  // i1: a mask and-ed with an all-true one (the version pass's full tiles)
        if (rt.dtype == DType::I1) {
          if (isConstant(op.operand(1), 1)) return sameAsResult(op.operand(0));
          if (isConstant(op.operand(0), 1)) return sameAsResult(op.operand(1));
        }
        break;
      case OpKind::Cmp:
        if (Value* v = foldRangeCmp(b, it)) return v;
        break;
      case OpKind::Select:  // a constant condition picks one side
        if (isConstant(op.operand(0), 1)) return sameAsResult(op.operand(1));
        if (isConstant(op.operand(0), 0)) return sameAsResult(op.operand(2));
        break;
      default: break;
    }
    return foldConstants(b, it);
  }

  Value* foldConstants(Block& b, Block::OpList::iterator it) {
    Operation& op = **it;
    if (!isFoldable(op.kind())) return nullptr;
    std::optional<Num> a = constantValue(op.operand(0)), c;
    if (!a) return nullptr;
    if (op.numOperands() > 1 && !(c = constantValue(op.operand(1)))) return nullptr;
    Num bv = c ? *c : Num{};
    DType t = op.operand(0)->type().dtype;
    std::optional<Attr> r = isInt(t) ? foldInt(op, t, a->i, bv.i) : foldFloat(op, t, a->f, bv.f);
    return r ? makeConstant(b, it, *r) : nullptr;
  }

  /// A comparison of a tile.arange {start, end} with an integer constant
  /// that holds for every element, or for none (the shifted walks' `cols >=
  /// 0` on a walk that starts at column 0: std.norm.common's shift_start).
  Value* foldRangeCmp(Block& b, Block::OpList::iterator it) {
    Operation& op = **it;
    const Operation* def = op.operand(0)->definingOp();
    std::optional<Num> c = constantValue(op.operand(1));
    if (!def || def->kind() != OpKind::Arange || !c || !isInt(op.operand(1)->type().dtype)) return nullptr;
    const Attr* start = def->attrs().get("start");
    const Attr* end = def->attrs().get("end");
    if (!start || !end || !std::holds_alternative<int64_t>(*start) || !std::holds_alternative<int64_t>(*end))
      return nullptr;
    int64_t lo = std::get<int64_t>(*start), hi = std::get<int64_t>(*end) - 1;
    if (hi < lo) return nullptr;
    const std::string& pred = op.attrs().getStr("pred");
    auto holds = [&](int64_t v) { return std::get<bool>(cmpResult(pred, v, c->i)); };
    // Every predicate but eq and ne is monotone in v, so the two ends decide it.
    if (pred == "eq" || pred == "ne") {
      if (c->i >= lo && c->i <= hi) return lo == hi ? makeConstant(b, it, holds(lo)) : nullptr;
      return makeConstant(b, it, pred == "ne");
    }
    if (holds(lo) == holds(hi)) return makeConstant(b, it, holds(lo));
    return nullptr;
  }

  /// tile.cast of a constant, with the interpreter's conversion.
  Value* foldCast(Block& b, Block::OpList::iterator it) {
    Operation& op = **it;
    std::optional<Num> a = constantValue(op.operand(0));
    if (!a) return nullptr;
    DType from = op.operand(0)->type().dtype, to = op.result()->type().dtype;
    double v = castToDType(isInt(from) ? static_cast<double>(a->i) : a->f, from, to);
    if (to == DType::I1) return makeConstant(b, it, v != 0);
    if (isFloat(to)) return makeConstant(b, it, v);
    // Integers held in a double are exact only below 2^53.
    if (!(std::fabs(v) < 9007199254740992.0)) return nullptr;
    return makeConstant(b, it, static_cast<int64_t>(v));
  }

  Value* makeConstant(Block& b, Block::OpList::iterator it, const Attr& value) {
    Operation& op = **it;
    auto c = std::make_unique<Operation>(OpKind::Constant, op.loc());
    c->addResult(op.result()->type());
    c->attrs().set("value", value);
    return insertBefore(b, it, std::move(c))->result();
  }
};

}  // namespace

bool runCanonicalize(Module& m, DiagEngine&) {
  // Each sweep rewrites ops in order, so chains fold in one sweep; more sweeps
  // catch rewrites that expose earlier ops. The bound only guards against a
  // pattern cycle, which would be a bug.
  for (int sweep = 0; sweep < 64; ++sweep) {
    Canonicalizer c;
    for (auto& f : m.functions)
      for (Region* r : {&f->launch, &f->body})
        for (auto& b : r->blocks()) c.runOnBlock(*b);
    if (!c.changed) break;
  }
  return true;
}

}  // namespace fnk::ir
