// Expressions: names, operators with NumPy broadcasting and dtype promotion,
// indexing (tensor views and new axes), calls of helper fns and methods.
#include <algorithm>
#include <cmath>

#include "frontend/Elaborator.h"

namespace fnk {

using ir::DType;
using ir::OpKind;
using ir::Type;

std::string Elaborator::typeStr(const EVal& v) const {
  switch (v.kind) {
    case EVal::Kind::Value: return v.value->type().str();
    case EVal::Kind::Int: return "int constant " + std::to_string(v.i);
    case EVal::Kind::Float: return "float constant";
    case EVal::Kind::Bool: return "bool constant";
    case EVal::Kind::DType: return "dtype " + std::string(ir::dtypeName(v.dtype));
    case EVal::Kind::View: return "view of " + v.value->type().str();
    case EVal::Kind::Tuple: return "tuple";
    case EVal::Kind::None: return "nothing";
    case EVal::Kind::Error: return "<error>";
  }
  return "?";
}

ir::Value* Elaborator::emit(OpKind k, SourceRange r, std::vector<ir::Value*> ops, Type result, ir::AttrDict a) {
  return builder_.create(k, r, ops, {std::move(result)}, std::move(a))->result();
}

bool Elaborator::checkTile(DType t, const std::vector<int64_t>& shape, SourceRange r) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) {
      diags_.error(r, "tile dimension must be positive, got " + std::to_string(d));
      return false;
    }
    if (d > kMaxTileElements || (n *= d) > kMaxTileElements) {
      diags_.error(r, "tile of shape " + dimsStr(shape) + " exceeds the limit of " +
                          std::to_string(kMaxTileElements) + " elements per tile");
      return false;
    }
  }
  if (shape.size() > 4) {
    diags_.error(r, "tiles have at most 4 dimensions, got " + std::to_string(shape.size()));
    return false;
  }
  return true;
}

ir::Value* Elaborator::toValue(const EVal& v, std::optional<DType> hint) {
  switch (v.kind) {
    case EVal::Kind::Value: return v.value;
    case EVal::Kind::Int: {
      DType t = hint.value_or(v.i >= INT32_MIN && v.i <= INT32_MAX ? DType::I32 : DType::I64);
      if (ir::isFloat(t)) return builder_.constant(v.range, Type::scalar(t), static_cast<double>(v.i));
      if (t == DType::I1) return builder_.constant(v.range, Type::scalar(t), v.i != 0);
      return builder_.constant(v.range, Type::scalar(t), v.i);
    }
    case EVal::Kind::Float: {
      DType t = hint && ir::isFloat(*hint) ? *hint : DType::F32;
      return builder_.constant(v.range, Type::scalar(t), v.f);
    }
    case EVal::Kind::Bool: return builder_.constant(v.range, Type::scalar(DType::I1), v.b);
    case EVal::Kind::View:
      diags_.error(v.range, "a view of " + v.value->type().str() + " must be read with load(...)");
      return nullptr;
    case EVal::Kind::Error: return nullptr;
    default: diags_.error(v.range, "expected a value, got " + typeStr(v)); return nullptr;
  }
}

ir::Value* Elaborator::cast(ir::Value* v, DType to, SourceRange r) {
  if (!v || v->type().dtype == to) return v;
  return emit(OpKind::Cast, r, {v}, v->type().withDType(to));
}

ir::Value* Elaborator::broadcastTo(ir::Value* v, const std::vector<int64_t>& shape, SourceRange r) {
  if (!v || v->type().shape == shape) return v;
  ir::Value* cur = v;
  // Align ranks first with unit axes in front, as NumPy does.
  while (cur->type().shape.size() < shape.size() && !cur->type().shape.empty()) {
    ir::AttrDict a;
    a.set("axis", int64_t(0));
    auto s = cur->type().shape;
    s.insert(s.begin(), 1);
    cur = emit(OpKind::ExpandDims, r, {cur}, cur->type().withShape(s), a);
  }
  return emit(OpKind::Broadcast, r, {cur}, cur->type().withShape(shape));
}

static DType promote(DType a, DType b) {
  if (a == b) return a;
  bool fa = ir::isFloat(a), fb = ir::isFloat(b);
  if (fa && fb) {
    if (a == DType::F64 || b == DType::F64) return DType::F64;
    return DType::F32;  // f16 with bf16, or either with f32
  }
  if (fa) return a;
  if (fb) return b;
  if (a == DType::I1) return b;
  if (b == DType::I1) return a;
  return ir::bitWidth(a) >= ir::bitWidth(b) ? a : b;
}

bool Elaborator::unify(EVal& a, EVal& b, SourceRange r, ir::Value*& va, ir::Value*& vb, const std::string& what,
                       SourceRange at) {
  if (a.isError() || b.isError()) return false;
  DType t;
  if (a.isValue() && b.isValue()) t = promote(a.value->type().dtype, b.value->type().dtype);
  else if (a.isValue() || b.isValue()) {
    const EVal& v = a.isValue() ? a : b;
    const EVal& c = a.isValue() ? b : a;
    t = v.value->type().dtype;
    if (c.kind == EVal::Kind::Float && !ir::isFloat(t)) t = DType::F32;
    if (c.kind == EVal::Kind::Int && t == DType::I1) t = DType::I32;
  } else {
    t = a.kind == EVal::Kind::Float || b.kind == EVal::Kind::Float ? DType::F32 : DType::I32;
  }
  va = toValue(a, t);
  vb = toValue(b, t);
  if (!va || !vb) return false;
  va = cast(va, t, r);
  vb = cast(vb, t, r);
  auto shape = ir::broadcastShapes(va->type().shape, vb->type().shape);
  if (!shape) {
    // Name the first mismatched pair of dims, aligned from the right as NumPy aligns them.
    const auto &sa = va->type().shape, &sb = vb->type().shape;
    std::string detail;
    for (size_t i = 1; i <= std::min(sa.size(), sb.size()) && detail.empty(); ++i) {
      int64_t x = sa[sa.size() - i], y = sb[sb.size() - i];
      if (x != y && x != 1 && y != 1)
        detail = " (dim " + std::to_string(std::max(sa.size(), sb.size()) - i) + ": " + std::to_string(x) + " vs " +
                 std::to_string(y) + ")";
    }
    diags_.error(at.valid() ? at : r, what + " do not broadcast: " + va->type().str() + " and " + vb->type().str() + detail);
    return false;
  }
  va = broadcastTo(va, *shape, r);
  vb = broadcastTo(vb, *shape, r);
  return true;
}

static std::optional<EVal> foldConst(const std::string& op, const EVal& a, const EVal& b, SourceRange r,
                                     DiagEngine& diags) {
  if (!a.isConst() || !b.isConst()) return std::nullopt;
  if (a.kind == EVal::Kind::Bool || b.kind == EVal::Kind::Bool) {
    if (a.kind != b.kind) return std::nullopt;
    if (op == "&&" || op == "&") return EVal::ofBool(a.b && b.b, r);
    if (op == "||" || op == "|") return EVal::ofBool(a.b || b.b, r);
    if (op == "==") return EVal::ofBool(a.b == b.b, r);
    if (op == "!=" || op == "^") return EVal::ofBool(a.b != b.b, r);
    return std::nullopt;
  }
  if (a.kind == EVal::Kind::Int && b.kind == EVal::Kind::Int) {
    int64_t x = a.i, y = b.i, z = 0;
    bool ovf = false;
    if (op == "+") ovf = __builtin_add_overflow(x, y, &z);
    else if (op == "-") ovf = __builtin_sub_overflow(x, y, &z);
    else if (op == "*") ovf = __builtin_mul_overflow(x, y, &z);
    else if (op == "/" || op == "%") {
      if (y == 0) {
        diags.error(r, "division by zero in a constant expression");
        return EVal::error();
      }
      if (x == INT64_MIN && y == -1) ovf = true;
      else z = op == "/" ? x / y : x % y;
    } else if (op == "**") {
      if (y < 0) return EVal::ofFloat(std::pow(double(x), double(y)), r);
      z = 1;
      for (int64_t i = 0; i < y && !ovf; ++i) ovf = __builtin_mul_overflow(z, x, &z);
    } else if (op == "<<" || op == ">>") {
      if (y < 0 || y > 63) {
        diags.error(r, "shift by " + std::to_string(y) + " is out of range");
        return EVal::error();
      }
      z = op == "<<" ? static_cast<int64_t>(static_cast<uint64_t>(x) << y) : x >> y;
    } else if (op == "&") z = x & y;
    else if (op == "|") z = x | y;
    else if (op == "^") z = x ^ y;
    else if (op == "<") return EVal::ofBool(x < y, r);
    else if (op == "<=") return EVal::ofBool(x <= y, r);
    else if (op == ">") return EVal::ofBool(x > y, r);
    else if (op == ">=") return EVal::ofBool(x >= y, r);
    else if (op == "==") return EVal::ofBool(x == y, r);
    else if (op == "!=") return EVal::ofBool(x != y, r);
    else return std::nullopt;
    if (ovf) {
      diags.error(r, "constant expression overflows 64-bit integers");
      return EVal::error();
    }
    return EVal::ofInt(z, r);
  }
  double x = a.kind == EVal::Kind::Int ? double(a.i) : a.f;
  double y = b.kind == EVal::Kind::Int ? double(b.i) : b.f;
  if (op == "+") return EVal::ofFloat(x + y, r);
  if (op == "-") return EVal::ofFloat(x - y, r);
  if (op == "*") return EVal::ofFloat(x * y, r);
  if (op == "/") return EVal::ofFloat(x / y, r);
  if (op == "%") return EVal::ofFloat(std::fmod(x, y), r);
  if (op == "**") return EVal::ofFloat(std::pow(x, y), r);
  if (op == "<") return EVal::ofBool(x < y, r);
  if (op == "<=") return EVal::ofBool(x <= y, r);
  if (op == ">") return EVal::ofBool(x > y, r);
  if (op == ">=") return EVal::ofBool(x >= y, r);
  if (op == "==") return EVal::ofBool(x == y, r);
  if (op == "!=") return EVal::ofBool(x != y, r);
  return std::nullopt;
}

EVal Elaborator::binary(const std::string& op, EVal a, EVal b, SourceRange r, SourceRange opRange) {
  if (a.isError() || b.isError()) return EVal::error();
  if (auto folded = foldConst(op, a, b, r, diags_)) return *folded;
  // x ** 2 is x * x: one canonical form for the same math (ARCHITECTURE.md, decision 4).
  if (op == "**" && b.kind == EVal::Kind::Int && b.i == 2) return binary("*", a, a, r, opRange);
  ir::Value *va = nullptr, *vb = nullptr;
  if (!unify(a, b, r, va, vb, "operands of '" + op + "'", opRange)) return EVal::error();
  const Type& t = va->type();
  DType dt = t.dtype;
  auto need = [&](bool ok, const char* what) {
    if (!ok) diags_.error(opRange.valid() ? opRange : r, "operator '" + op + "' needs " + what + " operands, got " + t.str());
    return ok;
  };
  static const std::map<std::string, OpKind> arith = {
      {"+", OpKind::Add}, {"-", OpKind::Sub}, {"*", OpKind::Mul}, {"/", OpKind::Div}, {"%", OpKind::Rem},
      {"**", OpKind::Pow}, {"<<", OpKind::Shl}, {">>", OpKind::Shr}, {"&", OpKind::And}, {"|", OpKind::Or},
      {"^", OpKind::Xor}, {"&&", OpKind::And}, {"||", OpKind::Or}};
  static const std::map<std::string, const char*> cmp = {{"<", "lt"}, {"<=", "le"}, {">", "gt"},
                                                         {">=", "ge"}, {"==", "eq"}, {"!=", "ne"}};
  if (auto it = cmp.find(op); it != cmp.end()) {
    ir::AttrDict attrs;
    attrs.set("pred", std::string(it->second));
    return EVal::of(emit(OpKind::Cmp, r, {va, vb}, t.withDType(DType::I1), attrs), r);
  }
  auto it = arith.find(op);
  if (it == arith.end()) {
    diags_.error(r, "unknown operator '" + op + "'");
    return EVal::error();
  }
  if ((op == "&&" || op == "||") && !need(dt == DType::I1, "bool")) return EVal::error();
  if ((op == "&" || op == "|" || op == "^" || op == "<<" || op == ">>") && !need(ir::isInt(dt), "integer or bool"))
    return EVal::error();
  if (op == "**" && !need(ir::isFloat(dt), "float")) return EVal::error();
  if ((op == "+" || op == "-" || op == "*" || op == "/" || op == "%") && dt == DType::I1 &&
      !need(false, "numeric"))
    return EVal::error();
  return EVal::of(emit(it->second, r, {va, vb}, t), r);
}

EVal Elaborator::unaryMath(OpKind k, const EVal& a, SourceRange r) {
  if (a.isError()) return a;
  ir::Value* v = toValue(a);
  if (!v) return EVal::error();
  if (!ir::isFloat(v->type().dtype)) v = cast(v, DType::F32, r);
  return EVal::of(emit(k, r, {v}, v->type()), r);
}

EVal Elaborator::unary(const ast::UnaryExpr& e) {
  EVal a = expr(*e.operand);
  if (a.isError()) return a;
  if (e.op == "-") {
    if (a.kind == EVal::Kind::Int) {
      if (a.i == INT64_MIN) {
        diags_.error(e.range, "constant expression overflows 64-bit integers");
        return EVal::error();
      }
      return EVal::ofInt(-a.i, e.range);
    }
    if (a.kind == EVal::Kind::Float) return EVal::ofFloat(-a.f, e.range);
    ir::Value* v = toValue(a);
    if (!v) return EVal::error();
    if (v->type().dtype == DType::I1) {
      diags_.error(e.range, "cannot negate " + v->type().str() + "; use '!' for bool");
      return EVal::error();
    }
    return EVal::of(emit(OpKind::Neg, e.range, {v}, v->type()), e.range);
  }
  if (a.kind == EVal::Kind::Bool && e.op == "!") return EVal::ofBool(!a.b, e.range);
  if (a.kind == EVal::Kind::Int && e.op == "~") return EVal::ofInt(~a.i, e.range);
  ir::Value* v = toValue(a);
  if (!v) return EVal::error();
  bool isBool = v->type().dtype == DType::I1;
  if ((e.op == "!" && !isBool) || (e.op == "~" && !ir::isInt(v->type().dtype))) {
    diags_.error(e.range, std::string("operator '") + e.op + "' needs " + (e.op == "!" ? "bool" : "integer") +
                              " operands, got " + v->type().str());
    return EVal::error();
  }
  return EVal::of(emit(OpKind::Not, e.range, {v}, v->type()), e.range);
}

Binding* Elaborator::lookup(const std::string& n) {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
    if (auto f = it->find(n); f != it->end()) return &f->second;
  return nullptr;
}

void Elaborator::declare(const std::string& n, EVal v, bool isVar, SourceRange decl) {
  scopes_.back()[n] = Binding{std::move(v), isVar, decl};
}

EVal Elaborator::name(const ast::NameExpr& e) {
  if (Binding* b = lookup(e.name)) {
    EVal v = b->val;
    if (!v.isError()) v.range = e.range;
    return v;
  }
  if (auto it = consts_.find(e.name); it != consts_.end()) {
    EVal v = it->second;
    v.range = e.range;
    return v;
  }
  if (auto t = ir::parseDType(e.name)) return EVal::ofDType(*t, e.range);
  if (e.name == "cluster") diags_.error(e.range, "'cluster' is used through its methods: cluster.rank(), cluster.size(), "
                                                 "cluster.sync(), cluster.reduce(v, op)");
  else if (program_.lookup(e.name)) diags_.error(e.range, "function '" + e.name + "' is not a value; call it");
  else if (auto k = kernelConsts_.find(e.name); inFn_ && k != kernelConsts_.end()) {
    auto& d = diags_.error(e.range, "unknown name '" + e.name + "': a helper sees only its own parameters and const "
                                    "generics; declare '" + e.name + "' among them and pass it (" + e.name + " = " +
                                    e.name + ")");
    DiagEngine::note(d, k->second, "the kernel's const generic '" + e.name + "' is declared here");
  } else diags_.error(e.range, "unknown name '" + e.name + "'");
  return EVal::error();
}

EVal Elaborator::index(const ast::IndexExpr& e) {
  EVal base = expr(*e.base);
  if (base.isError()) return base;
  if (base.isValue() && base.value->type().isMemory()) {
    const Type& mt = base.value->type();
    EVal view;
    view.kind = EVal::Kind::View;
    view.value = base.value;
    view.range = e.range;
    if (e.indices.size() != mt.rank()) {
      diags_.error(e.range, mt.str() + " has " + std::to_string(mt.rank()) + " dimension" + (mt.rank() == 1 ? "" : "s") +
                                " but is indexed with " + std::to_string(e.indices.size()) +
                                (e.indices.size() == 1 ? " index" : " indices"));
      return EVal::error();
    }
    for (const auto& ia : e.indices) {
      if (ia.kind != ast::IndexArg::Kind::Expr) {
        diags_.error(ia.range, "index a tensor with scalars or index tiles (e.g. arange); ':' and None apply to tiles");
        return EVal::error();
      }
      EVal iv = expr(*ia.value);
      if (iv.isError()) return iv;
      if (iv.kind == EVal::Kind::Float || (iv.isValue() && !ir::isInt(iv.value->type().dtype)) ||
          iv.kind == EVal::Kind::Bool) {
        diags_.error(ia.range, "tensor index must be an integer, got " + typeStr(iv));
        return EVal::error();
      }
      ir::Value* v = toValue(iv);
      if (!v) return EVal::error();
      if (v->type().dtype == DType::I1) v = cast(v, DType::I32, ia.range);
      view.indices.push_back(v);
    }
    return view;
  }
  ir::Value* v = toValue(base);
  if (!v) return EVal::error();
  // Tiles: ':' keeps an axis, None inserts one of size 1.
  size_t kept = 0;
  for (const auto& ia : e.indices) {
    if (ia.kind == ast::IndexArg::Kind::Expr) {
      diags_.error(ia.range, "tiles are indexed only with ':' and None; load from a tensor or shared buffer instead");
      return EVal::error();
    }
    kept += ia.kind == ast::IndexArg::Kind::Slice;
  }
  if (kept != v->type().shape.size()) {
    size_t rank = v->type().shape.size();
    diags_.error(e.range, "index has " + std::to_string(kept) + " ':' but " + v->type().str() + " has " +
                              std::to_string(rank) + (rank == 1 ? " dimension" : " dimensions"));
    return EVal::error();
  }
  int64_t axis = 0;
  for (const auto& ia : e.indices) {
    if (ia.kind == ast::IndexArg::Kind::NewAxis) {
      auto s = v->type().shape;
      s.insert(s.begin() + axis, 1);
      if (!checkTile(v->type().dtype, s, e.range)) return EVal::error();
      ir::AttrDict a;
      a.set("axis", axis);
      v = emit(OpKind::ExpandDims, e.range, {v}, v->type().withShape(s), a);
    }
    ++axis;
  }
  return EVal::of(v, e.range);
}

bool Elaborator::collectArgs(const std::vector<ast::Arg>& in, CallArgs& out) {
  bool ok = true;
  for (const auto& a : in) {
    EVal v = expr(*a.value);
    ok &= !v.isError();
    if (a.name.empty()) {
      if (!out.named.empty()) {
        diags_.error(a.value->range, "positional argument after a keyword argument");
        ok = false;
      }
      out.pos.push_back(std::move(v));
    } else {
      if (out.get(a.name)) {
        diags_.error(a.nameRange, "keyword argument '" + a.name + "' given twice");
        ok = false;
      }
      out.named.emplace_back(a.name, std::move(v));
      out.namedRanges.push_back(a.nameRange);
    }
  }
  return ok;
}

EVal Elaborator::call(const ast::CallExpr& e) {
  const auto* callee = ast::dynCast<ast::NameExpr>(e.callee.get());
  if (!callee) {
    diags_.error(e.callee->range, "only named functions can be called");
    return EVal::error();
  }
  if (Binding* b = lookup(callee->name)) {
    auto& d = diags_.error(callee->range, "'" + callee->name + "' is a local value, not a function");
    DiagEngine::note(d, b->decl, "declared here");
    return EVal::error();
  }
  CallArgs args;
  if (!collectArgs(e.args, args)) return EVal::error();
  if (const ast::FuncDecl* fn = program_.lookup(callee->name)) {
    if (fn->isKernel) {
      diags_.error(callee->range, "'" + callee->name + "' is a kernel; kernels are launched, not called");
      return EVal::error();
    }
    return callFn(*fn, args, e.range);
  }
  bool found = false;
  EVal r = builtin(callee->name, args, e.range, found);
  if (!found) diags_.error(callee->range, "unknown function '" + callee->name + "'");
  return r;
}

EVal Elaborator::method(const ast::MethodExpr& e) {
  CallArgs args;
  if (auto* n = ast::dynCast<ast::NameExpr>(e.base.get()); n && n->name == "cluster" && !lookup("cluster")) {
    // cluster.reduce's second argument names an operation, not a value.
    for (size_t i = 0; i < e.args.size(); ++i) {
      if (e.name == "reduce" && i == 1) {
        args.pos.push_back(EVal::none(e.args[i].value->range));
        continue;
      }
      EVal v = expr(*e.args[i].value);
      if (v.isError()) return v;
      if (e.args[i].name.empty()) args.pos.push_back(v);
      else args.named.emplace_back(e.args[i].name, v), args.namedRanges.push_back(e.args[i].nameRange);
    }
    return clusterOp(e, args);
  }
  EVal self = expr(*e.base);
  if (!collectArgs(e.args, args) || self.isError()) return EVal::error();
  // x.f(args) is f(x, args) for the methods tiles have.
  static const char* kMethods[] = {"to", "reshape", "transpose", "sum", "max", "min", "mean", "abs", "exp", "sqrt"};
  bool known = false;
  for (const char* m : kMethods) known |= e.name == m;
  if (!known) {
    diags_.error(e.nameRange, "unknown method '" + e.name + "' on " + typeStr(self));
    return EVal::error();
  }
  if (e.name == "reshape" && args.pos.size() > 1) {  // x.reshape(a, b) == reshape(x, (a, b))
    EVal t;
    t.kind = EVal::Kind::Tuple;
    t.elems = args.pos;
    t.range = e.range;
    args.pos = {t};
  }
  if (e.name == "transpose" && args.pos.size() > 1) {
    EVal t;
    t.kind = EVal::Kind::Tuple;
    t.elems = args.pos;
    t.range = e.range;
    args.pos = {t};
  }
  args.pos.insert(args.pos.begin(), self);
  bool found = false;
  return builtin(e.name == "to" ? "cast" : e.name, args, e.range, found);
}

EVal Elaborator::expr(const ast::Expr& e) {
  switch (e.kind) {
    case ast::Expr::Kind::Int: return EVal::ofInt(static_cast<const ast::IntLit&>(e).value, e.range);
    case ast::Expr::Kind::Float: return EVal::ofFloat(static_cast<const ast::FloatLit&>(e).value, e.range);
    case ast::Expr::Kind::Bool: return EVal::ofBool(static_cast<const ast::BoolLit&>(e).value, e.range);
    case ast::Expr::Kind::Name: return name(static_cast<const ast::NameExpr&>(e));
    case ast::Expr::Kind::Unary: return unary(static_cast<const ast::UnaryExpr&>(e));
    case ast::Expr::Kind::Binary: {
      const auto& be = static_cast<const ast::BinaryExpr&>(e);
      EVal a = expr(*be.lhs);
      EVal b = expr(*be.rhs);
      return binary(be.op, std::move(a), std::move(b), be.range, be.opRange);
    }
    case ast::Expr::Kind::Call: return call(static_cast<const ast::CallExpr&>(e));
    case ast::Expr::Kind::Method: return method(static_cast<const ast::MethodExpr&>(e));
    case ast::Expr::Kind::Member: {
      const auto& me = static_cast<const ast::MemberExpr&>(e);
      diags_.error(e.range, "unknown member '" + me.name + "'; fnk values have methods, called with '()', but no fields" +
                                (me.name == "shape" ? " (tensor dims are names in scope, such as N)" : ""));
      return EVal::error();
    }
    case ast::Expr::Kind::Index: return index(static_cast<const ast::IndexExpr&>(e));
    case ast::Expr::Kind::Tuple: {
      EVal t;
      t.kind = EVal::Kind::Tuple;
      t.range = e.range;
      for (const auto& x : static_cast<const ast::TupleExpr&>(e).elements) {
        t.elems.push_back(expr(*x));
        if (t.elems.back().isError()) return EVal::error();
      }
      return t;
    }
    case ast::Expr::Kind::Shared: {
      const auto& se = static_cast<const ast::SharedExpr&>(e);
      auto t = resolveDType(se.dtype);
      if (!t) {
        diags_.error(se.dtypeRange, "unknown element type '" + se.dtype + "'");
        return EVal::error();
      }
      std::vector<int64_t> shape;
      for (const auto& d : se.dims) {
        auto v = constInt(expr(*d), "shared buffer dimension");
        if (!v) return EVal::error();
        shape.push_back(*v);
      }
      if (!checkTile(*t, shape, e.range)) return EVal::error();
      int64_t bytes = ir::byteSize(*t);
      for (int64_t d : shape) bytes *= d;
      sharedBytes_ += bytes;
      if (sharedBytes_ > kMaxSharedBytes) {
        diags_.error(e.range, "shared buffers of this kernel take " + std::to_string(sharedBytes_) + " bytes (" +
                                  std::to_string(sharedBytes_ / 1024) + " KiB); a CTA has at most " +
                                  std::to_string(kMaxSharedBytes) + " (" + std::to_string(kMaxSharedBytes / 1024) + " KiB)");
        return EVal::error();
      }
      return EVal::of(emit(OpKind::SharedAlloc, e.range, {}, Type::shared(*t, shape)), e.range);
    }
  }
  return EVal::error();
}

}  // namespace fnk
