// Internal to the front end: the elaborator's state and its value model.
// Elaborate.h is the public entry point.
#pragma once
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "frontend/Elaborate.h"

namespace fnk {

/// What an expression elaborates to. Compile-time constants (literals,
/// const generics and arithmetic on them) stay constants until they meet an IR
/// value, whose dtype they then adopt, as Python scalars do in Triton.
struct EVal {
  enum class Kind { Error, None, Value, Int, Float, Bool, DType, View, Tuple };
  Kind kind = Kind::Error;
  ir::Value* value = nullptr;         // Value; View: the tensor or shared buffer
  std::vector<ir::Value*> indices;    // View
  int64_t i = 0;
  double f = 0;
  bool b = false;
  ir::DType dtype = ir::DType::F32;
  std::vector<EVal> elems;            // Tuple
  SourceRange range;

  static EVal error() { return {}; }
  static EVal none(SourceRange r) { EVal e; e.kind = Kind::None; e.range = r; return e; }
  static EVal of(ir::Value* v, SourceRange r) { EVal e; e.kind = Kind::Value; e.value = v; e.range = r; return e; }
  static EVal ofInt(int64_t v, SourceRange r) { EVal e; e.kind = Kind::Int; e.i = v; e.range = r; return e; }
  static EVal ofFloat(double v, SourceRange r) { EVal e; e.kind = Kind::Float; e.f = v; e.range = r; return e; }
  static EVal ofBool(bool v, SourceRange r) { EVal e; e.kind = Kind::Bool; e.b = v; e.range = r; return e; }
  static EVal ofDType(ir::DType t, SourceRange r) { EVal e; e.kind = Kind::DType; e.dtype = t; e.range = r; return e; }
  bool isError() const { return kind == Kind::Error; }
  bool isConst() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  bool isValue() const { return kind == Kind::Value; }
};

/// A shape as diagnostics print it: "[128, 64]", the way tile types print
/// their dims, or "scalar" for rank 0.
inline std::string dimsStr(const std::vector<int64_t>& s) {
  if (s.empty()) return "scalar";
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

struct Binding {
  EVal val;
  bool isVar = false;
  SourceRange decl;
};

struct CallArgs;

class Elaborator {
public:
  Elaborator(const Program& p, DiagEngine& d) : program_(p), diags_(d) {}
  std::unique_ptr<ir::Function> kernel(const ast::FuncDecl& k, const ConstOverrides& consts);

  // ---- shared with the builtins (ElabBuiltins.cpp)
  DiagEngine& diags() { return diags_; }
  ir::Builder& b() { return builder_; }
  EVal expr(const ast::Expr& e);
  /// An IR value for `v`: constants materialize (ints as i32, floats as f32,
  /// bools as i1, or as `hint` when given). Views and dtypes are errors.
  ir::Value* toValue(const EVal& v, std::optional<ir::DType> hint = std::nullopt);
  ir::Value* cast(ir::Value* v, ir::DType to, SourceRange r);
  ir::Value* broadcastTo(ir::Value* v, const std::vector<int64_t>& shape, SourceRange r);
  /// Brings two operands to one dtype and shape by the promotion rules.
  /// `what` names them in a diagnostic ("operands of '+'"), reported at `at`
  /// when valid, else at `r`.
  bool unify(EVal& a, EVal& b, SourceRange r, ir::Value*& va, ir::Value*& vb,
             const std::string& what = "operands", SourceRange at = {});
  /// `opRange` locates diagnostics at the operator token when given.
  EVal binary(const std::string& op, EVal a, EVal b, SourceRange r, SourceRange opRange = {});
  EVal unaryMath(ir::OpKind k, const EVal& a, SourceRange r);
  EVal reduce(const EVal& x, std::optional<int64_t> axis, const std::string& kind, SourceRange r);
  bool checkTile(ir::DType t, const std::vector<int64_t>& shape, SourceRange r);
  ir::Value* emit(ir::OpKind k, SourceRange r, std::vector<ir::Value*> ops, ir::Type result, ir::AttrDict a = {});
  std::optional<int64_t> constInt(const EVal& v, const char* what);
  /// An optional compile-time integer argument: `v`'s value, or `dflt` when
  /// it was not given (null); nullopt, reported, when it is not an integer.
  std::optional<int64_t> constInt(const EVal* v, int64_t dflt, const char* what);
  std::optional<ir::DType> dtypeArg(const EVal& v);
  /// An element type named in a type: a dtype const parameter or a dtype name.
  std::optional<ir::DType> resolveDType(const std::string& name) const;
  std::optional<std::vector<int64_t>> shapeArg(const EVal& v);
  /// Broadcasts the indices of `view` into `shape`; false (reported) when they do not broadcast.
  bool indexShape(const EVal& view, std::vector<int64_t>& shape);
  /// The optional `mask =` argument of fname(): a bool tile broadcast into
  /// `shape`, null when absent; false (reported) when it is not one.
  bool maskArg(const std::string& fname, const CallArgs& args, std::vector<int64_t>& shape, ir::Value*& mask);
  /// fname()'s optional `key = <compile-time bool>` into `value` (false
  /// when absent); false (reported) when it is not a compile-time bool.
  bool constBoolArg(const std::string& fname, const CallArgs& args, const char* key, bool& value);
  /// A load's or store's `stream = true` (a compile-time bool, global tensors
  /// only) into its attributes; false after a diagnostic.
  bool evictionArg(const std::string& fname, const CallArgs& args, const EVal& view, ir::AttrDict& a);
  bool copyOperands(const std::string& fname, const CallArgs& args, SourceRange r, bool toShared = true);
  bool runIndices(const std::string& fname, const EVal& view);
  std::string typeStr(const EVal& v) const;

private:
  // statements (ElabStmt.cpp)
  void block(const ast::BlockStmt& b, bool newScope = true);
  void stmt(const ast::Stmt& s);
  void forStmt(const ast::ForStmt& s);
  void ifStmt(const ast::IfStmt& s);
  void assign(const ast::AssignStmt& s);
  EVal coerceForMerge(const EVal& v, const ir::Type& t, SourceRange r);

  // expressions (ElabExpr.cpp)
  EVal name(const ast::NameExpr& e);
  EVal unary(const ast::UnaryExpr& e);
  EVal index(const ast::IndexExpr& e);
  EVal call(const ast::CallExpr& e);
  EVal method(const ast::MethodExpr& e);
  EVal callFn(const ast::FuncDecl& fn, CallArgs& args, SourceRange r);
  EVal builtin(const std::string& name, CallArgs& args, SourceRange r, bool& found);
  EVal clusterOp(const ast::MethodExpr& e, CallArgs& args);
  bool collectArgs(const std::vector<ast::Arg>& in, CallArgs& out);
  EVal typeCheckParam(const ast::Param& p, EVal v);

  // scopes
  Binding* lookup(const std::string& n);
  void declare(const std::string& n, EVal v, bool isVar, SourceRange decl);
  void pushScope() { scopes_.emplace_back(); }
  void popScope() { scopes_.pop_back(); }
  bool resolveConsts(const ast::FuncDecl& k, const ConstOverrides& consts);
  std::optional<EVal> parseConstText(const ast::GenericParam& g, const std::string& text, SourceRange r);
  bool bindParams(ir::Function& f, const ast::FuncDecl& k);
  void enterRegion(ir::Block& entry, const ast::FuncDecl& k);
  void launch(ir::Function& f, const ast::FuncDecl& k);
  void requirement(const ast::NamedArg& na, const EVal& v);

  const Program& program_;
  DiagEngine& diags_;
  ir::Builder builder_;
  std::vector<std::unordered_map<std::string, Binding>> scopes_;
  std::map<std::string, EVal> consts_;
  /// The kernel's const generics by name, where declared: a helper does not
  /// see them (consts_ holds only its own), and its error says so.
  std::map<std::string, SourceRange> kernelConsts_;
  std::vector<std::pair<std::string, ir::Attr>> constRecord_;
  int inlineDepth_ = 0;
  int64_t sharedBytes_ = 0;
  bool inFn_ = false;
  std::optional<EVal>* fnResult_ = nullptr;
};

/// Positional and keyword arguments of a call, elaborated.
struct CallArgs {
  std::vector<EVal> pos;
  std::vector<std::pair<std::string, EVal>> named;
  std::vector<SourceRange> namedRanges;
  const EVal* get(const std::string& n) const {
    for (const auto& [k, v] : named)
      if (k == n) return &v;
    return nullptr;
  }
};

}  // namespace fnk
