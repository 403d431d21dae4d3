// The fnk AST: what the parser saw, with a SourceRange on every node. It holds
// no types; the elaborator (Elaborate.h) checks and lowers it per instantiation,
// because tile shapes depend on const-generic values.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "support/Source.h"

namespace fnk::ast {

struct Node {
  SourceRange range;
};

// ---------------------------------------------------------------- expressions
struct Expr : Node {
  enum class Kind { Int, Float, Bool, Name, Unary, Binary, Call, Method, Member, Index, Tuple, Shared };
  explicit Expr(Kind k) : kind(k) {}
  virtual ~Expr() = default;
  const Kind kind;
};
using ExprPtr = std::unique_ptr<Expr>;

template <typename T>
T* dynCast(Expr* e) { return e && e->kind == T::kKind ? static_cast<T*>(e) : nullptr; }
template <typename T>
const T* dynCast(const Expr* e) { return e && e->kind == T::kKind ? static_cast<const T*>(e) : nullptr; }

struct IntLit : Expr {
  static constexpr Kind kKind = Kind::Int;
  IntLit() : Expr(kKind) {}
  int64_t value = 0;
};
struct FloatLit : Expr {
  static constexpr Kind kKind = Kind::Float;
  FloatLit() : Expr(kKind) {}
  double value = 0;
};
struct BoolLit : Expr {
  static constexpr Kind kKind = Kind::Bool;
  BoolLit() : Expr(kKind) {}
  bool value = false;
};
struct NameExpr : Expr {
  static constexpr Kind kKind = Kind::Name;
  NameExpr() : Expr(kKind) {}
  std::string name;
};
struct UnaryExpr : Expr {
  static constexpr Kind kKind = Kind::Unary;
  UnaryExpr() : Expr(kKind) {}
  std::string op;  // "-", "!", "~"
  ExprPtr operand;
};
struct BinaryExpr : Expr {
  static constexpr Kind kKind = Kind::Binary;
  BinaryExpr() : Expr(kKind) {}
  std::string op;  // "+", "<=", "&&", "**", ...
  SourceRange opRange;
  ExprPtr lhs, rhs;
};
struct Arg {
  std::string name;  // empty for positional
  SourceRange nameRange;
  ExprPtr value;
};
struct CallExpr : Expr {  // f(args)
  static constexpr Kind kKind = Kind::Call;
  CallExpr() : Expr(kKind) {}
  ExprPtr callee;
  std::vector<Arg> args;
};
struct MethodExpr : Expr {  // base.name(args)
  static constexpr Kind kKind = Kind::Method;
  MethodExpr() : Expr(kKind) {}
  ExprPtr base;
  std::string name;
  SourceRange nameRange;
  std::vector<Arg> args;
};
struct MemberExpr : Expr {  // base.name
  static constexpr Kind kKind = Kind::Member;
  MemberExpr() : Expr(kKind) {}
  ExprPtr base;
  std::string name;
};
struct IndexArg {
  enum class Kind { Expr, Slice, NewAxis } kind = Kind::Expr;
  ExprPtr value;
  SourceRange range;
};
struct IndexExpr : Expr {  // base[i, :, None]
  static constexpr Kind kKind = Kind::Index;
  IndexExpr() : Expr(kKind) {}
  ExprPtr base;
  std::vector<IndexArg> indices;
};
struct TupleExpr : Expr {
  static constexpr Kind kKind = Kind::Tuple;
  TupleExpr() : Expr(kKind) {}
  std::vector<ExprPtr> elements;
};
struct SharedExpr : Expr {  // shared<f32>[4, 128]
  static constexpr Kind kKind = Kind::Shared;
  SharedExpr() : Expr(kKind) {}
  std::string dtype;
  SourceRange dtypeRange;
  std::vector<ExprPtr> dims;
};

// ---------------------------------------------------------------------- types
struct TypeExpr : Node {
  enum class Kind { Tensor, Tile, Named } kind = Kind::Named;
  std::string dtype;  // element type name (may be a dtype generic) or the name itself for Named
  SourceRange dtypeRange;
  std::vector<std::string> dims;      // Tensor: symbol names or decimal literals
  std::vector<SourceRange> dimRanges;
  std::vector<ExprPtr> tileDims;      // Tile
};

// ----------------------------------------------------------------- statements
struct Stmt : Node {
  enum class Kind { Let, Var, Assign, For, If, Return, Block, Expr };
  explicit Stmt(Kind k) : kind(k) {}
  virtual ~Stmt() = default;
  const Kind kind;
};
using StmtPtr = std::unique_ptr<Stmt>;

struct BlockStmt : Stmt {
  BlockStmt() : Stmt(Kind::Block) {}
  std::vector<StmtPtr> stmts;
};
struct LetStmt : Stmt {  // also `var`, with kind Var
  explicit LetStmt(Kind k) : Stmt(k) {}
  std::string name;
  SourceRange nameRange;
  std::unique_ptr<TypeExpr> type;  // optional annotation
  ExprPtr init;
};
struct AssignStmt : Stmt {
  AssignStmt() : Stmt(Kind::Assign) {}
  std::string name;
  SourceRange nameRange;
  std::string op;  // "=", "+=", ...
  ExprPtr value;
};
struct ForStmt : Stmt {
  ForStmt() : Stmt(Kind::For) {}
  std::string var;
  SourceRange varRange;
  std::vector<Arg> rangeArgs;  // range(stop) | range(start, stop) | range(start, stop, step)
  std::unique_ptr<BlockStmt> body;
};
struct IfStmt : Stmt {
  IfStmt() : Stmt(Kind::If) {}
  ExprPtr cond;
  std::unique_ptr<BlockStmt> thenBody;
  StmtPtr elseBody;  // BlockStmt, IfStmt or null
};
struct ReturnStmt : Stmt {
  ReturnStmt() : Stmt(Kind::Return) {}
  ExprPtr value;  // optional
};
struct ExprStmt : Stmt {
  ExprStmt() : Stmt(Kind::Expr) {}
  ExprPtr expr;
};

// --------------------------------------------------------------- declarations
struct GenericParam : Node {
  std::string name;
  std::string kind;  // "int", "bool", "dtype", "f32", ...
  SourceRange kindRange;
  bool hasDefault = false;
  std::string defaultText;  // the literal as written: "1024", "bf16", "true", "-1.5"
  SourceRange defaultRange;
};
struct Param : Node {
  std::string name;
  bool isOut = false;
  TypeExpr type;
};
struct NamedArg : Node {
  std::string name;
  ExprPtr value;
};
struct FuncDecl : Node {
  bool isKernel = false;
  std::string name;
  SourceRange nameRange;
  std::vector<GenericParam> generics;
  std::vector<Param> params;
  std::unique_ptr<TypeExpr> returnType;  // fn only, optional
  std::vector<NamedArg> launch;          // kernel only
  std::unique_ptr<BlockStmt> body;
};
struct Import : Node {
  std::string module;
};
struct Module : Node {
  std::string name;  // from `module a.b;` or derived from the file name
  int fileId = -1;
  std::vector<Import> imports;
  std::vector<std::unique_ptr<FuncDecl>> decls;
};

}  // namespace fnk::ast
