// The built-in functions of the kernel language: index sources, constructors,
// memory access, math, reductions, shape changes, casts, and cluster ops.
#include <algorithm>
#include <set>

#include "frontend/Elaborator.h"

namespace fnk {

using ir::DType;
using ir::OpKind;
using ir::Type;

std::optional<int64_t> Elaborator::constInt(const EVal& v, const char* what) {
  if (v.isError()) return std::nullopt;
  if (v.kind != EVal::Kind::Int) {
    diags_.error(v.range, std::string(what) + " must be a compile-time integer, got " + typeStr(v));
    return std::nullopt;
  }
  return v.i;
}

std::optional<int64_t> Elaborator::constInt(const EVal* v, int64_t dflt, const char* what) {
  return v ? constInt(*v, what) : dflt;
}

std::optional<DType> Elaborator::dtypeArg(const EVal& v) {
  if (v.isError()) return std::nullopt;
  if (v.kind != EVal::Kind::DType) {
    diags_.error(v.range, "expected a dtype (f32, bf16, i32, ...), got " + typeStr(v));
    return std::nullopt;
  }
  return v.dtype;
}

std::optional<DType> Elaborator::resolveDType(const std::string& name) const {
  if (auto it = consts_.find(name); it != consts_.end())
    return it->second.kind == EVal::Kind::DType ? std::optional<DType>(it->second.dtype) : std::nullopt;
  return ir::parseDType(name);
}

std::optional<std::vector<int64_t>> Elaborator::shapeArg(const EVal& v) {
  std::vector<int64_t> s;
  if (v.kind == EVal::Kind::Tuple) {
    for (const auto& e : v.elems) {
      auto d = constInt(e, "shape dimension");
      if (!d) return std::nullopt;
      s.push_back(*d);
    }
    return s;
  }
  auto d = constInt(v, "shape");
  if (!d) return std::nullopt;
  return std::vector<int64_t>{*d};
}

bool Elaborator::indexShape(const EVal& view, std::vector<int64_t>& shape) {
  for (ir::Value* i : view.indices) {
    auto s = ir::broadcastShapes(shape, i->type().shape);
    if (!s) {
      diags_.error(view.range, "index shapes do not broadcast: " + dimsStr(shape) + " and " + dimsStr(i->type().shape));
      return false;
    }
    shape = *s;
  }
  return true;
}

// The two operands of copy_async and copy_bulk: an indexed shared buffer,
// then an indexed tensor of the same dtype (the copy moves bytes); of
// store_bulk (toShared false) the other way round, into an `out` tensor.
bool Elaborator::copyOperands(const std::string& fname, const CallArgs& args, SourceRange r, bool toShared) {
  const EVal& dst = args.pos[0];
  const EVal& src = args.pos[1];
  if (dst.isError() || src.isError()) return false;
  const char* sharedEx = "an indexed shared buffer such as buf[s, cols]";
  const char* tensorEx = toShared ? "an indexed tensor such as x[row, cols]" : "an indexed tensor such as y[row, cols]";
  if (dst.kind != EVal::Kind::View || !(toShared ? dst.value->type().isShared() : dst.value->type().isTensor())) {
    diags_.error(dst.range, fname + "() copies into " + (toShared ? sharedEx : tensorEx) + ", got " + typeStr(dst));
    return false;
  }
  if (src.kind != EVal::Kind::View || !(toShared ? src.value->type().isTensor() : src.value->type().isShared())) {
    diags_.error(src.range, fname + "() copies from " + (toShared ? tensorEx : sharedEx) + ", got " + typeStr(src));
    return false;
  }
  if (!toShared && !dst.value->type().isOut) {
    diags_.error(dst.range, "cannot store to an input tensor; declare the parameter 'out'");
    return false;
  }
  const DType dt = dst.value->type().dtype;
  if (src.value->type().dtype != dt) {
    diags_.error(r, fname + "() copies " + std::string(ir::dtypeName(src.value->type().dtype)) + " into a " +
                     std::string(ir::dtypeName(dt)) + (toShared ? " buffer" : " tensor") +
                     "; the dtypes must match (it copies bytes)");
    return false;
  }
  return true;
}

// A bulk copy's side: scalar indices, then one 1-D tile (the run).
bool Elaborator::runIndices(const std::string& fname, const EVal& view) {
  const size_t n = view.indices.size();
  for (size_t d = 0; d < n; ++d) {
    const size_t rank = view.indices[d]->type().shape.size();
    if (d + 1 < n ? rank == 0 : rank == 1) continue;
    diags_.error(view.range, fname + (fname == "wait_bulk" ? "() names the slot of a 1-D run" : "() moves one 1-D run") +
                                 ": every index but the last a scalar and the last a 1-D tile, as in buf[s, cols]; "
                                 "index " + std::to_string(d) + " has shape " + dimsStr(view.indices[d]->type().shape));
    return false;
  }
  return true;
}

// fname()'s optional `key = <compile-time bool>` argument into `value`
// (false when absent); false after a diagnostic.
bool Elaborator::constBoolArg(const std::string& fname, const CallArgs& args, const char* key, bool& value) {
  value = false;
  const EVal* e = args.get(key);
  if (!e) return true;
  if (e->isError()) return false;
  if (e->kind != EVal::Kind::Bool) {
    diags_.error(e->range, fname + "() " + key + " must be a compile-time bool, got " + typeStr(*e));
    return false;
  }
  value = e->b;
  return true;
}

// `stream = true` / `keep = true` on a load or store of a global tensor: the
// data is used once, or used again soon (the "stream" and "keep" attributes;
// on the GPU evict_first and evict_last priorities in L1 and L2). A shared
// buffer has no L1 or L2 lines to hint, and one access takes one priority.
bool Elaborator::evictionArg(const std::string& fname, const CallArgs& args, const EVal& view, ir::AttrDict& a) {
  bool hinted = false;
  for (const char* key : {"stream", "keep"}) {
    bool on;
    if (!constBoolArg(fname, args, key, on)) return false;
    if (!on) continue;
    if (!view.value->type().isTensor()) {
      diags_.error(args.get(key)->range, fname + "(" + key +
                                             " = true) hints how a global tensor's lines leave the caches, not a "
                                             "shared buffer's");
      return false;
    }
    if (hinted) {
      diags_.error(args.get(key)->range, fname + "() takes stream = true (used once) or keep = true (used again), "
                                             "not both");
      return false;
    }
    hinted = true;
    a.set(key, true);
  }
  return true;
}

bool Elaborator::maskArg(const std::string& fname, const CallArgs& args, std::vector<int64_t>& shape, ir::Value*& mask) {
  mask = nullptr;
  const EVal* m = args.get("mask");
  if (!m) return true;
  mask = toValue(*m);
  if (!mask) return false;
  if (mask->type().dtype != DType::I1) {
    diags_.error(m->range, fname + "() mask must be bool, got " + mask->type().str());
    return false;
  }
  auto s = ir::broadcastShapes(shape, mask->type().shape);
  if (!s) {
    diags_.error(m->range, "mask of shape " + dimsStr(mask->type().shape) + " does not broadcast with " + dimsStr(shape));
    return false;
  }
  shape = *s;
  return true;
}

EVal Elaborator::reduce(const EVal& x, std::optional<int64_t> axis, const std::string& kind, SourceRange r) {
  ir::Value* v = toValue(x);
  if (!v) return EVal::error();
  int64_t rank = static_cast<int64_t>(v->type().shape.size());
  if (rank == 0) return EVal::of(v, r);  // reducing a scalar is the scalar
  if (kind == "mean" && !ir::isFloat(v->type().dtype)) {
    diags_.error(r, "mean of " + v->type().str() + " needs a float tile; convert with .to(f32)");
    return EVal::error();
  }
  std::vector<int64_t> axes;
  if (axis) {
    int64_t a = *axis < 0 ? *axis + rank : *axis;
    if (a < 0 || a >= rank) {
      diags_.error(r, "axis " + std::to_string(*axis) + " is out of range for " + v->type().str());
      return EVal::error();
    }
    axes.push_back(a);
  } else {
    for (int64_t a = rank - 1; a >= 0; --a) axes.push_back(a);
  }
  int64_t count = 1;
  for (int64_t a : axes) {
    count *= v->type().shape[a];
    auto s = v->type().shape;
    s.erase(s.begin() + a);
    ir::AttrDict attrs;
    attrs.set("axis", a);
    attrs.set("kind", kind == "mean" ? std::string("sum") : kind);
    v = emit(OpKind::Reduce, r, {v}, v->type().withShape(s), attrs);
  }
  if (kind == "mean") return binary("/", EVal::of(v, r), EVal::ofInt(count, r), r);
  return EVal::of(v, r);
}

EVal Elaborator::builtin(const std::string& fname, CallArgs& args, SourceRange r, bool& found) {
  found = true;
  auto expect = [&](size_t minPos, size_t maxPos, std::set<std::string> named) {
    if (args.pos.size() < minPos || args.pos.size() > maxPos) {
      std::string want = minPos == maxPos ? std::to_string(minPos) : std::to_string(minPos) + " to " + std::to_string(maxPos);
      diags_.error(r, fname + "() takes " + want + " positional argument" + (maxPos == 1 ? "" : "s") + ", got " +
                          std::to_string(args.pos.size()));
      return false;
    }
    for (size_t i = 0; i < args.named.size(); ++i)
      if (!named.count(args.named[i].first)) {
        diags_.error(args.namedRanges[i], fname + "() has no argument named '" + args.named[i].first + "'");
        return false;
      }
    return true;
  };
  static const std::map<std::string, OpKind> kMath = {
      {"exp", OpKind::Exp},   {"exp2", OpKind::Exp2}, {"log", OpKind::Log},   {"log2", OpKind::Log2},
      {"sqrt", OpKind::Sqrt}, {"rsqrt", OpKind::Rsqrt}, {"tanh", OpKind::Tanh}, {"erf", OpKind::Erf},
      {"sigmoid", OpKind::Sigmoid}};

  if (auto it = kMath.find(fname); it != kMath.end()) {
    if (!expect(1, 1, {})) return EVal::error();
    return unaryMath(it->second, args.pos[0], r);
  }
  if (fname == "abs") {
    if (!expect(1, 1, {})) return EVal::error();
    const EVal& a = args.pos[0];
    if (a.kind == EVal::Kind::Int) return EVal::ofInt(a.i < 0 ? -a.i : a.i, r);
    if (a.kind == EVal::Kind::Float) return EVal::ofFloat(std::abs(a.f), r);
    ir::Value* v = toValue(a);
    if (!v) return EVal::error();
    if (ir::isFloat(v->type().dtype)) return EVal::of(emit(OpKind::Abs, r, {v}, v->type()), r);
    EVal neg = binary("<", a, EVal::ofInt(0, r), r);
    EVal minus = binary("-", EVal::ofInt(0, r), a, r);
    ir::Value* c = toValue(neg);
    ir::Value* m = toValue(minus);
    if (!c || !m) return EVal::error();
    return EVal::of(emit(OpKind::Select, r, {c, m, v}, v->type()), r);
  }
  if (fname == "program_id" || fname == "num_programs") {
    if (!expect(0, 1, {"axis"})) return EVal::error();
    auto axis = constInt(args.pos.empty() ? args.get("axis") : &args.pos[0], 0, "axis");
    if (!axis) return EVal::error();
    if (*axis < 0 || *axis > 2) {
      diags_.error(r, fname + " axis must be 0, 1 or 2, got " + std::to_string(*axis));
      return EVal::error();
    }
    ir::AttrDict a;
    a.set("axis", *axis);
    return EVal::of(emit(fname == "program_id" ? OpKind::ProgramId : OpKind::NumPrograms, r, {},
                         Type::scalar(DType::I32), a), r);
  }
  if (fname == "arange") {
    if (!expect(1, 2, {})) return EVal::error();
    auto lo = constInt(args.pos[0], "arange bound");
    auto hi = args.pos.size() > 1 ? constInt(args.pos[1], "arange bound") : lo;
    if (!lo || !hi) return EVal::error();
    int64_t start = args.pos.size() > 1 ? *lo : 0, end = *hi;
    if (end <= start) {
      diags_.error(r, "arange(" + std::to_string(start) + ", " + std::to_string(end) + ") is empty");
      return EVal::error();
    }
    if (start < INT32_MIN || end > INT32_MAX) {
      diags_.error(r, "arange bounds must fit in i32");
      return EVal::error();
    }
    if (!checkTile(DType::I32, {end - start}, r)) return EVal::error();
    ir::AttrDict a;
    a.set("start", start);
    a.set("end", end);
    return EVal::of(emit(OpKind::Arange, r, {}, Type::tile(DType::I32, {end - start}), a), r);
  }
  if (fname == "zeros" || fname == "full") {
    bool full = fname == "full";
    if (!expect(full ? 2 : 1, full ? 3 : 2, {"dtype"})) return EVal::error();
    auto shape = shapeArg(args.pos[0]);
    if (!shape) return EVal::error();
    const EVal value = full ? args.pos[1] : EVal::ofInt(0, r);
    const EVal* dtArg = args.pos.size() > (full ? 2u : 1u) ? &args.pos.back() : args.get("dtype");
    DType dt = full ? (value.kind == EVal::Kind::Int ? DType::I32 : value.kind == EVal::Kind::Bool ? DType::I1 : DType::F32)
                    : DType::F32;
    if (dtArg) {
      auto t = dtypeArg(*dtArg);
      if (!t) return EVal::error();
      dt = *t;
    }
    if (!checkTile(dt, *shape, r)) return EVal::error();
    ir::Value* v = toValue(value, dt);
    if (!v) return EVal::error();
    v = cast(v, dt, r);
    if (!v->type().isScalar()) {
      diags_.error(value.range, "full() fills with a scalar, got " + v->type().str());
      return EVal::error();
    }
    return EVal::of(broadcastTo(v, *shape, r), r);
  }
  if (fname == "cast") {
    if (!expect(2, 2, {})) return EVal::error();
    auto t = dtypeArg(args.pos[1]);
    ir::Value* v = toValue(args.pos[0], t ? std::optional<DType>(*t) : std::nullopt);
    if (!t || !v) return EVal::error();
    return EVal::of(cast(v, *t, r), r);
  }
  if (fname == "where") {
    if (!expect(3, 3, {})) return EVal::error();
    ir::Value* c = toValue(args.pos[0]);
    if (!c) return EVal::error();
    if (c->type().dtype != DType::I1) {
      diags_.error(args.pos[0].range, "where() condition must be bool, got " + c->type().str());
      return EVal::error();
    }
    EVal a = args.pos[1], b = args.pos[2];
    ir::Value *va = nullptr, *vb = nullptr;
    if (!unify(a, b, r, va, vb)) return EVal::error();
    auto shape = ir::broadcastShapes(c->type().shape, va->type().shape);
    if (!shape) {
      diags_.error(r, "where() condition of shape " + dimsStr(c->type().shape) + " does not broadcast with " +
                          dimsStr(va->type().shape));
      return EVal::error();
    }
    c = broadcastTo(c, *shape, r);
    va = broadcastTo(va, *shape, r);
    vb = broadcastTo(vb, *shape, r);
    return EVal::of(emit(OpKind::Select, r, {c, va, vb}, va->type()), r);
  }
  if (fname == "pow" || ((fname == "min" || fname == "max") && args.pos.size() == 2)) {
    if (!expect(2, 2, {})) return EVal::error();
    if (fname == "pow") return binary("**", args.pos[0], args.pos[1], r);
    const EVal& a = args.pos[0];
    const EVal& b = args.pos[1];
    if (a.isConst() && b.isConst() && a.kind != EVal::Kind::Bool && b.kind != EVal::Kind::Bool) {
      EVal lt = binary("<", a, b, r);
      return (lt.b == (fname == "min")) ? a : b;
    }
    EVal x = a, y = b;
    ir::Value *va = nullptr, *vb = nullptr;
    if (!unify(x, y, r, va, vb)) return EVal::error();
    return EVal::of(emit(fname == "min" ? OpKind::Min : OpKind::Max, r, {va, vb}, va->type()), r);
  }
  if (fname == "fma") {
    if (!expect(3, 3, {})) return EVal::error();
    // a and b to one dtype and shape, then that with c; b follows a's result.
    EVal a = args.pos[0], b = args.pos[1];
    ir::Value *x = nullptr, *y = nullptr, *z = nullptr;
    if (!unify(a, b, r, x, y)) return EVal::error();
    EVal xv = EVal::of(x, r), c = args.pos[2];
    if (!unify(xv, c, r, x, z)) return EVal::error();
    y = broadcastTo(cast(y, x->type().dtype, r), x->type().shape, r);
    if (ir::isFloat(x->type().dtype)) return EVal::of(emit(OpKind::Fma, r, {x, y, z}, x->type()), r);
    return EVal::of(emit(OpKind::Add, r, {emit(OpKind::Mul, r, {x, y}, x->type()), z}, x->type()), r);
  }
  if (fname == "sum" || fname == "max" || fname == "min" || fname == "mean") {
    if (!expect(1, 2, {"axis"})) return EVal::error();
    const EVal* ax = args.pos.size() > 1 ? &args.pos[1] : args.get("axis");
    std::optional<int64_t> axis;
    if (ax && ax->kind != EVal::Kind::None) {
      axis = constInt(*ax, "axis");
      if (!axis) return EVal::error();
    }
    return reduce(args.pos[0], axis, fname, r);
  }
  if (fname == "cdiv") {
    if (!expect(2, 2, {})) return EVal::error();
    EVal num = binary("+", args.pos[0], binary("-", args.pos[1], EVal::ofInt(1, r), r), r);
    return binary("/", num, args.pos[1], r);
  }
  if (fname == "reshape") {
    if (!expect(2, 2, {})) return EVal::error();
    ir::Value* v = toValue(args.pos[0]);
    auto shape = shapeArg(args.pos[1]);
    if (!v || !shape || !checkTile(v->type().dtype, *shape, r)) return EVal::error();
    int64_t n = 1;
    for (int64_t d : *shape) n *= d;
    if (n != v->type().numElements()) {
      diags_.error(r, "cannot reshape " + v->type().str() + " (" + std::to_string(v->type().numElements()) +
                          " elements) to " + dimsStr(*shape) + " (" + std::to_string(n) + " elements)");
      return EVal::error();
    }
    return EVal::of(emit(OpKind::Reshape, r, {v}, v->type().withShape(*shape)), r);
  }
  if (fname == "transpose") {
    if (!expect(1, 2, {})) return EVal::error();
    ir::Value* v = toValue(args.pos[0]);
    if (!v) return EVal::error();
    size_t rank = v->type().shape.size();
    std::vector<int64_t> perm;
    if (args.pos.size() > 1) {
      auto p = shapeArg(args.pos[1]);
      if (!p) return EVal::error();
      perm = *p;
    } else {
      for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    }
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    bool ok = sorted.size() == rank;
    for (size_t i = 0; ok && i < rank; ++i) ok = sorted[i] == static_cast<int64_t>(i);
    if (!ok) {
      std::string given = "(";
      for (size_t i = 0; i < perm.size(); ++i) given += (i ? ", " : "") + std::to_string(perm[i]);
      diags_.error(r, "transpose order " + given + ") is not a permutation of the " + std::to_string(rank) +
                          " axes of " + v->type().str());
      return EVal::error();
    }
    std::vector<int64_t> shape;
    for (int64_t p : perm) shape.push_back(v->type().shape[p]);
    ir::AttrDict a;
    a.set("perm", perm);
    return EVal::of(emit(OpKind::Transpose, r, {v}, v->type().withShape(shape), a), r);
  }
  if (fname == "barrier") {
    if (!expect(0, 0, {})) return EVal::error();
    builder_.create(OpKind::Barrier, r, {}, {});
    return EVal::none(r);
  }
  if (fname == "load") {
    if (!expect(1, 1, {"mask", "other", "stream", "keep"})) return EVal::error();
    const EVal& view = args.pos[0];
    if (view.isError()) return view;
    if (view.kind != EVal::Kind::View) {
      diags_.error(view.range, "load() takes an indexed tensor or shared buffer such as x[row, cols], got " + typeStr(view));
      return EVal::error();
    }
    DType dt = view.value->type().dtype;
    std::vector<ir::Value*> ops{view.value};
    ops.insert(ops.end(), view.indices.begin(), view.indices.end());
    std::vector<int64_t> shape;
    if (!indexShape(view, shape)) return EVal::error();
    ir::AttrDict a;
    for (const char* key : {"mask", "other"}) {
      const EVal* m = args.get(key);
      if (!m) continue;
      ir::Value* v = toValue(*m, std::string(key) == "other" ? std::optional<DType>(dt) : std::nullopt);
      if (!v) return EVal::error();
      if (std::string(key) == "mask" && v->type().dtype != DType::I1) {
        diags_.error(m->range, "load() mask must be bool, got " + v->type().str());
        return EVal::error();
      }
      if (std::string(key) == "other") v = cast(v, dt, m->range);
      auto s = ir::broadcastShapes(shape, v->type().shape);
      if (!s) {
        diags_.error(m->range, std::string(key) + " of shape " + dimsStr(v->type().shape) +
                                   " does not broadcast with the indexed shape " + dimsStr(shape));
        return EVal::error();
      }
      shape = *s;
      ops.push_back(v);
      a.set(key, true);
    }
    if (!checkTile(dt, shape, r) || !evictionArg(fname, args, view, a)) return EVal::error();
    return EVal::of(emit(OpKind::Load, r, ops, Type::tile(dt, shape), a), r);
  }
  if (fname == "prefetch") {
    if (!expect(1, 1, {"mask"})) return EVal::error();
    const EVal& view = args.pos[0];
    if (view.isError()) return view;
    if (view.kind != EVal::Kind::View || !view.value->type().isTensor()) {
      diags_.error(view.range, "prefetch() takes an indexed global tensor such as x[row + 2, cols], got " + typeStr(view));
      return EVal::error();
    }
    std::vector<ir::Value*> ops{view.value};
    ops.insert(ops.end(), view.indices.begin(), view.indices.end());
    std::vector<int64_t> shape;
    if (!indexShape(view, shape)) return EVal::error();
    ir::Value* mask;
    if (!maskArg(fname, args, shape, mask)) return EVal::error();
    ir::AttrDict a;
    if (mask) ops.push_back(mask), a.set("mask", true);
    builder_.create(OpKind::Prefetch, r, ops, {}, a);
    return EVal::none(r);
  }
  if (fname == "fence") {
    if (!expect(0, 0, {})) return EVal::error();
    builder_.create(OpKind::Fence, r, {}, {});
    return EVal::none(r);
  }
  // wait_ge(counter[i], n): every thread waits until the i32 or u32 element
  // is at least n, which other CTAs raise with atomic_add(release = true).
  if (fname == "wait_ge") {
    if (!expect(2, 2, {})) return EVal::error();
    const EVal& view = args.pos[0];
    if (view.isError() || args.pos[1].isError()) return EVal::error();
    if (view.kind != EVal::Kind::View || !view.value->type().isTensor()) {
      diags_.error(view.range, "wait_ge() takes one element of a global tensor such as count[row], got " + typeStr(view));
      return EVal::error();
    }
    const DType dt = view.value->type().dtype;
    if (dt != DType::I32 && dt != DType::U32) {
      diags_.error(view.range, "wait_ge() waits on i32 or u32 memory, not " + std::string(ir::dtypeName(dt)));
      return EVal::error();
    }
    std::vector<int64_t> shape;
    if (!indexShape(view, shape)) return EVal::error();
    if (!shape.empty()) {
      diags_.error(view.range, "wait_ge() waits on one element; its indices make a tile of shape " + dimsStr(shape));
      return EVal::error();
    }
    ir::Value* val = toValue(args.pos[1], dt);
    if (!val) return EVal::error();
    if (!val->type().isScalar() || !ir::isInt(val->type().dtype) || val->type().dtype == DType::I1) {
      diags_.error(args.pos[1].range, "wait_ge() waits for an integer scalar, got " + val->type().str());
      return EVal::error();
    }
    std::vector<ir::Value*> ops{view.value};
    ops.insert(ops.end(), view.indices.begin(), view.indices.end());
    ops.push_back(cast(val, dt, args.pos[1].range));
    builder_.create(OpKind::WaitGe, r, ops, {});
    return EVal::none(r);
  }
  // wait_async(pending = n) and wait_bulk_stores(pending = n): until at most
  // the n latest copy_async are in flight, or store_bulk still read shared
  // memory (their slots before may be written again).
  if (fname == "wait_async" || fname == "wait_bulk_stores") {
    if (!expect(0, 1, {"pending"})) return EVal::error();
    const EVal* n = args.pos.empty() ? args.get("pending") : &args.pos[0];
    const std::string what = fname + "() pending count";
    auto pending = constInt(n, 0, what.c_str());
    if (!pending) return EVal::error();
    if (*pending < 0 || *pending > 63) {
      diags_.error(n->range, what + " must be 0 to 63, got " + std::to_string(*pending));
      return EVal::error();
    }
    ir::AttrDict a;
    a.set("pending", *pending);
    builder_.create(fname == "wait_async" ? OpKind::AsyncWait : OpKind::BulkStoreWait, r, {}, {}, a);
    return EVal::none(r);
  }
  // copy_async(buf[...], x[...], mask = m): global to shared without passing
  // through registers; the indices of both sides and the mask broadcast to one
  // shape, element i of the source going to element i of the destination
  // (zero where the source is masked off or out of bounds). Each call is one
  // copy in flight until a wait_async(n) leaves at most n of them.
  if (fname == "copy_async") {
    if (!expect(2, 2, {"mask"}) || !copyOperands(fname, args, r)) return EVal::error();
    const EVal& dst = args.pos[0];
    const EVal& src = args.pos[1];
    std::vector<int64_t> shape;
    ir::Value* mask = nullptr;
    if (!indexShape(dst, shape) || !indexShape(src, shape) || !maskArg(fname, args, shape, mask) ||
        !checkTile(dst.value->type().dtype, shape, r))
      return EVal::error();
    std::vector<ir::Value*> ops{dst.value, src.value};
    for (const EVal* side : {&dst, &src})
      for (ir::Value* i : side->indices) ops.push_back(i->type().shape == shape ? i : broadcastTo(i, shape, r));
    ir::AttrDict a;
    a.set("mask", mask != nullptr);
    if (mask) ops.push_back(mask->type().shape == shape ? mask : broadcastTo(mask, shape, r));
    builder_.create(OpKind::CopyAsync, r, ops, {}, a);
    return EVal::none(r);
  }
  // copy_bulk(buf[s..., i], x[j..., k]): one 1-D run of a tensor row into one
  // slot of a shared buffer (the slot: the buffer's leading indices, scalars),
  // in flight until wait_bulk(buf[s..., i]) on the same slot. On the GPU one
  // thread moves the run with one bulk copy whose completion an mbarrier of
  // the slot counts, so every index but the last is a scalar on both sides.
  // store_bulk(y[j..., k], buf[s..., i]): the other way, one run out of a slot
  // into a tensor row, by one bulk copy after a CTA barrier (every thread's
  // writes to the slot are done); the slot must not be written again until
  // wait_bulk_stores says the copy has read it.
  if (fname == "copy_bulk" || fname == "store_bulk") {
    const bool toShared = fname == "copy_bulk";
    if (!expect(2, 2, {}) || !copyOperands(fname, args, r, toShared)) return EVal::error();
    const EVal& dst = args.pos[0];
    const EVal& src = args.pos[1];
    std::vector<int64_t> shape;
    if (!runIndices(fname, dst) || !runIndices(fname, src) || !indexShape(dst, shape) || !indexShape(src, shape) ||
        !checkTile(dst.value->type().dtype, shape, r))
      return EVal::error();
    // One mbarrier per slot, and each thread's phase bits in one 64-bit word.
    int64_t slots = 1;
    const std::vector<int64_t>& bufShape = dst.value->type().shape;
    for (size_t d = 0; toShared && d + 1 < bufShape.size(); ++d) slots *= bufShape[d];
    if (slots > 64) {
      diags_.error(dst.range, "copy_bulk() keeps one mbarrier per slot of its buffer, at most 64; " +
                                  dst.value->type().str() + " has " + std::to_string(slots) + " slots");
      return EVal::error();
    }
    std::vector<ir::Value*> ops{dst.value, src.value};
    for (const EVal* side : {&dst, &src})
      for (ir::Value* i : side->indices) ops.push_back(i->type().shape == shape ? i : broadcastTo(i, shape, r));
    builder_.create(toShared ? OpKind::CopyBulk : OpKind::StoreBulk, r, ops, {});
    return EVal::none(r);
  }
  // wait_bulk(buf[s..., i]): until the copy_bulk into slot s... has landed;
  // the last index only names the run (it is not used).
  if (fname == "wait_bulk") {
    if (!expect(1, 1, {})) return EVal::error();
    const EVal& dst = args.pos[0];
    if (dst.isError()) return EVal::error();
    if (dst.kind != EVal::Kind::View || !dst.value->type().isShared()) {
      diags_.error(dst.range, "wait_bulk() takes the indexed shared buffer of a copy_bulk, such as buf[s, cols], got " +
                                  typeStr(dst));
      return EVal::error();
    }
    if (!runIndices(fname, dst)) return EVal::error();
    std::vector<ir::Value*> ops{dst.value};
    ops.insert(ops.end(), dst.indices.begin(), dst.indices.end() - 1);
    builder_.create(OpKind::BulkWait, r, ops, {});
    return EVal::none(r);
  }
  // store(ref, value) and atomic_add(ref, value), which also returns the values
  // the memory held before: the same operands and checks.
  if (fname == "store" || fname == "atomic_add") {
    const bool atomic = fname == "atomic_add";
    if (!(atomic ? expect(2, 2, {"mask", "release"}) : expect(2, 2, {"mask", "stream", "keep"}))) return EVal::error();
    const EVal& view = args.pos[0];
    if (view.isError() || args.pos[1].isError()) return EVal::error();
    if (view.kind != EVal::Kind::View) {
      diags_.error(view.range, fname + "() takes an indexed tensor or shared buffer such as y[row, cols], got " + typeStr(view));
      return EVal::error();
    }
    const Type& mt = view.value->type();
    if (mt.isTensor() && !mt.isOut) {
      diags_.error(view.range, std::string(atomic ? "cannot add atomically to" : "cannot store to") +
                                   " an input tensor; declare the parameter 'out'");
      return EVal::error();
    }
    DType dt = mt.dtype;
    if (atomic && !ir::atomicAddable(dt)) {
      diags_.error(view.range, "atomic_add() adds to i32, u32, i64, f32 or f64 memory, not " +
                                   std::string(ir::dtypeName(dt)));
      return EVal::error();
    }
    ir::Value* val = toValue(args.pos[1], dt);
    if (!val) return EVal::error();
    if (val->type().dtype != dt) {
      diags_.error(args.pos[1].range, std::string(atomic ? "added" : "stored") + " value is " + val->type().str() +
                                          " but the destination holds " +
                                          std::string(ir::dtypeName(dt)) + "; convert with .to(" +
                                          std::string(ir::dtypeName(dt)) + ")");
      return EVal::error();
    }
    std::vector<int64_t> idxShape;
    if (!indexShape(view, idxShape)) return EVal::error();
    ir::Value* mask = nullptr;
    std::vector<int64_t> shape = idxShape;
    if (!maskArg(fname, args, shape, mask)) return EVal::error();
    if (val->type().shape.size() > shape.size() || !ir::broadcastShapes(shape, val->type().shape) ||
        *ir::broadcastShapes(shape, val->type().shape) != shape) {
      diags_.error(args.pos[1].range, "value of shape " + dimsStr(val->type().shape) +
                                          " does not fit the indexed shape " + dimsStr(shape));
      return EVal::error();
    }
    std::vector<ir::Value*> ops{view.value};
    for (ir::Value* i : view.indices) ops.push_back(shape == idxShape ? i : broadcastTo(i, shape, r));
    ops.push_back(broadcastTo(val, shape, r));
    ir::AttrDict a;
    if (mask) {
      ops.push_back(broadcastTo(mask, shape, r));
      a.set("mask", true);
    }
    bool release = false;
    if (atomic && !constBoolArg(fname, args, "release", release)) return EVal::error();
    if (release && (!shape.empty() || !mt.isTensor() || mask)) {
      diags_.error(args.get("release")->range,
                   "atomic_add(release = true) adds once per CTA to one element of a global tensor, "
                   "without a mask; here the indexed shape is " + dimsStr(shape) +
                       (mt.isTensor() ? "" : " of a shared buffer") + (mask ? " with a mask" : ""));
      return EVal::error();
    }
    if (release) a.set("release", true);
    if (atomic) {
      a.set("kind", std::string("add"));
      if (!checkTile(dt, shape, r)) return EVal::error();
      return EVal::of(emit(OpKind::Atomic, r, ops, Type::tile(dt, shape), a), r);
    }
    if (!evictionArg(fname, args, view, a)) return EVal::error();
    builder_.create(OpKind::Store, r, ops, {}, a);
    return EVal::none(r);
  }
  found = false;
  return EVal::error();
}

EVal Elaborator::clusterOp(const ast::MethodExpr& e, CallArgs& args) {
  SourceRange r = e.range;
  auto noArgs = [&] {
    if (!args.pos.empty() || !args.named.empty()) {
      diags_.error(r, "cluster." + e.name + "() takes no arguments");
      return false;
    }
    return true;
  };
  if (e.name == "rank" || e.name == "size") {
    if (!noArgs()) return EVal::error();
    return EVal::of(emit(e.name == "rank" ? OpKind::ClusterRank : OpKind::ClusterSize, r, {}, Type::scalar(DType::I32)), r);
  }
  if (e.name == "sync") {
    if (!noArgs()) return EVal::error();
    builder_.create(OpKind::ClusterSync, r, {}, {});
    return EVal::none(r);
  }
  if (e.name == "reduce") {
    const bool onlyGroup = args.named.empty() || (args.named.size() == 1 && args.named[0].first == "group");
    if (args.pos.size() != 2 || !onlyGroup) {
      diags_.error(r, "cluster.reduce(value, op[, group = G]) takes a value, one of add, sum, max, min, and "
                      "optionally the size of the rank groups it reduces over");
      return EVal::error();
    }
    const auto* opName = ast::dynCast<ast::NameExpr>(e.args[1].value.get());
    std::string kind = opName ? opName->name : "";
    if (kind == "add") kind = "sum";
    if (kind != "sum" && kind != "max" && kind != "min") {
      diags_.error(e.args[1].value->range, "cluster.reduce op must be add, sum, max or min");
      return EVal::error();
    }
    ir::AttrDict a;
    a.set("kind", kind);
    // group = G: over the G consecutive ranks rank / G * G ... (a power of
    // two; the verifier checks that it divides the cluster).
    if (const EVal* g = args.get("group")) {
      const std::optional<int64_t> gv = constInt(*g, "cluster.reduce group");
      if (!gv) return EVal::error();
      if (*gv < 1 || (*gv & (*gv - 1)) != 0) {
        diags_.error(g->range, "cluster.reduce group must be a power of two, got " + std::to_string(*gv));
        return EVal::error();
      }
      a.set("group", *gv);
    }
    ir::Value* v = toValue(args.pos[0]);
    if (!v) return EVal::error();
    return EVal::of(emit(OpKind::ClusterReduce, r, {v}, v->type(), a), r);
  }
  diags_.error(e.nameRange, "unknown cluster operation '" + e.name + "'; expected rank, size, sync or reduce");
  return EVal::error();
}

}  // namespace fnk
