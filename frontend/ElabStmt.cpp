// Statements. `var`s assigned inside a loop or a branch become loop-carried
// values (scf.for iter args) and scf.if results, so the IR stays in SSA form.
#include <set>

#include "frontend/Elaborator.h"

namespace fnk {

using ir::OpKind;
using ir::Type;

namespace {
void collectAssigned(const ast::Stmt& s, std::set<std::string>& out) {
  switch (s.kind) {
    case ast::Stmt::Kind::Assign: out.insert(static_cast<const ast::AssignStmt&>(s).name); break;
    case ast::Stmt::Kind::Block:
      for (const auto& x : static_cast<const ast::BlockStmt&>(s).stmts) collectAssigned(*x, out);
      break;
    case ast::Stmt::Kind::For: collectAssigned(*static_cast<const ast::ForStmt&>(s).body, out); break;
    case ast::Stmt::Kind::If: {
      const auto& i = static_cast<const ast::IfStmt&>(s);
      collectAssigned(*i.thenBody, out);
      if (i.elseBody) collectAssigned(*i.elseBody, out);
      break;
    }
    default: break;
  }
}
}  // namespace

void Elaborator::block(const ast::BlockStmt& b, bool newScope) {
  if (newScope) pushScope();
  for (const auto& s : b.stmts) stmt(*s);
  if (newScope) popScope();
}

void Elaborator::stmt(const ast::Stmt& s) {
  switch (s.kind) {
    case ast::Stmt::Kind::Let:
    case ast::Stmt::Kind::Var: {
      const auto& l = static_cast<const ast::LetStmt&>(s);
      EVal v = expr(*l.init);
      if (v.kind == EVal::Kind::View) {
        diags_.error(l.init->range, "bind the loaded value, not the view: let " + l.name + " = load(...)");
        v = EVal::error();
      } else if (v.kind == EVal::Kind::None) {
        diags_.error(l.init->range, "expression has no value");
        v = EVal::error();
      }
      if (l.type && !v.isError()) {
        // A type annotation checks the value; constants adopt the annotated scalar dtype.
        auto dt = resolveDType(l.type->dtype);
        if (!dt) diags_.error(l.type->dtypeRange, "unknown type '" + l.type->dtype + "'");
        else if (l.type->kind == ast::TypeExpr::Kind::Tensor)
          diags_.error(l.type->range, "a local cannot have a tensor type");
        else {
          std::vector<int64_t> shape;
          for (const auto& d : l.type->tileDims)
            if (auto n = constInt(expr(*d), "tile dimension")) shape.push_back(*n);
          ir::Value* val = toValue(v, *dt);
          if (val && (val->type().dtype != *dt || val->type().shape != shape)) {
            Type want = Type::tile(*dt, shape);
            diags_.error(l.init->range, "'" + l.name + "' is declared " + want.str() + " but initialized with " +
                                            val->type().str());
            v = EVal::error();
          } else if (val) {
            v = EVal::of(val, l.init->range);
          }
        }
      }
      declare(l.name, v, s.kind == ast::Stmt::Kind::Var, l.nameRange);
      break;
    }
    case ast::Stmt::Kind::Assign: assign(static_cast<const ast::AssignStmt&>(s)); break;
    case ast::Stmt::Kind::For: forStmt(static_cast<const ast::ForStmt&>(s)); break;
    case ast::Stmt::Kind::If: ifStmt(static_cast<const ast::IfStmt&>(s)); break;
    case ast::Stmt::Kind::Block: block(static_cast<const ast::BlockStmt&>(s)); break;
    case ast::Stmt::Kind::Return: {
      const auto& r = static_cast<const ast::ReturnStmt&>(s);
      if (!inFn_ || !fnResult_) {
        diags_.error(s.range, inFn_ ? "return must be the last statement of a fn"
                                    : "kernels end at their closing brace; early return is not supported "
                                      "(guard the work with if)");
        break;
      }
      *fnResult_ = r.value ? expr(*r.value) : EVal::none(s.range);
      fnResult_ = nullptr;  // any later return is misplaced
      break;
    }
    case ast::Stmt::Kind::Expr: {
      EVal v = expr(*static_cast<const ast::ExprStmt&>(s).expr);
      (void)v;  // calls such as store() are statements; a discarded value is harmless
      break;
    }
  }
}

void Elaborator::assign(const ast::AssignStmt& s) {
  Binding* b = lookup(s.name);
  if (!b) {
    diags_.error(s.nameRange, "assignment to undeclared name '" + s.name + "'; declare it with var");
    declare(s.name, EVal::error(), true, s.nameRange);  // later uses are not reported again
    return;
  }
  if (!b->isVar) {
    auto& d = diags_.error(s.nameRange, "cannot assign to '" + s.name + "': it is declared with let");
    DiagEngine::note(d, b->decl, "declared here; use var for a value that changes");
    return;
  }
  EVal v = expr(*s.value);
  if (s.op != "=") v = binary(s.op.substr(0, s.op.size() - 1), b->val, v, s.range);
  if (v.kind == EVal::Kind::View || v.kind == EVal::Kind::None) {
    diags_.error(s.value->range, "cannot assign " + typeStr(v) + " to '" + s.name + "'");
    v = EVal::error();
  }
  b->val = v;
}

EVal Elaborator::coerceForMerge(const EVal& v, const Type& t, SourceRange r) {
  ir::Value* x = toValue(v, t.dtype);
  if (!x) return EVal::error();
  if (x->type().dtype != t.dtype || !ir::broadcastShapes(x->type().shape, t.shape) ||
      *ir::broadcastShapes(x->type().shape, t.shape) != t.shape)
    return EVal::error();
  return EVal::of(broadcastTo(x, t.shape, r), r);
}

void Elaborator::forStmt(const ast::ForStmt& s) {
  CallArgs ra;
  if (!collectArgs(s.rangeArgs, ra)) return;
  if (ra.pos.empty() || ra.pos.size() > 3 || !ra.named.empty()) {
    diags_.error(s.range, "for takes range(stop), range(start, stop) or range(start, stop, step)");
    return;
  }
  EVal lo = ra.pos.size() == 1 ? EVal::ofInt(0, s.range) : ra.pos[0];
  EVal hi = ra.pos.size() == 1 ? ra.pos[0] : ra.pos[1];
  EVal step = ra.pos.size() == 3 ? ra.pos[2] : EVal::ofInt(1, s.range);
  if (step.kind == EVal::Kind::Int && step.i <= 0) {
    diags_.error(step.range, "range step must be positive, got " + std::to_string(step.i));
    return;
  }
  std::vector<ir::Value*> bounds;
  for (const EVal& e : {lo, hi, step}) {
    ir::Value* v = toValue(e, ir::DType::I32);
    if (!v) return;
    if (!v->type().isScalar() || !ir::isInt(v->type().dtype)) {
      diags_.error(e.range, "range bounds must be integer scalars, got " + v->type().str());
      return;
    }
    bounds.push_back(cast(v, ir::DType::I32, e.range));
  }
  // Values assigned in the body that live outside it are carried by the loop.
  std::set<std::string> assigned;
  collectAssigned(*s.body, assigned);
  std::vector<std::pair<std::string, Binding*>> carried;
  std::vector<ir::Value*> operands = bounds;
  for (const auto& n : assigned)
    if (Binding* b = lookup(n); b && b->isVar && !b->val.isError()) {
      ir::Value* v = toValue(b->val);
      if (!v) return;
      carried.emplace_back(n, b);
      operands.push_back(v);
    }
  std::vector<Type> types;
  for (size_t i = 3; i < operands.size(); ++i) types.push_back(operands[i]->type());
  ir::Operation* loop = builder_.create(OpKind::For, s.range, operands, types);
  ir::Block& body = loop->region(0).addBlock();
  ir::Value* iv = body.addArgument(Type::scalar(ir::DType::I32), s.var);
  std::vector<EVal> saved;
  for (size_t i = 0; i < carried.size(); ++i) {
    saved.push_back(carried[i].second->val);
    carried[i].second->val = EVal::of(body.addArgument(types[i], carried[i].first), s.range);
  }
  ir::Block* outer = builder_.block();
  builder_.setInsertionBlock(&body);
  pushScope();
  declare(s.var, EVal::of(iv, s.varRange), false, s.varRange);
  block(*s.body, false);
  popScope();
  std::vector<ir::Value*> yields;
  bool ok = true;
  for (size_t i = 0; i < carried.size(); ++i) {
    const EVal& fin = carried[i].second->val;
    if (fin.isError()) {
      ok = false;
      continue;
    }
    EVal c = coerceForMerge(fin, types[i], s.range);
    if (c.isError()) {
      auto& d = diags_.error(s.range, "'" + carried[i].first + "' changes type in the loop: " + types[i].str() +
                                          " before, " + typeStr(fin) + " after");
      DiagEngine::note(d, carried[i].second->decl, "declared here");
      ok = false;
      continue;
    }
    yields.push_back(c.value);
  }
  if (ok) builder_.create(OpKind::Yield, s.range, yields, {});
  else {
    std::vector<ir::Value*> args;
    for (unsigned i = 1; i < body.numArguments(); ++i) args.push_back(body.argument(i));
    builder_.create(OpKind::Yield, s.range, args, {});
  }
  builder_.setInsertionBlock(outer);
  for (size_t i = 0; i < carried.size(); ++i)
    carried[i].second->val = ok ? EVal::of(loop->result(static_cast<unsigned>(i)), s.range) : EVal::error();
}

void Elaborator::ifStmt(const ast::IfStmt& s) {
  EVal c = expr(*s.cond);
  if (c.isError()) return;
  if (c.kind == EVal::Kind::Bool) {  // a compile-time condition picks one branch
    if (c.b) block(*s.thenBody);
    else if (s.elseBody) stmt(*s.elseBody);
    return;
  }
  ir::Value* cv = toValue(c);
  if (!cv) return;
  if (!cv->type().isScalar() || cv->type().dtype != ir::DType::I1) {
    diags_.error(s.cond->range, "if condition must be a scalar bool, got " + cv->type().str() +
                                    (cv->type().isScalar() ? "" : "; use where() to select between tiles"));
    return;
  }
  std::set<std::string> assigned;
  collectAssigned(*s.thenBody, assigned);
  if (s.elseBody) collectAssigned(*s.elseBody, assigned);
  std::vector<std::pair<std::string, Binding*>> carried;
  std::vector<EVal> before;
  for (const auto& n : assigned)
    if (Binding* b = lookup(n); b && b->isVar && !b->val.isError()) {
      carried.emplace_back(n, b);
      before.push_back(b->val);
    }
  ir::Operation* op = builder_.create(OpKind::If, s.range, {cv}, {});
  ir::Block* outer = builder_.block();
  std::vector<EVal> finals[2];
  for (int branch = 0; branch < 2; ++branch) {
    builder_.setInsertionBlock(&op->region(branch).addBlock());
    for (size_t i = 0; i < carried.size(); ++i) carried[i].second->val = before[i];
    if (branch == 0) block(*s.thenBody);
    else if (s.elseBody) {
      pushScope();
      stmt(*s.elseBody);
      popScope();
    }
    for (auto& [n, b] : carried) finals[branch].push_back(b->val);
  }
  // Result types: a branch's IR value wins over the other's constant.
  std::vector<Type> types;
  bool ok = true;
  for (size_t i = 0; i < carried.size(); ++i) {
    const EVal& a = finals[0][i];
    const EVal& b = finals[1][i];
    if (a.isError() || b.isError()) {
      ok = false;
      continue;
    }
    std::optional<Type> t;
    if (a.isValue()) t = a.value->type();
    else if (b.isValue()) t = b.value->type();
    else {
      builder_.setInsertionBlock(&op->region(0).front());
      ir::Value* v = toValue(a);
      if (!v) { ok = false; continue; }
      t = v->type();
    }
    types.push_back(*t);
  }
  if (!ok) {
    builder_.setInsertionBlock(outer);
    for (auto& [n, b] : carried) b->val = EVal::error();
    // Leave a well-formed op: both regions end in an empty yield.
    for (int branch = 0; branch < 2; ++branch) {
      builder_.setInsertionBlock(&op->region(branch).front());
      builder_.create(OpKind::Yield, s.range, {}, {});
    }
    builder_.setInsertionBlock(outer);
    return;
  }
  for (int branch = 0; branch < 2; ++branch) {
    builder_.setInsertionBlock(&op->region(branch).front());
    std::vector<ir::Value*> ys;
    for (size_t i = 0; i < carried.size(); ++i) {
      EVal c2 = coerceForMerge(finals[branch][i], types[i], s.range);
      if (c2.isError()) {
        auto& d = diags_.error(s.range, "'" + carried[i].first + "' is " + typeStr(finals[0][i]) +
                                            " after the then-branch but " + typeStr(finals[1][i]) +
                                            (s.elseBody ? " after the else-branch" : " when the branch is skipped"));
        DiagEngine::note(d, carried[i].second->decl, "declared here");
        ok = false;
        break;
      }
      ys.push_back(c2.value);
    }
    builder_.create(OpKind::Yield, s.range, ok ? ys : std::vector<ir::Value*>{}, {});
  }
  builder_.setInsertionBlock(outer);
  for (size_t i = 0; i < carried.size(); ++i) {
    if (!ok) {
      carried[i].second->val = EVal::error();
      continue;
    }
    carried[i].second->val = EVal::of(op->addResult(types[i]), s.range);
  }
}

}  // namespace fnk
