// The kernel skeleton (parameters, thread index), the op dispatch, structured
// control flow (scf.for / scf.if become loops and diamonds with one phi per
// held register) and the helpers every other part of the lowering uses.
#include "backend/nvptx/Lowerer.h"

#include <cstdlib>
#include <functional>
#include <set>

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "backend/nvptx/Abi.h"
#include "backend/nvptx/Codegen.h"
#include "ir/Pass.h"

#pragma GCC diagnostic error "-Wswitch"

namespace fnk::nvptx::detail {

Lowerer::Lowerer(llvm::Module& m, const ir::Function& f) : ctx(m.getContext()), mod(m), fn(f), b(m.getContext()) {
  T = 32 * fn.warps();
  // a * b + c may become one fma (one rounding instead of two), as nvcc and
  // Triton do by default: fewer instructions in the memory-bound kernels'
  // inner loops. The interpreter rounds twice; the difference is within
  // every --check tolerance. FNK_NO_CONTRACT=1 keeps them apart.
  if (!knob(Knob::NoContract)) {
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    b.setFastMathFlags(fmf);
  }
}

Status Lowerer::fail(const ir::Operation& op, const std::string& msg) {
  Status s = Status::error("kernel '" + fn.name + "': " + op.name() + ": " + msg);
  if (error_) error_ = s;
  return s;
}

llvm::Type* Lowerer::regType(ir::DType t) {
  switch (t) {
    case ir::DType::I1: return b.getInt1Ty();
    case ir::DType::I8: case ir::DType::U8: return b.getInt8Ty();
    case ir::DType::I16: return b.getInt16Ty();
    case ir::DType::I32: case ir::DType::U32: return b.getInt32Ty();
    case ir::DType::I64: return b.getInt64Ty();
    case ir::DType::F16: return b.getHalfTy();
    case ir::DType::BF16: return b.getBFloatTy();
    case ir::DType::F32: return b.getFloatTy();
    case ir::DType::F64: return b.getDoubleTy();
  }
  return b.getFloatTy();
}

llvm::Type* Lowerer::memType(ir::DType t) { return t == ir::DType::I1 ? b.getInt8Ty() : regType(t); }

llvm::Type* Lowerer::accType(ir::DType t) {
  return t == ir::DType::F16 || t == ir::DType::BF16 ? b.getFloatTy() : regType(t);
}

llvm::Value* Lowerer::intrinsic(unsigned id, llvm::ArrayRef<llvm::Type*> types, llvm::ArrayRef<llvm::Value*> args) {
  llvm::Function* f = llvm::Intrinsic::getOrInsertDeclaration(&mod, static_cast<llvm::Intrinsic::ID>(id), types);
  return b.CreateCall(f, args);
}

void Lowerer::loopHint(llvm::Instruction* backEdge, llvm::ArrayRef<llvm::Metadata*> hint) {
  llvm::Metadata* ops[] = {nullptr, llvm::MDNode::get(ctx, hint)};
  llvm::MDNode* loopId = llvm::MDNode::getDistinct(ctx, ops);
  loopId->replaceOperandWith(0, loopId);
  backEdge->setMetadata(llvm::LLVMContext::MD_loop, loopId);
}

void Lowerer::barrier() { intrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {}, {i32(0)}); }

llvm::Value* Lowerer::scratch(int64_t bytes, int which) {
  if (!scratch_[which]) {
    auto* ty = llvm::ArrayType::get(b.getInt8Ty(), 16);
    scratch_[which] = new llvm::GlobalVariable(mod, ty, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(ty),
                                               "fnk_scratch_placeholder", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  }
  scratchBytes_[which] = std::max(scratchBytes_[which], (bytes + 15) / 16 * 16);
  return scratch_[which];
}

llvm::Value* Lowerer::scratchBegin(int64_t bytes) {
  const bool off = knob(Knob::ScratchBarriers) != 0;  // experiment: always the leading bar.sync
  ++scratchUses;
  constexpr int64_t kSmall = 2048;  // the second buffer stays small (reductions' partials)
  using S = ScratchState;
  if (off) {
    barrier();
    scratchState = S::Unknown;
    return scratch(bytes, 0);
  }
  if (bytes <= kSmall && scratchState != S::Unknown) {
    int which = scratchState == S::A ? 1 : 0;
    scratchState = which ? S::B : S::A;
    return scratch(bytes, which);
  }
  if (scratchState == S::A || scratchState == S::Unknown) barrier();
  scratchState = S::A;
  return scratch(bytes, 0);
}

// A kernel may declare 48 KiB of static shared memory (ptxas's limit). Past
// that, every shared array (the buffers, the reductions' scratch, the
// cluster slots and mbarriers) moves into dynamic shared memory, one extern
// array at the same offsets they would have had, and the module exports the
// size as the global fnk_dyn_smem_bytes: the runtime and generated headers
// read it at load, opt the function in to that much and pass it at launch.
Status Lowerer::placeShared() {
  std::vector<llvm::GlobalVariable*> arrays;
  for (llvm::GlobalVariable& g : mod.globals())
    if (g.getAddressSpace() == 3 && !g.isDeclaration()) arrays.push_back(&g);
  const llvm::DataLayout& dl = mod.getDataLayout();
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  for (llvm::GlobalVariable* g : arrays) {
    total = llvm::alignTo(total, g->getAlign() ? g->getAlign()->value() : 1);
    offsets.push_back(total);
    total += dl.getTypeAllocSize(g->getValueType());
  }
  if (total <= static_cast<uint64_t>(kMaxStaticShared)) return Status::ok();
  if (total > static_cast<uint64_t>(kMaxDynamicShared))
    return Status::error("kernel '" + fn.name + "' needs " + std::to_string(total) +
                         " bytes of shared memory (its shared buffers and the lowering's reduction scratch); a CTA "
                         "has at most " + std::to_string(kMaxDynamicShared) + " (227 KiB)");
  auto* dyn = new llvm::GlobalVariable(mod, llvm::ArrayType::get(b.getInt8Ty(), 0), false,
                                       llvm::GlobalValue::ExternalLinkage, nullptr, "fnk_dyn_smem", nullptr,
                                       llvm::GlobalValue::NotThreadLocal, 3);
  dyn->setAlignment(llvm::Align(16));
  for (size_t i = 0; i < arrays.size(); ++i) {
    arrays[i]->replaceAllUsesWith(
        llvm::ConstantExpr::getInBoundsGetElementPtr(b.getInt8Ty(), dyn, b.getInt64(offsets[i])));
    arrays[i]->eraseFromParent();
  }
  scratch_[0] = scratch_[1] = nullptr;
  clusterMbar = nullptr;
  auto* bytes = new llvm::GlobalVariable(mod, b.getInt32Ty(), true, llvm::GlobalValue::ExternalLinkage,
                                         b.getInt32(static_cast<uint32_t>(total)), kDynamicSharedSymbol, nullptr,
                                         llvm::GlobalValue::NotThreadLocal, 1);
  bytes->setAlignment(llvm::Align(4));
  return Status::ok();
}

void Lowerer::finishScratch() {
  // One shared array: buffer A, then buffer B at a constant offset, so that
  // both are addressed off the same base register.
  if (!scratch_[0]) return;
  const int64_t sizeA = std::max<int64_t>(scratchBytes_[0], 16);
  const int64_t total = sizeA + (scratch_[1] ? scratchBytes_[1] : 0);
  auto* ty = llvm::ArrayType::get(b.getInt8Ty(), static_cast<uint64_t>(total));
  auto* g = new llvm::GlobalVariable(mod, ty, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(ty),
                                     "fnk_scratch", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  g->setAlignment(llvm::Align(16));
  scratch_[0]->replaceAllUsesWith(g);
  scratch_[0]->eraseFromParent();
  scratch_[0] = g;
  if (scratch_[1]) {
    llvm::Constant* bBase = llvm::ConstantExpr::getInBoundsGetElementPtr(b.getInt8Ty(), g, b.getInt64(static_cast<uint64_t>(sizeA)));
    scratch_[1]->replaceAllUsesWith(bBase);
    scratch_[1]->eraseFromParent();
    scratch_[1] = nullptr;
  }
}

llvm::Value* Lowerer::andAll(llvm::Value* a, llvm::Value* c) {
  if (!a) return c;
  if (!c) return a;
  return b.CreateAnd(a, c);
}

llvm::Value* Lowerer::ptx(const std::string& text, const std::string& constraints, llvm::Type* ret,
                          const std::vector<llvm::Value*>& args, bool sideEffects) {
  std::vector<llvm::Type*> types;
  for (llvm::Value* a : args) types.push_back(a->getType());
  auto* fty = llvm::FunctionType::get(ret, types, false);
  return b.CreateCall(llvm::InlineAsm::get(fty, text, constraints, sideEffects), args);
}

void Lowerer::fenceGpu() { ptx("fence.acq_rel.gpu;", "~{memory}", b.getVoidTy(), {}); }

llvm::Value* Lowerer::sharedAddr(llvm::Value* p) { return b.CreatePtrToInt(p, b.getInt32Ty()); }

void Lowerer::emitIf(llvm::Value* cond, const std::function<void()>& body) {
  if (!cond) {
    body();
    return;
  }
  llvm::BasicBlock* then = llvm::BasicBlock::Create(ctx, "if.then", kernel);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "if.done", kernel);
  b.CreateCondBr(cond, then, done);
  b.SetInsertPoint(then);
  body();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

llvm::Value* Lowerer::elemIndex(const ir::TileLayout& l, int64_t r) {
  if (l.uniform) return i32(0);
  int64_t c = r / l.vec, v = r % l.vec;
  if (l.lanes) {  // rows in warps: this thread's offset, then the chunk's row and place in it
    const int64_t rr = c / l.chunksPerRow(), k = c % l.chunksPerRow();
    return b.CreateAdd(rowBase(l), i32(rr * l.rowGroups() * l.rowLen + k * l.lanes * l.vec + v));
  }
  llvm::Value*& tv = tidTimes_[l.vec];
  if (!tv) tv = b.CreateMul(tid, i32(l.vec), "tidv");  // first use; see run() for placement
  return b.CreateAdd(tv, i32(c * l.threads * l.vec + v));
}

llvm::Value* Lowerer::rowBase(const ir::TileLayout& l) {
  llvm::Value*& base = rowBase_[{l.rowLen, l.vec}];
  if (!base) {  // at the kernel's entry, after tid: it dominates every use
    llvm::IRBuilder<> eb(llvm::cast<llvm::Instruction>(tid)->getNextNode());
    base = eb.CreateAdd(eb.CreateMul(eb.CreateLShr(tid, i32(5)), i32(l.rowLen)),
                        eb.CreateMul(eb.CreateAnd(tid, i32(31)), i32(l.vec)), "rowbase");
  }
  return base;
}

llvm::Value* Lowerer::elemValid(const ir::TileLayout& l, int64_t r) {
  if (l.uniform || !l.padded()) return nullptr;
  int64_t c = r / l.vec;
  if (l.lanes) {  // padding rows: the chunk's row past the last
    const int64_t rr = c / l.chunksPerRow(), W = l.rowGroups(), rows = l.elems / l.rowLen;
    if ((rr + 1) * W <= rows) return nullptr;
    return b.CreateICmpULT(b.CreateAdd(b.CreateLShr(tid, i32(5)), i32(rr * W)), i32(rows));
  }
  if ((c + 1) * l.threads * l.vec <= l.elems) return nullptr;  // whole chunk inside the tile
  return b.CreateICmpULT(elemIndex(l, r - r % l.vec), i32(l.elems));
}

std::vector<llvm::Value*> Lowerer::coordsOf(llvm::Value* e, const std::vector<int64_t>& shape) {
  std::vector<llvm::Value*> c(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    llvm::Value* q = stride == 1 ? e : b.CreateUDiv(e, i32(stride));
    c[d] = d == 0 ? q : (shape[d] == 1 ? i32(0) : b.CreateURem(q, i32(shape[d])));
    stride *= shape[d];
  }
  return c;
}

llvm::Value* Lowerer::linearize(const std::vector<llvm::Value*>& coords, const std::vector<int64_t>& shape) {
  llvm::Value* e = i32(0);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1) e = b.CreateAdd(e, stride == 1 ? coords[d] : b.CreateMul(coords[d], i32(stride)));
    stride *= shape[d];
  }
  return e;
}

TV Lowerer::makeTV(const ir::Type& t) {
  TV tv;
  tv.shape = t.shape;
  tv.dtype = t.dtype;
  tv.layout = layoutOf(t.shape);
  tv.regs.resize(static_cast<size_t>(tv.layout.perThread()), nullptr);
  return tv;
}

const TV& Lowerer::tile(const ir::Value* v) {
  auto it = tiles.find(v);
  if (it != tiles.end()) return it->second;
  // Never reached for verified IR (operands are defined first); keep going
  // with poison so one error is reported, not a crash.
  TV& tv = tiles[v];
  tv = makeTV(v->type());
  for (auto& r : tv.regs) r = llvm::PoisonValue::get(regType(tv.dtype));
  if (error_) error_ = Status::error("kernel '" + fn.name + "': internal error: a value is used before it is lowered");
  return tv;
}

namespace {
void collectWritten(const ir::Block& blk, std::unordered_set<const ir::Value*>& out) {
  ir::forEachOp(blk, [&](const ir::Operation& op) {
    if (op.kind() == ir::OpKind::Store || op.kind() == ir::OpKind::Atomic || op.kind() == ir::OpKind::CopyAsync ||
        op.kind() == ir::OpKind::CopyBulk || op.kind() == ir::OpKind::StoreBulk)
      out.insert(op.operand(0));
  });
}
}  // namespace

namespace {
// Whether the block (recursively) has a loop, and the most registers any tile holds per thread.
void kernelShape(const ir::Block& blk, int64_t T, bool& loops, int64_t& maxPer) {
  ir::forEachOp(blk, [&](const ir::Operation& op) {
    if (op.kind() == ir::OpKind::For) loops = true;
    for (unsigned i = 0; i < op.numResults(); ++i)
      if (op.result(i)->type().isTile())
        maxPer = std::max(maxPer, ir::tileLayout(op.result(i)->type().shape, T).perThread());
  });
}
}  // namespace

int64_t Lowerer::fullOccupancyCtas() {
  // A loop-free kernel whose tiles are one 16-byte chunk per thread (one row
  // per CTA, e.g. DiT forward at 4 warps) is latency-bound and limited by
  // resident CTAs: ask ptxas for the thread limit (2048 / T CTAs per SM, at
  // most 32), i.e. <= 65536 / 2048 = 32 registers. Measured on PTX: DiT fwd
  // 4 warps 36 -> 32 registers without spills, 12 -> 16 CTAs per SM.
  if (knob(Knob::NoMinCtas) || T > 256 || fn.body.empty()) return 0;
  bool loops = false;
  int64_t maxPer = 1;
  kernelShape(fn.body.front(), T, loops, maxPer);
  if (loops || maxPer > 8) return 0;
  return std::min<int64_t>(32, 2048 / T);
}

int64_t Lowerer::residentCtas() {
  // The experiment knob (FNK_MINCTAS=N) first, then the kernel's
  // launch(ctas_per_sm = K), then the rule above. ptxas gets it as
  // .minnctapersm, which caps registers at 65536 / (N * T).
  if (int64_t n = knob(Knob::MinCtas); n > 0) return n;
  if (int64_t n = fn.ctasPerSm(); n > 0) return n;
  return fullOccupancyCtas();
}

bool isClusterBarrier(const ir::Operation& op) {
  return op.kind() == ir::OpKind::ClusterSync || op.kind() == ir::OpKind::ClusterReduce;
}

namespace {
/// cluster.reduce ops of a scalar in `blk`, nested regions included.
int64_t countScalarClusterReduces(const ir::Block& blk) {
  int64_t n = 0;
  ir::forEachOp(blk, [&](const ir::Operation& o) {
    n += o.kind() == ir::OpKind::ClusterReduce && o.operand(0)->type().isScalar();
  });
  return n;
}
}  // namespace

int64_t asyncPushPairs(const ir::Function& fn) {
  if (!knob(Knob::ClusterAsync, 1) || fn.clusterCtas() <= 1 || fn.body.empty()) return 0;
  return countScalarClusterReduces(fn.body.front());
}

bool needsPtx81(const ir::Function& fn) {
  if (asyncPushPairs(fn) > 0) return true;
  bool atomics = false;
  if (!fn.body.empty())
    ir::forEachOp(fn.body.front(), [&](const ir::Operation& o) { atomics |= o.kind() == ir::OpKind::Atomic; });
  return atomics;
}

Status Lowerer::run() {
  std::vector<llvm::Type*> params;
  std::vector<AbiSlot> abi = kernelAbi(fn);
  for (const AbiSlot& s : abi) {
    switch (s.kind) {
      case AbiKind::Ptr: params.push_back(llvm::PointerType::get(ctx, 1)); break;
      case AbiKind::I32: params.push_back(b.getInt32Ty()); break;
      case AbiKind::I64: params.push_back(b.getInt64Ty()); break;
      case AbiKind::F32: params.push_back(b.getFloatTy()); break;
      case AbiKind::F64: params.push_back(b.getDoubleTy()); break;
    }
  }
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), params, false);
  kernel = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, fn.name, mod);
  kernel->setCallingConv(llvm::CallingConv::PTX_Kernel);
  kernel->addFnAttr("nvvm.maxntid", std::to_string(T));
  minCtas = residentCtas();
  if (minCtas > 0) kernel->addFnAttr("nvvm.minctasm", std::to_string(minCtas));
  auto c = fn.cluster();
  if (c.size() == 3 && fn.clusterCtas() > 1)
    kernel->addFnAttr("nvvm.cluster_dim", std::to_string(c[0]) + "," + std::to_string(c[1]) + "," + std::to_string(c[2]));
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", kernel);
  b.SetInsertPoint(entry);
  if (const int64_t pdl = knob(Knob::Pdl, 2)) {  // programmatic dependent launch (Abi.h, kPdlSymbol)
    // 2 (the default): the next kernel may launch as this one's CTAs exit
    // (no early trigger), so its CTAs never wait beside this one's; 1: as
    // soon as all of this one's CTAs have started (measured slower); 0: off.
    if (pdl != 2) intrinsic(llvm::Intrinsic::nvvm_griddepcontrol_launch_dependents, {}, {});
    intrinsic(llvm::Intrinsic::nvvm_griddepcontrol_wait, {}, {});
    auto* flag = new llvm::GlobalVariable(mod, b.getInt32Ty(), true, llvm::GlobalValue::ExternalLinkage, b.getInt32(1),
                                          kPdlSymbol, nullptr, llvm::GlobalValue::NotThreadLocal, 1);
    flag->setAlignment(llvm::Align(4));
  }
  tid = intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
  for (int64_t v : {1, 2, 4, 8}) tidTimes_[v] = v == 1 ? tid : b.CreateMul(tid, i32(v), "tidv");

  const ir::Block& body = fn.body.front();
  collectWritten(body, written);
  size_t argNo = 0;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Type& t = fn.params[i].type;
    if (t.isTensor()) {
      Mem m;
      m.dtype = t.dtype;
      m.base = kernel->getArg(static_cast<unsigned>(argNo++));
      m.base->setName(fn.params[i].name);
      kernel->addParamAttr(static_cast<unsigned>(argNo - 1), llvm::Attribute::NoAlias);
      for (size_t d = 0; d < t.dims.size(); ++d) m.dims.push_back(kernel->getArg(static_cast<unsigned>(argNo++)));
      m.strides.resize(m.dims.size());
      llvm::Value* s = i64(1);
      for (size_t d = m.dims.size(); d-- > 0;) {
        m.strides[d] = s;
        s = b.CreateMul(s, m.dims[d]);
      }
      mems[body.argument(static_cast<unsigned>(i))] = m;
    } else {
      llvm::Value* a = kernel->getArg(static_cast<unsigned>(argNo++));
      llvm::Value* v = a;
      llvm::Type* want = regType(t.dtype);
      if (a->getType() != want) {
        if (want->isIntegerTy()) v = b.CreateTrunc(a, want);
        else v = b.CreateFPTrunc(a, want);
      }
      TV tv = makeTV(t);
      tv.regs[0] = v;
      tiles[body.argument(static_cast<unsigned>(i))] = tv;
    }
  }
  // Peers write into this CTA's shared memory only once every CTA of the
  // cluster has started: each thread arrives here, and the matching wait
  // comes before the first cluster op (flushClusterWait), by when the peers
  // have long arrived.
  if (c.size() == 3 && fn.clusterCtas() > 1 && ir::anyOp(body, isClusterBarrier)) {
    // The st.async push: thread 0 initializes the scalar reduces' mbarriers
    // (one arrival each: its own expect_tx) and makes them visible to the
    // cluster before arriving, so no peer's st.async can reach one first.
    if (const int64_t pairs = asyncPushPairs(fn)) {
      auto* aty = llvm::ArrayType::get(b.getInt64Ty(), static_cast<uint64_t>(2 * pairs));
      clusterMbar = new llvm::GlobalVariable(mod, aty, false, llvm::GlobalValue::InternalLinkage,
                                             llvm::UndefValue::get(aty), "fnk_cluster_mbar", nullptr,
                                             llvm::GlobalValue::NotThreadLocal, 3);
      clusterMbar->setAlignment(llvm::Align(8));
      emitIf(b.CreateICmpEQ(tid, i32(0)), [&] {
        for (int64_t k = 0; k < 2 * pairs; ++k)
          ptx("mbarrier.init.shared::cta.b64 [$0], 1;", "r", b.getVoidTy(),
              {sharedAddr(b.CreateConstGEP2_32(aty, clusterMbar, 0, static_cast<unsigned>(k)))});
        ptx("fence.mbarrier_init.release.cluster;", "", b.getVoidTy(), {});
      });
    }
    intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_relaxed, {}, {});
    clusterWaitPending = &body;
  }
  initBulkBarriers(body);
  Status s = lowerBlock(body, nullptr);
  if (!error_) return error_;
  if (!s) return s;
  if (!b.GetInsertBlock()->getTerminator()) b.CreateRetVoid();
  finishScratch();
  if (Status s = placeShared(); !s) return s;
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyFunction(*kernel, &os))
    return Status::error("kernel '" + fn.name + "': internal error: invalid LLVM IR: " + os.str());
  return Status::ok();
}

Status Lowerer::hoistLoads(const ir::Block& blk, const ir::Operation* pos) {
  if (knob(Knob::NoHoist)) return Status::ok();
  bool after = false;
  std::set<const ir::Value*> loadedBefore;  // a later load of these is a deliberate re-read
  for (const auto& op : blk.ops()) {
    if (op.get() == pos) {
      after = true;
      continue;
    }
    if (op->kind() != ir::OpKind::Load) continue;
    if (!after) {
      loadedBefore.insert(op->operand(0));
      continue;
    }
    // A tensor the block already loaded before the reduction and loads again
    // after it is re-read on purpose (from L1/L2, instead of holding the
    // first copy in registers across the reduction): keep it after.
    if (early.count(op.get()) || loadedBefore.count(op->operand(0))) continue;
    // Only wide tiles (two or more chunks per thread): their kernels are
    // register-limited to few CTAs per SM, and loads in flight per thread are
    // what hides latency. A one-chunk tile's kernel is thread-limited (8 CTAs
    // of 256 threads at <= 32 registers); holding more values across the
    // reduction would cost resident CTAs (DiT 1024: 32 -> 46 registers,
    // 8 -> 5 CTAs per SM) for loads that mostly hit L2.
    if (layoutOf(op->result()->type().shape).chunks < 2) continue;
    auto mit = mems.find(op->operand(0));
    if (mit == mems.end() || mit->second.addrSpace != 1 || written.count(op->operand(0))) continue;
    bool ready = true;
    for (unsigned i = 1; ready && i < op->numOperands(); ++i) ready = tiles.count(op->operand(i)) != 0;
    if (!ready) continue;
    if (Status s = lowerOp(*op); !s) return s;
    early.insert(op.get());
  }
  return Status::ok();
}

Status Lowerer::lowerWithSiblings(const ir::Block& blk, const ir::Operation& first) {
  const bool off = knob(Knob::NoSiblingReduce) != 0;
  std::vector<const ir::Operation*> group{&first};
  std::vector<const ir::Operation*> slice;  // pure ops the siblings need, in block order
  if (!off) {
    // Values that depend on the first reduction (a sibling must not).
    std::unordered_set<const ir::Value*> after{first.result()};
    std::unordered_set<const ir::Operation*> pos;  // the ops after `first`, not yet lowered
    bool seen = false;
    for (const auto& op : blk.ops()) {
      if (op.get() == &first) {
        seen = true;
        continue;
      }
      if (!seen || early.count(op.get())) continue;
      pos.insert(op.get());
      bool dep = op->numRegions() > 0;  // conservatively: whatever a region computes
      for (ir::Value* v : op->operands()) dep = dep || after.count(v);
      if (dep) {
        for (unsigned r = 0; r < op->numResults(); ++r) after.insert(op->result(r));
        continue;
      }
      if (!foldsAcrossWarps(*op)) continue;
      // The sibling's operand chain back to lowered values: pure ops only
      // (no loads, which hoistLoads has placed already, and no reductions).
      std::vector<const ir::Operation*> need;
      std::unordered_set<const ir::Operation*> inSlice(slice.begin(), slice.end());
      bool ok = true;
      std::function<void(const ir::Value*)> visit = [&](const ir::Value* v) {
        if (!ok || tiles.count(v)) return;
        const ir::Operation* d = v->definingOp();
        if (!d || !pos.count(d) || d->kind() == ir::OpKind::Reduce || !ir::isPure(d->kind())) {
          ok = false;
          return;
        }
        if (!inSlice.insert(d).second) return;
        for (ir::Value* u : d->operands()) visit(u);
        need.push_back(d);
      };
      visit(op->operand(0));
      if (!ok) continue;
      slice.insert(slice.end(), need.begin(), need.end());
      group.push_back(op.get());
    }
  }
  if (group.size() > 1) {
    // Lower the slice in block order (an op's operands come before it).
    std::unordered_set<const ir::Operation*> want(slice.begin(), slice.end());
    for (const auto& op : blk.ops()) {
      if (!want.count(op.get())) continue;
      if (Status s = lowerOp(*op); !s) return s;
      early.insert(op.get());
    }
    for (size_t i = 1; i < group.size(); ++i) early.insert(group[i]);
  }
  return lowerReduces(group);
}

Status Lowerer::lowerBlock(const ir::Block& blk, std::vector<TV>* yielded) {
  const ir::Block* outer = curBlock;
  curBlock = &blk;
  Status s = lowerBlockOps(blk, yielded);
  if (!pendingFolds.empty() && !b.GetInsertBlock()->getTerminator()) flushFolds(blk, nullptr);
  // A cluster wait deferred by this block's last cluster.reduce is issued at
  // its end (every thread of the cluster reaches it: cluster ops sit in
  // uniform control flow); one pending from an enclosing block stays pending.
  // (A return flushes it before its ret: see lowerBlockOps.)
  if (clusterWaitPending == &blk && !b.GetInsertBlock()->getTerminator()) flushClusterWait();
  curBlock = outer;
  return s;
}

Status Lowerer::lowerBlockOps(const ir::Block& blk, std::vector<TV>* yielded) {
  for (const auto& op : blk.ops()) {
    if (early.count(op.get())) continue;  // lowered ahead (hoistLoads)
    const bool last = op->kind() == ir::OpKind::Yield || op->kind() == ir::OpKind::Return;
    if (!pendingFolds.empty()) flushFolds(blk, last ? nullptr : op.get());
    if (op->kind() == ir::OpKind::Return || (op->numRegions() > 0 && ir::anyOp(*op, isClusterBarrier))) flushClusterWait();
    if (op->kind() == ir::OpKind::Reduce || op->kind() == ir::OpKind::ClusterReduce)
      if (Status s = hoistLoads(blk, op.get()); !s) return s;
    if (foldsAcrossWarps(*op)) {
      if (Status s = lowerWithSiblings(blk, *op); !s) return s;
      if (!error_) return error_;
      continue;
    }
    if (op->kind() == ir::OpKind::Yield) {
      if (yielded)
        for (ir::Value* v : op->operands()) yielded->push_back(tile(v));
      return Status::ok();
    }
    if (op->kind() == ir::OpKind::Return) {
      b.CreateRetVoid();
      return Status::ok();
    }
    if (Status s = lowerOp(*op); !s) return s;
    if (!error_) return error_;
  }
  return Status::ok();
}

Status Lowerer::lowerOp(const ir::Operation& op) {
  switch (op.kind()) {
    case ir::OpKind::Constant: {
      TV tv = makeTV(op.result()->type());
      const ir::Attr* a = op.attrs().get("value");
      double d = 0;
      if (auto* i = a ? std::get_if<int64_t>(a) : nullptr) d = static_cast<double>(*i);
      else if (auto* f = a ? std::get_if<double>(a) : nullptr) d = *f;
      else if (auto* bo = a ? std::get_if<bool>(a) : nullptr) d = *bo ? 1 : 0;
      llvm::Type* ty = regType(tv.dtype);
      llvm::Value* v;
      if (ty->isIntegerTy()) {
        int64_t iv = a && std::holds_alternative<int64_t>(*a) ? std::get<int64_t>(*a) : static_cast<int64_t>(d);
        v = llvm::ConstantInt::get(ty, static_cast<uint64_t>(iv), true);
      } else {
        v = llvm::ConstantFP::get(ty, d);
      }
      for (auto& r : tv.regs) r = v;
      tiles[op.result()] = tv;
      return Status::ok();
    }
    case ir::OpKind::ProgramId:
    case ir::OpKind::NumPrograms: {
      int64_t axis = op.attrs().getInt("axis");
      static const unsigned ctaid[3] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                        llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
      static const unsigned nctaid[3] = {llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x,
                                         llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y,
                                         llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z};
      if (axis < 0 || axis > 2) return fail(op, "axis out of range");
      TV tv = makeTV(op.result()->type());
      tv.regs[0] = intrinsic(op.kind() == ir::OpKind::ProgramId ? ctaid[axis] : nctaid[axis], {}, {});
      tiles[op.result()] = tv;
      return Status::ok();
    }
    case ir::OpKind::Dim: {
      auto it = mems.find(op.operand(0));
      if (it == mems.end()) return fail(op, "operand is not a lowered tensor");
      int64_t axis = op.attrs().getInt("axis");
      if (axis < 0 || axis >= static_cast<int64_t>(it->second.dims.size())) return fail(op, "axis out of range");
      TV tv = makeTV(op.result()->type());
      tv.regs[0] = b.CreateTrunc(it->second.dims[axis], regType(tv.dtype));
      tiles[op.result()] = tv;
      return Status::ok();
    }
    case ir::OpKind::Arange: {
      TV tv = makeTV(op.result()->type());
      int64_t start = op.attrs().getInt("start");
      for (size_t r = 0; r < tv.regs.size(); ++r) {
        llvm::Value* e = b.CreateAdd(elemIndex(tv.layout, static_cast<int64_t>(r)), i32(start));
        tv.regs[r] = b.CreateSExtOrTrunc(e, regType(tv.dtype));
      }
      tiles[op.result()] = tv;
      return Status::ok();
    }
    case ir::OpKind::Broadcast:
    case ir::OpKind::ExpandDims:
    case ir::OpKind::Reshape:
    case ir::OpKind::Transpose: return lowerShape(op);
    case ir::OpKind::Cast:
    case ir::OpKind::Add: case ir::OpKind::Sub: case ir::OpKind::Mul: case ir::OpKind::Div:
    case ir::OpKind::Rem: case ir::OpKind::Pow: case ir::OpKind::Min: case ir::OpKind::Max:
    case ir::OpKind::And: case ir::OpKind::Or: case ir::OpKind::Xor: case ir::OpKind::Shl:
    case ir::OpKind::Shr: case ir::OpKind::Cmp: case ir::OpKind::Neg: case ir::OpKind::Not:
    case ir::OpKind::Exp: case ir::OpKind::Exp2: case ir::OpKind::Log: case ir::OpKind::Log2:
    case ir::OpKind::Sqrt: case ir::OpKind::Rsqrt: case ir::OpKind::Tanh: case ir::OpKind::Erf:
    case ir::OpKind::Sigmoid: case ir::OpKind::Abs: case ir::OpKind::Select:
    case ir::OpKind::Fma: return lowerElementwise(op);
    case ir::OpKind::Reduce: return lowerReduce(op);
    case ir::OpKind::Load: return lowerLoad(op);
    case ir::OpKind::Store: return lowerStore(op);
    case ir::OpKind::Prefetch: return lowerPrefetch(op);
    case ir::OpKind::Atomic: return lowerAtomic(op);
    case ir::OpKind::SharedAlloc: return lowerSharedAlloc(op);
    case ir::OpKind::Barrier: barrier(); return Status::ok();
    case ir::OpKind::Fence: fenceGpu(); return Status::ok();
    case ir::OpKind::WaitGe: return lowerWaitGe(op);
    case ir::OpKind::CopyAsync: return lowerCopyAsync(op);
    case ir::OpKind::CopyBulk: return lowerCopyBulk(op);
    case ir::OpKind::BulkWait: return lowerBulkWait(op);
    case ir::OpKind::StoreBulk: return lowerStoreBulk(op);
    case ir::OpKind::BulkStoreWait: return lowerBulkStoreWait(op);
    case ir::OpKind::AsyncWait:
      ptx("cp.async.wait_group " + std::to_string(op.attrs().getInt("pending")) + ";", "~{memory}", b.getVoidTy(), {}, true);
      return Status::ok();
    case ir::OpKind::ClusterRank:
    case ir::OpKind::ClusterSize:
    case ir::OpKind::ClusterSync:
    case ir::OpKind::ClusterReduce: return lowerCluster(op);
    case ir::OpKind::For: return lowerFor(op);
    case ir::OpKind::If: return lowerIf(op);
    case ir::OpKind::Yield:
    case ir::OpKind::Return: return Status::ok();  // handled by lowerBlock
    case ir::OpKind::LaunchCheck:
    case ir::OpKind::LaunchGrid: return fail(op, "belongs to the launch region, which runs on the host");
  }
  return fail(op, "internal error: op kind out of range");
}


TV Lowerer::packPairs(TV t) {
  if (t.dtype != ir::DType::BF16 && t.dtype != ir::DType::F16) return t;
  std::vector<llvm::Value*> words;
  for (size_t r = 0; r < t.regs.size(); r += 2) {
    if (r + 1 == t.regs.size()) {  // an odd one out stays as it is
      words.push_back(t.regs[r]);
      break;
    }
    llvm::Value* pair = llvm::PoisonValue::get(llvm::FixedVectorType::get(t.regs[r]->getType(), 2));
    pair = b.CreateInsertElement(pair, t.regs[r], uint64_t{0});
    pair = b.CreateInsertElement(pair, t.regs[r + 1], uint64_t{1});
    words.push_back(b.CreateBitCast(pair, b.getInt32Ty()));
  }
  t.regs = std::move(words);
  return t;
}

TV Lowerer::unpackPairs(TV t, size_t count) {
  if (t.regs.size() == count) return t;
  std::vector<llvm::Value*> elems;
  for (llvm::Value* w : t.regs) {
    if (elems.size() + 1 == count) {
      elems.push_back(w);
      break;
    }
    llvm::Value* pair = b.CreateBitCast(w, llvm::FixedVectorType::get(regType(t.dtype), 2));
    elems.push_back(b.CreateExtractElement(pair, uint64_t{0}));
    elems.push_back(b.CreateExtractElement(pair, uint64_t{1}));
  }
  t.regs = std::move(elems);
  return t;
}

bool Lowerer::stepFromData(const ir::Value* step) {
  // A walk over the step's operand DAG, each value once (a chain of `a + a`
  // would otherwise be walked 2^depth times).
  std::unordered_set<const ir::Value*> seen;
  std::vector<const ir::Value*> work{step};
  while (!work.empty()) {
    const ir::Value* v = work.back();
    work.pop_back();
    if (!seen.insert(v).second) continue;
    const ir::Operation* d = v->definingOp();
    if (!d) return true;  // a scalar parameter, or a loop's induction variable or carried value
    switch (d->kind()) {
      case ir::OpKind::Constant: {
        const ir::Attr* a = d->attrs().get("value");
        const int64_t* k = a ? std::get_if<int64_t>(a) : nullptr;
        if (!k || *k <= 0) return true;
        break;
      }
      case ir::OpKind::Dim:          // a tensor's size, the grid's and the cluster's:
      case ir::OpKind::ProgramId:    // what the kernel's shapes and launch give it
      case ir::OpKind::NumPrograms:
      case ir::OpKind::ClusterRank:
      case ir::OpKind::ClusterSize: break;
      case ir::OpKind::Load: return true;
      default: work.insert(work.end(), d->operands().begin(), d->operands().end());
    }
  }
  return false;
}

// Software pipelining of a loop body's leading loads (lowerFor): a load of a
// read-only global tensor whose operands are the induction variable or values
// from outside the loop is issued D iterations ahead (for iteration i + D at
// the top of iteration i, and for the first D before the loop), its values
// carried in registers through a queue of D, so the next rows' bytes are in
// flight during this row's reductions. Past the end the row index is out of
// bounds and the loads are masked off (no memory access). D is the kernel's
// `launch(prefetch = D)`; without it, 1 when the registers allow.
std::vector<const ir::Operation*> Lowerer::prefetchLoads(const ir::Block& body, const std::vector<TV>& init) {
  const int64_t asked = fn.prefetch();
  if (knob(Knob::NoPrefetch) != 0 || asked == 0) return {};
  const ir::Value* ivArg = body.argument(0);
  std::vector<const ir::Operation*> pf;
  for (const auto& bop : body.ops()) {
    if (bop->kind() != ir::OpKind::Load) continue;
    auto mit = mems.find(bop->operand(0));
    if (mit == mems.end() || mit->second.addrSpace != 1 || written.count(bop->operand(0))) continue;
    bool ok = true, usesIv = false;
    for (unsigned i = 1; ok && i < bop->numOperands(); ++i) {
      if (bop->operand(i) == ivArg) usesIv = true;
      else ok = tiles.count(bop->operand(i)) != 0;  // defined outside the loop (body values are not lowered yet)
    }
    if (ok && usesIv) pf.push_back(bop.get());
  }
  // Without a prefetch the kernel asked for, only when what stays live across
  // the loop fits in half the register cap (65536 / (T x resident CTAs), at
  // most 255): the loop-carried tiles, the wide tiles from outside that the
  // body reads (w), and the prefetched values, counted in 32-bit registers
  // (bf16 packed two to one). E.g. rmsnorm_bwd 8192: dw 32 + w 32 + x, dy 32
  // + rstd 1 = 97 <= 127 at 8 warps (246 registers, no spill), 16 + 16 + 17 =
  // 49 <= 64 at 16 warps (121); layernorm_bwd carries dw and db and stays
  // without (it spilled 64-72 bytes with it).
  if (!pf.empty() && asked < 0) {
    auto regsOf = [&](const ir::Type& t) {
      ir::TileLayout l = layoutOf(t.shape);
      return (l.perThread() * std::max(ir::bitWidth(t.dtype), 1) + 31) / 32;
    };
    int64_t pfRegs = 0, maxChunks = 0, live = 0;
    for (const ir::Operation* lop : pf) {
      ir::TileLayout l = layoutOf(lop->result()->type().shape);
      maxChunks = std::max(maxChunks, l.uniform ? 0 : l.chunks);
      pfRegs += regsOf(lop->result()->type());
    }
    for (const TV& t : init)
      if (!t.layout.uniform) live += t.layout.perThread() * (t.dtype == ir::DType::F64 || t.dtype == ir::DType::I64 ? 2 : 1);
    std::unordered_set<const ir::Value*> seen;
    ir::forEachOp(body, [&](const ir::Operation& o) {
      for (ir::Value* v : o.operands()) {
        auto it = tiles.find(v);
        // float tiles only: index tiles (cols) are recomputed from tid where used,
        // and constants (where(mask, x, 0.0)'s zeros) are not held in registers
        if (it == tiles.end() || it->second.layout.uniform || !ir::isFloat(it->second.dtype) ||
            std::all_of(it->second.regs.begin(), it->second.regs.end(),
                        [](llvm::Value* r) { return llvm::isa<llvm::Constant>(r); }) ||
            !seen.insert(v).second)
          continue;
        live += static_cast<int64_t>(it->second.regs.size());  // held as computed (f32 after a cast)
      }
    });
    const int64_t maxThreads = knob(Knob::PrefetchMaxThreads);  // experiment: past the budget up to this CTA size
    const int64_t cap = std::min<int64_t>(255, 65536 / (T * std::max<int64_t>(1, minCtas)));
    const bool fits = live + pfRegs <= cap / 2 || T <= maxThreads;
    // One-chunk tiles too (FNK_PREFETCH_MIN_CHUNKS=2 restores the v1.5 rule
    // of two or more): a loop over rows runs in a grid the caller sized (a
    // few CTAs per SM), so registers do not set its occupancy and the next
    // row's latency is what the loop waits on (the DiT backward walks 128
    // rows of 1024 per CTA).
    const int64_t minChunks = std::max<int64_t>(1, knob(Knob::PrefetchMinChunks, 1));
    if (maxChunks < minChunks || pfRegs > 40 || !fits) pf.clear();
  }
  return pf;
}

Status Lowerer::lowerFor(const ir::Operation& op) {
  const ir::Block& body = op.region(0).front();
  llvm::Value* lo = tile(op.operand(0)).regs[0];
  llvm::Value* hi = tile(op.operand(1)).regs[0];
  llvm::Value* step = tile(op.operand(2)).regs[0];
  std::vector<TV> init;
  for (unsigned i = 3; i < op.numOperands(); ++i) init.push_back(tile(op.operand(i)));
  // A step of 0 or less would loop forever on the GPU (the interpreter stops
  // with "step is 0; it must be positive"): trap instead, which the runtime
  // reports as a fault of this kernel, where the step comes from a scalar
  // argument or memory (stepFromData).
  if (stepFromData(op.operand(2)))
    emitIf(b.CreateICmpSLE(step, llvm::ConstantInt::get(step->getType(), 0)),
           [&] { intrinsic(llvm::Intrinsic::trap, {}, {}); });

  const ir::Value* ivArg = body.argument(0);
  const std::vector<const ir::Operation*> pf = prefetchLoads(body, init);
  const int64_t depth = pf.empty() ? 0 : std::max<int64_t>(fn.prefetch(), 1);
  // A prefetched scalar (a row's mean or rstd) is loaded by lane 0 of each
  // warp and shuffled to the others when its iteration comes. Loaded by every
  // lane, it is a uniform value, which ptxas moves into a uniform register
  // right at the load (R2UR): the warp then waits there for the DRAM round
  // trip, a row ahead of when the value is needed (layernorm_bwd: 41% of the
  // stall samples, docs/perf-notes.md "GPU backend v8"). FNK_UNIFORM_PREFETCH=1
  // restores the all-lanes load.
  const bool laneZero = !knob(Knob::UniformPrefetch);
  // (Any value every thread holds: a scalar or a one-element tile.)
  auto isScalarPf = [&](const ir::Operation* lop) { return laneZero && layoutOf(lop->result()->type().shape).uniform; };
  // A load that reads partly valid chunks whole leaves its Keep (loadAt):
  // its bits, one i32 per chunk, ride the queue behind the load's registers
  // (after packPairs), and are applied when the load's iteration takes it.
  std::vector<std::optional<Keep>> pfKeep(pf.size());  // per load: its vec and defaults
  std::vector<size_t> pfRegs(pf.size());              // per load: its registers before packPairs
  auto lowerAt = [&](size_t i, llvm::Value* ivVal, TV& outTV) -> Status {
    const ir::Operation* lop = pf[i];
    TV ivT = makeTV(ivArg->type());
    ivT.regs[0] = ivVal;
    tiles[ivArg] = ivT;
    laneZeroScalarLoads_ = isScalarPf(lop);
    deferKeep_ = true;
    keep_.reset();
    Status s = lowerOp(*lop);
    laneZeroScalarLoads_ = false;
    deferKeep_ = false;
    if (!s) return s;
    outTV = tiles[lop->result()];
    tiles.erase(lop->result());
    tiles.erase(ivArg);
    pfRegs[i] = outTV.regs.size();
    if (keep_) {
      outTV = packPairs(std::move(outTV));
      outTV.regs.insert(outTV.regs.end(), keep_->bits.begin(), keep_->bits.end());
      pfKeep[i] = std::move(keep_);
      keep_.reset();
    }
    return Status::ok();
  };
  // Slot j's values unpacked and, for a load with a Keep, its bits taken off
  // the back into `bits`; requeue puts them back for a slot that moves up.
  auto unqueue = [&](TV t, size_t j, std::vector<llvm::Value*>& bits) {
    const std::optional<Keep>& k = pfKeep[j % pf.size()];
    if (k) {
      bits.assign(t.regs.end() - static_cast<std::ptrdiff_t>(k->bits.size()), t.regs.end());
      t.regs.resize(t.regs.size() - k->bits.size());
    }
    return unpackPairs(std::move(t), pfRegs[j % pf.size()]);
  };
  auto requeue = [&](TV t, const std::vector<llvm::Value*>& bits) {
    if (bits.empty()) return t;  // packed at the latch
    t = packPairs(std::move(t));
    t.regs.insert(t.regs.end(), bits.begin(), bits.end());
    return t;
  };
  auto ahead = [&](llvm::Value* from, int64_t k) -> llvm::Value* {  // from + k * step
    if (k == 0) return from;
    return b.CreateAdd(from, k == 1 ? step : b.CreateMul(step, b.getInt32(static_cast<uint32_t>(k))), "iv.pf");
  };
  // pfInit[k * pf.size() + i]: load i for iteration k (the queue's slot k).
  std::vector<TV> pfInit(depth * pf.size());
  for (int64_t k = 0; k < depth; ++k) {
    llvm::Value* ivK = ahead(lo, k);
    for (size_t i = 0; i < pf.size(); ++i)
      if (Status s = lowerAt(i, ivK, pfInit[k * pf.size() + i]); !s) return s;
  }

  // 16-bit loads cross the loop's phis as the 32-bit words they were loaded
  // in: a phi per element would split every word into halves at the back
  // edge (a byte permute each in SASS). (A load with a Keep is packed already.)
  for (size_t j = 0; j < pfInit.size(); ++j)
    if (!pfKeep[j % pf.size()]) pfInit[j] = packPairs(std::move(pfInit[j]));
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "for.header", kernel);
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx, "for.body", kernel);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "for.exit", kernel);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* iv = b.CreatePHI(b.getInt32Ty(), 2, "iv");
  iv->addIncoming(lo, pre);
  // One header phi per register of each value carried around the loop (the
  // yielded tiles and the prefetched loads); the latch adds the back edges.
  using Phis = std::vector<std::vector<llvm::PHINode*>>;
  auto headerPhis = [&](const std::vector<TV>& first, std::vector<TV>& cur) {
    cur = first;
    Phis phis(first.size());
    for (size_t i = 0; i < first.size(); ++i)
      for (size_t r = 0; r < first[i].regs.size(); ++r) {
        llvm::PHINode* p = b.CreatePHI(first[i].regs[r]->getType(), 2);
        p->addIncoming(first[i].regs[r], pre);
        phis[i].push_back(p);
        cur[i].regs[r] = p;
      }
    return phis;
  };
  auto backEdges = [](const Phis& phis, const std::vector<TV>& next, llvm::BasicBlock* latch) {
    for (size_t i = 0; i < phis.size(); ++i)
      for (size_t r = 0; r < phis[i].size(); ++r) phis[i][r]->addIncoming(next[i].regs[r], latch);
  };
  std::vector<TV> carried, pfCur;
  const Phis phis = headerPhis(init, carried);
  const Phis pfPhis = headerPhis(pfInit, pfCur);
  b.CreateCondBr(b.CreateICmpSLT(iv, hi), loop, exit);
  b.SetInsertPoint(loop);
  // The previous scratch use seen by the body is the one before the loop or
  // the previous iteration's last: not known here.
  const ScratchState before = scratchState;
  const int64_t usesBefore = scratchUses;
  scratchState = ScratchState::Unknown;
  std::vector<std::vector<llvm::Value*>> pfBits(pfCur.size());
  for (size_t j = 0; j < pfCur.size(); ++j) pfCur[j] = unqueue(std::move(pfCur[j]), j, pfBits[j]);
  // The queue moves up one slot per iteration: this iteration takes slot 0,
  // and the loads issued now (for iteration i + D) enter at the back.
  std::vector<TV> pfNext(pfCur.size());
  if (depth > 0) {
    const size_t n = pf.size();
    llvm::Value* ivAhead = ahead(iv, depth);
    for (size_t i = 0; i < n; ++i)
      if (Status s = lowerAt(i, ivAhead, pfNext[(depth - 1) * n + i]); !s) return s;
    for (size_t j = 0; j + n < pfCur.size(); ++j) pfNext[j] = requeue(pfCur[j + n], pfBits[j + n]);
    for (size_t i = 0; i < n; ++i) {
      TV t = pfCur[i];
      if (pfKeep[i]) {
        Keep k = *pfKeep[i];
        k.bits = pfBits[i];
        t = applyKeep(std::move(t), k);
      }
      if (isScalarPf(pf[i]))
        for (llvm::Value*& reg : t.regs) reg = shuffleIdx(reg, 0);
      tiles[pf[i]->result()] = t;
      early.insert(pf[i]);
    }
  }
  TV ivTile = makeTV(body.argument(0)->type());
  ivTile.regs[0] = iv;
  tiles[body.argument(0)] = ivTile;
  for (size_t i = 0; i < carried.size(); ++i) tiles[body.argument(static_cast<unsigned>(i + 1))] = carried[i];
  std::vector<TV> yielded;
  if (Status s = lowerBlock(body, &yielded); !s) return s;
  if (yielded.size() != carried.size()) return fail(op, "body yields the wrong number of values");
  llvm::Value* next = b.CreateAdd(iv, step, "iv.next");
  llvm::BasicBlock* latch = b.GetInsertBlock();
  llvm::BranchInst* back = b.CreateBr(header);
  const int64_t unroll = knob(Knob::Unroll, 1);
  if (unroll > 1 && ir::anyOp(body, [](const ir::Operation& o) { return o.kind() == ir::OpKind::Load; })) {
    // Experiment knob (FNK_UNROLL=N): N iterations' loads in flight per thread.
    // v0 measurement (docs/perf-notes.md): N=2 raised registers 27 -> 48 and
    // made rmsnorm_fwd slower, so it is off by default.
    loopHint(back, {llvm::MDString::get(ctx, "llvm.loop.unroll.count"),
                    llvm::ConstantAsMetadata::get(b.getInt32(static_cast<uint32_t>(unroll)))});
  }
  iv->addIncoming(next, latch);
  b.SetInsertPoint(back);  // the packing goes before the latch's branch
  for (size_t j = 0; j < pfNext.size(); ++j)
    if (!pfKeep[j % pf.size()]) pfNext[j] = packPairs(std::move(pfNext[j]));
  backEdges(pfPhis, pfNext, latch);
  backEdges(phis, yielded, latch);
  b.SetInsertPoint(exit);
  scratchState = scratchUses == usesBefore ? before : ScratchState::Unknown;
  for (size_t i = 0; i < carried.size(); ++i) tiles[op.result(static_cast<unsigned>(i))] = carried[i];
  return Status::ok();
}

Status Lowerer::lowerIf(const ir::Operation& op) {
  if (&op == decidedIf) {  // the launch picked the branch: only its ops (the if yields nothing)
    const ir::Region& taken = op.region(decidedThen ? 0 : 1);
    return taken.empty() ? Status::ok() : lowerBlock(taken.front(), nullptr);
  }
  llvm::Value* cond = tile(op.operand(0)).regs[0];
  llvm::BasicBlock* thenBB = llvm::BasicBlock::Create(ctx, "if.then", kernel);
  llvm::BasicBlock* elseBB = llvm::BasicBlock::Create(ctx, "if.else", kernel);
  llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx, "if.merge", kernel);
  b.CreateCondBr(cond, thenBB, elseBB);
  std::vector<TV> ys[2];
  llvm::BasicBlock* ends[2];
  llvm::BasicBlock* starts[2] = {thenBB, elseBB};
  const ScratchState before = scratchState;
  ScratchState after[2];
  for (int k = 0; k < 2; ++k) {
    scratchState = before;
    b.SetInsertPoint(starts[k]);
    if (!op.region(k).empty())
      if (Status s = lowerBlock(op.region(k).front(), &ys[k]); !s) return s;
    ends[k] = b.GetInsertBlock();
    after[k] = scratchState;
    if (!ends[k]->getTerminator()) b.CreateBr(merge);
  }
  // A branch that returned does not reach the merge; otherwise both must agree.
  scratchState = after[0] == after[1] ? after[0] : ScratchState::Unknown;
  b.SetInsertPoint(merge);
  for (unsigned i = 0; i < op.numResults(); ++i) {
    if (ys[0].size() <= i || ys[1].size() <= i) return fail(op, "a branch yields too few values");
    TV tv = ys[0][i];
    for (size_t r = 0; r < tv.regs.size(); ++r) {
      llvm::PHINode* p = b.CreatePHI(tv.regs[r]->getType(), 2);
      p->addIncoming(ys[0][i].regs[r], ends[0]);
      p->addIncoming(ys[1][i].regs[r], ends[1]);
      tv.regs[r] = p;
    }
    tiles[op.result(i)] = tv;
  }
  return Status::ok();
}

}  // namespace fnk::nvptx::detail
