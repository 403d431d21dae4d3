// tile.reduce. The innermost-axis reduction (and so a whole 1-D tile) takes
// the fast path: each thread folds the V elements of each chunk it holds,
// lanes that hold one row fold further with butterfly shuffles
// (shfl.sync.bfly), and rows wider than a warp finish across warps through
// the scratch buffer, whatever the count of warps. Other axes, and rows whose
// chunks no power-of-two group of lanes tiles, fold through the scratch: every
// element is written, then each result element is folded by a loop over its
// slice. Floats accumulate in f32 (f64 for f64) and round once at the end.
#include <cmath>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "backend/nvptx/Codegen.h"
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

llvm::Value* Lowerer::shuffleIdx(llvm::Value* v, int lane) { return shuffle(v, lane, Shfl::Idx); }

llvm::Value* Lowerer::shuffleXor(llvm::Value* v, int offset) { return shuffle(v, offset, Shfl::Bfly); }

llvm::Value* Lowerer::shuffleUp(llvm::Value* v, int delta) { return shuffle(v, delta, Shfl::Up); }

llvm::Value* Lowerer::shuffleDown(llvm::Value* v, int delta) { return shuffle(v, delta, Shfl::Down); }

llvm::Value* Lowerer::shuffle(llvm::Value* v, int offset, Shfl mode) {
  llvm::Type* ty = v->getType();
  // The intrinsic and its clamp operand (shfl.up's is the lowest lane, 0; the others' the highest, 31).
  const llvm::Intrinsic::ID id = mode == Shfl::Idx    ? llvm::Intrinsic::nvvm_shfl_sync_idx_i32
                                 : mode == Shfl::Bfly ? llvm::Intrinsic::nvvm_shfl_sync_bfly_i32
                                 : mode == Shfl::Up   ? llvm::Intrinsic::nvvm_shfl_sync_up_i32
                                                      : llvm::Intrinsic::nvvm_shfl_sync_down_i32;
  const int clamp = mode == Shfl::Up ? 0 : 31;
  auto shfl32 = [&](llvm::Value* x) { return intrinsic(id, {}, {i32(-1), x, i32(offset), i32(clamp)}); };
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

namespace {
/// The inner-axis fast path's geometry for a reduction of `src` along `axis`.
struct InnerFold {
  int64_t V, Tn, C, P;
  int64_t w;       // lanes that share a row (butterfly width)
  int64_t cpr;     // a thread's chunks per row
  int64_t groups;  // w-lane groups per row, folded through the scratch
  bool ok;         // the fast path applies
};

InnerFold innerFold(const ir::TileLayout& L, const std::vector<int64_t>& shape, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  InnerFold f{L.vec, L.threads, L.chunks, 0, 1, 1, 1, false};
  if (L.uniform || axis != rank - 1 || shape[axis] % f.V != 0) return f;
  f.P = shape[axis] / f.V;  // chunks per row
  if (L.lanes) {  // rows in warps: a row's cpr chunks per lane, then its warp's 32 lanes
    f.w = L.lanes;
    f.cpr = L.chunksPerRow();
    f.ok = true;
    return f;
  }
  // Chunk g = chunk * T + tid lies in row g / P. Rows of P >= T chunks that
  // the threads divide evenly, or a tile of one row (padding chunks give the
  // identity), are cpr of each thread's chunks, then all T threads: the warps
  // of any count meet in the scratch.
  const bool oneRow = L.elems == shape[axis];
  if (f.P >= f.Tn && (f.P % f.Tn == 0 || oneRow)) {
    f.w = 32;
    f.cpr = oneRow ? f.C : f.P / f.Tn;
    f.groups = f.Tn / 32;
    f.ok = true;
    return f;
  }
  // Otherwise each chunk on its own: a row is P / w groups of w lanes, which
  // tile the CTA's chunks when w divides 32 and P (g / w is then the slot of
  // (chunk, tid) for every T). Rows of 64 chunks over 96 threads, say, or 704
  // over 384 take this path; rows of 24 or 48 chunks the scratch loop below.
  f.w = std::min<int64_t>(f.P, 32);
  f.ok = isPow2(f.w) && f.P % f.w == 0;
  f.groups = f.P / f.w;
  return f;
}
}  // namespace

bool Lowerer::foldsAcrossWarps(const ir::Operation& op) {
  if (op.kind() != ir::OpKind::Reduce) return false;
  const ir::Type& st = op.operand(0)->type();
  InnerFold f = innerFold(layoutOf(st.shape), st.shape, op.attrs().getInt("axis"));
  if (!f.ok) return false;
  if (layoutOf(st.shape).lanes) return !laneReduce(op);
  const bool oneRow = f.C / f.cpr == 1;
  return !(f.Tn == f.w && oneRow && layoutOf(op.result()->type().shape).uniform);
}

llvm::Value* Lowerer::fromReduceAcc(const ir::Operation& op, llvm::Value* v) {
  const ir::DType dt = op.operand(0)->type().dtype, rdt = op.result()->type().dtype;
  if (ir::isFloat(dt)) return fromAcc(v, rdt);
  return v->getType() != regType(rdt) ? b.CreateTrunc(v, regType(rdt)) : v;
}

void Lowerer::finishReduce(const ir::Operation& op, TV out, const std::vector<llvm::Value*>& acc) {
  for (size_t r = 0; r < out.regs.size(); ++r) out.regs[r] = fromReduceAcc(op, acc[r]);
  tiles[op.result()] = out;
}

llvm::Value* Lowerer::foldPairwise(const std::string& kind, ir::DType t, std::vector<llvm::Value*> xs) {
  while (xs.size() > 1) {
    std::vector<llvm::Value*> next;
    for (size_t i = 0; i + 1 < xs.size(); i += 2) next.push_back(combine(kind, t, xs[i], xs[i + 1]));
    if (xs.size() % 2) next.push_back(xs.back());
    xs = std::move(next);
  }
  return xs[0];
}

llvm::Value* Lowerer::foldRow(const ScratchFold& f, llvm::Value* row) {
  llvm::Value* first = b.CreateMul(row, i32(f.groupsPerRow));
  auto partial = [&](int64_t g) {
    return b.CreateAlignedLoad(f.accTy, b.CreateGEP(f.accTy, f.buf, b.CreateAdd(first, i32(g))), llvm::Align(f.bytes));
  };
  if (knob(Knob::TreeFold, 1)) {  // pairwise: log2(G) dependent steps instead of G - 1
    std::vector<llvm::Value*> xs;
    for (int64_t g = 0; g < f.groupsPerRow; ++g) xs.push_back(partial(g));
    return foldPairwise(f.kind, f.accDt, std::move(xs));
  }
  llvm::Value* s = nullptr;
  for (int64_t g = 0; g < f.groupsPerRow; ++g) {
    llvm::Value* x = partial(g);
    s = s ? combine(f.kind, f.accDt, s, x) : x;
  }
  return s;
}

Status Lowerer::lowerReduce(const ir::Operation& op) { return lowerReduces({&op}); }

Status Lowerer::lowerReduces(const std::vector<const ir::Operation*>& ops) {
  // Inner-axis reductions whose rows span warps, each folded as far as its
  // warps go; their cross-warp step through the scratch buffer is shared.
  struct Pending {
    const ir::Operation* op;
    TV out;
    std::vector<llvm::Value*> q;  // one value per (row, w-lane group) of this thread
    int64_t w, Tn, offset;        // offset: bytes into the shared scratch
    ScratchFold fold;             // what the scratch will hold (buf and use set below)
  };
  std::vector<Pending> pending;
  for (const ir::Operation* opp : ops) {
    const ir::Operation& op = *opp;
    const TV& src = tile(op.operand(0));
    const std::string kind = op.attrs().getStr("kind");
    const int64_t axis = op.attrs().getInt("axis");
    const ir::Type& rt = op.result()->type();
    const ir::DType dt = src.dtype;
    if (kind != "sum" && kind != "max" && kind != "min") return fail(op, "unknown kind '" + kind + "'");
    const int64_t rank = static_cast<int64_t>(src.shape.size());
    if (axis < 0 || axis >= rank) return fail(op, "axis out of range");
    TV out = makeTV(rt);
    const ReduceAcc ra = reduceAcc(kind, dt);
    auto acc = [&](llvm::Value* v) { return toReduceAcc(v, dt); };

    if (src.layout.uniform) {  // a one-element tile: the result is the element
      finishReduce(op, out, std::vector<llvm::Value*>(out.regs.size(), acc(src.regs[0])));
      continue;
    }
    const ir::TileLayout& L = src.layout;
    const InnerFold f = innerFold(L, src.shape, axis);
    if (!f.ok) {
      if (Status s = lowerReduceOther(op, out, ra); !s) return s;
      continue;
    }
    const int64_t V = f.V, Tn = f.Tn, C = f.C, P = f.P, w = f.w;
    // 1. Per chunk: fold the V held elements (padding chunks give the identity).
    // (One after another: folded pairwise, as the warp partials are, these
    // measured no faster, docs/perf-notes.md "GPU backend v11".)
    std::vector<llvm::Value*> part(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      llvm::Value* p = acc(src.regs[c * V]);
      for (int64_t v = 1; v < V; ++v) p = combine(kind, ra.dt, p, acc(src.regs[c * V + v]));
      if (llvm::Value* valid = elemValid(L, c * V)) p = b.CreateSelect(valid, p, ra.id);
      part[c] = p;
    }
    // 2. Rows wider than one chunk of the CTA: fold this thread's chunks of a row.
    std::vector<llvm::Value*> q;
    for (int64_t j = 0; j < C; j += f.cpr) {
      llvm::Value* s = part[j];
      for (int64_t k = 1; k < f.cpr; ++k) s = combine(kind, ra.dt, s, part[j + k]);
      q.push_back(s);
    }
    // 3. Butterfly over the w lanes that share a row (all of a warp when P >= 32).
    for (auto& s : q)
      for (int64_t off = w / 2; off >= 1; off /= 2) s = combine(kind, ra.dt, s, shuffleXor(s, static_cast<int>(off)));
    // Its one use a scalar cluster.reduce: the warps' partials go to the
    // cluster as they are (lowerWarpPush), with no scratch and no bar.sync.
    if (warpPushes(op, w, q.size())) {
      warpPartials[op.result()] = q[0];
      continue;
    }
    // A one-warp CTA reducing its whole tile: the butterfly left the total in
    // every lane, which is every thread the uniform result lives in.
    if (Tn == w && q.size() == 1 && out.layout.uniform) {
      finishReduce(op, out, {q[0]});
      continue;
    }
    // Rows in warps, every use served from the lanes: the totals stay there.
    if (L.lanes && laneReduce(op)) {
      std::vector<llvm::Value*>& rows = laneFolds[op.result()];
      for (llvm::Value* s : q) rows.push_back(fromReduceAcc(op, s));
      for (auto& r : out.regs) r = llvm::PoisonValue::get(regType(rt.dtype));
      tiles[op.result()] = out;
      continue;
    }
    ScratchFold fold;
    fold.accTy = ra.ty;
    fold.accDt = ra.dt;
    fold.kind = kind;
    fold.groupsPerRow = L.lanes ? 1 : f.groups;
    fold.rows = out.layout.elems;
    fold.bytes = ra.bytes;
    pending.push_back({&op, out, std::move(q), w, Tn, 0, fold});
  }
  if (pending.empty()) return Status::ok();

  // 4. One value per w-lane group into the scratch (each reduction in its own
  // slice of it), one bar.sync for all, then each result element folds its
  // row's groups.
  int64_t bytes = 0;
  for (Pending& p : pending) {
    bytes = (bytes + p.fold.bytes - 1) / p.fold.bytes * p.fold.bytes;
    p.offset = bytes;
    bytes += static_cast<int64_t>(p.q.size()) * (p.Tn / p.w) * p.fold.bytes;
  }
  llvm::Value* scratchBuf = scratchBegin(bytes);
  for (Pending& p : pending) {
    p.fold.buf = p.offset ? b.CreateConstGEP1_64(b.getInt8Ty(), scratchBuf, static_cast<uint64_t>(p.offset)) : scratchBuf;
    p.fold.use = scratchUses;
  }
  for (const Pending& p : pending) {
    llvm::Value* lane0 = p.w > 1 ? b.CreateICmpEQ(b.CreateAnd(tid, i32(p.w - 1)), i32(0)) : nullptr;
    for (size_t j = 0; j < p.q.size(); ++j) {
      // group slot: (j * T + tid) / w, both for P <= T (j = chunk) and P > T (j = row, w = 32)
      llvm::Value* slot = b.CreateAdd(i32(static_cast<int64_t>(j) * (p.Tn / p.w)), b.CreateUDiv(tid, i32(p.w)));
      emitIf(lane0, [&] {
        b.CreateAlignedStore(p.q[j], b.CreateGEP(p.fold.accTy, p.fold.buf, slot), llvm::Align(p.fold.bytes));
      });
    }
  }
  barrier();
  for (const Pending& p : pending) {
    std::vector<llvm::Value*> res(p.out.regs.size());
    for (size_t r = 0; r < p.out.regs.size(); ++r) {
      llvm::Value* o = elemIndex(p.out.layout, static_cast<int64_t>(r));  // the row
      if (llvm::Value* valid = elemValid(p.out.layout, static_cast<int64_t>(r))) o = b.CreateSelect(valid, o, i32(0));
      res[r] = foldRow(p.fold, o);
    }
    finishReduce(*p.op, p.out, res);
    if (!p.out.layout.uniform) scratchFolds[p.op->result()] = p.fold;
  }
  return Status::ok();
}

// The most warp partials a warp push sends to each CTA (lowerWarpPush: one
// per lane). Past it the CTA folds first: at 16 CTAs of 16 warps (256
// pushes per CTA and row) the 1024x262144 backward ran 414 us against 393
// (H200, backend v25).
constexpr int64_t kMaxWarpPushSlots = 32;

bool Lowerer::warpPushes(const ir::Operation& op, int64_t w, size_t parts) {
  const ir::Value* r = op.result();
  if (!knob(Knob::WarpPush, 1) || !clusterMbar || w != 32 || parts != 1 || T <= 32 || T % 32 != 0 ||
      r->type().dtype != ir::DType::F32 || !layoutOf(r->type().shape).uniform || r->users().size() != 1)
    return false;
  const ir::Operation& u = *r->users()[0];
  const int64_t group = u.attrs().getInt("group", fn.clusterCtas());  // the CTAs whose partials meet
  return u.kind() == ir::OpKind::ClusterReduce && u.parentBlock() == curBlock &&
         u.attrs().getStr("kind") == op.attrs().getStr("kind") && group > 1 && group * (T / 32) <= kMaxWarpPushSlots;
}

Lowerer::ReduceAcc Lowerer::reduceAcc(const std::string& kind, ir::DType dt) {
  ReduceAcc ra;
  ra.ty = ir::isFloat(dt) ? accType(dt) : (ir::bitWidth(dt) < 32 ? b.getInt32Ty() : regType(dt));
  ra.dt = ir::isFloat(dt) ? (dt == ir::DType::F64 ? ir::DType::F64 : ir::DType::F32)
                          : (ir::bitWidth(dt) < 32 ? (ir::isSigned(dt) ? ir::DType::I32 : ir::DType::U32) : dt);
  ra.id = identity(kind, ra.dt);
  ra.bytes = static_cast<int64_t>(mod.getDataLayout().getTypeAllocSize(ra.ty));
  return ra;
}

llvm::Value* Lowerer::toReduceAcc(llvm::Value* v, ir::DType dt) {
  if (ir::isFloat(dt)) return toAcc(v, dt);
  if (dt == ir::DType::I1 || ir::bitWidth(dt) < 32) return cast(v, dt, ir::DType::I32);
  return v;
}

Status Lowerer::lowerReduceOther(const ir::Operation& op, TV out, const ReduceAcc& ra) {
  const TV& src = tile(op.operand(0));
  const std::string kind = op.attrs().getStr("kind");
  const int64_t axis = op.attrs().getInt("axis");
  const ir::DType dt = src.dtype;
  const int64_t rank = static_cast<int64_t>(src.shape.size());
  const ir::TileLayout& L = src.layout;
  const int64_t len = src.shape[axis];
  const int64_t V = L.vec, Tn = L.threads;
  auto acc = [&](llvm::Value* v) { return toReduceAcc(v, dt); };
  llvm::Type* accTy = ra.ty;
  const ir::DType accDt = ra.dt;
  llvm::Value* id = ra.id;
  const int64_t accBytes = ra.bytes;
  auto finish = [&](const std::vector<llvm::Value*>& a) {
    finishReduce(op, out, a);
    return Status::ok();
  };

  // An outer axis whose inner extent (the dims after it) is a multiple of the
  // CTA's T * V: each thread holds the same columns in every slice along the
  // axis, and the result layout puts them in the same thread, so the fold is
  // register by register (no scratch, no barrier). E.g. sum(p[32, 8192], axis = 0).
  {
    int64_t innerN = 1, outerN = 1;
    for (int64_t d = axis + 1; d < rank; ++d) innerN *= src.shape[d];
    for (int64_t d = 0; d < axis; ++d) outerN *= src.shape[d];
    if (axis < rank - 1 && !L.lanes && !out.layout.lanes && innerN % (Tn * V) == 0 && !out.layout.uniform &&
        out.layout.vec == V &&
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

  // Rows in warps, a [R, N] tile folded over its rows (column sums): each
  // thread folds the rows it holds (same columns in every pass), the W warps'
  // partial rows go through the scratch, and each result element folds those:
  // W * N values in shared memory instead of R * N.
  if (L.lanes && rank == 2 && axis == 0 && !out.layout.uniform && !out.layout.lanes) {
    const int64_t cpr = L.chunksPerRow(), W = L.rowGroups(), N = L.rowLen, slots = L.chunks / cpr;
    std::vector<llvm::Value*> part(static_cast<size_t>(cpr * V), id);
    for (int64_t rr = 0; rr < slots; ++rr)
      for (int64_t k = 0; k < cpr; ++k) {
        const int64_t r0 = (rr * cpr + k) * V;
        llvm::Value* valid = elemValid(L, r0);  // a padding row adds the identity
        for (int64_t v = 0; v < V; ++v) {
          llvm::Value* x = acc(src.regs[static_cast<size_t>(r0 + v)]);
          if (valid) x = b.CreateSelect(valid, x, id);
          part[k * V + v] = combine(kind, accDt, part[k * V + v], x);
        }
      }
    llvm::Value* buf = scratchBegin(W * N * accBytes);
    for (int64_t k = 0; k < cpr; ++k)
      for (int64_t v = 0; v < V; ++v)  // element (warp, column) of the partial rows: the row-0 index plus the warp's row
        b.CreateAlignedStore(part[k * V + v], b.CreateGEP(accTy, buf, elemIndex(L, k * V + v)), llvm::Align(accBytes));
    barrier();
    std::vector<llvm::Value*> res(out.regs.size());
    for (size_t r = 0; r < out.regs.size(); ++r) {
      llvm::Value* col = elemIndex(out.layout, static_cast<int64_t>(r));
      if (llvm::Value* valid = elemValid(out.layout, static_cast<int64_t>(r))) col = b.CreateSelect(valid, col, i32(0));
      llvm::Value* sum = id;  // from the identity, in row order, as the scratch path folds
      for (int64_t g = 0; g < W; ++g)
        sum = combine(kind, accDt, sum,
                      b.CreateAlignedLoad(accTy, b.CreateGEP(accTy, buf, b.CreateAdd(col, i32(g * N))), llvm::Align(accBytes)));
      res[r] = sum;
    }
    return finish(res);
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

bool Lowerer::laneReduce(const ir::Operation& op) {
  auto [it, fresh] = laneCache_.try_emplace(&op, LaneState::Pending);
  // Pending: a use chain led back here (one-pass statistics combine two row
  // totals); assumed, and undone below if this op turns out not lane-held.
  if (!fresh) return it->second != LaneState::No;
  const size_t first = laneOrder_.size();
  laneOrder_.push_back(&op);
  const ir::Type& st = op.operand(0)->type();
  const ir::TileLayout L = layoutOf(st.shape);
  const int64_t axis = op.attrs().getInt("axis");
  bool ok = op.kind() == ir::OpKind::Reduce && L.lanes && axis == static_cast<int64_t>(st.shape.size()) - 1 &&
            op.result()->type().numElements() > 1 && laneUsesOk(op.result(), st.shape);
  if (!ok)  // what was decided while assuming this op: decided again when asked
    for (size_t i = first + 1; i < laneOrder_.size(); ++i) laneCache_.erase(laneOrder_[i]);
  laneOrder_.resize(ok ? laneOrder_.size() : first + 1);
  laneCache_[&op] = ok ? LaneState::Yes : LaneState::No;
  return ok;
}

bool Lowerer::laneUsesOk(const ir::Value* v, const std::vector<int64_t>& rowsShape, int depth) {
  if (depth > 12) return false;
  using K = ir::OpKind;
  const int64_t rows = v->type().numElements();
  for (const ir::Operation* u : v->users()) {
    if (u->kind() == K::Broadcast) {  // back over the rows: remat once per chunk (broadcastTo)
      if (u->result()->type().shape != rowsShape || v->type().shape.empty() || v->type().shape.back() != 1) return false;
      continue;
    }
    if (u->kind() == K::Store) {  // the value, not an index or the mask: lowerLaneStore
      const size_t rank = u->operand(0)->type().rank();
      if (u->numOperands() < 2 + rank || u->operand(static_cast<unsigned>(1 + rank)) != v) return false;
      for (unsigned i = 1; i < u->numOperands(); ++i)
        if (i != 1 + rank && !laneRematable(u->operand(i))) return false;
      continue;
    }
    if (u->kind() != K::ExpandDims && !isArith(u->kind())) return false;
    if (u->numResults() != 1 || u->result()->type().numElements() != rows) return false;
    for (const ir::Value* o : u->operands())
      if (!laneRematable(o)) return false;
    if (!laneUsesOk(u->result(), rowsShape, depth + 1)) return false;
  }
  return true;
}

bool Lowerer::laneRematable(const ir::Value* v, int depth) {
  const ir::Type& t = v->type();
  if (!t.isTile() || t.numElements() <= 1) return true;  // uniform: in every thread
  const ir::Operation* op = v->definingOp();
  if (!op || depth > 12) return false;
  using K = ir::OpKind;
  switch (op->kind()) {
    case K::Constant: case K::Arange: return true;
    case K::Broadcast: case K::ExpandDims: return laneRematable(op->operand(0), depth + 1);
    case K::Reduce: return laneReduce(*op);
    case K::Load: {  // read again at the element (remat with rematLoads_): a row's rstd, say
      auto mit = mems.find(op->operand(0));
      if (mit == mems.end() || mit->second.addrSpace != 1 || written.count(op->operand(0)) ||
          op->attrs().getBool("mask") || op->attrs().getBool("other"))
        return false;
      for (unsigned i = 1; i < op->numOperands(); ++i)
        if (!laneRematable(op->operand(i), depth + 1)) return false;
      return true;
    }
    default:
      if (!isArith(op->kind())) return false;
      for (const ir::Value* o : op->operands())
        if (!laneRematable(o, depth + 1)) return false;
      return true;
  }
}

bool Lowerer::laneDerived(const ir::Value* v, int depth) {
  if (laneFolds.count(v)) return true;
  const ir::Operation* op = v->definingOp();
  if (!op || depth > 12 || !v->type().isTile() || v->type().numElements() <= 1) return false;
  // not through broadcasts: a row total broadcast over its row is a tile like any other
  if (op->kind() != ir::OpKind::ExpandDims && !isArith(op->kind())) return false;
  for (const ir::Value* o : op->operands())
    if (laneDerived(o, depth + 1)) return true;
  return false;
}

}  // namespace fnk::nvptx::detail
