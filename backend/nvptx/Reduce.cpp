// tile.reduce. The innermost-axis reduction (and so a whole 1-D tile) takes
// the fast path: each thread folds the V elements of each chunk it holds,
// lanes that hold one row fold further with butterfly shuffles
// (shfl.sync.bfly), and rows wider than a warp finish across warps through
// the scratch buffer. Other axes, and layouts where a row does not map onto
// a power-of-two group of threads, fold through the scratch buffer: every
// element is written, then each result element is folded by a loop over its
// slice. Floats accumulate in f32 (f64 for f64) and round once at the end.
#include <cmath>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "backend/nvptx/Lowerer.h"

namespace fnk::nvptx::detail {

namespace {
bool isPow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
}  // namespace

llvm::Value* Lowerer::identity(const std::string& kind, ir::DType t) {
  llvm::Type* ty = accType(t);
  if (ir::isFloat(t)) return llvm::ConstantFP::get(ty, kind == "sum" ? 0.0 : kind == "max" ? -INFINITY : INFINITY);
  unsigned w = ty->getIntegerBitWidth();
  bool sgn = ir::isSigned(t) && t != ir::DType::I1;
  if (kind == "sum") return llvm::ConstantInt::get(ty, 0);
  if (kind == "max") return sgn ? llvm::ConstantInt::get(ty, llvm::APInt::getSignedMinValue(w)) : llvm::ConstantInt::get(ty, 0);
  return sgn ? llvm::ConstantInt::get(ty, llvm::APInt::getSignedMaxValue(w)) : llvm::ConstantInt::get(ty, llvm::APInt::getMaxValue(w));
}

llvm::Value* Lowerer::combine(const std::string& kind, ir::DType t, llvm::Value* a, llvm::Value* c) {
  if (ir::isFloat(t)) {
    if (kind == "sum") return b.CreateFAdd(a, c);
    return intrinsic(kind == "max" ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, {a->getType()}, {a, c});
  }
  bool sgn = ir::isSigned(t) && t != ir::DType::I1;
  if (kind == "sum") return b.CreateAdd(a, c);
  unsigned id = kind == "max" ? (sgn ? llvm::Intrinsic::smax : llvm::Intrinsic::umax)
                              : (sgn ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
  return intrinsic(id, {a->getType()}, {a, c});
}

llvm::Value* Lowerer::shuffleIdx(llvm::Value* v, int lane) { return shuffle(v, lane, true); }

llvm::Value* Lowerer::shuffleXor(llvm::Value* v, int offset) { return shuffle(v, offset, false); }

llvm::Value* Lowerer::shuffle(llvm::Value* v, int offset, bool idx) {
  llvm::Type* ty = v->getType();
  auto shfl32 = [&](llvm::Value* x) {
    return intrinsic(idx ? llvm::Intrinsic::nvvm_shfl_sync_idx_i32 : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {},
                     {i32(-1), x, i32(offset), i32(31)});
  };
  unsigned bits = ty->getPrimitiveSizeInBits();
  llvm::Value* asInt = ty->isIntegerTy() ? v : b.CreateBitCast(v, b.getIntNTy(bits));
  llvm::Value* res;
  if (bits == 64) {
    llvm::Value* lo = shfl32(b.CreateTrunc(asInt, b.getInt32Ty()));
    llvm::Value* hi = shfl32(b.CreateTrunc(b.CreateLShr(asInt, 32), b.getInt32Ty()));
    res = b.CreateOr(b.CreateZExt(lo, b.getInt64Ty()), b.CreateShl(b.CreateZExt(hi, b.getInt64Ty()), 32));
  } else {
    res = b.CreateTrunc(shfl32(b.CreateZExt(asInt, b.getInt32Ty())), b.getIntNTy(bits));
  }
  return ty->isIntegerTy() ? res : b.CreateBitCast(res, ty);
}

Status Lowerer::lowerReduce(const ir::Operation& op) {
  const TV& src = tile(op.operand(0));
  const std::string kind = op.attrs().getStr("kind");
  const int64_t axis = op.attrs().getInt("axis");
  const ir::Type& rt = op.result()->type();
  const ir::DType dt = src.dtype;
  if (kind != "sum" && kind != "max" && kind != "min") return fail(op, "unknown kind '" + kind + "'");
  const int64_t rank = static_cast<int64_t>(src.shape.size());
  if (axis < 0 || axis >= rank) return fail(op, "axis out of range");
  TV out = makeTV(rt);
  auto finish = [&](std::vector<llvm::Value*> acc) {
    for (size_t r = 0; r < out.regs.size(); ++r) {
      llvm::Value* v = acc[r];
      if (ir::isFloat(dt)) v = fromAcc(v, rt.dtype);
      else if (v->getType() != regType(rt.dtype)) v = b.CreateTrunc(v, regType(rt.dtype));
      out.regs[r] = v;
    }
    tiles[op.result()] = out;
    return Status::ok();
  };
  auto acc = [&](llvm::Value* v) {
    if (ir::isFloat(dt)) return toAcc(v, dt);
    if (dt == ir::DType::I1 || ir::bitWidth(dt) < 32) return cast(v, dt, ir::DType::I32);
    return v;
  };
  llvm::Type* accTy = ir::isFloat(dt) ? accType(dt) : (ir::bitWidth(dt) < 32 ? b.getInt32Ty() : regType(dt));
  ir::DType accDt = ir::isFloat(dt) ? (dt == ir::DType::F64 ? ir::DType::F64 : ir::DType::F32)
                                    : (ir::bitWidth(dt) < 32 ? (ir::isSigned(dt) ? ir::DType::I32 : ir::DType::U32) : dt);
  llvm::Value* id = identity(kind, accDt);
  const int64_t accBytes = static_cast<int64_t>(mod.getDataLayout().getTypeAllocSize(accTy));

  if (src.layout.uniform) {  // a one-element tile: the result is the element
    std::vector<llvm::Value*> a(out.regs.size(), acc(src.regs[0]));
    return finish(a);
  }

  const ir::TileLayout& L = src.layout;
  const int64_t len = src.shape[axis];
  const int64_t V = L.vec, Tn = L.threads, C = L.chunks;
  const int64_t P = len / V;  // threads (per chunk) that hold one row
  const bool inner = axis == rank - 1 && len % V == 0 && isPow2(P);
  if (inner) {
    // 1. Per chunk: fold the V held elements (padding chunks give the identity).
    std::vector<llvm::Value*> part(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      llvm::Value* p = acc(src.regs[c * V]);
      for (int64_t v = 1; v < V; ++v) p = combine(kind, accDt, p, acc(src.regs[c * V + v]));
      if (llvm::Value* valid = elemValid(L, c * V)) p = b.CreateSelect(valid, p, id);
      part[c] = p;
    }
    // 2. Rows wider than one chunk of the CTA: fold this thread's chunks of a row.
    std::vector<llvm::Value*> q;
    const int64_t cpr = P > Tn ? P / Tn : 1;  // chunks per row
    for (int64_t j = 0; j < C; j += cpr) {
      llvm::Value* s = part[j];
      for (int64_t k = 1; k < cpr; ++k) s = combine(kind, accDt, s, part[j + k]);
      q.push_back(s);
    }
    // 3. Butterfly over the w lanes that share a row (all of a warp when P >= 32).
    const int64_t w = std::min<int64_t>(P, 32);
    for (auto& s : q)
      for (int64_t off = w / 2; off >= 1; off /= 2) s = combine(kind, accDt, s, shuffleXor(s, static_cast<int>(off)));
    // A one-warp CTA reducing its whole tile: the butterfly left the total in
    // every lane, which is every thread the uniform result lives in.
    if (Tn == w && q.size() == 1 && out.layout.uniform) return finish({q[0]});
    // 4. One value per w-lane group into the scratch; each result element folds its row's groups.
    const int64_t groupsPerRow = P > Tn ? Tn / 32 : P / w;
    const int64_t slots = static_cast<int64_t>(q.size()) * (Tn / w);
    llvm::Value* buf = scratchBegin(slots * accBytes);
    llvm::Value* lane0 = w > 1 ? b.CreateICmpEQ(b.CreateAnd(tid, i32(w - 1)), i32(0)) : nullptr;
    for (size_t j = 0; j < q.size(); ++j) {
      // group slot: (j * T + tid) / w, both for P <= T (j = chunk) and P > T (j = row, w = 32)
      llvm::Value* slot = b.CreateAdd(i32(static_cast<int64_t>(j) * (Tn / w)), b.CreateUDiv(tid, i32(w)));
      emitIf(lane0, [&] { b.CreateAlignedStore(q[j], b.CreateGEP(accTy, buf, slot), llvm::Align(accBytes)); });
    }
    barrier();
    std::vector<llvm::Value*> res(out.regs.size());
    for (size_t r = 0; r < out.regs.size(); ++r) {
      llvm::Value* o = elemIndex(out.layout, static_cast<int64_t>(r));  // the row
      if (llvm::Value* valid = elemValid(out.layout, static_cast<int64_t>(r))) o = b.CreateSelect(valid, o, i32(0));
      llvm::Value* first = b.CreateMul(o, i32(groupsPerRow));
      llvm::Value* s = nullptr;
      for (int64_t g = 0; g < groupsPerRow; ++g) {
        llvm::Value* x = b.CreateAlignedLoad(accTy, b.CreateGEP(accTy, buf, b.CreateAdd(first, i32(g))), llvm::Align(accBytes));
        s = s ? combine(kind, accDt, s, x) : x;
      }
      res[r] = s;
    }
    return finish(res);
  }

  // An outer axis whose inner extent (the dims after it) is a multiple of the
  // CTA's T * V: each thread holds the same columns in every slice along the
  // axis, and the result layout puts them in the same thread, so the fold is
  // register by register (no scratch, no barrier). E.g. sum(p[32, 8192], axis = 0).
  {
    int64_t innerN = 1, outerN = 1;
    for (int64_t d = axis + 1; d < rank; ++d) innerN *= src.shape[d];
    for (int64_t d = 0; d < axis; ++d) outerN *= src.shape[d];
    if (axis < rank - 1 && innerN % (Tn * V) == 0 && !out.layout.uniform && out.layout.vec == V &&
        out.layout.threads == Tn && static_cast<int64_t>(out.regs.size()) == outerN * (innerN / (Tn * V)) * V) {
      const int64_t cpi = innerN / (Tn * V);  // chunks per slice
      std::vector<llvm::Value*> res(out.regs.size());
      for (int64_t co = 0; co < outerN * cpi; ++co) {
        const int64_t o = co / cpi, ci = co % cpi;
        for (int64_t v = 0; v < V; ++v) {
          llvm::Value* s = id;  // folded from the identity, in slice order, as the scratch path does
          for (int64_t k = 0; k < len; ++k) s = combine(kind, accDt, s, acc(src.regs[((o * len + k) * cpi + ci) * V + v]));
          res[co * V + v] = s;
        }
      }
      return finish(res);
    }
  }

  // Generic path: every element into the scratch, then a loop per result element.
  llvm::Value* buf = scratchBegin(L.elems * accBytes);
  for (size_t r = 0; r < src.regs.size(); ++r) {
    llvm::Value* v = acc(src.regs[r]);
    llvm::Value* e = elemIndex(L, static_cast<int64_t>(r));
    emitIf(elemValid(L, static_cast<int64_t>(r)),
           [&] { b.CreateAlignedStore(v, b.CreateGEP(accTy, buf, e), llvm::Align(accBytes)); });
  }
  barrier();
  int64_t innerN = 1;
  for (int64_t d = axis + 1; d < rank; ++d) innerN *= src.shape[d];
  std::vector<llvm::Value*> res(out.regs.size());
  for (size_t r = 0; r < out.regs.size(); ++r) {
    llvm::Value* o = elemIndex(out.layout, static_cast<int64_t>(r));
    if (llvm::Value* valid = elemValid(out.layout, static_cast<int64_t>(r))) o = b.CreateSelect(valid, o, i32(0));
    llvm::Value* outer = b.CreateUDiv(o, i32(innerN));
    llvm::Value* in = b.CreateURem(o, i32(innerN));
    llvm::Value* base = b.CreateAdd(b.CreateMul(outer, i32(len * innerN)), in);
    // for (k = 0; k < len; ++k) s = combine(s, buf[base + k * innerN])
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx, "red.loop", kernel);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "red.done", kernel);
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    llvm::PHINode* k = b.CreatePHI(b.getInt32Ty(), 2);
    llvm::PHINode* s = b.CreatePHI(accTy, 2);
    k->addIncoming(i32(0), pre);
    s->addIncoming(id, pre);
    llvm::Value* idx = b.CreateAdd(base, b.CreateMul(k, i32(innerN)));
    llvm::Value* x = b.CreateAlignedLoad(accTy, b.CreateGEP(accTy, buf, idx), llvm::Align(accBytes));
    llvm::Value* s2 = combine(kind, accDt, s, x);
    llvm::Value* k2 = b.CreateAdd(k, i32(1));
    k->addIncoming(k2, loop);
    s->addIncoming(s2, loop);
    b.CreateCondBr(b.CreateICmpULT(k2, i32(len)), loop, done);
    b.SetInsertPoint(done);
    res[r] = s2;
  }
  return finish(res);
}

}  // namespace fnk::nvptx::detail
