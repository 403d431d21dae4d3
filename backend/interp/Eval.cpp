// The per-CTA evaluator: the op dispatch, control flow and shape ops. Each op
// works on whole tiles (one std::vector<double> per value), so the dispatch
// cost is paid once per op, not once per element.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "backend/interp/Cluster.h"
#include "backend/interp/Eval.h"
#include "support/Float.h"

// A new op in Ops.def without a case below must not compile.
#pragma GCC diagnostic error "-Wswitch"

namespace fnk::interp::detail {

namespace {

// Tiles live in registers and shared memory on the GPU; anything near this
// size is a bug in the kernel or the IR, and would only exhaust host memory.
constexpr int64_t kMaxTileElements = int64_t{1} << 27;

Status opError(const ir::Operation& op, const std::string& m) { return Status::error(std::string(op.name()) + ": " + m); }

int64_t scalarInt(const Tile& t) {
  double v = t.data.empty() ? 0 : t.data[0];
  if (!(v >= -9.2e18 && v <= 9.2e18)) return 0;
  return static_cast<int64_t>(v);
}

}  // namespace

std::string fmtNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

int64_t numElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

void gather(const double* src, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, double* out) {
  int64_t n = numElements(shape);
  if (n <= 0) return;
  size_t r = shape.size();
  if (r == 0) {
    out[0] = src[0];
    return;
  }
  const int64_t inner = shape[r - 1], innerStride = strides[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t j = 0; j < inner; ++j) out[i + j] = src[off + j * innerStride];
    for (size_t d = r - 1; d-- > 0;) {  // odometer over the outer dims
      off += strides[d];
      if (++idx[d] < shape[d]) break;
      off -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
}

bool broadcastInto(const Tile& src, const std::vector<int64_t>& shape, std::vector<double>& out) {
  size_t r = shape.size(), sr = src.shape.size();
  if (sr > r) return false;
  std::vector<int64_t> strides(r, 0);
  int64_t s = 1;
  for (size_t i = 0; i < sr; ++i) {
    int64_t d = src.shape[sr - 1 - i], t = shape[r - 1 - i];
    if (d == t) strides[r - 1 - i] = d == 1 ? 0 : s;
    else if (d != 1) return false;
    s *= d;
  }
  out.resize(static_cast<size_t>(numElements(shape)));
  gather(src.data.data(), shape, strides, out.data());
  return true;
}

SlotMap::SlotMap(const ir::Function& fn) {
  addRegion(fn.launch);
  addRegion(fn.body);
}

void SlotMap::addRegion(const ir::Region& r) {
  for (const auto& b : r.blocks()) {
    for (unsigned i = 0; i < b->numArguments(); ++i) index_.emplace(b->argument(i), static_cast<uint32_t>(index_.size()));
    for (const auto& op : b->ops()) {
      for (unsigned i = 0; i < op->numResults(); ++i) index_.emplace(op->result(i), static_cast<uint32_t>(index_.size()));
      for (unsigned i = 0; i < op->numRegions(); ++i) addRegion(op->region(i));
    }
  }
}

Status Evaluator::bindMemory(const ir::Value* v, Memory* mem) {
  int64_t i = slots_.find(v);
  if (i < 0) return Status::error("internal error: binding a value the function does not define");
  frame_[i].mem = mem;
  frame_[i].defined = true;
  return Status::ok();
}

Status Evaluator::bindTile(const ir::Value* v, Tile t) {
  int64_t i = slots_.find(v);
  if (i < 0) return Status::error("internal error: binding a value the function does not define");
  frame_[i].tile = std::move(t);
  frame_[i].mem = nullptr;
  frame_[i].defined = true;
  return Status::ok();
}

Status Evaluator::tileOf(const ir::Operation& op, unsigned i, const Tile*& out) {
  if (i >= op.numOperands()) return opError(op, "missing operand " + std::to_string(i));
  int64_t s = slots_.find(op.operand(i));
  if (s < 0 || !frame_[s].defined) return opError(op, "operand " + std::to_string(i) + " is used before it is defined");
  if (frame_[s].mem) return opError(op, "operand " + std::to_string(i) + " is memory where a tile is expected");
  out = &frame_[s].tile;
  return Status::ok();
}

Status Evaluator::memOf(const ir::Operation& op, unsigned i, Memory*& out) {
  if (i >= op.numOperands()) return opError(op, "missing operand " + std::to_string(i));
  int64_t s = slots_.find(op.operand(i));
  if (s < 0 || !frame_[s].defined) return opError(op, "operand " + std::to_string(i) + " is used before it is defined");
  if (!frame_[s].mem) return opError(op, "operand " + std::to_string(i) + " is a tile where memory is expected");
  out = frame_[s].mem;
  return Status::ok();
}

Status Evaluator::setResult(const ir::Operation& op, unsigned i, Tile t) {
  if (i >= op.numResults()) return opError(op, "has too few results");
  const ir::Type& rt = op.result(i)->type();
  if (!rt.isTile()) return opError(op, "result " + std::to_string(i) + " is not a tile");
  if (t.shape != rt.shape)
    return opError(op, "computed a " + ir::shapeStr(t.shape) + " tile but the result type is " + rt.str());
  return bindTile(op.result(i), std::move(t));
}

Status Evaluator::needCta(const ir::Operation& op) const {
  if (!cta_) return opError(op, "cannot run in the launch region (it runs on the host, before any CTA)");
  return Status::ok();
}

Status Evaluator::runBlock(const ir::Block& b, std::vector<Tile>* results) {
  std::vector<Tile>* saved = results_;
  results_ = results;
  Status s = Status::ok();
  for (const auto& op : b.ops()) {
    s = execOp(*op);
    if (!s || returned_ || atTerminator_) break;
  }
  atTerminator_ = false;
  results_ = saved;
  return s;
}

Status Evaluator::execOp(const ir::Operation& op) {
  for (unsigned i = 0; i < op.numResults(); ++i) {
    const ir::Type& t = op.result(i)->type();
    if (!t.isTensor()) {
      int64_t n = numElements(t.shape);
      if (n < 0 || n > kMaxTileElements) return opError(op, "result type " + t.str() + " is too large to interpret");
    }
  }
  switch (op.kind()) {
    case ir::OpKind::Constant: {
      const ir::Attr* a = op.attrs().get("value");
      double v;
      if (auto* i = a ? std::get_if<int64_t>(a) : nullptr) v = static_cast<double>(*i);
      else if (auto* d = a ? std::get_if<double>(a) : nullptr) v = *d;
      else if (auto* b = a ? std::get_if<bool>(a) : nullptr) v = *b ? 1 : 0;
      else return opError(op, "needs a numeric 'value' attribute");
      const ir::Type& rt = op.result()->type();
      Tile t{rt.shape, std::vector<double>(static_cast<size_t>(numElements(rt.shape)), roundToDType(v, rt.dtype))};
      return setResult(op, 0, std::move(t));
    }
    case ir::OpKind::ProgramId:
    case ir::OpKind::NumPrograms:
    case ir::OpKind::ClusterRank:
    case ir::OpKind::ClusterSize: return execIndex(op);
    case ir::OpKind::Dim: {
      Memory* m;
      if (Status s = memOf(op, 0, m); !s) return s;
      int64_t axis = op.attrs().getInt("axis", -1);
      if (axis < 0 || axis >= static_cast<int64_t>(m->shape.size()))
        return opError(op, "axis " + std::to_string(axis) + " is out of range for " + m->name + " of rank " +
                               std::to_string(m->shape.size()));
      return setResult(op, 0, Tile{{}, {roundToDType(static_cast<double>(m->shape[axis]), op.result()->type().dtype)}});
    }
    case ir::OpKind::Arange: {
      int64_t start = op.attrs().getInt("start"), end = op.attrs().getInt("end");
      if (end < start || end - start > kMaxTileElements)
        return opError(op, "bad range [" + std::to_string(start) + ", " + std::to_string(end) + ")");
      Tile t{{end - start}, {}};
      t.data.resize(static_cast<size_t>(end - start));
      ir::DType dt = op.result()->type().dtype;
      for (int64_t i = start; i < end; ++i) t.data[i - start] = roundToDType(static_cast<double>(i), dt);
      return setResult(op, 0, std::move(t));
    }
    case ir::OpKind::Broadcast:
    case ir::OpKind::ExpandDims:
    case ir::OpKind::Reshape:
    case ir::OpKind::Transpose: return execShape(op);
    case ir::OpKind::Cast: {
      const Tile* a;
      if (Status s = tileOf(op, 0, a); !s) return s;
      Tile t{a->shape, std::vector<double>(a->data.size())};
      evalCast(op.operand(0)->type().dtype, op.result()->type().dtype, a->data.data(), t.data.data(),
               static_cast<int64_t>(t.data.size()));
      return setResult(op, 0, std::move(t));
    }
    case ir::OpKind::Add:
    case ir::OpKind::Sub:
    case ir::OpKind::Mul:
    case ir::OpKind::Div:
    case ir::OpKind::Rem:
    case ir::OpKind::Pow:
    case ir::OpKind::Min:
    case ir::OpKind::Max:
    case ir::OpKind::And:
    case ir::OpKind::Or:
    case ir::OpKind::Xor:
    case ir::OpKind::Shl:
    case ir::OpKind::Shr:
    case ir::OpKind::Cmp:
    case ir::OpKind::Neg:
    case ir::OpKind::Not:
    case ir::OpKind::Exp:
    case ir::OpKind::Exp2:
    case ir::OpKind::Log:
    case ir::OpKind::Log2:
    case ir::OpKind::Sqrt:
    case ir::OpKind::Rsqrt:
    case ir::OpKind::Tanh:
    case ir::OpKind::Erf:
    case ir::OpKind::Sigmoid:
    case ir::OpKind::Abs:
    case ir::OpKind::Select:
    case ir::OpKind::Fma: return execElementwise(op);
    case ir::OpKind::Reduce: return execReduce(op);
    case ir::OpKind::Load: return execLoad(op);
    case ir::OpKind::Prefetch: return execPrefetch(op);
    case ir::OpKind::Store:
    case ir::OpKind::Atomic: return execStore(op);
    case ir::OpKind::SharedAlloc: return execSharedAlloc(op);
    case ir::OpKind::CopyAsync: return execCopyAsync(op);
    case ir::OpKind::AsyncWait: return execAsyncWait(op);
    case ir::OpKind::CopyBulk: return execCopyBulk(op);
    case ir::OpKind::BulkWait: return execBulkWait(op);
    case ir::OpKind::StoreBulk: return execStoreBulk(op);
    case ir::OpKind::BulkStoreWait: return execBulkStoreWait(op);
    case ir::OpKind::Barrier:
    case ir::OpKind::Fence: return needCta(op);  // a CTA runs tile ops in program order, clusters one by one
    case ir::OpKind::WaitGe: return execWaitGe(op);
    case ir::OpKind::ClusterSync:
    case ir::OpKind::ClusterReduce: return execCluster(op);
    case ir::OpKind::For: return execFor(op);
    case ir::OpKind::If: return execIf(op);
    case ir::OpKind::LaunchCheck: {
      const Tile* t;
      if (Status s = tileOf(op, 0, t); !s) return s;
      if (t->data.empty() || t->data[0] == 0)
        return Status::error("launch requirement '" + op.attrs().getStr("message") + "' does not hold for these arguments");
      return Status::ok();
    }
    case ir::OpKind::Yield:
    case ir::OpKind::LaunchGrid: {
      if (results_) {
        results_->clear();
        for (unsigned i = 0; i < op.numOperands(); ++i) {
          const Tile* t;
          if (Status s = tileOf(op, i, t); !s) return s;
          results_->push_back(*t);
        }
      }
      atTerminator_ = true;
      return Status::ok();
    }
    case ir::OpKind::Return:
      returned_ = true;
      return Status::ok();
  }
  return opError(op, "internal error: op kind out of range");
}

Status Evaluator::execIndex(const ir::Operation& op) {
  if (Status s = needCta(op); !s) return s;
  double v = 0;
  if (op.kind() == ir::OpKind::ClusterRank) v = static_cast<double>(cta_->clusterRank);
  else if (op.kind() == ir::OpKind::ClusterSize) v = static_cast<double>(cta_->clusterSize);
  else {
    int64_t axis = op.attrs().getInt("axis", -1);
    if (axis < 0 || axis > 2) return opError(op, "axis " + std::to_string(axis) + " is not 0, 1 or 2");
    v = static_cast<double>(op.kind() == ir::OpKind::ProgramId ? cta_->pid[axis] : cta_->grid[axis]);
  }
  return setResult(op, 0, Tile{{}, {roundToDType(v, op.result()->type().dtype)}});
}

Status Evaluator::execShape(const ir::Operation& op) {
  const Tile* a;
  if (Status s = tileOf(op, 0, a); !s) return s;
  const ir::Type& rt = op.result()->type();
  Tile t{rt.shape, {}};
  if (op.kind() == ir::OpKind::Broadcast) {
    if (!broadcastInto(*a, rt.shape, t.data))
      return opError(op, "cannot broadcast " + ir::shapeStr(a->shape) + " to " + ir::shapeStr(rt.shape));
  } else if (op.kind() == ir::OpKind::Transpose) {
    const ir::Attr* pa = op.attrs().get("perm");
    const auto* perm = pa ? std::get_if<std::vector<int64_t>>(pa) : nullptr;
    size_t r = a->shape.size();
    std::vector<bool> seen(r, false);
    bool ok = perm && perm->size() == r;
    for (size_t k = 0; ok && k < r; ++k) {
      int64_t p = (*perm)[k];
      ok = p >= 0 && p < static_cast<int64_t>(r) && !seen[p] && rt.shape.size() == r && rt.shape[k] == a->shape[p];
      if (ok) seen[p] = true;
    }
    if (!ok) return opError(op, "'perm' is not a permutation taking " + ir::shapeStr(a->shape) + " to " + ir::shapeStr(rt.shape));
    std::vector<int64_t> srcStrides(r, 1), strides(r);
    for (size_t d = r; d-- > 1;) srcStrides[d - 1] = srcStrides[d] * a->shape[d];
    for (size_t k = 0; k < r; ++k) strides[k] = srcStrides[(*perm)[k]];
    t.data.resize(a->data.size());
    gather(a->data.data(), rt.shape, strides, t.data.data());
  } else {  // expand_dims and reshape keep the row-major order of the elements
    if (numElements(rt.shape) != static_cast<int64_t>(a->data.size()))
      return opError(op, "cannot reshape " + ir::shapeStr(a->shape) + " to " + ir::shapeStr(rt.shape));
    t.data = a->data;
  }
  roundInPlace(t.data.data(), static_cast<int64_t>(t.data.size()), rt.dtype);  // no-op unless dtypes differ
  return setResult(op, 0, std::move(t));
}

Status Evaluator::execElementwise(const ir::Operation& op) {
  const ir::Type& rt = op.result()->type();
  const int64_t n = numElements(rt.shape);
  std::vector<std::vector<double>> scratch(op.numOperands());
  std::vector<const double*> in(op.numOperands());
  for (unsigned i = 0; i < op.numOperands(); ++i) {
    const Tile* t;
    if (Status s = tileOf(op, i, t); !s) return s;
    if (t->shape == rt.shape) in[i] = t->data.data();
    else if (broadcastInto(*t, rt.shape, scratch[i])) in[i] = scratch[i].data();
    else return opError(op, "operand " + std::to_string(i) + " of shape " + ir::shapeStr(t->shape) +
                                " does not broadcast to the result shape " + ir::shapeStr(rt.shape));
  }
  Tile out{rt.shape, std::vector<double>(static_cast<size_t>(n))};
  double* r = out.data.data();
  Status s = Status::ok();
  switch (op.numOperands()) {
    case 1: s = evalUnary(op, op.operand(0)->type().dtype, rt.dtype, in[0], r, n); break;
    case 2: s = evalBinary(op, op.operand(0)->type().dtype, rt.dtype, in[0], in[1], r, n); break;
    case 3:
      if (op.kind() == ir::OpKind::Fma) {
        s = evalFma(op.operand(0)->type().dtype, rt.dtype, in[0], in[1], in[2], r, n);
      } else {  // select
        for (int64_t i = 0; i < n; ++i) r[i] = in[0][i] != 0 ? in[1][i] : in[2][i];
        if (op.operand(1)->type().dtype != rt.dtype) roundInPlace(r, n, rt.dtype);
      }
      break;
    default: return opError(op, "has " + std::to_string(op.numOperands()) + " operands");
  }
  if (!s) return s;
  return setResult(op, 0, std::move(out));
}

Status Evaluator::execReduce(const ir::Operation& op) {
  const Tile* a;
  if (Status s = tileOf(op, 0, a); !s) return s;
  const int64_t r = static_cast<int64_t>(a->shape.size());
  const int64_t axis = op.attrs().getInt("axis", -1);
  const std::string kind = op.attrs().getStr("kind");
  if (axis < 0 || axis >= r) return opError(op, "axis " + std::to_string(axis) + " is out of range for a " + ir::shapeStr(a->shape) + " tile");
  if (kind != "sum" && kind != "max" && kind != "min") return opError(op, "unknown kind '" + kind + "'");
  int64_t outer = 1, inner = 1, len = a->shape[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= a->shape[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= a->shape[d];
  Tile t{a->shape, {}};
  t.shape.erase(t.shape.begin() + axis);
  const double empty = kind == "sum" ? 0.0 : kind == "max" ? -INFINITY : INFINITY;
  t.data.assign(static_cast<size_t>(outer * inner), empty);
  const double* src = a->data.data();
  // Loop order keeps the innermost loop over contiguous elements for any axis.
  for (int64_t o = 0; o < outer; ++o) {
    double* acc = t.data.data() + o * inner;
    for (int64_t k = 0; k < len; ++k) {
      const double* row = src + (o * len + k) * inner;
      if (kind == "sum") {
        for (int64_t i = 0; i < inner; ++i) acc[i] += row[i];
      } else if (k == 0) {  // start from the first element, so an all-NaN slice gives NaN
        std::copy(row, row + inner, acc);
      } else if (kind == "max") {
        for (int64_t i = 0; i < inner; ++i) acc[i] = std::fmax(acc[i], row[i]);
      } else {
        for (int64_t i = 0; i < inner; ++i) acc[i] = std::fmin(acc[i], row[i]);
      }
    }
  }
  roundInPlace(t.data.data(), static_cast<int64_t>(t.data.size()), op.result()->type().dtype);
  return setResult(op, 0, std::move(t));
}

Status Evaluator::execFor(const ir::Operation& op) {
  const unsigned numCarried = op.numOperands() < 3 ? 0 : op.numOperands() - 3;
  if (op.numOperands() < 3 || op.numRegions() != 1 || op.region(0).empty())
    return opError(op, "needs lo, hi, step operands and a body");
  const ir::Block& body = op.region(0).front();
  if (body.numArguments() != 1 + numCarried || op.numResults() != numCarried)
    return opError(op, "body takes " + std::to_string(body.numArguments()) + " arguments and the op has " +
                           std::to_string(op.numResults()) + " results for " + std::to_string(numCarried) +
                           " carried values");
  const Tile *lo, *hi, *step;
  if (Status s = tileOf(op, 0, lo); !s) return s;
  if (Status s = tileOf(op, 1, hi); !s) return s;
  if (Status s = tileOf(op, 2, step); !s) return s;
  const int64_t l = scalarInt(*lo), h = scalarInt(*hi), st = scalarInt(*step);
  if (st <= 0) return opError(op, "step is " + std::to_string(st) + "; it must be positive");
  std::vector<Tile> carried(numCarried);
  for (unsigned i = 0; i < numCarried; ++i) {
    const Tile* t;
    if (Status s = tileOf(op, 3 + i, t); !s) return s;
    carried[i] = *t;
  }
  const ir::DType ivType = body.argument(0)->type().dtype;
  std::vector<Tile> yielded;
  for (int64_t iv = l; iv < h;) {
    (void)bindTile(body.argument(0), Tile{{}, {roundToDType(static_cast<double>(iv), ivType)}});
    for (unsigned i = 0; i < numCarried; ++i) (void)bindTile(body.argument(1 + i), std::move(carried[i]));
    yielded.clear();
    if (Status s = runBlock(body, &yielded); !s) return s;
    if (returned_) return Status::ok();
    if (yielded.size() != numCarried)
      return opError(op, "body yields " + std::to_string(yielded.size()) + " values for " + std::to_string(numCarried) +
                             " carried values");
    carried.swap(yielded);
    if (__builtin_add_overflow(iv, st, &iv)) break;
  }
  for (unsigned i = 0; i < numCarried; ++i)
    if (Status s = setResult(op, i, std::move(carried[i])); !s) return s;
  return Status::ok();
}

Status Evaluator::execIf(const ir::Operation& op) {
  const Tile* c;
  if (Status s = tileOf(op, 0, c); !s) return s;
  if (c->data.size() != 1) return opError(op, "condition is a " + ir::shapeStr(c->shape) + " tile, not a scalar");
  if (op.numRegions() != 2) return opError(op, "needs a then and an else region");
  const ir::Region& region = op.region(c->data[0] != 0 ? 0 : 1);
  std::vector<Tile> yielded;
  if (!region.empty())
    if (Status s = runBlock(region.front(), &yielded); !s) return s;
  if (returned_) return Status::ok();
  if (yielded.size() != op.numResults())
    return opError(op, "branch yields " + std::to_string(yielded.size()) + " values for " +
                           std::to_string(op.numResults()) + " results");
  for (unsigned i = 0; i < op.numResults(); ++i)
    if (Status s = setResult(op, i, std::move(yielded[i])); !s) return s;
  return Status::ok();
}

}  // namespace fnk::interp::detail
