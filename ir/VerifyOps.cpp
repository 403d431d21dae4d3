// The per-op rules of the verifier (see Verifier.h): one function per op
// family, reached through a switch over OpKind without a default, so adding an
// op to Ops.def without a rule here fails to compile. Each rule may assume the
// op's arity (Ops.def) and operand dominance were checked already.
#include <algorithm>

#include "ir/VerifierImpl.h"

#pragma GCC diagnostic error "-Wswitch"

namespace fnk::ir::detail {

namespace {

std::string str(const Type& t) { return t.str(); }
bool isI32Scalar(const Type& t) { return t.isScalar() && t.dtype == DType::I32; }
bool isIndexTile(const Type& t) { return t.isTile() && (t.dtype == DType::I32 || t.dtype == DType::I64); }
bool isOneOf(const std::string& s, std::initializer_list<const char*> xs) {
  return std::any_of(xs.begin(), xs.end(), [&](const char* x) { return s == x; });
}

class Rules {
public:
  explicit Rules(OpVerifier& v) : v_(v) {}

  // One rule per op family.
  void checkOp(const Operation& op) {
    switch (op.kind()) {
      case OpKind::Constant: constant(op); return;
      case OpKind::ProgramId:
      case OpKind::NumPrograms: gridQuery(op); return;
      case OpKind::Dim: dim(op); return;
      case OpKind::Arange: arange(op); return;
      case OpKind::Broadcast: broadcast(op); return;
      case OpKind::ExpandDims: expandDims(op); return;
      case OpKind::Reshape: reshape(op); return;
      case OpKind::Transpose: transpose(op); return;
      case OpKind::Cast: cast(op); return;
      case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
      case OpKind::Pow: case OpKind::Min: case OpKind::Max:
        binary(op, false); return;
      case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Shl: case OpKind::Shr:
        binary(op, true); return;
      case OpKind::Cmp: cmp(op); return;
      case OpKind::Neg: case OpKind::Abs: unary(op, Category::Any); return;
      case OpKind::Not: unary(op, Category::Int); return;
      case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt:
      case OpKind::Rsqrt: case OpKind::Tanh: case OpKind::Erf: case OpKind::Sigmoid:
        unary(op, Category::Float); return;
      case OpKind::Select: select(op); return;
      case OpKind::Fma: fma(op); return;
      case OpKind::Reduce: reduce(op); return;
      case OpKind::Load: load(op); return;
      case OpKind::Store: store(op); return;
      case OpKind::Prefetch: prefetch(op); return;
      case OpKind::Atomic: atomic(op); return;
      case OpKind::CopyAsync: copyAsync(op); return;
      case OpKind::CopyBulk: copyBulk(op); return;
      case OpKind::BulkWait: bulkWait(op); return;
      case OpKind::WaitGe: waitGe(op); return;
      case OpKind::StoreBulk: storeBulk(op); return;
      case OpKind::BulkStoreWait:
      case OpKind::AsyncWait: {
        int64_t n = 0;
        if (intAttr(op, "pending", n) && (n < 0 || n > 63)) fail(op, "pending must be 0 to 63, got " + std::to_string(n));
        return;
      }
      case OpKind::SharedAlloc:
        if (!op.result()->type().isShared()) fail(op, "result must be a shared buffer, got " + str(op.result()->type()));
        return;
      case OpKind::Barrier:
      case OpKind::Fence:
      case OpKind::ClusterSync: return;  // no operands, no results: arity says it all
      case OpKind::ClusterRank:
      case OpKind::ClusterSize:
        if (!isI32Scalar(op.result()->type())) fail(op, "result must be i32, got " + str(op.result()->type()));
        return;
      case OpKind::ClusterReduce: clusterReduce(op); return;
      case OpKind::For: forOp(op); return;
      case OpKind::If: ifOp(op); return;
      case OpKind::Yield: return;  // checked by the op it ends (scf.for, scf.if)
      case OpKind::LaunchCheck: launchCheck(op); return;
      case OpKind::LaunchGrid: launchGrid(op); return;
      case OpKind::Return: return;  // placement checked in checkPlacement
    }
  }

  enum class Category { Any, Int, Float };

  // Helpers shared by the rules; each reports and returns false on failure.
  bool tileOperand(const Operation& op, unsigned i) {
    const Type& t = op.operand(i)->type();
    return t.isTile() || fail(op, "operand " + std::to_string(i) + " must be a tile or scalar, got " + str(t));
  }
  bool resultIs(const Operation& op, const Type& want) {
    const Type& r = op.result()->type();
    return r == want || fail(op, "result type " + str(r) + " does not match expected " + str(want));
  }
  bool intAttr(const Operation& op, const char* key, int64_t& out) {
    const Attr* a = op.attrs().get(key);
    if (!a || !std::holds_alternative<int64_t>(*a))
      return fail(op, std::string("needs an integer '") + key + "' attribute");
    out = std::get<int64_t>(*a);
    return true;
  }
  bool symbolAttr(const Operation& op, const char* key, std::initializer_list<const char*> allowed) {
    std::string v = op.attrs().getStr(key);
    if (isOneOf(v, allowed)) return true;
    std::string list;
    for (const char* x : allowed) list += (list.empty() ? "" : ", ") + std::string(x);
    if (!op.attrs().get(key)) return fail(op, std::string("needs a '") + key + "' attribute (one of " + list + ")");
    const Attr& a = *op.attrs().get(key);
    std::string shown = std::holds_alternative<std::string>(a) ? "'" + std::get<std::string>(a) + "'" : attrStr(a);
    return fail(op, std::string("has invalid ") + key + " " + shown + " (expected one of " + list + ")");
  }
  bool boolAttr(const Operation& op, const char* key) {
    const Attr* a = op.attrs().get(key);
    return !a || std::holds_alternative<bool>(*a) || fail(op, std::string("attribute '") + key + "' must be true or false");
  }

  void constant(const Operation& op) {
    const Type& r = op.result()->type();
    if (!r.isTile()) return void(fail(op, "result must be a tile or scalar, got " + str(r)));
    const Attr* v = op.attrs().get("value");
    if (!v) return void(fail(op, "needs a 'value' attribute"));
    bool okKind = r.dtype == DType::I1 ? std::holds_alternative<bool>(*v)
                  : isFloat(r.dtype)   ? std::holds_alternative<double>(*v) || std::holds_alternative<int64_t>(*v)
                                       : std::holds_alternative<int64_t>(*v);
    if (!okKind) fail(op, "value " + attrStr(*v) + " does not match result type " + str(r));
  }

  void gridQuery(const Operation& op) {
    int64_t axis;
    if (!intAttr(op, "axis", axis)) return;
    if (axis < 0 || axis > 2) return void(fail(op, "axis " + std::to_string(axis) + " is not 0, 1 or 2"));
    if (!isI32Scalar(op.result()->type())) fail(op, "result must be i32, got " + str(op.result()->type()));
  }

  void dim(const Operation& op) {
    const Type& t = op.operand(0)->type();
    if (!t.isTensor()) return void(fail(op, "operand must be a tensor, got " + str(t)));
    int64_t axis;
    if (!intAttr(op, "axis", axis)) return;
    if (axis < 0 || axis >= static_cast<int64_t>(t.rank()))
      return void(fail(op, "axis " + std::to_string(axis) + " is out of range for " + str(t)));
    if (!isI32Scalar(op.result()->type())) fail(op, "result must be i32, got " + str(op.result()->type()));
  }

  void arange(const Operation& op) {
    int64_t start, end;
    if (!intAttr(op, "start", start) || !intAttr(op, "end", end)) return;
    if (start >= end) return void(fail(op, "start " + std::to_string(start) + " must be less than end " + std::to_string(end)));
    uint64_t n = static_cast<uint64_t>(end) - static_cast<uint64_t>(start);
    if (n > static_cast<uint64_t>(kMaxTileElements)) return void(fail(op, "range has more than 2^31 elements"));
    resultIs(op, Type::tile(DType::I32, {static_cast<int64_t>(n)}));
  }

  /// Whether the result is a tile of a's dtype (fails the op if not).
  bool resultIsTileOf(const Operation& op, const Type& a) {
    const Type& r = op.result()->type();
    if (r.isTile() && r.dtype == a.dtype) return true;
    fail(op, "result " + str(r) + " must be a tile of the operand's dtype " + std::string(dtypeName(a.dtype)));
    return false;
  }

  void broadcast(const Operation& op) {
    if (!tileOperand(op, 0)) return;
    const Type& a = op.operand(0)->type();
    const Type& r = op.result()->type();
    if (!resultIsTileOf(op, a)) return;
    auto b = broadcastShapes(a.shape, r.shape);
    if (!b || *b != r.shape) fail(op, "cannot broadcast " + str(a) + " to " + str(r));
  }

  void expandDims(const Operation& op) {
    if (!tileOperand(op, 0)) return;
    const Type& a = op.operand(0)->type();
    int64_t axis;
    if (!intAttr(op, "axis", axis)) return;
    if (axis < 0 || axis > static_cast<int64_t>(a.rank()))
      return void(fail(op, "axis " + std::to_string(axis) + " is out of range for " + str(a)));
    std::vector<int64_t> s = a.shape;
    s.insert(s.begin() + axis, 1);
    resultIs(op, a.withShape(std::move(s)));
  }

  void reshape(const Operation& op) {
    if (!tileOperand(op, 0)) return;
    const Type& a = op.operand(0)->type();
    const Type& r = op.result()->type();
    if (!resultIsTileOf(op, a)) return;
    if (a.numElements() != r.numElements())
      fail(op, "cannot reshape " + str(a) + " to " + str(r) + ": element counts differ");
  }

  void transpose(const Operation& op) {
    if (!tileOperand(op, 0)) return;
    const Type& a = op.operand(0)->type();
    const Attr* p = op.attrs().get("perm");
    auto* perm = p ? std::get_if<std::vector<int64_t>>(p) : nullptr;
    if (!perm) return void(fail(op, "needs a 'perm' attribute (a list of axes)"));
    std::vector<int64_t> sorted = *perm;
    std::sort(sorted.begin(), sorted.end());
    bool isPerm = sorted.size() == a.rank();
    for (size_t i = 0; isPerm && i < sorted.size(); ++i) isPerm = sorted[i] == static_cast<int64_t>(i);
    if (!isPerm) return void(fail(op, "perm " + attrStr(*p) + " is not a permutation of the axes of " + str(a)));
    std::vector<int64_t> s;
    for (int64_t i : *perm) s.push_back(a.shape[i]);
    resultIs(op, a.withShape(std::move(s)));
  }

  void cast(const Operation& op) {
    if (!tileOperand(op, 0)) return;
    const Type& a = op.operand(0)->type();
    const Type& r = op.result()->type();
    if (!r.isTile() || r.shape != a.shape) fail(op, "result " + str(r) + " must have the operand's shape (" + str(a) + ")");
  }

  void binary(const Operation& op, bool intOnly) {
    const Type& a = op.operand(0)->type();
    const Type& b = op.operand(1)->type();
    if (!tileOperand(op, 0)) return;
    if (a != b) return void(fail(op, "operands have different types: " + str(a) + " and " + str(b)));
    if (intOnly && !isInt(a.dtype)) return void(fail(op, "needs integer operands, got " + str(a)));
    resultIs(op, a);
  }

  void cmp(const Operation& op) {
    const Type& a = op.operand(0)->type();
    const Type& b = op.operand(1)->type();
    if (!tileOperand(op, 0)) return;
    if (a != b) return void(fail(op, "operands have different types: " + str(a) + " and " + str(b)));
    if (!symbolAttr(op, "pred", {"lt", "le", "gt", "ge", "eq", "ne"})) return;
    resultIs(op, a.withDType(DType::I1));
  }

  void unary(const Operation& op, Category c) {
    if (!tileOperand(op, 0)) return;
    const Type& a = op.operand(0)->type();
    if (c == Category::Float && !isFloat(a.dtype)) return void(fail(op, "needs a float operand, got " + str(a)));
    if (c == Category::Int && !isInt(a.dtype)) return void(fail(op, "needs an integer or i1 operand, got " + str(a)));
    resultIs(op, a);
  }

  void select(const Operation& op) {
    const Type& c = op.operand(0)->type();
    const Type& a = op.operand(1)->type();
    const Type& b = op.operand(2)->type();
    if (!c.isTile() || c.dtype != DType::I1) return void(fail(op, "condition must be an i1 tile, got " + str(c)));
    if (!tileOperand(op, 1)) return;
    if (a != b) return void(fail(op, "operands have different types: " + str(a) + " and " + str(b)));
    if (c.shape != a.shape) return void(fail(op, "condition " + str(c) + " must have the shape of " + str(a)));
    resultIs(op, a);
  }

  void fma(const Operation& op) {
    if (!tileOperand(op, 0)) return;
    const Type& a = op.operand(0)->type();
    for (unsigned i = 1; i < 3; ++i)
      if (op.operand(i)->type() != a)
        return void(fail(op, "operands have different types: " + str(a) + " and " + str(op.operand(i)->type())));
    resultIs(op, a);
  }

  void reduce(const Operation& op) {
    if (!tileOperand(op, 0)) return;
    const Type& a = op.operand(0)->type();
    int64_t axis;
    if (!intAttr(op, "axis", axis) || !symbolAttr(op, "kind", {"sum", "max", "min"})) return;
    if (axis < 0 || axis >= static_cast<int64_t>(a.rank()))
      return void(fail(op, "axis " + std::to_string(axis) + " is out of range for " + str(a)));
    std::vector<int64_t> s = a.shape;
    s.erase(s.begin() + axis);
    const Type& r = op.result()->type();
    // The result dtype is left to the producer (it may accumulate wider).
    if (!r.isTile() || r.shape != s)
      fail(op, "result " + str(r) + " must have shape " + shapeStr(s) + " (" + str(a) + " without axis " +
                   std::to_string(axis) + ")");
  }

  /// Checks memory and index operands of a load or store; on success `shape`
  /// is the broadcast of the index shapes.
  bool memoryAccess(const Operation& op, unsigned extra, const char* layout, std::vector<int64_t>& shape) {
    const Type& mem = op.operand(0)->type();
    if (!mem.isMemory()) return fail(op, "operand 0 must be a tensor or shared buffer, got " + str(mem));
    unsigned want = 1 + static_cast<unsigned>(mem.rank()) + extra;
    if (op.numOperands() != want)
      return fail(op, "of " + str(mem) + " expects " + std::to_string(want) + " operands (" + layout + "), got " +
                          std::to_string(op.numOperands()));
    shape.clear();
    for (unsigned i = 1; i <= mem.rank(); ++i) {
      const Type& t = op.operand(i)->type();
      if (!isIndexTile(t)) return fail(op, "index " + std::to_string(i - 1) + " must be an i32 or i64 tile, got " + str(t));
      auto b = broadcastShapes(shape, t.shape);
      if (!b) return fail(op, "index shapes " + shapeStr(shape) + " and " + shapeStr(t.shape) + " do not broadcast");
      shape = *b;
    }
    return true;
  }
  bool maskOperand(const Operation& op, unsigned i) {
    const Type& t = op.operand(i)->type();
    return (t.isTile() && t.dtype == DType::I1) || fail(op, "mask must be an i1 tile, got " + str(t));
  }

  void load(const Operation& op) {
    if (!boolAttr(op, "mask") || !boolAttr(op, "other")) return;
    bool mask = op.attrs().getBool("mask"), other = op.attrs().getBool("other");
    std::vector<int64_t> shape;
    std::string layout = std::string("memory, indices") + (mask ? ", mask" : "") + (other ? ", other" : "");
    if (!memoryAccess(op, mask + other, layout.c_str(), shape)) return;
    const Type& mem = op.operand(0)->type();
    unsigned next = 1 + static_cast<unsigned>(mem.rank());
    if (mask && !maskOperand(op, next)) return;
    if (other) {
      const Type& o = op.operand(next + mask)->type();
      if (!o.isTile() || o.dtype != mem.dtype)
        return void(fail(op, "other value must be a " + std::string(dtypeName(mem.dtype)) + " tile, got " + str(o)));
    }
    for (unsigned i = next; i < op.numOperands(); ++i) {
      auto b = broadcastShapes(shape, op.operand(i)->type().shape);
      if (!b) return void(fail(op, "mask/other shape " + str(op.operand(i)->type()) + " does not broadcast with indices " + shapeStr(shape)));
      shape = *b;
    }
    resultIs(op, Type::tile(mem.dtype, shape));
  }

  /// tile.prefetch: a load's memory and indices (and mask), no result; global
  /// tensors only (the hint brings their lines into L2).
  void prefetch(const Operation& op) {
    if (!boolAttr(op, "mask")) return;
    bool mask = op.attrs().getBool("mask");
    std::vector<int64_t> shape;
    if (!memoryAccess(op, mask, mask ? "memory, indices, mask" : "memory, indices", shape)) return;
    if (!op.operand(0)->type().isTensor()) return void(fail(op, "prefetches global tensors only, got " + str(op.operand(0)->type())));
    if (mask) {
      unsigned m = 1 + static_cast<unsigned>(op.operand(0)->type().rank());
      if (maskOperand(op, m) && !broadcastShapes(shape, op.operand(m)->type().shape))
        fail(op, "mask " + str(op.operand(m)->type()) + " does not broadcast with indices " + shapeStr(shape));
    }
  }

  void store(const Operation& op) {
    if (!boolAttr(op, "mask")) return;
    bool mask = op.attrs().getBool("mask");
    std::vector<int64_t> shape;
    if (!memoryAccess(op, 1 + mask, mask ? "memory, indices, value, mask" : "memory, indices, value", shape)) return;
    const Value* memValue = op.operand(0);
    const Type& mem = memValue->type();
    if (mem.isTensor() && !mem.isOut && v_.isParam(memValue))
      return error(op.loc(), "store to input tensor '" + name(memValue) + "'");
    unsigned next = 1 + static_cast<unsigned>(mem.rank());
    const Type& v = op.operand(next)->type();
    if (!v.isTile() || v.dtype != mem.dtype || v.shape != shape)
      return void(fail(op, "value " + str(v) + " must be " + str(Type::tile(mem.dtype, shape)) + " (dtype of " + str(mem) +
                               ", shape of the indices)"));
    if (mask) {
      if (!maskOperand(op, next + 1)) return;
      auto b = broadcastShapes(op.operand(next + 1)->type().shape, shape);
      if (!b || *b != shape) fail(op, "mask " + str(op.operand(next + 1)->type()) + " does not broadcast to " + shapeStr(shape));
    }
  }
  /// tile.atomic: a store's operands (memory, indices, value, [mask]) and a
  /// result of the old values, of the value's type; adds to a few dtypes.
  void atomic(const Operation& op) {
    if (!symbolAttr(op, "kind", {"add"})) return;
    const Type& mem = op.operand(0)->type();
    if (mem.isMemory() && !atomicAddable(mem.dtype))
      return void(fail(op, "adds to i32, u32, i64, f32 or f64 memory, not " + str(mem)));
    if (!boolAttr(op, "release")) return;
    store(op);
    const unsigned value = 1 + static_cast<unsigned>(mem.rank());
    if (value < op.numOperands()) resultIs(op, op.operand(value)->type());
    if (op.attrs().getBool("release") &&
        (!mem.isTensor() || op.attrs().getBool("mask") || (value < op.numOperands() && !op.operand(value)->type().isScalar())))
      fail(op, "release adds one scalar to a global tensor without a mask");
  }
  /// tile.copy_async: a shared buffer, a tensor of its dtype, then the
  /// buffer's indices, the tensor's and an optional mask, all of one shape.
  void copyAsync(const Operation& op) {
    if (!boolAttr(op, "mask")) return;
    const bool mask = op.attrs().getBool("mask");
    if (!copyOperands(op, mask)) return;
    const unsigned indices = static_cast<unsigned>(op.operand(0)->type().rank() + op.operand(1)->type().rank());
    const std::vector<int64_t>& shape = op.operand(2)->type().shape;
    if (mask && (!maskOperand(op, 2 + indices) || op.operand(2 + indices)->type().shape != shape))
      fail(op, "mask must be an i1 tile of shape " + shapeStr(shape));
  }
  /// tile.copy_bulk: copy_async's operands without a mask, of a 1-D shape.
  void copyBulk(const Operation& op) {
    if (copyOperands(op, false) && op.operand(2)->type().rank() != 1)
      fail(op, "copies one 1-D run, not a tile of shape " + shapeStr(op.operand(2)->type().shape));
  }
  /// tile.store_bulk: copy_bulk's operands the other way (a tensor the kernel
  /// writes, then a shared buffer of its dtype).
  void storeBulk(const Operation& op) {
    if (!copyOperands(op, false, /*toShared=*/false)) return;
    const Value* dst = op.operand(0);
    if (!dst->type().isOut && v_.isParam(dst)) return error(op.loc(), "store to input tensor '" + name(dst) + "'");
    if (op.operand(2)->type().rank() != 1)
      fail(op, "copies one 1-D run, not a tile of shape " + shapeStr(op.operand(2)->type().shape));
  }
  /// gpu.bulk_wait: a shared buffer and one scalar index per dim but the last.
  void bulkWait(const Operation& op) {
    const Type& buf = op.operand(0)->type();
    if (!buf.isShared()) return void(fail(op, "waits on a shared buffer, got " + str(buf)));
    if (op.numOperands() != buf.rank())
      return void(fail(op, "takes the buffer and " + std::to_string(buf.rank() - 1) + " slot indices, got " +
                               std::to_string(op.numOperands() - 1)));
    for (unsigned i = 1; i < op.numOperands(); ++i)
      if (!isIndexTile(op.operand(i)->type()) || op.operand(i)->type().rank() != 0)
        return void(fail(op, "slot index " + std::to_string(i - 1) + " must be an i32 or i64 scalar, got " +
                                 str(op.operand(i)->type())));
  }
  /// gpu.wait_ge: one element of a global i32 or u32 tensor (scalar indices)
  /// and a scalar of its dtype to wait for.
  void waitGe(const Operation& op) {
    std::vector<int64_t> shape;
    if (!memoryAccess(op, 1, "memory, indices, value", shape)) return;
    const Type& mem = op.operand(0)->type();
    if (!mem.isTensor()) return void(fail(op, "waits on a global tensor, got " + str(mem)));
    if (mem.dtype != DType::I32 && mem.dtype != DType::U32)
      return void(fail(op, "waits on i32 or u32 memory, not " + str(mem)));
    if (!shape.empty()) return void(fail(op, "waits on one element: its indices must be scalars, not of shape [" + shapeStr(shape) + "]"));
    const Type& v = op.operand(1 + static_cast<unsigned>(mem.rank()))->type();
    if (!v.isScalar() || v.dtype != mem.dtype)
      fail(op, "value " + str(v) + " must be a scalar " + std::string(dtypeName(mem.dtype)));
  }
  /// The memory and index operands of a copy: a shared buffer, a tensor of
  /// its dtype, the buffer's indices and the tensor's, all of one shape (then
  /// a mask when `mask`).
  bool copyOperands(const Operation& op, bool mask, bool toShared = true) {
    const Type& dst = op.operand(0)->type();
    const Type& src = op.operand(1)->type();
    const char* dstKind = toShared ? "a shared buffer" : "a tensor";
    const char* srcKind = toShared ? "a tensor" : "a shared buffer";
    if (!(toShared ? dst.isShared() : dst.isTensor())) return fail(op, std::string("destination must be ") + dstKind + ", got " + str(dst));
    if (!(toShared ? src.isTensor() : src.isShared())) return fail(op, std::string("source must be ") + srcKind + ", got " + str(src));
    if (dst.dtype != src.dtype) return fail(op, "copies " + str(src) + " into " + str(dst) + ": dtypes differ");
    const size_t indices = dst.rank() + src.rank();
    if (dst.rank() == 0 || src.rank() == 0) return fail(op, "copies between memories of rank 1 or more");
    if (op.numOperands() != 2 + indices + mask)
      return fail(op, "takes " + std::to_string(2 + indices + mask) + " operands (destination, source, " +
                          std::to_string(dst.rank()) + " + " + std::to_string(src.rank()) + " indices" +
                          (mask ? ", mask)" : ")") + ", got " + std::to_string(op.numOperands()));
    const std::vector<int64_t>& shape = op.operand(2)->type().shape;
    for (unsigned i = 2; i < 2 + indices; ++i) {
      const Type& t = op.operand(i)->type();
      if (!isIndexTile(t)) return fail(op, "index " + std::to_string(i - 2) + " must be an i32 or i64 tile, got " + str(t));
      if (t.shape != shape) return fail(op, "index " + std::to_string(i - 2) + " " + str(t) + " is not of shape " + shapeStr(shape));
    }
    return true;
  }
  void clusterReduce(const Operation& op) {
    if (!tileOperand(op, 0) || !symbolAttr(op, "kind", {"sum", "max", "min"})) return;
    int64_t g = 1;
    if (op.attrs().get("group") && intAttr(op, "group", g) && (g < 1 || (g & (g - 1)) != 0))
      fail(op, "group must be a power of two, got " + std::to_string(g));
    resultIs(op, op.operand(0)->type());
  }

  /// The region's block ends in scf.yield of exactly `types`.
  bool yields(const Operation& op, const Region& r, const char* which, const std::vector<const Type*>& types) {
    const Operation* y = r.front().terminator();
    if (!y || y->kind() != OpKind::Yield) return fail(op, std::string(which) + " must end in scf.yield");
    if (y->numOperands() != types.size())
      return fail(op, std::string(which) + " yields " + std::to_string(y->numOperands()) + " values, expected " +
                          std::to_string(types.size()));
    for (unsigned i = 0; i < types.size(); ++i)
      if (y->operand(i)->type() != *types[i])
        return fail(op, std::string(which) + " yields " + str(y->operand(i)->type()) + " as value " + std::to_string(i) +
                            ", expected " + str(*types[i]));
    return true;
  }

  void forOp(const Operation& op) {
    static const char* bounds[] = {"lower bound", "upper bound", "step"};
    for (unsigned i = 0; i < 3; ++i)
      if (!isI32Scalar(op.operand(i)->type()))
        return void(fail(op, std::string(bounds[i]) + " must be i32, got " + str(op.operand(i)->type())));
    unsigned carried = op.numOperands() - 3;
    if (op.numResults() != carried)
      return void(fail(op, "has " + std::to_string(carried) + " initial values but " + std::to_string(op.numResults()) +
                               " results"));
    const Block& body = op.region(0).front();
    if (body.numArguments() != 1 + carried)
      return void(fail(op, "body takes " + std::to_string(body.numArguments()) + " arguments, expected " +
                               std::to_string(1 + carried) + " (induction variable and carried values)"));
    if (!isI32Scalar(body.argument(0)->type()))
      return void(fail(op, "induction variable must be i32, got " + str(body.argument(0)->type())));
    std::vector<const Type*> types;
    for (unsigned i = 0; i < carried; ++i) {
      const Type& init = op.operand(3 + i)->type();
      if (op.result(i)->type() != init || body.argument(1 + i)->type() != init)
        return void(fail(op, "carried value " + std::to_string(i) + " has initial type " + str(init) + ", result type " +
                                 str(op.result(i)->type()) + " and body argument type " + str(body.argument(1 + i)->type())));
      types.push_back(&init);
    }
    yields(op, op.region(0), "body", types);
  }

  void ifOp(const Operation& op) {
    const Type& c = op.operand(0)->type();
    if (!c.isScalar() || c.dtype != DType::I1) return void(fail(op, "condition must be an i1 scalar, got " + str(c)));
    std::vector<const Type*> types;
    for (unsigned i = 0; i < op.numResults(); ++i) types.push_back(&op.result(i)->type());
    for (unsigned r = 0; r < 2; ++r)
      if (op.region(r).front().numArguments())
        return void(fail(op, std::string(r ? "else" : "then") + " region takes no arguments"));
    if (yields(op, op.region(0), "then region", types)) yields(op, op.region(1), "else region", types);
  }

  void launchCheck(const Operation& op) {
    const Type& t = op.operand(0)->type();
    if (!t.isScalar() || t.dtype != DType::I1) return void(fail(op, "condition must be a bool scalar, got " + str(t)));
    if (!op.attrs().get("message")) fail(op, "needs a 'message' attribute");
  }

  void launchGrid(const Operation& op) {
    for (unsigned i = 0; i < 3; ++i)
      if (!isI32Scalar(op.operand(i)->type()))
        return void(fail(op, "grid size " + std::to_string(i) + " must be i32, got " + str(op.operand(i)->type())));
  }


private:
  bool fail(const Operation& op, const std::string& msg) { return v_.fail(op, msg); }
  void error(SourceRange at, std::string msg) { v_.error(at, std::move(msg)); }
  const std::string& name(const Value* v) { return v_.name(v); }

  OpVerifier& v_;
};

}  // namespace

void checkOpRule(const Operation& op, OpVerifier& v) { Rules(v).checkOp(op); }

}  // namespace fnk::ir::detail
