// Cluster ops (sm_90 thread-block clusters). gpu.cluster_rank/size read
// %cluster_ctarank/%cluster_nctarank; gpu.cluster_sync is barrier.cluster
// arrive (release) + wait (acquire). Every kernel with cluster barriers
// arrives once at entry and waits before its first one (see Lowerer.cpp), so
// no CTA touches a peer's shared memory before the peer has started.
//
// gpu.cluster_reduce of a scalar (the norms' row sums) pushes: lane q < n of
// the first warp writes the CTA's value into slot [rank] of peer q's buffer,
// one cluster barrier orders the writes before the reads, and every warp
// folds its own n slots in rank order (as the interpreter does). Two buffers
// alternate between executions, so a peer that runs ahead into the next
// reduction writes the other one: one cluster barrier per reduction.
// With the st.async push, the later scalar cluster.reduces of the block whose
// values are already computed (LayerNorm's sum(g) beside sum(g * xhat): the
// CTA's sibling reductions) go in the same push, 2 or 4 values per slot, so
// the row waits for its peers once (FNK_NO_SIBLING_REDUCE=1: one each).
// A CTA sum whose one use is such a reduce skips the CTA's own bar.sync:
// each warp pushes its partial (lowerWarpPush; FNK_WARP_PUSH=0: the CTA's
// total, as before).
// A tile pulls instead: each CTA writes its tile to a buffer of its own, the
// cluster synchronizes, every CTA reads all peers' buffers through
// distributed shared memory (mapa + generic loads) and folds them in rank
// order, and a second cluster barrier keeps each buffer alive until every
// peer has read it.
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "backend/nvptx/Codegen.h"
#include "backend/nvptx/Lowerer.h"

namespace fnk::nvptx::detail {

Status Lowerer::lowerCluster(const ir::Operation& op) {
  if (isClusterBarrier(op)) flushClusterWait();
  auto clusterSync = [&] {
    intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive, {}, {});
    intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait, {}, {});
  };
  switch (op.kind()) {
    case ir::OpKind::ClusterRank:
    case ir::OpKind::ClusterSize: {
      TV tv = makeTV(op.result()->type());
      tv.regs[0] = intrinsic(op.kind() == ir::OpKind::ClusterRank ? llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank
                                                                  : llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_nctarank,
                             {}, {});
      tiles[op.result()] = tv;
      return Status::ok();
    }
    case ir::OpKind::ClusterSync: clusterSync(); return Status::ok();
    case ir::OpKind::ClusterReduce: break;
    default: return fail(op, "not a cluster op");
  }
  const std::string kind = op.attrs().getStr("kind");
  if (kind != "sum" && kind != "max" && kind != "min") return fail(op, "unknown kind '" + kind + "'");
  const int64_t n = fn.clusterCtas();
  // group = G: the reduction runs over the G consecutive ranks from
  // rank / G * G (the verifier checks that G divides n); G = n is the whole
  // cluster, and its code is the same as before groups existed.
  const int64_t G = op.attrs().getInt("group", n);
  if (warpPartials.count(op.operand(0))) return lowerWarpPush(op, G);
  const TV& src = tile(op.operand(0));
  TV out = makeTV(op.result()->type());
  if (n <= 1 || G == 1) {
    out.regs = src.regs;
    tiles[op.result()] = out;
    return Status::ok();
  }
  const ir::DType dt = src.dtype;
  const ir::DType accDt = ir::isFloat(dt) ? (dt == ir::DType::F64 ? ir::DType::F64 : ir::DType::F32) : dt;
  llvm::Type* accTy = regType(accDt);
  const int64_t bytes = static_cast<int64_t>(mod.getDataLayout().getTypeAllocSize(accTy));
  auto makeBuf = [&](int64_t slots) { return clusterBuf(accTy, slots); };
  auto toAccV = [&](llvm::Value* v) { return ir::isFloat(dt) ? toAcc(v, dt) : v; };
  auto generic = [&](llvm::Value* p) { return b.CreateAddrSpaceCast(p, llvm::PointerType::get(ctx, 0)); };
  if (src.layout.uniform) {
    if (n > 32) return fail(op, "a cluster of more than 32 CTAs");  // the fold below is one warp's shuffles
    // (st.async stores 4 or 8 bytes; narrower integers take the barrier.)
    const bool async = clusterMbar && (bytes == 4 || bytes == 8);
    // This reduction and its siblings, one slot of `width` values per rank.
    const std::vector<const ir::Operation*> group = async && bytes == 4 ? clusterSiblings(op) : std::vector{&op};
    const int64_t width = group.size() == 1 ? 1 : group.size() == 2 ? 2 : 4;
    llvm::GlobalVariable* buf = makeBuf(2 * G * width);
    // This execution's half: bit 0 of the execution count (the st.async
    // push's mbarrier phase is bit 1).
    llvm::Value* execs = executionCount();
    llvm::Value* half = b.CreateAnd(execs, i32(1));
    llvm::Value* base = b.CreateMul(half, i32(G));
    auto [first, slotRank] = groupRanks(G);
    std::vector<llvm::Value*> vs;
    for (const ir::Operation* g : group) vs.push_back(toAccV(tile(g->operand(0)).regs[0]));
    std::pair<llvm::Value*, llvm::Value*> mbarPhase{nullptr, nullptr};
    if (async) {
      mbarPhase = asyncPush(buf, accTy, bytes, execs, base, slotRank, first, vs, width, G);
    } else {
      emitIf(b.CreateICmpULT(tid, i32(G)), [&] {
        llvm::Value* mine = generic(b.CreateGEP(accTy, buf, b.CreateAdd(base, slotRank)));
        llvm::Value* peer = intrinsic(llvm::Intrinsic::nvvm_mapa, {}, {mine, first ? b.CreateAdd(first, tid) : tid});
        b.CreateAlignedStore(vs[0], peer, llvm::Align(bytes));
      });
      clusterSync();
    }
    // The wait for the peers' pushes, then: lane q of every warp reads slot q,
    // and the lanes fold the n values of each reduction in rank order from
    // warp shuffles, so every thread ends with the same results.
    auto finish = [this, mbarPhase, accTy, buf, base, n = G, bytes, width, group, dt, accDt]() mutable {
      if (mbarPhase.first) mbarWait(mbarPhase.first, mbarPhase.second);
      llvm::Value* lane = b.CreateAnd(tid, i32(31));
      llvm::Value* q = b.CreateSelect(b.CreateICmpULT(lane, i32(n)), lane, i32(0));
      llvm::Value* slot = b.CreateMul(b.CreateAdd(base, q), i32(width));
      for (size_t j = 0; j < group.size(); ++j) {
        const ir::Operation& g = *group[j];
        const std::string gkind = g.attrs().getStr("kind");
        llvm::Value* x = b.CreateAlignedLoad(accTy, b.CreateGEP(accTy, buf, b.CreateAdd(slot, i32(static_cast<int32_t>(j)))),
                                             llvm::Align(bytes));
        llvm::Value* s = nullptr;
        for (int64_t k = 0; k < n; ++k) {
          llvm::Value* xk = shuffleIdx(x, static_cast<int>(k));
          s = s ? combine(gkind, accDt, s, xk) : xk;
        }
        TV r = makeTV(g.result()->type());
        r.regs[0] = ir::isFloat(dt) ? fromAcc(s, dt) : s;
        tiles[g.result()] = r;
      }
    };
    for (size_t j = 1; j < group.size(); ++j) early.insert(group[j]);
    // FNK_CLUSTER_DEFER=1: the wait and fold at the first op of this block
    // that uses the result (or the block's end), so that the work in between
    // (the next row's partial sum, in a kernel pipelined by hand) overlaps
    // the peers' pushes.
    if (async && group.size() == 1 && knob(Knob::ClusterDefer) != 0)
      pendingFolds.push_back({op.result(), curBlock, std::move(finish)});
    else finish();
    return Status::ok();
  }
  llvm::GlobalVariable* buf = makeBuf(src.layout.elems);
  for (size_t r = 0; r < src.regs.size(); ++r) {
    llvm::Value* e = elemIndex(src.layout, static_cast<int64_t>(r));
    llvm::Value* v = toAccV(src.regs[r]);
    emitIf(elemValid(src.layout, static_cast<int64_t>(r)),
           [&] { b.CreateAlignedStore(v, b.CreateGEP(accTy, buf, e), llvm::Align(bytes)); });
  }
  clusterSync();
  for (size_t r = 0; r < out.regs.size(); ++r) {
    llvm::Value* e = elemIndex(out.layout, static_cast<int64_t>(r));
    if (llvm::Value* valid = elemValid(out.layout, static_cast<int64_t>(r))) e = b.CreateSelect(valid, e, i32(0));
    llvm::Value* local = generic(b.CreateGEP(accTy, buf, e));
    llvm::Value* s = nullptr;
    llvm::Value* first =
        G == n ? nullptr
               : b.CreateMul(b.CreateUDiv(intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {}), i32(G)),
                             i32(G));
    for (int64_t q = 0; q < G; ++q) {
      llvm::Value* peer = intrinsic(llvm::Intrinsic::nvvm_mapa, {}, {local, first ? b.CreateAdd(first, i32(q)) : i32(q)});
      llvm::Value* x = b.CreateAlignedLoad(accTy, peer, llvm::Align(bytes));
      s = s ? combine(kind, accDt, s, x) : x;
    }
    out.regs[r] = ir::isFloat(dt) ? fromAcc(s, dt) : s;
  }
  // The second cluster barrier keeps this CTA's buffer alive (and unwritten)
  // until every peer has read it. Only its arrive is issued here; the wait is
  // deferred to the end of the enclosing block or the next op that needs it
  // (flushClusterWait), so the rest of the row's work overlaps it.
  intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive, {}, {});
  clusterWaitPending = curBlock;
  tiles[op.result()] = out;
  return Status::ok();
}

// The push without a cluster barrier (the default; FNK_CLUSTER_ASYNC=0 goes
// back to the barrier push above). On the H200 it took the 8192x65536 split
// forward from 704 to 600 us and the backward from 1152 to 868. Lane q < n
// stores the value into slot [rank] of peer q's buffer half with st.async,
// whose completion counts its bytes on
// peer q's mbarrier for that half; thread 0 arrives on its own mbarrier
// expecting n values' bytes, and every thread waits for the phase to
// complete. No release fence: the membar of barrier.cluster.arrive was 16%
// of the split forward's stall cycles. A half's mbarrier completes one phase
// per use, every second execution, so the wait's parity is bit 1 of the
// execution count (bit 0 picks the half). A peer cannot reach this half's
// next use before this CTA has pushed the other half's values, which it does
// only after reading this half: the same argument as the barrier version.
std::pair<llvm::Value*, llvm::Value*> Lowerer::asyncPush(llvm::GlobalVariable* buf, llvm::Type* accTy, int64_t bytes,
                                                         llvm::Value* execs, llvm::Value* base, llvm::Value* rank,
                                                         llvm::Value* first, const std::vector<llvm::Value*>& vs,
                                                         int64_t width, int64_t n, int64_t perRank) {
  const int64_t pair = clusterMbarNext++;
  auto* mty = llvm::cast<llvm::ArrayType>(clusterMbar->getValueType());
  llvm::Value* half = b.CreateAnd(execs, i32(1));
  llvm::Value* phase = b.CreateAnd(b.CreateLShr(execs, i32(1)), i32(1));
  llvm::Value* mbar = sharedAddr(
      b.CreateGEP(mty, clusterMbar, {b.getInt64(0), b.CreateZExt(b.CreateAdd(half, i32(2 * pair)), b.getInt64Ty())}));
  emitIf(b.CreateICmpEQ(tid, i32(0)), [&] {
    ptx("{ .reg .b64 fnk_state; mbarrier.arrive.expect_tx.shared::cta.b64 fnk_state, [$0], $1; }", "r,r", b.getVoidTy(),
        {mbar, i32(static_cast<int32_t>(n * perRank * width * bytes))});
  });
  // With perRank slots per rank, every warp pushes: its lane q to peer q,
  // into slot [rank][warp].
  llvm::Value* q = perRank > 1 ? b.CreateAnd(tid, i32(31)) : tid;
  emitIf(b.CreateICmpULT(q, i32(n)), [&] {
    llvm::Value* idx = b.CreateAdd(base, rank);
    if (perRank > 1) idx = b.CreateAdd(b.CreateMul(idx, i32(perRank)), b.CreateLShr(tid, i32(5)));
    llvm::Value* slot = sharedAddr(b.CreateGEP(accTy, buf, b.CreateMul(idx, i32(width))));
    const bool wide = bytes == 8;  // one f64 or 64-bit value (width 1)
    llvm::Type* bitsTy = wide ? b.getInt64Ty() : b.getInt32Ty();
    // The slot's values as bits, padded with zeros to the vector width.
    std::vector<llvm::Value*> args{slot, mbar};
    std::string vals, cons = "r,r";
    for (int64_t j = 0; j < width; ++j) {
      llvm::Value* v = j < static_cast<int64_t>(vs.size()) ? vs[j] : llvm::Constant::getNullValue(accTy);
      args.push_back(b.CreateBitCast(v, bitsTy));
      vals += (j ? ", $" : "$") + std::to_string(j + 2);
      cons += wide ? ",l" : ",r";
    }
    args.push_back(first ? b.CreateAdd(first, q) : q);
    const std::string peer = "$" + std::to_string(width + 2);
    const std::string vec = width == 1 ? "" : ".v" + std::to_string(width);
    ptx("{ .reg .b32 fnk_slot, fnk_bar; mapa.shared::cluster.u32 fnk_slot, $0, " + peer +
            "; mapa.shared::cluster.u32 fnk_bar, $1, " + peer +
            "; st.async.shared::cluster.mbarrier::complete_tx::bytes" + vec + (wide ? ".b64" : ".b32") + " [fnk_slot], " +
            (width == 1 ? vals : "{" + vals + "}") + ", [fnk_bar]; }",
        cons + ",r", b.getVoidTy(), args);
  });
  return {mbar, phase};
}

// A CTA reduction's warp partials (warpPartials) reduced over the group
// without the CTA's bar.sync, together with its siblings whose partials are
// ready (clusterSiblings; width 1, 2 or 4 values per slot): lane q < G of
// every warp pushes its warp's values into slot [rank][warp] of peer q's
// buffer half (asyncPush with W slots per rank), and thread 0 expects
// G * W <= 32 slots (warpPushes). After the wait, lane l of every warp reads
// slot l mod L (L: the power of two at or above G * W; the identity past
// G * W), and a butterfly over L lanes folds them: every thread of the group
// folds the same values in the same order, so the result is uniform. The
// halves alternate as in asyncPush: a warp pushes into a half again only
// after every warp of the group has pushed the other half, which each does
// after reading this one.
Status Lowerer::lowerWarpPush(const ir::Operation& op, int64_t G) {
  const std::vector<const ir::Operation*> group = clusterSiblings(op, /*warp=*/true);
  const int64_t width = group.size() == 1 ? 1 : group.size() == 2 ? 2 : 4;
  llvm::Type* accTy = b.getFloatTy();  // f32 (warpPushes)
  const int64_t W = T / 32, slots = G * W;
  llvm::GlobalVariable* buf = clusterBuf(accTy, 2 * slots * width);
  llvm::Value* execs = executionCount();
  llvm::Value* half = b.CreateAnd(execs, i32(1));
  auto [first, slotRank] = groupRanks(G);
  std::vector<llvm::Value*> vs;
  for (const ir::Operation* g : group) vs.push_back(warpPartials.at(g->operand(0)));
  auto mbarPhase = asyncPush(buf, accTy, 4, execs, b.CreateMul(half, i32(G)), slotRank, first, vs, width, G, W);
  for (size_t j = 1; j < group.size(); ++j) early.insert(group[j]);
  auto finish = [this, mbarPhase, accTy, buf, half, slots, width, group]() {
    mbarWait(mbarPhase.first, mbarPhase.second);
    int64_t L = 1;
    while (L < slots) L *= 2;
    llvm::Value* lane = b.CreateAnd(tid, i32(L - 1));
    llvm::Value* valid = L == slots ? nullptr : b.CreateICmpULT(lane, i32(slots));
    llvm::Value* slot = b.CreateAdd(b.CreateMul(half, i32(slots)), valid ? b.CreateSelect(valid, lane, i32(0)) : lane);
    for (size_t j = 0; j < group.size(); ++j) {
      const std::string kind = group[j]->attrs().getStr("kind");
      llvm::Value* at = b.CreateAdd(b.CreateMul(slot, i32(width)), i32(static_cast<int64_t>(j)));
      llvm::Value* x = b.CreateAlignedLoad(accTy, b.CreateGEP(accTy, buf, at), llvm::Align(4));
      if (valid) x = b.CreateSelect(valid, x, identity(kind, ir::DType::F32));
      for (int64_t off = L / 2; off >= 1; off /= 2)
        x = combine(kind, ir::DType::F32, x, shuffleXor(x, static_cast<int>(off)));
      TV out = makeTV(group[j]->result()->type());
      out.regs[0] = x;
      tiles[group[j]->result()] = out;
    }
  };
  if (group.size() == 1 && knob(Knob::ClusterDefer) != 0)
    pendingFolds.push_back({op.result(), curBlock, std::move(finish)});
  else finish();
  return Status::ok();
}

llvm::GlobalVariable* Lowerer::clusterBuf(llvm::Type* accTy, int64_t slots) {
  auto* aty = llvm::ArrayType::get(accTy, static_cast<uint64_t>(slots));
  auto* g = new llvm::GlobalVariable(mod, aty, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(aty),
                                     "fnk_cluster_buf", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  g->setAlignment(llvm::Align(16));
  return g;
}

llvm::Value* Lowerer::executionCount() {
  llvm::IRBuilder<> eb(&kernel->getEntryBlock(), kernel->getEntryBlock().begin());
  llvm::AllocaInst* count = eb.CreateAlloca(b.getInt32Ty(), nullptr, "cluster.execs");
  eb.CreateStore(i32(0), count);
  llvm::Value* execs = b.CreateLoad(b.getInt32Ty(), count);
  b.CreateStore(b.CreateAdd(execs, i32(1)), count);
  return execs;
}

std::pair<llvm::Value*, llvm::Value*> Lowerer::groupRanks(int64_t G) {
  llvm::Value* rank = intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {});
  if (G == fn.clusterCtas()) return {nullptr, rank};
  llvm::Value* first = b.CreateMul(b.CreateUDiv(rank, i32(G)), i32(G));
  return {first, b.CreateSub(rank, first)};
}

// The later scalar cluster.reduces of the current block that can go in
// `first`'s push: their values are lowered already (a CTA reduction's
// siblings), of first's dtype, up to 4, none past another cluster barrier.
std::vector<const ir::Operation*> Lowerer::clusterSiblings(const ir::Operation& first, bool warp) {
  std::vector<const ir::Operation*> group{&first};
  if (knob(Knob::NoSiblingReduce) != 0 || !curBlock) return group;
  // A CTA's totals go with totals of first's dtype (warp partials are f32).
  const auto sameTotal = [&](const ir::Value* v) {
    auto it = tiles.find(v);
    return it != tiles.end() && it->second.layout.uniform && it->second.dtype == tile(first.operand(0)).dtype;
  };
  bool seen = false;
  for (const auto& o : curBlock->ops()) {
    if (o.get() == &first) {
      seen = true;
      continue;
    }
    if (!seen || early.count(o.get())) continue;
    if (o->kind() != ir::OpKind::ClusterReduce) {
      if (ir::anyOp(*o, isClusterBarrier)) break;  // a cluster.sync, or a region holding one or a reduce
      continue;
    }
    // Warp partials go with warp partials, a CTA's totals with totals.
    const bool ready = warp ? warpPartials.count(o->operand(0)) != 0 : sameTotal(o->operand(0));
    const std::string kind = o->attrs().getStr("kind");
    if (!ready || (kind != "sum" && kind != "max" && kind != "min") ||
        o->attrs().getInt("group", -1) != first.attrs().getInt("group", -1))
      break;
    group.push_back(o.get());
    if (group.size() == 4) break;
  }
  return group;
}

// Every thread waits for the phase `phase` of the mbarrier at `mbar`,
// spinning on try_wait.parity; with `trapAfter`, it traps after that many
// tries instead of hanging the GPU on a phase that never completes.
void Lowerer::mbarWait(llvm::Value* mbar, llvm::Value* phase, uint32_t trapAfter) {
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* wait = llvm::BasicBlock::Create(ctx, "mbar.wait", kernel);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "mbar.done", kernel);
  b.CreateBr(wait);
  b.SetInsertPoint(wait);
  llvm::PHINode* tries = trapAfter ? b.CreatePHI(b.getInt32Ty(), 2) : nullptr;
  if (tries) tries->addIncoming(i32(0), pre);
  llvm::Value* ok = ptx("{ .reg .pred fnk_done; mbarrier.try_wait.parity.shared::cta.b64 fnk_done, [$1], $2; "
                        "selp.u32 $0, 1, 0, fnk_done; }",
                        "=r,r,r,~{memory}", b.getInt32Ty(), {mbar, phase});
  if (!tries) {
    b.CreateCondBr(b.CreateICmpNE(ok, i32(0)), done, wait);
    b.SetInsertPoint(done);
    return;
  }
  llvm::BasicBlock* stuck = llvm::BasicBlock::Create(ctx, "mbar.stuck", kernel);
  llvm::BasicBlock* retry = llvm::BasicBlock::Create(ctx, "mbar.retry", kernel);
  b.CreateCondBr(b.CreateICmpNE(ok, i32(0)), done, retry);
  closeSpinLoop(tries, retry, wait, stuck, trapAfter, /*rolled=*/false);
  b.SetInsertPoint(done);
}

void Lowerer::closeSpinLoop(llvm::PHINode* tries, llvm::BasicBlock* retry, llvm::BasicBlock* again,
                            llvm::BasicBlock* stuck, uint32_t limit, bool rolled) {
  b.SetInsertPoint(retry);
  llvm::Value* next = b.CreateAdd(tries, i32(1));
  tries->addIncoming(next, retry);
  llvm::Instruction* back = b.CreateCondBr(b.CreateICmpULT(next, i32(static_cast<int32_t>(limit))), again, stuck);
  if (rolled) loopHint(back, {llvm::MDString::get(ctx, "llvm.loop.unroll.disable")});
  b.SetInsertPoint(stuck);
  intrinsic(llvm::Intrinsic::trap, {}, {});
  b.CreateUnreachable();
}

void Lowerer::flushFolds(const ir::Block& blk, const ir::Operation* user) {
  for (size_t i = 0; i < pendingFolds.size();) {
    PendingFold& f = pendingFolds[i];
    const bool uses = !user || ir::anyOp(*user, [&](const ir::Operation& o) {
      for (const ir::Value* v : o.operands())
        if (v == f.result) return true;
      return false;
    });
    if (f.block != &blk || !uses) {
      ++i;
      continue;
    }
    auto finish = std::move(f.finish);
    pendingFolds.erase(pendingFolds.begin() + static_cast<std::ptrdiff_t>(i));
    finish();
  }
}

void Lowerer::flushClusterWait() {
  if (!clusterWaitPending) return;
  intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait, {}, {});
  clusterWaitPending = nullptr;
}

}  // namespace fnk::nvptx::detail
