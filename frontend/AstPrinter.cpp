#include "frontend/AstPrinter.h"

#include <ostream>

#include "support/Source.h"

namespace fnk {

namespace {

class AstPrinter {
public:
  AstPrinter(std::ostream& os, const SourceManager& sm) : os_(os), sm_(sm) {}

  void module(const ast::Module& m) {
    os_ << "Module " << m.name << "\n";
    for (const auto& i : m.imports) line(1, "Import " + i.module, i.range);
    for (const auto& d : m.decls) decl(*d);
  }

private:
  void line(int depth, const std::string& text, SourceRange r) {
    for (int i = 0; i < depth; ++i) os_ << "  ";
    LineCol lc = sm_.lineCol(r.begin);
    os_ << text << " <" << lc.line << ":" << lc.col << ">\n";
  }

  void decl(const ast::FuncDecl& d) {
    line(1, std::string(d.isKernel ? "Kernel " : "Fn ") + d.name, d.range);
    for (const auto& g : d.generics)
      line(2, "Const " + g.name + ": " + g.kind + (g.hasDefault ? " = " + g.defaultText : ""), g.range);
    for (const auto& p : d.params) line(2, "Param " + p.name + (p.isOut ? " out " : " ") + type(p.type), p.range);
    for (const auto& l : d.launch) {
      line(2, "Launch " + l.name, l.range);
      expr(3, *l.value);
    }
    stmt(2, *d.body);
  }

  static std::string type(const ast::TypeExpr& t) {
    switch (t.kind) {
      case ast::TypeExpr::Kind::Tensor: {
        std::string s = "tensor<" + t.dtype + ">[";
        for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + t.dims[i];
        return s + "]";
      }
      case ast::TypeExpr::Kind::Tile: return "tile<" + t.dtype + ">[" + std::to_string(t.tileDims.size()) + " dims]";
      case ast::TypeExpr::Kind::Named: return t.dtype.empty() ? "(untyped)" : t.dtype;
    }
    return "?";
  }

  void args(int depth, const std::vector<ast::Arg>& as) {
    for (const auto& a : as) {
      if (!a.name.empty()) line(depth, "Keyword " + a.name, a.nameRange);
      expr(depth + (a.name.empty() ? 0 : 1), *a.value);
    }
  }

  void stmt(int depth, const ast::Stmt& s) {
    switch (s.kind) {
      case ast::Stmt::Kind::Block:
        line(depth, "Block", s.range);
        for (const auto& x : static_cast<const ast::BlockStmt&>(s).stmts) stmt(depth + 1, *x);
        break;
      case ast::Stmt::Kind::Let:
      case ast::Stmt::Kind::Var: {
        const auto& l = static_cast<const ast::LetStmt&>(s);
        line(depth, std::string(s.kind == ast::Stmt::Kind::Let ? "Let " : "Var ") + l.name +
                        (l.type ? ": " + type(*l.type) : ""), s.range);
        expr(depth + 1, *l.init);
        break;
      }
      case ast::Stmt::Kind::Assign: {
        const auto& a = static_cast<const ast::AssignStmt&>(s);
        line(depth, "Assign " + a.name + " " + a.op, s.range);
        expr(depth + 1, *a.value);
        break;
      }
      case ast::Stmt::Kind::For: {
        const auto& f = static_cast<const ast::ForStmt&>(s);
        line(depth, "For " + f.var, s.range);
        args(depth + 1, f.rangeArgs);
        stmt(depth + 1, *f.body);
        break;
      }
      case ast::Stmt::Kind::If: {
        const auto& i = static_cast<const ast::IfStmt&>(s);
        line(depth, "If", s.range);
        expr(depth + 1, *i.cond);
        stmt(depth + 1, *i.thenBody);
        if (i.elseBody) stmt(depth + 1, *i.elseBody);
        break;
      }
      case ast::Stmt::Kind::Return: {
        const auto& r = static_cast<const ast::ReturnStmt&>(s);
        line(depth, "Return", s.range);
        if (r.value) expr(depth + 1, *r.value);
        break;
      }
      case ast::Stmt::Kind::Expr:
        line(depth, "ExprStmt", s.range);
        expr(depth + 1, *static_cast<const ast::ExprStmt&>(s).expr);
        break;
    }
  }

  void expr(int depth, const ast::Expr& e) {
    using K = ast::Expr::Kind;
    switch (e.kind) {
      case K::Int: line(depth, "Int " + std::to_string(static_cast<const ast::IntLit&>(e).value), e.range); break;
      case K::Float: line(depth, "Float " + std::to_string(static_cast<const ast::FloatLit&>(e).value), e.range); break;
      case K::Bool: line(depth, static_cast<const ast::BoolLit&>(e).value ? "Bool true" : "Bool false", e.range); break;
      case K::Name: line(depth, "Name " + static_cast<const ast::NameExpr&>(e).name, e.range); break;
      case K::Unary: {
        const auto& u = static_cast<const ast::UnaryExpr&>(e);
        line(depth, "Unary " + u.op, e.range);
        expr(depth + 1, *u.operand);
        break;
      }
      case K::Binary: {
        const auto& b = static_cast<const ast::BinaryExpr&>(e);
        line(depth, "Binary " + b.op, e.range);
        expr(depth + 1, *b.lhs);
        expr(depth + 1, *b.rhs);
        break;
      }
      case K::Call: {
        const auto& c = static_cast<const ast::CallExpr&>(e);
        line(depth, "Call", e.range);
        expr(depth + 1, *c.callee);
        args(depth + 1, c.args);
        break;
      }
      case K::Method: {
        const auto& m = static_cast<const ast::MethodExpr&>(e);
        line(depth, "Method ." + m.name, e.range);
        expr(depth + 1, *m.base);
        args(depth + 1, m.args);
        break;
      }
      case K::Member: {
        const auto& m = static_cast<const ast::MemberExpr&>(e);
        line(depth, "Member ." + m.name, e.range);
        expr(depth + 1, *m.base);
        break;
      }
      case K::Index: {
        const auto& x = static_cast<const ast::IndexExpr&>(e);
        line(depth, "Index", e.range);
        expr(depth + 1, *x.base);
        for (const auto& i : x.indices) {
          if (i.kind == ast::IndexArg::Kind::Expr) expr(depth + 1, *i.value);
          else line(depth + 1, i.kind == ast::IndexArg::Kind::Slice ? "Slice :" : "NewAxis", i.range);
        }
        break;
      }
      case K::Tuple:
        line(depth, "Tuple", e.range);
        for (const auto& x : static_cast<const ast::TupleExpr&>(e).elements) expr(depth + 1, *x);
        break;
      case K::Shared: {
        const auto& s = static_cast<const ast::SharedExpr&>(e);
        line(depth, "Shared " + s.dtype, e.range);
        for (const auto& d : s.dims) expr(depth + 1, *d);
        break;
      }
    }
  }

  std::ostream& os_;
  const SourceManager& sm_;
};

}  // namespace

void printAst(std::ostream& os, const ast::Module& m, const SourceManager& sm) { AstPrinter(os, sm).module(m); }

}  // namespace fnk
