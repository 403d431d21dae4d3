// Kernel instantiation: const-generic values, parameters and their symbolic
// dims, the launch clause, and inlining of helper fns.
#include <cerrno>
#include <cstdlib>
#include <set>

#include "frontend/Elaborator.h"

namespace fnk {

using ir::DType;
using ir::OpKind;
using ir::Type;

std::optional<EVal> Elaborator::parseConstText(const ast::GenericParam& g, const std::string& text, SourceRange r) {
  auto bad = [&](const char* want) -> std::optional<EVal> {
    diags_.error(r, "const parameter '" + g.name + "' is " + g.kind + " but got '" + text + "' (expected " + want + ")");
    return std::nullopt;
  };
  if (g.kind == "int") {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 0);
    if (text.empty() || *end || errno == ERANGE) return bad("an integer");
    return EVal::ofInt(v, r);
  }
  if (g.kind == "bool") {
    if (text != "true" && text != "false") return bad("true or false");
    return EVal::ofBool(text == "true", r);
  }
  if (g.kind == "dtype") {
    auto t = ir::parseDType(text);
    if (!t) return bad("a dtype such as f32, bf16 or i32");
    return EVal::ofDType(*t, r);
  }
  if (g.kind == "float" || g.kind == "f32" || g.kind == "f64") {
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end) return bad("a number");
    return EVal::ofFloat(v, r);
  }
  diags_.error(g.kindRange, "unknown const parameter kind '" + g.kind + "'; expected int, bool, dtype or float");
  return std::nullopt;
}

bool Elaborator::resolveConsts(const ast::FuncDecl& k, const ConstOverrides& overrides) {
  bool ok = true;
  std::set<std::string> seen;
  kernelConsts_.clear();
  for (const auto& g : k.generics) {
    if (!seen.insert(g.name).second) {
      diags_.error(g.range, "const parameter '" + g.name + "' declared twice");
      ok = false;
      continue;
    }
    std::optional<EVal> v;
    if (auto it = overrides.find(g.name); it != overrides.end()) v = parseConstText(g, it->second, g.range);
    else if (g.hasDefault) v = parseConstText(g, g.defaultText, g.defaultRange);
    else {
      diags_.error(g.range, "const parameter '" + g.name + "' of '" + k.name + "' has no default; give it with -D " +
                                g.name + "=VALUE");
      ok = false;
      continue;
    }
    if (!v) {
      ok = false;
      continue;
    }
    consts_[g.name] = *v;
    kernelConsts_[g.name] = g.range;
    ir::Attr a;
    switch (v->kind) {
      case EVal::Kind::Int: a = v->i; break;
      case EVal::Kind::Float: a = v->f; break;
      case EVal::Kind::Bool: a = v->b; break;
      default: a = v->dtype; break;
    }
    constRecord_.emplace_back(g.name, a);
  }
  return ok;
}

bool Elaborator::bindParams(ir::Function& f, const ast::FuncDecl& k) {
  bool ok = true;
  std::set<std::string> names;
  for (const auto& p : k.params) {
    if (!names.insert(p.name).second || consts_.count(p.name)) {
      diags_.error(p.range, "parameter '" + p.name + "' is declared twice");
      ok = false;
      continue;
    }
    const ast::TypeExpr& t = p.type;
    if (t.dtype.empty()) {
      diags_.error(p.range, "kernel parameter '" + p.name + "' needs a type");
      ok = false;
      continue;
    }
    std::optional<DType> dt = resolveDType(t.dtype);
    if (!dt) {
      diags_.error(t.dtypeRange, "unknown element type '" + t.dtype + "'");
      ok = false;
      continue;
    }
    if (t.kind == ast::TypeExpr::Kind::Tensor) {
      for (size_t i = 0; i < t.dims.size(); ++i)
        if (consts_.count(t.dims[i])) {
          diags_.error(t.dimRanges[i], "dim '" + t.dims[i] + "' has the name of a const parameter; "
                                                           "tensor dims are bound at launch");
          ok = false;
        }
      if (t.dims.size() > 4) {
        diags_.error(t.range, "tensors have at most 4 dimensions");
        ok = false;
        continue;
      }
      f.params.push_back({p.name, Type::tensor(*dt, t.dims, p.isOut)});
    } else if (t.kind == ast::TypeExpr::Kind::Named) {
      if (p.isOut) {
        diags_.error(p.range, "only tensor parameters can be 'out'");
        ok = false;
        continue;
      }
      f.params.push_back({p.name, Type::scalar(*dt)});
    } else {
      diags_.error(t.range, "kernel parameters are tensors or scalars; tiles live inside the kernel");
      ok = false;
    }
  }
  return ok;
}

void Elaborator::enterRegion(ir::Block& entry, const ast::FuncDecl& k) {
  scopes_.clear();
  pushScope();
  builder_.setInsertionBlock(&entry);
  // Dim symbols come from the first tensor naming them; tile.dim ops sit at the
  // region entry so every nested region can use them (DCE drops unused ones).
  std::set<std::string> dims;
  for (unsigned i = 0; i < entry.numArguments(); ++i) {
    ir::Value* arg = entry.argument(i);
    declare(arg->nameHint, EVal::of(arg, k.params[i].range), false, k.params[i].range);
    if (!arg->type().isTensor()) continue;
    const auto& ds = arg->type().dims;
    for (size_t axis = 0; axis < ds.size(); ++axis) {
      if (std::isdigit(static_cast<unsigned char>(ds[axis][0])) || !dims.insert(ds[axis]).second) continue;
      if (lookup(ds[axis])) continue;  // a parameter of that name wins
      ir::AttrDict a;
      a.set("axis", static_cast<int64_t>(axis));
      ir::Value* d = emit(OpKind::Dim, k.params[i].range, {arg}, Type::scalar(DType::I32), a);
      declare(ds[axis], EVal::of(d, k.params[i].type.range), false, k.params[i].type.range);
    }
  }
}

void Elaborator::requirement(const ast::NamedArg& na, const EVal& v) {
  // `requires = cond` (or a tuple of conditions): checked at every launch,
  // before anything runs; a condition known false now is an error now.
  const std::string& text = program_.sources().text(na.value->range.begin.file);
  for (const EVal& c : v.kind == EVal::Kind::Tuple ? v.elems : std::vector<EVal>{v}) {
    SourceRange r = c.range.valid() ? c.range : na.value->range;
    std::string what = text.substr(r.begin.offset, r.end - r.begin.offset);
    if (c.kind == EVal::Kind::Bool) {
      if (!c.b) diags_.error(r, "launch requirement '" + what + "' is false for these const values");
      continue;
    }
    ir::Value* cv = toValue(c);
    if (!cv) continue;
    if (!cv->type().isScalar() || cv->type().dtype != DType::I1) {
      diags_.error(r, "a launch requirement must be a bool scalar, got " + cv->type().str());
      continue;
    }
    ir::AttrDict a;
    a.set("message", what);
    builder_.create(OpKind::LaunchCheck, r, {cv}, {}, a);
  }
}

void Elaborator::launch(ir::Function& f, const ast::FuncDecl& k) {
  ir::Block& entry = f.launch.addBlock();
  for (const auto& p : f.params) entry.addArgument(p.type, p.name);
  enterRegion(entry, k);
  std::vector<ir::Value*> grid;
  int64_t warps = 4;
  std::vector<int64_t> cluster{1, 1, 1};
  int64_t ctasPerSm = 0;  // launch(ctas_per_sm = K), checked against warps below
  SourceRange ctasRange;
  std::set<std::string> seen;
  for (const auto& na : k.launch) {
    if (!seen.insert(na.name).second) {
      diags_.error(na.range, "launch argument '" + na.name + "' given twice");
      continue;
    }
    EVal v = expr(*na.value);
    if (v.isError()) continue;
    if (na.name == "requires") {
      requirement(na, v);
      continue;
    }
    std::vector<EVal> elems = v.kind == EVal::Kind::Tuple ? v.elems : std::vector<EVal>{v};
    if (elems.size() > 3) {
      diags_.error(na.value->range, na.name + " has " + std::to_string(elems.size()) + " dimensions; at most 3");
      continue;
    }
    if (na.name == "grid") {
      for (const EVal& e : elems) {
        ir::Value* g = toValue(e, DType::I32);
        if (g && (!g->type().isScalar() || !ir::isInt(g->type().dtype))) {
          diags_.error(e.range, "grid dimensions must be integer scalars, got " + g->type().str());
          g = nullptr;
        }
        if (g) grid.push_back(cast(g, DType::I32, e.range));
      }
    } else if (na.name == "warps") {
      auto w = constInt(v, "warps");
      if (w && (*w < 1 || *w > 32)) diags_.error(na.value->range, "warps must be between 1 and 32, got " + std::to_string(*w));
      else if (w) warps = *w;
    } else if (na.name == "cluster") {
      int64_t total = 1;
      for (size_t i = 0; i < elems.size(); ++i) {
        auto c = constInt(elems[i], "cluster dimension");
        if (!c) continue;
        if (*c < 1 || *c > 16) diags_.error(elems[i].range, "cluster dimension must be between 1 and 16, got " + std::to_string(*c));
        else cluster[i] = *c, total *= *c;
      }
      if (total > 16)
        diags_.error(na.value->range, "cluster of " + std::to_string(total) + " CTAs; Hopper allows at most 16");
    } else if (na.name == "prefetch") {
      auto d = constInt(v, "prefetch");
      if (d && (*d < 0 || *d > ir::kMaxPrefetch))
        diags_.error(na.value->range,
                     "prefetch must be between 0 and " + std::to_string(ir::kMaxPrefetch) + ", got " + std::to_string(*d));
      else if (d) f.attrs.set("prefetch", *d);
    } else if (na.name == "ctas_per_sm") {
      auto n = constInt(v, "ctas_per_sm");
      // 0 leaves the occupancy to the lowering, as if ctas_per_sm were not
      // given, so a const generic can turn the request off.
      if (n && (*n < 0 || *n > ir::kMaxCtasPerSm))
        diags_.error(na.value->range, "ctas_per_sm must be between 0 and " + std::to_string(ir::kMaxCtasPerSm) +
                                          ", got " + std::to_string(*n));
      else if (n) ctasPerSm = *n, ctasRange = na.value->range;
    } else if (na.name == "aligned_code") {
      if (v.kind != EVal::Kind::Bool)
        diags_.error(na.value->range, "aligned_code must be a compile-time bool, got " + typeStr(v));
      else if (v.b)
        f.attrs.set("aligned_code", true);
    } else {
      diags_.error(na.range, "unknown launch argument '" + na.name +
                                 "'; expected grid, warps, cluster, prefetch, ctas_per_sm, aligned_code or requires");
    }
  }
  while (grid.size() < 3) grid.push_back(toValue(EVal::ofInt(1, k.range), DType::I32));
  builder_.create(OpKind::LaunchGrid, k.range, grid, {});
  f.attrs.set("warps", warps);
  f.attrs.set("cluster", cluster);
  if (ctasPerSm > 0) {
    // An SM holds 2048 threads: more CTAs than that leaves room for are not
    // resident together, whatever the registers.
    if (ctasPerSm * warps * 32 > ir::kThreadsPerSm)
      diags_.error(ctasRange, "ctas_per_sm = " + std::to_string(ctasPerSm) + " CTAs of " + std::to_string(warps) +
                                  " warps is " + std::to_string(ctasPerSm * warps * 32) + " threads; an SM holds " +
                                  std::to_string(ir::kThreadsPerSm));
    else
      f.attrs.set("ctas_per_sm", ctasPerSm);
  }
}

EVal Elaborator::typeCheckParam(const ast::Param& p, EVal v) {
  const ast::TypeExpr& t = p.type;
  if (t.dtype.empty() || v.isError()) return v;  // untyped helper parameter
  auto dt = resolveDType(t.dtype);
  if (!dt) {
    diags_.error(t.dtypeRange, "unknown element type '" + t.dtype + "'");
    return EVal::error();
  }
  if (t.kind == ast::TypeExpr::Kind::Tensor) {
    if (!v.isValue() || !v.value->type().isTensor() || v.value->type().dtype != *dt ||
        v.value->type().rank() != t.dims.size()) {
      diags_.error(v.range, "argument for '" + p.name + "' must be a tensor<" + t.dtype + "> of rank " +
                                std::to_string(t.dims.size()) + ", got " + typeStr(v));
      return EVal::error();
    }
    return v;
  }
  ir::Value* x = toValue(v, *dt);
  if (!x) return EVal::error();
  std::vector<int64_t> shape;
  for (const auto& d : t.tileDims)
    if (auto n = constInt(expr(*d), "tile dimension")) shape.push_back(*n);
  if (x->type().dtype != *dt || x->type().shape != shape) {
    diags_.error(v.range, "argument for '" + p.name + "' must be " + Type::tile(*dt, shape).str() + ", got " +
                              x->type().str());
    return EVal::error();
  }
  return EVal::of(x, v.range);
}

EVal Elaborator::callFn(const ast::FuncDecl& fn, CallArgs& args, SourceRange r) {
  if (inlineDepth_ >= kMaxInlineDepth) {
    diags_.error(r, "calls nest deeper than " + std::to_string(kMaxInlineDepth) + " (is '" + fn.name + "' recursive?)");
    return EVal::error();
  }
  if (args.pos.size() != fn.params.size()) {
    auto& d = diags_.error(r, "'" + fn.name + "' takes " + std::to_string(fn.params.size()) + " arguments, got " +
                                  std::to_string(args.pos.size()));
    DiagEngine::note(d, fn.nameRange, "'" + fn.name + "' is declared here");
    return EVal::error();
  }
  // A fn sees its own parameters and const generics, not the caller's locals.
  auto savedScopes = std::move(scopes_);
  auto savedConsts = std::move(consts_);
  auto* savedResult = fnResult_;
  bool savedInFn = inFn_;
  scopes_.clear();
  consts_.clear();
  pushScope();
  bool ok = true;
  for (const auto& g : fn.generics) {
    std::optional<EVal> v;
    if (const EVal* given = args.get(g.name)) v = *given;
    else if (g.hasDefault) v = parseConstText(g, g.defaultText, g.defaultRange);
    else {
      diags_.error(r, "'" + fn.name + "' needs const parameter '" + g.name + "' (pass " + g.name + "=...)");
      ok = false;
    }
    if (v) consts_[g.name] = *v;
  }
  for (size_t i = 0; i < args.named.size(); ++i) {
    bool known = false;
    for (const auto& g : fn.generics) known |= g.name == args.named[i].first;
    if (!known) {
      diags_.error(args.namedRanges[i], "'" + fn.name + "' has no const parameter '" + args.named[i].first + "'");
      ok = false;
    }
  }
  for (size_t i = 0; i < fn.params.size() && ok; ++i) {
    EVal v = typeCheckParam(fn.params[i], args.pos[i]);
    ok &= !v.isError();
    declare(fn.params[i].name, v, false, fn.params[i].range);
  }
  std::optional<EVal> result;
  unsigned errorsBefore = diags_.errorCount();
  if (ok) {
    ++inlineDepth_;
    inFn_ = true;
    const auto& stmts = fn.body->stmts;
    for (size_t i = 0; i < stmts.size(); ++i) {
      bool last = i + 1 == stmts.size();
      fnResult_ = last && stmts[i]->kind == ast::Stmt::Kind::Return ? &result : nullptr;
      stmt(*stmts[i]);
    }
    --inlineDepth_;
    ok = diags_.errorCount() == errorsBefore;  // a body already reported stays quiet at the call site
  }
  scopes_ = std::move(savedScopes);
  consts_ = std::move(savedConsts);
  fnResult_ = savedResult;
  inFn_ = savedInFn;
  if (!ok) return EVal::error();
  return result ? *result : EVal::none(r);
}

std::unique_ptr<ir::Function> Elaborator::kernel(const ast::FuncDecl& k, const ConstOverrides& overrides) {
  unsigned before = diags_.errorCount();
  auto f = std::make_unique<ir::Function>();
  f->name = k.name;
  f->loc = k.range;
  if (!resolveConsts(k, overrides)) return nullptr;
  f->consts = constRecord_;
  if (!bindParams(*f, k)) return nullptr;
  launch(*f, k);
  ir::Block& entry = f->body.addBlock();
  for (const auto& p : f->params) entry.addArgument(p.type, p.name);
  enterRegion(entry, k);
  pushScope();
  const auto& stmts = k.body->stmts;
  for (size_t i = 0; i < stmts.size(); ++i) {
    if (i + 1 == stmts.size() && stmts[i]->kind == ast::Stmt::Kind::Return &&
        !static_cast<const ast::ReturnStmt&>(*stmts[i]).value)
      break;  // a trailing bare `return;` is the kernel's end
    stmt(*stmts[i]);
  }
  builder_.setInsertionBlock(&entry);
  builder_.create(OpKind::Return, k.range, {}, {});
  if (diags_.errorCount() != before) return nullptr;
  return f;
}

std::unique_ptr<ir::Function> elaborateKernel(const Program& program, const ast::FuncDecl& kernel,
                                              const ConstOverrides& consts, DiagEngine& diags) {
  return Elaborator(program, diags).kernel(kernel, consts);
}

bool checkKernelsWithDefaults(const Program& program, DiagEngine& diags) {
  bool ok = true;
  for (const auto& d : program.root()->decls) {
    bool defaults = d->isKernel;
    for (const auto& g : d->generics) defaults &= g.hasDefault;
    if (defaults) ok &= elaborateKernel(program, *d, {}, diags) != nullptr;
  }
  return ok;
}

std::unique_ptr<ir::Module> elaborateModule(const Program& program, const ConstOverrides& consts, DiagEngine& diags,
                                            const std::string& onlyKernel) {
  const ast::Module* root = program.root();
  if (!root) return nullptr;
  auto m = std::make_unique<ir::Module>();
  m->name = root->name;
  unsigned before = diags.errorCount();
  // Names are checked across the whole program: a duplicate is an error even
  // when only one kernel is asked for.
  std::map<std::string, const ast::FuncDecl*> seen;
  for (const auto& mod : program.modules())
    for (const auto& d : mod->decls) {
      auto [it, fresh] = seen.emplace(d->name, d.get());
      if (!fresh && mod.get() == root) {
        auto& diag = diags.error(d->nameRange, "'" + d->name + "' is defined twice");
        DiagEngine::note(diag, it->second->nameRange, "first definition here");
      }
    }
  std::set<std::string> used;
  bool found = onlyKernel.empty();
  for (const auto& d : root->decls) {
    if (!d->isKernel || (!onlyKernel.empty() && d->name != onlyKernel)) continue;
    found = true;
    for (const auto& g : d->generics) used.insert(g.name);
    if (auto f = elaborateKernel(program, *d, consts, diags)) m->functions.push_back(std::move(f));
  }
  if (!found) {
    std::string names;
    for (const auto& d : root->decls)
      if (d->isKernel) names += (names.empty() ? "" : ", ") + d->name;
    diags.error({}, "no kernel named '" + onlyKernel + "' in " + program.sources().name(root->fileId) +
                        (names.empty() ? " (it has no kernels)" : " (kernels: " + names + ")"));
  }
  for (const auto& [name, value] : consts)
    if (found && !used.count(name)) diags.error({}, "-D " + name + ": no kernel has a const parameter named '" + name + "'");
  if (diags.errorCount() != before) return nullptr;
  return m;
}

}  // namespace fnk
