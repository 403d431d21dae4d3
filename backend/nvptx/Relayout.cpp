// Ops that move elements between threads: broadcast, expand_dims, reshape and
// transpose (backend/nvptx/Lowerer.h explains the scheme). A shape op whose
// source and result layouts agree moves nothing; a source that is uniform, or
// a pure function of its coordinates (remat), is recomputed where each
// element is needed; anything else goes through the shared scratch buffer:
// bar.sync, every thread writes its held elements at their row-major index,
// bar.sync, every thread reads the elements its new layout holds.
#include <optional>

#include "backend/nvptx/Lowerer.h"

namespace fnk::nvptx::detail {

bool isArith(ir::OpKind k) {
  using K = ir::OpKind;
  switch (k) {
    case K::Cast: case K::Add: case K::Sub: case K::Mul: case K::Div: case K::Rem: case K::Min:
    case K::Max: case K::And: case K::Or: case K::Xor: case K::Shl: case K::Shr: case K::Cmp:
    case K::Neg: case K::Not: case K::Abs: case K::Select: case K::Pow: case K::Exp: case K::Exp2: case K::Log:
    case K::Log2: case K::Sqrt: case K::Rsqrt: case K::Tanh: case K::Erf: case K::Sigmoid: case K::Fma:
      return true;
    default:
      return false;
  }
}

std::vector<llvm::Value*> broadcastSource(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& dst,
                                          const std::vector<int64_t>& srcShape) {
  std::vector<llvm::Value*> src(srcShape.size());
  size_t off = dst.size() - srcShape.size();
  for (size_t d = 0; d < srcShape.size(); ++d) src[d] = srcShape[d] == 1 ? b.getInt32(0) : dst[d + off];
  return src;
}

// A tile of `shape` with src's dtype and the shape's layout; true when it is
// already complete because src is uniform (every element the same value).
static bool reshaped(const Lowerer& L, const TV& src, const std::vector<int64_t>& shape, TV& out) {
  out.shape = shape;
  out.dtype = src.dtype;
  out.layout = L.layoutOf(shape);
  out.regs.assign(static_cast<size_t>(out.layout.perThread()), src.layout.uniform ? src.regs[0] : nullptr);
  return src.layout.uniform;
}

TV Lowerer::relayout(const TV& src, const std::vector<int64_t>& dstShape,
                     const std::function<llvm::Value*(llvm::Value*)>& srcIndex) {
  TV out;
  if (reshaped(*this, src, dstShape, out)) return out;
  llvm::Type* ty = memType(src.dtype);
  int64_t bytes = static_cast<int64_t>(mod.getDataLayout().getTypeAllocSize(ty));
  llvm::Value* buf = scratchBegin(src.layout.elems * bytes);  // earlier readers are done
  for (size_t r = 0; r < src.regs.size(); ++r) {
    llvm::Value* v = src.regs[r];
    if (src.dtype == ir::DType::I1) v = b.CreateZExt(v, ty);
    llvm::Value* e = elemIndex(src.layout, static_cast<int64_t>(r));
    llvm::Value* valid = elemValid(src.layout, static_cast<int64_t>(r));
    emitIf(valid, [&] { b.CreateAlignedStore(v, b.CreateGEP(ty, buf, e), llvm::Align(bytes)); });
  }
  barrier();
  for (size_t r = 0; r < out.regs.size(); ++r) {
    llvm::Value* e = elemIndex(out.layout, static_cast<int64_t>(r));
    llvm::Value* s = srcIndex(e);
    if (llvm::Value* valid = elemValid(out.layout, static_cast<int64_t>(r))) s = b.CreateSelect(valid, s, i32(0));
    llvm::Value* v = b.CreateAlignedLoad(ty, b.CreateGEP(ty, buf, s), llvm::Align(bytes));
    if (src.dtype == ir::DType::I1) v = b.CreateTrunc(v, b.getInt1Ty());
    out.regs[r] = v;
  }
  // The trailing barrier is the leading one of the next use (see above).
  return out;
}

llvm::Value* Lowerer::remat(const ir::Value* v, const std::vector<llvm::Value*>& coords, int depth) {
  const ir::Type& t = v->type();
  auto it = tiles.find(v);
  if (it != tiles.end() && it->second.layout.uniform) return it->second.regs[0];
  const ir::Operation* op = v->definingOp();
  if (!op || depth > 12) return nullptr;
  if (isArith(op->kind())) {
    std::vector<llvm::Value*> in;
    for (ir::Value* o : op->operands()) {
      llvm::Value* x = remat(o, coords, depth + 1);
      if (!x) return nullptr;
      in.push_back(x);
    }
    return arith(*op, in);
  }
  using K = ir::OpKind;
  switch (op->kind()) {
    case K::Constant: return it != tiles.end() ? it->second.regs[0] : nullptr;
    case K::Arange: {
      llvm::Value* e = b.CreateAdd(coords[0], i32(op->attrs().getInt("start")));
      return b.CreateSExtOrTrunc(e, regType(t.dtype));
    }
    case K::Broadcast:
      return remat(op->operand(0), broadcastSource(b, coords, op->operand(0)->type().shape), depth + 1);
    case K::ExpandDims: {
      std::vector<llvm::Value*> src = coords;
      src.erase(src.begin() + op->attrs().getInt("axis"));
      return remat(op->operand(0), src, depth + 1);
    }
    case K::Reduce: {
      // A row total every lane of the row's warp holds (rows in warps): the
      // caller says which of this thread's rows the element is in.
      if (auto lit = laneFolds.find(v); lit != laneFolds.end())
        return laneRow_ >= 0 && laneRow_ < static_cast<int64_t>(lit->second.size()) ? lit->second[laneRow_] : nullptr;
      // Folded again from the partials its bar.sync published (ScratchFold).
      auto fit = scratchFolds.find(v);
      if (fit == scratchFolds.end() || fit->second.use != scratchUses) return nullptr;
      llvm::Value* row = linearize(coords, t.shape);
      row = b.CreateSelect(b.CreateICmpULT(row, i32(fit->second.rows)), row, i32(0));  // padding lanes
      return fromReduceAcc(*op, foldRow(fit->second, row));
    }
    case K::Load: {
      // A read-only global tensor is read again at the element (from L1)
      // rather than moved between threads: for values constant along the
      // innermost axis only (one scalar load per chunk; a row's rstd, say).
      if (!rematLoads_ || op->attrs().getBool("mask") || op->attrs().getBool("other")) return nullptr;
      auto mit = mems.find(op->operand(0));
      if (mit == mems.end() || mit->second.addrSpace != 1 || written.count(op->operand(0))) return nullptr;
      const Mem& m = mit->second;
      llvm::Value* valid = nullptr;
      llvm::Value* off = i64(0);
      for (size_t d = 0; d < m.dims.size(); ++d) {
        const ir::Value* idx = op->operand(static_cast<unsigned>(1 + d));
        llvm::Value* x = remat(idx, broadcastSource(b, coords, idx->type().shape), depth + 1);
        if (!x) return nullptr;
        x = b.CreateSExt(x, b.getInt64Ty());
        valid = andAll(valid, b.CreateICmpULT(x, m.dims[d]));  // 0 <= x < dim
        off = b.CreateAdd(off, b.CreateMul(x, m.strides[d]));
      }
      return guardedLoad(m, t.dtype, valid, off, llvm::Constant::getNullValue(regType(t.dtype)));
    }
    default: return nullptr;
  }
}

std::optional<TV> Lowerer::rematElems(const ir::Value* v, const std::vector<int64_t>& shape, bool perChunk) {
  const TV& src = tile(v);
  TV out;
  reshaped(*this, src, shape, out);
  const size_t V = static_cast<size_t>(out.layout.vec);
  rematLoads_ = perChunk;
  bool ok = true;
  for (size_t r = 0; ok && r < out.regs.size(); ++r) {
    if (perChunk && r % V != 0) {
      out.regs[r] = out.regs[r - 1];
      continue;
    }
    auto c = coordsOf(elemIndex(out.layout, static_cast<int64_t>(r)), shape);
    // rows in warps: register r is in this thread's row r / V / cpr
    laneRow_ = out.layout.lanes ? static_cast<int64_t>(r) / out.layout.vec / out.layout.chunksPerRow() : -1;
    out.regs[r] = remat(v, broadcastSource(b, c, src.shape));
    ok = out.regs[r] != nullptr;
  }
  laneRow_ = -1;
  rematLoads_ = false;
  if (!ok) return std::nullopt;
  return out;
}

std::optional<TV> Lowerer::rematTile(const ir::Value* v, const std::vector<int64_t>& shape, int depth) {
  auto it = tiles.find(v);
  if (it != tiles.end() && (it->second.layout.uniform || it->second.shape == shape)) {
    TV out;
    if (reshaped(*this, it->second, shape, out)) return out;
    return it->second;
  }
  const ir::Operation* op = v->definingOp();
  if (!op || depth > 12) return std::nullopt;
  using K = ir::OpKind;
  switch (op->kind()) {
    case K::Load: {
      auto mit = mems.find(op->operand(0));
      if (mit == mems.end() || mit->second.addrSpace != 1 || written.count(op->operand(0))) return std::nullopt;
      return loadAt(*op, shape);
    }
    case K::Broadcast:
      return rematTile(op->operand(0), shape, depth + 1);
    case K::ExpandDims:  // a leading 1 changes nothing under broadcasting's innermost alignment
      if (op->attrs().getInt("axis") != 0) return rematElems(v, shape, false);
      return rematTile(op->operand(0), shape, depth + 1);
    default: {
      if (!isArith(op->kind())) return rematElems(v, shape, false);
      std::vector<TV> ins;
      for (ir::Value* o : op->operands()) {
        std::optional<TV> t = rematTile(o, shape, depth + 1);
        if (!t) return std::nullopt;
        ins.push_back(std::move(*t));
      }
      TV out;
      reshaped(*this, ins[0], shape, out);
      out.dtype = op->result()->type().dtype;
      std::vector<llvm::Value*> in(ins.size());
      for (size_t r = 0; r < out.regs.size(); ++r) {
        for (size_t i = 0; i < ins.size(); ++i) in[i] = ins[i].regs[ins[i].layout.uniform ? 0 : r];
        out.regs[r] = arith(*op, in);
      }
      return out;
    }
  }
}

TV Lowerer::broadcastTo(const ir::Value* v, const std::vector<int64_t>& shape) {
  const TV& src = tile(v);
  if (src.shape == shape) return src;
  TV out;
  if (reshaped(*this, src, shape, out)) return out;
  // Same row-major order, same layout (a [1, N] source for an [N] result, say).
  if (src.layout == out.layout && src.layout.elems == out.layout.elems) {
    out.regs = src.regs;
    return out;
  }
  // A source constant along the innermost axis (a row's statistic broadcast
  // over the row) has one value per V-element chunk: recompute it once per
  // chunk, element-wise. One that varies along it (w[None, :] over rows) is
  // recomputed op by op at the new shape, its loads issued again as tiles.
  const int64_t V = out.layout.vec;
  const bool perChunk = !src.shape.empty() && src.shape.back() == 1 && shape.back() % V == 0;
  if (!perChunk)
    if (std::optional<TV> t = rematTile(v, shape)) return *t;
  if (std::optional<TV> t = rematElems(v, shape, perChunk)) return *t;
  if (laneDerived(v)) {  // its registers are not the values (laneReduce promised a remat)
    if (error_) error_ = Status::error("kernel '" + fn.name + "': internal error: a broadcast of a lane-held row total could not be recomputed");
    return out;
  }
  const std::vector<int64_t> srcShape = src.shape;
  return relayout(src, shape, [&](llvm::Value* e) { return linearize(broadcastSource(b, coordsOf(e, shape), srcShape), srcShape); });
}

Status Lowerer::lowerShape(const ir::Operation& op) {
  const ir::Type& rt = op.result()->type();
  const TV& src = tile(op.operand(0));
  ir::TileLayout dl = layoutOf(rt.shape);
  if (op.kind() == ir::OpKind::Broadcast) {
    tiles[op.result()] = broadcastTo(op.operand(0), rt.shape);
    return Status::ok();
  }
  if (op.kind() == ir::OpKind::Transpose) {
    const ir::Attr* pa = op.attrs().get("perm");
    const auto* perm = pa ? std::get_if<std::vector<int64_t>>(pa) : nullptr;
    if (!perm || perm->size() != rt.shape.size()) return fail(op, "needs a 'perm' attribute");
    std::vector<int64_t> p = *perm, srcShape = src.shape, dstShape = rt.shape;
    tiles[op.result()] = relayout(src, rt.shape, [&](llvm::Value* e) {
      auto dc = coordsOf(e, dstShape);
      std::vector<llvm::Value*> sc(dc.size());
      for (size_t k = 0; k < p.size(); ++k) sc[p[k]] = dc[k];
      return linearize(sc, srcShape);
    });
    return Status::ok();
  }
  // expand_dims and reshape keep the row-major order of the elements.
  if (src.layout == dl) {
    TV tv = src;
    tv.shape = rt.shape;
    tiles[op.result()] = tv;
    return Status::ok();
  }
  tiles[op.result()] = relayout(src, rt.shape, [](llvm::Value* e) { return e; });
  return Status::ok();
}

}  // namespace fnk::nvptx::detail
